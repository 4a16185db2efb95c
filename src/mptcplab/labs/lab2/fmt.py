"""Lab 2 analysis: numbers as the report writes them (a mean with its interval, a corrected interval
with its level)."""

from __future__ import annotations


def number(m, ci=None, digits=2) -> str:
    """m to `digits` decimals; with `ci`, "m ± ci", or "m (1 run)" where ci is NaN; "—" for no value."""
    if m is None or m != m:
        return "—"
    if ci is None:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {ci:.{digits}f}" if ci == ci else f"{m:.{digits}f} (1 run)"


def corrected(diff: float, half: float, level: float) -> str:
    """"d ± h (99.5%)": a difference with its corrected interval and that interval's level."""
    if half != half:
        return number(diff, half)
    lv = (f"{level * 100:.2f}".rstrip("0").rstrip(".") + "%") if level == level else "?"
    return f"{number(diff, half)} ({lv})"
