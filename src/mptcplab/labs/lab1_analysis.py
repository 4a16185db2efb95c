"""Lab 1 analysis: the throughput sweep and the paper's Figures 4, 5, 6/9 and 10, from a run.

Everything here reads a sweep directory written by `mptcplab run lab1` (or the compact reference
copy in solutions/results/lab1/, which has the same layout minus the raw capture):

    sweep = load_sweep(path)            # one row per transfer (compact(path) writes it as sweep.csv)
    bounds = window_bounds(sweep, manifest)   # each single-path run against physics (as `mptcplab check`)
    fig_throughput(sweep, manifest=manifest)  # throughput vs send buffer, degradation region shaded,
                                              # the slow path's window bound, runs above it marked
    mptcp_bounds(sweep, manifest)       # MPTCP against what its send buffer allows
    d = Detail.load(path)               # the degraded run with capture and tracing
    fig4(d); fig5(d); fig6(d); fig10(d)
    waits = wait_table(load_details(path), sweep)   # its send-buffer waits against the control runs,
    fig_waits_compare(load_details(path))           # and the cost of tracing
    report(path)                        # the "paper vs this run" markdown table
    export_reference(path, dest)        # the compact copy shipped in solutions/results/lab1/
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import physics
from ..check import paths_of, single_path_bounds
from ..results import Sweep
from .lab1_measure import cwnd_drops, packets_from_capture

PAPER = {  # Kato et al. 2020, Section III-B and IV-B
    "mptcp_mbps_mean": 46.8, "mptcp_mbps_sd": 3.54, "mptcp_mbps_range": (42.4, 49.8),
    "tcp_wmem": 1048576, "waits": 278, "penalisations": 28, "slow_cwnd_peak": 700, "slow_cwnd_drops": 20,
    "duration_s": 10, "kernel": "multipath-tcp.org out-of-tree MPTCP (Ubuntu 16.04), minRTT scheduler + RP",
}
LINK_MBPS = 100.0  # each path's rate in the lab's topology
GOODPUT_LIMIT = LINK_MBPS * 1448 / 1514  # TCP payload a full 100 Mbit/s link carries (timestamps on)
COLORS = {"fast": "#1f77b4", "slow": "#d62728", "tcp-fast": "#1f77b4", "tcp-slow": "#d62728", "mptcp": "#2ca02c"}


# ---------------------------------------------------------------- the sweep

def load_sweep(path: Path | str) -> pd.DataFrame:
    """One row per sweep transfer (not the setup check, not the detailed run)."""
    path = Path(path)
    if (path / "sweep.csv").exists():  # the compact reference copy
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
    cols = ["run", "method", "buffer", "buffer_bytes", "config", "rep", "mbps", "subflows", "sndbuf_effective"]
    kernel = [c for c in table.columns if c in KERNEL_COLUMNS or c.startswith(KERNEL_PER_PATH)]
    out = table.loc[keep, [c for c in cols if c in table] + sorted(kernel)].reset_index(drop=True)
    for c in ("buffer_bytes", "rep", "subflows", "sndbuf_effective"):
        if c in out and out[c].notna().all():
            out[c] = out[c].astype(np.int64)
    return out


# The kernel's view of each run (lab1_measure.kernel_view; runs made before the kit sampled ss have none).
KERNEL_COLUMNS = ("ss_samples", "inflight_max", "sk_sndbuf_kernel", "wmem_queued_max")
KERNEL_PER_PATH = ("srtt_ms_", "min_rtt_ms_", "inflight_max_", "sk_sndbuf_")


def compact(out: Path | str) -> dict[str, pd.DataFrame]:
    """The sweep's transfers as one table, written next to the runs (sweep.csv)."""
    out = Path(out)
    (out / "sweep.csv").unlink(missing_ok=True)  # rebuilt from the runs, never read back stale
    table = load_sweep(out)
    table.to_csv(out / "sweep.csv", index=False)
    return {"sweep": table}


def load(path: Path | str) -> dict[str, pd.DataFrame]:
    """The compact tables of a sweep or of a reference copy (the detailed run: Detail.load)."""
    return {"sweep": load_sweep(path)}


# Two-sided 95% quantiles of Student's t for n-1 degrees of freedom (no scipy needed).
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(dof: int) -> float:
    if dof < 1:
        return float("nan")
    keys = [k for k in _T95 if k <= dof]
    return _T95[max(keys)] if dof <= 30 else 1.96


def throughput_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Per method, buffer and config: mean, sd, count and 95% CI half-width of the goodput; and,
    per method and buffer, whether MPTCP is below single-path TCP on the fast path (`degraded`)."""
    g = sweep.groupby(["method", "buffer_bytes", "config"])["mbps"].agg(["mean", "std", "count"]).reset_index()
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


# ---------------------------------------------------------------- physics: what a send buffer allows

def sweep_manifest(path: Path | str) -> dict:
    """A manifest of the sweep (any run's, or the compact copy's verify-manifest.json): the network."""
    path = Path(path)
    for m in sorted(path.glob("*manifest.json")) + sorted(path.glob("*/manifest.json")):
        try:
            manifest = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        if paths_of(manifest):
            return manifest
    raise FileNotFoundError(f"no manifest with the network in {path}")


def window_bounds(sweep: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """Every single-path run of the sweep against the bounds physics sets (mptcplab.physics, the
    same bounds `mptcplab check` applies): one row per run with its sk_sndbuf (the largest it can
    have had), the path's RTT, `window_mbps` = (sk_sndbuf + 64 KiB) x 8 / RTT, `ceiling_mbps` (the
    link), and where the run carries the kernel's view, its most bytes in flight against
    sk_sndbuf + 64 KiB. `above` is True for a run that broke any of them: such a run did not happen
    on a network that honours its send buffer, whatever else it shows."""
    paths = paths_of(manifest)
    rows = []
    for r in sweep[sweep["config"].astype(str).str.startswith("tcp-")].to_dict("records"):
        name = r["config"].removeprefix("tcp-")
        if name not in paths:
            continue
        b = single_path_bounds(r, paths[name])
        window = b["window_bps"] / 1e6
        ceiling = b["ceiling_bps"] * (1 + physics.MEASUREMENT_SLACK) / 1e6
        inflight = r.get(f"inflight_max_{name}")
        inflight = float(inflight) if inflight is not None and inflight == inflight else np.nan
        rows.append({
            "run": r.get("run"), "method": r["method"], "buffer_bytes": r["buffer_bytes"], "config": r["config"],
            "path": name, "mbps": r["mbps"], "sk_sndbuf": b["sk_sndbuf"], "rtt_ms": b["rtt_s"] * 1e3,
            "window_mbps": window, "ceiling_mbps": ceiling, "bound_mbps": min(window, ceiling),
            "inflight_max": inflight, "unacked_bound": b["unacked_bytes"],
            "above_window": r["mbps"] > window, "above_link": r["mbps"] > ceiling,
            "above_inflight": bool(inflight > b["unacked_bytes"]) if inflight == inflight else False})
    cols = ["run", "method", "buffer_bytes", "config", "path", "mbps", "sk_sndbuf", "rtt_ms", "window_mbps",
            "ceiling_mbps", "bound_mbps", "inflight_max", "unacked_bound", "above_window", "above_link",
            "above_inflight"]
    out = pd.DataFrame(rows, columns=cols)
    out["above"] = out["above_window"] | out["above_link"] | out["above_inflight"]
    return out


def describe_bounds(bounds: pd.DataFrame, limit: int = 8) -> str:
    """What a student reads about their single-path runs: all within physics, or each run that is
    not, with its number, its bound and where the bound comes from, and what to do."""
    if bounds.empty:
        return "No single-path TCP runs to judge against their window bound."
    bad = bounds[bounds["above"]]
    judged = bounds[np.isfinite(bounds["window_mbps"])]
    if bad.empty:
        worst = (judged["mbps"] / judged["window_mbps"]).max() if len(judged) else np.nan
        tail = (f"; the closest to its window bound reached {worst:.0%} of it" if worst == worst else "")
        ceilings = sorted({round(c, 1) for c in bounds["ceiling_mbps"] if c == c})
        link = " / ".join(f"{c:.1f}" for c in ceilings) or f"{GOODPUT_LIMIT:.1f}"
        return (f"Physics check: all {len(bounds)} single-path runs are within their bounds (window: "
                f"(sk_sndbuf + 64 KiB) / RTT; link: {link} Mbit/s of payload){tail}.")
    lines = [f"Physics check: {len(bad)} of {len(bounds)} single-path runs carried more than physics allows:"]
    for r in bad.head(limit).itertuples():
        if r.above_window:
            lines.append(f"  {r.run}: {r.mbps:.1f} Mbit/s over the {r.path} path (RTT {r.rtt_ms:g} ms) with "
                         f"sk_sndbuf {r.sk_sndbuf:,} B: at most ({r.sk_sndbuf:,} + 65,536) B x 8 / {r.rtt_ms:g} ms "
                         f"= {r.window_mbps:.1f} Mbit/s")
        if r.above_inflight:
            lines.append(f"  {r.run}: {r.inflight_max:,.0f} bytes in flight at once, at most "
                         f"{r.unacked_bound:,} (sk_sndbuf {r.sk_sndbuf:,} B + one 64 KiB skb)")
        if r.above_link:
            lines.append(f"  {r.run}: {r.mbps:.1f} Mbit/s, above what the {r.path} link carries "
                         f"({r.ceiling_mbps:.1f} Mbit/s)")
    if len(bad) > limit:
        lines.append(f"  ... and {len(bad) - limit} more ({', '.join(map(str, bad['run'].iloc[limit:]))})")
    lines += [
        "A TCP connection cannot keep more unacknowledged bytes than its send buffer holds, so these",
        "numbers did not come from a kernel that honoured its send buffer: the curves built on them are",
        "an artefact of the place they ran in, not TCP. Your answers below are still graded on your",
        "computations, not on these numbers; but do not draw conclusions from them. Re-run the lab where",
        "the physics check passes (`sudo mptcplab doctor` shows it; `mptcplab check RESULTS_DIR` judges",
        "a results directory), and tell your instructor."]
    return "\n".join(lines)


def _nominal_sk_sndbuf(method: str, buffer_bytes: int) -> int:
    """The sk_sndbuf a single TCP socket gets: tcp_wmem = B B B gives B; SO_SNDBUF = B gives 2B."""
    return int(buffer_bytes) if method == "wmem" else physics.sk_sndbuf_for(int(buffer_bytes), wmem_max=1 << 62)


def slow_path_bound_curve(sweep: pd.DataFrame, manifest: dict, method: str) -> pd.DataFrame:
    """Single-path TCP's bound on the slow path at each buffer of the sweep (nominal sk_sndbuf):
    buffer_bytes, sk_sndbuf, bound_mbps = min(link ceiling, (sk_sndbuf + 64 KiB) x 8 / RTT_slow)."""
    paths = paths_of(manifest)
    rtt = max((p["rtt_s"] for p in paths.values()), default=0.0)
    rate = max((p["rate_bps"] or 0 for p in paths.values()), default=0.0)
    sizes = sorted(sweep.loc[sweep["method"] == method, "buffer_bytes"].unique()) if rtt > 0 else []
    rows = []
    for b in sizes:
        sk = _nominal_sk_sndbuf(method, b)
        window = physics.window_bound_bps(sk, rtt) / 1e6 if rtt > 0 else np.inf
        ceiling = physics.link_ceiling_bps(rate) / 1e6 if rate else np.inf
        rows.append({"buffer_bytes": int(b), "sk_sndbuf": sk, "bound_mbps": min(window, ceiling)})
    return pd.DataFrame(rows, columns=["buffer_bytes", "sk_sndbuf", "bound_mbps"])


def mptcp_bounds(sweep: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """MPTCP at each method and buffer against what its send buffers allow (Q7).

    S is the MPTCP socket's send buffer (`sndbuf_effective`). Every byte stays in it until the
    connection-level DATA_ACK covers it, and that is cumulative: a byte sent on the fast subflow
    after a chunk on the slow one is released only when that chunk has arrived and its DATA_ACK
    is back. If the slow subflow always holds the oldest data, the buffer turns over once per
    `T` = one slow one-way delay plus the DATA_ACK's way back: RTT_slow when it returns on the slow
    subflow, about RTT_slow / 2 when it returns on the fast one. So `s_per_rtt` = S / RTT_slow and
    `s_per_half_rtt` = 2 S / RTT_slow bracket what that pattern delivers; neither is a bound (bytes
    sent while the slow subflow holds nothing are released at once). The hard bound is each
    subflow's own window: `subflow_bound` = sum over paths of min(link, (subflow sk_sndbuf + 64 KiB)
    / RTT_path), with the subflows' sk_sndbuf from ss when the run recorded it (else B for tcp_wmem,
    2B for SO_SNDBUF, which the MPTCP socket copies to its subflows)."""
    paths = paths_of(manifest)
    rtt_slow = max((p["rtt_s"] for p in paths.values()), default=0.0)
    m = sweep[sweep["config"] == "mptcp"]
    rows = []
    for (method, b), g in m.groupby(["method", "buffer_bytes"]):
        S = float(g["sndbuf_effective"].median()) if "sndbuf_effective" in g else np.nan
        total = 0.0
        for name, p in paths.items():
            col = f"sk_sndbuf_{name}"
            sub = g[col].median() if col in g and g[col].notna().any() else _nominal_sk_sndbuf(method, b)
            window = physics.window_bound_bps(int(sub), p["rtt_s"]) if p["rtt_s"] > 0 else np.inf
            total += min(window, physics.link_ceiling_bps(p["rate_bps"]) if p["rate_bps"] else np.inf)
        rows.append({"method": method, "buffer_bytes": int(b), "S": S, "mbps": g["mbps"].mean(),
                     "mbps_max": g["mbps"].max(), "n": len(g),
                     "s_per_rtt": S * 8 / rtt_slow / 1e6 if rtt_slow else np.nan,
                     "s_per_half_rtt": 2 * S * 8 / rtt_slow / 1e6 if rtt_slow else np.nan,
                     "subflow_bound": total * (1 + physics.MEASUREMENT_SLACK) / 1e6 if paths else np.nan})
    out = pd.DataFrame(rows, columns=["method", "buffer_bytes", "S", "mbps", "mbps_max", "n", "s_per_rtt",
                                      "s_per_half_rtt", "subflow_bound"])
    out["above_subflow_bound"] = out["mbps_max"] > out["subflow_bound"]
    out["where"] = np.select([out["mbps"] < out["s_per_rtt"], out["mbps"] <= out["s_per_half_rtt"]],
                             ["below S/RTT_slow", "between S/RTT_slow and 2S/RTT_slow"], "above 2S/RTT_slow")
    return out


def buffer_needed(manifest: dict) -> tuple[float, float]:
    """The MPTCP socket's buffer S (bytes) at which S / T reaches the fast path alone, for
    T = RTT_slow / 2 and T = RTT_slow: the range in which MPTCP should start to beat one path."""
    paths = paths_of(manifest)
    rtt_slow = max((p["rtt_s"] for p in paths.values()), default=0.0)
    fast = min(paths.values(), key=lambda p: p["rtt_s"])
    c = physics.link_ceiling_bps(fast["rate_bps"]) / 8
    return c * rtt_slow / 2, c * rtt_slow


def crossing(sweep: pd.DataFrame) -> dict[str, float | None]:
    """Per method: the smallest MPTCP socket buffer S (sndbuf_effective) from which MPTCP's mean
    goodput stays above single-path TCP's on the fast path, or None if it never does."""
    fast = sweep[sweep["config"] == "tcp-fast"].groupby("method")["mbps"].mean()
    out = {}
    for method, g in sweep[sweep["config"] == "mptcp"].groupby("method"):
        per = g.groupby("sndbuf_effective")["mbps"].mean().sort_index()
        above = per > fast.get(method, np.inf)
        ok = [s for i, s in enumerate(per.index) if above.iloc[i:].all()]
        out[method] = float(ok[0]) if ok else None
    return out


def describe_mptcp_bounds(sweep: pd.DataFrame, manifest: dict) -> str:
    """The numbers Q7 needs, from this run: where MPTCP falls against S/RTT_slow and 2S/RTT_slow,
    whether any run broke the subflows' bound, the buffer S needed and where MPTCP crossed TCP."""
    t = mptcp_bounds(sweep, manifest)
    if t.empty:
        return "No MPTCP runs in this sweep."
    lo, hi = buffer_needed(manifest)
    lines = [f"MPTCP against its send buffer S (the MPTCP socket's sk_sndbuf), {len(t)} method/buffer points:"]
    for where, g in t.groupby("where", sort=False):
        pts = ", ".join(f"{m} {_kib(b)}" for m, b in zip(g["method"], g["buffer_bytes"]))
        lines.append(f"  {where}: {len(g)} ({pts})")
    bad = t[t["above_subflow_bound"]]
    lines.append("  above the sum of the subflows' window bounds (physics): "
                 + (", ".join(f"{m} {_kib(b)}" for m, b in zip(bad["method"], bad["buffer_bytes"])) or "none"))
    lines.append(f"S for which S / T equals the fast path alone: {lo / 1e6:.2f} MB (T = RTT_slow / 2) to "
                 f"{hi / 1e6:.2f} MB (T = RTT_slow)")
    for method, s in crossing(sweep).items():
        lines.append(f"  measured, {method}: MPTCP stays above single-path TCP on the fast path from S = "
                     + (f"{s / 1e6:.2f} MB" if s else "(never in this sweep)"))
    return "\n".join(lines)


def _kib(b: float) -> str:
    return f"{b / 1048576:g} MiB" if b >= 1048576 else f"{b / 1024:g} KiB"


def fig_throughput(sweep: pd.DataFrame, error: str = "sd", manifest: dict | None = None) -> go.Figure:
    """Goodput vs send buffer, one panel per way of setting it; error bars = `error` ("sd" or "ci95")
    over the repetitions; the buffer sizes where MPTCP < single-path TCP (fast path) shaded. With the
    sweep's `manifest` (its paths' RTTs), also single-path TCP's window bound on the slow path
    (dashed) and every single-path run above its bounds (x): those did not obey physics."""
    if error not in ("sd", "ci95"):
        raise ValueError("error is 'sd' or 'ci95'")
    t = throughput_table(sweep)
    bounds = window_bounds(sweep, manifest) if manifest else None
    full, full_rate = full_path_mbps(manifest)
    methods = [m for m in ("wmem", "sndbuf") if m in set(t["method"])]
    titles = {"wmem": "sysctl net.ipv4.tcp_wmem = \"B B B\"", "sndbuf": "setsockopt(SO_SNDBUF, B)"}
    fig = make_subplots(rows=1, cols=len(methods), shared_yaxes=True, horizontal_spacing=0.06,
                        subplot_titles=[titles[m] for m in methods])
    err_col = "std" if error == "sd" else "ci95"
    for col, method in enumerate(methods, 1):
        sub = t[t["method"] == method]
        for config in ("tcp-fast", "tcp-slow", "mptcp"):
            s = sub[sub["config"] == config].sort_values("buffer_bytes")
            if s.empty:
                continue
            fig.add_trace(go.Scatter(
                x=s["buffer_bytes"], y=s["mean"], error_y=dict(type="data", array=s[err_col].fillna(0)),
                mode="lines+markers", name=config, legendgroup=config, showlegend=col == 1,
                line=dict(color=COLORS[config]), customdata=np.stack([s["count"], s["std"].fillna(0)], axis=-1),
                hovertemplate=f"{config}<br>B=%{{x:,}} bytes: %{{y:.1f}} Mbit/s "
                              "(sd %{customdata[1]:.1f}, n=%{customdata[0]})<extra></extra>"), row=1, col=col)
        if bounds is not None:
            curve = slow_path_bound_curve(sweep, manifest, method)
            if "tcp-slow" in set(sub["config"]) and len(curve):
                fig.add_trace(go.Scatter(
                    x=curve["buffer_bytes"], y=curve["bound_mbps"], mode="lines", legendgroup="bound",
                    name="tcp-slow's window bound: (sk_sndbuf + 64 KiB) / RTT", showlegend=col == 1,
                    line=dict(color=COLORS["tcp-slow"], dash="dash", width=1),
                    hovertemplate="bound at B=%{x:,} bytes: %{y:.1f} Mbit/s<extra></extra>"), row=1, col=col)
            bad = bounds[(bounds["method"] == method) & bounds["above"]]
            fig.add_trace(go.Scatter(
                x=bad["buffer_bytes"], y=bad["mbps"], mode="markers", legendgroup="above",
                name="run above its physics bound (not a valid measurement)", showlegend=col == 1 and len(bad) > 0,
                marker=dict(symbol="x", size=11, color="black"), customdata=np.stack(
                    [bad["run"].astype(str), bad["bound_mbps"]], axis=-1) if len(bad) else None,
                hovertemplate="%{customdata[0]}: %{y:.1f} Mbit/s, bound %{customdata[1]:.1f}<extra></extra>"),
                row=1, col=col)
        # Shade the buffer sizes where MPTCP is below single-path TCP on the fast path: each degraded
        # point's band reaches half-way (on the log axis) to its neighbours.
        sizes = sorted(sub["buffer_bytes"].unique())
        bad = sorted(set(sub[sub["degraded"]]["buffer_bytes"]))
        for i, b in enumerate(sizes):
            if b in bad:
                lo = np.sqrt(sizes[i - 1] * b) if i > 0 else b / 1.3
                hi = np.sqrt(sizes[i + 1] * b) if i + 1 < len(sizes) else b * 1.3
                fig.add_vrect(x0=lo, x1=hi, fillcolor="orange", opacity=0.18, line_width=0, layer="below",
                              row=1, col=col)
        xa, ya = ("x", "y") if col == 1 else (f"x{col}", f"y{col}")
        fig.add_annotation(x=np.log10(np.sqrt(min(bad) * max(bad))) if bad else np.log10(np.sqrt(sizes[0] * sizes[-1])),
                           y=0.98, yref=f"{ya} domain", yanchor="top", xref=xa, showarrow=False,
                           text=f"MPTCP < single-path TCP<br>{_kib(min(bad))} to {_kib(max(bad))}" if bad
                           else "no buffer size with<br>MPTCP < single-path TCP",
                           font=dict(color="darkorange", size=12))
        fig.add_hline(y=full, line=dict(color="grey", dash="dot", width=1), row=1, col=col)
        fig.update_xaxes(type="log", title_text="send buffer B (bytes)", row=1, col=col)
    fig.add_annotation(x=0, xref="paper", y=full, yref="y", text=f"one full {full_rate} path",
                       showarrow=False, xanchor="left", yanchor="bottom", font=dict(color="grey", size=10))
    top = float((t["mean"] + t[err_col].fillna(0)).max())
    fig.update_yaxes(range=[0, max(top, full) * 1.15])
    fig.update_yaxes(title_text="goodput at the receiver (Mbit/s)", row=1, col=1)
    n = int(sweep.groupby(["method", "buffer_bytes", "config"]).size().max())
    n_bad = int(bounds["above"].sum()) if bounds is not None else 0
    warn = (f"<br><sup><b>x: {n_bad} single-path run(s) above their physics bound: not a valid measurement</b></sup>"
            if n_bad else "")
    fig.update_layout(title=f"Throughput vs send buffer: single-path TCP on each path and MPTCP over both<br><sup>"
                            f"mean of {n} run(s) per point, error bars {'1 sd' if error == 'sd' else '95% CI'}; "
                            f"shaded: MPTCP below single-path TCP on the fast path</sup>{warn}",
                      height=480, margin=dict(t=130 if warn else 110), legend=dict(orientation="h", y=-0.22))
    return fig


def slow_path_bdp(manifest: dict | None = None, rtt_ms: float = 80.0) -> float:
    """Bytes in flight that keep the slow path full: its goodput limit x its RTT (from the manifest)."""
    if manifest:
        rtt_ms = max(p.get("rtt_ms_configured", 0) for p in manifest["network"]["paths"])
    return full_path_mbps(manifest, "slow")[0] * 1e6 / 8 * rtt_ms / 1000


def fig_effective_buffer(sweep: pd.DataFrame, manifest: dict | None = None) -> go.Figure:
    """MPTCP goodput against the send buffer the MPTCP socket really had (`sndbuf_effective`):
    tcp_wmem B gives it tcp_wmem[0] + the subflows' buffers (about 3B), SO_SNDBUF B gives 2B (locked).
    Plotted this way, both methods fall on one curve, crossing single-path TCP near the slow
    path's bandwidth-delay product."""
    m = sweep[(sweep["config"] == "mptcp") & sweep["sndbuf_effective"].notna()]
    g = m.groupby(["method", "sndbuf_effective"])["mbps"].agg(["mean", "std"]).reset_index()
    fig = go.Figure()
    for method, symbol in (("wmem", "circle"), ("sndbuf", "diamond")):
        s = g[g["method"] == method].sort_values("sndbuf_effective")
        if s.empty:
            continue
        fig.add_trace(go.Scatter(x=s["sndbuf_effective"], y=s["mean"], error_y=dict(array=s["std"].fillna(0)),
                                 mode="lines+markers", marker=dict(symbol=symbol, size=8),
                                 name={"wmem": "MPTCP, tcp_wmem = B B B", "sndbuf": "MPTCP, SO_SNDBUF = B"}[method]))
    fast = sweep[sweep["config"] == "tcp-fast"]["mbps"].mean()
    fig.add_hline(y=fast, line=dict(color=COLORS["tcp-fast"], dash="dash"),
                  annotation_text=f"single-path TCP, fast path ({fast:.0f} Mbit/s)", annotation_position="bottom right")
    bdp = slow_path_bdp(manifest)
    fig.add_vline(x=bdp, line=dict(color=COLORS["slow"], dash="dot"))
    fig.add_annotation(x=np.log10(bdp), y=1, yref="paper", yanchor="bottom", showarrow=False,  # log axis: log10
                       text=f"slow path's bandwidth-delay product: {bdp / 1e6:.2f} MB", font=dict(color=COLORS["slow"]))
    fig.update_xaxes(type="log", title_text="the MPTCP socket's send buffer, sk_sndbuf (bytes)")
    fig.update_yaxes(title_text="goodput (Mbit/s)", rangemode="tozero")
    fig.update_layout(title="MPTCP goodput vs the buffer the MPTCP socket really had", height=430,
                      legend=dict(orientation="h", y=-0.25))
    return fig


# ---------------------------------------------------------------- the detailed run

@dataclass
class Detail:
    path: Path
    summary: dict
    manifest: dict
    packets: pd.DataFrame  # sender's data segments: time (s from t0), path, stream, seq, len, dsn, flags
    probe: pd.DataFrame  # tcp_probe at the sender: time (s from t0), path, snd_cwnd, srtt_us, ...
    waits: pd.DataFrame  # send-buffer waits: start, end (s from t0), duration_s, method
    counters: dict  # nstat deltas during the transfer

    @classmethod
    def load(cls, sweep_dir: Path | str) -> "Detail":
        """The sweep's degraded run (not a control run), with its capture's packets."""
        return cls.load_run(find_detail(sweep_dir))

    @classmethod
    def load_run(cls, d: Path, packets: bool = True) -> "Detail":
        """One detailed run from its directory; a control run may lack packets (the compact copy
        keeps no capture of it) and, in a place without tracing, waits and tcp_probe (then empty)."""
        d = Path(d)
        summary = json.loads((d / "summary.json").read_text())
        manifest = json.loads((d / "manifest.json").read_text())
        t0 = summary["t0"]
        paths = path_names(manifest)
        has_packets = (d / "packets.csv.gz").exists() or (d / "capture.pcap").exists()
        pk = read_packets(d, paths, t0) if packets and has_packets else pd.DataFrame(
            columns=["time", "path", "stream", "seq", "len", "dsn", "reinjection", "tcp_retransmission",
                     "dsn_resent"])
        probe = _read_optional(d, "tcp_probe.csv", ["time", "saddr", "snd_cwnd", "srtt_us"])
        probe = probe[probe["saddr"].isin(paths)].copy()
        probe["path"] = probe["saddr"].map(paths)
        probe["time"] -= t0
        waits = _read_optional(d, "sndbuf_waits.csv", ["start", "end", "duration_s", "tid", "method"])
        # Only the measured window counts: a wait that began before the transfer's t0 or ended
        # after it is cut at the edge, so the blocked share never exceeds 100%.
        duration = float(summary.get("duration_s", 10))
        waits["start"] = (waits["start"] - t0).clip(lower=0)
        waits["end"] = (waits["end"] - t0).clip(upper=duration)
        waits = waits[waits["end"] > waits["start"]].reset_index(drop=True)
        waits["duration_s"] = waits["end"] - waits["start"]
        counters = json.loads((d / "counters.json").read_text()) if (d / "counters.json").exists() else {}
        return cls(d, summary, manifest, pk, probe, waits, counters.get("delta", counters))

    @property
    def control(self) -> str | None:
        """The [detail] controls spec this run answers ("tcp-fast", "mptcp@largest"), or None for
        the degraded run itself."""
        return self.summary.get("control")

    @property
    def label(self) -> str:
        what = {"mptcp": "MPTCP", "tcp-fast": "TCP, fast path", "tcp-slow": "TCP, slow path"}.get(
            self.summary.get("config"), str(self.summary.get("config")))
        role = "control" if self.control else "degraded run"
        return f"{what}, tcp_wmem {self.summary.get('buffer')} ({role})"

    @property
    def blocked_share(self) -> float:
        """The fraction of the transfer the sender spent blocked waiting for send-buffer memory."""
        return float(self.waits["duration_s"].sum()) / self.duration if self.duration else float("nan")

    @property
    def method(self) -> str:
        """How the send-buffer waits were measured (kprobe or sched_switch stacks)."""
        if "method" in self.waits and len(self.waits):
            return str(self.waits["method"].iloc[0])
        return self.summary.get("sndbuf_wait_method") or "unknown"

    @property
    def duration(self) -> float:
        return float(self.summary.get("duration_s", 10))

    def busiest_window(self, width: float = 0.6) -> tuple[float, float]:
        """The `width`-second window with the most send-buffer waits (the paper zooms on 0.6 s)."""
        if self.waits.empty:
            return max(0.0, self.duration - 2.5), max(0.0, self.duration - 2.5) + width
        starts = np.sort(self.waits["start"].to_numpy())
        starts = starts[starts <= self.duration - width] if (starts <= self.duration - width).any() else starts
        counts = np.searchsorted(starts, starts + width) - np.arange(len(starts))
        lo = float(starts[int(np.argmax(counts))])
        return lo, lo + width


def find_details(sweep_dir: Path | str) -> list[tuple[Path, str | None]]:
    """The sweep's detailed runs as (directory, control spec or None): the degraded run first (the
    newest if there are several), then the control runs by name."""
    sweep_dir = Path(sweep_dir)
    found = []
    for s in sweep_dir.glob("*/summary.json"):
        if s.parent.name.endswith(".partial"):
            continue
        try:
            summary = json.loads(s.read_text())
        except json.JSONDecodeError:
            continue
        if summary.get("detail") and not summary.get("part"):
            found.append((s.parent, summary.get("control")))
    main = [d for d, c in found if c is None]
    out = [(max(main, key=lambda p: (p / "summary.json").stat().st_mtime), None)] if main else []
    return out + sorted(((d, c) for d, c in found if c is not None), key=lambda x: x[0].name)


def find_detail(sweep_dir: Path | str) -> Path:
    """The sweep's degraded detailed run: the newest completed run whose summary says "detail":
    true and that is not a control run."""
    found = [d for d, control in find_details(sweep_dir) if control is None]
    if not found:
        raise FileNotFoundError(f"no detailed run in {sweep_dir}: `mptcplab run lab1` makes one after the sweep")
    return found[0]


def load_details(sweep_dir: Path | str) -> list[Detail]:
    """The degraded run and its control runs (without packets: their waits are what is compared)."""
    return [Detail.load_run(d, packets=False) for d, _ in find_details(sweep_dir)]


def path_names(manifest: dict) -> dict[str, str]:
    """Sender address -> path name ("fast", "slow")."""
    return {p["a_addr"]: p["name"] for p in manifest["network"]["paths"]}


def _read_table(d: Path, name: str) -> pd.DataFrame:
    for candidate in (d / name, d / f"{name}.gz"):
        if candidate.exists():
            return pd.read_csv(candidate)
    raise FileNotFoundError(f"{d}: {name} is missing")


def _read_optional(d: Path, name: str, columns: list[str]) -> pd.DataFrame:
    try:
        return _read_table(d, name)
    except FileNotFoundError:
        return pd.DataFrame({c: pd.Series(dtype=object if c in ("saddr", "method") else float) for c in columns})


def read_packets(d: Path, paths: dict, t0: float) -> pd.DataFrame:
    """Sender data segments from the run's capture (or from packets.csv.gz in the compact copy)."""
    compact = d / "packets.csv.gz"
    if compact.exists():
        return pd.read_csv(compact, dtype={"dsn": "Int64"})
    return packets_from_capture(d / "capture.pcap", paths, t0)


def _zoom(df: pd.DataFrame, col: str, window: tuple[float, float]) -> pd.DataFrame:
    return df[(df[col] >= window[0]) & (df[col] <= window[1])]


def fig4(d: Detail) -> go.Figure:
    """Data sequence number over time per subflow: the first and the last 2.5 s."""
    T = d.duration
    windows = [(0, 2.5), (T - 2.5, T)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"({c}) {a:g} s to {b:g} s" for c, (a, b) in
                                                         zip("ab", windows)])
    for col, w in enumerate(windows, 1):
        for path, g in _zoom(d.packets, "time", w).groupby("path"):
            g = g.iloc[:: max(1, len(g) // 4000)]  # thinned for the browser; the shape is unchanged
            fig.add_trace(go.Scattergl(x=g["time"], y=g["dsn"].astype(float) / 1e6, mode="markers",
                                       marker=dict(size=3, color=COLORS.get(path)), name=f"{path} subflow",
                                       legendgroup=path, showlegend=col == 1), 1, col)
        fig.update_xaxes(title_text="time (s)", range=list(w), row=1, col=col)
    fig.update_yaxes(title_text="data sequence number (MB)", row=1, col=1)
    share = d.packets.groupby("path")["len"].sum()
    share = ", ".join(f"{p} {v / share.sum():.0%}" for p, v in share.items())
    fig.update_layout(title=f"Fig. 4: data sequence number per subflow ({d.summary['mbps']:.1f} Mbit/s, "
                            f"{d.summary.get('method', 'wmem')} {d.summary.get('buffer')})<br><sup>bytes sent "
                            f"per subflow: {share}</sup>", height=440)
    return fig


def fig5(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """Zoom: (a) MPTCP data sequence numbers, MPTCP-level resends marked; (b) TCP sequence numbers
    per subflow, TCP retransmissions marked; the MPTcpExt counters of the whole run in the title."""
    window = window or d.busiest_window()
    z = _zoom(d.packets, "time", window)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=["(a) MPTCP data sequence number", "(b) TCP sequence number per subflow"])
    for path, g in z.groupby("path"):
        fig.add_trace(go.Scattergl(x=g["time"], y=g["dsn"].astype(float) / 1e6, mode="markers",
                                   name=f"{path} subflow", legendgroup=path,
                                   marker=dict(size=3, color=COLORS.get(path))), 1, 1)
        fig.add_trace(go.Scattergl(x=g["time"], y=g["seq"] / 1e6, mode="markers", legendgroup=path,
                                   showlegend=False, marker=dict(size=3, color=COLORS.get(path))), 2, 1)
    resent = z[z["dsn_resent"] | z["reinjection"]]
    fig.add_trace(go.Scatter(x=resent["time"], y=resent["dsn"].astype(float) / 1e6, mode="markers",
                             name="MPTCP-level resend", marker=dict(symbol="x", size=9, color="black")), 1, 1)
    tcp_rtx = z[z["tcp_retransmission"]]
    fig.add_trace(go.Scatter(x=tcp_rtx["time"], y=tcp_rtx["seq"] / 1e6, mode="markers", name="TCP retransmission",
                             marker=dict(symbol="circle-open", size=10, color="black")), 2, 1)
    c = d.counters
    note = (f"whole run: MPTcpExtMPTCPRetrans={c.get('MPTcpExtMPTCPRetrans', 0)}, "
            f"TcpExtTCPLostRetransmit={c.get('TcpExtTCPLostRetransmit', 0)}, "
            f"TcpRetransSegs={c.get('TcpRetransSegs', 0)}; in this window: {len(resent)} MPTCP-level resends, "
            f"{len(tcp_rtx)} TCP retransmissions")
    fig.update_yaxes(title_text="MB")
    fig.update_xaxes(range=list(window))
    fig.update_xaxes(title_text="time (s)", row=2, col=1)
    fig.update_layout(title=f"Fig. 5: {window[0]:.2f} s to {window[1]:.2f} s<br><sup>{note}</sup>", height=600)
    return fig


def fig6(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """Congestion window per subflow (tcp_probe): whole run (Fig. 6) and the zoom window (Fig. 9)."""
    window = window or d.busiest_window()
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4],
                        subplot_titles=["(Fig. 6) whole run", f"(Fig. 9) {window[0]:.2f} s to {window[1]:.2f} s"])
    for col, df in ((1, d.probe), (2, _zoom(d.probe, "time", window))):
        for path, g in df.groupby("path"):
            fig.add_trace(go.Scattergl(x=g["time"], y=g["snd_cwnd"], mode="lines", name=f"{path} subflow",
                                       legendgroup=path, showlegend=col == 1, line=dict(color=COLORS.get(path),
                                                                                        shape="hv")), 1, col)
        fig.update_xaxes(title_text="time (s)", row=1, col=col)
    fig.update_xaxes(range=list(window), row=1, col=2)
    fig.update_yaxes(title_text="cwnd (packets)", rangemode="tozero", row=1, col=1)
    drops = cwnd_drops(d.probe)
    peak = d.probe.groupby("path")["snd_cwnd"].max()
    fig.update_layout(title="Fig. 6/9: congestion window per subflow (tcp:tcp_probe)<br><sup>"
                            + "; ".join(f"{p}: peak {int(peak[p])}, {drops.get(p, 0)} reductions" for p in peak.index)
                            + f" (paper: slow subflow near {PAPER['slow_cwnd_peak']}, more than "
                              f"{PAPER['slow_cwnd_drops']} penalisations)</sup>", height=440)
    return fig


def fig10(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """When the sender was blocked waiting for send-buffer memory: whole run and the zoom window."""
    window = window or d.busiest_window()
    w = d.waits.sort_values("start")
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.17,
                        subplot_titles=["whole run", f"{window[0]:.2f} s to {window[1]:.2f} s (as the paper's Fig. 10)"])
    for row, df in ((1, w), (2, w[(w["end"] >= window[0]) & (w["start"] <= window[1])])):
        x, y = [], []
        for s, e in zip(df["start"], df["end"]):
            x += [s, s, e, e, None]
            y += [0, 1, 1, 0, None]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color="#1f77b4", width=1), fill="toself",
                                 name="blocked in sk_stream_wait_memory", showlegend=row == 1), row, 1)
        fig.update_yaxes(tickvals=[0, 1], ticktext=["sending", "waiting"], range=[-0.1, 1.25], row=row, col=1)
    # The paper marks its penalisations here; upstream has none, so mark MPTCP-level resends instead.
    resent = d.packets[d.packets["dsn_resent"] | d.packets["reinjection"]]
    for row, df in ((1, resent), (2, _zoom(resent, "time", window))):
        fig.add_trace(go.Scatter(x=df["time"], y=np.full(len(df), 1.12), mode="markers", showlegend=row == 1,
                                 name=f"MPTCP-level resend ({len(resent)} in the run; the paper marks penalisations)",
                                 marker=dict(color="black", size=6)), row, 1)
    fig.update_xaxes(title_text="time (s)", row=2, col=1)
    fig.update_xaxes(range=[0, d.duration], row=1, col=1)
    fig.update_xaxes(range=list(window), row=2, col=1)
    blocked = float(w["duration_s"].sum())
    fig.update_layout(height=500, legend=dict(orientation="h", y=-0.2), title=(
        f"Fig. 10: send-buffer waits: {len(w)} in {d.duration:g} s, blocked {blocked:.2f} s "
        f"({blocked / d.duration:.0%} of the time); paper: {PAPER['waits']} waits<br>"
        f"<sup>measured by {d.method}</sup>"))
    return fig


# ---------------------------------------------------------------- the control runs and the cost of tracing

def full_path_mbps(manifest: dict | None, path: str | None = None) -> tuple[float, str]:
    """Payload one full path carries, and its rate as text: `path`'s link in the run's manifest
    (None: the fastest path), else the lab's 100 Mbit/s."""
    rates = {name: p["rate_bps"] for name, p in paths_of(manifest).items() if p.get("rate_bps")} if manifest else {}
    rate = rates.get(path) if path else max(rates.values(), default=None)
    if not rate:
        return GOODPUT_LIMIT, f"{LINK_MBPS:g} Mbit/s"
    return physics.link_ceiling_bps(rate) / 1e6, f"{rate / 1e6:g} Mbit/s"


def _paths_full_mbps(manifest: dict, config: str | None) -> float:
    """The payload the paths a run used carry when full, from the run's own links (MPTCP: all of
    them; tcp-fast / tcp-slow: that path); the lab's 100 Mbit/s where the manifest has no rate."""
    used = list(paths_of(manifest)) if config == "mptcp" else [str(config).removeprefix("tcp-")]
    return sum(full_path_mbps(manifest, n)[0] for n in used) if used else GOODPUT_LIMIT


def wait_table(details: list[Detail], sweep: pd.DataFrame) -> pd.DataFrame:
    """The detailed runs side by side: goodput, send-buffer waits (count, median length, share of
    the time blocked), how full the paths it used were, and the cost of tracing: the traced run's
    goodput over the mean of the untraced sweep runs at the same point (method, buffer, config).

    Any sender that writes faster than the network carries is blocked most of the time, whatever
    limits it; what tells starvation apart is a sender blocked while a path it may use is idle."""
    rows = []
    for d in details:
        s = d.summary
        same = sweep[(sweep["method"] == s.get("method", "wmem")) & (sweep["buffer_bytes"] == s.get("buffer_bytes"))
                     & (sweep["config"] == s.get("config"))]
        untraced = float(same["mbps"].mean()) if len(same) else np.nan
        full = _paths_full_mbps(d.manifest, s.get("config"))
        rows.append({
            "run": d.path.name, "label": d.label, "control": d.control, "config": s.get("config"),
            "buffer_bytes": s.get("buffer_bytes"), "duration_s": d.duration, "mbps": s.get("mbps"),
            "paths_full_mbps": full, "utilisation": s.get("mbps", np.nan) / full,
            "waits": len(d.waits),
            "median_wait_ms": float(d.waits["duration_s"].median() * 1e3) if len(d.waits) else np.nan,
            "blocked_share": d.blocked_share, "wait_method": d.method,
            "untraced_mbps": untraced, "untraced_runs": len(same),
            "tracing_ratio": s.get("mbps", np.nan) / untraced if untraced else np.nan})
    return pd.DataFrame(rows, columns=["run", "label", "control", "config", "buffer_bytes", "duration_s", "mbps",
                                       "paths_full_mbps", "utilisation", "waits", "median_wait_ms", "blocked_share",
                                       "wait_method", "untraced_mbps", "untraced_runs", "tracing_ratio"])


def describe_tracing_cost(table: pd.DataFrame) -> str:
    """One line per detailed run: traced goodput against the untraced sweep runs at the same point."""
    lines = []
    for r in table.itertuples():
        if r.untraced_runs:
            lines.append(f"{r.run}: {r.mbps:.1f} Mbit/s traced vs {r.untraced_mbps:.1f} Mbit/s untraced (mean of "
                         f"{r.untraced_runs} sweep run(s) at the same point): ratio {r.tracing_ratio:.2f}, "
                         f"the traced run delivered {r.tracing_ratio:.0%} of the untraced rate")
        else:
            lines.append(f"{r.run}: {r.mbps:.1f} Mbit/s traced; no untraced sweep run at the same point")
    return "\n".join(lines)


def describe_waits(table: pd.DataFrame) -> str:
    """The blocked share of each detailed run, read against the controls."""
    lines = [f"{r.label}: {r.mbps:.1f} Mbit/s ({r.utilisation:.0%} of the "
             f"{'two paths' if r.config == 'mptcp' else 'path'}), blocked {r.blocked_share:.1%} of the time in "
             f"{r.waits} waits (median {r.median_wait_ms:.2f} ms)" for r in table.itertuples()]
    if table["control"].isna().all():
        lines.append("No control runs in these results (made before the kit ran them): `sudo mptcplab run lab1` "
                     "with the same --out resumes the sweep and adds them.")
    return "\n".join(lines)


def fig_waits_compare(details: list[Detail], sweep: pd.DataFrame | None = None, width: float = 1.0) -> go.Figure:
    """The degraded run's send-buffer waits against the control runs': (a) when the sender was
    blocked, in the same `width`-second window of each run; (b) the share of the time blocked, with
    goodput and how full the paths were."""
    table = wait_table(details, sweep if sweep is not None else pd.DataFrame(columns=["method", "buffer_bytes",
                                                                                       "config", "mbps"]))
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4], horizontal_spacing=0.12,
                        subplot_titles=[f"(a) blocked in sk_stream_wait_memory, {width:g} s of each run",
                                        "(b) share of the run blocked"])
    colors = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#8c564b"]
    for i, d in enumerate(details):
        lo = max(0.0, d.duration / 2 - width / 2)
        w = d.waits[(d.waits["end"] >= lo) & (d.waits["start"] <= lo + width)]
        x, y = [], []
        for a, b in zip(w["start"].clip(lower=lo) - lo, w["end"].clip(upper=lo + width) - lo):
            x += [a, a, b, b, None]
            y += [i - 0.35, i + 0.35, i + 0.35, i - 0.35, None]
        fig.add_trace(go.Scatter(x=x or [None], y=y or [None], mode="lines", fill="toself", name=d.label,
                                 line=dict(color=colors[i % len(colors)], width=1), legendgroup=d.label), 1, 1)
        r = table.iloc[i]
        fig.add_trace(go.Bar(y=[i], x=[100 * r["blocked_share"]], orientation="h", showlegend=False,
                             marker_color=colors[i % len(colors)], legendgroup=d.label,
                             text=[f"{r['blocked_share']:.0%}: {r['waits']} waits, median "
                                   f"{r['median_wait_ms']:.1f} ms; {r['mbps']:.0f} Mbit/s = "
                                   f"{r['utilisation']:.0%} of its path(s)"],
                             textposition="inside", insidetextanchor="start"), 1, 2)
    ticks = dict(tickvals=list(range(len(details))), ticktext=[d.label.replace(" (", "<br>(") for d in details],
                 autorange="reversed")
    fig.update_yaxes(**ticks, row=1, col=1)
    fig.update_yaxes(**ticks, showticklabels=False, row=1, col=2)
    fig.update_xaxes(title_text="time in the window (s)", range=[0, width], row=1, col=1)
    fig.update_xaxes(title_text="% of the transfer", range=[0, 100], row=1, col=2)
    note = ("every sender that writes faster than the network carries blocks; starvation is blocking while a "
            "path is idle" if (table["control"].notna()).any() else "no control runs in these results")
    fig.update_layout(title=f"Send-buffer waits: the degraded run against the controls<br><sup>{note}</sup>",
                      height=180 + 110 * max(1, len(details)), legend=dict(orientation="h", y=-0.25))
    return fig


FIGURE_NAMES = ["throughput-vs-buffer", "fig4-dsn", "fig5-zoom", "fig6-cwnd", "fig10-sndbuf-waits",
                "sndbuf-waits-controls"]


def figures(sweep_dir: Path | str) -> list[go.Figure]:
    """Every Lab 1 figure of a run, in the paper's order, then the controls (used by `mptcplab reproduce`)."""
    d = Detail.load(sweep_dir)
    window = d.busiest_window()
    sweep = load_sweep(sweep_dir)
    return [fig_throughput(sweep, manifest=d.manifest), fig4(d), fig5(d, window), fig6(d, window), fig10(d, window),
            fig_waits_compare(load_details(sweep_dir), sweep)]


def save_images(sweep_dir: Path | str, dest: Path | str) -> list[Path]:
    """Static PNGs of every figure (for the site and printed reports; kaleido, no browser)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    out = []
    figs = list(zip(FIGURE_NAMES, figures(sweep_dir)))
    figs.append(("mptcp-vs-effective-buffer",
                 fig_effective_buffer(load_sweep(sweep_dir), Detail.load(sweep_dir).manifest)))
    for name, fig in figs:
        path = dest / f"{name}.png"
        fig.write_image(path, width=1100, height=fig.layout.height or 450, scale=1)
        out.append(path)
    return out


# ---------------------------------------------------------------- paper vs this run

def _mean_at(t: pd.DataFrame, method: str, size: int, config: str) -> pd.Series | None:
    row = t[(t["method"] == method) & (t["buffer_bytes"] == size) & (t["config"] == config)]
    return None if row.empty else row.iloc[0]


def report(sweep_dir: Path | str) -> str:
    """The "paper vs this run" markdown table (kernel and place from the manifests), then the
    paper's point with each scheduler where it ran ([paper_point])."""
    sweep_dir = Path(sweep_dir)
    from .lab1_paper_point import load_paper_point, paper_point_markdown, paper_point_setting

    paper = load_paper_point(sweep_dir)
    paper_md = paper_point_markdown(paper, paper_point_setting(sweep_dir, paper)) if len(paper) else ""
    try:
        sweep = load_sweep(sweep_dir)
    except FileNotFoundError:
        sweep = pd.DataFrame()
    if sweep.empty:
        if paper_md:  # only the paper's point ran (paper_point.only)
            return "# Lab 1: paper vs this run\n\n" + paper_md
        raise FileNotFoundError(f"no completed lab1 transfers in {sweep_dir}: run `sudo mptcplab run lab1 --quick`")
    t = throughput_table(sweep)
    d = Detail.load(sweep_dir)
    plat = d.manifest["platform"]
    place = {"uml": "User-Mode Linux kernel", "native": "native kernel"}.get(plat["where"], plat["where"])
    if plat.get("hostname", "").startswith("mptcplab-vm") or plat.get("vm"):
        place += " in the kit's VM"
    deg = {m: degradation_region(sweep, m) for m in ("wmem", "sndbuf") if m in set(sweep["method"])}
    at_1m = _mean_at(t, "wmem", PAPER["tcp_wmem"], "mptcp")
    fast = t[(t["method"] == "wmem") & (t["config"] == "tcp-fast")]["mean"].mean()
    drops = cwnd_drops(d.probe)
    peak = d.probe.groupby("path")["snd_cwnd"].max().to_dict()
    reps = int(sweep["rep"].max()) if "rep" in sweep else 1
    eff = sweep[(sweep["config"] == "mptcp") & (sweep["method"] == "wmem")]
    eff_ratio = (eff["sndbuf_effective"] / eff["buffer_bytes"]).median() if "sndbuf_effective" in eff else np.nan
    blocked = float(d.waits["duration_s"].sum())
    waits = wait_table(load_details(sweep_dir), sweep)
    ctrl = waits[waits["control"].notna()]
    bounds = window_bounds(sweep, d.manifest)
    bad = bounds[bounds["above"]]
    mb = mptcp_bounds(sweep, d.manifest)
    rows = [
        ("MPTCP goodput at tcp_wmem = 1 MiB", f"{PAPER['mptcp_mbps_mean']} Mbit/s (42.4-49.8, sd 3.54, 5 runs)",
         f"{at_1m['mean']:.1f} Mbit/s (sd {0 if pd.isna(at_1m['std']) else at_1m['std']:.1f}, n={int(at_1m['count'])})"
         if at_1m is not None else "not in this sweep",
         "upstream gives the MPTCP socket tcp_wmem[0] + the subflows' buffers "
         f"(here {eff_ratio:.2g} x B), so 1 MiB is already past the region" if eff_ratio == eff_ratio else
         "upstream gives the MPTCP socket tcp_wmem[0] + the subflows' buffers"),
        ("Single-path TCP on the fast path", "about 100 Mbit/s link", f"{fast:.1f} Mbit/s goodput (mean over buffers)",
         "goodput excludes headers: {:.1f} Mbit/s is a full {} link".format(*full_path_mbps(d.manifest, "fast"))),
        ("Buffer sizes where MPTCP < single-path TCP (tcp_wmem)", "1 MiB (medium buffers in refs [16, 17])",
         ", ".join(_kib(b) for b in deg.get("wmem", [])) or "none in this sweep",
         "the degradation exists upstream but at smaller buffers"),
        ("... the same with SO_SNDBUF", "not measured",
         ", ".join(_kib(b) for b in deg.get("sndbuf", [])) or "none in this sweep",
         "SO_SNDBUF (doubled by the kernel) locks the MPTCP socket's buffer: no sum over subflows"),
        (f"Detailed run ({d.summary.get('method', 'wmem')} {d.summary.get('buffer')})", "48.6 Mbit/s (run 4)",
         f"{d.summary['mbps']:.1f} Mbit/s", "the most degraded buffer of this sweep, not 1 MiB"),
        ("Send-buffer waits in the detailed run", f"{PAPER['waits']} in 10 s (kernel patch)",
         f"{len(d.waits)} in {d.duration:g} s, blocked {blocked / d.duration:.0%} of the time ({d.method})",
         "measured without patching the kernel; the method is named"),
        ("... the same in the control runs (network-limited senders)", "not measured",
         "; ".join(f"{r.label}: {r.waits} waits, blocked {r.blocked_share:.0%}, {r.mbps:.1f} Mbit/s "
                   f"({r.utilisation:.0%} of its path(s))" for r in ctrl.itertuples()) or "no control runs",
         "any sender faster than its network blocks; starvation is blocking while a path is idle"),
        ("Cost of tracing (detailed run vs untraced sweep runs, same point)", "not stated",
         "; ".join(f"{r.run}: {r.mbps:.1f} vs {r.untraced_mbps:.1f} Mbit/s (x{r.tracing_ratio:.2f})"
                   for r in waits.itertuples() if r.untraced_runs) or "no untraced run at the same point",
         "capture, tracepoints and stack traces cost the sender CPU time and change its timing, either way"),
        ("Single-path runs within their window bound ((sk_sndbuf + 64 KiB) / RTT)", "not stated",
         f"all {len(bounds)}" if bad.empty else
         f"{len(bad)} of {len(bounds)} above: " + ", ".join(map(str, bad["run"].head(6)))
         + (" ..." if len(bad) > 6 else ""),
         "physics: `mptcplab check` judges the same bound" if bad.empty else
         "NOT VALID: this place did not honour the send buffer"),
        ("MPTCP (tcp_wmem, SO_SNDBUF) against S / RTT_slow and 2 S / RTT_slow", "not stated",
         "; ".join(f"{w}: {len(g)}" for w, g in mb.groupby("where", sort=False)) or "no MPTCP runs",
         "S = the MPTCP socket's buffer; the DATA_ACK may return on either subflow"),
        ("Penalisations / opportunistic retransmissions", f"{PAPER['penalisations']} penalisations (1-3 cuts each)",
         f"MPTCP-level retransmissions: {d.counters.get('MPTcpExtMPTCPRetrans', 0)}; TCP-level "
         f"retransmitted segments: {d.counters.get('TcpRetransSegs', 0)}",
         "upstream has no RP mechanism; it resends at MPTCP level only on timeouts and stale subflows"),
        ("Slow subflow cwnd", f"peaks near {PAPER['slow_cwnd_peak']} packets, >{PAPER['slow_cwnd_drops']} drops",
         f"peak {int(peak.get('slow', 0))} packets, cwnd drops: {drops.get('slow', 0)} (fast: peak "
         f"{int(peak.get('fast', 0))}, drops: {drops.get('fast', 0)})", "no penalisation upstream"),
    ]
    lines = [
        "# Lab 1: paper vs this run",
        "",
        f"This run: Linux {plat['kernel_release']} (upstream MPTCP, scheduler "
        f"{d.manifest.get('network', {}).get('sysctls', {}).get('snd', {}).get('net.mptcp.scheduler', 'default')}) "
        f"in a {place}; {'quick sweep, 1 repetition' if reps == 1 else f'{reps} repetitions'} "
        f"({len(sweep)} transfers); detailed run `{d.path.name}`. Paper: {PAPER['kernel']}.",
        "",
        "| quantity | paper | this run | why they may differ |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {e} |" for a, b, c, e in rows]
    return "\n".join(lines) + "\n" + ("\n" + paper_md if paper_md else "")


# ---------------------------------------------------------------- compact reference results

def _copy_run_tables(run: Path, out: Path) -> None:
    """A detailed run's small files and its tcp_probe and ss samples (gzipped) into `out`."""
    out.mkdir(parents=True)
    for name in ("summary.json", "manifest.json", "counters.json", "sndbuf_waits.csv", "intervals.csv",
                 "topology.sh"):
        if (run / name).exists():
            shutil.copy2(run / name, out / name)
    manifest = json.loads((run / "manifest.json").read_text())
    if (run / "tcp_probe.csv").exists():
        probe = pd.read_csv(run / "tcp_probe.csv")
        with gzip.open(out / "tcp_probe.csv.gz", "wt") as f:
            probe[probe["saddr"].isin(path_names(manifest))].to_csv(f, index=False)
    if (run / "ss.csv").exists():
        with gzip.open(out / "ss.csv.gz", "wt") as f:
            pd.read_csv(run / "ss.csv").to_csv(f, index=False)


def export_reference(sweep_dir: Path | str, dest: Path | str) -> Path:
    """Copy what the notebook and the report need, compactly: tables and manifests, no raw capture.

    The detailed run's packets (from the capture) and tcp_probe become gzipped CSVs; the capture
    is cut to the handshakes plus the busiest 0.6 s (capture-window.pcap), enough for packet-level
    exploration with pyshark with the MPTCP analysis working. The control runs keep their tables
    (waits, tcp_probe, ss samples, counters), not their packets.
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    d = Detail.load(sweep_dir)
    sweep = load_sweep(sweep_dir)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    sweep.to_csv(dest / "sweep.csv", index=False)
    for name in ("summary.json", "manifest.json"):
        if (sweep_dir / "verify" / name).exists():
            shutil.copy2(sweep_dir / "verify" / name, dest / f"verify-{name}")
    for control, _ in find_details(sweep_dir)[1:]:  # the control runs: their tables, no packets
        _copy_run_tables(control, dest / control.name)
    out = dest / d.path.name
    _copy_run_tables(d.path, out)
    with gzip.open(out / "packets.csv.gz", "wt") as f:
        d.packets.to_csv(f, index=False, float_format="%.6f")
    lo, hi = d.busiest_window()
    t0 = d.summary["t0"]
    keep = (f"tcp.flags.syn == 1 || frame.number <= 30 || "
            f"(frame.time_epoch >= {t0 + lo:.6f} && frame.time_epoch <= {t0 + hi:.6f})")
    subprocess.run(["tshark", "-n", "-r", str(d.path / "capture.pcap"), "-Y", keep, "-w",
                    str(out / "capture-window.pcap")], check=True, capture_output=True)
    (dest / "paper-vs-this-run.md").write_text(report(sweep_dir))
    save_images(dest, dest / "figures")
    return dest
