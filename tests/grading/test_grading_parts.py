"""The grading machinery's parts, without a sandbox (fast): unpickler allowlist, answer keys,
unanswered questions, student-facing wording, ids, malformed cells, lab grouping, the Gradescope zip."""

import collections
import datetime
import io
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import pytest

from mptcplab.grading import answer_keys, autograder, batch, checker, execute, report
from mptcplab.run.lab import REPO_ROOT

HERE = Path(__file__).parent
FIXTURE = HERE / "fixtures" / "grading" / "99-fixture.ipynb"


def _walk(module: str, name: str, arg: str) -> bytes:
    """A protocol-4 pickle calling module.name(arg), name resolved by attribute walk."""
    s = lambda t: b"\x8c" + bytes([len(t)]) + t.encode()  # noqa: E731
    return b"\x80\x04" + s(module) + s(name) + b"\x93" + s(arg) + b"\x85R."


PLAIN = [1, 1.5, "s", b"b", [1, (2, 3)], {"a": {1, 2}}, frozenset([1]), ..., None, complex(1, 2), range(3),
         collections.OrderedDict(a=1), collections.Counter("aab"), datetime.datetime.now(datetime.timezone.utc),
         np.arange(5), np.float64(1.5), np.int64(3), np.array(["a", "b"]), np.zeros((2, 3), dtype=np.float32),
         pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5], "c": ["x", "y"]}).set_index("c"), pd.Series([1.0, 2.0], index=["a", "b"]),
         pd.DataFrame({"t": pd.date_range("2020", periods=3, tz="UTC")}), pd.Series(pd.Categorical(["a", "b", "a"])),
         pd.Series([1, None], dtype="Int64"), pd.MultiIndex.from_tuples([(1, "a"), (2, "b")]), pd.Timestamp("2020-01-01"),
         pd.NaT, go.Figure(go.Scatter(x=[1, 2], y=[3, 4])), px.line(pd.DataFrame({"x": [1, 2], "y": [3, 4]}), x="x", y="y")]


def test_plain_data_rebuilds():
    env, skipped = checker.rebuild({"values": {f"v{i}": pickle.dumps(o, protocol=4) for i, o in enumerate(PLAIN)}})
    assert not skipped, skipped
    assert env["v7"] is Ellipsis and env["v19"].index.name == "c"


@pytest.mark.parametrize("module,name", [("pandas.core.common", "builtins.eval"), ("numpy", "core.multiarray.os.system"),
                                         ("plotly.graph_objs", "Figure.__init__"), ("builtins", "eval"),
                                         ("builtins", "getattr"), ("os", "system"), ("numpy", "load"),
                                         ("pandas", "read_pickle"), ("plotly.io", "read_json")])
def test_attribute_walks_and_code_are_refused(module, name, tmp_path):
    marker = tmp_path / "ran"
    env, skipped = checker.rebuild({"values": {"v": _walk(module, name, f"open('{marker}', 'w')")}})
    assert "v" not in env and "not plain data" in skipped["v"] and not marker.exists()


def test_only_the_values_the_checks_read_are_unpickled(tmp_path):
    """The checker rebuilds the names its checks read (a notebook's Plotly figures cost seconds to
    unpickle); an unread value is never unpickled, so not even a malicious one runs anything."""
    marker = tmp_path / "ran"
    dump = {"values": {"x": pickle.dumps(3, protocol=4), "fig": _walk("builtins", "eval", f"open('{marker}', 'w')")},
            "refs": {"np": ["module", "numpy", ""]}}
    env, skipped = checker.rebuild(dump, names={"x"})
    assert env == {"x": 3} and not skipped and not marker.exists()


def test_modules_rebind_only_to_themselves():
    env, skipped = checker.rebuild({"refs": {"np": ["module", "numpy", ""], "os": ["module", "os", ""],
                                            "f": ["object", "builtins", "eval"]},
                                   "oversized": {"big": 72 << 20}, "unsaved": {"log": "Logger"}})
    assert env == {"np": np}
    assert set(skipped) == {"os", "f", "big", "log"} and "72 MiB" in skipped["big"]


def test_answer_keys_are_redacted(tmp_path):
    binds = answer_keys.redacted_files(tmp_path)
    models = answer_keys.module_file("mptcplab.labs.lab3.models")
    text = Path(binds[str(models)]).read_text()
    assert "24 * n * n" not in text and "AnswerKeyHidden" in text and "def pftk" in text
    ns: dict = {"__name__": "redacted_models"}
    exec(compile(text, "models.py", "exec"), ns)
    with pytest.raises(ns["AnswerKeyHidden"], match="computes a graded answer"):
        ns["parallel_per_flow"](2, 0.01, 0.1, 0.3)
    assert ns["pftk"](0.01, 0.1, 0.3) > 0  # the rest of the module still works
    runs = pd.read_csv(binds[str(REPO_ROOT / "solutions/results/lab3/runs.csv")])
    assert not {"model1", "model2", "err_model1", "err_model2"} & set(runs.columns) and "p_e" in runs


def test_a_renamed_answer_key_fails_loudly():
    with pytest.raises(LookupError, match="no top-level function"):
        answer_keys.redact_source("def f():\n    return 1\n", ("g",), "m")


def test_handed_out_notebooks_answer_nothing(tmp_path):
    """The shipped student notebooks score 0 whatever a check says on shipped data (Lab 1 gave 0.67)."""
    for nb in sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        template = report.template_answers(nb)
        assert template, nb
        sources = [c.source for c in nbformat.read(nb, 4).cells]
        assert report.unanswered(template, sources) == set(template), nb


def test_an_answer_anywhere_counts():
    template = {"q1": ["peak = ..."], "q2": ["per_kib = ..."]}
    assert report.unanswered(template, ["peak = ...", "per_kib = ...", "peak = 40"]) == {"q2"}
    assert report.unanswered(template, ["peak = data.max()", "per_kib = ..."]) == {"q2"}
    assert report.unanswered(template, ["x = 1"]) == {"q1", "q2"}


# `otter assign` of the fixture (24 s measured on a loaded host) is paid by whichever of its users
# runs first, so all three are slow; the otter run itself took 29 s more.
@pytest.fixture(scope="module")
def fixture_ag(tmp_path_factory):
    return autograder.autograder_for(FIXTURE, tmp_path_factory.mktemp("assign"))


@pytest.mark.slow
def test_student_wording_has_no_machinery(fixture_ag):
    tb = (f'Traceback (most recent call last):\n  File "{REPO_ROOT}/src/mptcplab/grading/execute.py", line 3\n'
          "RuntimeError: Kernel died")
    assert report.plain(tb) == "RuntimeError: Kernel died"
    assert report.plain(f"FileNotFoundError: {REPO_ROOT}/notebooks/x.csv") == "FileNotFoundError: notebooks/x.csv"
    secret = report.hidden_lines(fixture_ag.tests())
    assert any("HIDDEN-FIXTURE-SECRET" in s for s in secret)
    line = next(iter(secret))
    assert report._safe(f"check said: {line}", secret) == report.WITHHELD


def test_ids_never_collide():
    paths = [Path("dup a.ipynb"), Path("dup_a.ipynb"), Path("x/dup_a.ipynb"), Path("alice/01-x.ipynb"), Path("Dup_A.ipynb")]
    ids = batch.unique_ids(paths, "01-x")
    assert ids == ["dup_a", "dup_a-2", "dup_a-3", "alice", "Dup_A-4"]
    assert len({i.lower() for i in ids}) == len(ids)


def test_ids_never_name_a_grader_file_nor_leave_out():
    """`gradebook.csv.ipynb` once wrote its report where the gradebook goes and crashed the batch."""
    paths = [Path("gradebook.csv.ipynb"), Path("REPORT.md.ipynb"), Path("x/executed.ipynb.ipynb"), Path("...ipynb"),
             Path("../../etc.ipynb"), Path("a/../../b/01-x.ipynb"), Path("01-x.ipynb")]
    ids = batch.unique_ids(paths, "01-x")
    assert ids == ["gradebook.csv-2", "REPORT.md-2", "executed.ipynb-2", "submission", "etc", "b", "submission-2"]
    assert not {i.lower() for i in ids} & batch.RESERVED
    assert all("/" not in i and i not in (".", "..") for i in ids)


def test_malformed_cells_are_reported_by_index():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1"), nbformat.v4.new_code_cell("b")])
    nb.cells[1]["source"] = 12345
    nb.cells.append(nbformat.from_dict({"cell_type": "weird", "source": "x", "metadata": {}}))
    bad = execute.sanitize(nb)
    assert [b["cell"] for b in bad] == [2, 3] and "int" in bad[0]["why"]
    assert nb.cells[0].source == "a = 1" and nb.cells[1].cell_type == "markdown"


def test_frames_are_capped(tmp_path):
    import os
    import struct

    def fr(kind, payload):
        return kind + struct.pack("!Q", len(payload)) + payload

    name = b"peak"
    stream = io.BytesIO(fr(b"S", b'{"executed": true}') + fr(b"V", struct.pack("!H", 4) + name + pickle.dumps(40.0))
                        + fr(b"V", struct.pack("!H", 4) + b"huge" + b"x" * 50_000))
    fd = os.open(tmp_path, os.O_RDONLY)
    got = batch.read_frames(stream, fd, value_cap=1000, total_cap=100_000)
    assert got["status"] == {"executed": True} and got["values"] == {"peak": "1.pkl"}
    assert "over its cap" in got["problems"][0]


@pytest.mark.slow
def test_gradescope_zip_carries_the_kit(tmp_path, fixture_ag):
    ag = fixture_ag
    z = autograder.gradescope_zip(ag, tmp_path / "gs.zip", "lab3")
    with zipfile.ZipFile(z) as zf:
        names = set(zf.namelist())
        env = zf.read("environment.yml").decode()
    assert {"run_autograder", "tests/q1.py", "kit/pyproject.toml", "kit/src/mptcplab/labs/lab3/models.py",
            "kit/solutions/results/lab3/runs.csv"} <= names
    assert "-e /autograder/source/kit[notebooks]" in env


@pytest.mark.slow
def test_gradescope_zip_grades_the_solution_with_otter(tmp_path, fixture_ag):
    """Tested once the way Gradescope runs it: `otter run` (Otter's non-containerized autograder)."""
    ag = fixture_ag
    (tmp_path / "res").mkdir()
    z = autograder.gradescope_zip(ag, tmp_path / "gs.zip")
    sub = tmp_path / "sub" / FIXTURE.name
    sub.parent.mkdir()
    nbformat.write(autograder.filled_student_notebook(ag.student_notebook, ag.zip_path.parent / FIXTURE.name), sub)
    otter = Path(sys.executable).with_name("otter")
    r = subprocess.run([str(otter), "run", "-a", str(z), "-o", str(tmp_path / "res"), "--no-logo", str(sub)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    res = json.loads((tmp_path / "res" / "results.json").read_text())
    assert sum(t.get("score") or 0 for t in res["tests"]) == pytest.approx(3), res


@pytest.mark.skipif(__import__("os").geteuid() != 0, reason="leases live under /run (root)")
def test_each_submission_gets_a_uid_of_its_own():
    """Leases never hand out one UID twice, in this process or another, nor a UID an account holds."""
    import pwd

    from mptcplab.grading import identity

    with identity.lease() as a, identity.lease() as b:
        assert a != b and identity.FIRST <= min(a, b) and max(a, b) <= identity.LAST
        other = subprocess.run([sys.executable, "-c", "from mptcplab.grading import identity\n"
                                "with identity.lease() as u: print(u)"], capture_output=True, text=True, check=True)
        assert int(other.stdout) not in (a, b)
    for uid in (a, b):
        with pytest.raises(KeyError):
            pwd.getpwuid(uid)


def test_checks_read_the_kits_tables_when_grading(monkeypatch):
    from mptcplab.grading import reference
    from mptcplab.labs.lab3 import analysis as la

    mine = pd.DataFrame({"run": []})
    monkeypatch.delenv("MPTCPLAB_GRADING", raising=False)
    assert reference.kit("lab3", la.load, "runs", mine) is mine  # a student's own notebook: their runs
    monkeypatch.setenv("MPTCPLAB_GRADING", "1")
    kit = reference.kit("lab3", la.load, "runs", mine)
    assert kit is not mine and len(kit) > 100  # graded: the kit's copy, whatever the notebook holds


def test_leak_scan_reads_no_digest_or_identifier_as_a_number():
    """Issue 40: `6942e893795a2428` (a report's SHA-256 prefix) was read as 6942 x 10^893795 and overflowed."""
    sys.path.insert(0, str(HERE))
    import leakscan

    for word in ("6942e893795a2428", "sha 6942e893795a2428…", "abc6942e8937", "q3_2", "x1234", "1234abc", "1e400"):
        assert leakscan.numbers(word) == [], word
    assert leakscan.leaks("SHA-256 6942e893795a2428… unchanged", [6942.0, 6942e89]) == []
    assert [x for x, _ in leakscan.numbers("p = 961.2431 ms, (0.012345), 1.234e-05.")] == [961.2431, 0.012345, 1.234e-05]
    assert leakscan.leaks("model 1 gives 961.24 here", [961.2431])
