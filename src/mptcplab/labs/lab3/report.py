"""Lab 3 analysis: the "paper vs this run" markdown report, one function per section (the
controlled runs' and the models' fit sections are their own modules')."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ...judge import claims as judged, provenance
from .ack_ratio import ack_ratio_section
from .controls import load_controls
from .divergences import divergences
from .fit import error_section, padhye_sentence, padhye_vs_model1, rtt_section, timeouts_section
from .fmt import cell, pct
from .predictions import FILL_MIN, GRADED_MAX_LOSS, PAPER_MAX_LOSS, QUEUE_LIMIT, within_band
from .recovery import recovery_section
from .sweep import load, one_way_delay


def _header(r: pd.DataFrame, man: dict) -> list[str]:
    """The title, what this run was (kernel, delay, window, what the models are fed), what the paper
    validated with, and which runs were `queued`."""
    plat, params = man.get("platform") or {}, man.get("parameters") or {}
    queued = r[r.queued.astype(bool)]
    rtt_fed = ", ".join(sorted(set(r["rtt_source"].dropna()))) if "rtt_source" in r else "tshark ack_rtt"
    note = (f" {len(queued)} run(s) ({', '.join(queued.run)}) were `queued`: not limited by the scenario alone "
            f"(random loss with an RTT above {QUEUE_LIMIT} x the base RTT, or a DropTail bottleneck that sent under "
            f"{FILL_MIN:.0%} of its rate), so they are reported separately and not held against the bands; the "
            "Divergences table says what held them." if len(queued) else
            f" No run was `queued`: every random-loss run kept its RTT within {QUEUE_LIMIT} x the base RTT and every "
            f"DropTail bottleneck sent at least {FILL_MIN:.0%} of its rate, so every run is held against the bands "
            "its loss puts it in.")
    return [
        "# Lab 3 — paper vs this run",
        "",
        f"Kernel {plat.get('kernel_release', '?')} ({plat.get('where', '?')}), TCP {params.get('cc', 'reno')}, "
        f"one-way delay {one_way_delay(params)} each way, {len(r)} runs with a model prediction; "
        f"steady state {params.get('steady_s', '?')} s after a {params.get('warmup_s', '?')} s warm-up; "
        f"b fed to the models: {params.get('model_b', '?')}; RTT fed to the models: {rtt_fed}. Errors are "
        "model / measured − 1 (positive: the model overestimates). The paper validated with ns-2 simulations "
        "(a dumbbell: a 1 Gbit/s bottleneck of 30 or 100 ms with RED and uniform random loss, or a 30 ms "
        "DropTail bottleneck of 1–200 Mbit/s with a one-BDP queue; it does not say which TCP variant the "
        "simulated senders ran) and with "
        "n = 1–10 real uploads from a Linux 2.6.17 host to two Linux hosts with SACK enabled. It shows figures, "
        "not numbers: the left column is its claim, the right one what this run measured." + note,
        "",
    ]


def _claims(doc: dict | None) -> list[str]:
    """The verdicts runner.conclude judged before this report (claims.json, labs/lab3/claims.py)."""
    if doc is None:
        return ["No claims.json beside these tables: the paper's claims, and the divergences they decide, are not "
                "judged here (`mptcplab notebooks reference lab3 DIR --report-only` judges them and writes this "
                "report again).", ""]
    return ["## The paper's claims, judged on this run (claims.json)", "", judged.markdown(doc)]


def _median_signed(g: pd.DataFrame, col: str) -> float:
    return float(g[f"err_{col}"].median()) if not g.empty else math.nan


def _paper_table(r: pd.DataFrame) -> list[str]:
    """The paper's claims, figure by figure, beside this run's median signed errors where they apply
    (not `queued`; DropTail within the paper's loss range) and the share of runs within each band."""
    rnd = r[(r.scenario == "random") & ~r.queued.astype(bool)]
    low, high = rnd[rnd["loss"] <= GRADED_MAX_LOSS + 1e-12], rnd[rnd["loss"] > GRADED_MAX_LOSS + 1e-12]
    dt_all = r[(r.scenario == "droptail") & ~r.queued.astype(bool)]
    dt = dt_all[dt_all.p_r <= PAPER_MAX_LOSS + 1e-12]  # the paper's range; the rest is shown apart
    lowest = rnd[rnd.p_r <= rnd.p_r.quantile(0.25)] if not rnd.empty else rnd
    big_n = rnd[rnd.n >= max(2, rnd.n.max() // 2)] if not rnd.empty else rnd  # Fig. 17 is random loss
    band = within_band(r)
    band_rnd, band_dt = band[band.scenario == "random"], band[band.scenario == "droptail"]

    def share(col, width):
        in_dt = (f" (DropTail runs with p_r ≤ 2%: {band_dt[f'in_band_{col}'].mean():.0%} of {len(band_dt)})"
                 if len(band_dt) else "")
        return (f"{band_rnd[f'in_band_{col}'].mean():.0%} of the {len(band_rnd)} random-loss runs up to 2% loss "
                f"within ±{width}{in_dt}" if len(band_rnd) else "no random-loss runs up to 2% loss")
    rows = [
        ("Model 1 (per-flow p) follows random loss from low loss to 10% (Figs 3–5)",
         f"median error {pct(_median_signed(low, 'model1'))} at loss ≤ 2% ({len(low)} runs), "
         f"{pct(_median_signed(high, 'model1'))} above ({len(high)} runs); " + share("model1", "25%")),
        ("Model 2 (p_e, p_r) follows random loss; slightly underestimates at very small loss (Figs 9–11)",
         f"median error {pct(_median_signed(low, 'model2'))} at loss ≤ 2%, "
         f"{pct(_median_signed(lowest, 'model2'))} in the lowest-loss quarter; " + share("model2", "35%")),
        ("n × Padhye with per-flow p: reasonable, but its error grows with loss, while model 1 stays good up "
         "to 10% loss (Fig 16)",
         f"median error {pct(_median_signed(low, 'n_pftk_p'))} at loss ≤ 2%, "
         f"{pct(_median_signed(high, 'n_pftk_p'))} above. {padhye_sentence(padhye_vs_model1(r))}"),
        ("n × Padhye fed the cumulative p_e is far off, model 2 much better (Fig 17)",
         f"median error over the {len(big_n)} random-loss runs with n ≥ {int(big_n.n.min()) if len(big_n) else '?'} "
         f"(not queued): n × Padhye(p_e) "
         f"{pct(_median_signed(big_n, 'n_pftk_pe'))}, model 2 {pct(_median_signed(big_n, 'model2'))}"),
        ("DropTail (bursty) loss: model 1 works, slightly overestimates for many flows (Figs 6, 7); "
         "model 2 underestimates at low loss (Figs 12, 13)",
         (f"median error model 1 {pct(_median_signed(dt, 'model1'))}, model 2 "
          f"{pct(_median_signed(dt, 'model2'))} ({len(dt)} runs with p_r ≤ {PAPER_MAX_LOSS:.0%}, the paper's range: "
          "its text names loss up to 10%"
          + (f"; {len(dt_all) - len(dt)} runs with p_r up to {dt_all.p_r.max():.1%} shown apart below)"
             if len(dt_all) > len(dt) else ")")) if len(dt) else "no DropTail runs"),
    ]
    return ["| the paper | this run |", "|---|---|", *[f"| {cell(a)} | {cell(b)} |" for a, b in rows], ""]


def _divergences(rows: list[tuple[str, str, str]]) -> list[str]:
    """The table of `divergences`; nothing where this run departs from the paper nowhere."""
    if not rows:
        return []
    return ["## Divergences from the paper, and what was done to explain them", "",
            "A row for a claim of the paper takes its verdict, cause and controls from claims.json (the table "
            "above); the others are departures of this setup from the models' assumptions that no claim decides, "
            "each with what its own control measured.", "",
            "| divergence | this run | cause |", "|---|---|---|",
            *[f"| {cell(a)} | {cell(b)} | {cell(c)} |" for a, b, c in rows], ""]


def report(out: Path) -> str:
    """The "paper vs this run" markdown of a sweep or reference: what ran, the claims' verdicts, the
    paper's figures beside this run, the divergences and their causes, the models' errors and
    timeouts, the controlled runs, the RTT fed to the models, and where the runs came from."""
    tables, controls = load(out), load_controls(out)
    r, man = tables["runs"].dropna(subset=["model1"]), tables["manifest"]
    per_run = Path(out) / "runs-manifest.csv"  # each run's qdiscs as listed (none in older references)
    runs_manifest = pd.read_csv(per_run) if per_run.exists() else None
    window_s = (man.get("parameters") or {}).get("steady_s", "?")
    doc = judged.load(out)
    lines = (_header(r, man) + _claims(doc) + _paper_table(r)
             + _divergences(divergences(r, controls, man, runs_manifest, doc))
             + error_section(r) + timeouts_section(r, window_s, "reno_recovery" in controls)
             + recovery_section(r, controls) + ack_ratio_section(controls) + rtt_section(r))
    said = provenance.markdown(out)  # a reference's controls may come from other commits or kernel builds: said
    return "\n".join(lines + ([said] if said else []))
