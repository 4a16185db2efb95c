"""Lab 3 analysis: the reno_recovery control of Fig. 16's divergence in figures (Linux's loss
recovery against the models' Reno, beside linux_recovery; its verdict is the claims ledger's), and
(24)'s count of the flows in a timeout."""

from __future__ import annotations

import math

import pandas as pd

from . import models
from ...judge import stats
from .controls import sysctls_applied
from .fit import timeouts_vs_model1
from .fmt import pct
from .predictions import GRADED_MAX_LOSS


# The sysctls of the `reno_recovery` variant: Linux's loss recovery made as close to the models'
# Reno as it goes (no RACK, no tail-loss probe, no F-RTO, no SACK: NewReno fast recovery).
RENO_RECOVERY = {"net.ipv4.tcp_recovery": "0", "net.ipv4.tcp_early_retrans": "0", "net.ipv4.tcp_frto": "0",
                 "net.ipv4.tcp_sack": "0"}


def _median_of(g: pd.DataFrame, col: str) -> float:
    """A column's median, NaN where runs recorded before it was kept have none."""
    return float(pd.to_numeric(g[col], errors="coerce").median()) if col in g else math.nan


def recovery_arms(base: pd.DataFrame, ctrl: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """The control's random-loss points (loss, n), run with Linux's loss recovery (`base`: the
    linux_recovery control where it was run beside it, else the reference's runs there) and with
    Reno's (`ctrl`), neither `queued`."""
    def points(r):
        r = r.dropna(subset=["model1"])
        return r[(r.scenario == "random") & ~r.queued.astype(bool)]
    c = points(ctrl)
    keys = set(zip(c.loss_cfg.astype(str), c.n))
    b = points(base)
    b = b[[k in keys for k in zip(b.loss_cfg.astype(str), b.n)]]
    return [("Linux's recovery (SACK, RACK, TLP, F-RTO)", b), ("Reno-like recovery (all four off)", c)]


def recovery_table(base: pd.DataFrame, ctrl: pd.DataFrame) -> pd.DataFrame:
    """Per arm of `recovery_arms`: runs, median signed error of model 1 and of n x Padhye(p), the
    timeouts measured (a retransmission after a silence of >= 0.8 RTO) against those each model
    assumes (its timeout probability x the run's loss events), fast recoveries and tail-loss probes
    (nstat, whole transfer), and Fig. 16's verdict: the per-run difference |error of model 1| −
    |error of n x Padhye(p)|, its t interval Holm-corrected over the two arms."""
    arms = recovery_arms(base, ctrl)
    keys, family = [], []
    for name, g in arms:
        if g.empty:
            continue
        to = timeouts_vs_model1(g)
        keys.append({"arm": name, "count": len(g), "losses": ", ".join(sorted(set(g.loss_cfg.astype(str)),
                                                                              key=lambda x: float(x.rstrip("%")))),
                     "flows": ", ".join(str(int(n)) for n in sorted(g.n.unique())),
                     "model1": float(g.err_model1.median()), "n_pftk_p": float(g.err_n_pftk_p.median()),
                     "model2": _median_of(g, "err_model2"),
                     "abs_model1": float(g.err_model1.abs().median()), "abs_n_pftk_p": float(g.err_n_pftk_p.abs().median()),
                     "loss_events": float(to.loss_events.median()), "timeouts": float(to.timeouts.median()),
                     "timeouts_max": float(to.timeouts.max()), "timeouts_share": float((to.timeouts / to.loss_events).median()),
                     "model1_timeouts": float(to.model1_timeouts.median()),
                     "padhye_timeouts": float(to.padhye_timeouts.median()),
                     "recoveries": _median_of(g, "recoveries_nstat"), "loss_probes": _median_of(g, "loss_probes_nstat")})
        gi = g.reset_index(drop=True)
        family.append(stats.paired(gi["err_model1"].abs(), gi["err_n_pftk_p"].abs()))
    rows = [{**k, "diff": st["diff"], "half": st["half"], "level": st["level"], "runs_needed": st["runs_needed"],
             "verdict": stats.verdict(st, "n × Padhye closer", "model 1 closer")}
            for k, st in zip(keys, stats.holm(family))]
    return pd.DataFrame(rows)


def timeout_count_effect(runs: pd.DataFrame) -> dict | None:
    """What (24)'s count of the flows in a timeout costs model 1 above 2 % random loss: its median
    error as published and with the self-consistent count (`models.parallel_per_flow_consistent`,
    a diagnostic, never reported as a model), beside n x Padhye(p)'s. None without such runs."""
    r = runs.dropna(subset=["model1"])
    g = r[(r.scenario == "random") & ~r.queued.astype(bool) & (r["loss"] > GRADED_MAX_LOSS + 1e-12)]
    if g.empty:
        return None
    consistent = models.parallel_per_flow_consistent(g.n, g.p, g.rtt, g["T"], g["model_b"].astype(float))
    return {"count": len(g), "model1": float(g.err_model1.median()),
            "consistent": float((consistent / g.pps - 1).median()), "n_pftk_p": float(g.err_n_pftk_p.median())}


def _count_words(e: dict | None) -> str:
    if e is None:
        return ""
    gap = e["n_pftk_p"] - e["model1"]
    closed = (e["consistent"] - e["model1"]) / gap if gap else math.nan
    share = "most" if closed > 0.5 else "part" if closed > 0.1 else "little"
    return (f"; counting the flows in a timeout self-consistently (a flow in a timeout makes no loss events, so "
            f"the TD period stretches; a computation on the same runs, not a model the paper gives) moves model "
            f"1's median error above 2% from {pct(e['model1'])} to {pct(e['consistent'])} ({e['count']} runs; "
            f"n × Padhye(p) {pct(e['n_pftk_p'])}): {share} of the gap to n × Padhye(p) is (24)'s count of the flows "
            "in a timeout")


def timeouts_tried(base: pd.DataFrame) -> str:
    """What counting the timeouts on the same runs says of Fig. 16's divergence, in words: a
    computation, not a control (the ledger's controls decide the cause: divergences.ledger_rows)."""
    return ("counting timeouts (Linux had far fewer than model 1 assumes above 2% loss: that explains the "
            "sign of model 1's error, not its size, since n × Padhye(p) has a timeout term of the same size)"
            + _count_words(timeout_count_effect(base)))


def recovery_section(r: pd.DataFrame, controls: dict) -> list[str]:
    """The report's section on the reno_recovery control, beside the same points with Linux's
    recovery (the linux_recovery control where it was run, else the reference's runs); nothing
    where it was not run."""
    control, linux = controls.get("reno_recovery"), controls.get("linux_recovery")
    tbl = recovery_table(linux["runs"] if linux else r, control["runs"]) if control is not None else pd.DataFrame()
    if tbl.empty:
        return []
    applied = sysctls_applied(control["runs_manifest"])
    rm = control["runs_manifest"]
    return [
        "### Controlled run: the models' Reno recovery (reno_recovery)",
        "",
        f"The random-loss points at loss {tbl.losses.iloc[-1]} run again with Linux's newer loss recovery off on the sender "
        f"(sysctls read back in every run: {', '.join(f'{k}={v}' for k, v in applied.items()) or 'not recorded'}; "
        f"kernel {', '.join(sorted(set(rm.kernel.dropna().astype(str)))) or '?'}, "
        f"{', '.join(sorted(set(rm['where'].dropna().astype(str)))) or '?'}, commit "
        f"{', '.join(sorted(set(rm.commit.dropna().astype(str)))) or '?'}). Without SACK, Linux repairs a loss by "
        "NewReno fast recovery (three duplicate ACKs, one retransmission per partial ACK) or a timeout. "
        + ("The rows with Linux's recovery are the control linux_recovery, the same points run beside it "
           "(same kit, kernel and window). " if linux else "The rows with Linux's recovery are this reference's runs "
           "at the same points. ")
        + "Medians per "
        "run; timeouts assumed = the model's timeout probability × the run's loss events; fast recoveries and "
        "tail-loss probes from nstat over the whole transfer (warm-up included). The verdict is Fig. 16's: "
        "|error of model 1| − |error of n × Padhye(p)| per run, Holm-corrected over the two rows.",
        "",
        "| recovery | runs | model 1 | n × Padhye(p) | model 2 | loss events | timeouts measured | timeouts model 1 | "
        "timeouts Padhye | fast recoveries | tail-loss probes | \\|error\\| difference | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {t.arm} | {t.count} | {pct(t.model1)} | {pct(t.n_pftk_p)} | {pct(t.model2)} | {t.loss_events:.0f} | "
          f"{t.timeouts:g} (max {t.timeouts_max:g}) | {t.model1_timeouts:.0f} | {t.padhye_timeouts:.0f} | "
          f"{'–' if math.isnan(t.recoveries) else f'{t.recoveries:.0f}'} | "
          f"{'–' if math.isnan(t.loss_probes) else f'{t.loss_probes:.0f}'} | "
          f"{t.diff:+.1%} ± {t.half:.1%} ({t.level * 100:.2f}".rstrip("0").rstrip(".") + f"%) | {t.verdict} |"
          for t in tbl.itertuples()],
        "",
    ]
