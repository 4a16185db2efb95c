"""Lab 2 analysis: the receiver's goodput in bins, and the stalls in it the guide counts."""

from __future__ import annotations

import pandas as pd


GOODPUT_BIN_S = 0.5  # the receiver's goodput per run in bins of this width (goodput-bins.csv)
STALL_MBPS, STALL_S = 2.0, 2.0  # a stall: under 2 Mbit/s for 2 s or more


def goodput_bins(intervals: pd.DataFrame, t0: float | None = None) -> pd.DataFrame:
    """The receiver's goodput of a run (all flows) in GOODPUT_BIN_S bins, t in s from its first bin."""
    if intervals.empty:
        return pd.DataFrame(columns=["t", "goodput_bin_mbps"])
    import numpy as np

    t = intervals.time - (t0 if t0 else intervals.time.min())
    k = (t // GOODPUT_BIN_S).astype(int)
    per_bin = intervals.assign(k=k).groupby("k")["bytes"].sum()
    # intervals.csv leaves out the bins in which nothing arrived: a stall is those missing bins
    per_bin = per_bin.reindex(np.arange(max(0, int(k.min())), int(k.max()) + 1), fill_value=0.0)
    return pd.DataFrame({"t": per_bin.index * GOODPUT_BIN_S,
                         "goodput_bin_mbps": per_bin.to_numpy() * 8 / GOODPUT_BIN_S / 1e6})


def stalls(bins: pd.DataFrame) -> pd.DataFrame:
    """Per run, its longest stretch of consecutive bins under STALL_MBPS (start, seconds); the
    runs with one of STALL_S or more are the stalls the guide counts."""
    rows = []
    for run, g in bins.groupby("run"):
        g = g.sort_values("t")
        best, start, cur_start, cur = 0.0, None, None, 0.0
        for t, mbps in zip(g.t, g.goodput_bin_mbps):
            if mbps < STALL_MBPS:
                cur_start = t if cur == 0 else cur_start
                cur += GOODPUT_BIN_S
                if cur > best:
                    best, start = cur, cur_start
            else:
                cur = 0.0
        rows.append({"run": run, "longest_low_s": best, "from_s": start, "stall": best >= STALL_S})
    return pd.DataFrame(rows, columns=["run", "longest_low_s", "from_s", "stall"])
