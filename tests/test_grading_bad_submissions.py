"""Sandboxed grading of the crafted bad submissions (tests/bad_submissions/) plus a perfect one.

Each gets the score its values earn and a report that says what happened; the batch finishes in
bounded time; no submission file changes; the hidden tests never reach a student-facing file.
"""

import hashlib
import os
import time
from pathlib import Path

import nbformat
import pytest

from mptcplab.grading import autograder, batch, sandbox

HERE = Path(__file__).parent
BAD = HERE / "bad_submissions"
MASTER = HERE / "fixtures" / "grading" / "99-fixture.ipynb"
SECRET = "HIDDEN-FIXTURE-SECRET"  # text found only in the fixture's hidden tests

# Otter spreads a question's points over its test cases: q1 has 3 cases for 2 points.
EXPECTED = {
    "solution": (3, None),
    "deleted_checks": (3, None),
    "edited_checks": (2 / 3, None),  # only "peak is a number" holds for the mean
    "enormous_output": (3, "output beyond"),
    "infinite_loop": (1, "was interrupted"),
    "memory_hog": (3, "MemoryError"),
    "network_access": (3, None),
    "not_a_notebook": (0, "not a readable notebook"),
    "read_hidden_tests": (1 + 2 / 3, None),
    "syntax_error": (1, "SyntaxError"),
}

pytestmark = pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available()))


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grading")
    ag = autograder.autograder_for(MASTER, build=tmp / "assign")
    solution = tmp / "subs" / "solution.ipynb"
    solution.parent.mkdir()
    nbformat.write(autograder.filled_student_notebook(tmp / "assign" / MASTER.stem / "student" / MASTER.name,
                                                      tmp / "assign" / MASTER.stem / "autograder" / MASTER.name), solution)
    subs = sorted(BAD.glob("*.ipynb")) + [solution]
    before = {p: _sha(p) for p in subs}
    mtimes = {p: os.stat(p).st_mtime_ns for p in subs}
    opt = batch.Options(user=sandbox.grader_user(), cell_timeout=20, limits=sandbox.Limits(wall_s=120, cpu_s=120))
    start = time.monotonic()
    results = batch.grade_batch(subs, ag, tmp / "out", opt)
    return {"results": {r["student"]: r for r in results}, "out": tmp / "out", "seconds": time.monotonic() - start,
            "before": before, "mtimes": mtimes}


def test_every_submission_gets_its_score(graded):
    res = graded["results"]
    assert set(res) == set(EXPECTED)
    for sid, (score, _) in EXPECTED.items():
        assert res[sid]["score"] == pytest.approx(score, abs=1e-3), (sid, res[sid]["questions"], res[sid]["problems"])
        assert res[sid]["status"] != "grader-error", res[sid]["problems"]


def test_reports_say_what_happened(graded):
    for sid, (score, phrase) in EXPECTED.items():
        report = (graded["out"] / sid / "report.md").read_text()
        assert f"Score: {round(score, 2):g} / 3" in report, report
        if phrase:
            assert phrase in report, (sid, report)
    assert "File too large" in (graded["out"] / "enormous_output" / "report.md").read_text()
    assert "peak should be a number" not in (graded["out"] / "edited_checks" / "report.md").read_text()
    assert "take the largest value of the mbps column" in (graded["out"] / "edited_checks" / "report.md").read_text()


def test_gradebook_lists_everyone(graded):
    rows = (graded["out"] / "gradebook.csv").read_text().splitlines()
    assert rows[0].startswith("student,lab,q1,q2,total,possible")
    assert len(rows) == 1 + len(EXPECTED)


def _outputs(path: Path) -> str:
    nb = nbformat.read(path, 4)
    return "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_no_network_and_no_hidden_tests_inside(graded):
    out = graded["out"]
    net = _outputs(out / "network_access" / "executed.ipynb")
    assert "NETWORK REACHED" not in net and net.count("blocked") >= 4, net
    hunt = _outputs(out / "read_hidden_tests" / "executed.ipynb")
    assert "holding hidden tests: none" in hunt, hunt
    found = int(hunt.split("files found:")[1].split()[0])
    assert found > 100, hunt  # the walk really ran over the kit's code and guides
    # Writable: only the submission's own copy and the sandbox's private /tmp.
    wrote = [line.removeprefix("wrote to ") for line in hunt.splitlines() if line.startswith("wrote to ")]
    assert all(w.startswith((f"{sandbox.REPO_ROOT}/notebooks/", "/tmp/")) for w in wrote), wrote
    for sid in EXPECTED:  # student-facing files never carry a hidden test
        for name in ("report.md", "executed.ipynb"):
            f = out / sid / name
            assert not f.exists() or SECRET not in f.read_text(), f


def test_batch_is_bounded_and_submissions_untouched(graded):
    assert graded["seconds"] < 15 * 60
    for p, digest in graded["before"].items():
        assert _sha(p) == digest and os.stat(p).st_mtime_ns == graded["mtimes"][p], p
    assert _sha(MASTER) and SECRET in MASTER.read_text()  # the master still holds what we scan for
