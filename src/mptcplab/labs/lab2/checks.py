"""Lab 2's public checks: one function per question, called by a one-line test in the notebook.

Each check tries the student's function on small made-up inputs written here (whose right
answers follow from the question's words) and looks at the shape of what it returns on the
student's own tables. A failure says, in a few lines, what kind of answer was expected, what was
found and which mistake it suggests (mptcplab.grading.feedback). No check computes the answer of
a graded question on inputs it is given: that would make it an oracle for any table; the points
come from the hidden tests, on inputs drawn at grading time (unseen.py).
"""

from __future__ import annotations

import math
import numbers

import pandas as pd

from ...grading.feedback import CheckFailed, expect
from ...judge.stats import t975
from .ccref import ALGORITHMS, scenario_fairness

TOL = 1e-6


def _defined(name: str, v) -> None:
    """Otter hands a test None for a name the notebook has not defined: say that, not its type."""
    expect(v is not None, f"{name} is not defined: its cell has not run since the notebook started.\n"
           f"Hint: run the cell that defines {name}, then this check again.")


def _call(name: str, fn, *args):
    """fn(*args), or a short failure naming what it raised."""
    _defined(name, fn)
    expect(callable(fn), f"{name} should be a function (def {name}(...): ...); found {type(fn).__name__}.")
    try:
        return fn(*args)
    except Exception as exc:  # the student's code: any error is the finding
        raise CheckFailed(f"{name} raised {type(exc).__name__}: {str(exc)[:160]}\n"
                          "It was called on an input of the kind the question describes.") from None


def _number(name: str, v, called: str = "") -> float:
    """v as a float, or a failure whose hint fits what came back instead (`called`: on which input)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v:
        return float(v)
    if v is None:
        hint = "a function that ends without `return` returns None: every branch needs its return."
    elif isinstance(v, (pd.Series, pd.DataFrame)):
        hint = ("rows selected by a condition stay a Series, even one row (two Series divide label by label: NaN); "
                "take its value with .iloc[0] or .item().")
    elif isinstance(v, float):
        hint = "NaN comes from an empty selection (a name or variant that matched no row) or from NaN in the data."
    else:
        hint = "return one float."
    raise CheckFailed(f"{name} should return a number; {called}it returned {type(v).__name__} "
                      f"({' '.join(repr(v).split()):.60}).\nHint: {hint}")


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= TOL * max(1.0, abs(b))


def _not_the_mistake(got: float, right: float, mistakes: dict[float, str]) -> None:
    """Fail with the message of the first mistake `got` matches (one whose value differs from the
    right one on this input)."""
    for value, message in mistakes.items():
        expect(_close(right, value) or not _close(got, value), message)


# ---------------------------------------------------------------- Part A

def q1(my_cs218_increase) -> None:
    """The CS218 per-ACK increase: LIA's, plus lia_inc * best_rtt / last_rtt once ack_count > 5.

    The cases run in an order where each plausible mistake first fails the case that names it:
    before the window (none may apply yet), then far past the threshold with the last RTT four
    times the best (there every wrong formula gives its own value), then at the threshold itself
    with that formula right (> 6 instead of > 5), then the limit of a long queue."""
    f = lambda *a: _number("my_cs218_increase", _call("my_cs218_increase", my_cs218_increase, *a),  # noqa: E731
                           f"with ack_count = {a[1]} ")
    for n in range(0, 6):
        v = f(0.01, n, 0.02, 0.02)
        expect(_close(v, 0.01), f"With ack_count = {n} there is no delay window yet: the increase should be lia_inc "
               f"itself (0.01 here); you return {v:.6g}.\n"
               + ("Hint: the window applies only when ack_count > 5 (from the 6th packet acked), not >= 5." if n == 5
                  and _close(f(0.01, 4, 0.02, 0.02), 0.01) else
                  "Hint: until ack_count > 5 the increase is LIA's own, lia_inc, whatever the RTTs."))
    v = f(0.01, 50, 0.02, 0.08)
    where = "With ack_count = 50 and the last RTT four times the best (lia_inc = 0.01), "
    _not_the_mistake(v, 0.0125, {
        0.01: where + "you return lia_inc alone: the delay window is never added.\n"
                      "Hint: add DWND = lia_inc * best_rtt / last_rtt when ack_count > 5.",
        0.0025: where + "you return the delay window alone.\n"
                        "Hint: the increase is lia_inc + DWND: LIA's increase plus the window, not the window instead.",
        0.02: where + "you add lia_inc itself as the window (the increase doubles whatever the RTTs).\n"
                      "Hint: DWND = lia_inc * best_rtt / last_rtt: it shrinks as the queue grows.",
        0.05: where + "your window grows with the last RTT: the ratio is inverted.\n"
                      "Hint: best_rtt / last_rtt (it shrinks as the queue grows), not last_rtt / best_rtt.",
        0.04: where + "you return lia_inc * last_rtt / best_rtt: the window alone, its ratio inverted.\n"
                      "Hint: lia_inc + lia_inc * best_rtt / last_rtt.",
        0.26: where + "your window is best_rtt / last_rtt without lia_inc.\n"
                      "Hint: DWND = lia_inc * best_rtt / last_rtt (it scales LIA's increase).",
        0.25: where + "you return best_rtt / last_rtt alone.\nHint: lia_inc + lia_inc * best_rtt / last_rtt."})
    expect(_close(v, 0.0125), where + f"the increase should be 1.25 x lia_inc; you return {v / 0.01:.4g} x lia_inc.\n"
           "Hint: lia_inc + lia_inc * best_rtt / last_rtt once ack_count > 5.")
    v = f(0.01, 6, 0.02, 0.08)
    expect(_close(v, 0.0125), "With ack_count = 6 the delay window applies already (ack_count > 5), as it does at 50; "
           f"you return {v / 0.01:.4g} x lia_inc there.\nHint: the condition is ack_count > 5, not > 6.")
    v = f(0.01, 50, 0.02, 200.0)
    expect(abs(v - 0.01) < 1e-5, f"As the last RTT grows the rule must tend to LIA (lia_inc); at 10,000 x the best "
           f"RTT you return {v / 0.01:.4g} x lia_inc.")


def q2(sim_ratio) -> None:
    """MPTCP throughput / TCP throughput after 5 s, per algorithm, in the fairness simulation.

    Q2 earns nothing and the simulator is deterministic, so the check runs uncoupled's scenario (which
    no Q1 rule changes) to tell a ratio that counts the first 5 s, slow start, from the asked one."""
    _defined("sim_ratio", sim_ratio)
    expect(isinstance(sim_ratio, dict), f"sim_ratio should be a dict {{algorithm: ratio}}; found {type(sim_ratio).__name__}.")
    missing, extra = sorted(set(ALGORITHMS) - set(sim_ratio)), sorted(set(sim_ratio) - set(ALGORITHMS))
    expect(not missing and not extra, "sim_ratio needs one entry per algorithm of ccref.ALGORITHMS; "
           + "; ".join(x for x in (f"missing {missing}" if missing else "", f"extra {extra}" if extra else "") if x) + ".")
    for a, v in sim_ratio.items():
        expect(isinstance(v, (int, float)) and v == v and v > 0, f"sim_ratio[{a!r}] should be a positive number; found {v!r:.60}.")
    expect(sim_ratio["uncoupled"] > 1.6, f"Uncoupled's ratio is {sim_ratio['uncoupled']:.3g}: two Reno subflows should take "
           "about twice the TCP flow's share.\nHint: divide MPTCP's throughput by TCP's (not TCP's by MPTCP's).")
    expect(sim_ratio["coupled"] < sim_ratio["uncoupled"], "Fully coupled should take less than uncoupled from the TCP "
           "flow; your ratios say the opposite.\nHint: simulate each algorithm with its own name (scenario_fairness(algo)).")
    r = scenario_fairness("uncoupled")
    ratio = lambda start: r.throughput("mptcp", start) / r.throughput("tcp", start)  # noqa: E731
    got = sim_ratio["uncoupled"]
    expect(not _close(got, ratio(0)) or _close(got, ratio(5)), "Your uncoupled ratio counts the whole run, "
           "slow start included.\nHint: r.throughput(flow, 5) skips the first 5 s.")
    expect(abs(got - ratio(5)) <= 1e-3 * ratio(5), "Your uncoupled ratio is not r.throughput('mptcp', 5) / "
           "r.throughput('tcp', 5) of r = ccref.scenario_fairness('uncoupled').\nHint: the scenario's defaults "
           "(30 s, seed 1), the flows named 'mptcp' and 'tcp'.")


def q3(sim_fair, sim_ratio) -> None:
    """The algorithms whose simulated ratio is at most 1.3."""
    _defined("sim_fair", sim_fair)
    _defined("sim_ratio", sim_ratio)
    expect(isinstance(sim_fair, set), f"sim_fair should be a set of algorithm names; found {type(sim_fair).__name__}.\n"
           "Hint: a set comprehension {... for ... in ...} or set(...) makes one.")
    expect(sim_fair <= set(ALGORITHMS), f"sim_fair holds names that are not algorithms: {sorted(sim_fair - set(ALGORITHMS))}.")
    # Q3 earns nothing and its set follows from the student's own sim_ratio, but which algorithms
    # are fair in the simulator is the finding the question asks for: the message says what is
    # missing or extra in kind, and names (and counts) none of them.
    want = {a for a, v in sim_ratio.items() if v <= 1.3}
    found = ["leaves out algorithms whose ratio is at most 1.3" if want - sim_fair else "",
             "holds algorithms whose ratio is above 1.3" if sim_fair - want else ""]
    expect(sim_fair == want, "sim_fair should hold exactly the algorithms whose ratio in your sim_ratio is at most "
           f"1.3; yours {' and '.join(x for x in found if x)}.\n"
           + ("Hint: you kept the ratios above 1.3: a fair algorithm takes a small ratio (<= 1.3)." if not want & sim_fair
              and sim_fair else "Hint: test every entry of your sim_ratio with <= 1.3 (at most, so 1.3 itself counts)."))


# ---------------------------------------------------------------- Part B

# A made-up throughput table: three runs of LIA and four of CS218 per variant, whose mean and
# median differ, so a median, a normal (1.96) interval or ddof=0 each give another answer.
TP = pd.DataFrame({"algo": ["lia"] * 3 + ["cs218"] * 4 + ["lia"] * 3 + ["cs218"] * 4,
                   "variant": ["static"] * 7 + ["mobility"] * 7,
                   "rep": [1, 2, 3, 1, 2, 3, 4] * 2,
                   "goodput_transfer_mbps": [10.0, 11.0, 15.0, 12.0, 12.5, 13.0, 16.5, 8.0, 9.0, 13.0, 9.0, 9.5,
                                             10.0, 13.5]})


def _row(table: pd.DataFrame, algo: str, variant: str) -> pd.Series:
    got = table[(table.algo == algo) & (table.variant == variant)]
    expect(len(got) == 1, f"Your table should have exactly one row per (algo, variant); on the check's made-up table "
           f"it has {len(got)} for ({algo!r}, {variant!r}).\nHint: group by both columns: tp.groupby(['algo', 'variant']).")
    return got.iloc[0]


def _table_shape(table, name: str) -> None:
    expect(isinstance(table, pd.DataFrame), f"{name} should return a pandas DataFrame; found {type(table).__name__}.")
    need = {"algo", "variant", "mean_mbps", "ci95_mbps", "runs"}
    expect(need <= set(table.columns), f"{name}'s table needs the columns {sorted(need)} (algo and variant as "
           f"columns, not as the index); missing {sorted(need - set(table.columns))}.\n"
           "Hint: build it from a list of dicts, or .reset_index() after a groupby.")


def q4(my_throughput_table, tp_table, tp) -> None:
    """Per (algo, variant): mean_mbps, ci95_mbps (Student's t, n - 1 dof), runs."""
    t = _call("my_throughput_table", my_throughput_table, TP.copy())
    _table_shape(t, "my_throughput_table")
    expect(len(t) == 4, f"On a made-up table with 2 algorithms x 2 variants your function returns {len(t)} rows; "
           "it should return 4.\nHint: group by both algo and variant.")
    for (algo, variant), g in TP.groupby(["algo", "variant"]):
        r = _row(t, algo, variant)
        n = len(g)
        group = f"On the check's made-up table, group ({algo}, {variant}) ({n} runs)"
        expect(r.runs == n, f"{group}: your `runs` says {r.runs}.\nHint: runs is the number of rows of the group.")
        for col in ("mean_mbps", "ci95_mbps"):
            expect(isinstance(r[col], numbers.Real) and not isinstance(r[col], bool),
                   f"{group}: your {col} is {type(r[col]).__name__}, not a number.\n"
                   "Hint: replace each `...` of the cell with an expression.")
        expect(_close(float(r.mean_mbps), g.goodput_transfer_mbps.mean()),
               f"{group}: your mean_mbps is not the arithmetic mean of its runs' goodput_transfer_mbps.\n"
               "Hint: .mean(), not .median(); one group's runs only.")
        s = g.goodput_transfer_mbps.std(ddof=1)
        ci = float(r.ci95_mbps)
        wrong = {1.96 * s / math.sqrt(n): "the normal quantile 1.96: with a few runs use Student's t, la.t975(n - 1)",
                 t975(n) * s / math.sqrt(n): "t with n degrees of freedom: a mean of n runs has n - 1",
                 t975(n - 1) * g.goodput_transfer_mbps.std(ddof=0) / math.sqrt(n): "the spread with ddof=0: the sample's s divides by n - 1",
                 t975(n - 1) * s: "t * s, the spread of one run: the mean's interval divides by sqrt(n)",
                 s / math.sqrt(n): "s / sqrt(n), the standard error: the half-width multiplies it by t975(n - 1)"}
        right = t975(n - 1) * s / math.sqrt(n)
        _not_the_mistake(ci, right, {v: f"{group}: your ci95_mbps matches {hint}." for v, hint in wrong.items()})
        expect(_close(ci, right), f"{group}: your ci95_mbps is not the half-width of the 95% interval of the mean.\n"
               "Hint: t975(n - 1) * s / sqrt(n), s the sample standard deviation (ddof=1).")
    _defined("tp_table", tp_table)
    _table_shape(tp_table, "tp_table")
    sizes = tp.groupby(["algo", "variant"]).size()
    got = tp_table.set_index(["algo", "variant"]).runs
    expect(len(tp_table) == len(sizes) and all(got.get(k) == v for k, v in sizes.items()),
           "tp_table's (algo, variant) rows and their run counts do not match the run this notebook loaded (`tp`).\n"
           "Hint: tp_table = my_throughput_table(tp), on this notebook's `tp` (not another run's table).")


# A made-up table in tp_table's shape: CS218 and LIA in both variants, the intervals chosen so that
# each mistake below gives another answer. The rows are in no variant order (LIA's static row first,
# CS218's mobility row first), so a row picked by position (.iloc[0], .iloc[-1]) is the wrong variant
# for one of the two: on tp_table, sorted by variant, .iloc[0] is every algorithm's mobility row.
TABLE = pd.DataFrame({"algo": ["lia", "cs218", "coupled", "lia", "cs218"],
                      "variant": ["static", "mobility", "static", "mobility", "static"],
                      "mean_mbps": [10.0, 6.0, 11.5, 8.0, 12.0],
                      "ci95_mbps": [0.5, 0.3, 1.2, 0.4, 1.0],
                      "runs": [10] * 5})


def q5(cs218_vs_lia) -> None:
    """CS218's mean throughput / LIA's, static variant."""
    v = _number("cs218_vs_lia", _call("cs218_vs_lia", cs218_vs_lia, TABLE.copy()))
    expect(not _close(v, 10.0 / 12.0), "On a made-up table your function returns LIA / CS218.\n"
           "Hint: CS218's mean divided by LIA's.")
    expect(not _close(v, 6.0 / 8.0) and not _close(v, 18.0 / 18.0), "On a made-up table your function uses the "
           "mobility rows (or both variants).\nHint: keep the static variant only.")
    expect(not _close(v, 6.0 / 10.0) and not _close(v, 12.0 / 8.0), "On a made-up table whose rows are in no "
           "variant order, your function takes CS218's row of one variant and LIA's of the other: it picks rows by "
           "position (.iloc[0] or .iloc[-1]), not by variant.\nHint: select variant == 'static' first, then each "
           "algorithm's row.")
    expect(_close(v, 12.0 / 10.0), f"On a made-up table (static: CS218 12.0 ± 1.0, LIA 10.0 ± 0.5 Mbit/s) your function "
           f"returns {v:.4g}, not the ratio of the two means.\nHint: use mean_mbps, not ci95_mbps.")


# Q6's made-up static rows: each wrong rule below answers the pairs of Q6_PAIRS differently, so the
# check can name the rule a student's answers follow (the first pair to fail alone may fit several).
Q6_TABLE = pd.concat([TABLE, pd.DataFrame({"algo": ["ewtcp"], "variant": ["static"], "mean_mbps": [10.4],
                                           "ci95_mbps": [0.2], "runs": [10]})], ignore_index=True)
Q6_PAIRS = [("cs218", "lia"), ("lia", "cs218"), ("coupled", "lia"), ("ewtcp", "lia"), ("cs218", "coupled"),
            ("lia", "lia")]
Q6_RIGHT = lambda a, b: a[0] - a[1] > b[0] + b[1]  # noqa: E731  (mean, ci) of a and of b -> the answer
Q6_RULES = {  # the plausible wrong rules, named as the message says them
    "compares the means only": lambda a, b: a[0] > b[0],
    "leaves out a's interval (a's mean > b's upper end)": lambda a, b: a[0] > b[0] + b[1],
    "leaves out b's interval (a's lower end > b's mean)": lambda a, b: a[0] - a[1] > b[0],
    "asks whether the intervals overlap (a's upper end > b's lower end)": lambda a, b: a[0] + a[1] > b[0] - b[1],
}


def q6(clearly_better) -> None:
    """True only if a's 95% interval lies entirely above b's (static variant)."""
    static = Q6_TABLE[Q6_TABLE.variant == "static"].set_index("algo")
    ends = {a: (float(static.loc[a, "mean_mbps"]), float(static.loc[a, "ci95_mbps"])) for a in static.index}
    got = []
    for a, b in Q6_PAIRS:
        v = _call("clearly_better", clearly_better, Q6_TABLE.copy(), a, b)
        expect(isinstance(v, bool) or type(v).__name__ == "bool_", f"clearly_better should return True or False; "
               f"it returned {type(v).__name__}.")
        got.append(bool(v))
    right = [Q6_RIGHT(ends[a], ends[b]) for a, b in Q6_PAIRS]
    if got == right:
        return
    (a, b), v = next((pair, g) for pair, g, w in zip(Q6_PAIRS, got, right) if g != w)
    (ma, ca), (mb, cb) = ends[a], ends[b]
    mistake = next((name for name, rule in Q6_RULES.items() if [rule(ends[x], ends[y]) for x, y in Q6_PAIRS] == got),
                   None)
    expect(False, f"On a made-up table (its static rows: {a} {ma:g} ± {ca:g}, {b} {mb:g} ± {cb:g}) "
           f"clearly_better(table, {a!r}, {b!r}) returns {v}.\n"
           + (f"Your answers on all {len(Q6_PAIRS)} pairs match a rule that {mistake}.\n" if mistake else "")
           + "Hint: True only when a's mean - a's CI > b's mean + b's CI, static rows only.")


# ---------------------------------------------------------------- Part C

def _fair(rows: dict[str, list[tuple[float, float]]]) -> pd.DataFrame:
    """A made-up fairness table from {algo: [(tcp_on_shared, mptcp_on_shared), ...]}: tcp_goodput_transfer_mbps
    (the TCP flow's own goodput over its own span) differs from tcp_on_shared_mbps, the MPTCP
    connection's total (mptcp_goodput_transfer_mbps) from its part on the shared path, and mptcp_share_on_shared
    (how MPTCP split its own traffic, 3 Mbit/s on its other path) from either flow's share."""
    out = []
    for algo, runs in rows.items():
        for i, (tcp, mp) in enumerate(runs, 1):
            out.append({"algo": algo, "rep": i, "mptcp_goodput_transfer_mbps": mp + 3.0,
                        "tcp_goodput_transfer_mbps": tcp * 0.8,
                        "mptcp_share_on_shared": mp / (mp + 3.0),
                        "mptcp_on_shared_mbps": mp, "tcp_on_shared_mbps": tcp})
    return pd.DataFrame(out)


# Shares chosen so the mean of the per-run shares differs from the ratio of the means.
FAIR = _fair({"uncoupled": [(2.5, 2.5), (1.0, 4.0), (3.0, 1.0)], "lia": [(4.0, 1.0), (3.0, 2.0), (1.0, 1.0)]})


def q7(tcp_share, fair) -> None:
    """{algo: mean over runs of tcp_on_shared / (tcp_on_shared + mptcp_on_shared)}."""
    _defined("fair", fair)
    v = _call("tcp_share", tcp_share, FAIR.copy())
    expect(isinstance(v, dict), f"tcp_share should return a dict {{algorithm: share}}; found {type(v).__name__}.\n"
           "Hint: a Series converts with .to_dict().")
    expect(set(v) == {"uncoupled", "lia"}, f"On a made-up table of two algorithms your dict has the keys {sorted(map(str, v))}.")
    for algo, g in FAIR.groupby("algo"):
        got = _number(f"tcp_share(...)[{algo!r}]", v[algo])
        per_run = g.tcp_on_shared_mbps / (g.tcp_on_shared_mbps + g.mptcp_on_shared_mbps)
        right = per_run.mean()
        expect(0 <= got <= 1, f"{algo}: a share lies between 0 and 1; yours is {got:.4g}.")
        _not_the_mistake(got, right, {
            1 - right: f"{algo}: your share is MPTCP's part of the shared path.\n"
                       "Hint: the TCP flow's part: tcp_on_shared / (tcp_on_shared + mptcp_on_shared).",
            g.tcp_on_shared_mbps.sum() / (g.tcp_on_shared_mbps.sum() + g.mptcp_on_shared_mbps.sum()):
                f"{algo}: your share is the ratio of the runs' sums (or means).\n"
                "Hint: compute each run's share, then average the shares.",
            per_run.median(): f"{algo}: your share is the median of the runs' shares; the question asks their mean.",
            g.mptcp_share_on_shared.mean(): f"{algo}: your share is mptcp_share_on_shared, how MPTCP split its own "
                                            "traffic between its two paths.\nHint: the TCP flow's part of the shared "
                                            "path: tcp_on_shared / (tcp_on_shared + mptcp_on_shared).",
            1 - g.mptcp_share_on_shared.mean(): f"{algo}: your share is 1 - mptcp_share_on_shared, MPTCP's part on "
                                                "its other path.\nHint: the TCP flow's part of the shared path: "
                                                "tcp_on_shared / (tcp_on_shared + mptcp_on_shared)."})
        expect(_close(got, right), f"{algo}: your share is not the mean over runs of "
               "tcp_on_shared_mbps / (tcp_on_shared_mbps + mptcp_on_shared_mbps).\n"
               "Hint: tcp_goodput_transfer_mbps is the TCP flow over its own span, mptcp_goodput_transfer_mbps both "
               "paths: use the *_on_shared columns.")
    own = _call("tcp_share", tcp_share, fair)
    expect(isinstance(own, dict) and set(own) == set(fair.algo), "tcp_share(fair) should have one entry per algorithm "
           "of this notebook's `fair`.")


# Per-run TCP shares vs uncoupled's (5 runs each): "far" leaves TCP clearly more; "near" more at 95%
# uncorrected (Welch p 0.037), not after Holm's correction over the four comparisons (judged at
# 0.05 / 2); "same" a little more, well within the noise (+0.01, p 0.55: its interval spans zero
# either way, so keeping hi > 0 or a positive difference keeps it); "less" clearly less; the TCP
# flow's share of "far" below one half.
FAIR8 = _fair({
    "uncoupled": [(1.5, 3.5), (1.7, 3.3), (1.6, 3.4), (1.4, 3.6), (1.8, 3.2)],
    "far": [(2.4, 2.6), (2.3, 2.7), (2.45, 2.55), (2.2, 2.8), (2.35, 2.65)],
    "near": [(1.85, 3.15), (1.95, 3.05), (1.65, 3.35), (1.75, 3.25), (1.95, 3.05)],
    "same": [(1.65, 3.35), (1.55, 3.45), (1.75, 3.25), (1.7, 3.3), (1.6, 3.4)],
    "less": [(0.6, 4.4), (0.7, 4.3), (0.5, 4.5), (0.8, 4.2), (0.65, 4.35)],
})


def q8(harmless, fair) -> None:
    """The algorithms whose TCP share exceeds uncoupled's by a Holm-corrected Welch interval above 0."""
    _defined("fair", fair)
    v = _call("harmless", harmless, FAIR8.copy())
    expect(isinstance(v, set), f"harmless should return a set of algorithm names; found {type(v).__name__}.\n"
           "Hint: a set comprehension {... for ... in ...} or set(...) makes one.")
    expect("uncoupled" not in v, "The baseline (uncoupled) is compared with the others, not with itself: leave it out.")
    # welch(uncoupled, algo) measures uncoupled − algo: its lo > 0 keeps exactly the algorithms a right
    # test's hi < 0 would, so "less" without "far" is the arguments' order (or hi < 0), both named.
    expect("less" not in v or "far" in v, "On a made-up table your set holds the algorithm that leaves TCP clearly "
           "*less* than uncoupled, not the one that leaves it clearly more: your difference has the wrong sign.\n"
           "Hint: stats.welch(a, b) is mean(a) − mean(b): pass the algorithm's shares first and uncoupled's second, "
           "welch(shares_algo, shares_uncoupled), then keep lo > 0.")
    expect("less" not in v, "On a made-up table your set holds an algorithm that leaves TCP clearly *less* than "
           "uncoupled, beside the one that leaves it clearly more.\nHint: keep only the corrected intervals above zero "
           "(lo > 0), not every interval that excludes zero.")
    expect("far" in v, "On a made-up table an algorithm whose TCP share is clearly above uncoupled's (by far more than "
           "the noise) but below one half is missing.\nHint: compare with uncoupled (stats.welch), not with 0.5.")
    expect("same" not in v, "On a made-up table your set holds an algorithm whose difference from uncoupled is "
           "within the noise: its interval spans zero.\nHint: keep only the intervals entirely above zero, lo > 0 "
           "(not hi > 0, nor a positive difference).")
    expect("near" not in v, "On a made-up table your set holds an algorithm whose difference from uncoupled lies above "
           "zero only at 95% uncorrected.\nHint: correct the family of comparisons with stats.holm; its lo and hi "
           "are the corrected interval.")
    own = _call("harmless", harmless, fair)
    expect(isinstance(own, set) and own <= set(fair.algo) - {"uncoupled"},
           "harmless(fair) should be a set of this notebook's algorithms, uncoupled left out.")


# ---------------------------------------------------------------- graded (hidden tests, in the checker only)
# Each calls the student's function on the grader's unseen inputs (unseen.held_out) and compares with
# the kit's answers on them (unseen.answers), which only the checker holds; nothing here computes an
# answer, and no message quotes one.

def _unseen(key: str):
    from ...grading.reference import unseen

    return unseen("lab2")[key]


def _expected(q: str):
    from ...grading.reference import expected

    return expected("lab2", q)


def graded_q1(my_cs218_increase) -> None:
    from .unseen import _cs218_args

    for args, want in zip(_cs218_args(_unseen("cs218_inputs")), _expected("q1"), strict=True):
        expect(abs(my_cs218_increase(*args) - want) <= 1e-9 * max(1.0, abs(want)), "Q1 differs on unseen inputs.")


def graded_q4(my_throughput_table) -> None:
    want = _expected("q4").set_index(["algo", "variant"])
    got = my_throughput_table(_unseen("throughput"))
    expect(isinstance(got, pd.DataFrame) and {"algo", "variant", "mean_mbps", "ci95_mbps", "runs"} <= set(got.columns),
           "Q4's table lacks its columns on unseen inputs.")
    got = got.set_index(["algo", "variant"])
    expect(len(got) == len(want) and not got.index.has_duplicates and set(got.index) == set(want.index),
           "Q4's rows differ on unseen inputs.")
    for k, r in want.iterrows():
        expect(int(got.loc[k, "runs"]) == r.runs and abs(got.loc[k, "mean_mbps"] - r.mean_mbps) <= 1e-6
               and abs(got.loc[k, "ci95_mbps"] - r.ci95_mbps) <= 1e-6, "Q4 differs on unseen inputs.")


def graded_q5(cs218_vs_lia) -> None:
    expect(abs(cs218_vs_lia(_unseen("table")) - _expected("q5")) <= 1e-9, "Q5 differs on unseen inputs.")


def graded_q6(clearly_better) -> None:
    table = _unseen("table")
    for (a, b), want in _expected("q6").items():
        expect(bool(clearly_better(table, a, b)) == want, "Q6 differs on unseen inputs.")


def graded_q7(tcp_share) -> None:
    want, got = _expected("q7"), tcp_share(_unseen("fairness"))
    expect(isinstance(got, dict) and set(got) == set(want), "Q7's keys differ on unseen inputs.")
    expect(all(abs(got[a] - w) <= 1e-9 for a, w in want.items()), "Q7 differs on unseen inputs.")


def graded_q8(harmless) -> None:
    for fair, want in zip(_unseen("fairness_q8"), _expected("q8"), strict=True):
        got = harmless(fair)
        expect(isinstance(got, set) and got == want, "Q8 differs on unseen inputs.")
