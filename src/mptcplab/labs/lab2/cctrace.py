"""Traces of the kernel's congestion-control callbacks, and their replay through the reference.

`cc.recording()` collects one event per callback of a BPF program (mlab_cc.bpf.c):
init (a subflow's socket starts: the join), rtt (an RTT sample), ack (cong_avoid: packets acked,
cwnd-limited or not, every established subflow's cwnd and smoothed RTT as read, and the window
set), loss (ssthresh: the window returned) and undo (the window returned). `compact()` keeps what
the replay needs in a small table (CSV, gzip); `replay()` feeds the same inputs to
`ccref.SubflowCC` and compares, event by event, the windows and the rule state (the CS218 count,
best and last RTT). The window is the kernel's, in whole packets; the fractional part is kept
in 1/2^20 packets by the BPF programs and as a float here, so it is compared within the
fixed-point rounding and then taken from the trace (rounding never accumulates): a window may
then differ only when the reference's value lies within that rounding of a whole packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pandas as pd

from . import ccref

FP = 1 << 20  # the BPF programs' accumulator unit (1 packet)
MAX_SUBFLOWS = 8
BASE = ["sock", "kind", "t_ms", "path", "acked", "limited", "cwnd", "ssthresh", "out", "ack_count",
        "best_rtt_us", "last_rtt_us", "acc", "inc", "n", "self", "no_rtt"]


def compact(events: pd.DataFrame, algo: str) -> pd.DataFrame:
    """The replay's columns from a `cc.Recording.events` frame: times in ms from the first event,
    the subflow's path (10.<path>.0.1) on every row, sibling columns only as many as were read."""
    df = events.copy()
    if df.empty:
        return pd.DataFrame(columns=["algo", *BASE])
    df["t_ms"] = (df.t_ns - df.t_ns.min()) // 1_000_000
    init = df[df.kind == "init"].set_index("sock").saddr
    # saddr is in network order: 10.<path>.0.1 reads 0x01_00_<path>_0A as a little-endian u32
    df["path"] = df.sock.map(init.map(lambda a: (int(a) >> 8) & 0xFF)).fillna(0).astype(int)
    n_max = max(1, int(df.n.max()))
    cols = BASE + [f"w{k}" for k in range(n_max)] + [f"rtt{k}" for k in range(n_max)]
    out = df[cols].copy()
    out.insert(0, "algo", algo)
    return out.reset_index(drop=True)


def save(trace: pd.DataFrame, path: Path) -> Path:
    """CSV, compressed as the name says (.gz, .xz)."""
    path = Path(path)
    trace.to_csv(path, index=False, compression="infer")
    return path


def load(path: Path) -> pd.DataFrame:
    return pd.read_csv(path)


def excerpt(trace: pd.DataFrame, seconds: float | None = None, paths: list[int] | None = None) -> pd.DataFrame:
    """A smaller trace that still replays: the first `seconds` (a prefix keeps every subflow's
    state from its start) of the subflows on `paths` (each subflow replays on its own: its
    siblings' windows and RTTs are recorded inputs of its events)."""
    out = trace
    if seconds is not None:
        out = out[out.t_ms <= seconds * 1000]
    if paths is not None:
        out = out[out.path.isin(paths) | (out.sock == 0)]
    return out.reset_index(drop=True)


@dataclass
class Replay:
    """Per event: what the kernel did, what the reference did, and whether they agree."""

    rows: pd.DataFrame
    mismatches: pd.DataFrame = field(default_factory=pd.DataFrame)
    near_boundary: int = 0  # ACKs whose window the fixed-point rounding could tip either way

    @property
    def ok(self) -> bool:
        return self.mismatches.empty

    def coverage(self) -> dict[str, int]:
        """How often each rule was exercised (the test requires every one to occur)."""
        r = self.rows
        ack = r[r.kind == "ack"]
        ca = ack[(ack.limited == 1) & (ack.inc > 0)]
        return {
            "events": len(r),
            "subflows": int((r.kind == "init").sum()),
            "rtt_samples": int((r.kind == "rtt").sum()),
            "acks": len(ack),
            "acks_not_cwnd_limited": int((ack.limited == 0).sum()),
            "acks_slow_start": int(((ack.limited == 1) & (ack.cwnd < ack.ssthresh)).sum()),
            "acks_congestion_avoidance": len(ca),
            "acks_coupled": int((ca.n > 1).sum()),
            "acks_sibling_without_rtt": int(ca.sibling_without_rtt.sum()),
            "acks_with_delay_window": int(ca.dwnd.sum()) if "dwnd" in ca else 0,
            "acks_rtt_above_best": int((ca.last_rtt_us > ca.best_rtt_us).sum()),
            "window_grew": int((ack.kernel_out > ack.cwnd).sum()),
            "losses": int((r.kind == "loss").sum()),
            "undos": int((r.kind == "undo").sum()),
        }


def replay(trace: pd.DataFrame, algo: str | None = None, cs218_rule: Callable | None = None,
           reference: type = ccref.SubflowCC, rel_tol: float = 5e-3) -> Replay:
    """Run the trace's inputs through `reference` (ccref.SubflowCC) and compare every event.

    Compared exactly: the window after each ACK (unless the reference lands within the rounding
    tolerance of a whole packet), the ssthresh after each loss, the window after each undo, and
    the rule state after every event (CS218 count, best and last RTT sample). Compared within
    `rel_tol` plus two fixed-point units: the increase per packet and the fractional accumulator.
    """
    algo = algo or str(trace.algo.iloc[0])
    state: dict[int, ccref.SubflowCC] = {}
    out, bad, near = [], [], 0
    n_max = max((int(c[1:]) + 1 for c in trace.columns if c.startswith("w") and c[1:].isdigit()), default=0)
    for e in trace.itertuples(index=False):
        sock = int(e.sock)
        if sock == 0:  # before init (the SYN-ACK's RTT sample): init then clears the state
            continue
        if e.kind == "init" or sock not in state:
            state[sock] = reference(algo, cs218_rule)
        st = state[sock]
        n = int(e.n)
        w = [float(getattr(e, f"w{k}")) for k in range(min(n, n_max))]
        rtt = [float(getattr(e, f"rtt{k}")) for k in range(min(n, n_max))]
        row = {"sock": sock, "kind": e.kind, "t_ms": int(e.t_ms), "path": int(e.path), "cwnd": int(e.cwnd),
               "ssthresh": int(e.ssthresh), "limited": int(e.limited), "n": n, "self": int(e.self),
               "kernel_out": int(e.out), "ref_out": int(e.out), "inc": float(e.inc) / FP, "ref_inc": 0.0,
               "last_rtt_us": int(e.last_rtt_us), "best_rtt_us": int(e.best_rtt_us), "dwnd": False,
               "sibling_without_rtt": int(getattr(e, "no_rtt", 0)) > 0}
        why = []
        if e.kind == "rtt":
            st.on_rtt(float(e.acked))
        elif e.kind == "ack":
            r = int(e.self)
            before = st.acc
            ref = st.on_ack(int(e.cwnd), int(e.ssthresh), int(e.acked), bool(e.limited), w, rtt, r)
            row["ref_out"], row["ref_inc"] = ref, st.inc
            if algo in ccref.DELAY_WINDOW and st.inc > 0:
                lia = ccref.increase(ccref.DELAY_WINDOW[algo], w, rtt, r)  # the increase the window is added to
                row["dwnd"] = st.inc > lia * (1 + 1e-9)
                row["dwnd_vs_lia"] = st.inc / lia - 1  # the delay window in units of the LIA increase
            tol = rel_tol * st.inc * max(int(e.acked), 1) + 2.0 / FP * max(int(e.acked), 1)
            x = before + st.inc * max(int(e.acked), 1)
            boundary = st.inc > 0 and abs(x - round(x)) <= tol and round(x) >= 1
            if abs(st.inc - float(e.inc) / FP) > rel_tol * st.inc + 2.0 / FP:
                why.append(f"increase {st.inc:.6g} vs kernel {float(e.inc) / FP:.6g}")
            if ref != int(e.out):
                if boundary and abs(ref - int(e.out)) == 1:
                    near += 1
                else:
                    why.append(f"window {ref} vs kernel {int(e.out)}")
            if abs(st.acc - float(e.acc) / FP) > tol and not boundary:
                why.append(f"accumulator {st.acc:.6g} vs kernel {float(e.acc) / FP:.6g}")
            st.acc = float(e.acc) / FP  # fixed-point rounding must not accumulate
        elif e.kind == "loss":
            w, rtt, r = (w, rtt, int(e.self)) if n else ([float(e.cwnd)], [1.0], 0)
            ref = st.on_loss(int(e.cwnd), w, rtt, r)
            row["ref_out"] = ref
            if ref != int(e.out):
                why.append(f"ssthresh {ref} vs kernel {int(e.out)}")
            if int(e.acc) != 0:
                why.append("kernel kept its accumulator over a loss")
        elif e.kind == "undo":
            ref = st.on_undo(int(e.cwnd), int(e.acked))
            row["ref_out"] = ref
            if ref != int(e.out):
                why.append(f"undo window {ref} vs kernel {int(e.out)}")
        for name, mine, theirs in (("ack_count", st.ack_count, e.ack_count), ("best_rtt", st.best_rtt, e.best_rtt_us),
                                   ("last_rtt", st.last_rtt, e.last_rtt_us)):
            if algo in ccref.DELAY_WINDOW or name != "ack_count":
                if int(mine) != int(theirs):
                    why.append(f"{name} {int(mine)} vs kernel {int(theirs)}")
        row["mismatch"] = "; ".join(why)
        out.append(row)
        if why:
            bad.append(row)
    rows = pd.DataFrame(out)
    return Replay(rows, pd.DataFrame(bad, columns=rows.columns), near)


def delay_window_table(rows: pd.DataFrame) -> pd.DataFrame:
    """What CS218's delay window did, per path, from a replay's rows: congestion-avoidance ACKs,
    how many added the window, its mean and median size relative to the LIA increase (1 = the
    increase doubled), and the mean best/last RTT ratio (ms) on those ACKs."""
    ca = rows[(rows.kind == "ack") & (rows.limited == 1) & (rows.ref_inc > 0)]
    if ca.empty or "dwnd_vs_lia" not in ca:
        return pd.DataFrame(columns=["path", "ca_acks", "with_dwnd", "share", "dwnd_mean", "dwnd_median",
                                     "best_rtt_ms", "last_rtt_ms"])
    g = ca.groupby("path")
    return pd.DataFrame({
        "ca_acks": g.size(), "with_dwnd": g.dwnd.sum().astype(int), "share": g.dwnd.mean(),
        "dwnd_mean": g.dwnd_vs_lia.mean(), "dwnd_median": g.dwnd_vs_lia.median(),
        "best_rtt_ms": g.best_rtt_us.mean() / 1e3, "last_rtt_ms": g.last_rtt_us.mean() / 1e3,
    }).reset_index()
