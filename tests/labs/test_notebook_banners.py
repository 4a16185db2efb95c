"""Each lab's student notebook analyses the student's own newest finished run, wherever the kit's
commands put it (`mptcplab run`'s folder, `make reproduce`'s, any `--out DIR`), and its first output
names it; with none, it falls back to the reference only under the loud banner (issue 35). What runs
here is the notebook's own opening: its first cell after Otter's, up to the banner's print."""

import ast
import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

from mptcplab.core import paths
from mptcplab.run import locate as loc
from mptcplab.run import runner
from mptcplab.run.lab import all_labs

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("0*.ipynb"))
LAB_OF = {lab.slug: lab.id for lab in all_labs().values()}


def opening(notebook: Path) -> str:
    """The notebook's code up to its first output: its second code cell's statements to the print of
    the banner, none of them an expression before it (a cell shows nothing else before it)."""
    cells = [c.source for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "code"]
    body = ast.parse(cells[1]).body
    at = next((k for k, node in enumerate(body) if ast.unparse(node) == "print(banner(LOCATED))"), None)
    assert at is not None, f"{notebook.name}: its first cell after Otter's does not print(banner(LOCATED))"
    assert not any(isinstance(node, ast.Expr) for node in body[:at]), f"{notebook.name} shows something before its banner"
    return ast.unparse(ast.Module(body[:at + 1], type_ignores=[]))


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A checkout with the reference folders only, an empty run index, no MPTCPLAB_*_RESULTS."""
    root = tmp_path / "repo"
    for lab_id in LAB_OF.values():
        (root / "solutions" / "results" / lab_id).mkdir(parents=True)
        monkeypatch.delenv(loc.env_name(lab_id), raising=False)
    monkeypatch.setattr(paths, "REPO_ROOT", root)
    monkeypatch.setenv("MPTCPLAB_RUN_INDEX", str(tmp_path / "index.jsonl"))
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.chdir(root)
    return root


def finished_sweep(out: Path, lab_id: str, where: str, when: float) -> Path:
    """A sweep as `run`/`reproduce` conclude one, with what each notebook's `usable` asks of it:
    Lab 1's detailed run, Lab 2's static runs."""
    run = out / "r1"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps({
        "command": ["mptcplab", "run", lab_id, "--quick"], "platform": {"where": where, "kernel_release": "6.12.117"},
        "git": {"commit": "0123456789abcdef", "dirty": False}}))
    (run / "summary.json").write_text(json.dumps({"detail": True}))
    (out / "throughput.csv").write_text("algo,variant\nlia,static\n")
    lab = SimpleNamespace(id=lab_id, report=lambda o: "", judging=SimpleNamespace(claims=None))
    runner.conclude(lab, out, {"runs": 1})
    os.utime(out / loc.SUMMARY, (when, when))
    return out


def run_opening(notebook: Path, capsys) -> tuple[loc.Located, str]:
    namespace: dict = {}
    exec(compile(opening(notebook), str(notebook), "exec"), namespace)
    return namespace["LOCATED"], capsys.readouterr().out


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_the_notebook_names_the_newest_run_wherever_it_was_written(notebook, checkout, tmp_path, capsys):
    lab_id = LAB_OF[notebook.stem]
    now = time.time()
    made = {"run": finished_sweep(runner.default_out(lab_id, quick=True), lab_id, "uml", now - 7200),
            "reproduce": finished_sweep(checkout / "build" / "reproduce" / f"{lab_id}-quick", lab_id, "vm", now - 3600),
            "--out": finished_sweep(tmp_path / "elsewhere" / f"my-{lab_id}", lab_id, "native", now)}
    for newest, where in (("--out", "native"), ("reproduce", "vm"), ("run", "uml")):
        located, shown = run_opening(notebook, capsys)
        assert located.path == made[newest] and not located.is_reference, (newest, located)
        first = shown.splitlines()[0]
        assert first == f"Analysing YOUR results: {made[newest]}", shown
        assert f"in {where}, kernel 6.12.117" in shown and "quick run" in shown, shown
        (made[newest] / loc.SUMMARY).unlink()  # no longer finished: the next newest is named


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.stem for n in NOTEBOOKS])
def test_the_notebook_falls_back_to_the_reference_only_loudly(notebook, checkout, capsys):
    lab_id = LAB_OF[notebook.stem]
    located, shown = run_opening(notebook, capsys)
    assert located.is_reference and located.path == checkout / "solutions" / "results" / lab_id
    assert shown.splitlines()[0] == "!" * 78 and "REFERENCE" in shown and f"no finished {lab_id} run found" in shown
