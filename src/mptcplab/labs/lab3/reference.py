"""Lab 3 analysis: the reference copy shipped in solutions/results/lab3/."""

from __future__ import annotations

from pathlib import Path

from ...run import results
from .controls import CONTROLS
from .report import report
from .sweep import COMPACT, compact


def export_reference(sweep: Path, dest: Path) -> list[Path]:
    """The compact tables and the paper-vs-this-run report, copied to e.g. solutions/results/lab3/.
    A controlled run exported into a reference's controls/NAME/ keeps its tables only: the
    reference's own report reads them (see `load_controls`)."""
    compact(sweep)
    copied = results.copy_compact(sweep, dest, [n for n in COMPACT if not n.endswith(".md")])
    if Path(dest).parent.name == CONTROLS:
        return copied
    # The report is made in dest, from the copied tables and the controlled runs kept there
    # (controls/), which a re-made reference keeps; the sweep has none of its own.
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, Path(dest) / "paper-vs-this-run.md"]
