"""Physics every measurement must obey, and the check that proves a place to run obeys it.

A place (native kernel, the kit's UML kernel, a VM) whose measurements break these bounds is wrong,
whatever the lab then shows. Pure functions give the bounds; `verify.check_window()` measures one
window-limited transfer against them; `judge_*` compare one figure with its bound and say so in
one line. What a place's setup check found is kept with the place's other checks (places.records).

The bounds
----------
link:     goodput <= rate * 1448 / 1514
          (a full-size segment carries 1448 bytes of payload in 1514 bytes that qdiscs count).

window:   for single-path TCP with a send buffer of sk_sndbuf bytes,

              unacked payload <= sk_sndbuf + 64 KiB         (U)
              goodput         <= U / RTT_min

          From the kernel's own accounting (Linux 6.12, net/ipv4/tcp.c, tcp_sendmsg_locked):
          every skb in the write and retransmit queues, i.e. every byte sent but not yet
          acknowledged plus every byte not yet sent, is charged to sk_wmem_queued at its truesize
          (payload + SKB_TRUESIZE of the skb's head: struct sk_buff + skb_shared_info + the
          MAX_TCP_HEADER room, ~1 KiB on x86-64; so truesize >= payload, and for 64 KiB GSO skbs
          payload ~ 98 % of sk_wmem_queued, for 1-segment skbs ~ 60 %). sendmsg allocates
          a new skb only while sk_stream_memory_free(): sk_wmem_queued < sk_sndbuf; the skb it
          allocated last may then be filled up to size_goal, at most one GSO skb of 64 KiB
          (GSO_LEGACY_MAX_SIZE) - the overshoot tcp_fragment() itself allows for ("tcp_sendmsg()
          can overshoot sk_wmem_queued by one full size skb"). Hence (U).

          sk_sndbuf is what the kernel reports (`ss -m` tb): setsockopt(SO_SNDBUF, v) sets it to
          2 * min(v, net.core.wmem_max) (sock_setsockopt doubles it to leave room for that
          per-skb overhead); without SO_SNDBUF it starts at tcp_wmem[1] and autotuning may grow
          it up to tcp_wmem[2].

          Measured on stock kernels (`ss -timn`, SO_SNDBUF/tcp_wmem 32 KiB): host 6.18, 10 Mbit/s
          tbf, at most 66 segments = 95.6 KB unacknowledged against U = 97.3 KB; behind a routed
          hop that orphans skbs as netem does, with the kit's tcp_min_tso_segs=64, at most 58
          segments = 84 KB (without it: up to 238 = 345 KB). Exceeding (U) is
          only possible when something lets sendmsg append past the buffer check; see
          site/setup/uml.md for the case the kit's places hit (tcp_min_tso_segs).

          (U) holds once cwnd no longer limits the sender, i.e. after slow start, and is judged
          there (over the same steady window as the goodput), and only for a transfer the
          buffer limits, not the network (`window_limited`). In slow start cwnd, not the buffer,
          limits what tcp_push_one() sends: tso_fragment() (tcp_output.c) leaves the unsent rest
          of the tail skb as a new, shorter tail, and tcp_sendmsg_locked() (tcp.c: `copy =
          size_goal - skb->len`) tops that tail up again without sk_stream_memory_free(), which
          it only checks before allocating a new skb. So a transfer in slow start can briefly
          hold more: the kit's UML kernel, SO_SNDBUF 32 KiB over 60 ms, 0.24 s into the transfer,
          cwnd 106: 103 segments = 149,144 B unacknowledged, skmem w 164,504 / tb 65,536; 0.14 s
          later 39 segments. That peak is kept as evidence (`inflight_bytes_max_whole`).

RTT:      ping RTT on an idle path = configured RTT + the ping's own transmission at the path's
          netem rate (98 bytes each way: 0.31 ms at 5 Mbit/s), within 2 % or 0.5 ms (netem's
          delay is exact; the slack allows for the time the kernels spend forwarding). A place that adds
          more than that of its own (an emulated CPU) has it taken out of netem's delay when the
          network comes up (latency.py); what it cannot take out, the check refuses.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import places
from ..net.latency import RTT_TOLERANCE, rtt_slack_ms
from ..net.links import TCP_PAYLOAD, WIRE_BYTES  # a full-size segment: its data, and as qdiscs count it
from ..net.topology import KIT_MIN_TSO_SEGS

GSO_SKB = 65536  # GSO_LEGACY_MAX_SIZE: the most one skb that sendmsg is filling may hold
# Receiver-side goodput counts the bytes of its first read from a timestamp taken after that read
# returned, and bins by the clock: over the labs' >= 3 s transfers that is < 1 % (one 1 MiB read at
# 100 Mbit/s is 84 ms of 10 s). Only the link ceiling, which correct runs reach, needs it.
MEASUREMENT_SLACK = 0.01
# The window-limited transfer: SO_SNDBUF 32 KiB -> sk_sndbuf 64 KiB -> U = 128 KiB, 13.1 Mbit/s over
# 80 ms: far below a 100 Mbit/s link, so the send buffer, not the link, must limit it.
WINDOW_SO_SNDBUF = 32 * 1024
MIN_WINDOW_RTT_S = 0.02  # below this the window bound exceeds any link the labs use: nothing to test


@dataclass
class Verdict:
    """One figure against its bound: `line()` is what a refusing place prints."""

    check: str
    measured: float
    bound: float
    unit: str
    ok: bool
    detail: str = ""
    cause: str = ""  # for a figure outside: what the run itself recorded that explains it (queue_overrun)

    def line(self) -> str:
        rel = "within" if self.ok else "OUTSIDE"
        text = (f"{self.check}: measured {_num(self.measured)} {self.unit}, bound {_num(self.bound)} {self.unit} "
                f"({rel})")
        return text + (f"; {self.detail}" if self.detail else "") + (f"; cause measured: {self.cause}"
                                                                     if self.cause else "")


def _num(x: float) -> str:
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.4g}"


# ---------------------------------------------------------------- bounds (pure)

def allowed(bound: float) -> float:
    """The most a measurement may show against a physical bound: the bound plus MEASUREMENT_SLACK.
    Every judge applies it here, so callers compare with `allowed(bound)`, never the raw bound."""
    return bound * (1 + MEASUREMENT_SLACK)


def link_ceiling_bps(rate_bps: float) -> float:
    """The most TCP payload a link of `rate_bps` can carry."""
    return rate_bps * TCP_PAYLOAD / WIRE_BYTES


def paths_ceiling_bps(rates_bps: dict[str, float], span_s: float, changes: list[dict] = ()) -> float:
    """The most payload several paths together can carry, as a mean over `span_s` seconds, when
    `changes` (dicts: path, rate_bps, begun_s, done_s; s after the start) change their rates on
    the way (Lab 2's mobility). A change counts from when it began where it raised the rate and
    from when it was done where it lowered it: the bound never assumes less capacity than was
    there. Paths without a rate are unbounded (inf)."""
    if span_s <= 0 or any(not r for r in rates_bps.values()):
        return float("inf")
    total = 0.0
    for path, rate in rates_bps.items():
        carried, t, now = 0.0, 0.0, rate
        for c in sorted((c for c in changes if c["path"] == path), key=lambda c: c["begun_s"]):
            new = c["rate_bps"]
            at = min(span_s, max(t, c["begun_s"] if new > now else c["done_s"]))
            carried += link_ceiling_bps(now) * (at - t)
            t, now = at, new
        total += carried + link_ceiling_bps(now) * (span_s - t)
    return total / span_s


def sk_sndbuf_for(so_sndbuf: int | None = None, wmem_max: int = 212992, tcp_wmem_max: int | None = None) -> int:
    """The sk_sndbuf the kernel uses: SO_SNDBUF doubled (capped by wmem_max), else tcp_wmem[2]."""
    if so_sndbuf is not None:
        return max(2 * min(so_sndbuf, wmem_max), 4608)  # SOCK_MIN_SNDBUF on x86-64
    if tcp_wmem_max is None:
        raise ValueError("give so_sndbuf or tcp_wmem_max")
    return tcp_wmem_max


def unacked_bound_bytes(sk_sndbuf: int) -> int:
    """(U): the most payload single-path TCP may keep unacknowledged with this sk_sndbuf."""
    return sk_sndbuf + GSO_SKB


def queue_overrun(sk_sndbuf: int, queued_max: float, min_tso_segs: str | None = None) -> str:
    """Why a single-path run broke (U), where its `ss -m` samples show it: the kernel queued more
    than sk_sndbuf + one skb (`w`, sk_wmem_queued), so the buffer whose bound it is judged against
    did not hold. The verdict stays outside (the place let more bytes out than the buffer allows);
    this names the measured reason. "" when the queue stayed within (nothing recorded explains it).
    The kit's places hit it with the kernel's own tcp_min_tso_segs (2): tcp_sendmsg_locked() tops up
    the partly sent tail skb without the buffer check (topology.BASE_SYSCTLS, site/setup/uml.md)."""
    if not sk_sndbuf or not queued_max or queued_max <= unacked_bound_bytes(sk_sndbuf):
        return ""
    text = (f"the kernel queued up to {queued_max:,.0f} B ({queued_max / sk_sndbuf:.1f} x sk_sndbuf {sk_sndbuf:,} B; "
            "ss -m w): its send buffer did not bound it")
    if min_tso_segs and str(min_tso_segs) != str(KIT_MIN_TSO_SEGS):
        text += (f", with tcp_min_tso_segs {min_tso_segs} (tail-skb top-up past the buffer check, "
                 f"the reason the kit sets {KIT_MIN_TSO_SEGS})")
    return text


def window_bound_bps(sk_sndbuf: int, rtt_s: float) -> float:
    """Goodput bound of single-path TCP with this sk_sndbuf over a path of this (minimum) RTT."""
    if rtt_s <= 0:
        return float("inf")
    return unacked_bound_bytes(sk_sndbuf) * 8 / rtt_s


def window_limited(sk_sndbuf: int, rtt_s: float, rate_bps: float | None) -> bool:
    """Whether (U) applies to a single-path transfer: its buffer, not the network, limits it, i.e.
    its window bound at the path's configured RTT is below the link's ceiling. A network-limited
    sender is cwnd-limited, and then the tail top-up described at (U) lets its queue pass
    sk_sndbuf (measured in UML, SO_SNDBUF 64K on the 100 Mbit/s fast path: cwnd 142 -> 71 at a
    loss with 141 segments = 204,168 B out, skmem w 249,552 / tb 131,072); what bounds it is the
    link, which its goodput is judged against. Unknown rate: judged (the stricter choice)."""
    if not rate_bps:
        return True
    return window_bound_bps(sk_sndbuf, rtt_s) < link_ceiling_bps(rate_bps)


# ---------------------------------------------------------------- judging (pure)

def judge_rtt(path: str, measured_ms: float, configured_ms: float, tolerance: float = RTT_TOLERANCE,
              cause: str | None = None, wire_ms: float = 0.0) -> Verdict:
    """The configured RTT plus `wire_ms`, the ping's own transmission time at the path's rate
    (latency.ping_wire_ms). `cause`: what explains a miss, if known (the place's own latency)."""
    slack = rtt_slack_ms(configured_ms, tolerance)
    want = configured_ms + wire_ms
    ok = abs(measured_ms - want) <= slack
    wire = f" + {wire_ms:.2f} ms sending the ping at the path's rate" if wire_ms >= 0.005 else ""
    spread = f"{slack:g} ms" if slack > tolerance * configured_ms else f"{tolerance:.0%}"
    detail = f"configured {configured_ms:.1f} ms{wire} +-{spread}"
    bound = want - slack if measured_ms < want else want + slack  # the side it is on
    return Verdict(f"lowest ping RTT on path {path}", measured_ms, bound, "ms", ok,
                   detail + (f"; {cause}" if cause and not ok else ""))


def judge_ceiling(check: str, goodput_bps: float, rate_bps: float, wire_bps: float | None = None) -> Verdict:
    """A goodput not above its link's ceiling (`allowed`), and the link not above its rate on
    `wire_bps`, the emulator's own count of what it sent (headers included), where that count can
    describe the goodput's window. The one judge of "not above" for a run's setup check
    (judge_link) and for `mptcplab check` of recorded results.

    A receiver cannot receive more than crossed the wire: a wire count that could not have carried
    the goodput's payload (`link_ceiling_bps(wire_bps)` below it, past MEASUREMENT_SLACK) was taken
    over another window. Under host load the emulator's sampler reads 1-2.4 s apart and its count
    is bracketed by samples outside the transfer's steady window (observe.qdisc_window), which
    dilutes it with slow start and the idle time after (Lab 2's setup check in the VM, path p4:
    wire 2.84 Mbit/s, goodput 4.85 = 101.4% of the 4.78 ceiling). Such a count is set aside and
    the goodput alone decides, as it does where there is no count; the verdict says so. (The
    receiver's in-order count no longer passes the ceiling over a window that starts while a loss
    is being repaired: measure.traffic starts that window where the stall began.)"""
    ceiling = link_ceiling_bps(rate_bps)
    ok = goodput_bps <= allowed(ceiling)
    detail = ""
    if wire_bps is not None:
        sent = f"the emulator sent {wire_bps / 1e6:.3g} Mbit/s of {rate_bps / 1e6:g}"
        if allowed(link_ceiling_bps(wire_bps)) < goodput_bps:
            detail = (f"{sent}, too little to carry the {goodput_bps / 1e6:.3g} Mbit/s received, so its "
                      "count was taken over another window: judged on the goodput")
        else:
            ok = ok and wire_bps <= allowed(rate_bps)
            detail = sent
    return Verdict(check, goodput_bps / 1e6, allowed(ceiling) / 1e6, "Mbit/s", ok, detail)


def judge_link(path: str, goodput_bps: float, rate_bps: float, min_utilisation: float,
               wire_bps: float | None = None) -> Verdict:
    """Single TCP must fill the link: its goodput at least `min_utilisation` of the ceiling, and
    not above it (judge_ceiling, with the emulator's count `wire_bps` where known)."""
    ceiling = link_ceiling_bps(rate_bps)
    util = goodput_bps / ceiling
    above = judge_ceiling(f"single TCP fills path {path}", goodput_bps, rate_bps, wire_bps)
    return Verdict(above.check, goodput_bps / 1e6, ceiling / 1e6, "Mbit/s", util >= min_utilisation and above.ok,
                   f"{util:.1%} of the ceiling, needs {min_utilisation:.0%}-100%"
                   + (f"; {above.detail}" if above.detail else ""))


def judge_window(path: str, goodput_bps: float, max_unacked_bytes: float, sk_sndbuf: int,
                 rtt_s: float) -> list[Verdict]:
    """A window-limited transfer: unacknowledged bytes and goodput within the bounds of sk_sndbuf."""
    bound_u = unacked_bound_bytes(sk_sndbuf)
    bound_g = window_bound_bps(sk_sndbuf, rtt_s)
    why = f"sk_sndbuf {sk_sndbuf} B + one 64 KiB skb"
    return [Verdict(f"unacked bytes on path {path}", max_unacked_bytes, bound_u, "B",
                    max_unacked_bytes <= bound_u, why),
            Verdict(f"window-limited goodput on path {path}", goodput_bps / 1e6, bound_g / 1e6, "Mbit/s",
                    goodput_bps <= bound_g, f"({why}) / RTT {rtt_s * 1e3:.1f} ms")]


# ---------------------------------------------------------------- the measurement

def steady_after_s(duration_s: float, rtt_s: float) -> float:
    """When a transfer's steady window starts, in s after its start: past slow start (a dozen
    RTTs, at least 1 s) but never later than a third of the transfer. Goodput and bytes in flight
    are both judged from then on."""
    return min(duration_s / 3, max(1.0, 12 * rtt_s))


def refusal(verdicts: list[Verdict]) -> str | None:
    """The one line a failing place prints, or None if every verdict passed."""
    bad = [v for v in verdicts if not v.ok]
    if not bad:
        return None
    return f"physics check failed in {places.current().NAME}: " + " | ".join(v.line() for v in bad)
