"""Lab 3 notebook, executed headless: `otter assign` accepts the master, the solution passes every
public check, the unfilled student notebook fails every check with its hint, and a submission that copies the printed Algorithm 1 fails Q1 with the misprint hint.
The introduction's stated time adds up from its minutes per step, which name exactly the questions that
earn points, and the guide states the same time.

Skipped where otter-grader or nbclient are not installed; CI installs both (`.[dev]`).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

otter = pytest.importorskip("otter")
nbclient = pytest.importorskip("nbclient")
import nbformat  # noqa: E402

pytestmark = pytest.mark.slow  # executes the lab 3 notebook

ROOT = Path(__file__).resolve().parents[2]
MASTER = ROOT / "solutions" / "03-parallel-tcp.ipynb"
REFERENCE = Path(os.environ.get("MPTCPLAB_LAB3_TEST_RESULTS", ROOT / "solutions" / "results" / "lab3"))
TIMEOUT = 300

TYPO_MODEL1 = '''
def model1(n, p, rtt, T, b=1):
    # Algorithm 1, line by line as printed in the Appendix
    a = math.sqrt(p * b * (24 * n * n + p * b * (n * n - 4 * n + 4)))
    x = (p * b * (2 - n) + a) / (6 * n * n * p)
    w = 2 * n * x / b
    z = T * (1 + 32 * p * p) / (1 - p)
    q1 = (1 - (1 - pow(1 - 1 / w, 3))) * (1 + pow(1 - 1 / w, 3) * (1 - pow(1 - 1 / w, w - 3)))
    if q1 > 1:
        q1 = 1
    if q1 * z / (x * rtt) >= n:
        q = n
    else:
        q = q1 * z / (x * rtt)
    return (1 - q / n) / (p * x * rtt) + q / (z * (1 - p))


model1_values = nb3.values_on_grid(model1, nb3.GRID1)
'''

# What each unfilled question must say (a fragment of its first failing check's message).
UNFILLED = {
    "q1": "returned nothing (None)",
    "q2": "returned nothing (None)",
    "q3": "count_loss_events([], 0.06) returned nothing (None)",
    "q4": "cumulative_rates should return a DataFrame",
    "q5": "per_flow_rate should return a Series named p",
    "q6": "compare should return a DataFrame",
    "q7": "in_scope should return a boolean Series",
}


@pytest.fixture(scope="module")
def assigned(tmp_path_factory):
    if not REFERENCE.joinpath("runs.csv").exists():
        pytest.fail(f"the reference results {REFERENCE} are missing")
    dest = tmp_path_factory.mktemp("assign") / "03-parallel-tcp"
    exe = Path(sys.executable).with_name("otter")
    env = {**os.environ, "MPTCPLAB_LAB3_RESULTS": str(REFERENCE)}
    proc = subprocess.run([str(exe) if exe.exists() else "otter", "assign", "--no-pdfs", str(MASTER), str(dest)],
                          capture_output=True, text=True, env=env, timeout=2 * TIMEOUT, cwd=dest.parent)
    # The hidden tests need the grader's unseen draw: the master is graded on them by `mptcplab grade`
    # (tests/grading/test_notebooks_execute.py), so assign does not run them (run_tests: false).
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    return dest


def _execute(nb_path: Path, results: Path = REFERENCE) -> nbformat.NotebookNode:
    nb = nbformat.read(nb_path, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT, kernel_name="python3", allow_errors=True,
                                     resources={"metadata": {"path": str(nb_path.parent)}})
    os.environ["MPTCPLAB_LAB3_RESULTS"] = str(results)  # inherited by the kernel
    client.execute()
    return nb


def _checks(nb) -> dict[str, str]:
    """grader.check("qN") -> the text it displayed."""
    out = {}
    for cell in nb.cells:
        src = cell.source.strip()
        if cell.cell_type == "code" and src.startswith("grader.check("):
            q = src.split('"')[1]
            texts = []
            for o in cell.get("outputs", []):
                texts.append(o.get("text", "") or o.get("data", {}).get("text/plain", "") or o.get("evalue", ""))
            out[q] = "\n".join(texts)
    return out


def _solution(assigned, tmp_path) -> Path:
    """The student notebook with the master's answers (public checks only, as a student runs them)."""
    from mptcplab.grading import autograder

    path = tmp_path / "03-parallel-tcp.ipynb"
    nbformat.write(autograder.filled_student_notebook(assigned / "student" / "03-parallel-tcp.ipynb",
                                                      assigned / "autograder" / "03-parallel-tcp.ipynb"), path)
    return path


def test_solution_passes_every_check(assigned, tmp_path):
    nb = _execute(_solution(assigned, tmp_path))
    checks = _checks(nb)
    assert set(checks) == {f"q{i}" for i in range(1, 8)}
    for q, text in checks.items():
        assert "passed" in text and "failed" not in text.lower(), f"{q}: {text[-1500:]}"


def test_unfilled_notebook_fails_every_check_helpfully(assigned, tmp_path):
    student = tmp_path / "03-parallel-tcp.ipynb"
    shutil.copy(assigned / "student" / "03-parallel-tcp.ipynb", student)
    checks = _checks(_execute(student))
    assert set(checks) == set(UNFILLED)
    for q, hint in UNFILLED.items():
        assert "failed" in checks[q].lower(), f"{q} passed while unfilled: {checks[q][-800:]}"
        assert hint in checks[q], f"{q}: expected the hint {hint!r} in:\n{checks[q][-1500:]}"


def test_copying_the_printed_algorithm_1_fails_with_the_misprint_hint(assigned, tmp_path):
    student = tmp_path / "03-parallel-tcp.ipynb"
    nb = nbformat.read(assigned / "student" / "03-parallel-tcp.ipynb", as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and "def model1(" in c.source]
    assert len(cells) == 1
    cells[0].source = TYPO_MODEL1.strip()
    nbformat.write(nb, student)
    checks = _checks(_execute(student))
    assert "failed" in checks["q1"].lower()
    assert "you copied Algorithm 1's q1 line as printed" in checks["q1"], checks["q1"][-1500:]
    assert "equation (27)" in checks["q1"]


def test_q7_grades_the_selection_not_whether_runs_fall_inside_the_bands(assigned, tmp_path):
    """Every run measured at twice its throughput: every model misses its band, and Q7 still passes.
    The same results carry the kernel's RTTs, so the "Which RTT?" table is drawn from them."""
    import pandas as pd

    results = tmp_path / "results"
    shutil.copytree(REFERENCE, results)
    runs = pd.read_csv(results / "runs.csv")
    runs["pps"] *= 2
    if "srtt" not in runs:  # a reference recorded before the kit kept the kernel's RTTs
        runs = runs.assign(srtt=runs.rtt, min_rtt=runs.base_rtt, ack_rtt=runs.rtt * 1.1)
    runs.to_csv(results / "runs.csv", index=False)
    nb = _execute(_solution(assigned, tmp_path), results)
    checks = _checks(nb)
    assert all("passed" in checks[q] and "failed" not in checks[q].lower() for q in checks), checks
    shown = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("# Shown, not graded"))
    text = "".join(o.get("text", "") for o in shown.outputs)
    assert "model 1 within ±25 % in 0% of" in text and "model 2 within ±35 % in 0%" in text
    rtt = next(c for c in nb.cells if c.cell_type == "code" and c.source.startswith("RTTS = "))
    table = "".join(o.get("data", {}).get("text/plain", "") for o in rtt.outputs)
    assert "kernel min RTT" in table and "tshark ack_rtt" in table and "err1" in table


def _master_cells() -> list[str]:
    return ["".join(c["source"]) for c in nbformat.read(MASTER, as_version=4).cells]


def _required() -> set[str]:
    """The questions that earn points, from the master's BEGIN QUESTION cells."""
    out = set()
    for src in _master_cells():
        if src.startswith("# BEGIN QUESTION"):
            conf = dict(ln.split(":", 1) for ln in src.splitlines()[1:] if ":" in ln)
            if float(conf["points"]) > 0:
                out.add(conf["name"].strip())
    return out


def test_the_stated_time_adds_up_names_the_questions_with_points_and_the_guide_states_it():
    intro = " ".join(next(s for s in _master_cells() if s.startswith("# Lab 3")).split())
    stated = re.search(r"\*\*Time: (about (\d+) h(?: (\d+) min)?)\*\*", intro)
    steps = re.search(r"Minutes per step: (.*?): (\d+) minutes\.", intro)
    minutes = {name: int(m) for name, m in re.findall(r"([\w +,]+?) (\d+)(?:, |$)", steps[1])}
    assert sum(minutes.values()) == int(steps[2]), minutes
    assert abs(60 * int(stated[2]) + int(stated[3] or 0) - int(steps[2])) <= 5, (stated[0], steps[2])
    assert {q.lower() for step in minutes for q in re.findall(r"[QR]\d+", step)} == _required()
    guide = " ".join((ROOT / "labs" / "03-parallel-tcp" / "README.md").read_text().split())
    assert f"{stated[1]} for the notebook's required questions" in guide
