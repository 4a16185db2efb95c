"""What a student reads in report.md, and where a renamed copy goes, without a sandbox (fast):
the 2026-11-28 walkthroughs' findings (questions in the notebook's order, the written answers the
instructor still grades, cells named as JupyterLab shows them, a renamed copy whose first cell was edited)."""

import json
from pathlib import Path
from types import SimpleNamespace

import nbformat

from mptcplab.grading import autograder, intake, report

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def _result(**extra) -> dict:
    qs = [{"question": q, "score": 1.0, "possible": 1.0, "cases": []} for q in ("q1", "q16", "q2", "q10", "q3")]
    return {"lab": "01-x", "student": "ann", "questions": qs, "score": 5.0, "possible": 5.0, "problems": [],
            "status": "ok", **extra}


def _report(tmp_path, r: dict) -> str:
    report.write(r, tmp_path, {})
    return (tmp_path / "report.md").read_text()


def test_questions_are_listed_in_the_notebooks_order(tmp_path):
    rows = [ln.split("|")[1].strip() for ln in _report(tmp_path, _result()).splitlines() if ln.startswith("| q") and "question" not in ln]
    assert rows == ["q1", "q2", "q3", "q10", "q16"]


def test_the_score_says_which_written_answers_the_instructor_grades(tmp_path):
    master = tmp_path / "01-x.ipynb"
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_raw_cell(f"# BEGIN QUESTION\nname: {q}\npoints: {p}{m}")
                                         for q, p, m in [("q1", 2, ""), ("q12", 2, "\nmanual: true"),
                                                         ("q5", 1, "\nmanual: true")]])
    nbformat.write(nb, master)
    written = autograder.Autograder(master, tmp_path / "x.zip").written()
    assert written == {"q12": 2.0, "q5": 1.0}
    text = _report(tmp_path, _result(written=written))
    assert "Your 2 written answers (q5, q12: 3 points) are graded by your instructor, not here." in text
    assert "written answers" not in _report(tmp_path, _result(written={}))


def test_cells_are_named_as_jupyterlab_shows_them():
    sources = ["import otter", 'Run `grader.check("qN")` after each answer.', "x = 1\ny = 2", 'grader.check("q3")', "print(x)"]
    assert report.cell_name(3, sources) == "the 3rd cell (starting `x = 1`, above q3's check)"
    assert report.cell_name(5, sources) == "the 5th cell (starting `print(x)`)"
    assert report.cell_name(1, sources) == "the 1st cell (starting `import otter`, above q3's check)"
    assert report.cell_name(11, ["a"] * 12) == "the 11th cell (starting `a`)"
    assert report.cell_name(22, []) == "the 22nd cell"


def test_hidden_answer_keys_are_a_note_and_no_cell_is_a_bare_number(tmp_path):
    nb = {"cells": [{"cell_type": "code", "source": 'import otter\ngrader = otter.Notebook("lab2.ipynb")'},
                    {"cell_type": "code", "source": "answer = key()"},
                    {"cell_type": "code", "source": 'grader.check("q1")'},
                    {"cell_type": "code", "source": "1 / 0"}]}
    status = {"executed": True, "env_saved": True, "cell_errors": [
        {"cell": 2, "ename": "AnswerKeyHidden", "evalue": "hidden while grading"},
        {"cell": 4, "ename": "ZeroDivisionError", "evalue": "division by zero"}]}
    ag = SimpleNamespace(stem="02-x", student_notebook=tmp_path / "none.ipynb")
    result = {"questions": [], "problems": [], "internal": []}
    report.apply_template(result, ag, json.dumps(nb).encode(), status, SimpleNamespace())
    assert result["problems"] == ["the 4th cell (starting `1 / 0`) raised ZeroDivisionError: division by zero"]
    (keys,) = result["notes"]
    assert keys.endswith("(expected; nothing to fix): the 2nd cell (starting `answer = key()`, above q1's check)")


def test_a_renamed_copy_is_placed_by_the_kits_metadata_else_by_its_text(tmp_path):
    """Issue 40: a copy renamed, its first cell edited to the new name (as Otter needs in the
    student's Jupyter), is placed by the notebook metadata the kit writes; without that metadata
    (a notebook handed out before it), by its markdown."""
    copy = tmp_path / "lab.ipynb"
    for shipped in sorted(NOTEBOOKS.glob("[0-9][0-9]-*.ipynb")):
        nb = json.loads(shipped.read_text())
        assert nb["metadata"][autograder.KIT_METADATA] == {"notebook": shipped.stem}
        nb["cells"][0]["source"] = 'import otter\ngrader = otter.Notebook("lab.ipynb")'
        copy.write_text(json.dumps(nb))
        assert intake.lab_of(copy, 1 << 26) == (shipped.stem, None)
        nb["cells"] = [c for c in nb["cells"] if c["cell_type"] != "markdown"]  # the metadata alone
        copy.write_text(json.dumps(nb))
        assert intake.lab_of(copy, 1 << 26) == (shipped.stem, None)
        nb = json.loads(shipped.read_text())
        del nb["metadata"][autograder.KIT_METADATA]
        nb["cells"][0]["source"] = 'import otter\ngrader = otter.Notebook("lab.ipynb")'
        copy.write_text(json.dumps(nb))
        assert intake.lab_of(copy, 1 << 26) == (shipped.stem, None)  # the text alone
    stranger = tmp_path / "mine.ipynb"
    stranger.write_text(json.dumps({"cells": [{"cell_type": "markdown", "source": "# my own notes"}]}))
    groups, unknown = intake.sort_by_lab([stranger, copy], None, 1 << 26)
    assert {m.stem for m in groups} == {"03-parallel-tcp"} and list(groups.values()) == [[copy, stranger]]
    groups, unknown = intake.sort_by_lab([stranger], None, 1 << 26)
    assert not groups and unknown[stranger].startswith("its lab cannot be told")
    assert "grade it with --lab" in unknown[stranger]
