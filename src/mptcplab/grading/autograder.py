"""Otter-Grader's master-notebook workflow: masters -> student notebooks + autograders.

`otter assign solutions/NN-name.ipynb build/assign/NN-name` writes `student/NN-name.ipynb` (public
tests only, in its metadata) and `autograder/NN-name-autograder_<time>.zip` (all tests, hidden
ones included, as OK-format `tests/qN.py`). The student notebook is what `notebooks/` ships.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from ..run.lab import REPO_ROOT

SOLUTIONS = REPO_ROOT / "solutions"
NOTEBOOKS = REPO_ROOT / "notebooks"
ASSIGN_DIR = REPO_ROOT / "build" / "assign"
KIT_METADATA = "mptcplab"  # notebook metadata of every student notebook: {"notebook": its master's stem}


def masters(solutions: Path = SOLUTIONS) -> list[Path]:
    """solutions/NN-name.ipynb, in lab order."""
    return sorted(p for p in solutions.glob("[0-9][0-9]-*.ipynb") if p.is_file())


def find_master(lab: str, solutions: Path = SOLUTIONS) -> Path:
    """`--lab` as 1, 01, lab1 or 01-send-buffer -> its master notebook."""
    key = lab.removeprefix("lab")
    found = [m for m in masters(solutions) if m.stem == lab or (key.isdigit() and int(m.stem[:2]) == int(key))]
    if len(found) != 1:
        names = ", ".join(m.stem for m in masters(solutions)) or "none yet"
        raise UsageError(f"no master notebook for lab {lab!r} in {solutions} (masters: {names})")
    return found[0]


def otter_assign(master: Path, dest: Path, *, run_tests: bool = True) -> Path:
    """Run `otter assign` into a fresh dest; returns the student notebook it wrote."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    otter = Path(sys.executable).with_name("otter")
    argv = [str(otter) if otter.exists() else "otter", "assign", "--no-pdfs"]
    if not run_tests:
        argv.append("--no-run-tests")
    proc = subprocess.run([*argv, str(master), str(dest)], capture_output=True, text=True)
    student = dest / "student" / master.name
    if proc.returncode != 0 or not student.exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-25:])
        raise UsageError(f"otter assign failed for {master}:\n{tail}")
    stamp(student, master.stem)
    return student


def stamp(notebook: Path, stem: str) -> None:
    """Name the notebook's lab in its metadata (`KIT_METADATA`), where `intake` looks first."""
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    nb.metadata[KIT_METADATA] = {"notebook": stem}
    nbformat.write(nb, notebook)


@dataclass
class Autograder:
    master: Path
    zip_path: Path

    @property
    def stem(self) -> str:
        return self.master.stem

    @property
    def student_notebook(self) -> Path:
        """The notebook students were handed (otter assign's student/ copy next to the autograder)."""
        return self.zip_path.parent.parent / "student" / self.master.name

    def tests(self) -> dict[str, str]:
        """question -> test file source (public and hidden cases; OK or exception-based format)."""
        with zipfile.ZipFile(self.zip_path) as zf:
            return {Path(n).stem: zf.read(n).decode() for n in zf.namelist()
                    if re.fullmatch(r"tests/[^/]+\.py", n)}

    def points(self) -> dict[str, float]:
        """question -> points possible, read from the test specs."""
        from .checker import test_file  # either of Otter's formats

        return {q: float(test_file(src, q).possible) for q, src in self.tests().items()}

    def written(self) -> dict[str, float]:
        """question -> points of the questions the instructor grades by hand (`manual: true` in the
        master's question config): no check scores them, so a report's score leaves them out."""
        import yaml

        out = {}
        for c in json.loads(self.master.read_text()).get("cells", []):
            src = "".join(c.get("source", ""))
            if c.get("cell_type") == "raw" and src.lstrip().startswith("# BEGIN QUESTION"):
                config = yaml.safe_load(src) or {}
                if config.get("manual"):
                    out[str(config["name"])] = float(config.get("points") or 0)
        return out


def autograder_for(master: Path, build: Path = ASSIGN_DIR, *, rebuild: bool = False) -> Autograder:
    """The autograder of a master, assigning it first when missing or older than the master."""
    dest = build / master.stem
    zips = sorted((dest / "autograder").glob(f"{master.stem}-autograder_*.zip"))
    if rebuild or not zips or zips[-1].stat().st_mtime < master.stat().st_mtime:
        otter_assign(master, dest)
        zips = sorted((dest / "autograder").glob(f"{master.stem}-autograder_*.zip"))
    if not zips:
        raise UsageError(f"otter assign wrote no autograder zip under {dest / 'autograder'}")
    return Autograder(master, zips[-1])


def normalized(path: Path) -> dict:
    """A notebook without what changes run to run (cell ids, outputs, counts)."""
    nb = json.loads(path.read_text())
    cells = [{"cell_type": c["cell_type"], "source": "".join(c.get("source", "")),
              "metadata": {k: v for k, v in c.get("metadata", {}).items() if k not in ("execution", "collapsed")}}
             for c in nb.get("cells", [])]
    return {"cells": cells, "otter": nb.get("metadata", {}).get("otter"), KIT_METADATA: nb.get("metadata", {}).get(KIT_METADATA)}


def filled_student_notebook(student: Path, solution: Path):
    """The student notebook with each answer cell replaced by the master's solution cell.

    This is what a perfect student hands in (the autograder's own solution notebook is not: its
    metadata carries the hidden tests). Used to prove every check passes on the solution.
    """
    import nbformat

    stu, sol = nbformat.read(student, as_version=4), nbformat.read(solution, as_version=4)
    answers = [c for c in sol["cells"] if "otter_assign_solution_cell" in c.get("metadata", {}).get("tags", [])]
    slots = [c for c in stu["cells"] if "otter_answer_cell" in c.get("metadata", {}).get("tags", [])]
    if len(answers) != len(slots):
        raise UsageError(f"{student.name}: {len(slots)} answer cells but {len(answers)} solution cells in {solution.name}")
    for slot, answer in zip(slots, answers):
        slot["source"] = answer["source"]
    return stu


def gradescope_zip(ag: Autograder, dest: Path, lab_results: str | None = None) -> Path:
    """Otter's autograder zip plus the kit, for Gradescope (which builds its image from setup.sh and
    environment.yml, then runs Otter on each submission).

    Added: `kit/` (pyproject.toml, README.md, src/mptcplab, labs/<lab>/, the lab's reference
    results under solutions/results/) installed editable by environment.yml, so notebooks import
    `mptcplab` and find the reference results where they look (REPO_ROOT/solutions/results/labN).
    Gradescope runs Otter's own grading: the sandbox, isolation and answer-key hiding of
    `mptcplab grade` do not apply there (site/instructors/grading.md says so)."""
    import yaml

    dest.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(ag.zip_path) as src, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename == "environment.yml":
                env = yaml.safe_load(data)
                for dep in env["dependencies"]:
                    if isinstance(dep, dict) and "pip" in dep:
                        dep["pip"].append("-e /autograder/source/kit[notebooks]")
                data = yaml.safe_dump(env, sort_keys=False).encode()
            out.writestr(item, data)
        parts = [REPO_ROOT / "pyproject.toml", REPO_ROOT / "README.md", REPO_ROOT / "src" / "mptcplab",
                 REPO_ROOT / "labs" / ag.stem]
        if lab_results:
            parts.append(REPO_ROOT / "solutions" / "results" / lab_results)
        for part in parts:
            files = [part] if part.is_file() else sorted(p for p in part.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
            for f in files:
                out.write(f, "kit/" + f.relative_to(REPO_ROOT).as_posix())
    return dest
