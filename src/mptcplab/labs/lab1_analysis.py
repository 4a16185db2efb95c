"""Lab 1 analysis: the throughput sweep and the paper's Figures 4, 5, 6/9 and 10, from a run.

Everything here reads a sweep directory written by `mptcplab run lab1` (or the compact reference
copy in solutions/results/lab1/, which has the same layout minus the raw capture):

    sweep = load_sweep(path)            # one row per transfer
    fig_throughput(sweep)               # throughput vs send buffer, degradation region shaded
    d = Detail.load(path)               # the degraded run with capture and tracing
    fig4(d); fig5(d); fig6(d); fig10(d)
    report(path)                        # the "paper vs this run" markdown table
"""

from __future__ import annotations

import gzip
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..capture import fields
from ..results import Sweep

PAPER = {  # Kato et al. 2020, Section III-B and IV-B
    "mptcp_mbps_mean": 46.8, "mptcp_mbps_sd": 3.54, "mptcp_mbps_range": (42.4, 49.8),
    "tcp_wmem": 1048576, "waits": 278, "penalisations": 28, "slow_cwnd_peak": 700, "slow_cwnd_drops": 20,
    "duration_s": 10, "kernel": "multipath-tcp.org out-of-tree MPTCP (Ubuntu 16.04), minRTT scheduler + RP",
}
COLORS = {"fast": "#1f77b4", "slow": "#d62728", "tcp-fast": "#1f77b4", "tcp-slow": "#d62728", "mptcp": "#2ca02c"}
PACKET_FIELDS = ["frame.time_epoch", "tcp.stream", "ip.src", "tcp.srcport", "tcp.seq", "tcp.len", "mptcp.dsn",
                 "mptcp.reinjection_of", "tcp.analysis.retransmission"]


# ---------------------------------------------------------------- the sweep

def load_sweep(path: Path | str) -> pd.DataFrame:
    """One row per sweep transfer (not the setup check, not the detailed run)."""
    path = Path(path)
    if (path / "sweep.csv").exists():  # the compact reference copy
        return pd.read_csv(path / "sweep.csv")
    table = Sweep(path).summaries()
    if table.empty:
        raise FileNotFoundError(f"no completed lab1 runs in {path}")
    keep = table["config"].notna() if "config" in table else pd.Series(False, index=table.index)
    if "detail" in table:
        keep &= table["detail"].isna() | (table["detail"] == False)  # noqa: E712
    cols = ["run", "method", "buffer", "buffer_bytes", "config", "rep", "mbps", "subflows", "sndbuf_effective"]
    return table.loc[keep, [c for c in cols if c in table]].reset_index(drop=True)


def throughput_table(sweep: pd.DataFrame) -> pd.DataFrame:
    """Mean, sd and count per method, buffer and config; plus MPTCP vs single-path TCP (fast path)."""
    g = sweep.groupby(["method", "buffer_bytes", "config"])["mbps"].agg(["mean", "std", "count"]).reset_index()
    wide = g.pivot_table(index=["method", "buffer_bytes"], columns="config", values="mean").reset_index()
    wide["degraded"] = wide["mptcp"] < wide["tcp-fast"]
    wide["mptcp_over_tcp_fast"] = wide["mptcp"] / wide["tcp-fast"]
    return g.merge(wide[["method", "buffer_bytes", "degraded", "mptcp_over_tcp_fast"]], on=["method", "buffer_bytes"])


def _kib(b: float) -> str:
    return f"{b / 1048576:g} MiB" if b >= 1048576 else f"{b / 1024:g} KiB"


def fig_throughput(sweep: pd.DataFrame) -> go.Figure:
    t = throughput_table(sweep)
    methods = [m for m in ("wmem", "sndbuf") if m in set(t["method"])]
    titles = {"wmem": "sysctl net.ipv4.tcp_wmem = B B B", "sndbuf": "setsockopt(SO_SNDBUF, B)"}
    fig = make_subplots(rows=1, cols=len(methods), shared_yaxes=True, subplot_titles=[titles[m] for m in methods])
    for col, method in enumerate(methods, 1):
        sub = t[t["method"] == method]
        for config in ("tcp-fast", "tcp-slow", "mptcp"):
            s = sub[sub["config"] == config].sort_values("buffer_bytes")
            fig.add_trace(go.Scatter(
                x=s["buffer_bytes"], y=s["mean"], error_y=dict(type="data", array=s["std"].fillna(0)),
                mode="lines+markers", name=config, legendgroup=config, showlegend=col == 1,
                line=dict(color=COLORS[config]), customdata=np.stack([s["count"], s["std"].fillna(0)], axis=-1),
                hovertemplate="%{x:,} B: %{y:.1f} Mbit/s (sd %{customdata[1]:.1f}, n=%{customdata[0]})"))
        # Shade the buffer sizes where MPTCP is below single-path TCP on the fast path.
        sizes = sorted(sub["buffer_bytes"].unique())
        bad = set(sub[sub["degraded"]]["buffer_bytes"])
        for i, b in enumerate(sizes):
            if b in bad:
                lo = np.sqrt(sizes[i - 1] * b) if i > 0 else b / 1.3
                hi = np.sqrt(sizes[i + 1] * b) if i + 1 < len(sizes) else b * 1.3
                fig.add_vrect(x0=lo, x1=hi, fillcolor="orange", opacity=0.15, line_width=0, row=1, col=col)
        if bad:
            fig.add_annotation(x=np.log10(np.sqrt(min(bad) * max(bad))), y=1.02, yref="paper", xref=f"x{col}",
                               text="MPTCP < single-path TCP", showarrow=False, font=dict(color="darkorange"))
        fig.update_xaxes(type="log", title_text="send buffer B (bytes)", row=1, col=col)
    fig.update_yaxes(title_text="goodput (Mbit/s)", rangemode="tozero", row=1, col=1)
    fig.update_layout(title="Throughput vs send buffer: single-path TCP on each path and MPTCP over both",
                      height=450, legend=dict(orientation="h", y=-0.2))
    return fig


# ---------------------------------------------------------------- the detailed run

@dataclass
class Detail:
    path: Path
    summary: dict
    manifest: dict
    packets: pd.DataFrame  # sender's data segments: time (s from t0), path, dsn, seq, len, flags
    probe: pd.DataFrame  # tcp_probe at the sender: time, path, snd_cwnd, srtt_us, ...
    waits: pd.DataFrame  # send-buffer waits: start, end (s from t0), duration_s, method
    counters: dict  # nstat deltas during the transfer

    @classmethod
    def load(cls, sweep_dir: Path | str) -> "Detail":
        sweep_dir = Path(sweep_dir)
        runs = sorted(sweep_dir.glob("detail-*/summary.json"))
        if not runs:
            raise FileNotFoundError(f"no detailed run (detail-*) in {sweep_dir}")
        d = runs[-1].parent
        summary = json.loads((d / "summary.json").read_text())
        manifest = json.loads((d / "manifest.json").read_text())
        t0 = summary["t0"]
        paths = {p["a_addr"]: p["name"] for p in manifest["network"]["paths"]}
        packets = _read_packets(d, paths, t0)
        probe = _read_table(d, "tcp_probe.csv")
        probe = probe[probe["saddr"].isin(paths)].copy()
        probe["path"] = probe["saddr"].map(paths)
        probe["time"] -= t0
        waits = _read_table(d, "sndbuf_waits.csv")
        waits[["start", "end"]] -= t0
        counters = json.loads((d / "counters.json").read_text())
        return cls(d, summary, manifest, packets, probe, waits, counters.get("delta", counters))

    @property
    def method(self) -> str:
        return self.summary.get("sndbuf_wait_method") or "unknown"

    def busiest_window(self, width: float = 0.6) -> tuple[float, float]:
        """The `width`-second window with the most send-buffer waits (the paper zooms on 0.6 s)."""
        if self.waits.empty:
            return 7.5, 7.5 + width
        starts = np.sort(self.waits["start"].to_numpy())
        counts = np.searchsorted(starts, starts + width) - np.arange(len(starts))
        lo = float(starts[int(np.argmax(counts))])
        return lo, lo + width


def _read_table(d: Path, name: str) -> pd.DataFrame:
    for candidate in (d / name, d / f"{name}.gz"):
        if candidate.exists():
            return pd.read_csv(candidate)
    raise FileNotFoundError(f"{d}: {name} is missing")


def _read_packets(d: Path, paths: dict, t0: float) -> pd.DataFrame:
    """Sender data segments from the capture (or from packets.csv.gz in the compact copy)."""
    compact = d / "packets.csv.gz"
    if compact.exists():
        return pd.read_csv(compact)
    raw = fields(d / "capture.pcap", PACKET_FIELDS, display_filter="tcp.len > 0 && tcp.dstport == 5201")
    raw = raw[raw["ip.src"].isin(paths)]
    df = pd.DataFrame({
        "time": raw["frame.time_epoch"] - t0,
        "path": raw["ip.src"].map(paths),
        "stream": raw["tcp.stream"],
        "seq": raw["tcp.seq"], "len": raw["tcp.len"],
        "dsn": raw["mptcp.dsn"],
        "reinjection": raw["mptcp.reinjection_of"].notna(),
        "tcp_retransmission": raw["tcp.analysis.retransmission"].notna(),
    })
    # Data whose DSN was already sent, and not a TCP retransmission: MPTCP sent it again
    # (a reinjection, possibly on another subflow). A lower DSN alone is not one: each subflow
    # gets its own chunk of the data stream and may put it on the wire later.
    df["dsn_resent"] = df.duplicated("dsn") & ~df["tcp_retransmission"]
    return df.reset_index(drop=True)


def _zoom(df: pd.DataFrame, col: str, window: tuple[float, float]) -> pd.DataFrame:
    return df[(df[col] >= window[0]) & (df[col] <= window[1])]


def fig4(d: Detail) -> go.Figure:
    """Data sequence number over time per subflow: the first and the last 2.5 s."""
    T = d.summary.get("duration_s", 10)
    windows = [(0, 2.5), (T - 2.5, T)]
    fig = make_subplots(rows=1, cols=2, subplot_titles=[f"(a) {a:g}-{b:g} s" for a, b in windows])
    for col, w in enumerate(windows, 1):
        for path, g in _zoom(d.packets, "time", w).groupby("path"):
            g = g.iloc[:: max(1, len(g) // 4000)]  # thinned for the browser; the shape is unchanged
            fig.add_trace(go.Scattergl(x=g["time"], y=g["dsn"] / 1e6, mode="markers", marker=dict(size=3,
                          color=COLORS[path]), name=f"{path} subflow", legendgroup=path, showlegend=col == 1), 1, col)
        fig.update_xaxes(title_text="time (s)", row=1, col=col)
    fig.update_yaxes(title_text="data sequence number (MB, relative)", row=1, col=1)
    fig.update_layout(title=f"Fig. 4: data sequence numbers per subflow ({d.summary['mbps']:.1f} Mbit/s, "
                            f"tcp_wmem {d.summary.get('buffer')})", height=420)
    return fig


def fig5(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """Zoom: (a) MPTCP data sequence numbers with data sent again marked; (b) TCP sequence numbers."""
    window = window or d.busiest_window()
    z = _zoom(d.packets, "time", window)
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1,
                        subplot_titles=["(a) MPTCP data sequence number", "(b) TCP sequence number per subflow"])
    for path, g in z.groupby("path"):
        fig.add_trace(go.Scattergl(x=g["time"], y=g["dsn"] / 1e6, mode="markers", name=f"{path} subflow",
                                   legendgroup=path, marker=dict(size=3, color=COLORS[path])), 1, 1)
        fig.add_trace(go.Scattergl(x=g["time"], y=g["seq"] / 1e6, mode="markers", legendgroup=path,
                                   showlegend=False, marker=dict(size=3, color=COLORS[path])), 2, 1)
    resent = z[z["dsn_resent"] | z["reinjection"]]
    fig.add_trace(go.Scatter(x=resent["time"], y=resent["dsn"] / 1e6, mode="markers", name="MPTCP-level resend",
                             marker=dict(symbol="x", size=9, color="black")), 1, 1)
    tcp_rtx = z[z["tcp_retransmission"]]
    fig.add_trace(go.Scatter(x=tcp_rtx["time"], y=tcp_rtx["seq"] / 1e6, mode="markers", name="TCP retransmission",
                             marker=dict(symbol="circle-open", size=10, color="black")), 2, 1)
    c = d.counters
    note = (f"whole run: MPTcpExtMPTCPRetrans={c.get('MPTcpExtMPTCPRetrans', 0)}, "
            f"TcpRetransSegs={c.get('TcpRetransSegs', 0)}; in this window: {len(resent)} MPTCP-level, "
            f"{len(tcp_rtx)} TCP-level")
    fig.update_yaxes(title_text="MB (relative)")
    fig.update_xaxes(title_text="time (s)", row=2, col=1)
    fig.update_layout(title=f"Fig. 5: {window[0]:.2f}-{window[1]:.2f} s<br><sup>{note}</sup>", height=600)
    return fig


def fig6(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """Congestion window per subflow (tcp_probe): whole run (Fig. 6) and the zoom window (Fig. 9)."""
    window = window or d.busiest_window()
    fig = make_subplots(rows=1, cols=2, column_widths=[0.6, 0.4],
                        subplot_titles=["(Fig. 6) whole run", f"(Fig. 9) {window[0]:.2f}-{window[1]:.2f} s"])
    for col, df in ((1, d.probe), (2, _zoom(d.probe, "time", window))):
        for path, g in df.groupby("path"):
            fig.add_trace(go.Scattergl(x=g["time"], y=g["snd_cwnd"], mode="lines", name=f"{path} subflow",
                                       legendgroup=path, showlegend=col == 1, line=dict(color=COLORS[path])), 1, col)
        fig.update_xaxes(title_text="time (s)", row=1, col=col)
    fig.update_yaxes(title_text="cwnd (packets)", row=1, col=1)
    drops = cwnd_drops(d.probe)
    fig.update_layout(title="Fig. 6/9: congestion window per subflow (tcp:tcp_probe)<br><sup>cwnd reductions: "
                            + ", ".join(f"{p} {n}" for p, n in drops.items()) + "</sup>", height=420)
    return fig


def cwnd_drops(probe: pd.DataFrame) -> dict:
    """How often each subflow's cwnd fell by at least a quarter from one sample to the next."""
    out = {}
    for path, g in probe.sort_values("time").groupby("path"):
        cw = g["snd_cwnd"].to_numpy()
        out[path] = int(np.sum(cw[1:] < 0.75 * cw[:-1]))
    return out


def fig10(d: Detail, window: tuple[float, float] | None = None) -> go.Figure:
    """When the sender was blocked waiting for send-buffer memory."""
    window = window or d.busiest_window()
    w = d.waits.sort_values("start")
    fig = make_subplots(rows=2, cols=1, vertical_spacing=0.15,
                        subplot_titles=["whole run", f"{window[0]:.2f}-{window[1]:.2f} s (as the paper's Fig. 10)"])
    for row, df in ((1, w), (2, w[(w["end"] >= window[0]) & (w["start"] <= window[1])])):
        x, y = [], []
        for s, e in zip(df["start"], df["end"]):
            x += [s, s, e, e]
            y += [0, 1, 1, 0]
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line=dict(color="#1f77b4"), fill="tozeroy",
                                 name="blocked in sk_stream_wait_memory", showlegend=row == 1), row, 1)
        fig.update_yaxes(tickvals=[0, 1], ticktext=["sending", "waiting"], range=[-0.1, 1.2], row=row, col=1)
    T = d.summary.get("duration_s", 10)
    blocked = w["duration_s"].sum()
    fig.update_xaxes(title_text="time (s)", row=2, col=1)
    fig.update_layout(height=480, title=(
        f"Fig. 10: send-buffer waits: {len(w)} in {T:g} s, blocked {blocked / T:.0%} of the time "
        f"(paper: {PAPER['waits']} waits)<br><sup>method: {d.method}</sup>"))
    return fig


def figures(sweep_dir: Path | str) -> list[go.Figure]:
    """Every Lab 1 figure of a run, in the paper's order (used by `mptcplab reproduce`)."""
    d = Detail.load(sweep_dir)
    window = d.busiest_window()
    return [fig_throughput(load_sweep(sweep_dir)), fig4(d), fig5(d, window), fig6(d, window), fig10(d, window)]


def save_images(sweep_dir: Path | str, dest: Path | str) -> list[Path]:
    """Static PNGs of every figure (for the site and printed reports)."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    names = ["throughput-vs-buffer", "fig4-dsn", "fig5-zoom", "fig6-cwnd", "fig10-sndbuf-waits"]
    out = []
    for name, fig in zip(names, figures(sweep_dir)):
        path = dest / f"{name}.png"
        fig.write_image(path, width=1100, height=fig.layout.height or 450, scale=1)
        out.append(path)
    return out


# ---------------------------------------------------------------- paper vs this run

def report(sweep_dir: Path | str) -> str:
    sweep_dir = Path(sweep_dir)
    sweep = load_sweep(sweep_dir)
    t = throughput_table(sweep)
    d = Detail.load(sweep_dir)
    plat = d.manifest["platform"]
    place = {"uml": "User-Mode Linux kernel", "native": "native kernel"}.get(plat["where"], plat["where"])
    wmem = t[t["method"] == "wmem"]
    deg = sorted(wmem[wmem["degraded"]]["buffer_bytes"].unique())
    at_1m = wmem[(wmem["buffer_bytes"] == PAPER["tcp_wmem"]) & (wmem["config"] == "mptcp")]
    fast = wmem[wmem["config"] == "tcp-fast"]["mean"].mean()
    drops = cwnd_drops(d.probe)
    peak = d.probe.groupby("path")["snd_cwnd"].max().to_dict()
    reps = int(sweep["rep"].max()) if "rep" in sweep else 1
    rows = [
        ("MPTCP goodput at tcp_wmem = 1 MiB", f"{PAPER['mptcp_mbps_mean']} Mbit/s (42.4-49.8, 5 runs)",
         f"{at_1m['mean'].iloc[0]:.1f} Mbit/s (sd {at_1m['std'].fillna(0).iloc[0]:.1f}, n={int(at_1m['count'].iloc[0])})"
         if len(at_1m) else "not in this sweep",
         "upstream sizes the MPTCP buffer as tcp_wmem[0] + the subflows' buffers, so 1 MiB is already large"),
        ("Single-path TCP on the fast path", "about 100 Mbit/s link", f"{fast:.1f} Mbit/s goodput (mean over buffers)",
         "goodput excludes 66 header bytes per 1514-byte frame: 95.6 Mbit/s is a full link"),
        ("Buffer sizes where MPTCP < single-path TCP", "1 MiB (and the medium buffers of refs [16, 17])",
         ", ".join(_kib(b) for b in deg) or "none in this sweep",
         "the degradation exists upstream but sits at smaller buffers"),
        ("Send-buffer waits in the detailed run", f"{PAPER['waits']} in 10 s (kernel patch)",
         f"{len(d.waits)} in {d.summary.get('duration_s', 10):g} s ({d.method})",
         "measured without patching the kernel"),
        ("Penalisations / opportunistic retransmissions", f"{PAPER['penalisations']} penalisations",
         f"MPTCP-level retransmissions: {d.counters.get('MPTcpExtMPTCPRetrans', 0)}",
         "upstream has no RP mechanism; it retransmits at MPTCP level only on timeouts and stale subflows"),
        ("Slow subflow cwnd", f"peaks near {PAPER['slow_cwnd_peak']} packets, >{PAPER['slow_cwnd_drops']} drops",
         f"peak {int(peak.get('slow', 0))} packets, {drops.get('slow', 0)} drops (fast: peak "
         f"{int(peak.get('fast', 0))}, {drops.get('fast', 0)} drops)", "no penalisation upstream"),
    ]
    lines = [
        "# Lab 1: paper vs this run",
        "",
        f"This run: kernel {plat['kernel_release']} in a {place} ({'quick' if reps == 1 else f'{reps} repetitions'}"
        f" sweep, {len(sweep)} transfers; detailed run {d.path.name}: {d.summary['mbps']:.1f} Mbit/s). "
        f"Paper: {PAPER['kernel']}.",
        "",
        "| quantity | paper | this run | why they may differ |",
        "|---|---|---|---|",
    ]
    lines += [f"| {a} | {b} | {c} | {e} |" for a, b, c, e in rows]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- compact reference results

def export_reference(sweep_dir: Path | str, dest: Path | str) -> Path:
    """Copy what the notebook and report need, compactly: tables, manifests, no raw capture.

    The detailed run's packets (from the capture) and tcp_probe become gzipped CSVs; a 0.6 s slice
    of the capture (the busiest window) is kept for packet-level exploration with pyshark.
    """
    import subprocess

    sweep_dir, dest = Path(sweep_dir), Path(dest)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    load_sweep(sweep_dir).to_csv(dest / "sweep.csv", index=False)
    shutil.copy2(sweep_dir / "verify" / "summary.json", dest / "verify-summary.json")
    shutil.copy2(sweep_dir / "verify" / "manifest.json", dest / "verify-manifest.json")
    d = Detail.load(sweep_dir)
    out = dest / d.path.name
    out.mkdir()
    for name in ("summary.json", "manifest.json", "counters.json", "sndbuf_waits.csv", "intervals.csv",
                 "topology.sh"):
        shutil.copy2(d.path / name, out / name)
    with gzip.open(out / "packets.csv.gz", "wt") as f:
        d.packets.to_csv(f, index=False, float_format="%.6f")
    probe = pd.read_csv(d.path / "tcp_probe.csv")
    with gzip.open(out / "tcp_probe.csv.gz", "wt") as f:
        probe[probe["saddr"].isin({p["a_addr"] for p in d.manifest["network"]["paths"]})].to_csv(f, index=False)
    lo, hi = d.busiest_window()
    t0 = d.summary["t0"]
    subprocess.run(["editcap", "-A", f"{t0 + lo:.6f}", "-B", f"{t0 + hi:.6f}", str(d.path / "capture.pcap"),
                    str(out / "capture-window.pcap")], check=True, capture_output=True)
    (dest / "paper-vs-this-run.md").write_text(report(sweep_dir))
    save_images(sweep_dir, dest / "figures")
    return dest
