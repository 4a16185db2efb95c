"""Lab 1 analysis: the sweep of transfers: one row per run, and the goodput table with its confidence intervals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...judge import physics, stats
from ...run import results
from ...run.results import Sweep

PAPER = {  # Kato et al. 2020, Section III-B and IV-B
    "mptcp_mbps_mean": 46.8, "mptcp_mbps_sd": 3.54, "mptcp_runs": 5, "mptcp_mbps_range": (42.4, 49.8),
    "tcp_wmem": 1048576, "waits": 278, "penalisations": 28, "slow_cwnd_peak": 700, "slow_cwnd_drops": 20,
    "duration_s": 10, "kernel": "multipath-tcp.org out-of-tree MPTCP (Ubuntu 16.04), minRTT scheduler + RP",
}


LINK_MBPS = 100.0  # each path's rate in the lab's topology


GOODPUT_LIMIT = physics.link_ceiling_bps(LINK_MBPS * 1e6) / 1e6  # the TCP payload a full path carries


# The runs sweep.csv is made from (experiment.sweep_points' keys): not the detailed runs or the
# paper's point, which a reference copy keeps beside it.
SWEEP_RUNS = ("wmem-*/summary.json", "sndbuf-*/summary.json")


def load_sweep(path: Path | str) -> pd.DataFrame:
    """One row per sweep transfer (not the setup check, not the detailed run): sweep.csv, made
    again first where the sweep's runs are newer (results.compacted), or the reference copy's."""
    return _transfers(results.compacted(path, "sweep.csv", compact, "lab1", runs=SWEEP_RUNS))


def _transfers(path: Path | str) -> pd.DataFrame:
    path = Path(path)
    if (path / "sweep.csv").exists():  # compacted, or the compact reference copy
        table = pd.read_csv(path / "sweep.csv")
    else:
        table = Sweep(path).summaries()
    if table.empty or "config" not in table:
        raise FileNotFoundError(f"no completed lab1 transfers in {path}: run `sudo mptcplab run lab1 --quick`")
    keep = table["config"].notna()
    if "detail" in table:
        keep &= table["detail"].isna() | (table["detail"] == False)  # noqa: E712
    if "part" in table:
        keep &= table["part"].isna()  # the paper's point has its own table (paper_point_table)
    cols = ["run", "method", "buffer", "buffer_bytes", "config", "rep", "goodput_transfer_mbps", "subflows",
            "sndbuf_effective"]
    kernel = [c for c in table.columns if c in KERNEL_COLUMNS or c.startswith(KERNEL_PER_PATH)]
    out = table.loc[keep, [c for c in cols if c in table] + sorted(kernel)].reset_index(drop=True)
    for c in ("buffer_bytes", "rep", "subflows", "sndbuf_effective"):
        if c in out and out[c].notna().all():
            out[c] = out[c].astype(np.int64)
    return out


# The kernel's view of each run (measure.kernel_view; runs made before the kit sampled ss have none).
KERNEL_COLUMNS = ("ss_samples", "inflight_max", "wmem_queued_max")


KERNEL_PER_PATH = ("srtt_ms_", "min_rtt_ms_", "inflight_max_", "sk_sndbuf_")


def compact(out: Path | str) -> dict[str, pd.DataFrame]:
    """The sweep's transfers as one table, written next to the runs (sweep.csv)."""
    out = Path(out)
    (out / "sweep.csv").unlink(missing_ok=True)  # rebuilt from the runs, never read back stale
    table = _transfers(out)
    table.to_csv(out / "sweep.csv", index=False)
    return {"sweep": table}


def t95(dof: int) -> float:
    """Student's t 97.5% quantile (the 95% interval's multiplier): mptcplab.judge.stats, as every lab.
    (The table that was here gave dof 11-14 the quantile of 10, 16-19 that of 15, ...: too narrow.)"""
    return stats.t975(dof)


def throughput_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per method, buffer and config: mean, sd, count and 95% CI half-width of the goodput; and,
    per method and buffer, whether MPTCP is below single-path TCP on the fast path (`degraded`)."""
    g = (sweep.groupby(["method", "buffer_bytes", "config"])["goodput_transfer_mbps"]
         .agg(["mean", "std", "count"]).reset_index())
    g["ci95"] = [t95(n - 1) * s / np.sqrt(n) if n > 1 else np.nan for s, n in zip(g["std"], g["count"])]
    wide = g.pivot_table(index=["method", "buffer_bytes"], columns="config", values="mean").reset_index()
    if {"mptcp", "tcp-fast"} <= set(wide.columns):
        wide["degraded"] = wide["mptcp"] < wide["tcp-fast"]
        wide["mptcp_over_tcp_fast"] = wide["mptcp"] / wide["tcp-fast"]
    else:
        wide["degraded"], wide["mptcp_over_tcp_fast"] = False, np.nan
    return g.merge(wide[["method", "buffer_bytes", "degraded", "mptcp_over_tcp_fast"]], on=["method", "buffer_bytes"])


def degradation_region(sweep: pd.DataFrame, method: str = "wmem") -> list[int]:
    """Buffer sizes (bytes, ascending) where MPTCP's mean goodput is below single-path TCP's on the fast path."""
    t = throughput_table(sweep)
    t = t[(t["method"] == method) & t["degraded"]]
    return sorted(int(b) for b in t["buffer_bytes"].unique())


def _kib(b: float) -> str:
    if b % 1024:  # not a whole KiB (a scaled buffer): its bytes
        return f"{b:,.0f} B"
    return f"{b / 1048576:g} MiB" if b >= 1048576 else f"{b / 1024:g} KiB"
