"""`mptcplab notebooks assign [--check]`: student notebooks from the Otter masters in solutions/.
`mptcplab notebooks reference LAB RUN_DIR`: a real run's compact results become the reference
results the notebooks fall back on and the site renders (solutions/results/LAB/)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ..core import log
from ..core.errors import UsageError
from ..grading import autograder as ag
from ..judge import claims
from ..run.engine import VERIFY
from ..run.lab import all_labs, get_lab
from ..run.merge import SHARDS_DIR


def register(sub) -> None:
    p = sub.add_parser("notebooks", help="build student notebooks and autograders from the master notebooks")
    nsub = p.add_subparsers(dest="notebooks_command", metavar="ACTION", required=True)
    a = nsub.add_parser("assign", help="otter assign every solutions/NN-*.ipynb; copy student notebooks to notebooks/")
    a.add_argument("--lab", action="append", help="only this lab (1, 01, lab1 or 01-name); repeatable")
    a.add_argument("--check", action="store_true",
                   help="build into a temporary directory and fail if notebooks/ is stale (for CI); changes nothing")
    a.add_argument("--solutions", type=Path, default=ag.SOLUTIONS, help=argparse_help("master notebooks"))
    a.add_argument("--notebooks", type=Path, default=ag.NOTEBOOKS, help=argparse_help("student notebooks"))
    a.add_argument("--build", type=Path, default=ag.ASSIGN_DIR, help=argparse_help("otter assign output"))
    a.set_defaults(func=_assign)
    g = nsub.add_parser("gradescope", help="the Otter autograder zip for Gradescope, with the kit and the lab's "
                                           "reference results inside")
    g.add_argument("--lab", required=True, help="1, 01, lab1 or 01-name")
    g.add_argument("--out", type=Path, default=Path("build/gradescope"), help="directory for the zip (default: %(default)s)")
    g.set_defaults(func=_gradescope)
    r = nsub.add_parser("reference", help="copy a real run's compact results (tables, manifests, trimmed "
                                          "capture; never raw pcaps) to solutions/results/LAB")
    r.add_argument("lab", help=f"which lab: {', '.join(all_labs())}")
    r.add_argument("run_dir", type=Path, help="the completed run's directory, e.g. results/lab1")
    r.add_argument("--dest", type=Path, help="default: solutions/results/LAB (replaced)")
    r.add_argument("--report-only", action="store_true",
                   help="only write paper-vs-this-run.md again, from the compact tables already in run_dir "
                        "(e.g. solutions/results/lab2 after the analysis changed; no new measurement)")
    r.add_argument("--tables", nargs="+", metavar="TABLE",
                   help="replace only these tables of the existing reference (e.g. fairness) with the run's")
    r.add_argument("--controlled", metavar="NAME",
                   help="keep the run beside the existing reference in DEST as its controlled run NAME "
                        "(the lab's analysis.export_controlled), whose claims and report then say what it measured")
    r.set_defaults(func=_reference)


_log = log.get("notebooks")


def argparse_help(what: str) -> str:
    return f"directory of {what} (default: %(default)s)"


def _assign(args) -> int:
    masters = [ag.find_master(lab, args.solutions) for lab in args.lab] if args.lab else ag.masters(args.solutions)
    if not masters:
        raise UsageError(f"no master notebooks (NN-name.ipynb) in {args.solutions}")
    stale = []
    with tempfile.TemporaryDirectory(prefix="mlab-assign-") as tmp:
        build = Path(tmp) if args.check else args.build
        for master in masters:
            _log.info("otter assign %s -> %s", master, build / master.stem)
            student = ag.otter_assign(master, build / master.stem)
            shipped = args.notebooks / master.name
            if args.check:
                if not shipped.exists() or ag.normalized(shipped) != ag.normalized(student):
                    stale.append(shipped)
                continue
            args.notebooks.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(student, shipped)
            _log.info("wrote %s", shipped)
    if stale:
        _log.error("stale student notebooks (run `mptcplab notebooks assign` and commit):\n  %s",
                   "\n  ".join(map(str, stale)))
        return 1
    if args.check:
        _log.info("notebooks/ is up to date with %d master(s)", len(masters))
    return 0


def _gradescope(args) -> int:
    master = ag.find_master(args.lab)
    grader = ag.autograder_for(master)
    lab_id = f"lab{int(master.stem[:2])}"
    results = lab_id if (ag.SOLUTIONS / "results" / lab_id).is_dir() else None
    out = ag.gradescope_zip(grader, args.out / f"{master.stem}-gradescope.zip", results)
    print(f"{out}: upload it as the assignment's autograder on Gradescope (Configure Autograder -> Zip file upload)")
    return 0


def _keep_shards_setup_checks(run_dir: Path, dest: Path) -> None:
    """A merged sweep's other shards' setup checks (the first shard's is the sweep's own `verify`):
    each one's manifest and summary in dest/shards/NAME/, so a reference keeps every setup check its
    runs were measured after, and `mptcplab check` judges each."""
    for check in sorted((run_dir / SHARDS_DIR).glob(f"*/{VERIFY}")):
        for name in ("manifest.json", "summary.json"):
            if (check / name).is_file():
                (dest / SHARDS_DIR / check.parent.name).mkdir(parents=True, exist_ok=True)
                shutil.copy2(check / name, dest / SHARDS_DIR / check.parent.name / f"{VERIFY}-{name}")


def _reference(args) -> int:
    lab = get_lab(args.lab)
    if args.report_only:
        claims.write(lab, args.run_dir)  # the report reads the claims judged on its tables
        report = args.run_dir / "paper-vs-this-run.md"
        report.write_text(lab.analysis.report(args.run_dir))
        log.get(lab.id).info("%s written from the tables in %s", report, args.run_dir)
        return 0
    if not (args.run_dir / "lab-summary.json").exists():
        raise UsageError(f"{args.run_dir}: not a completed {lab.id} run (no lab-summary.json); "
                         f"run `sudo mptcplab run {lab.id} --out {args.run_dir}` to the end first")
    dest = args.dest or ag.SOLUTIONS / "results" / lab.id
    if args.controlled:
        if not hasattr(lab.analysis, "export_controlled"):
            raise UsageError(f"{lab.id} keeps no controlled runs beside its reference")
        lab.analysis.export_controlled(args.run_dir, dest, args.controlled)
    elif args.tables:
        lab.analysis.export_reference(args.run_dir, dest, tables=tuple(args.tables))
    else:
        lab.export(args.run_dir, dest)
        if not (dest / "runs-manifest.csv").exists() and (args.run_dir / "runs-manifest.csv").exists():
            shutil.copy2(args.run_dir / "runs-manifest.csv", dest)  # every reference keeps each run's provenance
        _keep_shards_setup_checks(args.run_dir, dest)
    if claims.write(lab, dest):  # the claims judged on the reference as it now is, and the report that reads them
        (dest / "paper-vs-this-run.md").write_text(lab.report(dest))
    log.get(lab.id).info("reference results from %s written to %s; now run `mptcplab notebooks assign` and "
                         "commit results and notebooks together", args.run_dir, dest)
    return 0
