"""Inputs for Lab 2's hidden tests that no student has seen: `held_out(tables, rng)` (Lab.grading.held_out).

The notebook's graded questions are functions (the CS218 rule, the throughput table, the
comparison of two algorithms, the TCP flow's share and the harmless set); grading calls them on
these inputs, drawn from the reference with a generator seeded from the instructor's secret, and
compares with the kit's own answers on the same inputs. Every draw changes the answers: a table
of numbers computed at home from the shipped runs matches none of them.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

# The columns each graded function reads; the rest of a table (the run's own provenance, the
# emulator's wire count, ss's older split) is dropped so a function cannot lean on it.
THROUGHPUT_COLUMNS = ["run", "algo", "variant", "rep", "goodput_transfer_mbps"]
Q8_DRAWS = 4  # Q8's answer on one draw is one of four algorithms: four draws leave a guess 1 chance in 256
FAIRNESS_COLUMNS = ["algo", "rep", "mptcp_goodput_transfer_mbps", "tcp_goodput_transfer_mbps", "mptcp_on_shared_mbps",
                    "tcp_on_shared_mbps"]


def _subsample(table: pd.DataFrame, keys: list[str], rng: np.random.Generator, least: int) -> pd.DataFrame:
    """Per group of `keys`, a random subset of its rows (at least `least`, never all when it has
    more than `least` + 1), in a random order."""
    parts = []
    for _, g in table.groupby(keys, sort=False):
        most = max(least, len(g) - 1)
        n = int(rng.integers(min(least, len(g)), most + 1))
        parts.append(g.iloc[rng.permutation(len(g))[:n]])
    return pd.concat(parts).reset_index(drop=True)


def throughput(tp: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The transfers' table, subsampled (2 runs or more per algorithm and variant), each group's
    throughput scaled by its own factor (0.6-1.4) and every run's by 0.9-1.1."""
    out = _subsample(tp[THROUGHPUT_COLUMNS], ["algo", "variant"], rng, least=2)
    group = out.groupby(["algo", "variant"]).ngroup()
    factor = rng.uniform(0.6, 1.4, group.max() + 1)[group] * rng.uniform(0.9, 1.1, len(out))
    return out.assign(goodput_transfer_mbps=(out.goodput_transfer_mbps * factor).round(4))


def _fairness_draw(fair: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """One draw of the fairness runs (4 of each algorithm's): each algorithm's TCP shares get a new
    spread (their pattern kept, a standard deviation of 0.015-0.04) and a new mean, and the MPTCP
    part on the shared path is rewritten to match. Uncoupled's mean is 0.4-0.6; of the others, in
    a random order, one leaves the TCP flow more than uncoupled at a Welch p of 1e-4 to 2e-3, one
    more at p 0.03-0.045 (resolved at 95%, not after Holm's correction, which judges it at 0.05 / 2),
    one less at p 1e-4 to 2e-3, and the rest differ from uncoupled at p 0.3 or more."""
    from ...judge.stats import t_quantile

    out = _subsample(fair[FAIRNESS_COLUMNS], ["algo"], rng, least=4)
    share = out.tcp_on_shared_mbps / (out.tcp_on_shared_mbps + out.mptcp_on_shared_mbps)
    for a in out.algo.unique():
        mine = out.algo == a
        d = share[mine] - share[mine].mean()
        d = d if d.std() > 0 else pd.Series(rng.normal(size=mine.sum()), index=d.index)
        share[mine] = d / d.std() * rng.uniform(0.015, 0.04)
    base = share[out.algo == "uncoupled"] + rng.uniform(0.4, 0.6)
    share[out.algo == "uncoupled"] = base
    moves = [(1, 1e-4, 2e-3), (1, 0.03, 0.045), (-1, 1e-4, 2e-3)]
    for i, a in enumerate(rng.permutation([a for a in out.algo.unique() if a != "uncoupled"])):
        mine = out.algo == a
        va, vb = share[mine].var() / mine.sum(), base.var() / len(base)
        dof = (va + vb) ** 2 / (va ** 2 / (mine.sum() - 1) + vb ** 2 / (len(base) - 1))
        sign, lo, hi = moves[i] if i < len(moves) else (rng.choice([-1, 1]), 0.3, 0.9)
        share[mine] += base.mean() + sign * math.sqrt(va + vb) * t_quantile(1 - rng.uniform(lo, hi), dof)
    share = share.clip(0.02, 0.98)
    tcp = out.tcp_on_shared_mbps * rng.uniform(0.95, 1.05, len(out))
    return out.assign(tcp_on_shared_mbps=tcp.round(4), mptcp_on_shared_mbps=(tcp * (1 - share) / share).round(4),
                      tcp_goodput_transfer_mbps=(out.tcp_goodput_transfer_mbps
                                                 * rng.uniform(0.9, 1.1, len(out))).round(4),
                      rep=np.arange(1, len(out) + 1))


def separates(fair: pd.DataFrame) -> bool:
    """Whether Q8's answer on these runs differs from each usual wrong reading of them: none, Welch
    without Holm's correction, intervals resolved either way, a mean share above uncoupled's, a
    share of one half or more (on most draws the uncorrected reading gives the same set). The
    comparisons as analysis.fairness_table makes them, without its runs needed (slow, unused here)."""
    from ...judge import stats

    share = fair.tcp_on_shared_mbps / (fair.tcp_on_shared_mbps + fair.mptcp_on_shared_mbps)
    mean = share.groupby(fair.algo).mean()
    others = [a for a in mean.index if a != "uncoupled"]
    raw = [{**stats.welch(share[fair.algo == a], share[fair.algo == "uncoupled"]), "sds": ()} for a in others]
    held = stats.holm(raw)
    right = {a for a, w in zip(others, held) if w["resolved"] and w["diff"] > 0}
    wrong = [set(), {a for a, w in zip(others, raw) if w["lo"] > 0},
             {a for a, w in zip(others, held) if w["resolved"]},
             {a for a in others if mean[a] > mean["uncoupled"]},
             {a for a in others if mean[a] >= 0.5}]
    return all(w != right for w in wrong)


def fairness(fair: pd.DataFrame, rng: np.random.Generator, tries: int = 1000) -> pd.DataFrame:
    """The first draw of the fairness runs (`_fairness_draw`) that `separates` Q8's right answer
    from its wrong readings (about four in five do; the same secret gives the same draw)."""
    for _ in range(tries):
        out = _fairness_draw(fair, rng)
        if separates(out):
            return out
    raise RuntimeError(f"lab2 held_out: no fairness draw of {tries} separates Q8's answers")


def cs218_inputs(rng: np.random.Generator, n: int = 40) -> pd.DataFrame:
    """Arguments of the CS218 rule (Q1): LIA increases, ACK counts around the threshold and beyond,
    best RTTs and latest RTTs at or above them (s)."""
    best = rng.uniform(0.005, 0.2, n)
    return pd.DataFrame({"lia_inc": rng.uniform(1e-3, 0.5, n),
                         "ack_count": rng.choice([0, 1, 4, 5, 6, 7, 12, 100, 5000], n),
                         "best_rtt": best, "last_rtt": best * rng.uniform(1.0, 8.0, n)})


def held_out(tables: dict, rng: np.random.Generator) -> dict:
    """(the reference's tables as `analysis.load` returns them, a generator seeded from the secret)
    -> the hidden tests' inputs: `cs218_inputs` (Q1), `throughput` (Q4), `table` (Q5, Q6: a table in
    tp_table's shape from another draw, so that no answer of Q4 is ever handed to a student's
    function), `fairness` (Q7) and `fairness_q8` (Q8: Q8_DRAWS draws, each answer a small set)."""
    from .analysis import throughput_table

    other = throughput_table(throughput(tables["throughput"], rng))
    # Rows in no variant order, CS218's first row of one variant and LIA's of the other (the rest
    # shuffled): a function that picks rows by position (.iloc[0], .iloc[-1]) gets a wrong ratio.
    late = other.variant.eq("static") != other.algo.eq("lia")
    other = other.iloc[np.argsort(late.to_numpy() + rng.uniform(0, 0.5, len(other)), kind="stable")]
    return {"cs218_inputs": cs218_inputs(rng), "throughput": throughput(tables["throughput"], rng),
            "table": other[["algo", "variant", "mean_mbps", "ci95_mbps", "runs"]],
            "fairness": fairness(tables["fairness"], rng),
            "fairness_q8": [fairness(tables["fairness"], rng) for _ in range(Q8_DRAWS)]}


def answers(inputs: dict) -> dict:
    """The kit's answers on held_out's inputs, {question: answer} (Lab.grading.unseen_answers: computed by
    the grader before any submission runs, hidden from submissions as an answer key)."""
    from . import analysis, ccref

    table = analysis.throughput_table(inputs["throughput"])
    static = inputs["table"][inputs["table"].variant == "static"].set_index("algo")
    fair = analysis.fairness_table(inputs["fairness"])
    verdicts = [analysis.fairness_table(f) for f in inputs["fairness_q8"]]
    return {"q1": [ccref.cs218_increase(*args) for args in _cs218_args(inputs["cs218_inputs"])],
            "q4": table[["algo", "variant", "mean_mbps", "ci95_mbps", "runs"]],
            "q5": float(static.loc["cs218", "mean_mbps"] / static.loc["lia", "mean_mbps"]),
            "q6": {(a, b): bool(static.loc[a, "mean_mbps"] - static.loc[a, "ci95_mbps"]
                                > static.loc[b, "mean_mbps"] + static.loc[b, "ci95_mbps"])
                   for a in static.index for b in static.index},
            "q7": dict(zip(fair.algo, fair.tcp_share_of_shared.astype(float))),
            "q8": [set(v[v.verdict == "leaves TCP more than uncoupled"].algo) for v in verdicts]}


def _cs218_args(frame: pd.DataFrame) -> list[tuple[float, int, float, float]]:
    """The CS218 rule's arguments, one tuple per row, as plain Python numbers."""
    return [(float(r.lia_inc), int(r.ack_count), float(r.best_rtt), float(r.last_rtt)) for r in frame.itertuples()]
