"""Inputs no Lab 3 notebook has seen, and the kit's answers on them (issue 40).

Every graded point of Lab 3 comes from calling the student's own functions on inputs drawn here
from a generator the grader seeds with its secret (`held_out`), against answers the kit computes
with its real answer keys outside the student's reach (`answers`). The notebook's shipped inputs
(nb3.GRID1, the reference tables) give feedback only: values memorised from them, or copied from
a `runs.csv`, meet different points here.

The draws cover what the public checks cover, so a function that passes those passes here unless
it special-cases the shipped inputs: model points with few and many flows, low loss, a saturated
aggregate (every flow in a timeout), windows below 3 (model 1), bursty loss with j > n (model 2);
loss times that are unsorted, in bursts and alone; runs subsampled with a part of their losses
dropped, their RTTs and packet counts rescaled and their flows' ports drawn from one small pool (a
port names a flow only within its run); runs fed to the models with b = model_b of 1 or 2; runs at
exactly 2 % loss, above it, queued, or without a loss.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import analysis, measure, models

# Columns a function could read instead of computing its answer: dropped from every held-out table.
RATE_COLUMNS = ("p", "p_e", "p_r", "p_r_emulator", "loss_events", "loss_events_per_flow", "loss_events_cumulative",
                "retransmissions", "timeouts", "timeouts_nstat", "loss")
PREDICTION_COLUMNS = ("model1", "model2", "n_pftk_p", "n_pftk_pe", "err_model1", "err_model2", "err_n_pftk_p",
                      "err_n_pftk_pe")


def _loguniform(rng, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def grid1(rng, size: int = 12) -> list[tuple]:
    """(n, p, rtt, T, b) for model 1: mostly the runs' range, then a saturated point and a w < 3 one."""
    out = []
    for i in range(size):
        n, b = int(rng.integers(1, 11)), int(rng.choice([1, 2]))
        if i == size - 2:  # saturated: every flow in a timeout
            out.append((n, round(rng.uniform(0.15, 0.3), 4), round(rng.uniform(0.04, 0.1), 4), round(rng.uniform(0.5, 1.5), 3), b))
        elif i == size - 1:  # E[W_f] below 3, the timeout long enough not to saturate
            out.append((int(rng.integers(1, 4)), round(rng.uniform(0.4, 0.6), 4), round(rng.uniform(0.15, 0.3), 4),
                        round(rng.uniform(0.005, 0.02), 4), 2))
        else:
            out.append((n, round(_loguniform(rng, 1e-4, 0.05), 6), round(rng.uniform(0.02, 0.3), 4),
                        round(rng.uniform(0.2, 1.0), 3), b))
    return out


def grid2(rng, size: int = 10) -> list[tuple]:
    """(n, p_e, p_r, rtt, T, b) for model 2: j = p_r / p_e from 1 to above n, and a saturated point."""
    out = []
    for i in range(size):
        n, b = int(rng.integers(1, 11)), int(rng.choice([1, 2]))
        if i == size - 1:  # saturated
            p_e = round(rng.uniform(0.15, 0.25), 4)
            out.append((n, p_e, round(min(0.9, p_e * rng.uniform(1.0, 1.5)), 4), round(rng.uniform(0.04, 0.1), 4),
                        round(rng.uniform(0.5, 1.5), 3), b))
            continue
        if i == 1:  # bursty, few flows: j > n, and more than one flow times out per event (drawn
            # until capping E[nTO'] at 1 instead of n changes the throughput)
            for _ in range(100):
                n, p_e = int(rng.integers(2, 4)), round(rng.uniform(0.015, 0.03), 6)
                pt = (n, p_e, round(p_e * rng.uniform(n + 5, n + 9), 6), round(rng.uniform(0.04, 0.1), 4),
                      round(rng.uniform(0.2, 0.4), 3), 1)
                if abs(float(models.cumulative_terms(*pt, q1_cap="1")["B"]) / models.parallel_cumulative(*pt) - 1) > 0.05:
                    break
            out.append(pt)
            continue
        p_e = round(_loguniform(rng, 1e-4, 0.03), 6)
        j = 1.0 if i == 0 else float(rng.uniform(1, 6))
        out.append((n, p_e, round(min(0.5, p_e * j), 6), round(rng.uniform(0.02, 0.3), 4), round(rng.uniform(0.2, 1.0), 3), b))
    return out


def loss_cases(rng, size: int = 8) -> list[tuple[list[float], float]]:
    """(loss times, rtt): none, one exactly rtt after an event's first, bursts within an RTT, isolated
    losses; never in time order."""
    out = [([], round(rng.uniform(0.03, 0.2), 4))]
    # A loss exactly rtt after the loss that opened its event belongs to it (`>`, not `>=`): times in
    # 1/1024 s, so the sums are exact in floating point.
    rtt, start = int(rng.integers(32, 205)) / 1024, int(rng.integers(0, 5 * 1024)) / 1024
    out.append(([start + 2 * rtt, start, start + rtt], rtt))
    for _ in range(size - 2):
        rtt = round(rng.uniform(0.03, 0.2), 4)
        starts = rng.uniform(0, 5, size=int(rng.integers(1, 8)))
        times = [float(s + d) for s in starts for d in np.r_[0, np.sort(rng.uniform(0, 1.6 * rtt, int(rng.integers(0, 5))))]]
        out.append(([round(float(t), 5) for t in rng.permutation(times)], rtt))
    return out


def _runs_sample(runs: pd.DataFrame, rng, size: int) -> pd.DataFrame:
    return runs.iloc[np.sort(rng.choice(len(runs), size=min(size, len(runs)), replace=False))].reset_index(drop=True)


def shared_ports(flows: pd.DataFrame, losses: pd.DataFrame, rng) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Every flow's port (`flow`, in flows and losses alike) redrawn from one pool barely larger than a
    run's flows, distinct within each run: most ports then name flows of several runs. A kernel reuses
    its ephemeral ports from run to run too (the reference: 715 flows, 696 ports), but a sample of a few
    runs may have no port in common; here losses matched to flows by port alone, not by run and port,
    take in other runs' losses on almost every run, whichever runs were sampled."""
    if flows.empty:
        return flows, losses
    pool = rng.choice(np.arange(32768, 61000), size=max(12, int(flows.groupby("run").size().max()) + 2), replace=False)
    new = {}
    for run, ports in flows.groupby("run", sort=False)["flow"]:
        new.update({(run, old): int(port) for old, port in zip(ports, rng.choice(pool, len(ports), replace=False))})
    flows = flows.assign(flow=[new[k] for k in zip(flows.run, flows.flow)])
    losses = losses.assign(flow=[new.get(k, k[1]) for k in zip(losses.run, losses.flow)])
    return flows, losses


def rate_tables(t: dict, rng, size: int = 15) -> dict:
    """Q4 and Q5's tables: runs subsampled, about a third of their losses dropped (all of one run's), each run's and each
    flow's RTT and each run's packet count rescaled at random, the flows' ports redrawn so that runs share them
    (`shared_ports`), without any loss-rate column."""
    runs = _runs_sample(t["runs"], rng, size)
    keep = set(runs.run)
    flows = t["flows"][t["flows"].run.isin(keep)].reset_index(drop=True)
    losses = t["losses"][t["losses"].run.isin(keep)]
    losses = losses[(rng.random(len(losses)) > 0.3) & (losses.run != runs.run[0])].reset_index(drop=True)  # one run lossless
    runs["rtt"] = runs["rtt"] * rng.uniform(0.6, 1.8, len(runs))
    flows["rtt"] = flows["rtt"] * rng.uniform(0.6, 1.8, len(flows))
    runs["packets"] = np.round(runs["packets"] * rng.uniform(0.8, 1.3, len(runs))).astype(int)
    flows, losses = shared_ports(flows, losses, rng)
    drop = RATE_COLUMNS + PREDICTION_COLUMNS
    return {"runs": runs.drop(columns=[c for c in drop if c in runs]),
            "flows": flows.drop(columns=[c for c in drop if c in flows]), "losses": losses}


def compare_runs(runs: pd.DataFrame, rng, size: int = 20) -> pd.DataFrame:
    """Q6's runs: the models' inputs and the measured pps jittered, model_b 1 or 2 (b, the measured
    ACK ratio, left as it was), two runs without a loss; no prediction column."""
    runs = _runs_sample(runs[runs.p > 0], rng, size)
    for col in ("p", "p_e", "rtt", "T", "pps"):
        runs[col] = runs[col] * rng.uniform(0.8, 1.25, len(runs))
    runs["p_r"] = np.maximum(runs["p_r"] * rng.uniform(0.8, 1.25, len(runs)), runs["p_e"])
    runs["model_b"] = rng.choice([1.0, 2.0], len(runs))
    runs.loc[runs.index[:2], ["p", "p_e", "p_r"]] = 0.0
    return runs.drop(columns=[c for c in PREDICTION_COLUMNS if c in runs]).sample(frac=1, random_state=rng).reset_index(drop=True)


def scope_runs(runs: pd.DataFrame, rng, size: int = 30) -> pd.DataFrame:
    """Q7's runs: `loss` set around the 2 % limit (some exactly 2 %), about a fifth `queued`, two
    runs without a loss."""
    runs = _runs_sample(runs, rng, size)
    runs["loss"] = rng.choice([0.001, 0.005, 0.01, 0.02, 0.02, 0.021, 0.03, 0.05], len(runs))
    runs["queued"] = rng.random(len(runs)) < 0.2
    runs.loc[runs.index[:2], ["p", "p_e", "p_r"]] = 0.0
    return runs.drop(columns=[c for c in PREDICTION_COLUMNS if c in runs]).sample(frac=1, random_state=rng).reset_index(drop=True)


def held_out(tables: dict, rng: np.random.Generator) -> dict:
    """Lab 3's unseen inputs, one entry per graded question's function (LAB.grading.held_out)."""
    t = {k: tables[k] for k in ("runs", "flows", "losses")}
    if "queued" not in t["runs"]:
        t["runs"] = analysis.predict(t["runs"])
    return {"grid1": grid1(rng), "grid2": grid2(rng), "loss_cases": loss_cases(rng), **rate_tables(t, rng),
            "compare_runs": compare_runs(t["runs"], rng), "scope_runs": scope_runs(t["runs"], rng)}


def answers(inputs: dict) -> dict:
    """The kit's answers on held_out's inputs: {question: expected}. Needs the real answer keys."""
    runs, flows, losses = inputs["runs"], inputs["flows"], inputs["losses"]
    cumulative, per_flow = {}, {}
    for r in runs.itertuples():
        lost = losses[losses.run == r.run]
        cumulative[r.run] = {"p_e": len(measure.group_loss_events(lost.t, r.rtt)) / r.packets,
                             "p_r": len(lost) / r.packets}
        per_flow[r.run] = sum(len(measure.group_loss_events(lost[lost.flow == f.flow].t, f.rtt))
                              for f in flows[flows.run == r.run].itertuples()) / r.packets
    c = inputs["compare_runs"]
    c = c[c.p > 0]
    b = c.model_b.astype(float)
    m1 = models.parallel_per_flow(c.n, c.p, c.rtt, c["T"], b)
    m2 = models.parallel_cumulative(c.n, c.p_e, c.p_r, c.rtt, c["T"], b)
    comparison = pd.DataFrame({"measured": c.pps.to_numpy(), "model1": np.asarray(m1), "model2": np.asarray(m2)},
                              index=pd.Index(c.run, name="run"))
    comparison["err1"] = comparison.model1 / comparison.measured - 1
    comparison["err2"] = comparison.model2 / comparison.measured - 1
    return {"q1": [models.parallel_per_flow(*pt) for pt in inputs["grid1"]],
            "q2": [models.parallel_cumulative(*pt) for pt in inputs["grid2"]],
            "q3": [len(measure.group_loss_events(times, rtt)) for times, rtt in inputs["loss_cases"]],
            "q4": pd.DataFrame.from_dict(cumulative, orient="index").rename_axis("run"),
            "q5": pd.Series(per_flow, name="p").rename_axis("run"),
            "q6": comparison,
            "q7": sorted(analysis.graded_runs(inputs["scope_runs"]).run)}
