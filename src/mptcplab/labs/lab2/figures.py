"""Lab 2 analysis: the Plotly figures of a sweep or reference copy."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .fairness import fairness_table
from .paper import TITLES
from .sweep import load
from .throughput import throughput_table


def _px():
    import plotly.express as px

    return px


def fig_throughput(tp: pd.DataFrame):
    t = throughput_table(tp)
    t["title"] = t.algo.map(TITLES)
    fig = _px().bar(t, x="title", y="mean_mbps", error_y="ci95_mbps", color="variant", barmode="group",
                    labels={"title": "", "mean_mbps": "throughput (Mbit/s), mean ± 95% CI"},
                    title="MPTCP throughput per congestion control")
    return fig


def fig_cwnd(ts: pd.DataFrame, variant: str = "static"):
    d = ts[ts.variant == variant].dropna(subset=["cwnd"])
    d = d.assign(title=d.algo.map(TITLES))
    fig = _px().line(d, x="t", y="cwnd", color="path", facet_col="title", facet_col_wrap=3,
                     labels={"t": "time (s)", "cwnd": "cwnd (packets)"},
                     title=f"Congestion window per subflow ({variant}, run 1)")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def fig_rtt_rto(ts: pd.DataFrame, variant: str = "static"):
    d = ts[ts.variant == variant]
    d = d.melt(id_vars=["algo", "path", "t"], value_vars=["srtt_ms", "rto_ms"], var_name="what",
               value_name="ms").dropna()
    d["title"] = d.algo.map(TITLES)
    fig = _px().line(d, x="t", y="ms", color="path", line_dash="what", facet_col="title", facet_col_wrap=3,
                     labels={"t": "time (s)", "ms": "ms"},
                     title=f"Smoothed RTT (tcp_probe) and RTO (ss) per subflow ({variant}, run 1)")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def fig_packets(subs: pd.DataFrame, variant: str = "static"):
    d = subs[subs.variant == variant].groupby(["algo", "path"], as_index=False).packets.mean()
    d["title"] = d.algo.map(TITLES)
    return _px().bar(d, x="title", y="packets", color="path",
                     labels={"title": "", "packets": "data packets sent (mean over runs)"},
                     title=f"Packets sent per subflow ({variant})")


def fig_fairness(fair: pd.DataFrame):
    t = fairness_table(fair)
    d = t.melt(id_vars=["algo"], value_vars=["mptcp_on_shared_mbps", "tcp_on_shared_mbps"], var_name="flow",
               value_name="mbps")
    d["flow"] = d.flow.map({"mptcp_on_shared_mbps": "MPTCP subflow on the shared path",
                            "tcp_on_shared_mbps": "single-path TCP (Reno)"})
    d["title"] = d.algo.map(TITLES)
    return _px().bar(d, x="title", y="mbps", color="flow", barmode="group",
                     labels={"title": "", "mbps": "Mbit/s on the shared 5 Mbit/s path"},
                     title="Sharing a bottleneck with one TCP flow")


def figures(out: Path) -> list:
    """Every Lab 2 figure of a sweep or reference copy (used by `mptcplab reproduce`)."""
    t = load(out)
    return [fig_throughput(t["throughput"]), fig_cwnd(t["timeseries"]), fig_rtt_rto(t["timeseries"]),
            fig_packets(t["subflows"]), fig_fairness(t["fairness"])]
