"""Issue 26, on Lab 3 (the lab the attacks were found on): crafted submissions graded sandboxed.

- Neighbours: a fork bomb, a thread hoarder and a memory hog graded at the same time as three
  correct notebooks (all six at once); each correct one keeps 20/20, each attack scores 0.
- Checks own their names and data: builtins redefined by the notebook, emptied reference tables
  answered by empty frames, zero frames of the right shape, the shipped table as Q4's answer, and
  functions that raise whatever a check hands them: an unfilled notebook scores 0 under each, a
  solution that does the same after its answers keeps 20/20.
- A wrong answer that once scored: the solution with Q5's losses matched to flows by port alone
  (ports repeat across runs) keeps 18/20, Q5 0, and its report names the cause.
- No hidden reference value (Q1/Q2 reference grid values, Q4's held-out answers, the kit's Q5
  predictions and errors) appears in any student report, as a number in any rounding.
- Reports a student can act on: a correct notebook's report lists no problem and its gradebook
  row says ok; an oversized notebook is told its size and the cap; values computed before the
  notebook filled its /tmp or its kernel was killed for memory are kept.
"""

from __future__ import annotations

import csv
import math
import re
import sys
from pathlib import Path

import nbformat
import pytest

from mptcplab.grading import autograder, batch, reference, sandbox

sys.path.insert(0, str(Path(__file__).parent))
import lab3_attacks  # noqa: E402  (helpers beside this test, not a package)
import leakscan  # noqa: E402

pytestmark = [pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
              pytest.mark.slow, pytest.mark.timeout(2400)]

NEIGHBOURS = {"solution_a": 20, "solution_b": 20, "solution_c": 20, "fork_bomb": 0, "thread_hoarder": 0, "memory_hog": 0}
OTHERS = {
    "unfilled": 0,
    "shadow_unfilled": 0, "shadow_solution": 20,  # builtins redefined: nothing gained, nothing lost
    "poison_unfilled": 0, "poison_solution": 20,  # reference tables emptied: checks use the kit's own
    "shape_only": 0, "shipped_data": 0,  # no points without the work
    "port_only": 18,  # the solution with Q5's losses matched by port alone: Q5's 2 points lost, the rest kept
    "exfiltrate": 0,
    "fill_tmp": 20, "kernel_oom": 20,  # values computed before are kept
    "oversized": 0,
}
SECRET = b"the instructor's secret for this test"  # fixed: the scan below knows the answers on the draw
UNFILLED_ATTACKS = [k for k, v in {**NEIGHBOURS, **OTHERS}.items() if v == 0]


def _grade(tmp: Path, names: dict, workers: int, ag, notebooks) -> dict:
    subs = []
    for name in names:
        path = tmp / "subs" / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(notebooks[name], path)
        subs.append(path)
    opt = batch.Options(cell_timeout=120, workers=workers, notebook_mb=8, secret=SECRET,
                        limits=sandbox.Limits(wall_s=400, cpu_s=400, memory_mb=4096, tree_memory_mb=2048, disk_mb=256))
    return {r["student"]: r for r in batch.grade_batch(subs, ag, tmp / "out", opt)}


@pytest.fixture(scope="module")
def lab3(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lab3-attacks")
    ag = autograder.autograder_for(autograder.find_master("3"), build=tmp / "assign")
    solution = autograder.filled_student_notebook(ag.student_notebook, ag.zip_path.parent / ag.master.name)
    notebooks = lab3_attacks.build(nbformat.read(ag.student_notebook, 4), solution)
    assert set(notebooks) == set(NEIGHBOURS) | set(OTHERS)
    # All six at once: the attacks hold what they took while the correct ones run.
    neighbours = _grade(tmp / "neighbours", NEIGHBOURS, len(NEIGHBOURS), ag, notebooks)
    others = _grade(tmp / "others", OTHERS, 3, ag, notebooks)
    return {"results": {**neighbours, **others}, "outs": [tmp / "neighbours" / "out", tmp / "others" / "out"]}


def _report(lab3, sid: str) -> str:
    for out in lab3["outs"]:
        if (out / sid / "report.md").exists():
            return (out / sid / "report.md").read_text()
    raise FileNotFoundError(sid)


def test_neighbour_attacks_leave_each_correct_notebook_its_own_score(lab3):
    res = lab3["results"]
    for sid, want in NEIGHBOURS.items():
        assert res[sid]["score"] == want and res[sid]["status"] != "grader-error", (sid, res[sid]["problems"], res[sid]["internal"])
    # The attacks really ran while the correct notebooks did (their sandboxes overlapped in time).
    threads = res["thread_hoarder"]
    assert threads["seconds"] >= lab3_attacks.HOLD_S and res["fork_bomb"]["seconds"] >= lab3_attacks.HOLD_S
    assert res["memory_hog"]["execution"]["oom_killed"], res["memory_hog"]["execution"]
    # Each ran under a UID of its own.
    uids = [r["execution"]["uid"] for sid, r in res.items() if sid in NEIGHBOURS]
    assert len(set(uids)) == len(uids), uids


def test_crafted_answers_score_what_the_work_earns(lab3):
    res = lab3["results"]
    for sid, want in OTHERS.items():
        assert res[sid]["score"] == pytest.approx(want), (sid, {q["question"]: q["score"] for q in res[sid]["questions"]},
                                                         res[sid]["problems"])
        assert res[sid]["status"] != "grader-error", (sid, res[sid]["internal"])


def test_losses_matched_by_port_alone_score_0_on_q5(lab3):
    """Walkthrough 2: a port is unique only within a run; the draws reuse ports across runs."""
    q5 = next(q for q in lab3["results"]["port_only"]["questions"] if q["question"] == "q5")
    assert q5["score"] == 0 and q5["possible"] == 2, q5
    assert "a port is unique only within a run" in " ".join(_report(lab3, "port_only").split())


def test_an_unfilled_notebook_scores_0_under_every_attack(lab3):
    for sid in UNFILLED_ATTACKS:
        assert lab3["results"][sid]["score"] == 0, sid
    assert len(UNFILLED_ATTACKS) >= 10


def _hidden_values() -> list[float]:
    from mptcplab.labs.lab3 import analysis as la
    from mptcplab.labs.lab3 import notebook as nb3

    values = list(nb3.model1_reference()) + list(nb3.model2_reference())
    t = reference.tables("lab3", la.load)
    ref = la.predict(t["runs"])
    for col in ("model1", "model2", "err_model1", "err_model2"):
        values += list(ref[col].dropna())
    values += leakscan.flat(reference.draw("lab3", SECRET)["answers"])  # what the hidden checks compare with
    return [v for v in values if v and math.isfinite(v)]


def test_no_hidden_reference_value_in_any_report(lab3):
    hidden = _hidden_values()
    assert len(hidden) > 100
    # The scan finds a planted value in any common rounding (it can fail).
    for fmt in ("{:.4g}", "{:.6f}", "{!r}", "{:.3e}"):
        assert leakscan.leaks("model 1 gives " + fmt.format(hidden[3]) + " here", hidden), fmt
    for sid in {**NEIGHBOURS, **OTHERS}:
        text = _report(lab3, sid)
        assert "STOLEN" not in text and "Traceback" not in text, (sid, text)
        assert not leakscan.leaks(text, hidden), (sid, leakscan.leaks(text, hidden)[:3], text)


def test_reports_a_student_can_act_on(lab3):
    res = lab3["results"]
    for sid in ("solution_a", "shadow_solution", "poison_solution", "fill_tmp"):
        assert res[sid]["status"] == "ok" and not res[sid]["problems"], (sid, res[sid]["problems"])
        assert "nothing to fix" in _report(lab3, sid)  # the kit's hidden figures: a note, not a problem
    rows = {row["student"]: row for out in lab3["outs"] for row in csv.DictReader(open(out / "gradebook.csv"))}
    assert rows["solution_a"]["status"] == "ok" and rows["solution_a"]["problems"] == "0"
    big = _report(lab3, "oversized")
    assert re.search(r"your notebook file is 1\d\.\d MiB; the grader takes notebooks up to 8 MiB", big), big
    assert "not answered yet" not in big
    oom = res["kernel_oom"]
    assert oom["execution"]["oom_killed"] and "kernel died" in _report(lab3, "kernel_oom"), oom["problems"]
