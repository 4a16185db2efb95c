"""Emulated link properties and the qdiscs that impose them.

A link spec is written the way `tc` users write it, as comma-separated fields:

    rate=100mbit,delay=40ms,jitter=1ms,loss=0.5%,queue=auto

Every field is optional. `delay` is one-way; the topology applies a path's spec on the emulator's
egress in both directions, so `delay=40ms` gives an 80 ms round trip. `queue` is the bottleneck
buffer in packets; `auto` means one bandwidth-delay product of the path (at least 100 packets).

`red=50%` makes the queue RED's instead of a FIFO's (a token bucket at the rate, RED inside it): a
packet is dropped with a probability that grows with the average queue, up to red's value at its
upper threshold and every packet above it, so a link loses more the more it is offered (Lab 2's
load-dependent medium). It needs a rate and no delay, jitter or loss (netem's own rate keeps its
queue where RED cannot see it); `qdiscs()` gives both qdiscs.

With netem available, one netem qdisc does everything (delay, jitter, loss, rate, queue). Its
`limit` counts every packet it holds, including those still "on the wire" in the delay line, so the
limit is the queue plus the packets the delay line holds at full rate (netem's default of 1000
packets would drop at high bandwidth-delay products). Without netem (a stock host kernel without
sch_netem), only rate and queue can be emulated, with tbf.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..core.errors import EnvironmentProblem, UsageError

WIRE_BYTES = 1514  # a full-size Ethernet frame as qdiscs count it (skb->len with the L2 header)
TCP_PAYLOAD = 1448  # bytes of data in a full-size segment with TCP timestamps
MIN_QUEUE = 100

_RATE_UNITS = {"bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}
FORMS = {
    "rate": "a number and bit|kbit|mbit|gbit, e.g. rate=100mbit",
    "delay": "a number and us|ms|s, e.g. delay=40ms (one-way, >= 0)",
    "jitter": "a number and us|ms|s, e.g. jitter=2ms (>= 0, needs a delay)",
    "loss": "a percentage from 0% to 100%, e.g. loss=0.5%",
    "queue": "a number of packets (> 0) or auto, e.g. queue=auto or queue=500",
    "red": "RED's drop probability at its upper threshold, a percentage above 0, e.g. red=50% "
           "(with a rate; no delay, jitter or loss)",
}
# RED's thresholds as fractions of the queue (Floyd's max = 3 min; RED drops every packet above max)
RED_MIN, RED_MAX = 1 / 6, 1 / 2


@dataclass(frozen=True)
class LinkSpec:
    rate_bps: float | None = None  # None: not rate limited
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0  # fraction of packets dropped at random, 0..1
    queue_pkts: int | None = None  # None: auto (one BDP)
    red: float = 0.0  # RED's max_p (0..1]; 0: a FIFO queue

    # ------------------------------------------------------------ parsing

    @classmethod
    def parse(cls, text: str) -> "LinkSpec":
        """Parse `rate=100mbit,delay=40ms,...`; raises UsageError naming the bad field."""
        if isinstance(text, LinkSpec):
            return text
        values: dict = {}
        for part in filter(None, (p.strip() for p in str(text).split(","))):
            key, sep, value = part.partition("=")
            key, value = key.strip().lower(), value.strip()
            if not sep or key not in FORMS:
                raise UsageError(f"link spec {text!r}: unknown field {part!r}; fields are "
                                 + "; ".join(f"{k}= {v}" for k, v in FORMS.items()))
            if key in values:
                raise UsageError(f"link spec {text!r}: {key} given twice")
            values[key] = _parse_field(key, value, text)
        spec = cls(**{_ATTR[k]: v for k, v in values.items()})
        if spec.jitter_s and not spec.delay_s:
            raise UsageError(f"link spec {text!r}: jitter needs a delay ({FORMS['jitter']})")
        if spec.red and (spec.rate_bps is None or spec.needs_netem):
            raise UsageError(f"link spec {text!r}: red needs a rate and no delay, jitter or loss ({FORMS['red']})")
        return spec

    def __str__(self) -> str:
        parts = []
        if self.rate_bps is not None:
            parts.append(f"rate={_fmt_rate(self.rate_bps)}")
        parts.append(f"delay={_fmt_time(self.delay_s)}")
        if self.jitter_s:
            parts.append(f"jitter={_fmt_time(self.jitter_s)}")
        if self.loss:
            parts.append(f"loss={self.loss * 100:g}%")
        parts.append(f"queue={self.queue_pkts if self.queue_pkts else 'auto'}")
        if self.red:
            parts.append(f"red={self.red * 100:g}%")
        return ",".join(parts)

    # ------------------------------------------------------------ derived

    @property
    def needs_netem(self) -> bool:
        return bool(self.delay_s or self.jitter_s or self.loss)

    def queue_for(self, rtt_s: float) -> int:
        """Queue in packets: as given, or one bandwidth-delay product of a path with this RTT."""
        if self.queue_pkts:
            return self.queue_pkts
        if self.rate_bps is None:
            return 1000
        return max(MIN_QUEUE, math.ceil(self.rate_bps * rtt_s / 8 / WIRE_BYTES))

    def netem_limit(self, rtt_s: float) -> int:
        """netem's limit: the queue plus what the delay line holds at full rate."""
        if self.rate_bps is None:
            return max(10000, self.queue_for(rtt_s))
        in_flight = math.ceil(self.rate_bps * (self.delay_s + 3 * self.jitter_s) / 8 / WIRE_BYTES)
        return self.queue_for(rtt_s) + in_flight

    # ------------------------------------------------------------ tc commands

    def qdiscs(self, rtt_s: float, netem: bool) -> list[list[str]]:
        """The qdiscs that impose this spec, each as the arguments after `tc qdisc replace dev DEV`:
        one root qdisc (qdisc_args), or with `red` a token bucket (handle 1:) and RED as its child."""
        if not self.red:
            return [["root", *self.qdisc_args(rtt_s, netem)]]
        queue = self.queue_for(rtt_s)
        lo = max(2, round(queue * RED_MIN))
        hi = max(lo + 1, round(queue * RED_MAX))
        rate = _fmt_rate(self.rate_bps)
        bucket = LinkSpec(rate_bps=self.rate_bps, queue_pkts=queue).qdisc_args(rtt_s, netem=False)
        return [["root", "handle", "1:", *bucket],
                ["parent", "1:1", "handle", "10:", "red", "limit", str(queue * WIRE_BYTES),
                 "min", str(lo * WIRE_BYTES), "max", str(hi * WIRE_BYTES), "avpkt", str(WIRE_BYTES),
                 "burst", str(math.ceil((2 * lo + hi) / 3)), "probability", f"{self.red:g}", "bandwidth", rate]]

    def qdisc_args(self, rtt_s: float, netem: bool) -> list[str]:
        """Arguments after `tc qdisc replace dev DEV root` that impose this spec (not RED's: qdiscs)."""
        if self.red:
            raise UsageError(f"link {self}: RED is two qdiscs, LinkSpec.qdiscs() gives both")
        if netem:
            args = ["netem"]
            if self.delay_s or self.jitter_s:
                args += ["delay", _fmt_time(self.delay_s)]
                if self.jitter_s:
                    args += [_fmt_time(self.jitter_s)]
            if self.loss:
                args += ["loss", f"{self.loss * 100:g}%"]
            if self.rate_bps is not None:
                args += ["rate", _fmt_rate(self.rate_bps)]
            return args + ["limit", str(self.netem_limit(rtt_s))]
        if self.needs_netem:
            raise EnvironmentProblem(
                f"link {self} needs netem (delay, jitter or loss) but this kernel has no sch_netem: "
                "install it (`apt-get install linux-modules-extra-$(uname -r)` then `modprobe sch_netem`) "
                "or run the lab in the UML kernel (`--where uml`)"
            )
        if self.rate_bps is None:
            return ["pfifo", "limit", str(self.queue_for(rtt_s))]
        # tbf needs a bucket of at least one timer tick of traffic (4 ms at HZ=250).
        burst = max(2 * WIRE_BYTES, math.ceil(self.rate_bps / 8 * 0.004))
        return ["tbf", "rate", _fmt_rate(self.rate_bps), "burst", str(burst),
                "limit", str(self.queue_for(rtt_s) * WIRE_BYTES)]


_ATTR = {"rate": "rate_bps", "delay": "delay_s", "jitter": "jitter_s", "loss": "loss", "queue": "queue_pkts",
         "red": "red"}
_NUM = r"(\d+(?:\.\d*)?|\.\d+)"


def _parse_field(key: str, value: str, text: str):
    def bad(why: str = ""):
        return UsageError(f"link spec {text!r}: bad {key} {value!r}{why}; expected {FORMS[key]}")

    v = value.lower().replace(" ", "")
    if key == "rate":
        m = re.fullmatch(_NUM + r"([a-z]+)", v)
        if not m:
            raise bad()
        if m.group(2) not in _RATE_UNITS:
            hint = " (tc's 'bps' units mean bytes per second; write mbit for megabits)" if "bps" in m.group(2) else ""
            raise bad(hint)
        rate = float(m.group(1)) * _RATE_UNITS[m.group(2)]
        if rate <= 0:
            raise bad(" (must be positive)")
        return rate
    if key in ("delay", "jitter"):
        if v.startswith("-"):
            raise bad(" (negative)")
        m = re.fullmatch(_NUM + r"(us|ms|s)", v)
        if not m:
            raise bad()
        return float(m.group(1)) * _TIME_UNITS[m.group(2)]
    if key == "loss":
        m = re.fullmatch(r"(-?" + _NUM + r")%", v)
        if not m:
            raise bad()
        pct = float(m.group(1))
        if not 0 <= pct <= 100:
            raise bad(" (out of range)")
        return pct / 100
    if key == "red":
        m = re.fullmatch(_NUM + r"%", v)
        if not m or not 0 < float(m.group(1)) <= 100:
            raise bad()
        return float(m.group(1)) / 100
    if key == "queue":
        if v == "auto":
            return None
        if not v.isdigit() or int(v) <= 0:
            raise bad()
        return int(v)
    raise AssertionError(key)


def _fmt_rate(bps: float) -> str:
    for unit, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bps >= mult and (bps / mult) == round(bps / mult, 6):
            return f"{bps / mult:g}{unit}"
    return f"{bps:g}bit"


def _fmt_time(s: float) -> str:
    us = round(s * 1e6)
    if us % 1000 == 0:
        return f"{us // 1000}ms"
    return f"{us}us"
