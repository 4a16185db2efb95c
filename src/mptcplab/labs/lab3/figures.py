"""Lab 3 analysis: the Plotly figures (Figs 3, 9, 16, 17 as measured vs model, model vs measured,
relative error, median error)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .fit import error_summary
from .predictions import BANDS, GRADED_MAX_LOSS, MODELS
from .sweep import load


LEGEND_BELOW = dict(orientation="h", yanchor="top", y=-0.18, xanchor="left", x=0)


def _label(r: pd.DataFrame) -> pd.Series:
    return np.where(r.scenario == "random", "random loss " + r.loss_cfg.astype(str),
                    "DropTail " + r.capacity_mbps.astype(str) + " Mbit/s")


def fig_throughput(runs: pd.DataFrame, scenario: str = "random"):
    """Measured throughput and each model's prediction against the loss event rate (Figs 3, 9, 16, 17);
    `queued` runs drawn open."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    r = runs[runs.scenario == scenario].sort_values(["n", "p"])
    ns = sorted(r.n.unique())
    fig = make_subplots(rows=1, cols=len(MODELS), shared_yaxes=True, subplot_titles=list(MODELS.values()))
    for i, col in enumerate(MODELS, 1):
        for j, n in enumerate(ns):
            g = r[r.n == n]
            colour = f"hsl({int(300 * j / max(1, len(ns) - 1))},70%,45%)"
            x = g.p_e if col in ("model2", "n_pftk_pe") else g.p
            fig.add_trace(go.Scatter(x=x, y=g.pps, mode="markers", name=f"n={n} measured", legendgroup=f"n{n}",
                                     marker=dict(color=colour, size=8,
                                                 symbol=np.where(g.queued.astype(bool), "circle-open", "circle")),
                                     showlegend=i == 1), 1, i)
            fig.add_trace(go.Scatter(x=x, y=g[col], mode="lines+markers", marker=dict(symbol="x", color=colour),
                                     line=dict(dash="dot", color=colour), name=f"n={n} model",
                                     legendgroup=f"n{n}", showlegend=i == 1), 1, i)
        fig.update_xaxes(type="log", title_text="p_e" if col in ("model2", "n_pftk_pe") else "p", row=1, col=i)
    fig.update_yaxes(type="log", title_text="throughput (packets/s)", row=1, col=1)
    # No fixed width: the figure takes its column's (the site's is ~570 px); legend below the panels.
    fig.update_layout(title=f"{scenario}: measured (dots; open: queued, not graded) vs model (dotted)",
                      height=520, legend=LEGEND_BELOW)
    return fig


def fig_scatter(runs: pd.DataFrame):
    """Model prediction against measurement, one panel per model; the graded bands shaded."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    r = runs.dropna(subset=["model1"]).assign(label=lambda d: _label(d))
    fig = make_subplots(rows=1, cols=len(MODELS), subplot_titles=list(MODELS.values()))
    lo, hi = max(0.5, r.pps.min() / 2), r.pps.max() * 2
    for i, col in enumerate(MODELS, 1):
        band = BANDS.get(col)
        if band:
            xs = np.geomspace(lo, hi, 20)
            fig.add_trace(go.Scatter(x=np.r_[xs, xs[::-1]], y=np.r_[xs * (1 + band), xs[::-1] * (1 - band)],
                                     fill="toself", fillcolor="rgba(0,120,0,0.1)", line=dict(width=0),
                                     name=f"±{band:.0%}", showlegend=False, hoverinfo="skip"), 1, i)
        fig.add_trace(go.Scatter(x=[lo, hi], y=[lo, hi], mode="lines", line=dict(color="grey"), showlegend=False), 1, i)
        for scen, symbol in (("random", "circle"), ("droptail", "diamond")):
            g = r[r.scenario == scen]
            fig.add_trace(go.Scatter(x=g.pps, y=g[col], mode="markers",
                                     marker=dict(symbol=np.where(g.queued.astype(bool), f"{symbol}-open", symbol),
                                                 color=np.log10(g.p_r), coloraxis="coloraxis"),
                                     text=g.label + ", n=" + g.n.astype(str), name=scen, showlegend=i == 1), 1, i)
        fig.update_xaxes(type="log", title_text="measured (packets/s)", row=1, col=i)
        fig.update_yaxes(type="log", row=1, col=i)
    fig.update_yaxes(title_text="model (packets/s)", row=1, col=1)
    fig.update_layout(title="Model vs measured (colour: log10 packet loss rate p_r; open: queued)",
                      height=480, legend=LEGEND_BELOW,
                      coloraxis=dict(colorscale="Viridis", colorbar=dict(title="log10 p_r")))
    return fig


def fig_error(runs: pd.DataFrame):
    """Relative error (model / measured - 1) against the packet loss rate, per model."""
    import plotly.graph_objects as go

    r = runs.dropna(subset=["model1"]).sort_values("p_r")
    fig = go.Figure()
    for col, name in MODELS.items():
        fig.add_trace(go.Scatter(x=r.p_r, y=r[f"err_{col}"], mode="markers", name=name,
                                 text=_label(r) + ", n=" + r.n.astype(str)))
    for band in sorted(set(BANDS.values())):
        for sign in (1, -1):
            fig.add_hline(y=sign * band, line=dict(dash="dot", color="grey"))
    fig.add_vline(x=GRADED_MAX_LOSS, line=dict(dash="dash", color="black"))
    fig.update_xaxes(type="log", title_text="packet loss rate p_r")
    fig.update_yaxes(title_text="relative error (model / measured − 1)")
    fig.update_layout(title="Relative error; dotted: ±25% and ±35% bands, dashed: 2% loss", height=480, legend=LEGEND_BELOW)
    return fig


def fig_median_error(summary: pd.DataFrame):
    import plotly.graph_objects as go

    fig = go.Figure()
    for col, name in MODELS.items():
        fig.add_trace(go.Bar(x=summary["runs"], y=summary[col], name=name))
    fig.update_yaxes(title_text="median |relative error|", tickformat=".0%")
    fig.update_layout(title="Median model error per model", barmode="group", height=420, legend=LEGEND_BELOW)
    return fig


def named_figures(runs: pd.DataFrame) -> dict:
    """name -> figure, for every Lab 3 figure of a runs table."""
    figs = {"median-error": fig_median_error(error_summary(runs)), "model-vs-measured": fig_scatter(runs),
            "relative-error": fig_error(runs)}
    for scen in sorted(runs.scenario.unique()):
        figs[f"throughput-{scen}"] = fig_throughput(runs, scen)
    return figs


def figures(out: Path) -> list:
    """Every Lab 3 figure of a sweep or reference copy (used by `mptcplab reproduce`)."""
    return list(named_figures(load(out)["runs"]).values())


def write_figures(out: Path, runs: pd.DataFrame) -> list[Path]:
    """HTML figures (open in a browser) into out/figures/."""
    d = Path(out) / "figures"
    d.mkdir(exist_ok=True)
    figs = named_figures(runs)
    paths = []
    for name, fig in figs.items():
        p = d / f"{name}.html"
        fig.write_html(p, include_plotlyjs="cdn")
        paths.append(p)
    return paths
