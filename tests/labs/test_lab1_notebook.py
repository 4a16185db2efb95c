"""Lab 1's notebook as the student's path: the stated time adds up and names exactly the questions that
earn points (the master's own Otter configuration), the guide states the same time and required
questions, and Part D analyses the student's own paper's point when the run has one (a quick run does),
falling back to the reference, loudly, only for what the run lacks."""

import json
import re

import pandas as pd
import pytest

from mptcplab.labs.lab1 import analysis as la
from mptcplab.run.lab import REPO_ROOT

MASTER = REPO_ROOT / "solutions" / "01-send-buffer.ipynb"
GUIDE = REPO_ROOT / "labs" / "01-send-buffer" / "README.md"
REF = REPO_ROOT / "solutions" / "results" / "lab1"


def _cells():
    return ["".join(c["source"]) for c in json.loads(MASTER.read_text())["cells"]]


def _points():
    """{question: (points, manual)} from the master's BEGIN QUESTION cells."""
    out = {}
    for src in _cells():
        if src.startswith("# BEGIN QUESTION"):
            conf = dict(ln.split(":", 1) for ln in src.splitlines()[1:] if ":" in ln)
            out[conf["name"].strip()] = (float(conf["points"]), conf.get("manual", "").strip() == "true")
    return out


def _minutes(hours_and_minutes: str) -> int:
    h, m = re.fullmatch(r"(\d+) h (\d+) min", hours_and_minutes).groups()
    return 60 * int(h) + int(m)


def test_the_stated_time_adds_up_and_names_the_questions_that_earn_points():
    intro = " ".join(next(s for s in _cells() if s.startswith("# Lab 1")).split())
    stated = _minutes(re.search(r"\*\*Time: about (\d+ h \d+ min)\*\*", intro)[1])
    steps = re.search(r"Minutes per step: (.*?): (\d+) minutes\.", intro)
    minutes = {name: int(m) for name, m in re.findall(r"([\w +,]+?) (\d+)(?:, |$)", steps[1])}
    assert sum(minutes.values()) == int(steps[2]) and abs(stated - int(steps[2])) <= 5, (minutes, stated)
    points = _points()
    required = {q for q, (p, _) in points.items() if p > 0}
    assert {q.lower() for step in minutes for q in re.findall(r"Q\d+", step)} == required
    functions = re.search(r"functions \(([Q\d, ]+): (\d+) points", intro)
    written = re.search(r"written answers of [\d-]+ sentences \(([Q\d, ]+): (\d+) points\)", intro)
    for found, manual in ((functions, False), (written, True)):
        named = {q.lower() for q in found[1].split(", ")}
        assert named == {q for q in required if points[q][1] == manual}
        assert int(found[2]) == sum(points[q][0] for q in named)


def test_the_guide_states_the_notebooks_time_and_required_questions():
    intro = next(s for s in _cells() if s.startswith("# Lab 1"))
    guide = " ".join(GUIDE.read_text().split())
    stated = re.search(r"\*\*Time: about (\d+ h \d+ min)\*\*", intro)[1]
    assert f"about {stated} for the notebook's required questions" in guide
    listed = re.search(r"The required ones are ([Q\d, and]+);", guide)[1]
    assert set(re.findall(r"q\d+", listed.lower())) == {q for q, (p, _) in _points().items() if p > 0}


def _paper_point_source():
    """The notebook's `paper_point_source` (Part D's cell, up to the code that uses it)."""
    cell = next(s for s in _cells() if s.startswith("def paper_point_source("))
    env = {"la": la, "REFERENCE": REF}
    exec(cell.split("\n\nPAPER_RESULTS")[0], env)
    return env["paper_point_source"]


PART_D = [("schedulers", "default"), ("schedulers", "tcp-fast")]
GOING_FURTHER = [("schedulers", "minrtt"), ("held", "minrtt"), ("held", "minrtt+rp"), ("held", "tcp-fast"),
                 ("tso", "mptcp")]


def test_part_d_reads_the_students_quick_run_and_going_further_the_reference_loudly(tmp_path, capsys):
    """A quick run's paper's point (default and minrtt+rp at tcp_wmem 1 MiB, once each; minrtt+rp NaN
    where the kernel lacks it) is Part D's; the held and tso runs it lacks come from the reference."""
    runs = pd.DataFrame({"group": ["schedulers"] * 3, "run": ["a", "b", "c"],
                         "config": ["mptcp", "mptcp", "tcp-fast"], "scheduler": ["default", "minrtt+rp", None],
                         "goodput_transfer_mbps": [167.0, float("nan"), 95.0]})
    runs.to_csv(tmp_path / "paper-point.csv", index=False)
    source = _paper_point_source()
    assert source(tmp_path, PART_D) == tmp_path and capsys.readouterr().out == ""
    assert source(tmp_path, GOING_FURTHER) == REF
    said = capsys.readouterr().out
    assert "lacks the paper's point's runs schedulers minrtt, held minrtt" in said and "REFERENCE" in said
    assert source(REF, GOING_FURTHER) == REF and capsys.readouterr().out == ""


@pytest.mark.parametrize("rows", [[], [("schedulers", "mptcp", "default", float("nan"))]])
def test_part_d_falls_back_to_the_reference_when_the_run_has_no_paper_point_that_ran(tmp_path, capsys, rows):
    pd.DataFrame(rows, columns=["group", "config", "scheduler", "goodput_transfer_mbps"]).to_csv(
        tmp_path / "paper-point.csv", index=False)
    assert _paper_point_source()(tmp_path, PART_D) == REF
    assert "the tables below use the REFERENCE's" in capsys.readouterr().out
