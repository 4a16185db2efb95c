"""Lab 3 analysis: the reference copy shipped in solutions/results/lab3/, and the controlled runs
kept beside it (controls/NAME/)."""

from __future__ import annotations

from pathlib import Path

from ...core.errors import UsageError
from ...run import results
from .controls import CONTROLS
from .report import report
from .sweep import COMPACT, compact

TABLES_ONLY = [n for n in COMPACT if not n.endswith(".md")]  # what a reference or a controlled run keeps


def export_reference(sweep: Path, dest: Path, tables: tuple[str, ...] | None = None) -> list[Path]:
    """The compact tables and the paper-vs-this-run report, copied to e.g. solutions/results/lab3/.
    The report is made in dest, from the copied tables and the controlled runs kept there
    (controls/), which a re-made reference keeps; the sweep has none of its own."""
    if tables:  # every table of a run comes from the same flows: none is re-measured alone
        raise UsageError(f"lab3 reference --tables {' '.join(tables)}: Lab 3 replaces no table alone; export the "
                         "whole run, or keep it beside the reference with --controlled NAME")
    compact(sweep)
    copied = results.copy_compact(sweep, dest, TABLES_ONLY)
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, Path(dest) / "paper-vs-this-run.md"]


def export_controlled(sweep: Path, dest: Path, name: str) -> list[Path]:
    """Keep a controlled run (`mptcplab notebooks reference lab3 RUN --controlled NAME`) beside the
    reference in `dest`: its tables and runs-manifest.csv in dest/controls/NAME/, then the
    reference's report again, which reads them (`load_controls`)."""
    compact(sweep)
    copied = results.copy_compact(sweep, Path(dest) / CONTROLS / name, TABLES_ONLY)
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, Path(dest) / "paper-vs-this-run.md"]
