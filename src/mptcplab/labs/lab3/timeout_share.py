"""Model 1 and n x Padhye fed the timeout share each run measured, in place of their own estimate.

Both models guess how often a loss event ends in a timeout: model 1 with Q_TO(E[W_f]) of (26)/(27),
Padhye with his Q^(p, E[W]); both assume Reno without SACK, where fewer than three duplicate ACKs
after a loss mean a timeout. Linux repairs nearly all of those losses without one (in the reference's
random-loss runs, under 1% of the loss events ended in a timeout). Feeding both models the measured share,
timeouts / loss events (the capture's counts over the measured window: a retransmission after a
silence of at least 0.8 RTO, and the flows' loss events, both summed over the flows), asks whether
Fig. 16's divergence (n x Padhye closer than model 1, the paper says the reverse) is the two
timeout estimates or the rest of the equations. An analysis of the committed runs, no new run:
every other input (p, rtt, T, b) is the run's own, as `analysis.predict` feeds them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import models


def measured_share(runs: pd.DataFrame) -> pd.Series:
    """Per run: timeouts / loss events (both over the flows, in the measured window); NaN where the
    run had no loss event."""
    events = pd.to_numeric(runs["loss_events_per_flow"], errors="coerce")
    return pd.to_numeric(runs["timeouts"], errors="coerce") / events.where(events > 0)


def model1(n, p, rtt, t0, b, share):
    """Model 1 (Algorithm 1) with q1, the chance that a flow's loss event is a timeout, set to
    `share` instead of Q_TO(E[W_f]); everything else as `models.parallel_per_flow` (packets/s)."""
    share = np.asarray(share, dtype=float)
    return models.per_flow_terms(n, p, rtt, t0, b, q_to=lambda w: np.broadcast_to(share, np.shape(w)))["B"]


def padhye(p, rtt, t0, b, share):
    """One flow of Padhye's full model (`models.pftk` without a receiver window) with its Q, the
    chance that a loss indication is a timeout, set to `share` (packets/s):
        B = ((1-p)/p + E[W] + Q/(1-p)) / (rtt (b E[W]/2 + 1) + Q t0 f(p)/(1-p))"""
    p, rtt, t0, b, q = (np.asarray(v, dtype=float) for v in (p, rtt, t0, b, share))
    c = (2 + b) / (3 * b)
    ew = c + np.sqrt(8 * (1 - p) / (3 * b * p) + c ** 2)
    return ((1 - p) / p + ew + q / (1 - p)) / (rtt * (b * ew / 2 + 1) + q * t0 * models.f_poly(p) / (1 - p))


def fed(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with a prediction and a measured share, with `timeout_share`, both models fed it
    (`model1_fed`, `n_pftk_p_fed`, packets/s) and their errors against the measured throughput
    (`err_model1_fed`, `err_n_pftk_p_fed`), beside the columns `analysis.predict` wrote."""
    share = measured_share(runs)
    r = runs[runs["model1"].notna() & share.notna()].copy()
    r["timeout_share"] = share[r.index]
    b = r["model_b"].astype(float)
    r["model1_fed"] = model1(r.n, r.p, r.rtt, r["T"], b, r.timeout_share)
    r["n_pftk_p_fed"] = r.n * padhye(r.p, r.rtt, r["T"], b, r.timeout_share)
    for col in ("model1", "n_pftk_p"):
        r[f"err_{col}_fed"] = r[f"{col}_fed"] / r["pps"] - 1
    return r.reset_index(drop=True)


def gaps(r: pd.DataFrame) -> pd.DataFrame:
    """Per run of `fed(...)`: Fig. 16's gap, |error of model 1| - |error of n x Padhye(p)|, with the
    models' own timeout estimates (`own`) and fed the measured share (`fed`)."""
    return pd.DataFrame({"own": r.err_model1.abs() - r.err_n_pftk_p.abs(),
                         "fed": r.err_model1_fed.abs() - r.err_n_pftk_p_fed.abs()}).reset_index(drop=True)
