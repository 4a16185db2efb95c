"""Lab 3 analysis: how well the models fit the runs: median errors per group, Fig. 16's
comparison of model 1 with n x Padhye, the timeouts each assumes, the RTT fed to them."""

from __future__ import annotations

import pandas as pd

from . import models
from ...judge import stats
from .fmt import pct
from .predictions import GRADED_MAX_LOSS, MODELS, QUEUED, groups, predict


def error_summary(runs: pd.DataFrame) -> pd.DataFrame:
    """Median |relative error| per model and group of runs (see `groups`)."""
    rows = [{"runs": name, "count": len(g), **{col: float(g[f"err_{col}"].abs().median()) for col in MODELS}}
            for name, g in groups(runs)]
    return pd.DataFrame(rows, columns=["runs", "count", *MODELS])


def error_section(runs: pd.DataFrame) -> list[str]:
    """The report's table of `error_summary`."""
    return [
        "Median |relative error| per model:",
        "",
        "| runs | count | " + " | ".join(MODELS.values()) + " |",
        "|---|---|" + "---|" * len(MODELS),
        *[f"| {s['runs']} | {s['count']} | " + " | ".join(f"{s[c]:.0%}" for c in MODELS) + " |"
          for _, s in error_summary(runs).iterrows()],
        "",
    ]


def padhye_vs_model1(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group: in how many runs n x Padhye fed the per-flow p came closer to the measured throughput
    than model 1, both medians of |error| (the paper's Fig. 16 compares the two), and the verdict:
    the per-run difference |error of model 1| − |error of n x Padhye| (paired: both models predict
    the same run), its t interval Holm-corrected over the groups (one family, `stats.holm`), "n ×
    Padhye closer" or "model 1 closer" where that interval excludes zero, else "not resolved" with
    the runs that would resolve it."""
    keys, family = [], []
    for name, g in groups(runs, everything=False):
        if name == QUEUED or "outside" in name:  # not the paper's conditions: no verdict on Fig. 16
            continue
        closer = g["err_n_pftk_p"].abs() < g["err_model1"].abs()
        keys.append({"runs": name, "count": len(g), "padhye_closer": int(closer.sum()),
                     "model1": float(g["err_model1"].abs().median()),
                     "n_pftk_p": float(g["err_n_pftk_p"].abs().median())})
        gi = g.reset_index(drop=True)
        family.append(stats.paired(gi["err_model1"].abs(), gi["err_n_pftk_p"].abs()))
    rows = []
    for k, st in zip(keys, stats.holm(family)):
        rows.append({**k, "diff": st["diff"], "half": st["half"], "level": st["level"],
                     "runs_needed": st["runs_needed"],
                     "verdict": stats.verdict(st, "n × Padhye closer", "model 1 closer")})
    return pd.DataFrame(rows, columns=["runs", "count", "padhye_closer", "model1", "n_pftk_p", "diff", "half", "level",
                                       "runs_needed", "verdict"])


def padhye_sentence(table: pd.DataFrame) -> str:
    """Where n x Padhye(p) came closer than model 1, in plain words, from `padhye_vs_model1`: a
    verdict only where the Holm-corrected interval of the per-run difference excludes zero."""
    if table.empty:
        return "no runs to compare"

    def named(names):
        return ", ".join(f"“{x}”" for x in names)

    parts = [f"“{t.runs}”: closer in {t.padhye_closer} of {t.count} runs, median |error| {t.n_pftk_p:.0%} vs "
             f"model 1's {t.model1:.0%}, |error| difference {t.diff:+.1%} ± {t.half:.1%} "
             f"({t.level * 100:.2f}".rstrip("0").rstrip(".") + f"%), {t.verdict}"
             + (f", {stats.fmt_runs(t.runs_needed)} runs to resolve" if t.verdict == "not resolved" else "")
             for t in table.itertuples()]
    better = table[table.verdict == "n × Padhye closer"].runs.tolist()
    worse = table[table.verdict == "model 1 closer"].runs.tolist()
    open_ = table[table.verdict == "not resolved"].runs.tolist()
    said = []
    if better:
        said.append(f"**n × Padhye(p) came closer than model 1 in {named(better)}**, against the paper's Fig. 16")
    if worse:
        said.append(f"model 1 came closer in {named(worse)}, as in the paper's Fig. 16")
    if open_:
        said.append(f"not resolved in {named(open_)}")
    return f"{'; '.join(said)} (Holm-corrected over the groups: {'; '.join(parts)})"


def timeouts_vs_model1(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run with a prediction: the timeouts measured in the window against those model 1 assumes.

    Model 1 takes a loss event to end in a timeout with probability Q_TO(E[W_f]) ((26)/(27): fewer
    than three duplicate ACKs, Reno's recovery without SACK), so it assumes Q_TO x (the run's loss
    events) timeouts; `in_timeout` is the share of the n flows it has sitting in one, E[nTO]/n.
    Padhye's model (n x Padhye) assumes Q^(p, E[W]) x (loss events): `padhye_timeouts`.
    """
    r = runs.dropna(subset=["model1"])
    t = models.per_flow_terms(r.n, r.p, r.rtt, r["T"], r["model_b"].astype(float))
    q_padhye = models.pftk_timeout_probability(r.p, r["model_b"].astype(float))
    return pd.DataFrame({"run": r.run, "scenario": r.scenario, "n": r.n, "loss": r["loss"],
                         "loss_events": r.loss_events_per_flow, "timeouts": r.timeouts,
                         "q_to": t["q1"], "model1_timeouts": t["q1"] * r.loss_events_per_flow,
                         "padhye_timeouts": q_padhye * r.loss_events_per_flow,
                         "in_timeout": t["q"] / r.n, "err_model1": r.err_model1}).reset_index(drop=True)


def timeouts_section(runs: pd.DataFrame, window_s, controlled: bool = False) -> list[str]:
    """The report's table of `timeouts_vs_model1` per group of runs, and what it says above 2 % loss
    (`timeouts_paragraph`)."""
    to = timeouts_vs_model1(runs)
    to_groups = [(name, to[to.run.isin(g.run)]) for name, g in groups(runs, everything=False)]
    para = timeouts_paragraph(to, window_s, controlled)
    return [
        "Timeouts in the measurement window, measured (a retransmission after a silence of ≥ 0.8 RTO) and as "
        "model 1 assumes them (Q_TO × loss events), median per run:",
        "",
        "| runs | count | loss events | timeouts measured | timeouts model 1 | share of flows in a timeout, model 1 |",
        "|---|---|---|---|---|---|",
        *[f"| {name} | {len(g)} | {g.loss_events.median():.0f} | {g.timeouts.median():g} (max "
          f"{int(g.timeouts.max())}) | {g.model1_timeouts.median():.0f} | {g.in_timeout.median():.0%} |"
          for name, g in to_groups if len(g)],
        "",
        *([para, ""] if para else []),
    ]


def timeouts_paragraph(to: pd.DataFrame, window_s, controlled: bool = False) -> str:
    """What the errors above 2 % loss come from, in numbers: timeouts measured against model 1's."""
    high = to[(to.scenario == "random") & (to["loss"] > GRADED_MAX_LOSS + 1e-12)]
    if high.empty:
        return ""
    err = float(high.err_model1.median())
    fewer = bool((high.timeouts < high.model1_timeouts).all())
    text = (f"**Above 2 % random loss** ({len(high)} runs), model 1's median error is {pct(err)}. It assumes "
            f"that a loss event ends in a timeout with probability Q_TO = {high.q_to.min():.2f}–{high.q_to.max():.2f} "
            "((26)/(27): fewer than three duplicate ACKs, which is Reno's recovery without SACK), i.e. "
            f"{high.model1_timeouts.min():.0f}–{high.model1_timeouts.max():.0f} timeouts per run (median "
            f"{high.model1_timeouts.median():.0f}), with {high.in_timeout.min():.0%}–{high.in_timeout.max():.0%} "
            f"of the flows in a timeout (or the slow start after it) at any time; the runs had {int(high.timeouts.min())}–"
            f"{int(high.timeouts.max())} timeouts each in {window_s} s (median {high.timeouts.median():g}), "
            f"out of {int(high.loss_events.min())}–{int(high.loss_events.max())} loss events. ")
    if fewer and err < 0:
        text += ("Linux recovers those losses with SACK, RACK and tail-loss probes, without the timeout the "
                 "model's Reno waits for, and keeps sending: that explains the sign of the error, not its size. "
                 "n × Padhye(p) has a timeout term of the same size and came much closer, so the timeouts "
                 "are not the whole story. "
                 + ("The controlled run below switches Linux's newer recovery off at these points."
                    if controlled else "The controlled run (the same points with RACK, TLP, F-RTO and SACK off, "
                    "reno_recovery in experiment.toml) is a runnable variant, not yet run."))
    elif fewer:
        text += ("Linux had fewer timeouts than the model assumes, yet the model does not underestimate: the "
                 "timeouts alone do not explain these errors.")
    else:
        text += "Some runs had as many timeouts as the model assumes: look at those runs before explaining the error."
    return text


RTTS = {"min_rtt": "kernel min RTT", "srtt": "kernel srtt", "ack_rtt": "tshark ack_rtt"}


def rtt_sensitivity(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group and RTT measure: its median (ms) and the median signed error of models 1 and 2 when fed
    that RTT, everything else as measured (p, p_e, p_r and the loss events counted with the run's
    `rtt`, T, b). Empty for results recorded before the kernel's RTTs were."""
    if not set(RTTS) <= set(runs.columns):
        return pd.DataFrame(columns=["runs", "rtt", "count", "rtt_ms", "model1", "model2"])
    rows = []
    for name, g in groups(runs):
        for col, label in RTTS.items():
            alt = predict(g.assign(rtt=g[col]))
            alt = alt[g[col].to_numpy() > 0]
            if alt.empty:
                continue
            rows.append({"runs": name, "rtt": label, "count": len(alt), "rtt_ms": float(alt.rtt.median() * 1e3),
                         "model1": float(alt.err_model1.median()), "model2": float(alt.err_model2.median())})
    return pd.DataFrame(rows, columns=["runs", "rtt", "count", "rtt_ms", "model1", "model2"])


def rtt_section(runs: pd.DataFrame) -> list[str]:
    """The report's table of `rtt_sensitivity`; nothing for results without the kernel's RTTs."""
    sens = rtt_sensitivity(runs)
    if sens.empty:
        return []
    return [
        "The RTT fed to the models: median error of each model fed the kernel's min RTT, its srtt or tshark's "
        "ack_rtt (everything else as measured). ack_rtt includes the time the receiver held delayed ACKs "
        "back; srtt partly (Linux takes its sample from the oldest segment an ACK covers); min RTT not, "
        "but it also leaves out any queue.",
        "",
        "| runs | RTT | count | median RTT | model 1 | model 2 |",
        "|---|---|---|---|---|---|",
        *[f"| {t.runs} | {t.rtt} | {t.count} | {t.rtt_ms:.1f} ms | {pct(t.model1)} | {pct(t.model2)} |"
          for t in sens.itertuples()],
        "",
    ]
