"""`mptcplab grade SUBMISSIONS... [--lab NN] [--out DIR]`: sandboxed auto-grading with Otter's tests."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from ..errors import EnvironmentProblem, UsageError
from ..grading import autograder as ag
from ..grading import batch, sandbox


def register(sub) -> None:
    p = sub.add_parser("grade", help="grade student notebooks in a sandbox; per-student reports + gradebook CSV")
    p.add_argument("submissions", nargs="+", type=Path, help="submitted .ipynb files or directories of them")
    p.add_argument("--lab", help="which lab (1, 01, lab1 or 01-name); default: read from each notebook")
    p.add_argument("--master", type=Path, help="grade against this master notebook instead of solutions/")
    p.add_argument("--out", type=Path, default=Path("build/grades"), help="reports and gradebook.csv (default: %(default)s)")
    p.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell (default: %(default)s)")
    p.add_argument("--time-limit", type=int, default=600, help="seconds per notebook, all cells (default: %(default)s)")
    p.add_argument("--memory-mb", type=int, default=3072, help="address-space limit per process (default: %(default)s)")
    p.add_argument("--tree-memory-mb", type=int, default=4096,
                   help="memory of a submission's whole process tree and its tmpfs, a cgroup (default: %(default)s)")
    p.add_argument("--disk-mb", type=int, default=512, help="size of each writable tmpfs: the copy, /tmp (default: %(default)s)")
    p.add_argument("--workers", type=int, default=0, help="submissions graded at once (default: one per core)")
    p.add_argument("--max-output", type=int, default=1_000_000, help="bytes of output kept per notebook (default: %(default)s)")
    p.add_argument("--notebook-mb", type=int, default=32,
                   help="largest notebook graded, file and executed (default: %(default)s)")
    p.set_defaults(func=_grade)


def _collect(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        if p.is_dir():
            out += sorted(q for q in p.rglob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        elif p.is_file():
            out.append(p)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return out


def lab_of(nb_path: Path) -> str | None:
    """The lab a notebook belongs to: Otter's init cell names it (otter.Notebook("01-x.ipynb"))."""
    try:
        with open(nb_path, "rb") as f:
            text = f.read(4 << 20).decode(errors="replace")  # Otter's first cell is near the top
    except OSError:
        return None
    m = re.search(r'otter\.Notebook\(\\?"(\d\d-[\w-]+)\.ipynb', text)
    if m:
        return m[1]
    m = re.match(r"(\d\d)-", nb_path.name)
    return m[1] if m else None


def group_by_lab(subs: list[Path], lab: str | None) -> tuple[dict[Path, list[Path]], list[Path]]:
    """master -> its submissions. A file that names no known lab (unreadable, truncated, foreign)
    joins the batch's only lab and is graded there (as unreadable), never stopping the batch."""
    groups: dict[Path, list[Path]] = {}
    unknown = []
    for s in subs:
        name = lab or lab_of(s)
        try:
            groups.setdefault(ag.find_master(name), []).append(s) if name else unknown.append(s)
        except UsageError:
            if lab:
                raise
            unknown.append(s)
    if unknown:
        if len(groups) != 1:
            raise UsageError(f"cannot tell which lab {len(unknown)} file(s) belong to ({unknown[0]}, ...) and the "
                             f"batch holds {len(groups)} labs; pass --lab")
        next(iter(groups.values())).extend(unknown)
    return groups, unknown


def _grade(args) -> int:
    why = sandbox.available()
    if why:
        raise EnvironmentProblem(why)
    subs = _collect(args.submissions)
    if not subs:
        raise UsageError("no .ipynb submissions found")
    if args.master:
        groups = {args.master.resolve(): subs}
    else:
        groups, unknown = group_by_lab(subs, args.lab)
        if unknown:
            print(f"{len(unknown)} file(s) do not name their lab; graded with the rest: "
                  + ", ".join(map(str, unknown[:5])), file=sys.stderr)
    opt = batch.Options(cell_timeout=args.cell_timeout, notebook_mb=args.notebook_mb,
                        max_output=args.max_output, workers=args.workers,
                        limits=sandbox.Limits(wall_s=args.time_limit, cpu_s=args.time_limit, memory_mb=args.memory_mb,
                                              tree_memory_mb=args.tree_memory_mb, disk_mb=args.disk_mb))
    summary = []
    for master, group in groups.items():
        grader = ag.autograder_for(master)
        out = args.out / master.stem if len(groups) > 1 else args.out
        results = batch.grade_batch(group, grader, out, opt)
        summary.append({"lab": master.stem, "gradebook": str(out / "gradebook.csv"), "graded": len(results),
                        "grader_errors": sum(r["status"] == "grader-error" for r in results)})
        print(f"{master.stem}: {len(results)} graded; gradebook {out / 'gradebook.csv'}; reports {out}/<student>/report.md")
    print(json.dumps(summary), file=sys.stderr)
    return 1 if any(s["grader_errors"] for s in summary) else 0
