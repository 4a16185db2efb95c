"""Issue 40, classes 1 and 2, per lab, graded sandboxed with an instructor's secret:

- answers memorised at home with the open kit (every function a check calls replays what the
  master's solution returned on a draw from the student's own secret) score 0;
- a notebook whose graded functions only call the kit's analysis scores 0, although the same
  functions earn every point where the kit is real (shown first, in this process);
- beside them the master's solution keeps full marks, and no report quotes any answer the hidden
  checks compared with (the leak scan over every report of the batch).

The crafted notebooks come from unseen_submissions/make_unseen_submissions.py, built afresh from
the current masters.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

from mptcplab.grading import autograder, batch, reference, sandbox
from mptcplab.run.lab import all_labs

HERE = Path(__file__).parent
sys.path[:0] = [str(HERE), str(HERE / "unseen_submissions")]
import leakscan  # noqa: E402
import make_unseen_submissions as crafted  # noqa: E402

pytestmark = [pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
              pytest.mark.slow, pytest.mark.timeout(3600)]

SECRET = b"the instructor's own secret, never in a notebook"
LABS = sorted(all_labs())


@pytest.mark.parametrize("lab", LABS)
def test_memorised_and_kit_calling_notebooks_score_0(lab, tmp_path):
    assert lab in crafted.KIT_CALLS, f"{lab}: no kit-calling notebook yet (make_unseen_submissions.KIT_CALLS)"
    ag = autograder.autograder_for(autograder.find_master(lab), build=tmp_path / "assign")
    possible = sum(ag.points().values())

    memo_cell, recorded = crafted.memorised_cell(ag, lab)
    assert sum(q["score"] for q in recorded) == possible, "the recording is not the solution's own run"
    proof = crafted.kit_calls_proof(ag, lab, SECRET)
    assert sum(q["score"] for q in proof) == possible, \
        [(q["question"], q["score"], q["possible"]) for q in proof]  # a real attack where the kit is real

    subs = tmp_path / "subs"
    subs.mkdir()
    base = tmp_path / "assign" / ag.stem
    nbformat.write(autograder.filled_student_notebook(ag.student_notebook, base / "autograder" / ag.master.name),
                   subs / "solution.ipynb")
    nbformat.write(crafted.appended(ag, memo_cell), subs / "memorised.ipynb")
    nbformat.write(crafted.appended(ag, crafted.KIT_CALLS[lab]), subs / "kit_calls.ipynb")
    opt = batch.Options(cell_timeout=300, workers=2, secret=SECRET, limits=sandbox.Limits(wall_s=1200, cpu_s=1200))
    res = {r["student"]: r for r in batch.grade_batch(sorted(subs.iterdir()), ag, tmp_path / "out", opt)}

    assert res["solution"]["score"] == res["solution"]["possible"] == possible, res["solution"]["problems"]
    for sid in ("memorised", "kit_calls"):
        assert res[sid]["status"] != "grader-error", res[sid]["internal"]
        assert res[sid]["score"] == 0, [(q["question"], q["score"]) for q in res[sid]["questions"] if q["score"]]

    hidden = leakscan.flat(reference.draw(lab, SECRET)["answers"])
    assert len(hidden) > 20
    for sid in res:
        text = (tmp_path / "out" / sid / "report.md").read_text()
        assert not leakscan.leaks(text, hidden), (sid, leakscan.leaks(text, hidden)[:3])
