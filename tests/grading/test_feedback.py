"""Checks that teach (issue 35 item 4): a failing public check, written as Otter's exception-based
test calling a check built on `feedback.expect`, shows the call and the check's message only, in
the student's Jupyter and in the grader's report."""

from __future__ import annotations

import pytest

from mptcplab.grading import checker, feedback

CHECKS = '''
from mptcplab.grading.feedback import expect

def q4(my_rates):
    secret_reference = 0.123456  # a check's own numbers and code must never show
    expect(len(my_rates) == 3, f"my_rates should have one row per run (3 runs); it has {len(my_rates)}.\\n"
                               "Hint: did you drop the runs without losses?")
'''

TEST = '''from otter.test_files import test_case

OK_FORMAT = False

name = "q4"
points = 2

@test_case(points=0, hidden=False)
def test_q4_public(my_rates):
    checks = __import__("mlab_demo_checks")
    checks.q4(my_rates)

@test_case(points=2, hidden=True)
def test_q4_hidden(my_rates):
    assert sum(my_rates) == 6, f"expected {6.0}"
'''


@pytest.fixture
def demo_checks(tmp_path, monkeypatch):
    (tmp_path / "mlab_demo_checks.py").write_text(CHECKS)
    monkeypatch.syspath_prepend(str(tmp_path))


def test_expect_raises_check_failed_an_assertion():
    feedback.expect(True, "unused")
    with pytest.raises(feedback.CheckFailed, match="^what was wrong$"):
        feedback.expect(False, "what was wrong")
    with pytest.raises(feedback.CheckFailed, match=r"^On 4 waits: which column\?$"):  # not "?." (Lab 1 walkthrough 4)
        feedback.expect(False, "On 4 waits: which column?.")
    assert issubclass(feedback.CheckFailed, AssertionError)


def test_jupyter_shows_the_call_and_the_message_only(demo_checks):
    tf = checker.test_file(TEST, "q4")
    tf.run({"my_rates": [1, 2]})
    shown = tf.summary(public_only=True)  # what grader.check("q4") prints
    assert "checks.q4(my_rates)" in shown and "Hint: did you drop the runs without losses?" in shown
    assert "secret_reference" not in shown and "expect(" not in shown and "Traceback" not in shown
    assert len(shown.strip().splitlines()) <= 2 + 3 + feedback.MAX_LINES, shown


def test_the_report_shows_the_message_alone(demo_checks):
    (q,) = checker.check({"q4": TEST}, {"my_rates": [1, 2]})
    public, hidden = q["cases"]
    assert public["message"] == ("my_rates should have one row per run (3 runs); it has 2.\n"
                                 "Hint: did you drop the runs without losses?")
    assert not hidden["passed"] and q["score"] == 0
    (q,) = checker.check({"q4": TEST}, {"my_rates": [1, 2, 3]})
    assert q["score"] == 2


def test_a_missing_name_reads_as_python_would_say_it(demo_checks):
    (q,) = checker.check({"q4": TEST}, {})
    assert q["cases"][0]["message"] == "NameError: name 'my_rates' is not defined"


def test_other_exceptions_show_their_type_only():
    otter = "❌ Test case failed\nError at line 3 in test q4:\n      checks.q4(x)\nKeyError: 'run 17: 961.2431'"
    assert feedback.summary(otter) == "KeyError (the check could not use this answer)"
    doctest = ("Failed example:\n    assert x > 2, 'x must exceed 2'\nException raised:\n    Traceback (most recent call last):\n"
               "      File \"<doctest q1 0[0]>\", line 1, in <module>\n    AssertionError: x must exceed 2\n"
               "**********************************************************************\nTrying:\n    y\n")
    assert feedback.summary(doctest) == "AssertionError: x must exceed 2"
