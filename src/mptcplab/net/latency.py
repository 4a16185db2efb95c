"""A place's own latency on each path, and the netem delay that leaves the configured RTT.

Every place adds time of its own to a round trip: the kernels forwarding a packet through two
veths and a bridge, and in a virtual machine without KVM an emulated CPU doing all of it (QEMU's
TCG here: a path with no delay pings 1.1 ms on a quiet host and 3.6 ms under load, a 20 ms path
21-22 ms; native and UML add ~0.05 ms). That time belongs to the place, not to the network being
emulated. So once a topology is up (`Topology.up`), each path's own latency is measured, and
where the place's floor (the lowest over its paths of the same kind: place_floors) is more than
OWN_LATENCY_FLOOR_MS (0.25 ms: five times what native and UML add) it is taken out of each path's
netem delay, half per direction, never below 0. Below it
nothing changes (native, UML): the measurement is only recorded. Every later delay of the path
(`Network.set_link`, Lab 2's mobility) is compensated by the same measurement. Where the place
adds more than the path's configured delay can give up (a 0 ms path under TCG), nothing is
hidden: the RTT check refuses, and its message names the place's latency as the cause.

The floor, not the median, because the place's latency is a distribution: a fixed part (the
least any packet takes through the emulated CPU) and a variable part (timers firing late, the
host's scheduler) that changes from second to second with the host's load. Taking the fixed
part out leaves every packet at least its configured delay (physics: no RTT below the
configured one), and the lowest RTT of a sample is stable from one sample to the next where the
median is not: taking one sample's median out and judging a later sample's median against a
0.5 ms band refused a correct VM in 2 of 6 idle attempts, and under load the median was once
sampled in a spike (13.3 ms). The variable part stays in the emulated network, is recorded
(`own_spread_ms`: median minus floor) and is shown by the setup check: what the labs' flows see
on top of the configured delays in this place.

How it is measured: ping over the path with its emulation reduced to its configured delay,
rate and queue (no loss or jitter; pfifo where there is no netem), PING_COUNT pings, the lowest
minus the configured RTT and the ping's own transmission at the path's rate (ping_wire_ms: a real
link of that rate takes it too, and the RTT check expects it). Why with the rate: under TCG a
path pings 0.3-0.7 ms faster with netem's rate than with its delay alone (seen on all four of
Lab 2's paths, 2026-11-25: the floor taken out over the delay alone was then too much, and the
RTT check refused a correct VM at -0.6 ms), so the place is measured as the RTT check and the
labs' flows will cross it. Why not ping with the delay set to 0: netem sends an undelayed packet
at once but a delayed one from a timer, and an emulated guest's timers fire late, so a place may
add more on a delayed path than at 0 ms (TCG here: 1.1 ms at 0 ms on a quiet host, 1-2 ms on a
20 ms path, ~2 ms on an 80 ms one). Loss and jitter are left out: they only blur the figure.
One measurement per network: the RTT check that follows judges the lowest RTT of its own pings
against the configured RTT, and refuses if the host's load has moved the floor (a path's set
above its band is pinged once more first: verify.check_paths says why).

Every path is pinged side by side with the others (ping_paths), here and in the RTT check alike:
the paths are separate links, so one path's pings do not queue behind another's, and in an
emulated guest four paths one after another cost 16 s twice per network. Side by side, a ping
that finds the vCPU awake (another path's packet just handled) is answered sooner: -0.37 +- 0.12 ms
against the same path alone under TCG (n = 16, 2026-11-28), which is what the labs' packets see,
every path loaded at once. Each path pings at its own interval (0.2 s, then PING_DRIFT_S shorter
per path, so that the measurement takes no longer than one path's): with one interval for all,
the paths' pings kept the phase they started with for all 20 pings, so whether a path's pings
found the vCPU awake was one draw per measurement, and the lowest of 20 drew it too (Lab 2's
setup check, ten attempts side by side at 0.2 s: the 40 ms path's floor 0.89-1.69 ms, one
refusal at -1.01 ms against the RTT taken out). Drifting apart, each path's 20 pings meet the
others at every phase. Results: benchmarks/results/vm_run_overhead.md ("vmspeed4") and
benchmarks/results/vm_setup_checks.md.

In the manifest: `network.paths[].own_latency` (what was measured, the configured and the
applied netem delays) and `network.own_latency_method` (this paragraph in one line).
"""

from __future__ import annotations

import re
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from ..core.errors import ExperimentFailed
from .links import LinkSpec

RTT_TOLERANCE = 0.02  # the RTT check's band: 2% of the configured RTT (rtt_slack_ms)


def rtt_slack_ms(configured_ms: float, tolerance: float = RTT_TOLERANCE) -> float:
    """How far a ping RTT may be from the configured RTT (0.5 ms: ping's own resolution on a 0 ms path)."""
    return max(tolerance * configured_ms, 0.5)

METHOD = ("ping over each path (all paths side by side, drifting in phase) with its configured netem delay, rate and queue (no jitter or loss), the lowest "
          "of 20, minus the configured RTT and the ping's transmission at the rate (the path's floor); the lowest over the paths of its kind (delayed or not) "
          "is the place's floor, and above 0.25 ms it is taken out of netem's delay, half per direction, never below 0; the median minus the path's floor "
          "is recorded as the place's spread")
PING_COUNT = 20  # 4 s a path at 0.2 s: the lowest of 20 is within ~0.1 ms of the floor under TCG
PING_STAGGER_S = 0.05  # side by side, each path's pings this long after the one before: interleaved, never in step
PING_DRIFT_S = 0.013  # each path's interval this much shorter than the one before: 20 pings drift a whole 0.2 s apart
OWN_LATENCY_FLOOR_MS = 0.25  # what a place may add without being taken out (native, UML: ~0.05 ms)
PING_FRAME_BYTES = 98  # ping's 56 data bytes + ICMP 8 + IPv4 20 + Ethernet 14, as qdiscs count a packet


def ping_rtt(net, src: str, dst: str, path: str, count: int = PING_COUNT, interval: float = 0.2) -> dict:
    """Ping dst's address on `path` from src: min, median and max RTT in ms, the replies, and every
    reply's RTT (`rtts`, in order)."""
    out = net.run(src, ["ping", "-n", "-c", str(count), "-i", f"{interval:g}", "-W", "2", net.address(dst, path)])
    rtts = [float(x) for x in re.findall(r"time=([\d.]+) ms", out.stdout)]
    if not rtts:
        raise ExperimentFailed(f"ping over path {path} got no replies:\n{out.stdout}")
    return _ping_summary(rtts)


def _ping_summary(rtts: list[float], sets: int = 1) -> dict:
    return {"min_ms": min(rtts), "median_ms": statistics.median(rtts), "max_ms": max(rtts), "replies": len(rtts),
            "sets": sets, "rtts": rtts}


def more_pings(first: dict, then: dict) -> dict:
    """Two sets of one path's pings as one sample (the RTT check's second set: verify.check_paths)."""
    return _ping_summary(first["rtts"] + then["rtts"], first.get("sets", 1) + then.get("sets", 1))


def ping_paths(net, paths, count: int = PING_COUNT, interval: float = 0.2) -> dict[str, dict]:
    """ping_rtt on every path of `paths` (NetPath: a -> b) side by side, each started
    PING_STAGGER_S after the one before and pinging PING_DRIFT_S more often (the module's
    docstring says why; never more often than every interval / 2): {path name: result}."""
    def one(i: int, p) -> dict:
        time.sleep(i * PING_STAGGER_S)
        return ping_rtt(net, p.a, p.b, p.name, count, round(max(interval / 2, interval - i * PING_DRIFT_S), 3))

    with ThreadPoolExecutor(max_workers=max(1, len(paths))) as pool:  # each thread waits on its ping process
        futures = [pool.submit(one, i, p) for i, p in enumerate(paths)]
        return {p.name: f.result() for p, f in zip(paths, futures)}


def ping_wire_ms(link: LinkSpec, reverse: LinkSpec, netem: bool) -> float:
    """How long the path's rate takes to send one ping and its reply: part of the emulated network
    (a real link of that rate takes it too), so the RTT check expects it (0.31 ms at 5 Mbit/s).
    netem's rate delays every packet by its own transmission time; tbf sends a lone small packet
    at once from its bucket."""
    if not netem:
        return 0.0
    return sum(PING_FRAME_BYTES * 8 / s.rate_bps * 1e3 for s in (link, reverse) if s.rate_bps)


def measuring_link(spec: LinkSpec) -> LinkSpec:
    """What a path is pinged over to measure the place's own latency: its delay, rate and queue
    (no loss or jitter)."""
    return LinkSpec(delay_s=spec.delay_s, rate_bps=spec.rate_bps, queue_pkts=spec.queue_pkts)


def rtt_ms(link: LinkSpec, reverse: LinkSpec) -> float:
    return (link.delay_s + reverse.delay_s) * 1e3


def compensate(link: LinkSpec, reverse: LinkSpec, own_rtt_ms: float) -> tuple[LinkSpec, LinkSpec]:
    """The links netem applies: the configured ones, with `own_rtt_ms` taken out of their delays
    (half per direction, never below 0) when it is more than OWN_LATENCY_FLOOR_MS."""
    if own_rtt_ms <= OWN_LATENCY_FLOOR_MS:
        return link, reverse
    half = own_rtt_ms / 2 / 1e3
    return (replace(link, delay_s=max(0.0, link.delay_s - half)),
            replace(reverse, delay_s=max(0.0, reverse.delay_s - half)))


@dataclass(frozen=True)
class OwnLatency:
    """One path's own latency in this place, as measured when its network came up."""

    path: str
    ping: dict  # ping_rtt over the path's delay alone
    measured_over_ms: float  # what the ping would take with nothing of the place's: configured RTT + ping_wire_ms
    place_floor_ms: float | None = None  # the lowest rtt_ms of the network's paths of its kind (place_floors)

    @property
    def rtt_ms(self) -> float:
        """The least the place added to a round trip on this path while it was measured: its floor
        (may be slightly negative: noise)."""
        return self.ping["min_ms"] - self.measured_over_ms

    @property
    def taken_ms(self) -> float:
        """What is taken out of the path's netem delay: the place's floor over all its paths of the
        same kind (place_floors says why), or the path's own where that is all there is."""
        return self.rtt_ms if self.place_floor_ms is None else min(self.rtt_ms, self.place_floor_ms)

    @property
    def spread_ms(self) -> float:
        """What the place adds beyond its floor on a typical round trip (median minus lowest): left
        in the emulated network, recorded and shown."""
        return self.ping["median_ms"] - self.ping["min_ms"]

    def netem_links(self, link: LinkSpec, reverse: LinkSpec) -> tuple[LinkSpec, LinkSpec]:
        return compensate(link, reverse, self.taken_ms)

    def record(self, link: LinkSpec, reverse: LinkSpec, tolerance: float = RTT_TOLERANCE) -> dict:
        """For the manifest: what was measured, the configured and the applied netem delays."""
        net_link, net_reverse = self.netem_links(link, reverse)
        configured, applied = rtt_ms(link, reverse), rtt_ms(net_link, net_reverse)
        slack = rtt_slack_ms(configured, tolerance)
        return {
            "ping_ms": {k: round(v, 3) for k, v in self.ping.items() if k in ("min_ms", "median_ms", "max_ms", "replies")},
            "measured_over_ms": round(self.measured_over_ms, 3),
            "own_rtt_ms": round(self.rtt_ms, 3),
            "taken_out_ms": round(self.taken_ms, 3),  # the place's floor over its paths (place_floors)
            "own_spread_ms": round(self.spread_ms, 3),
            "slack_ms": round(slack, 3),
            "compensated": self.taken_ms > OWN_LATENCY_FLOOR_MS,
            "configured_delay_ms": {"link": _ms(link.delay_s), "reverse": _ms(reverse.delay_s)},
            "netem_delay_ms": {"link": _ms(net_link.delay_s), "reverse": _ms(net_reverse.delay_s)},
            "uncompensated_ms": round(self.taken_ms - (configured - applied), 3),
        }

    def summary(self, link: LinkSpec, reverse: LinkSpec) -> str:
        """One line for the log."""
        r = self.record(link, reverse)
        own = (f"path {self.path}: the place adds at least {self.rtt_ms:.2f} ms to a round trip "
               f"(median {self.rtt_ms + self.spread_ms:.2f})")
        if not r["compensated"]:
            return f"{own} (no more than {OWN_LATENCY_FLOOR_MS} ms: netem delays as configured)"
        d = r["netem_delay_ms"]
        configured = rtt_ms(link, reverse)
        taken = configured - (d["link"] + d["reverse"])
        text = own
        if taken > 0:
            text += (f", {taken:.2f} ms of it taken out of netem's delay: {d['link']:g} + {d['reverse']:g} ms "
                     f"for {configured:g} ms configured")
        if r["uncompensated_ms"] > r["slack_ms"]:
            text += (f"; {r['uncompensated_ms']:.2f} ms cannot be (the path's configured delay is shorter), so the "
                     "RTT check will refuse this place for this path")
        return text

    def cause(self, link: LinkSpec, reverse: LinkSpec, measured_ms: float, wire_ms: float = 0.0) -> str | None:
        """Why the RTT check saw `measured_ms` if the place's own latency explains it, else None
        (a ping faster than netem's applied delays allow: netem's delay is missing, not the place's
        fault). `wire_ms`: the ping's own transmission time at the path's rate (ping_wire_ms)."""
        r = self.record(link, reverse)
        configured = rtt_ms(link, reverse)
        applied = rtt_ms(*self.netem_links(link, reverse))
        now = measured_ms - wire_ms - applied  # what the place adds now, at its floor
        if measured_ms <= configured:
            if not r["compensated"] or now < 0:
                return None
            return (f"the place's own latency: at least {self.taken_ms:.2f} ms when the network came up, taken out of "
                    f"netem's delay, and {now:.2f} ms now: it adds less than it did (a host that was busier then?)")
        ping = f"ping over the path without loss or jitter: lowest {self.ping['min_ms']:.2f} ms for {self.measured_over_ms:.2f} ms"
        if r["uncompensated_ms"] > r["slack_ms"]:
            return (f"the place's own latency is the cause: it adds at least {self.rtt_ms:.2f} ms to every round trip "
                    f"on this path ({ping}), more than the configured {configured:g} ms can give up "
                    f"(netem delay {r['netem_delay_ms']['link']:g} + {r['netem_delay_ms']['reverse']:g} ms); "
                    "this place cannot emulate so short a path")
        done = ("taken out of netem's delay" if r["compensated"]
                else f"no more than {OWN_LATENCY_FLOOR_MS} ms, so netem's delay was left as configured")
        return (f"the place's own latency: at least {self.rtt_ms:.2f} ms when the network came up ({ping}), {done}; "
                f"its floor is now {now:.2f} ms (a busier host?)")


def place_floors(measured: dict[str, "OwnLatency"], delayed: dict[str, bool]) -> dict[str, "OwnLatency"]:
    """Each path's measurement with the place's floor over the paths of its kind (`delayed`: the
    path has a netem delay, whose timer adds its own share; an undelayed packet is sent at once).
    The place adds nearly the same to every path; a path's lowest of 20 pings is one draw of it,
    and under TCG a draw sometimes stays high for the whole measurement (a 20 ms path's floor read
    1.59 ms when its others read 0.89-1.39, and 0.87 at the setup check that followed: 0.71 ms had
    been taken out too many, and the check refused a correct place; over nine other networks Lab
    2's 20-80 ms paths' floors averaged 0.80-1.01 ms). Taken out over the paths, the lowest is what
    every path is sure to have: no path's packets cross faster than configured from a high draw
    on it, and a path that does add more keeps it, seen by the RTT check."""
    floors = {}
    for name, own in measured.items():
        floors[delayed[name]] = min(floors.get(delayed[name], own.rtt_ms), own.rtt_ms)
    return {name: replace(own, place_floor_ms=floors[delayed[name]]) for name, own in measured.items()}


def _ms(seconds: float) -> float:
    return round(seconds * 1e3, 3)
