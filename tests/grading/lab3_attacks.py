"""Crafted Lab 3 submissions (issue 26), built at test time from the notebook as handed out and
the master's solution, so they follow the notebook when its cells change.

Each attack is a cell (or cells) added to the unfilled notebook (it must score 0 whatever the
cells do) or, where the attack must not cost work already done, to the solution (it keeps
20/20). `EXPECTED` holds every score; `HOLD_S` is how long the neighbour attacks hold what they
took, long enough to overlap the correct notebooks graded beside them.
"""

from __future__ import annotations

import copy

import nbformat

HOLD_S = 45

# Neighbour attacks: each takes everything its limits allow and holds it while the others run.
FORK_BOMB = f"""
import os, time
_end, _top = time.time() + {HOLD_S}, os.getpid()
while time.time() < _end:  # every process forks until the limit says no, then keeps trying
    try:
        os.fork()
    except OSError:
        time.sleep(0.05)
if os.getpid() != _top:
    os._exit(0)
"""
THREAD_HOARDER = f"""
import threading, time
threading.stack_size(64 * 1024)
_stop, _held = threading.Event(), []
while True:  # idle threads, no CPU: only the count of tasks
    try:
        _t = threading.Thread(target=_stop.wait, daemon=True)
        _t.start()
        _held.append(_t)
    except RuntimeError:
        break
print("threads held:", len(_held))
time.sleep({HOLD_S})
_stop.set()
"""
MEMORY_HOG = f"""
import subprocess, sys
_kids = [subprocess.Popen([sys.executable, "-c", "b = bytearray(900 << 20); b[::4096] = b'x' * len(b[::4096]); "
                           "import time; time.sleep({HOLD_S})"]) for _ in range(6)]
[k.wait() for k in _kids]
"""

# Builtins a check calls, redefined by the student to pass or to read what they are given.
SHADOW = """
def abs(x, *a, **k): return 0
def isinstance(*a, **k): return True
def all(*a, **k): return True
def len(*a, **k): return 0
def zip(*a, **k): raise ValueError("STOLEN " + repr(a))
def set(*a, **k): raise ValueError("STOLEN " + repr(a))
def sorted(*a, **k): raise ValueError("STOLEN " + repr(a))
"""
# The ones that would pass tolerance and type checks, after a solution's answers: its own
# functions (called again by the checks) use none of them, so nothing changes for them.
SHADOW_PASSING = """
def abs(x, *a, **k): return 0
def isinstance(*a, **k): return True
def all(*a, **k): return True
"""
# Reference inputs emptied, answered by functions that return empty frames (the notebook's names:
# q1 model1, q2 model2, q3 count_loss_events, q4 cumulative_rates, q5 per_flow_rate, q6 compare,
# q7 in_scope).
POISON_UNFILLED = """
runs, flows, losses = runs.iloc[:0], flows.iloc[:0], losses.iloc[:0]
def cumulative_rates(runs, losses): return pd.DataFrame(columns=["p_e", "p_r"])
def per_flow_rate(runs, flows, losses): return pd.Series(dtype=float)
def compare(runs): return pd.DataFrame(columns=["measured", "model1", "model2", "err1", "err2"])
def in_scope(runs): return pd.Series(dtype=bool)
"""
POISON_AFTER = """
runs, flows, losses = runs.iloc[:0], flows.iloc[:0], losses.iloc[:0]
"""
# Functions that return zeros of the right shape, indexed as asked.
SHAPE_ONLY = """
def model1(n, p, rtt, T, b=1): return 0.0
def model2(n, p_e, p_r, rtt, T, b=1): return 0.0
def count_loss_events(times, rtt): return 0
def cumulative_rates(runs, losses):
    return pd.DataFrame(0.0, index=pd.Index(runs.run, name="run"), columns=["p_e", "p_r"])
def per_flow_rate(runs, flows, losses): return pd.Series(0.0, index=pd.Index(runs.run, name="run"))
def compare(runs):
    return pd.DataFrame(0.0, index=pd.Index(runs.run, name="run"), columns=["measured", "model1", "model2", "err1", "err2"])
def in_scope(runs): return pd.Series(True, index=pd.Index(runs.run, name="run"))
"""
# The shipped tables' loss-rate columns as the answers to Q4 and Q5 (unseen inputs have none).
SHIPPED = """
def cumulative_rates(runs, losses):
    return runs.set_index("run")[["p_e", "p_r"]]


def per_flow_rate(runs, flows, losses):
    return runs.set_index("run")["p"]
"""
# Q5 as a student wrote it (walkthrough 2 of Lab 3): each flow's losses found by port alone, so the
# losses of another run that used the same port count too. It once earned Q5's points; on draws whose
# runs share ports it must earn none, and the rest of the solution keeps its own.
PORT_ONLY = """
def per_flow_rate(runs, flows, losses):
    p = {}
    for _, r in runs.iterrows():
        events = 0
        for _, f in flows[flows.run == r.run].iterrows():
            events += count_loss_events(losses.loc[losses.flow == f.flow, "t"].tolist(), f.rtt)
        p[r.run] = events / r.packets
    return pd.Series(p, name="p").rename_axis("run")
"""
# Functions named as the checks call them, each raising whatever it is given, so that every
# failure message is built.
EXFILTRATE = SHADOW + """
def _stolen(*a, **k):
    raise ValueError("STOLEN " + repr(a)[:5000])


model1 = model2 = count_loss_events = cumulative_rates = per_flow_rate = compare = in_scope = _stolen
"""
FILL_TMP = """
_i = 0
try:
    while True:
        with open(f"/tmp/fill{_i}", "wb") as _f:
            _f.write(b"x" * (32 << 20))
        _i += 1
except OSError as _e:
    print("/tmp full after", _i, "files:", type(_e).__name__)
"""
KERNEL_OOM = """
import numpy as _np
_big = []
while True:  # touched pages, 256 MiB at a time, until the tree's memory limit kills the kernel
    _big.append(_np.ones(256 << 20, dtype=_np.uint8))
"""


def oversized(nb):
    """A notebook whose file is over the grader's cap (set to 8 MiB by the test)."""
    nb = copy.deepcopy(nb)
    nb.cells.append(nbformat.v4.new_markdown_cell("padding " + "x" * (12 << 20)))
    return nb


def _first_code_after_init(nb) -> int:
    """Index after Otter's init cell and the notebook's imports (the first two code cells)."""
    seen = 0
    for i, c in enumerate(nb.cells):
        if c.cell_type == "code":
            seen += 1
            if seen == 2:
                return i + 1
    return len(nb.cells)


def with_cells(nb, source: str, at: str):
    nb = copy.deepcopy(nb)
    cell = nbformat.v4.new_code_cell(source)
    if at == "start":
        nb.cells.insert(_first_code_after_init(nb), cell)
    else:
        nb.cells.append(cell)
    return nb


def build(unfilled, solution) -> dict[str, nbformat.NotebookNode]:
    """name -> notebook, for every crafted Lab 3 submission."""
    return {
        "solution_a": solution, "solution_b": solution, "solution_c": solution,
        "fork_bomb": with_cells(unfilled, FORK_BOMB, "start"),
        "thread_hoarder": with_cells(unfilled, THREAD_HOARDER, "start"),
        "memory_hog": with_cells(unfilled, MEMORY_HOG, "start"),
        "unfilled": unfilled,
        "shadow_unfilled": with_cells(unfilled, SHADOW, "end"),
        "shadow_solution": with_cells(solution, SHADOW_PASSING, "end"),
        "poison_unfilled": with_cells(unfilled, POISON_UNFILLED, "end"),
        "poison_solution": with_cells(solution, POISON_AFTER, "end"),
        "shape_only": with_cells(unfilled, SHAPE_ONLY, "end"),
        "shipped_data": with_cells(unfilled, SHIPPED, "end"),
        "port_only": with_cells(solution, PORT_ONLY, "end"),
        "exfiltrate": with_cells(unfilled, EXFILTRATE, "end"),
        "fill_tmp": with_cells(solution, FILL_TMP, "end"),
        "kernel_oom": with_cells(solution, KERNEL_OOM, "end"),
        "oversized": oversized(solution),
    }
