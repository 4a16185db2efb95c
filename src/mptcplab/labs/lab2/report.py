"""Lab 2 analysis: the "paper vs this run" markdown report, one function per section."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ...judge import claims as judge
from ...judge import stats
from .controlled import controlled_runs, controlled_section
from .counters import counted_vs_recorded
from .divergences import divergences
from .fairness import RFC6356_GOALS, best_path_ceiling_mbps, fairness_table, rfc6356_checks
from .fmt import corrected, number
from .paper import ORDER, TITLES
from .stalls import STALL_MBPS, STALL_S, stalls
from .sweep import load
from .throughput import paired_table, paper_vs_run


def _header(man: dict) -> list[str]:
    """The title, the kernel and paths of this run, and how to read the comparison."""
    net = (man.get("network") or {})
    paths = ", ".join(f"{p['name']} {p['link']}" for p in net.get("paths", []))
    return [
        "# Lab 2 — paper vs this run",
        "",
        f"Kernel {(man.get('platform') or {}).get('kernel_release', '?')}, emulation: {net.get('emulation', '?')}; "
        f"paths: {paths}. Throughput = MPTCP goodput at the receiver, mean ± 95% CI (Student's t) over runs.",
        "The report's numbers come from ns-3 (Wi-Fi MANET, up to 8 logical 5 Mbit/s channels); compare the "
        "*ratios to uncoupled* and the ranking, not the absolute Mbit/s.",
        "",
    ]


def _claims(out: Path) -> list[str]:
    """The report's claims as the ledger (claims.py) judged them on these tables."""
    doc = judge.load(out)  # written before the report
    return ["## The report's claims, judged on this run", "",
            judge.markdown(doc) if doc else f"Not judged: this folder has no {judge.FILE}.\n"]


def _paper_table(tp: pd.DataFrame) -> list[str]:
    """The report's throughput tables beside this run's, with the runs behind them."""
    pv = paper_vs_run(tp)
    lines = [
        "| algorithm | paper, mobility | this run, mobility | paper, static | this run, static | "
        "÷ uncoupled: paper mob. / run mob. | ÷ uncoupled: paper static / run static |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in pv.iterrows():
        lines.append(
            f"| {TITLES.get(r.algo, r.algo)} | {number(r.paper_mobility)} | "
            f"{number(r.run_mobility, r.run_mobility_ci95)} | {number(r.paper_static)} | "
            f"{number(r.run_static, r.run_static_ci95)} | "
            f"{number(r.paper_mobility_vs_uncoupled, digits=3)} / {number(r.run_mobility_vs_uncoupled, digits=3)} | "
            f"{number(r.paper_static_vs_uncoupled, digits=3)} / {number(r.run_static_vs_uncoupled, digits=3)} |")
    runs = tp.groupby(["algo", "variant"]).size()
    lines += ["", f"Runs per algorithm and variant: {int(runs.min()) if len(runs) else 0}"
              f"{'' if len(runs) == 0 or runs.min() == runs.max() else f' to {int(runs.max())}'}.", ""]
    return lines


def _invocations(man: dict) -> list[str]:
    """The commands that made the runs, when a sweep was resumed by several."""
    lines = []
    inv = man.get("invocations") or []
    if len(inv) > 1:  # a sweep resumed by several commands: each, with its runs and commits
        lines += [f"The runs were made by {len(inv)} commands resuming one sweep (`invocations` in "
                  "lab2-manifest.json; per run: runs-manifest.csv): "
                  + "; ".join(f"`{e['command']}` ({e['runs']} runs, commit {', '.join(e['commits']) or '?'})"
                              for e in inv) + ".", ""]
    return lines


def _stalls(gb: pd.DataFrame) -> list[str]:
    """The runs whose receiver's goodput stalled (goodput-bins.csv)."""
    lines = []
    if not gb.empty:
        st = stalls(gb)
        long = st[st.stall].sort_values("longest_low_s", ascending=False)
        lines += [f"Stalls (`goodput-bins.csv`): {len(long)} of {len(st)} runs had the receiver's goodput under "
                  f"{STALL_MBPS:g} Mbit/s for {STALL_S:g} s or more"
                  + (": " + ", ".join(f"{r.run} ({r.longest_low_s:g} s from {r.from_s:g} s)" for r in long.itertuples())
                     if len(long) else "") + ".", ""]
    else:
        lines += ["Stalls: this run kept no per-interval goodput (`goodput-bins.csv`, written by runs since "
                  "the analysis keeps it), so none are counted here.", ""]
    return lines


def _divergences(dv: pd.DataFrame) -> list[str]:
    """The report's ratios this run excludes, and what explains each (divergences)."""
    lines = []
    if not dv.empty:
        lines += ["## Divergences from the report, and what was done to explain them",
                  "",
                  "Each ratio to uncoupled the report gives that lies outside this run's Holm-corrected interval of "
                  "the same ratio (the paired difference below, over uncoupled's mean). The report ran ns-3: "
                  "logical subflows over one node's interfaces, 15 UDP clients congesting 5 Mbit/s wireless "
                  "links; whether a shared bottleneck, the cross-traffic level or the coupled rule's definition "
                  "explains a divergence is what a controlled run on this kernel can show. A controlled run "
                  "measures the cause when its interval of the same ratio (Holm-corrected over its own comparisons) "
                  "holds the report's and lies clear of this run's; one that excludes the report's is tried, not the "
                  "cause.",
                  "",
                  "| algorithm | variant | ÷ uncoupled, paper | ÷ uncoupled, this run (corrected) | cause |",
                  "|---|---|---|---|---|"]
        for r in dv.itertuples():
            lines.append(f"| {TITLES.get(r.algo, r.algo)} | {r.variant} | {r.paper:.3f} | {r.run_lo:.3f}–{r.run_hi:.3f} "
                         f"| {r.status} |")
        lines += [""]
    return lines


def _delay_window(dw: pd.DataFrame) -> list[str]:
    """What CS218's delay window did on each path (delay-window.csv)."""
    lines = []
    if not dw.empty:
        lines += ["## What CS218's delay window did (run 1, from the recorded BPF callbacks)",
                  "",
                  "Per path: congestion-avoidance ACKs, the share that added the delay window, its mean size "
                  "relative to the LIA increase (1 = the increase doubled), and the mean best / last RTT sample "
                  "on those ACKs.",
                  "",
                  "| variant | path | CA ACKs | with DWND | DWND / LIA increase | best RTT ms | last RTT ms |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in dw.sort_values(["variant", "path"]).iterrows():
            lines.append(f"| {r.variant} | p{int(r.path)} | {int(r.ca_acks)} | {r.share:.1%} | {r.dwnd_mean:.4f} | "
                         f"{r.best_rtt_ms:.2f} | {r.last_rtt_ms:.2f} |")
        lines += [""]
    return lines


def _bpf_check(checked: dict) -> list[str]:
    """The BPF programs' windows against the Python reference (bpf_vs_reference)."""
    lines = []
    if checked:
        bad = {k: v["mismatches"] for k, v in checked.items() if v.get("mismatches")}
        events = sum(v.get("events", 0) for v in checked.values())
        lines += [f"BPF programs against the Python reference (`mptcplab.cctrace.replay`): {events} recorded "
                  f"callbacks in {len(checked)} runs, "
                  + (f"**mismatches in {bad}**." if bad else "every window the same.")
                  + counted_vs_recorded(checked), ""]
    return lines


def _paired(pt: pd.DataFrame) -> list[str]:
    """Each algorithm against uncoupled in the same run (paired_table)."""
    lines = []
    if not pt.empty:
        resolved = int((pt.verdict != "not resolved").sum())
        lines += ["## Paired: each run against uncoupled in the same run",
                  "",
                  "Run r meets the same seeded cross traffic under every algorithm, so the differences are taken "
                  f"per run (Mbit/s, t with pairs − 1 dof). The {len(pt)} comparisons below are one family: each "
                  "interval is Holm-corrected (`mptcplab.judge.stats.holm`, family-wise error 5%) at the level in brackets, "
                  "and a verdict is drawn only where that interval excludes zero; *not resolved* otherwise. "
                  "*Runs needed*: pairs for an interval at the same level to exclude zero with 80% power if the "
                  "true difference were the observed one. The uncorrected 95% half-width is beside it: "
                  f"{resolved} of {len(pt)} comparisons are resolved.",
                  "",
                  "| variant | algorithm | − | difference ± corrected interval (level) | uncorrected 95% | verdict "
                  "| runs needed |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in pt.iterrows():
            lines.append(f"| {r.variant} | {TITLES.get(r.algo, r.algo)} | {TITLES.get(r.vs, r.vs)} | "
                         f"{corrected(r['diff'], r.half, r.level)} | ± {number(r.ci95)} | {r.verdict} | "
                         f"{stats.fmt_runs(r.runs_needed)} |")
        lines += [""]
    return lines


def _fairness(ft: pd.DataFrame) -> list[str]:
    """The fairness runs: MPTCP and one TCP flow on a shared path (fairness_table, not empty)."""
    lines = ["## Fairness: the MPTCP connection and one Reno flow share a 5 Mbit/s path",
             "",
             "The MPTCP connection has a second, private path. RFC 6356 asks it to take no more from the "
             "shared path than a single TCP flow would — with a free path next door, ideally much less. "
             "The report did not measure this. One uncoupled Reno subflow against one Reno flow is expected "
             "to leave it about half, so the yardstick is uncoupled, not 50%: *vs uncoupled* is the TCP "
             "share minus uncoupled's (Welch; fairness runs share no seeded traffic, so they are not "
             "paired), Holm-corrected over the comparisons of this table at the level in brackets; "
             "*not resolved* when that interval spans zero, with the runs per algorithm that would resolve "
             "it. The TCP flow's and MPTCP's shares of the shared path add up to 100%.",
             "",
             "| algorithm | MPTCP total | MPTCP on the shared path | TCP flow | TCP's share of the shared path "
             "| vs uncoupled (level) | verdict | runs needed |",
             "|---|---|---|---|---|---|---|---|"]
    for _, r in ft.iterrows():
        share = (f"{r.tcp_share_of_shared:.0%} ± {r.tcp_share_ci95:.0%}" if r.tcp_share_ci95 == r.tcp_share_ci95
                 else f"{r.tcp_share_of_shared:.0%} (1 run)")
        vs = (f"{r.share_vs_uncoupled:+.0%} ± {r.share_vs_uncoupled_ci95:.0%} "
              f"({r.share_vs_uncoupled_level * 100:.2f}".rstrip("0").rstrip(".") + "%)"
              if r.share_vs_uncoupled_ci95 == r.share_vs_uncoupled_ci95 else "—")
        lines.append(f"| {TITLES.get(r.algo, r.algo)} | "
                     f"{number(r.mptcp_goodput_transfer_mbps, r.mptcp_goodput_transfer_ci95)} | "
                     f"{number(r.mptcp_on_shared_mbps, r.mptcp_on_shared_ci95)} | {number(r.tcp_on_shared_mbps, r.tcp_on_shared_ci95)} | "
                     f"{share} | {vs} | {r.verdict} | "
                     f"{stats.fmt_runs(r.runs_needed) if r.verdict == 'not resolved' else '—'} |")
    lines += ["", f"Runs per algorithm: {int(ft.runs.min())}.", ""]
    return lines


def _rfc6356(fair: pd.DataFrame, man: dict) -> list[str]:
    """RFC 6356's three goals as checks on the fairness runs (rfc6356_checks)."""
    best = best_path_ceiling_mbps(man)
    rc = rfc6356_checks(fair, best)
    lines = ["## RFC 6356's goals as checks (fairness runs)",
             "",
             "Each goal as a difference with its interval, Holm-corrected over all the checks of this table "
             "(one family) at the level in brackets: *met* or *violated* when the corrected interval lies "
             "entirely on one side of zero, *not resolved* when it spans zero, with the runs that would "
             "resolve it."
             + (f" Goal 1's yardstick is the goodput ceiling of the best path ({best:.2f} Mbit/s on a "
                "5 Mbit/s link: the most a single-path TCP flow can carry there)." if best else
                " Goal 1's yardstick: the TCP flow on the shared path (this run names no link rate: a lower "
                "bound)."),
             ""]
    for goal, (title, what) in RFC6356_GOALS.items():
        lines += [f"{goal}. **{title}.** Check: {what}."]
    lines += ["", "| algorithm | goal 1 | goal 2 | goal 3 |", "|---|---|---|---|"]
    for algo in [a for a in ORDER if a in set(rc.algo)]:
        cells = []
        for goal in (1, 2, 3):
            x = rc[(rc.algo == algo) & (rc.goal == goal)]
            if x.empty:
                cells.append("—")
            else:
                x = x.iloc[0]
                need = (f", {stats.fmt_runs(x.runs_needed)} runs to resolve" if x.verdict == "not resolved"
                        else "")
                cells.append(f"{x.verdict} ({corrected(x['diff'], x.half, x.level)}{need})")
        lines.append(f"| {TITLES.get(algo, algo)} | {' | '.join(cells)} |")
    return lines


def report(out: Path) -> str:
    """Markdown: the report's throughput tables beside this run's, the paired comparison, the
    fairness result and RFC 6356's goals."""
    tables = load(out)
    tp, fair, man = tables["throughput"], tables["fairness"], tables["manifest"]
    controlled = controlled_runs(out)
    ref_params = man.get("parameters") or {}
    ft = fairness_table(fair)
    lines = _header(man) + _claims(out) + _paper_table(tp) + _invocations(man)
    lines += _stalls(tables.get("goodput-bins", pd.DataFrame()))
    lines += _divergences(divergences(tp[tp.variant != "shared"], controlled, ref_params))
    lines += controlled_section(controlled, ref_params)
    lines += _delay_window(tables.get("delay-window", pd.DataFrame()))
    lines += _bpf_check(man.get("bpf_vs_reference") or {})
    lines += _paired(paired_table(tp))
    if not ft.empty:
        lines += _fairness(ft) + _rfc6356(fair, man)
    return "\n".join(lines) + "\n"
