"""`mptcplab check RESULTS_DIR`: flag recorded results that break physics (see check.py)."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError


def register(sub) -> None:
    p = sub.add_parser("check", help="judge recorded results against physics: single-path TCP above its "
                                     "window bound, goodput above its link")
    p.add_argument("results", type=Path, help="a results directory (a sweep, a lab's reference results)")
    p.add_argument("--all", action="store_true", help="print every verdict, not only the failures")
    p.set_defaults(func=_check)


def _check(args) -> int:
    from ..judge.check import check_results

    if not args.results.is_dir():
        raise UsageError(f"{args.results}: not a directory")
    verdicts = check_results(args.results)
    bad = [v for v in verdicts if not v.ok]
    for v in verdicts if args.all else bad:
        print(("ok   " if v.ok else "FAIL ") + v.line())
    explained = sum(1 for v in bad if v.cause)
    print(f"mptcplab check: {len(verdicts)} verdicts, {len(bad)} outside physics in {args.results}"
          + (f" ({explained} with their cause measured: see each line)" if explained else ""))
    if not verdicts:
        print("mptcplab check: nothing to judge here (no sweep.csv, runs.csv or sampled run summaries)")
    return 1 if bad else 0
