"""Lab 3 analysis: numbers and text as the report writes them."""

from __future__ import annotations

import math


def cell(text: str) -> str:
    """Text for a Markdown table cell: its own pipes (|error|) escaped, or they would split the cell."""
    return str(text).replace("|", "\\|")


def pct(v) -> str:
    """A signed share as the report writes an error (+12%); "–" for none."""
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:+.0%}"
