"""Lab 1's claims ledger: the claims of Kato et al. (2020) the lab tests, decided over a run's tables.

Each claim is the paper's statement and number, and a predicate over the tables this lab already
makes (sweep.csv, the paper point's paper-point.csv, the detailed runs); mptcplab.judge.claims
corrects every comparison of the ledger as one family (Holm) and writes claims.json.

The paper's headline (`slower-than-tcp`) is tested at the paper's own setting with the paper's
scheduler, which only the kit's UML kernel carries; where it does not hold, its controls are the
manipulated runs the reference keeps for each candidate cause. A control "holds" when
manipulating its cause brings the paper's outcome back (MPTCP below single-path TCP). Candidate
causes with no runs in the results are "not measured", saying what is missing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from ...judge import stats
from ...judge import claims as judge
from ...judge.claims import FAILS, GREATER, HOLDS, LESS, Claim, Control, Verdict
from .controls import wait_table
from .detail import Detail, find_details, load_details, subflow_inflight
from .measure import cwnd_drops
from .paper_point import load_paper_point
from .second_place import CONTROLLED_DIR
from .sweep import PAPER, _kib, load_sweep

MIB = 1 << 20
MINRTT_RP = "minrtt+rp"
UML_HINT = "the paper's scheduler runs only in the kit's UML kernel: `sudo mptcplab run lab1 --where uml`"


def tables(results_dir: Path | str) -> dict:
    """The run's tables the claims read: the sweep, the paper point's runs, the detailed runs'
    waits beside their controls, and the observed runs of the paper's scheduler. A part the run
    does not have is an empty table (its claims are then "not measured")."""
    d = Path(results_dir)
    try:
        sweep = load_sweep(d)
    except FileNotFoundError:
        sweep = pd.DataFrame(columns=["method", "buffer_bytes", "config", "goodput_transfer_mbps"])
    details = load_details(d) if find_details(d) else []
    return {"sweep": sweep, "paper": load_paper_point(d),
            "waits": wait_table(details, sweep) if details else pd.DataFrame(),
            "observed": observed(d), "arms": held_arms(d), "below": held_below(d)}


# The held point's controls (scripts/lab1-controls.sh): each arm a switch of the network (hz250: of the
# UML kernel's build), kept beside the reference as controlled/held-ARM
# (`mptcplab notebooks reference lab1 RUN --controlled held-ARM`).
HELD_ARMS = {"shaper": "the paper's tc shaper on the sender's own NIC (netem rate and delay in one emulator)",
             "offloads": "the paper's hosts' TSO, GSO and GRO (the kit turns them off)",
             "tso2": "the kit's tcp_min_tso_segs 64 (the paper's kernel had 2)",
             "paper_hosts": "the paper's hosts: its shaper, offloads and tcp_min_tso_segs 2 together",
             "rmem": "the receiver's tcp_rmem (the paper's 4096 87380 6291456; 6.12 starts at 131072)",
             "hz250": "the UML kernel's timer at HZ 100 (the paper's Ubuntu kernel ran at 250: MPTCPLAB_UML_HZ=250)"}


def _held_kept(results_dir: Path | str, names) -> dict[str, pd.DataFrame]:
    """name -> the paper point of controlled/held-NAME beside a reference, for each of `names` kept
    there (none in a student's run)."""
    root = Path(results_dir) / CONTROLLED_DIR
    return {name: load_paper_point(root / f"held-{name}") for name in names
            if (root / f"held-{name}" / "paper-point.csv").exists()}


def held_arms(results_dir: Path | str) -> dict[str, pd.DataFrame]:
    """arm -> the paper point of controlled/held-ARM beside a reference (none in a student's run)."""
    return _held_kept(results_dir, HELD_ARMS)


def _held_arm(arm: str):
    """With the arm's switch, does held minrtt+rp fall below single-path TCP, as in the paper?"""
    def decide(t: dict) -> Verdict:
        if arm not in t.get("arms", {}):
            raise KeyError(f"controlled/held-{arm} (scripts/lab1-controls.sh {arm}, then kept with --controlled "
                           f"held-{arm})")
        return _against_tcp({"paper": t["arms"][arm]}, "held", MINRTT_RP, f"held at 1 MiB, arm {arm}")
    return decide


def _against_paper(runs: pd.DataFrame, what: str) -> Verdict:
    """The held minrtt+rp runs' mean against the paper's figure, by Welch's t on its summary (mean, sd,
    runs): "holds" when resolved below it, "does not hold" when resolved above (the kit's MPTCP still
    carries more than the paper's), "not resolved" with the held runs that would resolve it."""
    mptcp = _runs({"paper": runs}, "held", "mptcp", MINRTT_RP)
    return Verdict.tested(stats.welch_summary(mptcp, PAPER["mptcp_mbps_mean"], PAPER["mptcp_mbps_sd"],
                                              PAPER["mptcp_runs"]), LESS,
                          {"mptcp_mbps": float(mptcp.mean()), "n_mptcp": len(mptcp),
                           "paper_mbps": PAPER["mptcp_mbps_mean"], "difference_mbps": float(mptcp.mean())
                           - PAPER["mptcp_mbps_mean"]},
                          f"{what}: MPTCP {MINRTT_RP} - the paper's {PAPER['mptcp_mbps_mean']} Mbit/s (Welch on its "
                          f"sd {PAPER['mptcp_mbps_sd']}, {PAPER['mptcp_runs']} runs; runs needed: held runs alone)")


def _held_vs_paper(arm: str | None = None):
    """Held at 1 MiB (with the arm's switch; None: the reference's own held runs), does minrtt+rp come
    down to the paper's figure?"""
    def decide(t: dict) -> Verdict:
        if arm is None:
            return _against_paper(t["paper"], "held at 1 MiB")
        if arm not in t.get("arms", {}):
            raise KeyError(f"controlled/held-{arm} (scripts/lab1-controls.sh {arm}, then kept with --controlled "
                           f"held-{arm})")
        return _against_paper(t["arms"][arm], f"held at 1 MiB, arm {arm}")
    return decide


PAPER_CAUSE = f"the same, against the paper's {PAPER['mptcp_mbps_mean']} Mbit/s rather than single-path TCP"


def against_paper(doc: dict, control: str = "held-1MiB-vs-paper") -> dict | None:
    """The ledger's record of a held point against the paper's figure (claims.json's headline's
    causes), or None where the ledger has none: what the prose of the paper point reads."""
    head = next((c for c in doc.get("claims", []) if c["id"] == "slower-than-tcp"), {})
    return next((k for k in head.get("causes", []) if k["control"] == control), None)


# The accounting control (minrtt-vs-out-of-tree.md): the paper's kernel charged a new skb head per cut
# to its 1 MiB, so that buffer held less data than the kit's held 1 MiB. The MPTCP socket held at what
# it may have held instead (SO_SNDBUF, which the kernel doubles -> the data held), minrtt+rp beside
# single-path TCP, each kept beside the reference as controlled/held-SNDBUF.
ACCOUNTING = {"384K": "768 KiB", "320K": "640 KiB", "256K": "512 KiB"}


def held_below(results_dir: Path | str) -> dict[str, pd.DataFrame]:
    """SO_SNDBUF -> the paper point of controlled/held-SNDBUF beside a reference (none in a student's run)."""
    return _held_kept(results_dir, ACCOUNTING)


def _accounting(sndbuf: str):
    """Held at ACCOUNTING[sndbuf] of data, does minrtt+rp fall below single-path TCP, as in the paper?"""
    def decide(t: dict) -> Verdict:
        if sndbuf not in t.get("below", {}):
            raise KeyError(f"controlled/held-{sndbuf} (minrtt-vs-out-of-tree.md's accounting runs at SO_SNDBUF "
                           f"{sndbuf}, kept with --controlled held-{sndbuf})")
        runs = t["below"][sndbuf]
        held = set(runs.loc[runs["group"] == "held", "buffer"].astype(str)) if len(runs) else set()
        if held != {sndbuf}:
            raise KeyError(f"controlled/held-{sndbuf} holds held runs at {', '.join(sorted(held)) or 'no buffer'}, "
                           f"not SO_SNDBUF {sndbuf}")
        return _against_tcp({"paper": runs}, "held", MINRTT_RP, f"held at {ACCOUNTING[sndbuf]} (SO_SNDBUF {sndbuf})")
    return decide


def judged(results_dir: Path | str) -> dict:
    """The ledger's verdicts on a results folder: its claims.json, or the ledger evaluated now (a
    folder made before the kit wrote one)."""
    return judge.judged("lab1", sys.modules[__name__], results_dir)


def observed(results_dir: Path | str) -> pd.DataFrame:
    """The observed runs of the paper's point (paper-detail-*, in a run or in a reference's
    paper-point/), one row each: goodput, RP's counters, the slow subflow's cwnd peak and drops by
    a quarter or more (tcp_probe) against its TCP-level retransmissions (ss), how often the fast
    subflow had at most one segment in flight, and the time the sender was not blocked."""
    d = Path(results_dir)
    rows = []
    for run in sorted(d.glob("paper-detail-*")) or sorted(d.glob("paper-point/paper-detail-*")):
        det = Detail.load_run(run, packets=False)
        sub = subflow_inflight(run).set_index("path")
        ss = pd.read_csv(run / "ss.csv.gz") if (run / "ss.csv.gz").exists() else pd.read_csv(run / "ss.csv")
        slow_addr = next(p["a_addr"] for p in det.manifest["network"]["paths"] if p["name"] == "slow")
        slow = ss[ss["mptcp_subflow"].astype(bool) & ss["local"].astype(str).str.startswith(slow_addr + ":")]
        rows.append({"run": run.name, "held": det.summary.get("method") == "sndbuf",
                     "scheduler": det.summary.get("scheduler"),
                     "goodput_transfer_mbps": det.summary["goodput_transfer_mbps"],
                     "penalised": det.counters.get("MPTcpExtMinRTTPenalised", 0),
                     "opp_retrans": det.counters.get("MPTcpExtMinRTTOppRetrans", 0),
                     "slow_cwnd_peak": int(det.probe[det.probe["path"] == "slow"]["snd_cwnd"].max()),
                     "slow_cwnd_drops": cwnd_drops(det.probe).get("slow", 0),
                     "slow_tcp_retrans": int(np.nan_to_num(slow["retrans_total"].max())) if len(slow) else 0,
                     "fast_idle_share": float(sub["idle_share"].get("fast", np.nan)),
                     "waits": len(det.waits), "unblocked_ms": (det.duration - det.waits["duration_s"].sum()) * 1e3,
                     "duration_s": det.duration, "wait_method": det.method})
    return pd.DataFrame(rows)


def _runs(t: dict, group: str, config: str, scheduler: str | None = None) -> pd.Series:
    """Goodputs of one setting of the paper point (`group` "schedulers" at tcp_wmem 1 MiB, "held"
    at SO_SNDBUF 512K, "tso"), the skipped runs left out; KeyError names a setting with none."""
    p = t["paper"]
    if p.empty:
        raise KeyError(f"the paper's point ({group})")
    sel = (p["group"] == group) & (p["config"] == config) & p["goodput_transfer_mbps"].notna()
    if scheduler is not None:
        sel &= p["scheduler"].fillna("default") == scheduler
    out = p.loc[sel, "goodput_transfer_mbps"]
    if out.empty:
        raise KeyError(f"{config}{' ' + scheduler if scheduler else ''} runs of the paper point ({group})")
    return out


def _against_tcp(t: dict, group: str, scheduler: str, what: str) -> Verdict:
    mptcp, tcp = _runs(t, group, "mptcp", scheduler), _runs(t, group, "tcp-fast")
    return Verdict.tested(stats.welch(mptcp, tcp), LESS,
                          {"mptcp_mbps": float(mptcp.mean()), "n_mptcp": len(mptcp), "tcp_fast_mbps": float(tcp.mean()),
                           "n_tcp": len(tcp), "difference_mbps": float(mptcp.mean() - tcp.mean())},
                          f"{what}: MPTCP {scheduler} - single-path TCP on the fast path")


def _slower_than_tcp(t: dict) -> Verdict:
    p = t["paper"]
    if p.empty or not ((p["scheduler"] == MINRTT_RP) & p["goodput_transfer_mbps"].notna()).any():
        return Verdict.missing(f"no minrtt+rp runs at tcp_wmem 1 MiB ({UML_HINT})")
    return _against_tcp(t, "schedulers", MINRTT_RP, "tcp_wmem 1 MiB")


def _held(scheduler: str):
    """The MPTCP socket held at the paper's 1 MiB (upstream gives it tcp_wmem[0] + its subflows'),
    with `scheduler`: does MPTCP fall below single-path TCP then?"""
    return lambda t: _against_tcp(t, "held", scheduler, "held at 1 MiB")


def _tso(t: dict) -> Verdict:
    """The kernel's tcp_min_tso_segs (2, the paper's) instead of the kit's 64, at tcp_wmem 1 MiB:
    the control ran with upstream's default scheduler only."""
    p = t["paper"]
    if p.empty or not (p["group"] == "tso").any():
        raise KeyError("the tcp_min_tso_segs control")
    tso = p[(p["group"] == "tso") & (p["buffer_bytes"] == MIB) & p["goodput_transfer_mbps"].notna()]
    mptcp = tso[(tso["config"] == "mptcp") & (tso["min_tso_segs"].astype(str) == "2")]["goodput_transfer_mbps"]
    tcp = tso[(tso["config"] == "tcp-fast") & (tso["min_tso_segs"].astype(str) == "2")]["goodput_transfer_mbps"]
    if mptcp.empty or tcp.empty:
        raise KeyError("the tcp_min_tso_segs control at tcp_wmem 1 MiB with the kernel's 2")
    return Verdict.tested(stats.welch(mptcp, tcp), LESS,
                          {"mptcp_mbps": float(mptcp.mean()), "tcp_fast_mbps": float(tcp.mean()), "n": len(mptcp)},
                          "tcp_min_tso_segs 2 at tcp_wmem 1 MiB: MPTCP default - single-path TCP on the fast path "
                          "(the control ran with upstream's scheduler, not minRTT + RP)")


def _sweep_point(t: dict, which: str) -> Verdict:
    """MPTCP against single-path TCP on the fast path at the sweep's smallest or largest tcp_wmem."""
    s = t["sweep"]
    s = s[(s["method"] == "wmem") & s["goodput_transfer_mbps"].notna()] if len(s) else s
    if s.empty:
        raise KeyError("the sweep (tcp_wmem)")
    size = s["buffer_bytes"].min() if which == "smallest" else s["buffer_bytes"].max()
    at = s[s["buffer_bytes"] == size]
    mptcp, tcp = (at[at["config"] == c]["goodput_transfer_mbps"] for c in ("mptcp", "tcp-fast"))
    if mptcp.empty or tcp.empty:
        raise KeyError(f"MPTCP and tcp-fast runs at tcp_wmem {_kib(size)}")
    return Verdict.tested(stats.welch(mptcp, tcp), LESS if which == "smallest" else GREATER,
                          {"buffer_bytes": int(size), "mptcp_mbps": float(mptcp.mean()),
                           "tcp_fast_mbps": float(tcp.mean()), "n": len(mptcp)},
                          f"the sweep's {which} tcp_wmem, {_kib(size)}: MPTCP - single-path TCP on the fast path")


def _upstream_at_1mib(t: dict) -> Verdict:
    s = t["sweep"]
    at = s[(s["method"] == "wmem") & (s["buffer_bytes"] == MIB)] if len(s) else s
    mptcp, tcp = ((at[at["config"] == c]["goodput_transfer_mbps"].dropna() for c in ("mptcp", "tcp-fast"))
                  if len(at) else ([], []))
    if not len(mptcp) or not len(tcp):
        raise KeyError("MPTCP and tcp-fast sweep runs at tcp_wmem 1 MiB")
    return Verdict.tested(stats.welch(mptcp, tcp), LESS,
                          {"mptcp_mbps": float(mptcp.mean()), "tcp_fast_mbps": float(tcp.mean()), "n": len(mptcp)},
                          "the sweep at tcp_wmem 1 MiB (upstream's scheduler): MPTCP - single-path TCP on the fast path")


def _starvation(t: dict) -> Verdict:
    """Blocked most of the time *while* the paths were not full: blocking alone is no sign (any
    sender that writes faster than its network blocks), so the degraded run is read against the
    network-limited controls observed the same way. One observed run each: no interval."""
    w = t["waits"]
    if w.empty or w["control"].isna().all() or w["control"].notna().all():
        raise KeyError("the observed degraded run and its control runs (`mptcplab run lab1` makes them after the sweep)")
    run, ctrl = w[w["control"].isna()].iloc[0], w[w["control"].notna()]
    holds = run["blocked_share"] > 0.5 and (run["utilisation"] < ctrl["utilisation"]).all()
    return Verdict(HOLDS if holds else FAILS,
                   {"buffer_bytes": int(run["buffer_bytes"]), "blocked_share": float(run["blocked_share"]),
                    "waits": int(run["waits"]), "duration_s": float(run["duration_s"]),
                    "utilisation": float(run["utilisation"]),
                    "controls_blocked_share": [round(float(x), 4) for x in ctrl["blocked_share"]],
                    "controls_utilisation": [round(float(x), 4) for x in ctrl["utilisation"]]},
                   note=f"one observed run at tcp_wmem {_kib(run['buffer_bytes'])} against {len(ctrl)} control "
                        f"runs ({', '.join(ctrl['control'])}), waits by {run['wait_method']}: no interval")


def _penalised(t: dict) -> Verdict:
    o = t["observed"]
    o = o[(o["scheduler"] == MINRTT_RP) & o["held"]] if len(o) else o
    if o.empty:
        raise KeyError(f"the observed minrtt+rp run held at 1 MiB ({UML_HINT})")
    r = o.iloc[0]
    holds = r["penalised"] > 0 and r["slow_cwnd_drops"] > 0 and r["slow_tcp_retrans"] == 0
    return Verdict(HOLDS if holds else FAILS,
                   {k: (float(r[k]) if isinstance(r[k], float) else int(r[k]))
                    for k in ("penalised", "slow_cwnd_drops", "slow_tcp_retrans", "slow_cwnd_peak")},
                   note="one observed minrtt+rp run held at 1 MiB (tcp_probe, ss, nstat): no interval")


CLAIMS: tuple[Claim, ...] = (
    Claim("slower-than-tcp",
          "MPTCP (minRTT + RP) at tcp_wmem 1 MiB carries less than one TCP connection on the 100 Mbit/s fast path",
          f"{PAPER['mptcp_mbps_mean']} Mbit/s (sd {PAPER['mptcp_mbps_sd']}, {PAPER['mptcp_runs']} runs)", "Sec. III-B",
          "paper point, tcp_wmem 1 MiB min = default = max: mean goodput of MPTCP with minrtt+rp below that of "
          "single-path TCP on the fast path (Welch)",
          _slower_than_tcp,
          (Control("held-1MiB", "the MPTCP socket's buffer: upstream gives it tcp_wmem[0] plus its subflows' buffers, "
                                "the paper's kernel capped it at tcp_wmem[2]", _held(MINRTT_RP)),
           Control("held-1MiB-vs-paper", PAPER_CAUSE, _held_vs_paper()),
           *(Control(f"held-{arm}", cause, _held_arm(arm)) for arm, cause in HELD_ARMS.items()),
           *(Control(f"held-{arm}-vs-paper", f"{cause}; {PAPER_CAUSE}", _held_vs_paper(arm)) for arm, cause in
             HELD_ARMS.items()),
           *(Control(f"accounting-{held.replace(' KiB', 'K')}", "the paper's kernel charged a new skb head per "
                     f"cut to its 1 MiB, so it held less data: held at {held}", _accounting(sndbuf))
             for sndbuf, held in ACCOUNTING.items()))),
    Claim("slower-than-tcp-upstream",
          "the same on today's upstream Linux: MPTCP at tcp_wmem 1 MiB carries less than one TCP connection "
          "on the fast path", f"{PAPER['mptcp_mbps_mean']} Mbit/s (the paper's kernel)", "Sec. III-B",
          "sweep, tcp_wmem 1 MiB: mean goodput of MPTCP (upstream's default scheduler) below that of "
          "single-path TCP on the fast path (Welch)",
          _upstream_at_1mib,
          (Control("held-1MiB", "the MPTCP socket's buffer alone (held at the paper's 1 MiB, upstream's scheduler)",
                   _held("default")),
           Control("held-1MiB-minrtt", "the paper's buffer and its scheduler without RP, changed together",
                   _held("minrtt")),
           Control("tso-2", "the kit's tcp_min_tso_segs 64 (the paper's kernel had 2)", _tso))),
    Claim("starvation",
          "the sender is blocked in sk_stream_wait_memory() almost all the time while the fast path could carry "
          "more: send-buffer starvation",
          f"{PAPER['waits']} waits in {PAPER['duration_s']} s, 'almost always blocked'", "Fig. 10, Sec. IV-B",
          "the observed degraded MPTCP run blocked for more than half of its transfer, and its paths less full "
          "than those of each network-limited control run observed the same way",
          _starvation),
    Claim("small-buffer-below-tcp",
          "with a small send buffer MPTCP is slower than single-path TCP over the fast path",
          "no number (the authors' earlier papers)", "Sec. III",
          "sweep, the smallest tcp_wmem: mean goodput of MPTCP below that of single-path TCP on the fast path (Welch)",
          lambda t: _sweep_point(t, "smallest")),
    Claim("large-buffer-above-tcp",
          "with a big enough send buffer MPTCP carries more than the bandwidth of one path",
          "no number (the authors' earlier papers)", "Sec. III",
          "sweep, the largest tcp_wmem: mean goodput of MPTCP above that of single-path TCP on the fast path (Welch)",
          lambda t: _sweep_point(t, "largest")),
    Claim("penalised-without-loss",
          "minRTT's penalisation cuts the slow subflow's congestion window with no TCP-level loss",
          f"{PAPER['penalisations']} penalisations, more than {PAPER['slow_cwnd_drops']} cwnd drops, no loss",
          "Fig. 6, Sec. III-B",
          "the observed minrtt+rp run held at 1 MiB: penalisations counted, the slow subflow's cwnd falls by a "
          "quarter or more, and that subflow retransmits nothing",
          _penalised),
)
