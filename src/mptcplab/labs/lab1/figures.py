"""Lab 1 analysis: the paper's Figures 4, 5, 6/9 and 10, the throughput sweep and the controls, as Plotly figures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .bounds import full_path_mbps, slow_path_bdp, slow_path_bound_curve, window_bounds
from .controls import wait_table
from .detail import Detail, load_details
from .measure import cwnd_drops
from .sweep import PAPER, _kib, load_sweep, throughput_table

COLORS = {"fast": "#1f77b4", "slow": "#d62728", "tcp-fast": "#1f77b4", "tcp-slow": "#d62728", "mptcp": "#2ca02c"}


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
                x=bad["buffer_bytes"], y=bad["goodput_transfer_mbps"], mode="markers", legendgroup="above",
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


def fig_effective_buffer(sweep: pd.DataFrame, manifest: dict | None = None) -> go.Figure:
    """MPTCP goodput against the send buffer the MPTCP socket really had (`sndbuf_effective`):
    tcp_wmem B gives it tcp_wmem[0] + the subflows' buffers (about 3B), SO_SNDBUF B gives 2B (locked).
    Plotted this way, both methods fall on one curve, crossing single-path TCP near the slow
    path's bandwidth-delay product."""
    m = sweep[(sweep["config"] == "mptcp") & sweep["sndbuf_effective"].notna()]
    g = m.groupby(["method", "sndbuf_effective"])["goodput_transfer_mbps"].agg(["mean", "std"]).reset_index()
    fig = go.Figure()
    for method, symbol in (("wmem", "circle"), ("sndbuf", "diamond")):
        s = g[g["method"] == method].sort_values("sndbuf_effective")
        if s.empty:
            continue
        fig.add_trace(go.Scatter(x=s["sndbuf_effective"], y=s["mean"], error_y=dict(array=s["std"].fillna(0)),
                                 mode="lines+markers", marker=dict(symbol=symbol, size=8),
                                 name={"wmem": "MPTCP, tcp_wmem = B B B", "sndbuf": "MPTCP, SO_SNDBUF = B"}[method]))
    fast = sweep[sweep["config"] == "tcp-fast"]["goodput_transfer_mbps"].mean()
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
    fig.update_layout(title=f"Fig. 4: data sequence number per subflow ({d.summary['goodput_transfer_mbps']:.1f} "
                            f"Mbit/s, "
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


def fig_waits_compare(details: list[Detail], sweep: pd.DataFrame | None = None, width: float = 1.0,
                      share: Callable[[pd.DataFrame, float], float] | None = None) -> go.Figure:
    """The degraded run's send-buffer waits against the control runs': (a) when the sender was
    blocked, in the same `width`-second window of each run; (b) the share of the time blocked (by
    `share`, as `wait_table`'s), with goodput and how full the paths were."""
    empty = pd.DataFrame(columns=["method", "buffer_bytes", "config", "goodput_transfer_mbps"])
    table = wait_table(details, sweep if sweep is not None else empty, share)
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
        blocked = "?" if np.isnan(r["blocked_share"]) else f"{r['blocked_share']:.0%}"
        fig.add_trace(go.Bar(y=[i], x=[100 * np.nan_to_num(r["blocked_share"])], orientation="h", showlegend=False,
                             marker_color=colors[i % len(colors)], legendgroup=d.label,
                             text=[f"{blocked}: {r['waits']} waits, median "
                                   f"{r['median_wait_ms']:.1f} ms; {r['goodput_transfer_mbps']:.0f} Mbit/s = "
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
