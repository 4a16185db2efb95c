"""Lab 1's paper point (issue 24): the [paper_point] runs as tables.

MPTCP at the paper's buffer with each scheduler (upstream's default, minrtt, minrtt+RP) beside
single-path TCP, and the tcp_min_tso_segs control: one row per transfer (load_paper_point), n,
mean and 95% interval per setting (paper_point_table) beside the paper's 46.8 Mbit/s
(paper_point_markdown), and a compact copy with every run's summary and manifest
(export_paper_point). The runs themselves: experiment.paper_points.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ...results import Sweep
from .detail import copy_run_tables
from .sweep import PAPER, _kib, t95

PAPER_POINT_COLUMNS = ["run", "buffer", "buffer_bytes", "config", "scheduler", "scheduler_applied", "minrtt_rp_applied",
                       "min_tso_segs", "rep", "mbps", "subflows", "rp_opp_retrans", "rp_penalised", "mptcp_retrans",
                       "tcp_retrans_segs", "srtt_ms_fast", "srtt_ms_slow", "inflight_max_fast", "inflight_max_slow",
                       "wmem_queued_max", "sk_sndbuf_kernel", "skipped"]


def load_paper_point(path: Path | str) -> pd.DataFrame:
    """One row per [paper_point] transfer (not its detailed runs), from the runs or the compact
    copy (paper-point.csv); `group` is "schedulers" or "tso" (the tcp_min_tso_segs control)."""
    path = Path(path)
    if (path / "paper-point.csv").exists():
        return pd.read_csv(path / "paper-point.csv", dtype={"min_tso_segs": str, "minrtt_rp_applied": str})
    table = Sweep(path).summaries() if path.exists() else pd.DataFrame()
    if table.empty or "part" not in table:
        return pd.DataFrame(columns=["group", *PAPER_POINT_COLUMNS])
    keep = (table["part"] == "paper_point") & (table["detail"].isna() if "detail" in table else True)
    out = table.loc[keep, [c for c in PAPER_POINT_COLUMNS if c in table]].copy()
    out.insert(0, "group", np.where(out["run"].str.startswith("tso"), "tso", "schedulers"))
    return out.sort_values("run").reset_index(drop=True)


def paper_point_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group, buffer, config, scheduler and tcp_min_tso_segs: n, mean goodput, sd, 95% CI
    half-width (Student's t), and the mean RP counters. Skipped runs are not counted."""
    runs = runs[runs["mbps"].notna()].copy()
    for c in ("scheduler", "min_tso_segs", "rp_opp_retrans", "rp_penalised", "mptcp_retrans"):
        if c not in runs:
            runs[c] = np.nan
    runs["scheduler"] = runs["scheduler"].where(runs["config"] == "mptcp", "")
    runs["scheduler"] = runs["scheduler"].fillna("default")
    keys = ["group", "buffer_bytes", "config", "scheduler", "min_tso_segs"]
    g = runs.groupby(keys, sort=False, dropna=False).agg(n=("mbps", "size"), mean=("mbps", "mean"), sd=("mbps", "std"),
                                          opp_retrans=("rp_opp_retrans", "mean"), penalised=("rp_penalised", "mean"),
                                          mptcp_retrans=("mptcp_retrans", "mean")).reset_index()
    g["ci95"] = [t95(n - 1) * sd / np.sqrt(n) if n > 1 else np.nan for sd, n in zip(g["sd"], g["n"])]
    return g


def paper_point_setting(sweep_dir: Path | str, runs: pd.DataFrame) -> str:
    """Where and at what the [paper_point] runs ran, from the first run's manifest."""
    if runs.empty or not (Path(sweep_dir) / runs["run"].iloc[0] / "manifest.json").exists():
        return ""
    m = json.loads((Path(sweep_dir) / runs["run"].iloc[0] / "manifest.json").read_text())
    links = ", ".join(f"{p['name']} {p['link']}" for p in m.get("network", {}).get("paths", []))
    plat = m["platform"]
    return f"Linux {plat['kernel_release']} ({plat['where']}); paths: {links}"


def paper_point_markdown(runs: pd.DataFrame, setting: str = "") -> str:
    """The paper-vs-this-run table at the paper's point and the tcp_min_tso_segs control table."""
    t = paper_point_table(runs)
    p_ci = t95(4) * PAPER["mptcp_mbps_sd"] / np.sqrt(5)
    sched = t[t["group"] == "schedulers"]
    buf = _kib(sched["buffer_bytes"].iloc[0]) if len(sched) else "?"
    lines = [f"## MPTCP's schedulers at tcp_wmem {buf} (min = default = max)", "",
             "The paper's point: two 100 Mbit/s paths, 40 ms one way on the slow one, tcp_wmem 1 MiB.",
             f"This run: {setting}." if setting else "", "",
             "| what | scheduler | n | mean Mbit/s | 95% CI | sd | opp. retransmissions / run | penalisations / run |",
             "|---|---|---|---|---|---|---|---|",
             f"| paper: MPTCP (out-of-tree kernel) | minRTT + RP | 5 | {PAPER['mptcp_mbps_mean']} | "
             f"± {p_ci:.1f} | {PAPER['mptcp_mbps_sd']} | not stated | {PAPER['penalisations']} (one detailed run) |"]
    order = {"default": 0, "minrtt": 1, "minrtt+rp": 2}
    sched = sched.sort_values(["config", "scheduler"], key=lambda c: c.map(order).fillna(9) if c.name == "scheduler" else c)
    for r in sched.itertuples():
        what = "MPTCP" if r.config == "mptcp" else f"single-path TCP ({r.config.removeprefix('tcp-')} path)"
        lines.append(f"| this run: {what} | {r.scheduler or '-'} | {r.n} | {r.mean:.1f} | {_spread(r)} | "
                     + (f"{r.opp_retrans:.0f} | {r.penalised:.0f} |" if r.config == "mptcp" else "- | - |"))
    tso = t[t["group"] == "tso"]
    if not tso.empty:
        lines += ["", "## The tcp_min_tso_segs control (MPTCP with upstream's default scheduler)", "",
                  "| tcp_wmem | config | tcp_min_tso_segs | n | mean Mbit/s | 95% CI | sd |", "|---|---|---|---|---|---|---|"]
        for r in tso.sort_values(["buffer_bytes", "config", "min_tso_segs"]).itertuples():
            lines.append(f"| {_kib(r.buffer_bytes)} | {r.config} | {r.min_tso_segs} | {r.n} | {r.mean:.1f} | "
                         f"{_spread(r)} |")
    return "\n".join(lines) + "\n"


def _spread(r) -> str:
    """The '95% CI | sd' cells: one run has neither, and says so instead of printing nan."""
    return "none (n = 1) | -" if r.n < 2 else f"± {r.ci95:.1f} | {r.sd:.1f}"


def export_paper_point(sweep_dir: Path | str, dest: Path | str) -> Path:
    """The paper's point compactly: every transfer's row (paper-point.csv), the tables
    (paper-point.md), each run's summary and manifest, and the detailed runs' tables."""
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    runs = load_paper_point(sweep_dir)
    if dest.exists():
        shutil.rmtree(dest)
    (dest / "runs").mkdir(parents=True)
    runs.to_csv(dest / "paper-point.csv", index=False)
    for name in runs["run"]:
        (dest / "runs" / name).mkdir()
        for f in ("summary.json", "manifest.json"):
            shutil.copy2(sweep_dir / name / f, dest / "runs" / name / f)
    for s in sorted(sweep_dir.glob("paper-detail-*/summary.json")):
        copy_run_tables(s.parent, dest / s.parent.name)
    (dest / "paper-point.md").write_text(paper_point_markdown(runs, paper_point_setting(sweep_dir, runs)))
    return dest
