"""The leak scan's number reader: hidden reference values looked for in a text a student reads.

A helper beside the grading tests (not a package). A number is a token of its own: a run of
digits glued to a letter, a digit run or an underscore on either side is part of a word (a digest
such as `6942e893795a2428`, an identifier such as `q3_2`), not a number, so a report's SHA-256
prefix is never read as 6942 x 10^893795 (which overflowed). A unit glued to a number ("40ms")
therefore hides it from this reader: the kit's messages put a space before units.
"""

from __future__ import annotations

import math
import re

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.]*\w)")


def numbers(text: str) -> list[tuple[float, float]]:
    """Every number of 4 or more significant digits in a text, with half its last digit's unit.
    (With ~600 reference values, a 3-digit number meets one by chance: "12.0 MiB" met 11.9795.)"""
    out = []
    for m in NUMBER.finditer(text):
        tok = m[0]
        mant, _, exp_text = tok.lstrip("-").replace("E", "e").partition("e")
        digits = mant.replace(".", "").lstrip("0")
        if len(digits) < 4:
            continue
        exp = int(exp_text) if exp_text else 0
        value = float(tok)
        if not math.isfinite(value) or abs(exp) > 300:
            continue
        decimals = len(mant.split(".")[1]) if "." in mant else 0
        # An integer (a count: "130 runs", cell numbers) matches only a value it equals; a decimal
        # matches every value that rounds to it.
        out.append((value, 0.5 * 10.0 ** (exp - decimals) if "." in mant or exp else 1e-9 * abs(value)))
    return out


def leaks(text: str, hidden: list[float]) -> list[tuple[float, float]]:
    """(number in the text, hidden value it rounds from) for every match."""
    return [(x, h) for x, half_unit in numbers(text) for h in hidden
            if abs(x - h) <= half_unit * (1 + 1e-9) and abs(x) >= half_unit * 10]


def flat(obj) -> list[float]:
    """Every finite non-zero number in an answer (numbers, lists, tuples, dicts, numpy arrays,
    pandas objects), for `leaks`: what a hidden check compares with, as numbers to look for."""
    import numpy as np
    import pandas as pd

    if isinstance(obj, (pd.DataFrame, pd.Series, pd.Index)):
        obj = obj.to_numpy().ravel().tolist() + (obj.index.tolist() if not isinstance(obj, pd.Index) else [])
    elif isinstance(obj, np.ndarray):
        obj = obj.ravel().tolist()
    if isinstance(obj, dict):
        return [x for v in obj.values() for x in flat(v)]
    if isinstance(obj, (list, tuple, set)):
        return [x for v in obj for x in flat(v)]
    if isinstance(obj, (bool, np.bool_)) or not isinstance(obj, (int, float, np.integer, np.floating)):
        return []
    return [float(obj)] if obj and math.isfinite(obj) else []
