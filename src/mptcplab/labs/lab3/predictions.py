"""Lab 3 analysis: what each model predicts for a measured run, its error, and which runs the
bands apply to (`queued` runs and loss ranges)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import models


MODELS = {  # column -> label
    "model1": "model 1 (per-flow p)",
    "model2": "model 2 (p_e, p_r)",
    "n_pftk_p": "n × Padhye (per-flow p)",
    "n_pftk_pe": "n × Padhye (cumulative p_e)",
}
GRADED_MAX_LOSS = 0.02  # the bands are for loss rates up to 2%
QUEUED = "queued: not limited by the loss alone"
# The paper's range: its text names loss "from a very low loss level to a high one of 10%" (Section
# III-A, on its random-loss Fig. 3; the DropTail figures' axes are not in its text). DropTail runs
# above are shown apart.
PAPER_MAX_LOSS = 0.10
# `queued`: something other than the scenario limited the flows; such runs are shown apart, not
# graded. Random-loss runs have no capacity limit: the RTT should stay at the base RTT. Well above
# it, a queue built up somewhere, so the flows were not limited by the loss rate alone. (In the
# shipped reference that queue was a rate the kit left on the path: `rate_cause`.)
QUEUE_LIMIT = 1.25
# A DropTail bottleneck with a queue of one BDP never idles (Reno's halved window still fills it):
# its qdisc sends at the configured rate (96-100% on the wire in all 60 DropTail runs of the UML
# reference, 1-32 Mbit/s). Well below, the flows were held back before they reached it, so its
# queue never made the losses.
FILL_MIN = 0.9
BANDS = {"model1": 0.25, "model2": 0.35}


def model_b(row_b, setting) -> float:
    """The b fed to the models: a number from experiment.toml, or the measured ACK ratio."""
    return float(row_b) if str(setting) == "measured" else float(setting)


def predict(runs: pd.DataFrame) -> pd.DataFrame:
    """Add each model's prediction (packets/s) and its relative error (model / measured - 1)."""
    r = runs.copy()
    ok = (r.p > 0) & (r.p < 1) & (r.p_e > 0) & (r.p_r >= r.p_e) & (r.p_r < 1) & (r.rtt > 0) & (r["T"] > 0)
    for col in MODELS:
        r[col] = np.nan
    if ok.any():
        g = r[ok]
        b = g["model_b"].astype(float)
        r.loc[ok, "model1"] = models.parallel_per_flow(g.n, g.p, g.rtt, g["T"], b)
        r.loc[ok, "model2"] = models.parallel_cumulative(g.n, g.p_e, g.p_r, g.rtt, g["T"], b)
        r.loc[ok, "n_pftk_p"] = g.n * models.pftk(g.p, g.rtt, g["T"], b)
        r.loc[ok, "n_pftk_pe"] = g.n * models.pftk(g.p_e, g.rtt, g["T"], b)
    for col in MODELS:
        r[f"err_{col}"] = r[col] / r["pps"] - 1
    wire, cap = (pd.to_numeric(r.get(c, np.nan), errors="coerce") for c in ("emulator_wire_mbps", "capacity_mbps"))
    unfilled = (r.scenario == "droptail") & (wire < FILL_MIN * cap)
    r["queued"] = ((r.scenario == "random") & (r.rtt > QUEUE_LIMIT * r.base_rtt)) | unfilled
    # The loss a run is graded by: what netem was told (random), else the measured p_r (DropTail).
    cfg = pd.to_numeric(r.loss_cfg.astype(str).str.rstrip("%"), errors="coerce") / 100
    r["loss"] = np.where(r.scenario == "random", cfg, r.p_r)
    return r


def groups(runs: pd.DataFrame, everything: bool = True) -> list[tuple[str, pd.DataFrame]]:
    """The runs with a model prediction, by scenario and loss range (loss as in `predict`); runs the
    place limited (`queued`) are a group of their own. Empty groups left out."""
    r = runs.dropna(subset=["model1"])
    queued = r.queued.astype(bool)
    rnd = r[(r.scenario == "random") & ~queued]
    dt = r[(r.scenario == "droptail") & ~queued]
    out = [("all runs", r)] if everything else []
    out += [("random, loss <= 2%", rnd[rnd["loss"] <= GRADED_MAX_LOSS + 1e-12]),
            ("random, loss > 2%", rnd[rnd["loss"] > GRADED_MAX_LOSS + 1e-12]),
            ("droptail, p_r <= 10%", dt[dt.p_r <= PAPER_MAX_LOSS + 1e-12]),
            ("droptail, p_r > 10% (outside the paper's range)", dt[dt.p_r > PAPER_MAX_LOSS + 1e-12]),
            (QUEUED, r[queued])]
    return [(name, g) for name, g in out if not g.empty]


def graded_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs the bands apply to: loss up to 2% (configured netem loss, or p_r under DropTail),
    not `queued`."""
    return runs[(runs.p > 0) & (runs["loss"] <= GRADED_MAX_LOSS + 1e-12) & ~runs.queued.astype(bool)]


def within_band(runs: pd.DataFrame) -> pd.DataFrame:
    """Graded points and whether each model lands inside its band."""
    g = graded_runs(runs).dropna(subset=["model1"]).copy()
    for col, band in BANDS.items():
        g[f"in_band_{col}"] = g[f"err_{col}"].abs() <= band
    return g
