"""Every lab's notebooks run headless (nbclient, in the grading sandbox) on the shipped reference
results: the master's solution passes every check, public and hidden; the unfilled student
notebook fails every question, each with a message that says what to do.

This is exactly what `mptcplab grade` does with a submission, so a master that passes here grades
correctly in a course. The sandbox shows no results/, so the notebooks fall back on
solutions/results/labN/ (the reference results) whatever is on this machine.
"""

import nbformat
import pytest

from mptcplab.grading import autograder, batch, sandbox

MASTERS = autograder.masters()

pytestmark = [pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
              pytest.mark.slow]  # every lab's notebooks executed in the sandbox


@pytest.fixture(scope="module")
def assign_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("assign")


def test_student_notebooks_are_current(tmp_path):
    """notebooks/NN.ipynb is what `otter assign` makes of the master today (else run `mptcplab notebooks assign`)."""
    for master in MASTERS:
        student = autograder.otter_assign(master, tmp_path / master.stem, run_tests=False)
        shipped = autograder.NOTEBOOKS / master.name
        assert shipped.exists(), f"{shipped} missing: run `mptcplab notebooks assign`"
        assert autograder.normalized(shipped) == autograder.normalized(student), \
            f"{shipped} is stale: run `mptcplab notebooks assign --lab {master.stem[:2]}` and commit"


@pytest.mark.parametrize("master", MASTERS, ids=[m.stem for m in MASTERS])
def test_solution_passes_and_unfilled_fails_with_messages(master, assign_dir, tmp_path):
    ag = autograder.autograder_for(master, build=assign_dir)
    base = assign_dir / master.stem
    subs = tmp_path / "subs"
    subs.mkdir()
    solution, unfilled = subs / "solution.ipynb", subs / "unfilled.ipynb"
    nbformat.write(autograder.filled_student_notebook(base / "student" / master.name,
                                                      base / "autograder" / master.name), solution)
    unfilled.write_bytes((base / "student" / master.name).read_bytes())
    opt = batch.Options(cell_timeout=300,
                        limits=sandbox.Limits(wall_s=1200, cpu_s=1200))
    res = {r["student"]: r for r in batch.grade_batch([solution, unfilled], ag, tmp_path / "out", opt)}

    sol = res["solution"]
    failed = [(q["question"], c["message"]) for q in sol["questions"] for c in q["cases"] if not c["passed"]]
    assert not failed and sol["score"] == sol["possible"] > 0, (failed, sol["problems"])
    # Nothing to act on for a correct student (issue 40: every correct Lab 1 row said `problems`).
    assert sol["status"] == "ok" and not sol["problems"] and not sol.get("skipped_values"), \
        (sol["problems"], sol.get("skipped_values"))

    empty = res["unfilled"]
    assert empty["status"] != "grader-error", empty["problems"]
    for q in empty["questions"]:
        # a feedback-only question (0 points, e.g. Lab 2's q2) earns nothing either way: its checks must still fail
        assert q["score"] < q["possible"] or q["possible"] == 0, f"{master.stem} {q['question']}: the unfilled notebook passes"
        messages = [c["message"] for c in q["cases"] if not c["passed"] and not c["hidden"]]
        assert messages, f"{master.stem} {q['question']}: only hidden checks fail; students get no hint"
        assert any(len(m) > 20 and not m.startswith(("NameError", "TypeError", "AttributeError")) for m in messages), \
            f"{master.stem} {q['question']}: the first failure is not an explained assertion: {messages[:2]}"
