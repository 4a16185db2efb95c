"""`mptcplab check RESULTS_DIR`: flag recorded results that break physics, and refuse results whose
runs mix commits or kernel builds without their Markdown saying which (judge.provenance). The
judges are judge/check.py's; the walk over a results tree is here, as it asks every lab
(run.lab.all_labs) which tables it names."""

from __future__ import annotations

from pathlib import Path

from ..core.errors import UsageError
from ..judge import provenance
from ..run.lab import all_labs


def register(sub) -> None:
    p = sub.add_parser("check", help="judge recorded results against physics: single-path TCP above its "
                                     "window bound, goodput above its link")
    p.add_argument("results", type=Path, help="a results directory (a sweep, a lab's reference results)")
    p.add_argument("--all", action="store_true", help="print every verdict, not only the failures")
    p.set_defaults(func=_check)


def _check(args) -> int:
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
        tables = sorted({name for lab in all_labs().values() for name in lab.judging.results_checks})
        print(f"mptcplab check: nothing to judge here (no {', '.join(tables)}, setup check or sampled run summary)")
    said, refused = provenance.lines(args.results)  # commits and kernel builds mixed without saying so
    for line in said:
        print(line)
    return 1 if bad or refused else 0


def check_results(root: Path | str) -> list:
    """Every verdict (physics.Verdict) for the results under `root`: the tables each lab names
    (`Lab.judging.results_checks`), the setup checks its manifests and summaries hold, each sampled run."""
    from ..judge.check import check_run_dir, check_setup_checks

    root = Path(root)
    out = []
    for lab in all_labs().values():
        for name, judge in lab.judging.results_checks.items():
            for table in sorted(root.rglob(name)):
                out += judge(table)
    for doc in [*sorted(root.rglob("*manifest.json")), *sorted(root.rglob("verify*summary.json")),
                *sorted(root.rglob("verify/summary.json"))]:
        out += check_setup_checks(doc)
    for summary in sorted(root.rglob("summary.json")):
        if not summary.parent.name.endswith(".partial"):
            out += check_run_dir(summary.parent)
    return out
