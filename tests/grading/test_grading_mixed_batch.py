"""Issue 40, items 4-6, sandboxed: one mixed-lab batch as an LMS archive can hand it in, and a
writer/reader pair given the same UID in turn.

The batch holds two fixture labs (99 and a copy named 98), three correct notebooks, and beside
them a symbolic link to the master notebook (once graded 20/20 `ok` with every hidden test in its
executed.ipynb), links to /etc/shadow and to nowhere, a hard link to a root-only file (once its
first bytes reached the student's report), a FIFO (once hung the batch for ever), a folder named
`*.ipynb` (once crashed it), `gradebook.csv.ipynb` (once wrote its report where the gradebook goes),
a notebook of a lab the kit does not have and random bytes (once made the batch refuse to start).
Each is its own 0 row with its reason, the correct ones keep full marks, every gradebook is
written. Links and the FIFO are made at test time (`make_bad_submissions.place_unreadable`).
Among the correct ones, a renamed copy whose first cell opens its new name: the two fixture labs
share every word, so only the kit's notebook metadata can place it (it once got "its lab cannot be told").
"""

import csv
import os
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from mptcplab.grading import autograder, batch, files, intake, sandbox

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "bad_submissions"))
import make_bad_submissions as crafted  # noqa: E402  (the crafted set's maker, beside the notebooks)

MASTER = HERE / "fixtures" / "grading" / "99-fixture.ipynb"
SECRET = "ROOT-ONLY-SECRET"
HIDDEN = "HIDDEN-FIXTURE-SECRET"  # text found only in the fixture's hidden tests

pytestmark = [pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
              pytest.mark.slow, pytest.mark.timeout(1800)]


def _solution(solutions: Path, build: Path, stem: str):
    ag = autograder.autograder_for(solutions / f"{stem}.ipynb", build)
    return ag, autograder.filled_student_notebook(ag.student_notebook, ag.zip_path.parent / ag.master.name)


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mixed")
    solutions = tmp / "solutions"
    solutions.mkdir()
    shutil.copy(MASTER, solutions / "99-fixture.ipynb")
    shutil.copy(MASTER, solutions / "98-fixture.ipynb")  # a second lab: Otter names it after the file
    return {"tmp": tmp, "solutions": solutions, "build": tmp / "assign",
            **{stem: _solution(solutions, tmp / "assign", stem) for stem in ("99-fixture", "98-fixture")}}


@pytest.fixture(scope="module")
def mixed(labs):
    tmp = labs["tmp"]
    subs = tmp / "subs"
    subs.mkdir()
    for name, stem in (("alice", "99-fixture"), ("bob", "99-fixture"), ("carol", "98-fixture"),
                       ("gradebook.csv", "99-fixture")):  # a correct notebook under a name the grader writes
        nbformat.write(labs[stem][1], subs / f"{name}.ipynb")
    renamed = nbformat.from_dict(labs["98-fixture"][1])  # Otter opens the file its first cell names
    renamed.cells[0].source = renamed.cells[0].source.replace("98-fixture.ipynb", "dave-lab98-final.ipynb")
    assert 'otter.Notebook("dave-lab98-final.ipynb")' in renamed.cells[0].source
    nbformat.write(renamed, subs / "dave-lab98-final.ipynb")
    foreign = nbformat.writes(labs["99-fixture"][1]).replace("99-fixture", "07-no-such-lab")  # metadata and first cell
    (subs / "foreign.ipynb").write_text(foreign)
    secret = tmp / "root-only"
    secret.write_text(SECRET)
    os.chmod(secret, 0o600)
    reasons = crafted.place_unreadable(subs, labs["solutions"] / "99-fixture.ipynb", secret)
    reasons["foreign.ipynb"] = "it names lab 07-no-such-lab, which this kit does not have"
    reasons["gradebook.csv.ipynb"] = "its name gives the student id gradebook.csv, the name of a file the grader writes"
    found, skipped = files.collect([subs])
    assert len(found) == 13 and not skipped
    opt = batch.Options(cell_timeout=60, workers=2, limits=sandbox.Limits(wall_s=240, cpu_s=240, tree_memory_mb=2048, disk_mb=256))
    summary = intake.grade_all(found, tmp / "out", opt, solutions=labs["solutions"], build=labs["build"])
    rows = {}
    for s in summary:
        for row in csv.DictReader(open(s["gradebook"])):
            assert row["submission"] not in rows
            rows[Path(row["submission"]).name] = {**row, "dir": Path(s["gradebook"]).parent}
    return {"summary": summary, "rows": rows, "reasons": reasons, "out": tmp / "out", "subs": subs}


def test_every_file_is_its_own_row_and_every_gradebook_is_written(mixed):
    assert {s["lab"] for s in mixed["summary"]} == {"99-fixture", "98-fixture", intake.UNKNOWN}
    assert all(Path(s["gradebook"]).is_file() and s["grader_errors"] == 0 for s in mixed["summary"])
    assert set(mixed["rows"]) == {p.name for p in mixed["subs"].iterdir()}


def test_correct_notebooks_keep_full_marks(mixed):
    for name in ("alice.ipynb", "bob.ipynb", "carol.ipynb", "dave-lab98-final.ipynb"):
        row = mixed["rows"][name]
        assert (row["automatic_total"], row["automatic_possible"], row["status"], row["problems"]) == \
            ("3", "3", "ok", "0"), row
    dave = mixed["rows"]["dave-lab98-final.ipynb"]
    assert dave["lab"] == "98-fixture"
    report = (dave["dir"] / dave["student"] / "report.md").read_text()
    assert "Otter" not in report and "first cell" not in report and "1st cell" not in report, report
    # Otter's stand-in while grading (execute.SETUP_SOURCE): any file name opens, checks run afterwards
    executed = nbformat.read(dave["dir"] / dave["student"] / "executed.ipynb", 4)
    outputs = [str(o) for c in executed.cells if c.cell_type == "code" for o in c.outputs]
    assert not any("Error" in o for o in outputs), outputs
    assert any("checked by the grader after the notebook has run" in o for o in outputs), outputs


def test_each_bad_file_is_a_zero_row_with_its_reason(mixed):
    for name, why in mixed["reasons"].items():
        row = mixed["rows"][name]
        assert row["automatic_total"] == "0" and row["status"] == "not graded" and why in row["not_graded"], (name, row)
        report = (row["dir"] / row["student"] / "report.md").read_text()
        assert why in report and "Score: 0" in report, report
    # Sorted by what each file names: a link named for no lab, garbage and a foreign lab in unknown-lab/.
    assert mixed["rows"]["gradebook.csv.ipynb"]["lab"] == "99-fixture"
    assert mixed["rows"]["gradebook.csv.ipynb"]["student"] == "gradebook.csv-2"
    assert mixed["rows"]["garbage.ipynb"]["lab"] == intake.UNKNOWN


def test_nothing_behind_a_link_reaches_any_file(mixed):
    """No executed.ipynb for a refused file (the master's hidden tests once came back in one), and
    neither the root-only file's text nor /etc/shadow's in anything the grader wrote."""
    shadow = Path("/etc/shadow").read_text()[:40] if Path("/etc/shadow").exists() else None
    for name in mixed["reasons"]:
        row = mixed["rows"][name]
        assert not (row["dir"] / row["student"] / "executed.ipynb").exists(), name
    for f in mixed["out"].rglob("*"):
        if f.is_file():
            text = f.read_text(errors="replace")
            assert SECRET not in text and (shadow is None or shadow not in text), f
            if f.name != "report.json":  # the instructor's: hidden checks' messages are kept there
                assert HIDDEN not in text, f


@pytest.fixture(scope="module")
def same_uid(labs):
    """The keyring writer then the reader, one at a time: both get the lowest free UID, the same."""
    tmp = labs["tmp"] / "keys"
    (tmp / "subs").mkdir(parents=True)
    ag, solution = labs["99-fixture"]
    subs = []
    for name, make in (("1_writer", crafted.keyring_writer), ("2_reader", crafted.keyring_reader)):
        nb = nbformat.from_dict(solution)
        make(nb)
        nbformat.write(nb, tmp / "subs" / f"{name}.ipynb")
        subs.append(tmp / "subs" / f"{name}.ipynb")
    opt = batch.Options(cell_timeout=60, workers=1, limits=sandbox.Limits(wall_s=240, cpu_s=240, tree_memory_mb=2048, disk_mb=256))
    results = batch.grade_batch(subs, ag, tmp / "out", opt)
    return {r["student"]: r for r in results}, tmp / "out"


def _printed(path: Path, tag: str) -> str:
    nb = nbformat.read(path, 4)
    text = "\n".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    return text.split(tag)[1].splitlines()[0].strip()


def test_nothing_of_a_submission_reaches_the_next_on_its_uid(same_uid):
    res, out = same_uid
    assert res["1_writer"]["execution"]["uid"] == res["2_reader"]["execution"]["uid"]
    left = _printed(out / "1_writer" / "executed.ipynb", "left:").split()
    assert {"user", "user-session", "session", "persistent", "/tmp/mlab-left", "sysv-shm"} <= set(left), left
    assert _printed(out / "2_reader" / "executed.ipynb", "found:") == "nothing"
    assert res["2_reader"]["score"] == 3  # and the pair graded as any other notebook
    # Nothing reached the host either: no file of that UID where a sandbox could have written.
    uid = res["1_writer"]["execution"]["uid"]
    for top in ("/tmp", "/var/tmp", "/dev/shm", "/run"):
        for here, dirs, names in os.walk(top):
            for n in dirs + names:
                p = os.path.join(here, n)
                try:
                    assert os.lstat(p).st_uid != uid, p
                except FileNotFoundError:
                    pass
