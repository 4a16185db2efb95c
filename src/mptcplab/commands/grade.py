"""`mptcplab grade SUBMISSIONS... [--lab NN] [--out DIR]`: sandboxed auto-grading with Otter's tests."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from ..core.errors import EnvironmentProblem, UsageError
from ..grading import batch, files, intake, leftovers, sandbox


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
    p.add_argument("--max-output", type=int, default=1_000_000,
                   help="bytes of printed text kept per notebook; figures and tables count against --notebook-mb "
                        "(default: %(default)s)")
    p.add_argument("--notebook-mb", type=int, default=32,
                   help="largest notebook graded, file and executed (default: %(default)s)")
    p.add_argument("--secret-file", type=Path,
                   help="the instructor's secret (16 bytes or more; keep it out of the repository): seeds the inputs "
                        "the hidden checks call the students' functions on, the same on every regrade (default: a "
                        "one-off secret for this run, of which only a hash is printed)")
    p.set_defaults(func=_grade)


def _secret(path: Path | None) -> bytes:
    """The secret the unseen inputs are drawn from (grading.reference.rng); named on stderr by hash only."""
    if path is None:
        secret, where = os.urandom(32), "a one-off secret (pass --secret-file to draw the same inputs again)"
    else:
        try:
            secret, where = path.read_bytes(), str(path)
        except OSError as exc:
            raise UsageError(f"--secret-file {path}: {exc.strerror}") from None
        if len(secret.strip()) < 16:
            raise UsageError(f"--secret-file {path}: {len(secret.strip())} bytes; use 16 or more random ones "
                             "(e.g. head -c 32 /dev/urandom > FILE)")
    print(f"unseen inputs drawn from {where}, sha256 {hashlib.sha256(secret).hexdigest()[:12]}", file=sys.stderr)
    return secret


def _grade(args) -> int:
    why = sandbox.available()
    if why:
        raise EnvironmentProblem(why)
    for line in leftovers.clean():  # what a grader killed earlier left
        print(f"removed {line}", file=sys.stderr)
    subs, skipped = files.collect(args.submissions)
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    if not subs:
        raise UsageError("no .ipynb submissions found")
    opt = batch.Options(cell_timeout=args.cell_timeout, notebook_mb=args.notebook_mb,
                        max_output=args.max_output, workers=args.workers, secret=_secret(args.secret_file),
                        limits=sandbox.Limits(wall_s=args.time_limit, cpu_s=args.time_limit, memory_mb=args.memory_mb,
                                              tree_memory_mb=args.tree_memory_mb, disk_mb=args.disk_mb))
    summary = intake.grade_all(subs, args.out, opt, lab=args.lab, master=args.master)
    for s in summary:
        print(f"{s['lab']}: {s['graded']} graded; gradebook {s['gradebook']}; reports beside it in <student>/report.md")
    print(json.dumps(summary), file=sys.stderr)
    return 1 if any(s["grader_errors"] for s in summary) else 0
