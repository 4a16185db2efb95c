"""Issue 40 items 1-2: every lab grades on inputs drawn from the instructor's secret, with answers
the kit computes outside the student's reach.

- each lab declares its answer keys, `held_out` and `unseen_answers` (the latter hidden with them);
- a secret draws the same inputs and answers on every regrade, another secret changes every
  answer (so numbers computed at home from any draw, or from the shipped data, match none);
- what the grader sends the checker rebuilds through the checker's allowlist of plain data;
- `unseen` / `expected` answer only inside the checker (the notebook's kernel, a student's
  Jupyter and Gradescope get a LookupError), and each call returns a copy.
"""

from __future__ import annotations

import base64
import io

import numpy as np
import pandas as pd
import pytest

from mptcplab.grading import answer_keys, checker, reference
from mptcplab.run.lab import all_labs

LABS = sorted(all_labs())


def _same(a, b) -> bool:
    if isinstance(a, (pd.DataFrame, pd.Series)):
        return isinstance(b, type(a)) and a.equals(b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.shape == b.shape and bool(np.all(a == b))
    return a == b


@pytest.mark.parametrize("lab", LABS)
def test_each_lab_declares_its_keys_and_unseen_data(lab):
    spec = all_labs()[lab].grading
    assert spec.answer_keys and spec.held_out and spec.unseen_answers, lab
    fn = spec.unseen_answers
    assert fn.__name__ in answer_keys.functions()[fn.__module__]  # hidden wherever student code runs


@pytest.mark.parametrize("lab", LABS)
def test_the_secret_decides_every_answer(lab):
    a, again, b = (reference.draw(lab, s) for s in (b"secret-a" * 3, b"secret-a" * 3, b"secret-b" * 3))
    assert a["answers"] and _same(a["answers"], again["answers"]) and _same(a["inputs"], again["inputs"])
    unchanged = [k for k in a["answers"] if _same(a["answers"][k], b["answers"][k])]
    assert not unchanged, f"{lab}: answers {unchanged} are the same under another secret (memorisable)"


def test_labs_draw_apart_from_one_secret():
    x, y = reference.rng(b"s" * 16, "lab1").random(4), reference.rng(b"s" * 16, "lab2").random(4)
    assert not np.allclose(x, y)


@pytest.mark.parametrize("lab", LABS)
def test_the_draw_reaches_the_checker_as_plain_data(lab):
    blob = reference.request(all_labs()[lab].slug, b"secret-a" * 3)
    drawn = checker.DataUnpickler(io.BytesIO(base64.b64decode(blob))).load()  # refuses anything but data
    assert _same(drawn[lab], reference.draw(lab, b"secret-a" * 3))


def test_unseen_answers_only_in_the_checker():
    reference.provide({})
    with pytest.raises(LookupError, match="only inside"):
        reference.unseen("lab3")
    with pytest.raises(LookupError, match="only inside"):
        reference.expected("lab3", "q1")
    try:
        reference.provide({"lab3": {"inputs": {"t": [1.0, 2.0]}, "answers": {"q1": [3.0]}}})
        got = reference.unseen("lab3")
        got["t"].append(9.0)  # a test (or a student function's argument) changed it: the next call does not see it
        assert reference.unseen("lab3") == {"t": [1.0, 2.0]} and reference.expected("lab3", "q1") == [3.0]
        with pytest.raises(LookupError):
            reference.unseen("lab1")
    finally:
        reference.provide({})
