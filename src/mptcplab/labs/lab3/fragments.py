"""Lab 3's generated fragments: the measured numbers its guide and the reference page quote, made
from the committed reference (solutions/results/lab3) by the lab's own analysis, so a page and the
report never disagree. `mptcplab fragments` writes each into the blocks `<!-- generated: lab3.NAME -->`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from . import analysis


def fragments(ref: Path | str) -> dict[str, str]:
    ref = Path(ref)
    runs = analysis.load(ref)["runs"]
    return {"reference": reference(ref, runs), "errors": errors(runs), "report": report(ref)}


def reference(ref: Path, runs: pd.DataFrame) -> str:
    """What the reference is: kernel, place, commits and days of its runs (runs-manifest.csv), and how
    many runs of each scenario; its controls likewise."""
    def where(folder: Path) -> str:
        m = pd.read_csv(folder / "runs-manifest.csv")
        m = m[m["run"] != "verify"]
        days = sorted({s[:10] for s in m["started"].astype(str)})
        return (f"Linux {', '.join(sorted(set(m['kernel'].astype(str))))} "
                f"({', '.join(sorted(set(m['where'].astype(str))))}), commit{'s' if m['commit'].nunique() > 1 else ''} "
                f"{', '.join(sorted(set(m['commit'].astype(str))))}, {' to '.join(dict.fromkeys([days[0], days[-1]]))}")
    counts = runs.groupby("scenario").size()
    lines = [f"The reference's {len(runs)} runs ({counts.get('random', 0)} random loss, {counts.get('droptail', 0)} "
             f"DropTail): {where(ref)}."]
    for name, c in analysis.load_controls(ref).items():
        lines.append(f"- control `{name}`: {len(c['runs'])} run{'s' if len(c['runs']) != 1 else ''}, {where(ref / analysis.CONTROLS / name)}")
    return "\n".join(lines) + "\n"


def errors(runs: pd.DataFrame) -> str:
    """Median |relative error| per model and group of runs (analysis.error_summary), as the report."""
    s = analysis.error_summary(runs)
    head = "| runs | count | " + " | ".join(analysis.MODELS.values()) + " |"
    rows = [f"| {t['runs']} | {t['count']} | " + " | ".join(f"{t[c]:.0%}" for c in analysis.MODELS) + " |"
            for _, t in s.iterrows()]
    return "\n".join([head, "|---|---|" + "---|" * len(analysis.MODELS), *rows]) + "\n"


def report(ref: Path) -> str:
    """The reference's paper-vs-this-run report, its headings one level down (under the page's own)."""
    text = (ref / "paper-vs-this-run.md").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    return re.sub(r"^(#{2,5}) ", r"#\1 ", text, flags=re.M).strip("\n") + "\n"
