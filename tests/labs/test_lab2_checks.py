"""Lab 2's public checks (labs/lab2/checks.py): the right answer passes; every plausible wrong
answer fails with a short message in the checker's words that shows neither its source nor a
graded value. And the graded checks, on the grader's unseen inputs, tell the right answer from
the wrong ones the public checks let through."""

import inspect
import math
import re

import pandas as pd
import pytest

from mptcplab.judge import stats
from mptcplab.grading import reference
from mptcplab.grading.feedback import CheckFailed
from mptcplab.labs.lab2 import analysis as la
from mptcplab.labs.lab2 import ccref, checks, unseen

REF = la.load(reference.results("lab2"))
TP, FAIR = REF["throughput"], REF["fairness"]


# Lines of the checks' code long enough to recognise, for "the message quotes no source".
SOURCE = {ln.strip() for ln in inspect.getsource(checks).splitlines() if len(ln.strip()) > 24}


def fails(check, *args) -> str:
    """The check's failure message; asserts it is short and quotes no code."""
    with pytest.raises(CheckFailed) as err:
        check(*args)
    msg = str(err.value)
    assert len(msg.splitlines()) <= 6, msg
    assert "Traceback" not in msg and not any(ln in msg for ln in SOURCE), msg
    return msg


# ---------------------------------------------------------------- Q1

def cs218(lia_inc, ack_count, best_rtt, last_rtt):
    return lia_inc + (lia_inc * best_rtt / last_rtt if ack_count > 5 else 0.0)


Q1_WRONG = {
    "returns nothing": lambda l, n, b, r: None,
    "from the 5th packet (>= 5)": lambda l, n, b, r: l + (l * b / r if n >= 5 else 0.0),
    "from the 7th packet (> 6)": lambda l, n, b, r: l + (l * b / r if n > 6 else 0.0),
    "ratio inverted (last / best)": lambda l, n, b, r: l + (l * r / b if n > 5 else 0.0),
    "DWND without lia_inc (best / last)": lambda l, n, b, r: l + (b / r if n > 5 else 0.0),
    "DWND alone": lambda l, n, b, r: l * b / r if n > 5 else l,
    "DWND alone, 0 before it": lambda l, n, b, r: l * b / r if n > 5 else 0.0,
    "DWND = lia_inc (ratio forgotten)": lambda l, n, b, r: l + (l if n > 5 else 0.0),
    "no delay window at all": lambda l, n, b, r: l,
    "raises": lambda l, n, b, r: 1 / 0,
}


def test_q1_right_passes():
    checks.q1(cs218)


@pytest.mark.parametrize("wrong", Q1_WRONG, ids=list(Q1_WRONG))
def test_q1_wrong_fails(wrong):
    fails(checks.q1, Q1_WRONG[wrong])


@pytest.mark.parametrize("wrong, named", [
    ("from the 5th packet (>= 5)", "not >= 5"),
    ("from the 7th packet (> 6)", "not > 6"),
    ("ratio inverted (last / best)", "the ratio is inverted"),
    ("DWND without lia_inc (best / last)", "best_rtt / last_rtt without lia_inc"),
    ("DWND alone", "you return the delay window alone"),
    ("DWND alone, 0 before it", "the increase is LIA's own"),
    ("DWND = lia_inc (ratio forgotten)", "you add lia_inc itself as the window"),
    ("no delay window at all", "the delay window is never added"),
])
def test_q1_names_the_mistake_made(wrong, named):
    """Each wrong rule meets first the case whose message names it (walkthrough 2, 2026-11-28: the
    delay window returned alone, `lia_inc +` forgotten, was told "> 5, not > 6", because the first
    case past the threshold had best RTT = last RTT, where the window equals lia_inc)."""
    msg = fails(checks.q1, Q1_WRONG[wrong])
    assert named in msg, msg
    assert ("not > 6" in msg) == (wrong == "from the 7th packet (> 6)"), msg


def test_q1_returning_nothing_before_the_window_names_the_input():
    """No `else`: None for ack_count <= 5. The message says on which input (walkthrough 3)."""
    msg = fails(checks.q1, lambda l, n, b, r: l + l * b / r if n > 5 else None)
    assert "with ack_count = 0 it returned NoneType" in msg and "every branch" in msg, msg


@pytest.mark.parametrize("check, name", [(lambda: checks.q1(None), "my_cs218_increase"),
                                         (lambda: checks.q2(None), "sim_ratio"),
                                         (lambda: checks.q4(None, None, TP), "my_throughput_table"),
                                         (lambda: checks.q8(None, FAIR), "harmless")])
def test_a_check_run_before_its_answer_cell_says_so(check, name):
    """Otter hands a test None for a name the notebook has not defined: the check asked to run the
    cell, where it said "should be a function; found NoneType" (walkthrough 3)."""
    msg = fails(check)
    assert f"{name} is not defined" in msg and "NoneType" not in msg, msg


# ---------------------------------------------------------------- Q2, Q3 (feedback only)

def sim_ratios(inverted=False, start=5):
    out = {}
    for algo in ccref.ALGORITHMS:
        r = ccref.scenario_fairness(algo, cs218_rule=cs218)
        m, t = r.throughput("mptcp", start), r.throughput("tcp", start)
        out[algo] = t / m if inverted else m / t
    return out


@pytest.fixture(scope="module")
def ratios():
    return sim_ratios()


def test_q2_right_passes(ratios):
    checks.q2(ratios)


def test_q2_wrong_fails(ratios):
    fails(checks.q2, sim_ratios(inverted=True))  # TCP / MPTCP
    fails(checks.q2, {a: v for a, v in ratios.items() if a != "cs218"})  # an algorithm missing
    fails(checks.q2, {a: ratios["uncoupled"] for a in ratios} | {"coupled": 3.0})  # one algorithm simulated for all
    fails(checks.q2, list(ratios.values()))


def test_q2_ratio_with_slow_start_fails_and_says_so(ratios):
    """`throughput("mptcp")` without the 5 s skip moved the ratios by 0.04-0.06 and passed the
    old check, which tested only their order (walkthrough 3)."""
    msg = fails(checks.q2, sim_ratios(start=0))
    assert "slow start included" in msg, msg
    fails(checks.q2, ratios | {"uncoupled": ratios["uncoupled"] * 1.05})


def test_q3(ratios):
    right = {a for a, v in ratios.items() if v <= 1.3}
    checks.q3(right, ratios)
    for wrong in ({a for a, v in ratios.items() if v >= 1.3},  # the unfair ones
                  {a for a, v in ratios.items() if v <= 1.0},  # another threshold
                  set()):
        msg = fails(checks.q3, wrong, ratios)
        # what is missing or extra in kind, never the right set's names (the question's finding)
        assert not any(a in msg for a in right ^ wrong), msg
    fails(checks.q3, [a for a, v in ratios.items() if v <= 1.3], ratios)  # a list


# ---------------------------------------------------------------- Q4

def table(tp, ci=lambda g: la.t975(len(g) - 1) * g.goodput_transfer_mbps.std(ddof=1) / math.sqrt(len(g)),
          mean=lambda g: g.goodput_transfer_mbps.mean(),
          keys=("algo", "variant")):
    rows = []
    for k, g in tp.groupby(list(keys)):
        k = k if isinstance(k, tuple) else (k,)
        rows.append({**dict(zip(keys, k)), "mean_mbps": mean(g), "ci95_mbps": ci(g), "runs": len(g)})
    out = pd.DataFrame(rows)
    return out if "variant" in out else out.assign(variant="static")


Q4_WRONG = {
    "median": lambda tp: table(tp, mean=lambda g: g.goodput_transfer_mbps.median()),
    "normal 1.96": lambda tp: table(tp, ci=lambda g: 1.96 * g.goodput_transfer_mbps.std(ddof=1) / math.sqrt(len(g))),
    "t with n dof": lambda tp: table(tp, ci=lambda g: la.t975(len(g)) * g.goodput_transfer_mbps.std(ddof=1) / math.sqrt(len(g))),
    "ddof=0": lambda tp: table(tp, ci=lambda g: la.t975(len(g) - 1) * g.goodput_transfer_mbps.std(ddof=0) / math.sqrt(len(g))),
    "no sqrt(n)": lambda tp: table(tp, ci=lambda g: la.t975(len(g) - 1) * g.goodput_transfer_mbps.std(ddof=1)),
    "the standard error": lambda tp: table(tp, ci=lambda g: g.goodput_transfer_mbps.std(ddof=1) / math.sqrt(len(g))),
    "grouped by algo only": lambda tp: table(tp, keys=("algo",)),
    "bits as bytes": lambda tp: table(tp, mean=lambda g: g.goodput_transfer_mbps.mean() / 8),
    "keys as the index": lambda tp: table(tp).set_index(["algo", "variant"]),
    "no runs column": lambda tp: table(tp).drop(columns="runs"),
}


def test_q4_right_passes():
    checks.q4(table, table(TP), TP)


@pytest.mark.parametrize("wrong", Q4_WRONG, ids=list(Q4_WRONG))
def test_q4_wrong_fails(wrong):
    msg = fails(checks.q4, Q4_WRONG[wrong], Q4_WRONG[wrong](TP), TP)
    # a group it names is the check's own made-up one, and the message says so (walkthrough 2)
    assert "(lia, " not in msg and "(cs218, " not in msg or "made-up" in msg, msg


def test_q4_scaffold_left_unfilled_fails_with_a_message():
    """The handed-out cell, its `...` not replaced: a message, not a TypeError from float(Ellipsis)."""
    msg = fails(checks.q4, lambda tp: table(tp, mean=lambda g: ..., ci=lambda g: ...), table(TP), TP)
    assert "`...`" in msg, msg


def test_q4_table_of_another_run_fails():
    """tp_table computed from the reference while the notebook analyses a (quick) run of its own."""
    own = TP.groupby(["algo", "variant"]).head(2)
    fails(checks.q4, table, table(TP), own)


# ---------------------------------------------------------------- Q5, Q6

def static(t):
    return t[t.variant == "static"].set_index("algo")


Q5_WRONG = {
    "inverted": lambda t: static(t).loc["lia", "mean_mbps"] / static(t).loc["cs218", "mean_mbps"],
    "mobility": lambda t: (lambda m: m.loc["cs218", "mean_mbps"] / m.loc["lia", "mean_mbps"])(
        t[t.variant == "mobility"].set_index("algo")),
    "both variants": lambda t: t[t.algo == "cs218"].mean_mbps.sum() / t[t.algo == "lia"].mean_mbps.sum(),
    "the CIs": lambda t: static(t).loc["cs218", "ci95_mbps"] / static(t).loc["lia", "ci95_mbps"],
    "a difference": lambda t: static(t).loc["cs218", "mean_mbps"] - static(t).loc["lia", "mean_mbps"],
    # Rows picked by position: on the reference's tp_table (sorted by variant) .iloc[0] is the mobility row.
    "first row per algorithm": lambda t: (t[t.algo == "cs218"].mean_mbps.iloc[0]
                                          / t[t.algo == "lia"].mean_mbps.iloc[0]),
    "last row per algorithm": lambda t: (t[t.algo == "cs218"].mean_mbps.iloc[-1]
                                         / t[t.algo == "lia"].mean_mbps.iloc[-1]),
}


def test_q5():
    checks.q5(lambda t: static(t).loc["cs218", "mean_mbps"] / static(t).loc["lia", "mean_mbps"])
    for wrong in Q5_WRONG.values():
        fails(checks.q5, wrong)


def test_q5_a_one_row_series_is_named_not_a_missing_return():
    """Two one-row selections divided: a Series (NaN, their labels differ). The hint was "a function
    that ends without `return` returns None" (walkthrough 3)."""
    def series(t):
        s = t[t.variant == "static"]
        return s[s.algo == "cs218"].mean_mbps / s[s.algo == "lia"].mean_mbps
    msg = fails(checks.q5, series)
    assert "returned Series" in msg and ".iloc[0]" in msg and "without `return`" not in msg, msg


def test_q5_first_row_is_the_mobility_row_of_the_reference():
    """The public check's made-up table catches .iloc[0], which on the reference's own tp_table
    gives the mobility ratio, and says so."""
    first = Q5_WRONG["first row per algorithm"]
    ref = table(TP)
    assert abs(first(ref) - Q5_WRONG["mobility"](ref)) < 1e-12
    assert "by position (.iloc[0]" in fails(checks.q5, first)


def better(t, a, b):
    s = static(t)
    return bool(s.loc[a, "mean_mbps"] - s.loc[a, "ci95_mbps"] > s.loc[b, "mean_mbps"] + s.loc[b, "ci95_mbps"])


Q6_WRONG = {
    "means only": lambda t, a, b: bool(static(t).loc[a, "mean_mbps"] > static(t).loc[b, "mean_mbps"]),
    "b's CI forgotten": lambda t, a, b: bool(static(t).loc[a, "mean_mbps"] - static(t).loc[a, "ci95_mbps"]
                                             > static(t).loc[b, "mean_mbps"]),
    "a's CI forgotten": lambda t, a, b: bool(static(t).loc[a, "mean_mbps"]
                                             > static(t).loc[b, "mean_mbps"] + static(t).loc[b, "ci95_mbps"]),
    "overlap allowed (>=)": lambda t, a, b: bool(static(t).loc[a, "mean_mbps"] + static(t).loc[a, "ci95_mbps"]
                                                 > static(t).loc[b, "mean_mbps"] - static(t).loc[b, "ci95_mbps"]),
    "always True": lambda t, a, b: True,
    "a string": lambda t, a, b: "yes" if better(t, a, b) else "no",
    "both variants": lambda t, a, b: bool((t[t.algo == a].mean_mbps - t[t.algo == a].ci95_mbps).min()
                                          > (t[t.algo == b].mean_mbps + t[t.algo == b].ci95_mbps).max()),
}


def test_q6():
    checks.q6(better)
    for wrong in Q6_WRONG.values():
        fails(checks.q6, wrong)


@pytest.mark.parametrize("wrong, named", [("means only", "compares the means only"),
                                          ("a's CI forgotten", "leaves out a's interval"),
                                          ("b's CI forgotten", "leaves out b's interval"),
                                          ("overlap allowed (>=)", "asks whether the intervals overlap")])
def test_q6_names_the_mistake_made(wrong, named):
    """Each wrong rule's message names that rule, not another that fails the same first pair (the
    2026-11-28 walkthrough's 'a's CI forgotten' was told it had left out b's)."""
    msg = fails(checks.q6, Q6_WRONG[wrong])
    assert named in msg and sum(rule in msg for rule in checks.Q6_RULES) == 1, msg


# ---------------------------------------------------------------- Q7, Q8

def shares(fair, tcp="tcp_on_shared_mbps", mptcp="mptcp_on_shared_mbps"):
    return fair[tcp] / (fair[tcp] + fair[mptcp])


def tcp_share(fair):
    return {a: float(s.mean()) for a, s in shares(fair).groupby(fair.algo)}


Q7_WRONG = {
    "MPTCP's share": lambda f: {a: float(1 - s.mean()) for a, s in shares(f).groupby(f.algo)},
    "ratio of the means": lambda f: {a: float(g.tcp_on_shared_mbps.mean() / (g.tcp_on_shared_mbps.mean()
                                                                            + g.mptcp_on_shared_mbps.mean()))
                                     for a, g in f.groupby("algo")},
    "median": lambda f: {a: float(s.median()) for a, s in shares(f).groupby(f.algo)},
    "TCP over its own span": lambda f: {a: float(s.mean()) for a,
                                        s in shares(f, tcp="tcp_goodput_transfer_mbps").groupby(f.algo)},
    "MPTCP's both paths": lambda f: {a: float(s.mean()) for a,
                                     s in shares(f, mptcp="mptcp_goodput_transfer_mbps").groupby(f.algo)},
    "a Series": lambda f: shares(f).groupby(f.algo).mean(),
    "MPTCP's split between its paths": lambda f: {a: float(s.mean()) for a, s in f.mptcp_share_on_shared.groupby(f.algo)},
    "1 - MPTCP's split": lambda f: {a: float(1 - s.mean()) for a, s in f.mptcp_share_on_shared.groupby(f.algo)},
}


def test_q7():
    checks.q7(tcp_share, FAIR)
    for wrong in Q7_WRONG.values():
        fails(checks.q7, wrong, FAIR)
    assert "mptcp_share_on_shared" in fails(checks.q7, Q7_WRONG["MPTCP's split between its paths"], FAIR)


def harmless(fair, correct=True, level_test=lambda w: w["lo"] > 0, swapped=False):
    s = shares(fair)
    base = s[fair.algo == "uncoupled"]
    others = [a for a in fair.algo.unique() if a != "uncoupled"]
    family = [stats.welch(base, s[fair.algo == a]) if swapped else stats.welch(s[fair.algo == a], base) for a in others]
    if correct:
        family = stats.holm(family)
    return {a for a, w in zip(others, family) if level_test(w)}


Q8_WRONG = {
    "share >= 0.5": lambda f: {a for a, v in tcp_share(f).items() if v >= 0.5 and a != "uncoupled"},
    "uncorrected (95%)": lambda f: harmless(f, correct=False),
    "resolved either way": lambda f: harmless(f, level_test=lambda w: w["lo"] > 0 or w["hi"] < 0),
    "leaves TCP less": lambda f: harmless(f, level_test=lambda w: w["hi"] < 0),
    "arguments swapped, welch(uncoupled, algo)": lambda f: harmless(f, swapped=True),
    "uncoupled included": lambda f: harmless(f) | {"uncoupled"},
    "a mean above uncoupled's": lambda f: {a for a, v in tcp_share(f).items() if v > tcp_share(f)["uncoupled"]},
    "a list": lambda f: sorted(harmless(f)),
    "corrected, kept hi > 0": lambda f: harmless(f, level_test=lambda w: w["hi"] > 0),
    "corrected, kept a positive difference": lambda f: harmless(f, level_test=lambda w: w["diff"] > 0),
}


def test_q8():
    checks.q8(harmless, FAIR)
    for wrong in Q8_WRONG.values():
        fails(checks.q8, wrong, FAIR)


@pytest.mark.parametrize("wrong", ["arguments swapped, welch(uncoupled, algo)", "leaves TCP less"])
def test_q8_names_the_argument_order(wrong):
    """welch(uncoupled, algo) keeps what a right test's hi < 0 keeps: the message names the order of
    the arguments (the difference is the first minus the second), not only `lo > 0`, which the
    student's code already has (walkthrough 2)."""
    msg = fails(checks.q8, Q8_WRONG[wrong], FAIR)
    assert "welch(shares_algo, shares_uncoupled)" in msg and "mean(a) − mean(b)" in msg, msg


@pytest.mark.parametrize("wrong", ["corrected, kept hi > 0", "corrected, kept a positive difference"])
def test_q8_an_interval_spanning_zero_is_named_not_the_correction(wrong):
    """Holm applied, then every interval reaching above zero kept: the message named the missing
    correction, which the student had (walkthrough 3)."""
    msg = fails(checks.q8, Q8_WRONG[wrong], FAIR)
    assert "spans zero" in msg and "lo > 0" in msg and "stats.holm" not in msg, msg


def test_q8_either_sign_is_told_to_keep_lo_above_zero():
    msg = fails(checks.q8, Q8_WRONG["resolved either way"], FAIR)
    assert "lo > 0" in msg and "welch(shares_algo" not in msg, msg


def test_no_check_prints_a_graded_value():
    """The public checks' messages are built from their own made-up tables: none names the
    reference's numbers (a check that received the student's table and printed the kit's answer
    on it would leak it)."""
    source = inspect.getsource(checks)
    public = source[:source.index("# ---------------------------------------------------------------- graded")]
    assert not re.search(r"\b(throughput_table|fairness_table|_share|cs218_increase|delay_window)\(|grading\.reference",
                         public)


# ---------------------------------------------------------------- graded, on unseen inputs

@pytest.fixture(scope="module")
def draw():
    return reference.draw("lab2", b"a test secret")


@pytest.fixture
def drawn(draw):
    reference.provide({"lab2": draw})
    yield
    reference.provide({})


RIGHT = {"q1": cs218, "q4": table, "q5": lambda t: static(t).loc["cs218", "mean_mbps"] / static(t).loc["lia", "mean_mbps"],
         "q6": better, "q7": tcp_share, "q8": harmless}


@pytest.mark.parametrize("q", RIGHT)
def test_graded_right_passes(drawn, q):
    getattr(checks, f"graded_{q}")(RIGHT[q])


def test_graded_wrong_fails(drawn):
    for q, wrongs in (("q1", Q1_WRONG), ("q4", Q4_WRONG), ("q5", Q5_WRONG), ("q6", Q6_WRONG), ("q7", Q7_WRONG),
                      ("q8", Q8_WRONG)):
        for name, wrong in wrongs.items():
            with pytest.raises(Exception):
                getattr(checks, f"graded_{q}")(wrong)


def test_unseen_inputs_differ_from_the_reference_and_between_secrets():
    a, b = reference.draw("lab2", b"one")["inputs"], reference.draw("lab2", b"two")["inputs"]
    assert not a["throughput"].equals(b["throughput"]) and not a["fairness"].equals(b["fairness"])
    assert not TP.goodput_transfer_mbps.round(4).isin(a["throughput"].goodput_transfer_mbps).all()
    assert unseen.answers(a)["q7"] != tcp_share(FAIR)


def test_unseen_outside_the_checker_raises():
    reference.provide({})
    with pytest.raises(LookupError):
        checks.graded_q1(cs218)
