"""Lab 3's claims ledger: what Damjanovic et al. (2009) claim of their two equations, decided over a
run's tables (runs.csv with each model's prediction and error, from `analysis.load`; the controlled
runs a reference keeps in controls/).

The paper shows figures, not numbers: "works well" is read as the kit's bands (analysis.BANDS:
model 1 within ±25%, model 2 within ±35% of the measured throughput), tested as the mean |error|
of the runs below the band (a one-sample t test); "underestimates" as a mean signed error below
zero; a comparison of two models as the per-run difference of their |errors| (paired, both predict
the same run). mptcplab.judge.claims corrects the ledger's comparisons as one family (Holm).

Runs the place limited (`queued`) and DropTail runs above the paper's 10% loss are left out, as in
the report. A control manipulates one candidate cause of a divergence: reno_recovery switches
Linux's newer loss recovery off (the models assume Reno's timeouts), paced_20mbit spaces the packets
on the link (which brings the ACK ratio b down to the delayed-ACK value the models assume),
timeout_share feeds both models the timeouts each run measured in place of their own estimates (an
analysis of the same runs: timeout_share.py), tso2_quick runs the quick family with the kernel's own
tcp_min_tso_segs 2 beside tso64_quick with the kit's 64, and n30_loss10 runs n = 1-30 flows at loss 5
and 10% (the reference stops at n 10 and loss 5%; the paper goes to n 100 and loss 10%).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pandas as pd

from . import analysis, timeout_share
from ...judge import stats
from ...judge.claims import GREATER, LESS, Claim, Control, Verdict

SOURCE = "Damjanovic, Welzl, Telek, Heiss: Extending the TCP steady-state throughput equation for parallel TCP flows"
FIGURES_ONLY = "no number: figures"


def tables(results_dir: Path | str) -> dict:
    """runs.csv with the models' predictions (analysis.load, which compacts a sweep first) and the
    controlled runs kept beside it (analysis.load_controls; none in a student's run)."""
    return {"runs": analysis.load(Path(results_dir))["runs"], "controls": analysis.load_controls(Path(results_dir))}


def _judged(runs: pd.DataFrame) -> pd.DataFrame:
    r = runs.dropna(subset=["model1"])
    return r[~r.queued.astype(bool)]


def random_runs(t: dict, low: float = 0.0, high: float = analysis.PAPER_MAX_LOSS) -> pd.DataFrame:
    """The random-loss runs with low < loss <= high (configured netem loss); KeyError naming them if none."""
    r = _judged(t["runs"])
    r = r[(r.scenario == "random") & (r["loss"] > low + 1e-12) & (r["loss"] <= high + 1e-12)]
    if len(r) < 2:
        raise KeyError(f"random-loss runs with {low:g} < loss <= {high:g} (it has {len(r)})")
    return r.reset_index(drop=True)


def droptail_runs(t: dict, high: float = analysis.PAPER_MAX_LOSS) -> pd.DataFrame:
    r = _judged(t["runs"])
    r = r[(r.scenario == "droptail") & (r.p_r <= high + 1e-12)]
    if len(r) < 2:
        raise KeyError(f"DropTail runs with p_r <= {high:g} (it has {len(r)})")
    return r.reset_index(drop=True)


def _against(values: pd.Series, bound: float) -> dict:
    """A one-sample comparison: mean(values) - bound (stats.paired against a constant)."""
    values = values.reset_index(drop=True)
    return stats.paired(values, pd.Series(bound, index=values.index))


def _mean(s: pd.Series) -> float:
    return float(s.mean())


def within_band(model: str, pick) -> Callable[[dict], Verdict]:
    band = analysis.BANDS[model]

    def decide(t: dict) -> Verdict:
        r = pick(t)
        err = r[f"err_{model}"].abs()
        return Verdict.tested(_against(err, band), LESS,
                              {"runs": len(r), "mean_abs_error": _mean(err), "median_error": float(r[f"err_{model}"].median()),
                               "band": band},
                              f"mean |error| {_mean(err):.1%} over {len(r)} runs against the ±{band:.0%} band "
                              f"(the difference: mean |error| − {band:.0%})")
    return decide


def underestimates(model: str, pick, what: str) -> Callable[[dict], Verdict]:
    def decide(t: dict) -> Verdict:
        r = pick(t)
        err = r[f"err_{model}"]
        return Verdict.tested(_against(err, 0.0), LESS, {"runs": len(r), "mean_error": _mean(err),
                                                        "median_error": float(err.median())},
                              f"mean error {_mean(err):+.1%} over {len(r)} {what} (the difference: that mean error, "
                              "model / measured − 1)")
    return decide


def lowest_loss_quarter(t: dict) -> pd.DataFrame:
    r = random_runs(t)
    return r[r.p_r <= r.p_r.quantile(0.25)].reset_index(drop=True)


def low_loss_droptail(t: dict) -> pd.DataFrame:
    return droptail_runs(t, analysis.GRADED_MAX_LOSS)


def gap(r: pd.DataFrame) -> pd.Series:
    """|error of model 1| - |error of n x Padhye(p)| per run (Fig. 16: positive, n x Padhye closer)."""
    return (r.err_model1.abs() - r.err_n_pftk_p.abs()).reset_index(drop=True)


def fig16(t: dict) -> Verdict:
    r = random_runs(t)
    g = gap(r)
    closer = int((r.err_n_pftk_p.abs() < r.err_model1.abs()).sum())
    return Verdict.tested(stats.paired(r.err_model1.abs().reset_index(drop=True),
                                       r.err_n_pftk_p.abs().reset_index(drop=True)), LESS,
                          {"runs": len(r), "mean_gap": _mean(g), "padhye_closer": closer},
                          f"|error| of model 1 − n × Padhye(p): {_mean(g):+.1%} (mean over {len(r)} random-loss "
                          f"runs; n × Padhye closer in {closer})")


def fig17(t: dict) -> Verdict:
    """Model 2 against n x Padhye fed the cumulative p_e, at the larger n as the report reads Fig. 17."""
    r = random_runs(t)
    r = r[r.n >= max(2, r.n.max() // 2)].reset_index(drop=True)
    if len(r) < 2:
        raise KeyError("random-loss runs with several flows")
    d = r.err_n_pftk_pe.abs() - r.err_model2.abs()
    return Verdict.tested(stats.paired(r.err_n_pftk_pe.abs(), r.err_model2.abs()), GREATER,
                          {"runs": len(r), "n_min": int(r.n.min()), "mean_difference": _mean(d)},
                          f"|error| of n × Padhye(p_e) − model 2: {_mean(d):+.1%} (mean over {len(r)} random-loss "
                          f"runs with n ≥ {int(r.n.min())})")


# ------------------------------------------------------------------ controls

def _control(t: dict, name: str) -> pd.DataFrame:
    c = t["controls"].get(name)
    if c is None:
        raise KeyError(f"the control {name} (a reference's controls/{name}/)")
    return c["runs"]


def _recovery_arms(t: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The reno_recovery control's points with Linux's recovery (linux_recovery, run beside it, else
    this run's own) and with Reno's. A control whose runs did not all read the four sysctls back as
    set measured nothing: "not measured", saying so."""
    base = t["controls"]["linux_recovery"]["runs"] if "linux_recovery" in t["controls"] else t["runs"]
    ctrl = _control(t, "reno_recovery")
    applied = analysis.sysctls_applied(t["controls"]["reno_recovery"]["runs_manifest"])
    if any(applied.get(k) != v for k, v in analysis.RENO_RECOVERY.items()):
        raise KeyError("the reno_recovery control's runs with its four sysctls read back as set")
    (_, linux), (_, reno) = analysis.recovery_arms(base, ctrl)
    if len(linux) < 2 or len(reno) < 2:
        raise KeyError("the reno_recovery control's points run with both recoveries")
    return linux, reno


def recovery_moves(outcome, words: str, diverges: Callable[[float], bool]) -> Callable[[dict], Verdict]:
    """Does Reno-like recovery (reno_recovery) shrink `outcome` (per run) against Linux's recovery?
    `diverges(mean with Reno-like recovery)`: the divergence is still there with it (only part explained)."""
    def decide(t: dict) -> Verdict:
        linux, reno = _recovery_arms(t)
        a, b = outcome(linux), outcome(reno)
        return Verdict.tested(stats.welch(a, b), GREATER,
                              {"linux_recovery": _mean(a), "reno_recovery": _mean(b), "runs": [len(a), len(b)]},
                              f"{words} {_mean(a):+.1%} with Linux's recovery, {_mean(b):+.1%} with Reno-like "
                              f"recovery ({len(a)} and {len(b)} runs)"
                              + ("; still diverging with it: part of the divergence" if diverges(_mean(b)) else ""))
    return decide


def paced_moves_gap(t: dict) -> Verdict:
    """Does spacing the packets (paced_20mbit: b falls to the delayed-ACK value) shrink Fig. 16's gap?
    Paired by point against the same points without a rate (linux_recovery)."""
    if "linux_recovery" not in t["controls"]:
        raise KeyError("the control linux_recovery (the paced points without a rate)")
    def by_point(r):
        r = _judged(r)
        r = r[r.scenario == "random"]
        return pd.Series(gap(r).to_numpy(), index=r.loss_cfg.astype(str) + " n" + r.n.astype(int).astype(str))
    paced, bursts = by_point(_control(t, "paced_20mbit")), by_point(t["controls"]["linux_recovery"]["runs"])
    st = stats.paired(bursts, paced)
    return Verdict.tested(st, GREATER, {"pairs": st["pairs"], "gap_bursts": _mean(bursts[paced.index]),
                                        "gap_paced": _mean(paced)},
                          f"Fig. 16's gap {_mean(bursts[paced.index]):+.1%} without a rate, {_mean(paced):+.1%} "
                          f"with 20 Mbit/s ({st['pairs']} points)")


def timeout_share_moves_gap(t: dict) -> Verdict:
    """Does feeding both models the timeout share each run measured (timeouts / loss events, in
    place of Q_TO(E[W_f]) and Padhye's Q) shrink Fig. 16's gap? Paired per random-loss run: an
    analysis of the same runs, no new run (timeout_share)."""
    r = timeout_share.fed(random_runs(t))
    if len(r) < 2:
        raise KeyError("random-loss runs with their timeouts and loss events counted")
    g = timeout_share.gaps(r)
    closer = int((r.err_n_pftk_p_fed.abs() < r.err_model1_fed.abs()).sum())
    return Verdict.tested(stats.paired(g.own, g.fed), GREATER,
                          {"runs": len(r), "gap_own": _mean(g.own), "gap_fed": _mean(g.fed),
                           "timeout_share_max": float(r.timeout_share.max()), "padhye_closer_fed": closer,
                           "model1_fed_median_error": float(r.err_model1_fed.median()),
                           "n_pftk_p_fed_median_error": float(r.err_n_pftk_p_fed.median())},
                          f"Fig. 16's gap {_mean(g.own):+.1%} with the models' own timeout estimates, "
                          f"{_mean(g.fed):+.1%} fed the measured share (at most {r.timeout_share.max():.1%} of the "
                          f"loss events; {len(r)} runs, n × Padhye closer in {closer}); fed it, both overestimate "
                          f"(median error model 1 {r.err_model1_fed.median():+.1%}, n × Padhye "
                          f"{r.err_n_pftk_p_fed.median():+.1%})"
                          + ("; still diverging with it: part of the divergence" if _mean(g.fed) > 0 else ""))


TSO64, TSO2, RANGE = "tso64_quick", "tso2_quick", "n30_loss10"  # controls/NAME/ (experiment.toml says how)


def _random(r: pd.DataFrame) -> pd.DataFrame:
    r = _judged(r)
    return r[r.scenario == "random"]


def _gap_by_run(r: pd.DataFrame) -> pd.Series:
    """Fig. 16's gap per random-loss run, keyed by the run's name (point and repetition)."""
    r = _random(r)
    return pd.Series(gap(r).to_numpy(), index=r.run.astype(str))


def tso_moves_gap(t: dict) -> Verdict:
    """Does the kit's tcp_min_tso_segs 64 (bursts of up to 64 segments from one skb) widen Fig. 16's
    gap against the kernel's own 2? The quick family run with each, paired by run (point and
    repetition): gap with 64 minus gap with 2."""
    kit, own = _control(t, TSO64), _control(t, TSO2)
    g64, g2 = _gap_by_run(kit), _gap_by_run(own)
    both = g64.index.intersection(g2.index)
    g64, g2 = g64[both], g2[both]
    st = stats.paired(g64, g2)
    pps = (_random(own).set_index("run").pps / _random(kit).set_index("run").pps)[both]
    return Verdict.tested(st, GREATER, {"pairs": st["pairs"], "gap_tso64": _mean(g64), "gap_tso2": _mean(g2),
                                        "pps_ratio_tso2_over_tso64": _mean(pps)},
                          f"Fig. 16's gap {_mean(g64):+.1%} with tcp_min_tso_segs 64, {_mean(g2):+.1%} with 2 "
                          f"({st['pairs']} paired random-loss runs; throughput with 2 / with 64: x{_mean(pps):.2f})"
                          + ("; still diverging with it: part of the divergence" if _mean(g2) > 0 else ""))


def more_flows_moves_gap(t: dict) -> Verdict:
    """Does Fig. 16's gap shrink at the larger n the paper plots (n30_loss10: n 20-30 against n 1-4)?
    Model 1's per-flow equation and n x Padhye(p) differ most at large n. Paired within each loss
    rate, the k-th smallest n of each side together (the gap grows with loss far more than with n)."""
    r = _random(_control(t, RANGE))

    def side(sel):
        s = r[sel].sort_values(["loss_cfg", "n"])
        k = s.groupby("loss_cfg").cumcount().astype(str)
        return pd.Series(gap(s).to_numpy(), index=(s.loss_cfg.astype(str) + " #" + k).to_numpy())
    few, many = side(r.n <= 4), side(r.n >= 20)
    st = stats.paired(few, many)
    if st["pairs"] < 2:
        raise KeyError(f"the control {RANGE}'s random-loss runs with n <= 4 and n >= 20 at the same loss")
    losses = ", ".join(sorted(r.loss_cfg.astype(str).unique()))
    return Verdict.tested(st, GREATER, {"pairs": st["pairs"], "gap_n_1_4": _mean(few), "gap_n_20_30": _mean(many),
                                        "losses": losses},
                          f"Fig. 16's gap {_mean(few):+.1%} at n 1-4, {_mean(many):+.1%} at n 20-30 "
                          f"({st['pairs']} pairs at the same loss, {losses})"
                          + ("; still diverging with it: part of the divergence" if _mean(many) > 0 else ""))


def with_range(t: dict) -> dict:
    """The tables with n30_loss10's runs (n up to 30, loss up to 10%) added to the reference's, where
    the control is kept (a student's run has no controls: its own runs alone)."""
    c = t["controls"].get(RANGE)
    return t if c is None else {**t, "runs": pd.concat([t["runs"], c["runs"]], ignore_index=True)}


RECOVERY = "Linux's loss recovery (SACK, RACK, TLP, F-RTO) repairs losses without the timeouts model 1's Reno assumes"
BURSTS = "netem releases each burst at once, so the receiver acknowledges several segments per ACK (b) instead of 2"
TIMEOUTS = ("both models' own timeout estimates (Reno without SACK: Q_TO(E[W_f]) and Padhye's Q) where Linux's "
            "runs measured almost no timeouts")

TSO = "the kit's tcp_min_tso_segs 64 (set on every host) where the paper's kernel sent with its own 2"
FEW_FLOWS = "the reference's n of at most 10, where model 1 and n × Padhye(p) differ least (the paper goes to 100)"

CLAIMS = (
    Claim("model1-random", "Model 1 (per-flow p) works well with random loss",
          FIGURES_ONLY, "Sec. III-A, Figs 3-5",
          "mean |model 1 / measured - 1| over the random-loss runs at loss <= 2% below the kit's 25% band",
          within_band("model1", lambda t: random_runs(t, 0.0, analysis.GRADED_MAX_LOSS))),
    Claim("model1-high-loss", "Model 1 works well from a very low loss level to a high one of 10%",
          "up to 10% loss", "Sec. III-A, Fig. 3",
          "mean |model 1 / measured - 1| over the random-loss runs above 2% loss (up to 10%; with the n30_loss10 "
          "control's where kept) below the 25% band",
          within_band("model1", lambda t: random_runs(with_range(t), analysis.GRADED_MAX_LOSS)),
          (Control("reno_recovery", RECOVERY, recovery_moves(lambda r: r.err_model1.abs(), "model 1's mean |error|",
                                                       lambda m: m > analysis.BANDS["model1"])),)),
    Claim("model2-random", "Model 2 (p_e, p_r) performs well with a broad range of loss probabilities",
          FIGURES_ONLY, "Sec. V-A, Figs 9-11",
          "mean |model 2 / measured - 1| over the random-loss runs (loss <= 10%) below the kit's 35% band",
          within_band("model2", random_runs)),
    Claim("model2-small-loss", "Model 2 slightly underestimates the throughput for a very small loss probability",
          FIGURES_ONLY, "Sec. V",
          "mean signed error of model 2 below zero over the random-loss runs in the lowest quarter of p_r",
          underestimates("model2", lowest_loss_quarter, "random-loss runs in the lowest quarter of p_r")),
    Claim("fig16", "n × Padhye (per-flow p) has an error that grows with loss; model 1 stays good up to 10%",
          FIGURES_ONLY, "Sec. VII, Fig. 16",
          "mean of |error of model 1| - |error of n × Padhye(p)| over the random-loss runs below zero "
          "(model 1 closer)", fig16,
          (Control("reno_recovery", RECOVERY, recovery_moves(gap, "Fig. 16's gap", lambda m: m > 0)),
           Control("paced_20mbit", BURSTS, paced_moves_gap),
           Control("timeout_share", TIMEOUTS, timeout_share_moves_gap),
           Control(TSO2, TSO, tso_moves_gap),
           Control(RANGE, FEW_FLOWS, more_flows_moves_gap))),
    Claim("fig17", "With the cumulative p_e, model 2 is significantly better than n × Padhye",
          FIGURES_ONLY, "Sec. VII, Fig. 17",
          "mean of |error of n × Padhye(p_e)| - |error of model 2| above zero over the random-loss runs with "
          "n at least half the largest", fig17),
    Claim("droptail-model1", "Model 1 also works well with bursty (DropTail) loss",
          FIGURES_ONLY, "Sec. III-B, Figs 6-7",
          "mean |model 1 / measured - 1| over the DropTail runs with p_r <= 10% below the 25% band",
          within_band("model1", droptail_runs)),
    Claim("droptail-model2-low-loss", "Model 2 slightly underestimates with DropTail at a low loss probability",
          FIGURES_ONLY, "Sec. V-B, Figs 12-13",
          "mean signed error of model 2 below zero over the DropTail runs with p_r <= 2%",
          underestimates("model2", low_loss_droptail, "DropTail runs with p_r <= 2%")),
)
