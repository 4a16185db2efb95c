"""Sandboxed grading of the crafted bad submissions (tests/grading/bad_submissions/) plus a perfect one.

Each gets the score its own work earns and a report that says what happened; the batch finishes
in bounded time; no submission file changes; the hidden tests never reach a student-facing file;
memory of every submission's tree and of the grader itself stays bounded (measured); nothing is
left running. One batch, two workers: ~3 min on an idle 2-core machine.
"""

import hashlib
import os
import re
import resource
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
TREE_MB = 2048
EXPECTED = {
    "solution": (3, None),
    "replace_checker": (1 + 2 / 3, None),  # 1. modules planted for the checker change nothing
    "pickle_walk": (1, None),  # 2. crafted pickles refused: only q2, a real DataFrame, counts
    "answer_key": (3, None),  # 3. (its own answers are right)
    "tree_memory": (3, None),  # 4. five 700 MB children against a 2 GiB tree
    "disk_flood": (3, None),  # 4. 5 GiB of files, 6 GB on fds 1/2
    "big_global": (3, "`big`: too large to grade"),  # 5. one 72 MB global does not cost the rest
    "symlink_out": (1, None),  # 6. links are never followed; peak's value was replaced by a link: lost
    "sigint_runner": (3, "ignored the interrupt"),  # 7. values computed before survive
    "malformed_cell": (3, "the 5th cell"),  # 7. reported by index, the rest graded
    "dup_a": (3, "same student id"),  # 7. `dup a` and `dup_a`: both graded, neither lost
    "dup_a-2": (3, "same student id"),
    "unfilled": (0, "not answered yet"),  # 8. no points for the notebook as handed out
    "deleted_checks": (3, None),
    "edited_checks": (2 / 3, None),  # only "peak is a number" holds for the mean
    "enormous_output": (3, "output beyond"),
    "infinite_loop": (1, "was interrupted"),
    "memory_hog": (3, "MemoryError"),
    "network_access": (3, None),
    "not_a_notebook": (0, "not a readable notebook"),
    "read_hidden_tests": (1 + 2 / 3, None),
    "syntax_error": (1, "SyntaxError"),
    "tcp_hog": (3, None),  # issue 40, 7: its TCP buffers count against its own cgroup
}

pytestmark = [pytest.mark.skipif(sandbox.available() is not None, reason=str(sandbox.available())),
              pytest.mark.slow,
              pytest.mark.timeout(2400)]  # one batch of 22: ~4 min idle, 17 min at load 24 on 2 cores


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
    opt = batch.Options(cell_timeout=40, workers=2,
                        limits=sandbox.Limits(wall_s=240, cpu_s=240, tree_memory_mb=TREE_MB, disk_mb=256))
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.monotonic()
    results = batch.grade_batch(subs, ag, tmp / "out", opt)
    return {"results": {r["student"]: r for r in results}, "out": tmp / "out", "seconds": time.monotonic() - start,
            "before": before, "mtimes": mtimes,
            "rss_growth_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before) >> 10}



def test_every_submission_gets_its_score(graded):
    res = graded["results"]
    assert set(res) == set(EXPECTED)
    for sid, (score, _) in EXPECTED.items():
        assert res[sid]["score"] == pytest.approx(score, abs=1e-3), (sid, res[sid]["questions"], res[sid]["problems"])
        assert res[sid]["status"] != "grader-error", res[sid]["problems"]


def test_reports_say_what_happened(graded):
    for sid, (score, phrase) in EXPECTED.items():
        report = (graded["out"] / sid / "report.md").read_text()
        footer = report.strip().splitlines()[-1]  # no time: a hidden check cannot be timed (issue 40, 7)
        assert footer.startswith("_Graded in a sandbox") and not re.search(r"\d", footer.split("SHA-256")[0]), footer
        assert f"Score: {round(score, 2):g} / 3" in report, report
        if phrase:
            assert phrase in report, (sid, report)
        # Words a student can act on: no machinery paths, tracebacks or runner internals.
        for leak in (str(sandbox.REPO_ROOT), "/tmp/mlab", "Traceback", "site-packages", "asyncio", "ellipsis"):
            assert leak not in report, (sid, leak, report)
    assert "File too large" in (graded["out"] / "enormous_output" / "report.md").read_text()
    assert "peak should be a number" not in (graded["out"] / "edited_checks" / "report.md").read_text()
    assert "take the largest value of the mbps column" in (graded["out"] / "edited_checks" / "report.md").read_text()


def test_gradebook_lists_everyone(graded):
    rows = (graded["out"] / "gradebook.csv").read_text().splitlines()
    assert rows[0].startswith("student,lab,q1,q2,automatic_total,automatic_possible")
    assert len(rows) == 1 + len(EXPECTED)
    assert {r.split(",")[0] for r in rows[1:]} >= {"dup_a", "dup_a-2"}


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
    assert found >= 50, hunt  # the walk really ran over the kit's code and guides
    # Writable: only the submission's own copy and the sandbox's private /tmp.
    wrote = [line.removeprefix("wrote to ") for line in hunt.splitlines() if line.startswith("wrote to ")]
    assert all(w.startswith((f"{sandbox.REPO_ROOT}/notebooks/", "/tmp/")) for w in wrote), wrote
    for sid in EXPECTED:  # student-facing files never carry a hidden test
        for name in ("report.md", "executed.ipynb"):
            f = out / sid / name
            assert not f.exists() or SECRET not in f.read_text(), f


def test_exploits_gain_nothing(graded):
    out, res = graded["out"], graded["results"]
    planted = _outputs(out / "replace_checker" / "executed.ipynb")
    assert "planted" in planted  # it did plant them, and the score above is still its own
    assert all("LEAKED" not in (out / sid / "report.json").read_text() for sid in EXPECTED)
    walk = res["pickle_walk"]["skipped_values"]
    assert "not plain data" in walk.get("peak", ""), walk
    assert not os.path.exists("/tmp/PWNED") and not os.path.exists("/tmp/PWNED2")
    keys = _outputs(out / "answer_key" / "executed.ipynb")
    assert "ANSWER KEY GAVE" not in keys and keys.count("refused: AnswerKeyHidden") == 5, keys
    assert "formula visible: False" in keys and "bytecode files: 0" in keys and "answer columns: []" in keys, keys
    for sid in ("symlink_out", "pickle_walk"):
        text = (out / sid / "report.json").read_text() + (out / sid / "executed.ipynb").read_text()
        assert "root:x:0:0" not in text and "root:" not in (out / sid / "report.md").read_text()
    flood = _outputs(out / "disk_flood" / "executed.ipynb")
    wrote = int(flood.split("wrote MiB:")[1].split()[0])
    assert wrote <= 2 * 256 + 64 + 8, flood  # the copy's tmpfs, /tmp and /dev/shm, nothing on the host
    assert res["tree_memory"]["execution"]["oom_killed"], res["tree_memory"]  # the cgroup stopped some of the five
    hog = res["tcp_hog"]["execution"]
    queued = int(_outputs(out / "tcp_hog" / "executed.ipynb").split("queued MiB:")[1].split()[0])
    if hog["socket_peak_mb"] is not None:  # cgroup v1: capped at Limits.socket_mb (a few pages over, forced)
        assert hog["socket_peak_mb"] <= sandbox.Limits().socket_mb and queued <= sandbox.Limits().socket_mb, (hog, queued)
    else:  # v2: charged to the tree's memory
        assert hog["memory_peak_mb"] <= TREE_MB


def test_memory_bounded_and_nothing_left(graded):
    for sid, r in graded["results"].items():
        peak = (r.get("execution") or {}).get("memory_peak_mb")
        assert peak is None or peak <= TREE_MB, (sid, peak)
    assert graded["rss_growth_mb"] < 300, graded["rss_growth_mb"]  # 6 GB of stdout/stderr never reached the grader
    # Each submission's cgroup is gone, which the kernel allows only once no process is left in it.
    leftover = [d for r in graded["results"].values() for d in (r.get("execution") or {}).get("cgroup", []) if os.path.exists(d)]
    assert not leftover, leftover
    assert all((r.get("execution") or {}).get("cgroup") for r in graded["results"].values() if r["student"] != "not_a_notebook")


def test_batch_is_bounded_and_submissions_untouched(graded):
    assert graded["seconds"] < 25 * 60
    for p, digest in graded["before"].items():
        assert _sha(p) == digest and os.stat(p).st_mtime_ns == graded["mtimes"][p], p
    assert _sha(MASTER) and SECRET in MASTER.read_text()  # the master still holds what we scan for
