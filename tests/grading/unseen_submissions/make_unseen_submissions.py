"""Crafted submissions for issue 40's first two classes, one of each per lab:

- `memorised`: no implementation, only answers computed at home with the open kit. Every function
  a check calls returns, in order, what the master's own solution returned in a whole check run
  (public and hidden, as the grader runs it) on a draw from a secret the student chose (HOME);
  every value a check reads is the solution's. With the instructor's secret the draws differ.
- `kit_calls`: every graded function is a call into the kit's own analysis (`KIT_CALLS`, per lab),
  which earns every hidden point where the kit is real (`proof`), and nothing where it is graded.

Both are the lab's student notebook with one cell appended that defines these names (the runner
keeps the last binding). `python make_unseen_submissions.py OUT_DIR [LAB...]` writes them;
tests/grading/test_unseen_submissions.py builds them afresh from the current masters.
"""

from __future__ import annotations

import base64
import contextlib
import os
import pickle
import sys
from pathlib import Path

import nbformat

from mptcplab.grading import autograder, checker, reference
from mptcplab.run.lab import all_labs

HOME = b"a secret a student made up at home"

# Each graded function as a student who calls the kit would write it (from the lab's unseen.answers);
# one of Lab 3's calls the kit from a child process. A function the kit has no counterpart for (Lab 2's
# cs218_vs_lia and clearly_better: arithmetic on the student's own table) stays as handed out.
KIT_CALLS = {
    "lab2": '''
from mptcplab.labs.lab2 import analysis, ccref

def my_cs218_increase(lia_inc, ack_count, best_rtt, last_rtt):
    return ccref.cs218_increase(lia_inc, ack_count, best_rtt, last_rtt)

def my_throughput_table(tp):
    return analysis.throughput_table(tp)[["algo", "variant", "mean_mbps", "ci95_mbps", "runs"]]

def tcp_share(fair):
    f = analysis.fairness_table(fair)
    return dict(zip(f.algo, f.tcp_share_of_shared.astype(float)))

def harmless(fair):
    v = analysis.fairness_table(fair)
    return set(v[v.verdict == "leaves TCP more than uncoupled"].algo)
''',
    "lab1": "from mptcplab.labs.lab1 import unseen as kit\n" + "".join(
        f"\ndef {name}(*args, **kwargs):\n    return kit.{name}(*args, **kwargs)\n"
        for name in ("mean_goodput", "degraded_buffers", "bytes_per_path", "dsn_span", "blocked_share", "dss_row",
                     "mptcp_sndbuf", "left_for_fast", "starvation", "below_tcp")),
    "lab3": '''
import pandas as pd
from mptcplab.labs.lab3 import analysis, measure, models

def model1(n, p, rtt, T, b):
    return models.parallel_per_flow(n, p, rtt, T, b)

def model2(n, p_e, p_r, rtt, T, b):
    return models.parallel_cumulative(n, p_e, p_r, rtt, T, b)

def count_loss_events(times, rtt):
    return len(measure.group_loss_events(times, rtt))

def cumulative_rates(runs, losses):
    rows = {}
    for r in runs.itertuples():
        lost = losses[losses.run == r.run]
        rows[r.run] = {"p_e": len(measure.group_loss_events(lost.t, r.rtt)) / r.packets, "p_r": len(lost) / r.packets}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("run")

def per_flow_rate(runs, flows, losses):
    out = {}
    for r in runs.itertuples():
        lost = losses[losses.run == r.run]
        out[r.run] = sum(len(measure.group_loss_events(lost[lost.flow == f.flow].t, f.rtt))
                         for f in flows[flows.run == r.run].itertuples()) / r.packets
    return pd.Series(out, name="p").rename_axis("run")

def compare(runs):
    c = runs[runs.p > 0]
    b = c.model_b.astype(float)
    out = pd.DataFrame({"measured": c.pps.to_numpy(),
                        "model1": list(models.parallel_per_flow(c.n, c.p, c.rtt, c["T"], b)),
                        "model2": list(models.parallel_cumulative(c.n, c.p_e, c.p_r, c.rtt, c["T"], b))},
                       index=pd.Index(c.run, name="run"))
    out["err1"] = out.model1 / out.measured - 1
    out["err2"] = out.model2 / out.measured - 1
    return out

def in_scope(runs):  # in a child process: the kit is hidden there too
    import pickle, subprocess, sys
    code = ("import pickle, sys\\nfrom mptcplab.labs.lab3 import analysis\\nruns = pickle.load(sys.stdin.buffer)\\n"
            "keep = set(analysis.graded_runs(runs).run)\\npickle.dump([r in keep for r in runs.run], sys.stdout.buffer)")
    out = subprocess.run([sys.executable, "-c", code], input=pickle.dumps(runs), capture_output=True, check=True)
    return pd.Series(pickle.loads(out.stdout), index=pd.Index(runs.run, name="run"))
''',
}


def _code_cells(nb) -> list[str]:
    """The solution's code, as plain Python: no Otter, no checks, no shell or magics."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code" or "otter.Notebook" in cell.source:
            continue
        lines = [ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!", "grader."))]
        out.append("\n".join(lines))
    return out


_SOLUTIONS: dict[Path, dict] = {}


def solution_namespace(ag: autograder.Autograder) -> dict:
    """The master's solution run in this process (the real kit), from the notebooks' folder, on the
    reference results (as when graded). Cached: callers must not change it."""
    if ag.zip_path in _SOLUTIONS:
        return _SOLUTIONS[ag.zip_path]
    nb = nbformat.read(ag.zip_path.parent / ag.master.name, as_version=4)
    ns: dict = {"__name__": "__main__", "display": lambda *a, **k: None}  # IPython's, which a notebook has
    cwd = os.getcwd()
    os.chdir(autograder.NOTEBOOKS)
    lab = next(lab.id for lab in all_labs().values() if lab.slug == ag.stem)
    override = f"MPTCPLAB_{lab.upper()}_RESULTS"  # the reference, as when graded (not a run of this machine)
    before = os.environ.get(override)
    os.environ[override] = str(reference.results(lab))
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            for src in _code_cells(nb):
                exec(compile(src, "<solution>", "exec"), ns)
    finally:
        os.chdir(cwd)
        if before is None:
            os.environ.pop(override)
        else:
            os.environ[override] = before
    _SOLUTIONS[ag.zip_path] = ns
    return ns


def read_names(tests: dict[str, str]) -> set[str]:
    return set().union(*(checker.names_read(checker.test_file(src, q)) for q, src in tests.items()))


def check_run(tests: dict[str, str], env: dict, lab: str, secret: bytes) -> list[dict]:
    """checker.check as the grader runs it, on `env`, with the lab's draw from `secret` (in this process)."""
    reference.provide({lab: reference.draw(lab, secret)})
    try:
        return checker.check(tests, env)
    finally:
        reference.provide({})


def memorised_cell(ag: autograder.Autograder, lab: str) -> tuple[str, list[dict]]:
    """The appended cell, and the check run it was recorded from (the solution on the HOME draw)."""
    tests = ag.tests()
    ns = solution_namespace(ag)
    names = sorted(n for n in read_names(tests) if n in ns)
    calls: dict[str, list] = {n: [] for n in names if callable(ns[n])}

    def recorder(name):
        def call(*args, **kwargs):
            out = ns[name](*args, **kwargs)
            calls[name].append(out)
            return out
        return call

    env = {n: recorder(n) if n in calls else ns[n] for n in names}
    run = check_run(tests, env, lab, HOME)
    memo = {"calls": calls, "values": {n: ns[n] for n in names if n not in calls}}
    blob = base64.b64encode(pickle.dumps(memo, protocol=4)).decode()
    lines = ["# Answers computed at home with the kit, no implementation (issue 40, class 1).",
             "import base64, pickle", f"MEMO = pickle.loads(base64.b64decode({blob!r}))",
             "def memorised(name):",
             "    seq, i = MEMO['calls'][name], [0]",
             "    def f(*args, **kwargs):",
             "        i[0] += 1",
             "        return seq[min(i[0], len(seq)) - 1]",
             "    f.__name__ = name",
             "    return f",
             "globals().update(MEMO['values'])"]
    lines += [f"{n} = memorised({n!r})" for n in calls]
    return "\n".join(lines) + "\n", run


def kit_calls_proof(ag: autograder.Autograder, lab: str, secret: bytes = HOME) -> list[dict]:
    """The kit-calling functions checked where the kit is real: what they would earn unhidden."""
    ns: dict = {"__name__": "__main__"}
    exec(KIT_CALLS[lab], ns)
    tests = ag.tests()
    sol = solution_namespace(ag)
    env = {n: ns[n] if n in ns else sol[n] for n in read_names(tests) if n in ns or n in sol}
    return check_run(tests, env, lab, secret)


def appended(ag: autograder.Autograder, source: str):
    nb = nbformat.read(ag.student_notebook, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


def main(argv: list[str]) -> int:
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    labs = argv[1:] or sorted(KIT_CALLS)
    for lab in labs:
        ag = autograder.autograder_for(autograder.find_master(lab))
        cell, _ = memorised_cell(ag, lab)
        nbformat.write(appended(ag, cell), out / f"{lab}_memorised.ipynb")
        nbformat.write(appended(ag, KIT_CALLS[lab]), out / f"{lab}_kit_calls.ipynb")
        print(f"{lab}: {out}/{lab}_memorised.ipynb, {out}/{lab}_kit_calls.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
