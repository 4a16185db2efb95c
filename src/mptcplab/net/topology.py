"""Emulated multipath networks in network namespaces.

Hosts are namespaces. Every path is one subnet, 10.i.0.0/24, from host `a` (10.i.0.1) to host `b`
(10.i.0.2) through a bridge in the emulator namespace: a transparent link emulator inserted in a
cable, as in Kato et al.'s Figure 3. Link emulation (netem, or tbf without netem) sits on the
emulator's bridge ports, on egress in both directions, never on an end host: netem on a sender
interacts with TCP Small Queues and hides local loss from TCP.

Why bridged, not routed: an MPTCP subflow bound to a path's interface (`dev`) and aimed at the
receiver's *first* address must reach the receiver over that path. On a bridge the receiver
itself answers ARP for any of its addresses, so the subflow stays on its path in both
directions with plain connected routes; a routing emulator would need policy routing, and
without it the subflow silently shares the first path. rp_filter is off on the hosts because such
a subflow arrives on one interface addressed to the other's address, which is what multipath is.

    topo = Topology("lab1", hosts=("snd", "rcv"),
                    paths=[NetPath("fast", "snd", "rcv", "rate=100mbit"),
                           NetPath("slow", "snd", "rcv", "rate=100mbit,delay=40ms")],
                    mptcp_subflows=2)
    print(topo.script())          # the exact commands, to read and replay
    with topo.up(rundir) as net:  # built, recorded, and always torn down
        ...

Once built, each path's own latency in this place is measured and, where it is more than the RTT
check's slack (a VM without KVM), taken out of netem's delay: see latency.py.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import time
import uuid
from dataclasses import dataclass, replace

from . import latency, mptcpconf
from ..core import kernel, log, netns, process
from ..core.errors import EnvironmentProblem, UsageError
from ..core.paths import PREFIX
from ..core.state import TRACKER, kill_process_group, remove_namespace
from .links import LinkSpec

_log = log.get("topology")
EMULATOR = "emu"
_NAME = re.compile(r"[a-z][a-z0-9]{0,9}")
# Sysctls every host gets.
# - tcp_no_metrics_save: without it repeated runs in one namespace are not independent (TCP caches
#   ssthresh/RTT per destination and starts the next connection from them).
# - tcp_min_tso_segs=64: without it the send buffer does not bound what TCP keeps in flight over a
#   delayed path. tcp_sendmsg_locked() checks sk_wmem_queued < sk_sndbuf only before allocating a
#   new skb; it tops up the tail skb without a check. After each full skb it calls tcp_push_one(),
#   which sends one TSO chunk sized to ~1 ms at the pacing rate (2-8 segments at these rates), so
#   a remainder stays in the tail, is topped up, and so on while cwnd has room. TSQ would stop it,
#   but netem orphans every skb it delays (as a real NIC frees it long before the far end), so
#   in-flight data follows cwnd, not the buffer: 947 segments against 64 KiB in UML, 73-238
#   against 32 KiB on this host's 6.18 behind a routed tbf hop. 64 >= the 45 segments of a 64 KiB
#   skb, so each push sends the whole tail and the next write meets the check. See
#   site/setup/uml.md ("The send buffer") for the evidence.
KIT_MIN_TSO_SEGS = 64  # every host's net.ipv4.tcp_min_tso_segs: with it physics' (U) holds
BASE_SYSCTLS = {"net.ipv4.tcp_no_metrics_save": "1", "net.ipv4.tcp_min_tso_segs": str(KIT_MIN_TSO_SEGS)}
# Read back into the manifest for every host, whether set or not.
REPORTED_SYSCTLS = (
    "net.ipv4.tcp_wmem", "net.ipv4.tcp_rmem", "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_notsent_lowat", "net.ipv4.tcp_no_metrics_save", "net.ipv4.tcp_min_tso_segs", "net.ipv4.tcp_sack",
    "net.ipv4.tcp_timestamps", "net.core.wmem_max", "net.core.rmem_max",
    "net.mptcp.enabled", "net.mptcp.scheduler", "net.mptcp.minrtt_rp", "net.mptcp.stale_loss_cnt",
)

# Switches of a network (`switches`: each lab's [network] table, `--set network.KEY=VALUE`), each a
# control of the kit's own choices against the paper's hosts (issue 37), read back from the kernel:
# - min_tso_segs: every host's net.ipv4.tcp_min_tso_segs (the kit's 64; the kernel's own is 2).
# - offloads: TSO, GSO and GRO on the end hosts' interfaces, as on real NICs. The emulator's ports
#   keep them off, but a veth hands the sender's TSO skbs over whole, so the emulator's qdiscs
#   delay, rate-limit and drop a sender's 64 KiB skb as one packet.
# - sender_shaper: each path's a->b rate and queue imposed by a token bucket (tbf) on its `a` host's
#   own interface instead of netem in the emulator, which keeps that direction's delay (and loss)
#   only: the paper's hosts limited their NICs with tc and an emulator box added the delay. Skbs
#   then wait in the sender's own qdisc, holding socket memory, so TCP Small Queues and the
#   sender's qdisc act as on such a host (netem in the emulator frees each skb once it leaves the
#   sender). The ACK direction keeps its emulated link.
SWITCHES = {"min_tso_segs": KIT_MIN_TSO_SEGS, "offloads": False, "sender_shaper": False}


def switches(table: dict | None) -> dict:
    """A lab's [network] table -> Topology's keyword arguments (defaults for what it leaves out)."""
    table = dict(table or {})
    unknown = sorted(set(table) - set(SWITCHES))
    if unknown:
        raise UsageError(f"network: unknown switch(es) {', '.join(unknown)}; the switches are {', '.join(SWITCHES)}")
    out = {**SWITCHES, **table}
    if isinstance(out["min_tso_segs"], bool) or not isinstance(out["min_tso_segs"], int) or out["min_tso_segs"] < 1:
        raise UsageError(f"network.min_tso_segs = {out['min_tso_segs']!r}: a whole number of segments >= 1 "
                         f"(the kit's {KIT_MIN_TSO_SEGS}, the kernel's own 2)")
    for key in ("offloads", "sender_shaper"):
        if not isinstance(out[key], bool):
            raise UsageError(f"network.{key} = {out[key]!r}: true or false")
    return out


# The offloads the kit turns off (commands()) and reads back into the manifest.
OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "large-receive-offload", "rx-gro-hw", "rx-gro-list", "rx-udp-gro-forwarding")


def port_facing(path: str, side: str = "b") -> str:
    """The emulator's device on `path` facing host side `side` (its bridge port there): its egress
    carries the traffic toward that host, shaped and sampled there, its ingress what that host
    sends. port_facing(p) is where the a->b (data) direction leaves the emulator."""
    return f"{side}-{path}"


@dataclass
class NetPath:
    """One path from host `a` to host `b` through the emulator.

    `link` shapes the a->b direction (egress toward b), `reverse` the b->a direction
    (default: the same as `link`). Hosts on the `b` side are the listeners of MPTCP connections.
    """

    name: str
    a: str
    b: str
    link: LinkSpec | str = ""
    reverse: LinkSpec | str | None = None

    def __post_init__(self) -> None:
        self.link = LinkSpec.parse(self.link)
        self.reverse = self.link if self.reverse is None else LinkSpec.parse(self.reverse)

    @property
    def rtt_s(self) -> float:
        return self.link.delay_s + self.reverse.delay_s


@dataclass
class Bottleneck:
    """One link that the a->b traffic of several paths crosses together (one queue, one rate),
    before each path's own emulation (its delay). E.g. Lab 2's shared-bottleneck variant: every
    subflow and the cross traffic through one 5 Mbit/s link, where RFC 6356's coupled algorithms
    are meant to take what one TCP flow would.

    Built in the emulator as an ifb device: each path's port facing its `a` host redirects what
    it receives (tc ingress, mirred) to the ifb, whose root qdisc is the bottleneck; the ifb hands
    each packet back to the port it came from, which bridges it on into its path. The b->a
    direction (ACKs) stays on each path alone."""

    name: str
    link: LinkSpec | str
    paths: tuple[str, ...]

    def __post_init__(self) -> None:
        self.link = LinkSpec.parse(self.link)
        self.paths = tuple(self.paths)

    @property
    def dev(self) -> str:
        return f"ifb-{self.name}"


@dataclass
class Cmd:
    argv: list[str]
    why: str = ""

    def __str__(self) -> str:
        return shlex.join(self.argv)


def batches(cmds: list[Cmd]) -> list[tuple[list[str], list[Cmd]]]:
    """Consecutive `ip`/`tc` commands of one namespace as one `ip|tc [-n NS] -batch -` each, in
    order: ([the batch's command line], [its commands]). Every process started costs a second or
    more in an emulated CPU; a network of four paths is 94 commands. Anything else runs alone."""
    out: list[tuple[list[str], list[Cmd]]] = []
    for c in cmds:
        a = c.argv
        if a[0] in ("ip", "tc") and len(a) > 3 and a[1] == "-n":
            head = [a[0], "-n", a[2], "-batch", "-"]
        elif a[0] in ("ip", "tc") and not a[1].startswith("-"):
            head = [a[0], "-batch", "-"]
        else:
            head = a
        if out and out[-1][0] == head and head[-1] == "-":
            out[-1][1].append(c)
        else:
            out.append((head, [c]))
    return out


def batch_lines(head: list[str], cmds: list[Cmd]) -> str:
    """What `head` (a batches() command line) reads: each command without the program and its -n."""
    skip = len(head) - 2  # "ip -batch -" -> 1, "ip -n NS -batch -" -> 3
    return "".join(shlex.join(c.argv[skip:]) + "\n" for c in cmds)


class Topology:
    """`sysctls` per host (namespace); `kernel_limits`: limits of the kernel itself (its root
    namespace, the whole kernel of the place) that the network needs at least, such as
    net.core.wmem_max, which caps SO_SNDBUF in every namespace and is read-only inside one
    (net/core/sysctl_net_core.c, sysctl_core_net_init).
    Like every setting, they are among the topology's commands and in the manifest
    (`kernel_limits`: needed, found, now); each is raised where the kernel has less, never lowered,
    and put back when the network is torn down."""

    def __init__(self, name: str, hosts, paths: list[NetPath], sysctls: dict | None = None,
                 mptcp_subflows: int | None = None, netem: bool | None = None,
                 kernel_limits: dict[str, int] | None = None, bottleneck: Bottleneck | None = None,
                 min_tso_segs: int = KIT_MIN_TSO_SEGS, offloads: bool = False, sender_shaper: bool = False) -> None:
        self.name = name
        self.min_tso_segs, self.offloads, self.sender_shaper = min_tso_segs, offloads, sender_shaper  # SWITCHES
        self.hosts = tuple(hosts)
        self.paths = list(paths)
        self.bottleneck = bottleneck
        self.sysctls = {h: dict(v) for h, v in (sysctls or {}).items()}
        self.kernel_limits = {k: int(v) for k, v in (kernel_limits or {}).items()}
        self._limits_found: dict[str, int | None] | None = None  # read once, before any is raised
        self.mptcp_subflows = mptcp_subflows
        self.netem = netem  # None: decided when built (is sch_netem usable here?)
        # path name -> the place's own latency on it, measured when the network came up (up()).
        self.own_latency: dict[str, latency.OwnLatency] = {}
        self.run_id = uuid.uuid4().hex[:6]
        self._validate()

    # ------------------------------------------------------------ validation

    def _validate(self) -> None:
        for h in self.hosts:
            if not _NAME.fullmatch(h) or h == EMULATOR:
                raise UsageError(f"host name {h!r}: use 1-10 lowercase letters/digits starting with a letter"
                                 f" (not {EMULATOR!r})")
        if len(set(self.hosts)) != len(self.hosts):
            raise UsageError(f"host names repeat: {self.hosts}")
        if not self.paths:
            raise UsageError("a topology needs at least one path")
        seen = set()
        for p in self.paths:
            if not _NAME.fullmatch(p.name) or p.name in seen:
                raise UsageError(f"path name {p.name!r}: use unique 1-10 lowercase letters/digits")
            seen.add(p.name)
            for end in (p.a, p.b):
                if end not in self.hosts:
                    raise UsageError(f"path {p.name!r}: unknown host {end!r}; hosts are {', '.join(self.hosts)}")
            if p.a == p.b:
                raise UsageError(f"path {p.name!r} joins host {p.a!r} to itself")
        if self.bottleneck is not None:
            b = self.bottleneck
            if not _NAME.fullmatch(b.name) or not b.paths or not set(b.paths) <= seen:
                raise UsageError(f"bottleneck {b.name!r}: a name like a path's and some of the paths "
                                 f"{', '.join(sorted(seen))} (got {', '.join(b.paths) or 'none'})")
        for h in self.sysctls:
            if h not in self.hosts:
                raise UsageError(f"sysctls for unknown host {h!r}; hosts are {', '.join(self.hosts)}")
        if self.sender_shaper:
            unrated = [p.name for p in self.paths if p.link.rate_bps is None]
            if unrated:
                raise UsageError(f"sender_shaper: path(s) {', '.join(unrated)} have no rate for the sender to shape")
            red = [p.name for p in self.paths if p.link.red]
            if red:  # the shaper's token bucket takes the rate and queue, not RED's drops
                raise UsageError(f"sender_shaper: path(s) {', '.join(red)} have a RED queue, which stays in the emulator")
        if self.mptcp_subflows is not None:
            first = self.paths[0]
            usable = [p for p in self.paths if (p.a, p.b) == (first.a, first.b)]
            if not 1 <= self.mptcp_subflows <= len(usable):
                raise UsageError(f"mptcp_subflows={self.mptcp_subflows}: between 1 and the {len(usable)} "
                                 f"path(s) from {first.a} to {first.b}")

    # ------------------------------------------------------------ names

    def ns(self, host: str) -> str:
        if host != EMULATOR and host not in self.hosts:
            raise UsageError(f"unknown host {host!r}; hosts are {', '.join(self.hosts)}")
        return f"{PREFIX}-{self.run_id}-{host}"

    def path(self, name: str) -> NetPath:
        for p in self.paths:
            if p.name == name:
                return p
        raise UsageError(f"unknown path {name!r}; paths are {', '.join(p.name for p in self.paths)}")

    def address(self, host: str, path: str) -> str:
        """The address of `host` on `path` (10.i.0.1 on the a side, 10.i.0.2 on the b side)."""
        self.ns(host)  # unknown host -> UsageError naming the hosts
        i, p = self._index(path)
        if host == p.a:
            return f"10.{i}.0.1"
        if host == p.b:
            return f"10.{i}.0.2"
        raise UsageError(f"host {host!r} is not on path {path!r} ({p.a} -> {p.b})")

    def _index(self, path: str) -> tuple[int, NetPath]:
        p = self.path(path)
        return self.paths.index(p) + 1, p

    # ------------------------------------------------------------ commands

    def _netem(self) -> bool:
        if self.netem is None:
            self.netem = kernel.netem_usable()
        return self.netem

    def commands(self) -> list[Cmd]:
        """Every command that builds this topology, in order."""
        netem = self._netem()
        cmds: list[Cmd] = []
        for h in (*self.hosts, EMULATOR):
            ns = self.ns(h)
            cmds += [Cmd(["ip", "netns", "add", ns], f"host {h}" if h != EMULATOR else "the link emulator"),
                     Cmd(["ip", "-n", ns, "link", "set", "lo", "up"])]
            for scope in ("all", "default"):
                cmds.append(Cmd(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv4.conf.{scope}.rp_filter=0"]))
        emu = self.ns(EMULATOR)
        for i, p in enumerate(self.paths, 1):
            br = f"br-{p.name}"
            cmds += [Cmd(["ip", "-n", emu, "link", "add", br, "type", "bridge"],
                         f"path {p.name}: {p.a} <-> emulator <-> {p.b}, one subnet 10.{i}.0.0/24"),
                     Cmd(["ip", "-n", emu, "link", "set", br, "up"])]
            for side, host, last in (("a", p.a, 1), ("b", p.b, 2)):
                hns, edev = self.ns(host), port_facing(p.name, side)
                cmds += [
                    Cmd(["ip", "link", "add", p.name, "netns", hns, "type", "veth", "peer", "name", edev,
                         "netns", emu]),
                    Cmd(["ip", "-n", emu, "link", "set", edev, "master", br]),
                    Cmd(["ip", "-n", hns, "addr", "add", f"10.{i}.0.{last}/24", "dev", p.name]),
                    Cmd(["ip", "-n", hns, "link", "set", p.name, "up"]),
                    Cmd(["ip", "-n", emu, "link", "set", edev, "up"]),
                ]
                # Offloads off: captures then show the segments TCP really sent, not 64 KB blobs
                # (the offloads switch turns them on at the hosts, the emulator's ports keep them off).
                for ns_, dev in ((hns, p.name), (emu, edev)):
                    on = "on" if self.offloads and ns_ == hns else "off"
                    cmds.append(Cmd(["ip", "netns", "exec", ns_, "ethtool", "-K", dev, "tso", on, "gso", on,
                                     "gro", on]))
            cmds += self._link_cmds(p, netem)
            cmds += self._shaper_cmds(p)
        cmds += self._bottleneck_cmds(netem)
        for h in self.hosts:
            for key, value in {**self.base_sysctls(), **self.sysctls.get(h, {})}.items():
                cmds.append(Cmd(["ip", "netns", "exec", self.ns(h), "sysctl", "-qw", f"{key}={value}"]))
        cmds += self._mptcp_cmds()
        return self._kernel_limit_cmds() + cmds

    def limits_found(self) -> dict[str, int | None]:
        """Each kernel limit as the kernel had it before this topology raised it (read once)."""
        if self._limits_found is None:
            self._limits_found = {k: _root_sysctl(k) for k in self.kernel_limits}
        return self._limits_found

    def limits_raised(self) -> dict[str, tuple[int | None, int]]:
        """The kernel limits this topology raises: key -> (as found, as needed)."""
        found = self.limits_found()
        return {k: (found[k], need) for k, need in self.kernel_limits.items() if (found[k] or 0) < need}

    def _kernel_limit_cmds(self) -> list[Cmd]:
        return [Cmd(["sysctl", "-qw", f"{k}={need}"], f"the kernel's {k} is {was}: this network needs {need}")
                for k, (was, need) in self.limits_raised().items()]

    def base_sysctls(self) -> dict[str, str]:
        """The sysctls every host gets (BASE_SYSCTLS with this network's min_tso_segs switch)."""
        return {**BASE_SYSCTLS, "net.ipv4.tcp_min_tso_segs": str(self.min_tso_segs)}

    def netem_links(self, p: NetPath) -> tuple[LinkSpec, LinkSpec]:
        """The links the emulator applies on `p`: as configured, less the place's own latency on
        it where that was measured above the RTT check's slack (latency.py); with the sender
        shaper, the a->b link without its rate and queue (the sender's tbf has them)."""
        own = self.own_latency.get(p.name)
        link, reverse = own.netem_links(p.link, p.reverse) if own else (p.link, p.reverse)
        if self.sender_shaper:
            link = replace(link, rate_bps=None, queue_pkts=None)
        return link, reverse

    def _shaper_cmds(self, p: NetPath) -> list[Cmd]:
        """The sender shaper's token bucket on `p`'s `a` host interface: the path's rate and queue
        (LinkSpec's tbf: a bucket of 4 ms at the rate, the queue in bytes)."""
        if not self.sender_shaper:
            return []
        bucket = LinkSpec(rate_bps=p.link.rate_bps, queue_pkts=p.link.queue_pkts)
        return [Cmd(["tc", "-n", self.ns(p.a), "qdisc", "replace", "dev", p.name, "root",
                     *bucket.qdisc_args(p.rtt_s, netem=False)],
                    f"path {p.name}: the sender shaper, {bucket} on {p.a}'s own egress; the emulator adds the delay")]

    def _link_cmds(self, p: NetPath, netem: bool, links: tuple[LinkSpec, LinkSpec] | None = None,
                   why: str = "", previous: tuple[LinkSpec, LinkSpec] | None = None) -> list[Cmd]:
        """The path's two qdiscs: `links` (a->b, b->a) or the path's, compensated (netem_links);
        `previous`: what the path's qdiscs hold now, when they are being changed."""
        link, reverse = links or self.netem_links(p)
        emu = self.ns(EMULATOR)

        def said(configured: LinkSpec, applied: LinkSpec) -> str:
            if why or applied == configured:
                return why or str(configured)
            text = str(configured)
            if applied.delay_s != configured.delay_s:
                text += (f"; netem delay {applied.delay_s * 1e3:g} ms: the place's own latency on this path, "
                         f"{self.own_latency[p.name].rtt_ms:.2f} ms a round trip, taken out (latency.py)")
            if applied.rate_bps != configured.rate_bps:
                text += f"; its rate and queue on {p.a}'s own egress (sender_shaper), the rest here"
            return text

        def qdisc(dev: str, spec: LinkSpec, before: LinkSpec | None, text: str) -> list[Cmd]:
            cmds = []
            if netem and before is not None and before.rate_bps is not None and spec.rate_bps is None:
                # netem keeps a rate it is not told about: netem_change() sets q->rate only from
                # TCA_NETEM_RATE, which tc sends only with `rate`, so `replace` without one keeps the
                # old rate (the setup check's 20 Mbit/s held Lab 3's random-loss runs to 1,651
                # packets/s). The rate goes with its qdisc: a new one (the old one's queue is dropped).
                cmds.append(Cmd(["tc", "-n", emu, "qdisc", "del", "dev", dev, "root"],
                                f"{text}: the old qdisc's rate ({before.rate_bps / 1e6:g} Mbit/s) goes with it"))
            return cmds + [Cmd(["tc", "-n", emu, "qdisc", "replace", "dev", dev, *args], text)
                           for args in spec.qdiscs(p.rtt_s, netem)]

        before = previous or (None, None)
        return [*qdisc(port_facing(p.name), link, before[0], f"path {p.name}, {p.a} -> {p.b}: {said(p.link, link)}"),
                *qdisc(port_facing(p.name, "a"), reverse, before[1], f"path {p.name}, {p.b} -> {p.a}: {said(p.reverse, reverse)}")]

    def _bottleneck_cmds(self, netem: bool) -> list[Cmd]:
        b = self.bottleneck
        if b is None:
            return []
        emu = self.ns(EMULATOR)
        rtt = max(self.path(n).rtt_s for n in b.paths)
        cmds = [Cmd(["ip", "-n", emu, "link", "add", b.dev, "type", "ifb"],
                    f"bottleneck {b.name}: one link for the {' '.join(b.paths)} traffic toward the b hosts"),
                Cmd(["ip", "-n", emu, "link", "set", b.dev, "up"]),
                *(Cmd(["tc", "-n", emu, "qdisc", "replace", "dev", b.dev, *args], f"bottleneck {b.name}: {b.link}")
                  for args in b.link.qdiscs(rtt, netem))]
        for name in b.paths:
            port = port_facing(name, "a")
            cmds += [Cmd(["tc", "-n", emu, "qdisc", "add", "dev", port, "handle", "ffff:", "ingress"],
                         f"path {name}: what its a host sends goes through bottleneck {b.name} first"),
                     # u32 matching every packet, not matchall: some kernels build only u32 (this
                     # project's 6.18 host has no cls_matchall, cls_basic or cls_flower)
                     Cmd(["tc", "-n", emu, "filter", "add", "dev", port, "parent", "ffff:", "protocol", "all",
                          "u32", "match", "u32", "0", "0", "action", "mirred", "egress", "redirect", "dev", b.dev])]
        return cmds

    def _mptcp_cmds(self) -> list[Cmd]:
        if self.mptcp_subflows is None:
            return []
        first = self.paths[0]
        same = [p for p in self.paths if (p.a, p.b) == (first.a, first.b)][1:self.mptcp_subflows]
        extra = [(p.name, self.address(p.a, p.name)) for p in same]
        return [Cmd(argv, why) for argv, why in mptcpconf.commands(self.ns(first.a), self.ns(first.b), extra)]

    def script(self) -> str:
        """The topology as a shell script a student can read and replay."""
        lines = ["#!/bin/sh", f"# mptcplab topology {self.name!r} (run {self.run_id})", "set -e"]
        for c in self.commands():
            if c.why:
                lines.append(f"# {c.why}")
            lines.append(str(c))
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------ lifecycle

    @contextlib.contextmanager
    def up(self, rundir=None):
        """Build the topology; yield a `Network`; always tear it down.

        With a `results.RunDir`, the exact commands go to `topology.sh` and the manifest gets
        the configuration as the kernel reports it. Before that, each path's own latency in this
        place is measured and compensated (Network.measure_own_latency).
        """
        kernel.require_root()
        t0 = time.monotonic()
        cmds = self.commands()  # raises on impossible links before anything is configured
        for k, (was, need) in self.limits_raised().items():
            _log.info("the kernel's %s raised from %s to %d for this network (put back after it)", k, was, need)
        net = Network(self)
        try:
            for c in cmds:  # recorded before any exists
                if c.argv[:3] == ["ip", "netns", "add"]:
                    TRACKER.add("netns", name=c.argv[3])
            net.check_all(cmds)
            t1 = time.monotonic()
            net.measure_own_latency()
            net.up_s, net.own_latency_s = time.monotonic() - t0, time.monotonic() - t1
            _log.debug("network %s up in %.1f s (the place's own latency measured)", self.name, net.up_s)
            if rundir is not None:
                net.record(rundir)
            yield net
        finally:
            net.teardown()


class Network:
    """A built topology: run commands in hosts, change links, snapshot the configuration."""

    def __init__(self, topo: Topology) -> None:
        self.topo = topo
        self._procs: list[tuple[subprocess.Popen, dict]] = []
        self.sender_start_s: float | None = None  # traffic.start_time: one sender's start-up, measured once
        self.spawners: dict[str, object] = {}  # traffic.spawn: per host, its spawner's socket
        self.up_s: float | None = None  # how long Topology.up took to build it
        self.own_latency_s: float | None = None  # the part of up_s that measured the place's own latency
        self._offloads: dict | None = None  # offloads_all, read once

    def address(self, host: str, path: str) -> str:
        return self.topo.address(host, path)

    def ns(self, host: str) -> str:
        return self.topo.ns(host)

    def check(self, argv: list[str], input: str | None = None) -> str:
        """Run a configuration command (`input`: its stdin, e.g. a batch's lines); a failure is an
        error with the command and its message."""
        _log.debug("%s", shlex.join(argv))
        return process.run(argv, input=input).stdout

    def check_all(self, cmds: list[Cmd]) -> None:
        """Run configuration commands in order, those of one namespace batched (batches); a failure
        is an error naming the command that failed, as `check` would, and nothing after it runs."""
        for head, group in batches(cmds):
            if head[-1] != "-" or len(group) == 1:
                self.check(group[0].argv)
                continue
            for c in group:
                _log.debug("%s", c)
            out = process.run(head, check=False, input=batch_lines(head, group))
            if out.returncode != 0:
                failed = re.search(r"Command failed -:(\d+)", out.stderr)
                line = group[int(failed.group(1)) - 1] if failed else None
                said = re.sub(r"Command failed -:\d+\s*", "", out.stderr).strip()[-1500:]
                raise EnvironmentProblem(f"`{line or shlex.join(head)}` failed ({out.returncode}): {said}")

    def run(self, host: str, argv: list[str], check: bool = True, timeout: float | None = None,
            **kw) -> subprocess.CompletedProcess:
        return process.run(["ip", "netns", "exec", self.ns(host), *argv], check=check, timeout=timeout,
                        what=f"in {host}", **kw)

    def popen(self, host: str, argv: list[str], what: str = "", **kw) -> subprocess.Popen:
        """Start a process in `host`, in its own process group; it is killed at teardown."""
        proc = subprocess.Popen(["ip", "netns", "exec", self.ns(host), *argv], start_new_session=True, **kw)
        return self.track(proc, what or argv[0])

    def track(self, proc, what: str):
        """A process of this network, leading its own process group (started by popen, or forked
        in a host by traffic.spawn): recorded for `mptcplab clean`, stopped at teardown."""
        item = TRACKER.add("process", pgid=proc.pid, what=what)
        self._procs.append((proc, item))
        return proc

    def stop(self, proc: subprocess.Popen, grace: float = 2.0) -> None:
        kill_process_group(proc.pid, grace)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
        for entry in list(self._procs):
            if entry[0] is proc:
                self._procs.remove(entry)
                TRACKER.discard(entry[1])

    def measure_own_latency(self) -> dict[str, latency.OwnLatency]:
        """Measure what this place adds to each path's round trip and re-apply the paths' links
        with it taken out of netem's delay where it is more than the RTT check's slack.

        Every path is pinged without its loss or jitter (latency.py says why), all side by side,
        then gets its full link back, compensated or not: by the place's floor over its paths
        (latency.place_floors).
        """
        netem = self.topo._netem()
        paths = self.topo.paths
        bare = {p.name: (latency.measuring_link(p.link), latency.measuring_link(p.reverse)) for p in paths}
        why = "no loss or jitter, to measure the place's own latency"
        cmds = []
        for p in paths:
            previous = self.topo.netem_links(p)
            self.topo.own_latency.pop(p.name, None)
            cmds += self.topo._link_cmds(p, netem, bare[p.name], why=why, previous=previous)
        self.check_all(cmds)
        pings = latency.ping_paths(self, paths)
        measured = {p.name: latency.OwnLatency(p.name, pings[p.name],
                                               p.rtt_s * 1e3 + latency.ping_wire_ms(p.link, p.reverse, netem))
                    for p in paths}
        self.topo.own_latency.update(latency.place_floors(measured, {p.name: p.rtt_s > 0 for p in paths}))
        self.check_all([c for p in paths for c in self.topo._link_cmds(p, netem, previous=bare[p.name])])
        for p in paths:
            own = self.topo.own_latency[p.name]
            r = own.record(p.link, p.reverse)
            say = (_log.warning if r["uncompensated_ms"] > r["slack_ms"] else
                   _log.info if r["compensated"] else _log.debug)
            say("%s", own.summary(p.link, p.reverse))
        return self.topo.own_latency

    def set_link(self, path: str, link: LinkSpec | str, reverse: LinkSpec | str | None = None) -> list[Cmd]:
        """Change a path's emulation in place (e.g. mobility during a run). Returns the commands run.

        The place's own latency measured when the network came up is taken out of the new delay
        as it was out of the first (latency.py)."""
        p = self.topo.path(path)
        previous = self.topo.netem_links(p)
        p.link = LinkSpec.parse(link)
        p.reverse = p.link if reverse is None else LinkSpec.parse(reverse)
        cmds = self.topo._link_cmds(p, self.topo._netem(), previous=previous) + self.topo._shaper_cmds(p)
        self.check_all(cmds)  # both directions by one `tc`: together, mid-transfer
        return cmds

    def set_sysctl(self, host: str, key: str, value: str) -> None:
        self.topo.sysctls.setdefault(host, {})[key] = str(value)
        self.run(host, ["sysctl", "-qw", f"{key}={value}"])

    def sysctl(self, host: str, key: str) -> str | None:
        out = self.run(host, ["sysctl", "-n", key], check=False)
        return " ".join(out.stdout.split()) if out.returncode == 0 else None

    def sysctls(self, host: str, keys) -> dict[str, str | None]:
        """`host`'s sysctls, read from inside its namespace without starting a program (every run
        records these: netns.read_sysctls); None for a key the kernel lacks."""
        return netns.read_sysctls(self.ns(host), keys)

    def record(self, rundir) -> None:
        """Put the replayable commands and the kernel's view of the network into a run directory."""
        rundir.write_text("topology.sh", self.topo.script())
        rundir.manifest["network"] = self.snapshot()

    def snapshot(self) -> dict:
        """The configuration as the kernel reports it, for the manifest."""
        emu = self.ns(EMULATOR)
        snap: dict = {
            "topology": self.topo.name,
            "run_id": self.topo.run_id,
            "emulation": "netem" if self.topo._netem() else "tbf (no netem: rate and queue only)",
            "paths": [{"name": p.name, "a": p.a, "b": p.b, "link": str(p.link), "reverse": str(p.reverse),
                       "a_addr": self.address(p.a, p.name), "b_addr": self.address(p.b, p.name),
                       "rtt_ms_configured": round(p.rtt_s * 1e3, 3),
                       "own_latency": self._own_latency_record(p)} for p in self.topo.paths],
            "own_latency_method": latency.METHOD,
            "bottleneck": ({"name": self.topo.bottleneck.name, "link": str(self.topo.bottleneck.link),
                            "paths": list(self.topo.bottleneck.paths)} if self.topo.bottleneck else None),
            "qdiscs": self.check(["tc", "-n", emu, "qdisc", "show"]).strip().splitlines(),
            "switches": {k: getattr(self.topo, k) for k in SWITCHES},
            # the sender shaper's qdiscs, read back (the emulator's are above)
            "host_qdiscs": ({h: self.check(["tc", "-n", self.ns(h), "qdisc", "show"]).strip().splitlines()
                             for h in sorted({p.a for p in self.topo.paths})} if self.topo.sender_shaper else {}),
            # Read back, not assumed: receive offloads would coalesce segments so one ACK covers many.
            "offloads": self.offloads_all(),
            "sysctls_set": {h: {**self.topo.base_sysctls(), **self.topo.sysctls.get(h, {})} for h in self.topo.hosts},
            # Read back: the usual ones and every one the kit set (a lab's own, e.g. tcp_recovery).
            "sysctls": {h: self.sysctls(h, list(dict.fromkeys(
                [*REPORTED_SYSCTLS, *BASE_SYSCTLS, *self.topo.sysctls.get(h, {})]))) for h in self.topo.hosts},
            "mptcp": {},
        }
        if self.topo.kernel_limits:
            found = self.topo.limits_found()
            snap["kernel_limits"] = {k: {"needed": need, "found": found[k], "now": _root_sysctl(k)}
                                     for k, need in self.topo.kernel_limits.items()}
        for h in self.topo.hosts:
            snap["mptcp"][h] = mptcpconf.parse_show(self.check(*mptcpconf.show_command(self.ns(h))))
        return snap

    def offloads_all(self) -> dict[str, dict[str, str]]:
        """Every path interface's offloads, read once per network: they are set when it is built
        (commands()) and nothing changes them after, while `record` runs before every run, where an
        `ethtool` per interface (16 for Lab 2's four paths) costs seconds in an emulated CPU."""
        if self._offloads is None:
            self._offloads = {f"{h}:{dev}": self.offloads(h, dev) for p in self.topo.paths
                              for h, dev in ((p.a, p.name), (p.b, p.name), (EMULATOR, port_facing(p.name, "a")),
                                             (EMULATOR, port_facing(p.name)))}
        return self._offloads

    def offloads(self, host: str, dev: str) -> dict[str, str]:
        """The segmentation and receive offloads of one interface as `ethtool -k` reports them."""
        out = self.run(host, ["ethtool", "-k", dev], check=False).stdout
        return {k.strip(): v.split()[0] for k, _, v in (line.partition(":") for line in out.splitlines())
                if k.strip() in OFFLOADS and v.strip()}

    def _own_latency_record(self, p: NetPath) -> dict | None:
        own = self.topo.own_latency.get(p.name)
        return own.record(p.link, p.reverse) if own else None

    def teardown(self) -> None:
        for proc, item in reversed(self._procs):
            kill_process_group(proc.pid, grace=1.0)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=2)
            TRACKER.discard(item)
        self._procs.clear()
        for sock in self.spawners.values():  # the spawners' sockets (traffic.spawn), their processes gone
            with contextlib.suppress(OSError):
                os.unlink(sock)
        for h in (*self.topo.hosts, EMULATOR):
            name = self.ns(h)
            remove_namespace(name)
            for item in [i for i in TRACKER.items if i == {"kind": "netns", "name": name}]:
                TRACKER.discard(item)
        for key, (was, _) in self.topo.limits_raised().items():  # put back what this network raised
            if was is not None:
                process.run(["sysctl", "-qw", f"{key}={was}"], check=False)


def _root_sysctl(key: str) -> int | None:
    """A numeric sysctl of the kernel itself (the root namespace), or None where it cannot be read."""
    out = process.run(["sysctl", "-n", key], check=False)
    try:
        return int(out.stdout.split()[0]) if out.returncode == 0 else None
    except (IndexError, ValueError):
        return None
