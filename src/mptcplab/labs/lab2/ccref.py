"""Python reference of the multipath congestion-control rules (Lab 2) and a small simulator.

The same rules run in the kernel as BPF programs (`mptcplab/cc/mlab_cc.bpf.c`); here they are
written as plainly as possible, in packets, for unit tests and for the notebook, where students
write the CS218 rule themselves and watch it in `simulate()`.

Increase of subflow r's window w_r per packet acked in congestion avoidance (n subflows, smoothed
RTTs rtt_i):

    uncoupled  1 / w_r                                    (Reno on every subflow)
    ewtcp      a / w_r,  a = 1 / sqrt(n)
    coupled    1 / w_total
    lia        min(alpha / w_total, 1 / w_r),  alpha = w_total * max_i(w_i / rtt_i^2) / (sum_i w_i / rtt_i)^2
    cs218      lia + DWND,  DWND = lia * best_rtt / last_rtt  once more than 5 packets were acked
               (in congestion avoidance) since the last loss; best_rtt / last_rtt are RTT *samples*

and two controls (issue 37; REPORT_RULE, in no default run nor in the notebook's questions): the
RTT compensator as the report writes it (its Sec. 1), a = 1/sqrt(n) where LIA has alpha, and CS218
on it (for n equal paths a is sqrt(n) times LIA's alpha: twice for the lab's four):

    lia_report    min(a / w_total, 1 / w_r),  a = 1 / sqrt(n)
    cs218_report  lia_report + DWND (as cs218, on lia_report's increase)

On loss: w_r / 2 (coupled: w_r - w_total / 2), never below 2 packets; cs218 also resets its count.
An undo (the loss was spurious) gives cs218 its count back. Every algorithm keeps Reno's slow start
(w_r += 1 per packet acked below ssthresh). The coupling (n, w_total, the sums) counts the subflows
that have an RTT sample, and always subflow r itself: one that just joined has none yet.

`SubflowCC` keeps one subflow's state exactly as the kernel programs do (whole-packet window, a
fractional accumulator); `replay()` runs a trace recorded from them (`cc.recording`)
through it, which is what tests/labs/test_cc_differential.py checks.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

ALGORITHMS = ("uncoupled", "ewtcp", "coupled", "lia", "cs218")
REPORT_RULE = ("lia_report", "cs218_report")
KNOWN = ALGORITHMS + REPORT_RULE
# the algorithms with CS218's delay window -> the increase it is added to
DELAY_WINDOW = {"cs218": "lia", "cs218_report": "lia_report"}
CS218_MIN_ACKS = 5  # the delay window is added when ack_count > 5, i.e. from the 6th ACK
MIN_CWND = 2.0


# ---------------------------------------------------------------- the rules

def coupled(w: Sequence[float], rtt: Sequence[float], r: int) -> tuple[list[float], list[float], int]:
    """The subflows that take part in the coupling: those with an RTT sample (rtt > 0) and always
    r itself; returns their windows, RTTs and r's index among them."""
    keep = [i for i in range(len(w)) if rtt[i] > 0 or i == r]
    return [w[i] for i in keep], [rtt[i] if rtt[i] > 0 else 1e-6 for i in keep], keep.index(r)


def lia_alpha(w: Sequence[float], rtt: Sequence[float]) -> float:
    """RFC 6356's alpha: w_total * max_i(w_i/rtt_i^2) / (sum_i w_i/rtt_i)^2."""
    total = sum(w)
    best = max(wi / ri ** 2 for wi, ri in zip(w, rtt))
    return total * best / sum(wi / ri for wi, ri in zip(w, rtt)) ** 2


def lia_increase(w: Sequence[float], rtt: Sequence[float], r: int) -> float:
    """RFC 6356 per-ACK increase of subflow r: min(alpha / w_total, 1 / w_r)."""
    return min(lia_alpha(w, rtt) / sum(w), 1.0 / w[r])


def report_increase(w: Sequence[float], r: int) -> float:
    """The report's RTT-compensator increase of subflow r: min(a / w_total, 1 / w_r), a = 1/sqrt(n)."""
    return min(1.0 / math.sqrt(len(w)) / sum(w), 1.0 / w[r])


def delay_window(lia_inc: float, ack_count: int, best_rtt: float, last_rtt: float) -> float:
    """CS218's DWND: lia_inc * best_rtt / last_rtt once ack_count > 5, else 0.

    `ack_count` counts the packets acked in congestion avoidance since the last loss, this ACK's
    included."""
    if ack_count > CS218_MIN_ACKS and last_rtt > 0:
        return lia_inc * best_rtt / last_rtt
    return 0.0


def cs218_increase(lia_inc: float, ack_count: int, best_rtt: float, last_rtt: float) -> float:
    """CS218 per-ACK increase: the LIA increase plus the delay window."""
    return lia_inc + delay_window(lia_inc, ack_count, best_rtt, last_rtt)


def increase(algo: str, w: Sequence[float], rtt: Sequence[float], r: int, ack_count: int = 0,
             best_rtt: float | None = None, last_rtt: float | None = None,
             cs218_rule: Callable[[float, int, float, float], float] | None = None) -> float:
    """Window increase (packets) of subflow r per packet acked in congestion avoidance; `rtt` are
    the smoothed RTTs (0: no sample yet), best_rtt / last_rtt subflow r's RTT samples (CS218)."""
    w, rtt, r = coupled(w, rtt, r)
    n = len(w)
    if algo == "uncoupled":
        return 1.0 / w[r]
    if algo == "ewtcp":
        return (1.0 / math.sqrt(n)) / w[r]
    if algo == "coupled":
        return 1.0 / sum(w)
    if algo == "lia":
        return lia_increase(w, rtt, r)
    if algo == "lia_report":
        return report_increase(w, r)
    if algo in DELAY_WINDOW:
        rule = cs218_rule or cs218_increase
        best = best_rtt if best_rtt is not None else rtt[r]
        last = last_rtt if last_rtt is not None else rtt[r]
        base = lia_increase(w, rtt, r) if algo == "cs218" else report_increase(w, r)
        return rule(base, ack_count, best, last)
    raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(KNOWN)}")


def decrease(algo: str, w: Sequence[float], r: int, rtt: Sequence[float] | None = None) -> float:
    """Subflow r's window after a loss (`rtt`: leave subflows without an RTT sample out of w_total)."""
    if algo == "coupled":
        if rtt is not None:
            w, _, r = coupled(w, rtt, r)
        return max(w[r] - sum(w) / 2, MIN_CWND)
    if algo not in KNOWN:
        raise ValueError(f"unknown algorithm {algo!r}; choose from {', '.join(KNOWN)}")
    return max(w[r] / 2, MIN_CWND)


# ---------------------------------------------------------------- one subflow, as the kernel keeps it

@dataclass
class SubflowCC:
    """One subflow's congestion-control state, field for field what mlab_cc.bpf.c keeps in
    `struct mlab_ca`; the window itself (snd_cwnd, snd_ssthresh) belongs to the kernel and is
    passed in. RTTs in µs, windows in whole packets, `acc` the increase not yet applied (< 1)."""

    algo: str
    cs218_rule: Callable | None = None
    acc: float = 0.0
    ack_count: int = 0
    best_rtt: float = 0.0
    last_rtt: float = 0.0
    prior_ack_count: int = 0
    inc: float = 0.0  # the last increase per packet (for comparison only)

    def on_rtt(self, sample_us: float) -> None:
        """An RTT sample (pkts_acked)."""
        self.last_rtt = sample_us
        if not self.best_rtt or sample_us < self.best_rtt:
            self.best_rtt = sample_us

    def on_ack(self, cwnd: int, ssthresh: int, acked: int, limited: bool, w: Sequence[float],
               rtt: Sequence[float], r: int) -> int:
        """The window after an ACK of `acked` packets (cong_avoid); w/rtt: every established subflow's
        cwnd and smoothed RTT as read, r this one."""
        self.inc = 0.0
        if not limited:  # the sender did not use its window: growing it would mean nothing
            return cwnd
        if cwnd < ssthresh:  # Reno's slow start, as tcp_slow_start()
            grown = min(cwnd + acked, ssthresh)
            acked -= grown - cwnd
            cwnd = grown
            if acked <= 0:
                return cwnd
        if self.algo in DELAY_WINDOW:
            self.ack_count += acked
        self.inc = increase(self.algo, w, rtt, r, self.ack_count, self.best_rtt, self.last_rtt, self.cs218_rule)
        self.acc += self.inc * acked
        whole = math.floor(self.acc)
        self.acc -= whole
        return cwnd + whole

    def on_loss(self, cwnd: int, w: Sequence[float], rtt: Sequence[float], r: int) -> int:
        """ssthresh after a loss (the window in whole packets, rounded down)."""
        self.prior_ack_count, self.ack_count, self.acc = self.ack_count, 0, 0.0
        if self.algo != "coupled":
            w, rtt, r = [cwnd], [1.0], 0
        return int(math.floor(decrease(self.algo, w, r, rtt)))

    def on_undo(self, cwnd: int, prior_cwnd: int) -> int:
        """The window after an undo (the loss was spurious): the count it reset goes on."""
        self.ack_count += self.prior_ack_count
        self.prior_ack_count = 0
        return max(cwnd, prior_cwnd)


# ---------------------------------------------------------------- the simulator

@dataclass
class Link:
    """A bottleneck: capacity in packets/s, base RTT in s, buffer in packets, and cross traffic
    as a function of time returning the fraction of capacity it takes (0..1)."""

    capacity: float
    base_rtt: float
    buffer: float
    cross: Callable[[float], float] = lambda t: 0.0


@dataclass
class Flow:
    """A single-path TCP flow (algo "uncoupled" with one subflow) or an MPTCP connection."""

    name: str
    algo: str
    links: list[int]  # one link per subflow
    cs218_rule: Callable | None = None


@dataclass
class _Sub:
    w: float = 2.0
    ssthresh: float = math.inf
    credit: float = 0.0
    ack_count: int = 0
    best_rtt: float = math.inf
    last_rtt: float = 0.0
    srtt: float = 0.0
    last_loss: float = -math.inf
    acked: float = 0.0


@dataclass
class SimResult:
    rows: list[dict] = field(default_factory=list)

    def frame(self):
        import pandas as pd

        return pd.DataFrame(self.rows)

    def throughput(self, flow: str, start: float = 0.0) -> float:
        """Mean throughput (packets/s) of a flow after `start` seconds, all subflows together."""
        df = self.frame()
        df = df[(df.flow == flow) & (df.time >= start)]
        if df.empty:
            return 0.0
        span = df.time.max() - df.time.min()
        per_sub = df.groupby("subflow").acked.agg(lambda a: a.iloc[-1] - a.iloc[0])
        return float(per_sub.sum() / span) if span > 0 else 0.0


def simulate(links: Sequence[Link], flows: Sequence[Flow], duration: float = 20.0, dt: float = 0.002,
             sample_every: float = 0.05, seed: int = 1) -> SimResult:
    """Deterministic fluid-with-ACKs model.

    Every `dt`, each subflow receives w/RTT*dt ACKs (carried over as credit until whole); each ACK
    applies the algorithm's rule. A link's queue is the packets in flight beyond its
    bandwidth-delay product (cross traffic takes its share of the capacity); RTT = base RTT +
    queue / capacity. While the queue exceeds the buffer, one packet per `dt` overflows; it
    belongs to a subflow chosen with probability proportional to its window (seeded: the same
    arguments give the same result), which applies the loss rule at most once per RTT.
    """
    rng = random.Random(seed)
    subs = {(f.name, k): _Sub() for f in flows for k in range(len(f.links))}
    out = SimResult()
    next_sample = 0.0
    t = 0.0
    while t < duration:
        rtts = {}
        for li, link in enumerate(links):
            cap = link.capacity * max(0.05, 1.0 - link.cross(t))
            inflight = sum(subs[(f.name, k)].w for f in flows for k, l in enumerate(f.links) if l == li)
            queue = max(0.0, inflight - cap * link.base_rtt)
            rtts[li] = link.base_rtt + queue / cap
            if queue > link.buffer:
                # Drop-tail: the packet that overflows belongs to a subflow with probability
                # proportional to its window. That subflow halves once per RTT (fast recovery).
                on_link = [(f, k) for f in flows for k, l in enumerate(f.links) if l == li]
                f, k = rng.choices(on_link, weights=[subs[(g.name, j)].w for g, j in on_link])[0]
                s = subs[(f.name, k)]
                if t - s.last_loss > rtts[li]:
                    w = [subs[(f.name, j)].w for j in range(len(f.links))]
                    s.w = decrease(f.algo, w, k)
                    s.ssthresh = s.w
                    s.ack_count = 0
                    s.credit = 0.0
                    s.last_loss = t
        for f in flows:
            rtt = [rtts[l] for l in f.links]
            for k, l in enumerate(f.links):
                s = subs[(f.name, k)]
                if t - s.last_loss < rtt[k]:
                    acks = s.w / rtt[k] * dt  # in recovery: data flows, the window does not grow
                    s.acked += acks
                    continue
                s.last_rtt = rtt[k]
                s.best_rtt = min(s.best_rtt, rtt[k])
                s.credit += s.w / rtt[k] * dt
                while s.credit >= 1.0:
                    s.credit -= 1.0
                    s.acked += 1.0
                    s.srtt = rtt[k] if not s.srtt else s.srtt + (rtt[k] - s.srtt) / 8  # as TCP's srtt
                    if s.w < s.ssthresh:
                        s.w += 1.0
                        continue
                    s.ack_count += 1  # one packet per ACK here; the kernel counts packets too
                    w = [subs[(f.name, j)].w for j in range(len(f.links))]
                    srtt = [subs[(f.name, j)].srtt or rtt[j] for j in range(len(f.links))]
                    s.w += increase(f.algo, w, srtt, k, s.ack_count, s.best_rtt, s.last_rtt, f.cs218_rule)
        if t >= next_sample:
            for f in flows:
                for k, l in enumerate(f.links):
                    s = subs[(f.name, k)]
                    out.rows.append({"time": round(t, 6), "flow": f.name, "algo": f.algo, "subflow": k, "link": l,
                                     "cwnd": s.w, "rtt": rtts[l], "acked": s.acked + s.credit})
            next_sample += sample_every
        t += dt
    return out


def onoff(period: float, duty: float, level: float, phase: float = 0.0) -> Callable[[float], float]:
    """Deterministic on/off cross traffic: takes `level` of the capacity for `duty` of each period."""
    return lambda t: level if ((t + phase) % period) < duty * period else 0.0


def scenario_paths(algo: str, cs218_rule: Callable | None = None, duration: float = 30.0,
                   mobility: bool = False, seed: int = 1) -> SimResult:
    """The notebook's small version of the report's setup: one MPTCP connection over three 5 Mbit/s
    paths (417 packets/s of 1500 B), on/off cross traffic on two of them; with `mobility`, path 0
    loses half its capacity halfway through."""
    pps = 5e6 / 8 / 1500
    cap0 = (lambda t: 0.0) if not mobility else (lambda t: 0.5 if t > duration / 2 else 0.0)
    links = [Link(pps, 0.020, 30, cap0),
             Link(pps, 0.040, 30, onoff(4.0, 0.5, 0.6)),
             Link(pps, 0.060, 30, onoff(6.0, 0.5, 0.8, phase=2.0))]
    return simulate(links, [Flow("mptcp", algo, [0, 1, 2], cs218_rule)], duration=duration, seed=seed)


def scenario_fairness(algo: str, cs218_rule: Callable | None = None, duration: float = 30.0,
                      seed: int = 1) -> SimResult:
    """Two subflows of one MPTCP connection and one single-path Reno flow share one 5 Mbit/s
    bottleneck. RFC 6356's goal: the MPTCP connection takes no more than the TCP flow."""
    pps = 5e6 / 8 / 1500
    links = [Link(pps, 0.040, 40)]
    return simulate(links, [Flow("mptcp", algo, [0, 0], cs218_rule), Flow("tcp", "uncoupled", [0])],
                    duration=duration, seed=seed)
