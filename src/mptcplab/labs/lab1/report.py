"""Lab 1 analysis: the "paper vs this run" markdown table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ... import places
from ...judge import claims as judge
from .claims import judged
from .bounds import full_path_mbps, mptcp_bounds, window_bounds
from .controls import wait_table
from . import host_coupling
from .detail import Detail, _read_table, load_details, path_names, subflow_inflight
from .measure import cwnd_drops
from .paper_point import load_paper_point, paper_point_markdown, paper_point_setting
from .second_place import agreement_markdown
from .sweep import PAPER, _kib, degradation_region, load_sweep, throughput_table


def _mean_at(t: pd.DataFrame, method: str, size: int, config: str) -> pd.Series | None:
    row = t[(t["method"] == method) & (t["buffer_bytes"] == size) & (t["config"] == config)]
    return None if row.empty else row.iloc[0]


def observed_rp(sweep_dir: Path | str) -> str:
    """The paper's Fig. 5/6 signatures in the observed minrtt+rp runs of the paper's point (its
    paper-detail-*minrtt+rp, in a run or in a reference's paper-point/): RP's counters, the slow
    subflow's cwnd drops (by a quarter or more) against its TCP-level retransmissions (ss), and how
    often the fast subflow had nothing in flight (subflow_inflight)."""
    sweep_dir = Path(sweep_dir)
    out = []
    for run in sorted(sweep_dir.glob("paper-detail-*minrtt+rp")) or sorted(
            sweep_dir.glob("paper-point/paper-detail-*minrtt+rp")):
        d = Detail.load_run(run, packets=False)
        drops, peak = cwnd_drops(d.probe), d.probe.groupby("path")["snd_cwnd"].max().to_dict()
        sub = subflow_inflight(run).set_index("path")
        ss = _read_table(run, "ss.csv")
        retrans = ss[ss["mptcp_subflow"].astype(bool)].assign(
            path=lambda s: s["local"].astype(str).str.rsplit(":", n=1).str[0].map(path_names(d.manifest)))
        retrans = retrans.groupby("path")["retrans_total"].max().fillna(0).to_dict()
        held = "held at 1 MiB (SO_SNDBUF)" if d.summary.get("method") == "sndbuf" else "tcp_wmem 1 MiB"
        out.append(f"{held}: {d.summary['goodput_transfer_mbps']:.1f} Mbit/s, "
                   f"{d.counters.get('MPTcpExtMinRTTPenalised', 0)} penalisations, {d.counters.get('MPTcpExtMinRTTOppRetrans', 0)} opportunistic retransmissions; "
                   f"slow cwnd peak {int(peak.get('slow', 0))}, {drops.get('slow', 0)} drops with "
                   f"{int(retrans.get('slow', 0))} TCP-level retransmissions on that subflow; fast subflow idle in "
                   f"{sub['idle_share'].get('fast', float('nan')):.0%} of ss samples")
    return "; ".join(out)


def _claim_reading(doc: dict, ids: tuple[str, ...]) -> str:
    """What the ledger says of these claims: each one's verdict, and for one that does not hold the
    status of its causes (claims.json, mptcplab.judge.claims)."""
    by_id = {c["id"]: c for c in doc.get("claims", [])}
    return "; ".join(f"{i}: {by_id[i]['status']}" + (f" ({by_id[i]['cause']})" if by_id[i].get("cause") else "")
                     + (f" ({by_id[i]['note']})" if by_id[i]["status"] == judge.UNMEASURED else "")
                     for i in ids if i in by_id)


def _paper_point(sweep_dir: Path) -> str:
    """The paper's point with each scheduler where it ran ([paper_point]), then MPTCP/TCP in each
    place (controlled runs kept beside a reference), then the host-coupling control of its held point."""
    paper = load_paper_point(sweep_dir)
    paper_md = paper_point_markdown(paper, paper_point_setting(sweep_dir, paper)) if len(paper) else ""
    return "\n".join(x for x in (paper_md, agreement_markdown(sweep_dir), host_coupling.markdown(sweep_dir)) if x)


def _claims(doc: dict) -> str:
    """The ledger's verdicts (claims.json, judged before this report)."""
    return "## The paper's claims, judged on this run\n\n" + judge.markdown(doc) + "\n"


def _header(sweep: pd.DataFrame, d: Detail) -> str:
    """What ran: kernel, scheduler, place, repetitions and the detailed run; the paper's kernel."""
    plat = d.manifest["platform"]
    ran_in = places.find(plat["where"])
    place = ran_in.KERNEL if ran_in else plat["where"]  # the place says which kernel it is ("stock kernel in a VM")
    reps = int(sweep["rep"].max()) if "rep" in sweep else 1
    return (f"This run: Linux {plat['kernel_release']} (upstream MPTCP, scheduler "
            f"{d.manifest.get('network', {}).get('sysctls', {}).get('snd', {}).get('net.mptcp.scheduler', 'default')}) "
            f"in a {place}; {'quick sweep, 1 repetition' if reps == 1 else f'{reps} repetitions'} "
            f"({len(sweep)} transfers); detailed run `{d.path.name}`. Paper: {PAPER['kernel']}.")


def _goodput_rows(sweep: pd.DataFrame, d: Detail, doc: dict) -> list[tuple[str, str, str, str]]:
    """Goodput: MPTCP at the paper's buffer, TCP on the fast path, the buffers where MPTCP falls
    below TCP (both methods), the detailed run."""
    t = throughput_table(sweep)
    deg = {m: degradation_region(sweep, m) for m in ("wmem", "sndbuf") if m in set(sweep["method"])}
    at_1m = _mean_at(t, "wmem", PAPER["tcp_wmem"], "mptcp")
    fast = t[(t["method"] == "wmem") & (t["config"] == "tcp-fast")]["mean"].mean()
    return [
        ("MPTCP goodput at tcp_wmem = 1 MiB", f"{PAPER['mptcp_mbps_mean']} Mbit/s (42.4-49.8, sd 3.54, 5 runs)",
         f"{at_1m['mean']:.1f} Mbit/s (sd {0 if pd.isna(at_1m['std']) else at_1m['std']:.1f}, n={int(at_1m['count'])})"
         if at_1m is not None else "not in this sweep",
         "the paper's claims (claims.json): " + _claim_reading(doc, ("slower-than-tcp", "slower-than-tcp-upstream"))),
        ("Single-path TCP on the fast path", "about 100 Mbit/s link", f"{fast:.1f} Mbit/s goodput (mean over buffers)",
         "goodput excludes headers: {:.1f} Mbit/s is a full {} link".format(*full_path_mbps(d.manifest, "fast"))),
        ("Buffer sizes where MPTCP < single-path TCP (tcp_wmem)", "1 MiB (medium buffers in refs [16, 17])",
         ", ".join(_kib(b) for b in deg.get("wmem", [])) or "none in this sweep",
         "the degradation exists upstream but at smaller buffers"),
        ("... the same with SO_SNDBUF", "not measured",
         ", ".join(_kib(b) for b in deg.get("sndbuf", [])) or "none in this sweep",
         "SO_SNDBUF (doubled by the kernel) locks the MPTCP socket's buffer: no sum over subflows"),
        (f"Detailed run ({d.summary.get('method', 'wmem')} {d.summary.get('buffer')})", "48.6 Mbit/s (run 4)",
         f"{d.summary['goodput_transfer_mbps']:.1f} Mbit/s", "the most degraded buffer of this sweep, not 1 MiB"),
    ]


def _wait_rows(sweep_dir: Path, sweep: pd.DataFrame, d: Detail) -> list[tuple[str, str, str, str]]:
    """Send-buffer waits: the detailed run's, the control runs' (network-limited senders), and what
    tracing cost (detailed runs against untraced sweep runs at the same point)."""
    blocked = float(d.waits["duration_s"].sum())
    waits = wait_table(load_details(sweep_dir), sweep)
    ctrl = waits[waits["control"].notna()]
    return [
        ("Send-buffer waits in the detailed run", f"{PAPER['waits']} in 10 s (kernel patch)",
         f"{len(d.waits)} in {d.duration:g} s, blocked {blocked / d.duration:.0%} of the time ({d.method})",
         "measured without patching the kernel; the method is named"),
        ("... the same in the control runs (network-limited senders)", "not measured",
         "; ".join(f"{r.label}: {r.waits} waits, blocked {r.blocked_share:.0%}, {r.goodput_transfer_mbps:.1f} Mbit/s "
                   f"({r.utilisation:.0%} of its path(s))" for r in ctrl.itertuples()) or "no control runs",
         "any sender faster than its network blocks; starvation is blocking while a path is idle"),
        ("Cost of tracing (detailed run vs untraced sweep runs, same point)", "not stated",
         "; ".join(f"{r.run}: {r.goodput_transfer_mbps:.1f} vs {r.untraced_mbps:.1f} Mbit/s (x{r.tracing_ratio:.2f})"
                   for r in waits.itertuples() if r.untraced_runs) or "no untraced run at the same point",
         "capture, tracepoints and stack traces cost the sender CPU time and change its timing, either way"),
    ]


def _bound_rows(sweep: pd.DataFrame, d: Detail) -> list[tuple[str, str, str, str]]:
    """Physics: single-path runs against their window bound, MPTCP against its send buffer's."""
    bounds = window_bounds(sweep, d.manifest)
    bad = bounds[bounds["above"]]
    mb = mptcp_bounds(sweep, d.manifest)
    return [
        ("Single-path runs within their window bound ((sk_sndbuf + 64 KiB) / RTT)", "not stated",
         f"all {len(bounds)}" if bad.empty else
         f"{len(bad)} of {len(bounds)} above: " + ", ".join(map(str, bad["run"].head(6)))
         + (" ..." if len(bad) > 6 else ""),
         "physics: `mptcplab check` judges the same bound" if bad.empty else
         "NOT VALID: this place did not honour the send buffer"),
        ("MPTCP (tcp_wmem, SO_SNDBUF) against S / RTT_slow and 2 S / RTT_slow", "not stated",
         "; ".join(f"{w}: {len(g)}" for w, g in mb.groupby("where", sort=False)) or "no MPTCP runs",
         "S = the MPTCP socket's buffer; the DATA_ACK may return on either subflow"),
    ]


def _scheduler_rows(sweep_dir: Path, d: Detail) -> list[tuple[str, str, str, str]]:
    """The scheduler: retransmissions and the slow subflow's cwnd in the detailed run, and the
    paper's minRTT + RP where it was observed (`observed_rp`)."""
    drops = cwnd_drops(d.probe)
    peak = d.probe.groupby("path")["snd_cwnd"].max().to_dict()
    rp = observed_rp(sweep_dir)
    return [
        ("Penalisations / opportunistic retransmissions", f"{PAPER['penalisations']} penalisations (1-3 cuts each)",
         f"MPTCP-level retransmissions: {d.counters.get('MPTcpExtMPTCPRetrans', 0)}; TCP-level "
         f"retransmitted segments: {d.counters.get('TcpRetransSegs', 0)}",
         "upstream has no RP mechanism; it resends at MPTCP level only on timeouts and stale subflows"),
        ("Slow subflow cwnd", f"peaks near {PAPER['slow_cwnd_peak']} packets, >{PAPER['slow_cwnd_drops']} drops",
         f"peak {int(peak.get('slow', 0))} packets, cwnd drops: {drops.get('slow', 0)} (fast: peak "
         f"{int(peak.get('fast', 0))}, drops: {drops.get('fast', 0)})", "no penalisation upstream"),
    ] + ([("The paper's scheduler, observed (minRTT + RP, the kit's UML kernel)",
           f"{PAPER['penalisations']} penalisations, slow cwnd peaks near {PAPER['slow_cwnd_peak']} packets, "
           f">{PAPER['slow_cwnd_drops']} drops, no TCP-level loss", rp,
           "RP acts only while the sender is blocked with the connection's oldest data on the slow subflow, "
           "so the MPTCP socket's buffer decides how often")] if rp else [])


def report(sweep_dir: Path | str) -> str:
    """The "paper vs this run" markdown: what ran, the claims' verdicts, a table of this run beside
    the paper (goodput, send-buffer waits, physics bounds, the scheduler), then the paper's point
    with each scheduler where it ran ([paper_point])."""
    sweep_dir = Path(sweep_dir)
    doc, paper_md = judged(sweep_dir), _paper_point(sweep_dir)
    claims_md = _claims(doc)
    try:
        sweep = load_sweep(sweep_dir)
    except FileNotFoundError:
        sweep = pd.DataFrame()
    if sweep.empty:
        if paper_md:  # only the paper's point ran (paper_point.only)
            return "# Lab 1: paper vs this run\n\n" + claims_md + paper_md
        raise FileNotFoundError(f"no completed lab1 transfers in {sweep_dir}: run `sudo mptcplab run lab1 --quick`")
    d = Detail.load(sweep_dir)
    rows = (_goodput_rows(sweep, d, doc) + _wait_rows(sweep_dir, sweep, d) + _bound_rows(sweep, d)
            + _scheduler_rows(sweep_dir, d))
    lines = ["# Lab 1: paper vs this run", "", _header(sweep, d), "", claims_md, "## This run beside the paper", "",
             "| quantity | paper | this run | why they may differ |", "|---|---|---|---|",
             *[f"| {a} | {b} | {c} | {e} |" for a, b, c, e in rows]]
    return "\n".join(lines) + "\n" + ("\n" + paper_md if paper_md else "")
