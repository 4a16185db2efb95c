"""What a student reads in report.md, what the gradebook holds, and where a renamed copy goes, without
a sandbox (fast): the 2026-11-28 walkthroughs' findings (questions in the notebook's order, the written
answers the instructor still grades, quoted with their points, optional questions left unanswered as a
note, cells named as JupyterLab shows them, a renamed copy whose first cell was edited)."""

import csv
import json
from pathlib import Path
from types import SimpleNamespace

import nbformat

from mptcplab.grading import autograder, batch, intake, report

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
GRADING_MD = Path(__file__).resolve().parents[2] / "site" / "instructors" / "grading.md"


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
    assert "**Score: 5 / 5 automatic points (100%)**" in text
    assert ("The score and its percentage are of the automatically checked questions only. Your 2 written answers "
            "(q5, q12: 3 points, quoted below) are graded by your instructor, not here.") in text
    assert "Not quoted: your notebook could not be read here" in text  # no text was read (e.g. it did not run)
    assert "Not quoted" not in _report(tmp_path, _result(written=written, status="not graded"))  # its reason says it
    assert "written answers" not in _report(tmp_path, _result(written={}))
    assert "Your 1 written answer (q5: 1 point, quoted below) is graded" in _report(tmp_path, _result(written={"q5": 1.0}))


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


def test_a_column_the_graded_tables_do_not_hold_is_a_note_naming_it(tmp_path):
    """Lab 3 walkthrough 3: a student's cell joining `runs`' model1 (the kit's answer, removed while
    grading) raised KeyError and the report read `problems`; a goodput read by its previous name is
    named by its current one (Lab 3's `mbps` was its window's goodput)."""
    nb = {"cells": [{"cell_type": "code", "source": src} for src in (
        'runs.merge(comparison, on="model1")', "cmp = runs[['n', 'err_model2']]", "print(cmp)",
        "runs.mbps.mean()", "runs['mbps_transfer']", "runs['nothing']")]}
    status = {"executed": True, "env_saved": True, "cell_errors": [
        {"cell": 1, "ename": "KeyError", "evalue": "'model1'"},
        {"cell": 2, "ename": "KeyError", "evalue": "\"['err_model2'] not in index\""},
        {"cell": 3, "ename": "NameError", "evalue": "name 'cmp' is not defined"},
        {"cell": 4, "ename": "AttributeError", "evalue": "'DataFrame' object has no attribute 'mbps'"},
        {"cell": 5, "ename": "KeyError", "evalue": "'mbps_transfer'"},
        {"cell": 6, "ename": "KeyError", "evalue": "'nothing'"}]}
    ag = SimpleNamespace(stem="03-parallel-tcp", student_notebook=tmp_path / "none.ipynb")
    result = {"questions": [], "problems": [], "internal": []}
    report.apply_template(result, ag, json.dumps(nb).encode(), status, SimpleNamespace())
    assert result["problems"] == ["the 6th cell (starting `runs['nothing']`) raised KeyError: 'nothing'"]
    assert result["notes"] == [
        "the 1st cell (starting `runs.merge(comparison, on=\"model1\")`): stopped here because it read `model1`, "
        "one of the kit's own answers, which grading removes from its tables (expected; nothing to fix)",
        "the 2nd cell (starting `cmp = runs[['n', 'err_model2']]`); the 3rd cell (starting `print(cmp)`): stopped "
        "here because the first read `err_model2`, one of the kit's own answers, which grading removes from its "
        "tables (expected; nothing to fix)",
        "the 4th cell (starting `runs.mbps.mean()`): stopped here because it read the column `mbps`, which the "
        "kit now names `goodput_window_mbps`: use that name",
        "the 5th cell (starting `runs['mbps_transfer']`): stopped here because it read the column "
        "`mbps_transfer`, which the kit now names `goodput_transfer_mbps`: use that name"]
    lab1 = SimpleNamespace(stem="01-send-buffer", student_notebook=tmp_path / "none.ipynb")
    result = {"questions": [], "problems": [], "internal": []}
    report.apply_template(result, lab1, json.dumps(nb).encode(), {**status, "cell_errors": status["cell_errors"][3:4]},
                          SimpleNamespace())
    assert result["notes"][0].endswith("read the column `mbps`, which the kit now names `goodput_transfer_mbps`: use that name")


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


def _code(src: str, answer: bool = False):
    return nbformat.v4.new_code_cell(src, metadata={"tags": ["otter_answer_cell"]} if answer else {})


def _md(src: str, answer: bool = False):
    return nbformat.v4.new_markdown_cell(src, metadata={"tags": ["otter_answer_cell"]} if answer else {})


BLANK = "_Type your answer here, replacing this text._"
# As Otter hands them out: a required function (q2) whose cell loops over `name` at the top, optional
# ones (q3, q7; q7's comprehension also uses `name`), two written questions between Otter's markers.
HANDED = [_code('import otter\ngrader = otter.Notebook("lab.ipynb")'),
          _code("def f2(x):\n    ...\n\n\nfor method, name in ((1, 2),):\n    print(f2(method))", answer=True),
          _code('grader.check("q2")'),
          _md("<!-- BEGIN QUESTION -->\n\n**Q12** Why?"), _md(BLANK, answer=True),
          _md("<!-- END QUESTION -->\n\n<!-- BEGIN QUESTION -->\n\n**Q14** And why?"), _md(BLANK, answer=True),
          _md("<!-- END QUESTION -->"),
          _code("def f3(x):\n    ...\n\n\nper_path = f3(1)", answer=True), _code('grader.check("q3")'),
          _code("def f7(x):\n    ...\n\n\nrows = [f7({name: 1 for name in 'ab'}) for _ in range(2)]", answer=True),
          _code('grader.check("q7")')]


def _graded(tmp_path, replace: dict[int, str]) -> dict:
    handed = tmp_path / "student" / "lab.ipynb"
    handed.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nbformat.v4.new_notebook(cells=HANDED), handed)
    cells = [{"cell_type": c.cell_type, "source": replace.get(i, c.source)} for i, c in enumerate(HANDED)]
    ag = SimpleNamespace(stem="lab", student_notebook=handed)
    qs = [{"question": q, "score": 0.0, "possible": p, "cases": []} for q, p in (("q2", 2.0), ("q3", 0.0), ("q7", 0.0))]
    result = {"lab": "lab", "student": "ann", "questions": qs, "score": 0.0, "possible": 2.0, "problems": [],
              "internal": [], "status": "ok", "written": {"q12": 2.0, "q14": 2.0}}
    report.apply_template(result, ag, json.dumps({"cells": cells}).encode(), {"executed": True, "env_saved": True},
                          SimpleNamespace())
    return result


def test_unanswered_optional_questions_are_a_note_and_written_answers_are_quoted(tmp_path):
    """Walkthrough 4: a complete required path read `problems` for the optional q3, q4, q17, q19 left
    unanswered, and q7 (its comprehension's `name`, bound at the top of Q2's cell) read as answered."""
    r = _graded(tmp_path, {1: "def f2(x):\n    return [x]\n\n\nfor method, name in ((1, 2),):\n    print(f2(method))",
                           4: "MPTCP waits for the slow path.\nSecond line."})
    assert r["problems"] == [] and r["notes"] == ["optional question(s) q3, q7 (0 points) not answered: nothing to fix"]
    assert [q["question"] for q in r["questions"] if q.get("unanswered")] == ["q3", "q7"]
    assert r["written_answers"] == {"q12": "MPTCP waits for the slow path.\nSecond line.", "q14": None}
    report.write(r, tmp_path / "out", {})
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| q7 | 0 / 0 | 0 points, feedback only: not answered |" in text
    assert "## Your written answers (graded by your instructor: 4 points)" in text
    assert "**q12** (2 points)\n\n> MPTCP waits for the slow path.\n> Second line.\n" in text
    assert "**q14** (2 points): not answered" in text
    assert "- note: optional question(s) q3, q7 (0 points) not answered: nothing to fix" in text

    r = _graded(tmp_path, {})  # the required q2 unanswered: a problem; nothing written
    assert r["problems"] == ["question(s) q2 not answered yet"]
    assert r["written_answers"] == {"q12": None, "q14": None}
    r = _graded(tmp_path, {5: "**Q14** (the markers deleted)"})
    assert r["written_answers"] == {}
    report.write(r, tmp_path / "out", {})
    assert "Not quoted: they could not be told apart" in (tmp_path / "out" / "report.md").read_text()


def test_the_gradebook_says_its_points_are_the_automatic_ones_and_leaves_the_written_ones_to_mark(tmp_path):
    rows = [{"student": s, "lab": "lab", "questions": [{"question": q, "score": sc} for q, sc in (("q2", 2.0), ("q10", 1.0))],
             "score": 3.0, "possible": 4.0, "status": st, "problems": pr, "submission": f"{s}.ipynb",
             "written": {"q14": 2.0, "q5": 1.0}} for s, st, pr in (("ann", "ok", []), ("bob", "problems", ["x"]))]
    batch.write_gradebook(rows, ["q10", "q2"], tmp_path / "gradebook.csv")
    got = list(csv.DictReader(open(tmp_path / "gradebook.csv")))
    assert list(got[0]) == ["student", "lab", "q2", "q10", "automatic_total", "automatic_possible", "automatic_percent",
                            "q5", "q14", "written_possible", "status", "problems", "submission", "not_graded"]
    assert {k: got[0][k] for k in ("automatic_total", "automatic_possible", "automatic_percent", "q5", "q14",
                                   "written_possible")} == {"automatic_total": "3", "automatic_possible": "4",
                                                            "automatic_percent": "75.0", "q5": "", "q14": "",
                                                            "written_possible": "3"}
    assert (got[1]["status"], got[1]["problems"]) == ("problems", "1")


def test_the_instructors_page_says_what_the_gradebook_and_the_report_hold(tmp_path):
    """site/instructors/grading.md said report.md carried the written answers when it named only
    their questions, and the gradebook's percent of everything when it was of the automatic points:
    its table of outputs names every column write_gradebook writes, and the quoted answers."""
    batch.write_gradebook([], ["q1"], tmp_path / "gradebook.csv")
    header = (tmp_path / "gradebook.csv").read_text().splitlines()[0].split(",")
    rows = {ln.split("|")[1].strip(): ln for ln in GRADING_MD.read_text().splitlines() if ln.startswith("| `")}
    assert [c for c in header[3:] if f"`{c}`" not in rows["`gradebook.csv`"]] == []
    assert "empty column per written question" in rows["`gradebook.csv`"]
    assert "each written answer (`manual: true`) quoted as handed in with its points" in rows["`<student>/report.md`"]
