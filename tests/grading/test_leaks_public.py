"""Issue 40 item 3 and issue 35 item 4: every public message of every question of every lab,
provoked and scanned.

For each lab, the master's solution runs in this process (the values and functions a correct
notebook has); then every question's public checks run, as Otter runs them in a student's Jupyter
and as the grader's checker runs them (grading mode, the instructor's draw provided), on wrong
answers made from the correct ones: nothing, empty, scaled (x8: bytes for bits), one row or item
short or off by one, and functions that return those or raise. Every failure message:

- is at most 9 lines as Otter shows it (its 3 lines, then the check's message of at most 6),
  and quotes no line of the lab's check module;
- holds no number of an answer: neither the solution's (on the shipped data, the values the
  checks read and what its functions returned to them) nor the hidden checks' (on the draw),
  except numbers the wrong answer itself holds (a check may quote what the student gave).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mptcplab.grading import autograder, checker, reference
from mptcplab.run.lab import all_labs

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE / "unseen_submissions")]
import leakscan  # noqa: E402
import make_unseen_submissions as crafted  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.timeout(2400)]  # each lab's solution runs here

SECRET = b"the instructor's own secret, never in a notebook"
LABS = sorted(all_labs())
MAX_SHOWN = 9


def _scaled(x, k):
    if isinstance(x, pd.DataFrame):
        out = x.copy()
        num = out.select_dtypes("number").columns
        out[num] = out[num] * k
        return out
    if isinstance(x, pd.Series):
        return x * k if pd.api.types.is_numeric_dtype(x) else x
    if isinstance(x, (list, tuple)):
        return type(x)(_scaled(v, k) for v in x)
    if isinstance(x, np.ndarray) and x.dtype.kind in "iuf":
        return x * k
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_)):
        return x * k
    return x


def _short(x):
    if isinstance(x, (pd.DataFrame, pd.Series)):
        return x.iloc[:-1]
    if isinstance(x, (list, tuple, np.ndarray)):
        return x[:-1]
    if isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_)):
        return x + 1
    return None


def wrong_values(x) -> list:
    """Plausible wrong answers of the same kind as the correct answer x."""
    out = [None, _scaled(x, 8), _short(x)]
    if isinstance(x, (pd.DataFrame, pd.Series)):
        out.append(x.iloc[0:0])
    elif isinstance(x, (list, tuple)):
        out.append(type(x)())
    elif isinstance(x, (bool, np.bool_)):
        out.append(not x)
    elif isinstance(x, str):
        out.append("")
    return out


class Wrong:
    """A wrong version of a student's function; remembers what it returned (the check may quote it)."""

    def __init__(self, f, change):
        self.f, self.change, self.returned = f, change, []

    def __call__(self, *args, **kwargs):
        out = self.change(self.f(*args, **kwargs))
        self.returned.append(out)
        return out


def _raises(*args, **kwargs):
    raise ValueError("a student's bug")


def wrong_functions(f) -> list:
    changes = [lambda out: None, lambda out: _scaled(out, 8), _short]
    return [Wrong(f, c) for c in changes] + [_raises]


def _source_lines(lab: str) -> set[str]:
    """Lines of the lab's check module long enough to recognise (code, not just words)."""
    path = Path(all_labs()[lab].analysis.__file__).with_name("checks.py")
    lines = {" ".join(ln.split()) for ln in path.read_text().splitlines()}
    return {ln for ln in lines if len(ln) >= 20 and not ln.startswith("#") and any(c in ln for c in "=()[]:")}


def _run_public(src: str, q: str, env: dict) -> list[str]:
    """Otter's message of each failing public case, as `grader.check(q)` shows it."""
    tf = checker.test_file(src, q)
    tf.test_cases = [tc for tc in tf.test_cases if not tc.hidden]
    if not tf.test_cases:
        return []
    tf.run(checker.scope_for(checker.names_read(tf), env))
    return [r.message for r in tf.test_case_results if not r.passed]


@pytest.mark.parametrize("lab", LABS)
def test_every_public_message_is_short_and_gives_nothing_away(lab, monkeypatch):
    ag = autograder.autograder_for(autograder.find_master(lab))
    tests = ag.tests()
    sol = crafted.solution_namespace(ag)
    answers = {}  # name -> the solution's value, or what its function returned in a whole check run

    def recorder(name):
        def call(*a, **k):
            out = sol[name](*a, **k)
            answers.setdefault(name, []).append(out)
            return out
        return call

    names = sorted(n for n in crafted.read_names(tests) if n in sol)
    crafted.check_run(tests, {n: recorder(n) if callable(sol[n]) else sol[n] for n in names}, lab, SECRET)
    answers.update({n: sol[n] for n in names if not callable(sol[n])})
    drawn = reference.draw(lab, SECRET)
    hidden = leakscan.flat(answers) + leakscan.flat(drawn["answers"])
    source = _source_lines(lab)

    provoked, problems = 0, []
    for grading in (False, True):  # the student's Jupyter, then the grader's checker
        if grading:
            monkeypatch.setenv("MPTCPLAB_GRADING", "1")
            reference.provide({lab: drawn})
        try:
            for q, src in sorted(tests.items()):
                for name in sorted(checker.names_read(checker.test_file(src, q)) & set(sol)):
                    value = sol[name]
                    for wrong in (wrong_functions(value) if callable(value) else wrong_values(value)):
                        env = {**{n: sol[n] for n in names}, name: wrong}
                        for message in _run_public(src, q, env):
                            provoked += 1
                            where = f"{q} {name} ({'graded' if grading else 'jupyter'}): {message!r}"
                            if len(message.splitlines()) > MAX_SHOWN:
                                problems.append(f"{len(message.splitlines())} lines: {where}")
                            flat = " ".join(message.split())
                            quoted = [ln for ln in source if ln in flat]
                            if quoted:
                                problems.append(f"quotes its source {quoted[0]!r}: {where}")
                            own = leakscan.flat(getattr(wrong, "returned", wrong))
                            found = sorted({x for x, h in leakscan.leaks(message, hidden)
                                            if not any(math.isclose(x, o, rel_tol=1e-3) for o in own)})
                            if found:
                                problems.append(f"answer values {found[:3]}: {where}")
        finally:
            reference.provide({})
            monkeypatch.delenv("MPTCPLAB_GRADING", raising=False)
    assert provoked >= len(tests), f"{lab}: only {provoked} public failures provoked for {len(tests)} questions"
    problems = list(dict.fromkeys(problems))
    assert not problems, f"{lab}: {len(problems)} public messages:\n" + "\n".join(problems[:12])
