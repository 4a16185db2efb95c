"""Lab 1's generated fragments: every measured number Lab 1's pages quote (the instructors'
reference page, minrtt-vs-out-of-tree.md), made from the committed reference
(solutions/results/lab1). `lab1.claims`, the verdicts of its claims.json, is the kit's own.

`fragments(ref)` returns {name: markdown}; `mptcplab fragments` writes each into the blocks
`<!-- generated: lab1.NAME -->` of the Markdown files. The tables come from the lab's own
analysis (paper_point, second_place, controls), so a page and a report never disagree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from . import claims as ledger
from .controls import wait_table
from .detail import load_details
from .paper_point import load_paper_point, paper_point_markdown
from .second_place import agreement_markdown
from .sweep import _kib, degradation_region, load_sweep

HELD = "held"


def fragments(ref: Path | str) -> dict[str, str]:
    ref = Path(ref)
    runs = load_paper_point(ref)
    sweep = load_sweep(ref)
    return {"reference": reference(ref, sweep, runs),
            "sweep": sweep_region(sweep), "controls": controls(ref, sweep),
            "schedulers": _section(runs, "schedulers"), HELD: _section(runs, HELD), "held-runs": held_runs(runs),
            "observed": observed(ref), "tso": tso(runs), "second-place": _drop_heading(agreement_markdown(ref))}


def _drop_heading(md: str) -> str:
    """A table made for a report, without its own '## ' heading (the page has its own)."""
    text = "\n".join(line for line in md.splitlines() if not line.startswith("## "))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def _section(runs: pd.DataFrame, group: str) -> str:
    return _drop_heading(paper_point_markdown(runs[runs["group"] == group]))


def reference(ref: Path, sweep: pd.DataFrame, runs: pd.DataFrame) -> str:
    """What the reference is: the paper point's kernel, place, commit and days (its runs-manifest;
    the sweep's runs have no manifest of their own yet), and how many runs each part has."""
    m = pd.read_csv(ref / "paper-point" / "runs-manifest.csv")
    days = sorted({s[:10] for s in m["started"].astype(str)})
    counts = runs.groupby("group").size()
    return (f"The paper point's runs: Linux {', '.join(sorted(set(m['kernel'].astype(str))))} "
            f"({', '.join(sorted(set(m['where'].astype(str))))}), commit {', '.join(sorted(set(m['commit'].astype(str))))}, "
            f"{' to '.join(dict.fromkeys([days[0], days[-1]]))}: {counts.get('schedulers', 0)} transfers at tcp_wmem "
            f"1 MiB, {counts.get(HELD, 0)} held at 1 MiB, {counts.get('tso', 0)} in the tcp_min_tso_segs control, "
            f"{len(ledger.observed(ref))} observed. The sweep: {len(sweep)} transfers, {int(sweep['rep'].max())} "
            "repetitions of each method, buffer and configuration.\n")


def sweep_region(sweep: pd.DataFrame) -> str:
    """The buffers where MPTCP's mean was below single-path TCP's on the fast path, per method."""
    names = {"wmem": "tcp_wmem", "sndbuf": "SO_SNDBUF"}
    return "".join(f"- {names[m]}: MPTCP below single-path TCP on the fast path at "
                   f"{', '.join(_kib(b) for b in degradation_region(sweep, m)) or 'no buffer'} "
                   f"(means of {int(sweep['rep'].max())} runs each).\n" for m in names if m in set(sweep["method"]))


def controls(ref: Path, sweep: pd.DataFrame) -> str:
    """The observed degraded run beside its controls: blocked share, fullness, cost of tracing."""
    t = wait_table(load_details(ref), sweep)
    lines = ["| run | Mbit/s | share of its path(s) | waits | blocked | untraced sweep runs, Mbit/s | traced / untraced |",
             "|---|---|---|---|---|---|---|"]
    for r in t.itertuples():
        lines.append(f"| {r.label} | {r.goodput_transfer_mbps:.1f} | {r.utilisation:.0%} | {r.waits} | "
                     f"{r.blocked_share:.1%} | {r.untraced_mbps:.1f} (n = {r.untraced_runs}) | {r.tracing_ratio:.2f} |")
    return "\n".join(lines) + f"\n\nWaits measured by {t['wait_method'].iloc[0]}.\n"


def held_runs(runs: pd.DataFrame) -> str:
    """Each held minrtt+rp run, fewest penalisations first, and the rank correlation of
    penalisations with goodput (a correlation over runs: nothing was manipulated)."""
    h = runs[(runs["group"] == HELD) & (runs["scheduler"] == ledger.MINRTT_RP) & runs["goodput_transfer_mbps"].notna()]
    h = h.sort_values(["rp_penalised", "run"])
    lines = ["| run | Mbit/s | penalisations | opportunistic retransmissions |", "|---|---|---|---|"]
    lines += [f"| {r.run} | {r.goodput_transfer_mbps:.1f} | {r.rp_penalised:.0f} | {r.rp_opp_retrans:,.0f} |"
              for r in h.itertuples()]
    rho = h["rp_penalised"].rank().corr(h["goodput_transfer_mbps"].rank())
    return ("\n".join(lines) + f"\n\nSpearman's rank correlation of penalisations with goodput over these {len(h)} "
            f"runs: {rho:.2f}.\n")


def observed(ref: Path) -> str:
    o = ledger.observed(ref)
    lines = ["| run | Mbit/s | penalisations | opp. retransmissions | slow cwnd peak (packets) | slow cwnd drops "
             "| slow subflow's TCP retransmissions | fast subflow idle (ss samples) | waits | not blocked |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in o.itertuples():
        lines.append(f"| {r.run} | {r.goodput_transfer_mbps:.1f} | {r.penalised} | {r.opp_retrans} | "
                     f"{r.slow_cwnd_peak} | {r.slow_cwnd_drops} | {r.slow_tcp_retrans} | {r.fast_idle_share:.0%} | {r.waits} | "
                     f"{r.unblocked_ms:.1f} ms of {r.duration_s:g} s |")
    return "\n".join(lines) + f"\n\nWaits measured by {o['wait_method'].iloc[0]}.\n"


def tso(runs: pd.DataFrame) -> str:
    """The tcp_min_tso_segs control's table and verdicts, with the most each setting queued in the
    send buffer, and what an unresolved verdict's "runs needed" means next to n."""
    t = runs[runs["group"] == "tso"]
    md = _drop_heading(paper_point_markdown(t))
    queued = (t.assign(min_tso_segs=t["min_tso_segs"].astype(str))
              .groupby(["buffer_bytes", "config", "min_tso_segs"])["wmem_queued_max"].max().unstack())
    lines = ["", "Most held in the send buffer in any run (`ss -m` w), bytes:", "",
             "| tcp_wmem | config | " + " | ".join(f"tcp_min_tso_segs {c}" for c in queued.columns) + " |",
             "|---|---|" + "---|" * len(queued.columns)]
    for (buf, config), row in queued.iterrows():
        lines.append(f"| {_kib(buf)} | {config} | " + " | ".join(f"{v:,.0f}" if v == v else "-" for v in row) + " |")
    n = int(t.groupby(["buffer_bytes", "config", "min_tso_segs"]).size().min())
    lines += ["", f"\"Runs needed\" is the total per side, not more runs: each setting has n = {n} now."]
    return md + "\n".join(lines) + "\n"

