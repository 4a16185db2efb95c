"""Lab 3 analysis: the ACK ratio b at random loss against the delayed-ACK 2 the models assume,
and the paced* controls that space the packets to test why."""

from __future__ import annotations

import json
import math

import pandas as pd

from ...judge import stats
from ...net.links import WIRE_BYTES, LinkSpec
from .controls import data_netem
from .fmt import pct
from .predictions import MODELS


# The ACK ratio's controls, named paced*: the random-loss link with a rate above what the flows send
# (experiment.toml [random] rate), which spaces the packets, each beside linux_recovery
# (the same points and window, netem without a rate, which releases each burst at once).
ACK_MODELS = ("model1", "model2", "n_pftk_p")
NO_RATE = "no rate (bursts)"


def _random_points(r: pd.DataFrame) -> pd.DataFrame:
    r = r.dropna(subset=["model1"])
    r = r[(r.scenario == "random") & ~r.queued.astype(bool)]
    return r.set_index(r.loss_cfg.astype(str) + " n" + r.n.astype(int).astype(str), drop=False)


def link_rate(control: dict) -> float | None:
    """The rate (bit/s) on a control's random-loss link, from its runs' parameters; None without one."""
    for v in control["runs_manifest"].get("parameters", pd.Series(dtype=str)).dropna():
        link = LinkSpec.parse((json.loads(v).get("link") or "") if str(v).startswith("{") else "")
        if link.rate_bps:
            return link.rate_bps
    return None


def _rated_words(rated: int | None, runs: int) -> str:
    if rated is None:
        return f"{runs} runs, their links' qdiscs not kept"
    return f"{runs} runs, netem without a rate" if rated == 0 else f"{rated} of {runs} runs behind a rate on the link"


def paced_controls(controls: dict) -> list[tuple[str, dict]]:
    """The paced* controls, fastest rate first."""
    named = [(k, c) for k, c in controls.items() if k.startswith("paced")]
    return sorted(named, key=lambda kc: -(link_rate(kc[1]) or 0))


def _arm_label(rate: float | None) -> str:
    if rate is None:
        return NO_RATE
    said = f"{rate / 1e9:g} Gbit/s" if rate >= 1e9 else f"{rate / 1e6:g} Mbit/s"
    return f"rate {said} ({WIRE_BYTES * 8 / rate * 1e6:.3g} µs between full-size packets)"


def ack_ratio_table(base: pd.DataFrame, paced: list[tuple[str, dict]]) -> pd.DataFrame:
    """For each paced control, two rows over the points it shares with `base` (the same points
    without a rate): runs, the ACK ratio b (segments newly acknowledged per ACK that advanced, the
    capture), how the receiver acknowledged (its nstat over the whole transfer: ACK-carrying
    segments sent per segment received; the share of them sent by the delayed-ACK timer; segments
    coalesced in the socket's backlog), and each model's median signed error."""
    b = _random_points(base)
    rows = []
    for name, ctrl in paced:
        c = _random_points(ctrl["runs"])
        shared = sorted(set(b.index) & set(c.index))
        for control, label, g in (("linux_recovery", NO_RATE, b.loc[shared]),
                                  (name, _arm_label(link_rate(ctrl)), c.loc[shared])):
            if g.empty:
                continue
            num = {k: pd.to_numeric(g[k], errors="coerce") if k in g else pd.Series(math.nan, index=g.index)
                   for k in ("rcv_out_segs", "rcv_in_segs", "rcv_delayed_acks", "rcv_backlog_coalesce")}
            rows.append({"control": control, "paired_with": name, "arm": label, "count": len(g),
                         "points": ", ".join(shared), "b": float(g.b.median()),
                         "b_min": float(g.b.min()), "b_max": float(g.b.max()),
                         "acks_per_segment": float((num["rcv_out_segs"] / num["rcv_in_segs"]).median()),
                         "delayed_share": float((num["rcv_delayed_acks"] / num["rcv_out_segs"]).median()),
                         "backlog_coalesce": float(num["rcv_backlog_coalesce"].median()),
                         **{m: float(g[f"err_{m}"].median()) for m in ACK_MODELS}})
    return pd.DataFrame(rows)


def ack_ratio_effect(base: pd.DataFrame, paced: list[tuple[str, dict]]) -> pd.DataFrame:
    """Does spacing the packets change how each model fits? Per paced control and model: the
    per-point difference of the model's signed error, paced − not; one Holm family for all."""
    b = _random_points(base)
    keys, family = [], []
    for name, ctrl in paced:
        c = _random_points(ctrl["runs"])
        for m in ACK_MODELS:
            keys.append({"control": name, "arm": _arm_label(link_rate(ctrl)), "model": MODELS[m]})
            family.append(stats.paired(c[f"err_{m}"], b[f"err_{m}"]))
    return pd.DataFrame([{**k, "diff": st["diff"], "half": st["half"], "level": st["level"], "pairs": st["pairs"],
                          "runs_needed": st["runs_needed"],
                          "verdict": stats.verdict(st, "higher when paced", "lower when paced")}
                         for k, st in zip(keys, stats.holm(family))])


def _effect_words(eff: pd.DataFrame) -> str:
    return "; ".join(f"{t.control}: {t.model} {t.diff:+.1%} ± {t.half:.1%} ({t.level * 100:.2f}".rstrip("0").rstrip(".")
                     + f"%, {t.pairs} pairs), {t.verdict}"
                     + (f", {stats.fmt_runs(t.runs_needed)} pairs to resolve" if t.verdict == "not resolved" else "")
                     for t in eff.itertuples())


def offloads_off(manifest: dict) -> bool:
    """Every interface of a run's network read back with GRO, GSO and TSO off (`ethtool -k`, recorded
    by the kit since the paced control); False where any is on or none was recorded."""
    offl = (manifest.get("network") or {}).get("offloads") or {}
    keys = ("generic-receive-offload", "generic-segmentation-offload", "tcp-segmentation-offload")
    return bool(offl) and all(dev.get(k) == "off" for dev in offl.values() for k in keys)


ACK_DIVERGENCE = "ACK ratio b at random loss well above the delayed-ACK 2 the models assume"


def rated_runs(runs_manifest: pd.DataFrame | None, runs) -> int | None:
    """How many of `runs` had a rate on the data direction's netem as the kernel listed it (their
    runs-manifest `qdiscs`); None where no per-run qdiscs were kept."""
    if runs_manifest is None or "qdiscs" not in runs_manifest or "run" not in runs_manifest:
        return None
    rm = runs_manifest[runs_manifest.run.isin(list(runs))]
    return int(sum("rate" in data_netem(q) for q in rm.qdiscs.dropna())) if len(rm) else None


def ack_ratio_row(r: pd.DataFrame, controls: dict, runs_manifest: pd.DataFrame | None = None
                  ) -> tuple[str, str, str] | None:
    """The divergence row of the ACK ratio: b at random loss without a rate (the linux_recovery
    control) against the delayed-ACK value, and what the paced* controls changed. 'cause measured'
    only where a rate brings b to <= 3 with every offload read back off."""
    base = controls.get("linux_recovery")
    if base is None:
        return None
    rnd = _random_points(base["runs"])
    if rnd.empty or rnd.b.median() <= 3:
        return None
    dt = r[(r.scenario == "droptail") & ~r.queued.astype(bool)]
    ref = _random_points(r) if "model1" in r else r.iloc[0:0]
    seen = (f"random loss, netem without a rate (control linux_recovery, {len(rnd)} runs): b {rnd.b.median():.1f} "
            f"(median; {rnd.b.min():.1f}–{rnd.b.max():.1f})"
            + (f"; random loss in this reference ({_rated_words(rated_runs(runs_manifest, ref.run), len(ref))}): "
               f"b {ref.b.median():.1f} (median; {ref.b.min():.1f}–{ref.b.max():.1f})" if len(ref) else "")
            + (f"; DropTail (this reference, its rate spacing the packets): b {dt.b.median():.1f}" if len(dt) else ""))
    paced = paced_controls(controls)
    tbl = ack_ratio_table(base["runs"], paced) if paced else pd.DataFrame()
    if tbl.empty:
        return (ACK_DIVERGENCE, seen, "unexplained, tried: nothing yet. Runnable: the same points with a rate on the "
                "link (experiment.toml, paced)")
    arms = tbl[tbl.control != "linux_recovery"]
    offs = all(offloads_off(c.get("manifest") or {}) for c in [base, *dict(paced).values()])
    said = "; ".join(f"{t.arm} (control {t.control}, {t.points}): b {t.b:.1f} against {b.b:.1f} without it, "
                     f"the receiver sending {t.acks_per_segment:.2f} ACKs per segment received against "
                     f"{b.acks_per_segment:.2f}"
                     for t, b in zip(arms.itertuples(), tbl[tbl.control == "linux_recovery"].itertuples()))
    said += (f"; the delayed-ACK timer sent {tbl.delayed_share.min():.0%}–{tbl.delayed_share.max():.0%} of the "
             f"receiver's ACKs, backlog coalescing took {tbl.backlog_coalesce.max():.0f} segments at most (medians). "
             f"The models' fit, paced − not (signed error, Holm over all): "
             f"{_effect_words(ack_ratio_effect(base['runs'], paced))}")
    spaced, close = arms[arms.b <= 3], arms[arms.b > 3]
    growth = (". Linux grows cwnd per segment acknowledged, not per ACK (tcp_cong_avoid_ai with `acked`), so "
              "the b of the models' window growth is 1 whatever the ratio, as fed to them")
    if len(spaced) and offs:
        return (ACK_DIVERGENCE, seen,
                "cause measured: how closely the packets follow each other on the link, not offloads (GRO, GSO "
                "and TSO read back off on every interface). With " + " and ".join(spaced.arm) + " b falls to "
                "the delayed-ACK value" + (", with " + " and ".join(close.arm) + " it does not" if len(close) else "")
                + ": " + said + growth)
    return (ACK_DIVERGENCE, seen,
            f"unexplained, tried: spacing the packets with a rate ({'; '.join(arms.arm)}), which left b above 3"
            + ("" if offs else "; the offloads were not read back off on every interface") + f": {said}" + growth
            + ". Runnable: a slower rate, e.g. the 20 Mbit/s this reference's random-loss runs were held to "
            "(experiment.toml, paced_20mbit)")


def ack_ratio_section(controls: dict) -> list[str]:
    """The report's section on the paced* controls beside linux_recovery; nothing where either is
    missing."""
    base, paced = controls.get("linux_recovery"), paced_controls(controls)
    if base is None or not paced:
        return []
    tbl = ack_ratio_table(base["runs"], paced)
    if tbl.empty:
        return []
    eff = ack_ratio_effect(base["runs"], paced)
    return [
        "### Controlled run: the ACK ratio (paced)",
        "",
        "The random-loss points with a rate on the link above what the flows send, which spaces their packets (controls "
        f"{', '.join(n for n, _ in paced)}), each beside the same points without one (control linux_recovery: "
        "same kit, window and kernel). b from the capture; the receiver's ACKs from its nstat over the whole "
        "transfer (TcpOutSegs per TcpInSegs, duplicate ACKs included; TcpExtDelayedACKs; "
        "TcpExtTCPBacklogCoalesce). Medians per run.",
        "",
        "| link | points | runs | b | ACKs per segment received | by the delayed-ACK timer | "
        "backlog-coalesced segments | model 1 | model 2 | n × Padhye(p) |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *[f"| {t.arm} | {t.points} | {t.count} | {t.b:.1f} ({t.b_min:.1f}–{t.b_max:.1f}) | {t.acks_per_segment:.2f} | "
          f"{t.delayed_share:.0%} | {t.backlog_coalesce:.0f} | {pct(t.model1)} | {pct(t.model2)} | "
          f"{pct(t.n_pftk_p)} |" for t in tbl.itertuples()],
        "",
        "Signed error, paced − not, per point, Holm-corrected over every control and model: " + _effect_words(eff) + ".",
        "",
    ]
