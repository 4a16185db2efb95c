"""`tc -s -j qdisc show [dev DEV]` without starting `tc`: one RTM_GETQDISC netlink dump, each qdisc
as a JSON object with the keys tc 6.1 gives it (kind, handle, dev, root or parent, refcnt) and its
counters (bytes, packets, drops, overlimits, requeues, backlog, qlen); tc's `options` (each
qdisc's own) are left out. `observe.parse_qdisc` reads these lines as it reads tc's.

Why: the setup check samples the emulator's qdiscs every 0.1 s, ~53 `tc` starts per check, each
~16 M instructions of the VM's emulated CPU (/work/coord/s22/vm-guest-cost.md, (I)); and a read
that takes microseconds brackets its counters far closer (`time_after`) than a program's start.
"""

from __future__ import annotations

import json
import socket
import struct
import time

from .sockdiag import NLM_F_MATCH, NLM_F_REQUEST, NLM_F_ROOT, attributes, device, messages, sample

RTM_GETQDISC = 38
TCMSG = struct.Struct("=BxxxiIII")  # struct tcmsg: family, ifindex, handle, parent, info
TCA_KIND, TCA_STATS2 = 1, 7
TCA_STATS_BASIC, TCA_STATS_QUEUE, TCA_STATS_PKT64 = 1, 3, 8
TC_H_ROOT, TC_H_UNSPEC = 0xFFFFFFFF, 0
REQUEST = struct.pack("=IHHII", 16 + TCMSG.size, RTM_GETQDISC, NLM_F_REQUEST | NLM_F_ROOT | NLM_F_MATCH, 1, 0) \
    + TCMSG.pack(socket.AF_UNSPEC, 0, 0, 0, 0)


def _classid(h: int) -> str:
    """tc's print_tc_classid."""
    if h == TC_H_ROOT:
        return "root"
    if h == TC_H_UNSPEC:
        return "none"
    major, minor = h >> 16, h & 0xFFFF
    return f":{minor:x}" if major == 0 else f"{major:x}:" if minor == 0 else f"{major:x}:{minor:x}"


def _unpack(layout: str, raw: bytes) -> tuple:
    """A struct the kernel may send shorter or longer than tc knows it: zeros beyond its end, as tc."""
    size = struct.calcsize(layout)
    return struct.unpack(layout, raw[:size].ljust(size, b"\0"))


def qdiscs(sock: socket.socket, dev: str | None = None) -> list[dict]:
    """Every qdisc of this namespace (of device `dev`) as `tc -s -j qdisc show [dev DEV]` gives it,
    but its options."""
    out = []
    for msg in messages(sock, REQUEST):
        _, ifindex, handle, parent, info = TCMSG.unpack_from(msg)
        name = device(ifindex)
        if dev is not None and name != dev:
            continue
        attrs = attributes(msg, TCMSG.size)
        q = {"kind": attrs[TCA_KIND].split(b"\0")[0].decode(), "handle": f"{handle >> 16:x}:"}
        if dev is None:
            q["dev"] = name
        if parent == TC_H_ROOT:
            q["root"] = True
        elif parent:
            q["parent"] = _classid(parent)
        if info != 1:
            q["refcnt"] = info
        stats = attributes(attrs.get(TCA_STATS2, b""))
        if TCA_STATS_BASIC in stats:
            nbytes, packets = _unpack("=QI", stats[TCA_STATS_BASIC])
            packets64 = _unpack("=Q", stats[TCA_STATS_PKT64])[0] if TCA_STATS_PKT64 in stats else 0
            q.update(bytes=nbytes, packets=packets64 or packets)
        if TCA_STATS_QUEUE in stats:
            qlen, backlog, drops, requeues, overlimits = _unpack("=5I", stats[TCA_STATS_QUEUE])
            q.update(drops=drops, overlimits=overlimits, requeues=requeues, backlog=backlog, qlen=qlen)
        out.append(q)
    return out


def sample_qdiscs(out: str, interval: float, stop: str, dev: str | None = None) -> dict:
    """The qdiscs every `interval` seconds, each sample one JSON line between `@ <epoch>` and
    `= <epoch>`, the times before and after the read (observe.QdiscSampler)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        return {"role": "qdisc", **sample(out, interval, stop,
                                          lambda: f"{json.dumps(qdiscs(sock, dev))}\n= {time.time():.6f}\n")}
