"""Reference inputs for the checks: the kit's own copy, never a variable of the notebook.

A check that read the measured runs from the student's `runs` would grade against whatever the
student put there (an empty table makes every per-run check vacuous). When grading, checks load
the tables here instead (`kit`), from `solutions/results/<lab>` of the kit the checker runs from
(the checker's sandbox shows the real files, and the notebook ran on the same ones: the sandbox
shows no `results/` of the student's).

Graded points come from unseen data (issue 40): each lab's `Lab.grading.held_out(tables, rng)` draws inputs
no student has seen from a generator seeded with the instructor's secret, and its
`Lab.grading.unseen_answers(inputs)` computes the kit's answers on them. The grader does both once per
batch, in its own process, before any submission runs (`draw`), and hands them to each checker on
its stdin with the tests; hidden tests read them with `unseen(lab)` and `expected(lab, key)`, which
work only there. Student code never runs where they are: the checker calls a student's function
in a sandbox of its own that shows the lab's answer keys redacted (checker.Oracle).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os

from ..run.lab import REPO_ROOT


def results(lab: str):
    """The kit's reference results of a lab (`lab3` -> solutions/results/lab3)."""
    return REPO_ROOT / "solutions" / "results" / lab


@functools.lru_cache(maxsize=8)
def tables(lab: str, load) -> dict:
    """The lab's reference tables as its loader reads them (`la.load`); loaded once per process.
    Checks must not change them: take a copy before editing."""
    return load(results(lab))


def grading() -> bool:
    """True inside `mptcplab grade`'s sandboxes (sandbox.prepare sets it)."""
    return os.environ.get("MPTCPLAB_GRADING") == "1"


def kit(lab: str, load, name: str | None = None, own=None):
    """What a check compares with: the kit's own copy (table `name` of it, if given) when grading.
    In a student's own notebook (`grader.check` while they work) it is `own`, the table their
    notebook loaded, so the checks follow their own runs there; the checker never binds it
    (checks pass `globals().get("runs")`, a name the checker does not provide)."""
    if own is not None and not grading():
        return own
    loaded = tables(lab, load)
    return loaded if name is None else loaded[name]


def rng(secret: bytes, lab: str):
    """The generator a lab's held-out inputs are drawn with: seeded from the secret and the lab id
    (the same secret gives every lab different draws, and the same draws on every regrade)."""
    import numpy as np

    return np.random.default_rng(int.from_bytes(hashlib.sha256(secret + b"\0" + lab.encode()).digest(), "big"))


def draw(lab: str, secret: bytes) -> dict:
    """{"inputs": the lab's held-out inputs, "answers": the kit's answers on them}, or {} for a lab
    that declares no `held_out`. Runs in the grader (the real answer keys), never in a sandbox."""
    from ..run.lab import all_labs

    found = all_labs()[lab]
    spec = found.grading
    if spec.held_out is None:
        return {}
    inputs = spec.held_out(copy.deepcopy(tables(lab, found.analysis.load)), rng(secret, lab))  # cached: not theirs
    answers = spec.unseen_answers(copy.deepcopy(inputs)) if spec.unseen_answers else {}
    return {"inputs": inputs, "answers": answers}


def request(stem: str, secret: bytes) -> str:
    """The draw of the lab whose notebook is `stem` ("03-parallel-tcp"), as the checker's request
    carries it ({lab id: draw}, pickled, base64), or "" when the lab declares no held_out."""
    import base64
    import pickle

    from ..run.lab import all_labs

    lab = next((l.id for l in all_labs().values() if l.slug == stem), None)
    drawn = draw(lab, secret) if lab else {}
    return base64.b64encode(pickle.dumps({lab: drawn}, protocol=4)).decode() if drawn else ""


_DRAWN: dict[str, dict] = {}  # lab -> draw(); set by the checker only (provide)


def provide(drawn: dict[str, dict]) -> None:
    """The checker, after its oracle is running: the grader's draws for the tests to read."""
    _DRAWN.clear()
    _DRAWN.update(drawn)


def _drawn(lab: str, what: str) -> dict:
    if lab not in _DRAWN:
        raise LookupError(f"{what}({lab!r}): unseen inputs exist only inside `mptcplab grade`'s checker"
                          + ("" if not _DRAWN else f" (drawn for {sorted(_DRAWN)})"))
    return _DRAWN[lab]


def unseen(lab: str) -> dict:
    """The lab's held-out inputs (`Lab.grading.held_out`), a fresh copy per call (a test may change it)."""
    return copy.deepcopy(_drawn(lab, "unseen")["inputs"])


def expected(lab: str, key: str):
    """The kit's answer `key` (`Lab.grading.unseen_answers(inputs)[key]`, e.g. "q4") on unseen(lab), a copy."""
    return copy.deepcopy(_drawn(lab, "expected")["answers"][key])
