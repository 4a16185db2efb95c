"""Lab 3's checks (labs/lab3/checks.py) on right and plausibly wrong answers, without a notebook.

For every question: the solution passes the public check and the hidden one; each plausible wrong
answer fails the public check with a short message in the checker's words (at most six lines, no
source, no expected value) and fails the hidden check on an unseen draw. Values memorised from the
shipped grids and the public draw pass nothing hidden. `unseen.held_out` draws what it promises.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from mptcplab.grading import reference
from mptcplab.grading.feedback import CheckFailed
from mptcplab.labs.lab3 import analysis as la
from mptcplab.labs.lab3 import checks, models, unseen
from mptcplab.labs.lab3 import notebook as nb3


@pytest.fixture(scope="module")
def tables():
    """A slice of the reference: 24 runs, both scenarios, one to ten flows (the checks stay fast)."""
    t = reference.tables("lab3", la.load)
    runs = t["runs"].iloc[::5].reset_index(drop=True)
    keep = set(runs.run)
    return {"runs": runs, "flows": t["flows"][t["flows"].run.isin(keep)].reset_index(drop=True),
            "losses": t["losses"][t["losses"].run.isin(keep)].reset_index(drop=True)}


@pytest.fixture(scope="module")
def drawn(tables):
    """A draw as the grader makes one from a secret it alone holds."""
    inputs = unseen.held_out(tables, reference.rng(b"a secret of the test", "lab3"))
    return inputs, unseen.answers(inputs)


# ---------------------------------------------------------------- the solution and its wrong twins

def model1(n, p, rtt, T, b=1, *, printed=False, cap=True, small_w=True, w2=True, full_f=False, use_b=True,
           w_b=True, e_r=True, plr_x=False):
    b = b if use_b else 1
    a = math.sqrt(p * b * (24 * n * n + p * b * (n * n - 4 * n + 4)))
    x = (p * b * (2 - n) + a) / (6 * n * n * p)
    w = (2 if w2 else 1) * n * x / (b if w_b else 1)
    z = T * (models.f_poly(p) if full_f else 1 + 32 * p * p) / (1 - p)
    if printed:
        return models.algorithm1_as_printed(n, p, rtt, T, b)
    if w <= 3 and small_w:
        q1 = 1.0
    else:
        s = 1 - 1 / (x if plr_x else max(w, 1.0001))
        q1 = min(1.0, (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (w - 3))))
    q = q1 * z / (x * rtt)
    q = min(n, q) if cap else q
    return (1 - q / n) / (p * x * rtt) + q / (z * ((1 - p) if e_r else 1))


def model2(n, p_e, p_r, rtt, T, b=1, *, q1_cap_n=True, j_everywhere=False, j1_in_q1=False, cap=True, use_b=True,
           swapped=False, full_f=False, w_b=True, e_r=True, z_p_r=False, q1_n=True):
    if swapped:
        p_e, p_r = p_r, p_e
    b = b if use_b else 1
    j = p_r / p_e
    j1 = j if j_everywhere else min(j, n)
    a = math.sqrt(p_e * b * j1 * (24 * n * n + p_e * b * j1 * (n * n - 4 * n * j1 + 4 * j1 * j1)))
    x = (j1 * p_e * b * (2 * j1 - n) + a) / (6 * n * n * p_e)
    w = n * x / (2 * (b if w_b else 1)) * (1 + 3 * n / j1)
    p_z = p_r if z_p_r else p_e
    z = T * (models.f_poly(p_z) if full_f else 1 + 32 * p_z * p_z) / (1 - p_z)
    q1 = (j1 if j1_in_q1 else j) * (n if q1_n else 1) / w
    q1 = min(n, q1) if q1_cap_n else min(1, q1)
    q = min(n, q1 * z / (x * rtt)) if cap else q1 * z / (x * rtt)
    return (1 - q / n) / (p_e * x * rtt) + q / (z * ((1 - p_e) if e_r else 1))


def count_loss_events(times, rtt, *, sort=True, chain=False, losses=False, as_float=False, inclusive=False):
    if losses:
        return len(times)
    events, start, last = 0, -math.inf, -math.inf
    for t in (sorted(times) if sort else list(times)):
        if t >= (last if chain else start) + rtt if inclusive else t > (last if chain else start) + rtt:
            events, start = events + 1, t
        last = t
    return float(events) if as_float else events


def cumulative_rates(runs, losses, *, what="right"):
    rows = {}
    for r in runs.itertuples():
        lost = losses[losses.run == r.run]
        rtt = 0.06 if what == "fixed_rtt" else r.rtt
        if what == "per_flow":
            events = sum(count_loss_events(g.t, rtt) for _, g in lost.groupby("flow"))
        elif what == "losses":
            events = len(lost)
        else:
            events = count_loss_events(lost.t, rtt)
        rows[r.run] = {"p_e": events / r.packets, "p_r": len(lost) / r.packets * (100 if what == "percent" else 1)}
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["p_e", "p_r"]).rename_axis("run")
    if what == "lossy_only":
        return out[out.p_r > 0].replace(0, np.nan)
    if what == "range_index":
        return out.reset_index(drop=True)
    return out


def per_flow_rate(runs, flows, losses, *, what="right"):
    p = {}
    for r in runs.itertuples():
        lost, fl = losses[losses.run == r.run], flows[flows.run == r.run]
        if what == "cumulative":
            p[r.run] = count_loss_events(lost.t, r.rtt) / r.packets
        elif what == "flow_packets":
            p[r.run] = sum(count_loss_events(lost[lost.flow == f.flow].t, f.rtt) / f.packets for f in fl.itertuples())
        elif what == "port_only":  # the walkthrough's: every run's losses on the flow's port
            p[r.run] = sum(count_loss_events(losses[losses.flow == f.flow].t, f.rtt) for f in fl.itertuples()) / r.packets
        else:
            p[r.run] = sum(count_loss_events(lost[lost.flow == f.flow].t, r.rtt if what == "run_rtt" else f.rtt)
                           for f in fl.itertuples()) / r.packets
    return pd.Series(p, name="p", dtype=float).rename_axis("run")


def compare(runs, *, m1=model1, m2=model2, b="model_b", measured="pps", swap=False, err="right", all_runs=False,
            index=True):
    """all_runs: True keeps the runs without a loss (NaN predictions), "computed" feeds them to the models too."""
    rows = []
    for r in (runs if all_runs else runs[runs.p > 0]).itertuples():
        bb, pps = getattr(r, b), getattr(r, measured)
        skip = r.p <= 0 and all_runs != "computed"  # p = 0: plain floats divide by zero in the models
        v1 = np.nan if skip else m1(r.n, float(r.p_e if swap else r.p), r.rtt, r.T, bb)
        v2 = np.nan if skip else m2(r.n, float(r.p_e), float(r.p_r), r.rtt, r.T, bb)
        e1, e2 = ((pps / v1 - 1, pps / v2 - 1) if err == "inverted" else
                  (100 * (v1 / pps - 1), 100 * (v2 / pps - 1)) if err == "percent" else (v1 / pps - 1, v2 / pps - 1))
        rows.append({"run": r.run, "measured": pps, "model1": v1, "model2": v2, "err1": e1, "err2": e2})
    return pd.DataFrame(rows).set_index("run") if index else pd.DataFrame(rows)


def in_scope(runs, *, queued=True, strict=False, lossless=False, column="loss", as_list=False, rule=False,
             droptail=True):
    loss = runs[column]
    ok = (loss < 0.02) if strict else (loss <= 0.02 + 1e-12)
    if not droptail:
        ok &= runs.scenario == "random"
    if not lossless:
        ok &= runs.p > 0
    if rule:  # the random-loss half of `queued` recomputed: the question says to use the column
        ok &= ~((runs.scenario == "random") & (runs.rtt > 1.25 * runs.base_rtt))
    elif queued:
        ok &= ~runs.queued.astype(bool)
    if as_list:
        return list(runs.run[ok])
    return pd.Series(ok.to_numpy(), index=runs.run)


def _partial(f, **kw):
    def call(*args):
        return f(*args, **kw)
    return call


WRONG = {
    "q1": {"Algorithm 1 as printed": _partial(model1, printed=True), "q not capped at n": _partial(model1, cap=False),
           "no w <= 3 case": _partial(model1, small_w=False), "w = n x / b": _partial(model1, w2=False),
           "z with the full f(p)": _partial(model1, full_f=True), "b ignored": _partial(model1, use_b=False),
           "per flow, not the aggregate": lambda n, p, rtt, T, b=1: model1(n, p, rtt, T, b) / n,
           "w = 2 n x, b left out": _partial(model1, w_b=False),
           "the timeout term without E[R]": _partial(model1, e_r=False),
           "p_lr = 1/x for 1/w": _partial(model1, plr_x=True),
           "Mbit/s, not packets/s": lambda n, p, rtt, T, b=1: model1(n, p, rtt, T, b) * 1448 * 8 / 1e6},
    "q2": {"q1 capped at 1": _partial(model2, q1_cap_n=False), "j for j1": _partial(model2, j_everywhere=True),
           "j1 in q1": _partial(model2, j1_in_q1=True), "q not capped": _partial(model2, cap=False),
           "p_e and p_r swapped": _partial(model2, swapped=True), "b ignored": _partial(model2, use_b=False),
           "z with the full f(p)": _partial(model2, full_f=True), "w without b": _partial(model2, w_b=False),
           "the timeout term without E[R]": _partial(model2, e_r=False), "p_r in z": _partial(model2, z_p_r=True),
           "q1 without n": _partial(model2, q1_n=False),
           "Mbit/s, not packets/s": lambda n, p_e, p_r, rtt, T, b=1: model2(n, p_e, p_r, rtt, T, b) * 1448 * 8 / 1e6},
    "q3": {"unsorted": _partial(count_loss_events, sort=False), "gap from the previous loss": _partial(count_loss_events, chain=True),
           "lost packets": _partial(count_loss_events, losses=True), "a float": _partial(count_loss_events, as_float=True),
           ">= for >": _partial(count_loss_events, inclusive=True)},
    "q4": {"packets for events": _partial(cumulative_rates, what="losses"),
           "events flow by flow": _partial(cumulative_rates, what="per_flow"),
           "a fixed 60 ms RTT": _partial(cumulative_rates, what="fixed_rtt"),
           "p_r in percent": _partial(cumulative_rates, what="percent"),
           "runs without losses left out": _partial(cumulative_rates, what="lossy_only"),
           "not indexed by run": _partial(cumulative_rates, what="range_index"),
           "the shipped columns copied": lambda runs, losses: runs.set_index("run")[["p_e", "p_r"]]},
    "q5": {"all the run's losses together": _partial(per_flow_rate, what="cumulative"),
           "the run's RTT": _partial(per_flow_rate, what="run_rtt"),
           "each flow's packets": _partial(per_flow_rate, what="flow_packets"),
           "losses matched by port alone": _partial(per_flow_rate, what="port_only"),
           "the shipped column copied": lambda runs, flows, losses: runs.set_index("run").p},
    "q6": {"b, the measured ACK ratio": _partial(compare, b="b"), "p_e into model 1": _partial(compare, swap=True),
           "measured / model - 1": _partial(compare, err="inverted"), "errors in percent": _partial(compare, err="percent"),
           "goodput for measured": _partial(compare, measured="goodput_pps"),
           "runs without losses kept": _partial(compare, all_runs=True),
           "runs without losses fed to the models": _partial(compare, all_runs="computed"),
           "a wrong model 1 (Q1)": _partial(compare, m1=_partial(model1, printed=True)),
           "run a column, not the index": _partial(compare, index=False),
           "an answer column read": lambda runs: compare(runs).assign(model1=runs.set_index("run")["model1"]),
           "code that raises (T as text)": lambda runs: compare(runs.assign(T=runs["T"].astype(str)))},
    "q7": {"queued runs kept": _partial(in_scope, queued=False), "2 % left out": _partial(in_scope, strict=True),
           "runs without losses kept": _partial(in_scope, lossless=True), "p_r for loss": _partial(in_scope, column="p_r"),
           "a list of runs": _partial(in_scope, as_list=True),
           "`queued` recomputed from the RTT": _partial(in_scope, rule=True),
           "DropTail runs left out": _partial(in_scope, droptail=False)},
}
RIGHT = {"q1": model1, "q2": model2, "q3": count_loss_events, "q4": cumulative_rates, "q5": per_flow_rate,
         "q6": compare, "q7": in_scope}


def public(q: str, func, t: dict) -> None:
    args = {"q4": (t["runs"], t["losses"]), "q5": (t["runs"], t["flows"], t["losses"]), "q6": (t["runs"],),
            "q7": (t["runs"],)}.get(q, ())
    getattr(checks, q)(func, *args)


def hidden(q: str, func, drawn) -> None:
    inputs, answers = drawn
    getattr(checks, f"graded_{q}")(func, inputs, answers[q])


@pytest.mark.parametrize("q", sorted(RIGHT))
def test_the_solution_passes_public_and_hidden(q, tables, drawn):
    public(q, RIGHT[q], tables)
    hidden(q, RIGHT[q], drawn)


def _shown_values(q: str) -> list[float]:
    """The kit's values a public message must not print (the grids' and the public draw's)."""
    if q == "q1":
        return nb3.model1_reference() + [models.parallel_per_flow(*pt) for pt in unseen.grid1(checks._public())]
    if q == "q2":
        return nb3.model2_reference() + [models.parallel_cumulative(*pt) for pt in unseen.grid2(checks._public())]
    return []


CASES = [(q, name) for q in sorted(WRONG) for name in WRONG[q]]


@pytest.mark.parametrize("q,name", CASES, ids=[f"{q}-{n}" for q, n in CASES])
def test_each_wrong_answer_fails_public_check_briefly_and_hidden_check(q, name, tables, drawn):
    with pytest.raises(CheckFailed) as failed:
        public(q, WRONG[q][name], tables)
    msg = str(failed.value)
    assert 0 < len(msg.splitlines()) <= 6 and len(msg) <= 650, msg
    assert "def " not in msg and "expect(" not in msg and "Traceback" not in msg, msg
    flat = " ".join(msg.split())
    assert not re.search(r"(?<!\.)\.\.(?!\.)| \.(?!\.)| [,;:]|\b1 (runs|rows)\b", flat), flat  # "..", "runs .", "1 runs"
    for v in _shown_values(q):
        assert f"{v:.4g}" not in msg, (v, msg)
    with pytest.raises(Exception):
        hidden(q, WRONG[q][name], drawn)


HINTS = {  # (question, wrong answer) -> what its public message must say: the cause, not another one
    ("q1", "Algorithm 1 as printed"): "Algorithm 1's q1 line as printed",
    ("q1", "z with the full f(p)"): "keep z = T (1 + 32 p^2) / (1 - p)",
    ("q1", "q not capped at n"): "q must be capped at n",
    ("q1", "no w <= 3 case"): "below 3",
    ("q1", "b ignored"): "check where b appears",
    ("q1", "w = 2 n x, b left out"): "check where b appears",
    ("q1", "the timeout term without E[R]"): "E[R] = 1 / (1 - p)",
    ("q1", "per flow, not the aggregate"): "check where n appears",
    ("q1", "p_lr = 1/x for 1/w"): "p_lr = 1/w with w = E[W_f]",
    ("q1", "Mbit/s, not packets/s"): "the models give packets per second",
    ("q2", "Mbit/s, not packets/s"): "the models give packets per second",
    ("q2", "q1 capped at 1"): "capped q1 at 1",
    ("q2", "z with the full f(p)"): "keep z = T (1 + 32 p^2) / (1 - p)",
    ("q2", "j for j1"): "Use j1 = min(j, n) in a, x and w",
    ("q2", "j1 in q1"): "Use j1 = min(j, n) in a, x and w (no more than n flows can be hit), but the uncapped j in q1",
    ("q2", "q not capped"): "q must be capped at n",
    ("q2", "b ignored"): "check where b appears",
    ("q2", "w without b"): "check where b appears",
    ("q2", "the timeout term without E[R]"): "E[R] = 1 / (1 - p_e)",
    ("q2", "p_r in z"): "not the packet loss rate p_r",
    ("q2", "q1 without n"): "its q1 included",
    ("q3", "unsorted"): "sort them first",
    ("q3", ">= for >"): "not >=",
    ("q4", "packets for events"): "not lost packets",
    ("q4", "events flow by flow"): "each flow's events apart",
    ("q4", "runs without losses left out"): "a run without a single loss has a rate of 0",
    ("q5", "the run's RTT"): "that flow's rtt",
    ("q5", "each flow's packets"): "not each flow's",
    ("q5", "losses matched by port alone"): "losses matched to flows of another run: a port is unique only within a run",
    ("q6", "b, the measured ACK ratio"): "model_b",
    ("q6", "measured / model - 1"): "measured / model - 1",
    ("q6", "runs without losses fed to the models"): "no loss (p = 0): the models divide by p",
    ("q6", "run a column, not the index"): "set_index('run')",
    ("q6", "an answer column read"): "compute, do not copy",
    ("q6", "code that raises (T as text)"): "Call it on a few rows of your own table",
    ("q7", "queued runs kept"): "`queued` column",
    ("q7", "2 % left out"): "exactly 2 %",
    ("q7", "`queued` recomputed from the RTT"): "`queued` column",
    ("q7", "p_r for loss"): "not the measured p_r",
    ("q7", "DropTail runs left out"): "DropTail runs are in too",
}


@pytest.mark.parametrize("q,name", sorted(HINTS), ids=[f"{q}-{n}" for q, n in sorted(HINTS)])
def test_public_hints_name_the_mistake(q, name, tables):
    with pytest.raises(CheckFailed) as failed:
        public(q, WRONG[q][name], tables)
    said = " ".join(str(failed.value).split())
    assert HINTS[q, name] in said, said
    # and not the other causes the walkthroughs of 28 and 29 Nov were shown for these
    for other in ("capped at n", "j1 = min(j, n)", "compute, do not copy", "below 3", "where b appears",
                  "E[R] = 1 /", "DropTail runs are in too"):
        if other not in HINTS[q, name]:
            assert other not in said, said


def test_memorised_answers_pass_nothing_hidden(tables, drawn):
    """A lookup table of every value the student could compute at home (the grids, the public draw,
    the shipped tables' columns) earns no hidden point."""
    known = {pt: models.parallel_per_flow(*pt) for pt in nb3.GRID1 + unseen.grid1(checks._public())}
    with pytest.raises(Exception):
        hidden("q1", lambda *pt: known[pt], drawn)
    known2 = {pt: models.parallel_cumulative(*pt) for pt in nb3.GRID2 + unseen.grid2(checks._public())}
    with pytest.raises(Exception):
        hidden("q2", lambda *pt: known2[pt], drawn)
    with pytest.raises(Exception):
        hidden("q4", WRONG["q4"]["the shipped columns copied"], drawn)
    with pytest.raises(Exception):
        hidden("q5", WRONG["q5"]["the shipped column copied"], drawn)


def test_held_out_draws_every_case_the_public_checks_try(tables):
    a = unseen.held_out(tables, np.random.default_rng(1))
    b = unseen.held_out(tables, np.random.default_rng(2))
    assert a["grid1"] != b["grid1"] and not a["runs"].equals(b["runs"])
    for name in ("runs", "flows"):
        assert not set(unseen.RATE_COLUMNS + unseen.PREDICTION_COLUMNS) & set(a[name].columns)
    assert not set(unseen.PREDICTION_COLUMNS) & set(a["compare_runs"].columns)
    terms = [models.per_flow_terms(*pt) for pt in a["grid1"]]
    assert any(float(t["w"]) <= 3 for t in terms) and any(float(t["q"]) >= n for t, (n, *_) in zip(terms, a["grid1"]))
    assert any(p_r / p_e > n for n, p_e, p_r, *_ in a["grid2"])
    assert any(times != sorted(times) for times, _ in a["loss_cases"])
    # a port names a flow within its run only: runs share ports, as the kernel's ephemeral ports do
    assert not a["flows"].duplicated(["run", "flow"]).any() and (a["flows"].groupby("flow").run.nunique() > 1).any()
    assert set(zip(a["losses"].run, a["losses"].flow)) <= set(zip(a["flows"].run, a["flows"].flow))
    assert any(any(t == min(times) + rtt for t in times) for times, rtt in a["loss_cases"] if times)
    scope = a["scope_runs"]
    assert scope.queued.any() and (scope["loss"] == 0.02).any() and (scope.p == 0).any()
    assert (a["compare_runs"].p == 0).any() and set(a["compare_runs"].model_b) == {1.0, 2.0}
    answers = unseen.answers(a)
    assert sorted(answers) == [f"q{i}" for i in range(1, 8)]
    assert 0 < len(answers["q7"]) < len(scope)


@pytest.mark.parametrize("q", sorted(RIGHT))
def test_an_unfilled_answer_is_told_to_implement_it(q, tables):
    """The handed-out stubs return None: each public check says so in a line or two."""
    with pytest.raises(CheckFailed) as failed:
        public(q, lambda *args: None, tables)
    msg = " ".join(str(failed.value).split())
    assert len(str(failed.value).splitlines()) <= 2 and ("returned nothing (None)" in msg or "returned NoneType" in msg), msg


def test_q7_asks_for_the_column_the_check_grades_by():
    """The check's own runs mark `queued` at random (not by the RTT rule the question describes), so
    the question must tell the student to use the column as given."""
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[2] / "solutions" / "03-parallel-tcp.ipynb").read_text())
    q7 = next("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("**Q7.**"))
    assert "use the `queued` column as given" in " ".join(q7.split())


def test_q7_a_run_the_column_leaves_in_is_in_whatever_its_rtt(tables):
    runs = tables["runs"].copy()
    hit = runs.index[(runs.scenario == "random") & (runs.p > 0) & (runs["loss"] <= 0.02) & ~runs.queued.astype(bool)][0]
    runs.loc[hit, "rtt"] = 2 * runs.loc[hit, "base_rtt"]  # above the rule's 1.25 x, not marked
    checks.q7(in_scope, runs)
    with pytest.raises(CheckFailed) as failed:
        checks.q7(WRONG["q7"]["`queued` recomputed from the RTT"], runs)
    assert "does not mark is in, whatever its RTT" in " ".join(str(failed.value).split())
