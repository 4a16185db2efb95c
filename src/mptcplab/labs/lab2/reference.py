"""Lab 2 analysis: the compact copy shipped in solutions/results/lab2/, and the controlled runs kept
beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...run import results
from .controlled import CONTROLLED_DIR
from .report import report
from .sweep import COMPACT, compact


def export_reference(sweep: Path, dest: Path, tables: tuple[str, ...] | None = None) -> list[Path]:
    """The compact tables and the paper-vs-this-run report, copied to e.g. solutions/results/lab2/.

    `tables=("fairness",)`: replace only those tables of an existing reference with a sweep that
    re-measured them (e.g. the fairness runs after a measurement fix). The reference's manifest
    then names that sweep (`replaced_by`: table -> its started, commit, kernel, place and runs),
    every row keeps the commit that made it, and the report is made again from the result."""
    compact(sweep)
    dest = Path(dest)
    if not tables:  # the report is made in dest: it reads the controlled runs kept there (controlled/)
        copied = results.copy_compact(sweep, dest, [n for n in COMPACT if not n.endswith(".md")])
        (dest / "paper-vs-this-run.md").write_text(report(dest))
        return [*copied, dest / "paper-vs-this-run.md"]
    man = json.loads((dest / "lab2-manifest.json").read_text())
    new = json.loads((Path(sweep) / "lab2-manifest.json").read_text())
    copied = results.copy_compact(sweep, dest, [f"{t}.csv" for t in tables])
    for t in tables:
        rows = pd.read_csv(dest / f"{t}.csv")
        man.setdefault("replaced_by", {})[t] = {
            "sweep": str(sweep), "started": new.get("started"), "git": new.get("git"), "runs": len(rows),
            "kernel": (new.get("platform") or {}).get("kernel_release"),
            "where": (new.get("platform") or {}).get("where"), "parameters": (new.get("parameters") or {}).get(t)}
    (dest / "lab2-manifest.json").write_text(json.dumps(man, indent=2, default=str) + "\n")
    (dest / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, dest / "lab2-manifest.json", dest / "paper-vs-this-run.md"]


def export_controlled(sweep: Path, dest: Path, name: str) -> list[Path]:
    """Keep a controlled run (a sweep that switches one mechanism, e.g. the shared-bottleneck
    variant) beside the reference in `dest`: its compact tables in dest/controlled/<name>/, then
    the reference's report again, which reads them (`controlled_runs`)."""
    compact(sweep)
    copied = results.copy_compact(sweep, Path(dest) / CONTROLLED_DIR / name,
                                  [f for f in COMPACT if f != "paper-vs-this-run.md"])
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, Path(dest) / "paper-vs-this-run.md"]
