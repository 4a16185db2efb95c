"""The MPTCP subflows of a capture, read from the pcap file in Python: what the setup check's
capture check needs (traffic.verify_capture), without tshark.

Why not tshark here, the kit's tool for captures (mptcplab.measure.tshark): the check runs inside the
place before every lab, and in the VM under software emulation tshark's start-up alone (it
registers every dissector) took most of the check's 22 s (benchmarks/results/vm_run_overhead.md);
this reader needs a few struct reads per packet. Not dpkt, the pure-Python pcap library, either:
`import dpkt` loads 208 of its modules (45 ms natively; tens of times that
under TCG), and the MPTCP option fields and Wireshark's grouping below would be written here anyway. It reads what tshark's `tcp.stream`,
`mptcp.stream`, `ip.src`, `ip.dst`, `tcp.len`, `tcp.options.mptcp.subtype` and the SYN/ACK flags
gave the check, and groups subflows into MPTCP connections as Wireshark does (packet-tcp.c): an
MP_CAPABLE key registers its token (RFC 8684: the most significant 32 bits of the key's SHA-256;
SHA-1 for version 0), an MP_JOIN SYN joins the connection whose token it carries, a subflow first
seen with another MPTCP option is a connection of its own. tests/engine/test_pcap.py holds it to
tshark's reading on real captures.

Captures in pcap (what `tcpdump -w` writes) or pcapng, with Linux cooked (v1, v2), Ethernet or
raw IP link layers; IPv4 only (every network the kit builds is IPv4: topology.py).
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import EnvironmentProblem

TCPOPT_MPTCP = 30
MP_CAPABLE, MP_JOIN = 0, 1
SYN, ACK = 0x02, 0x10

# link type -> (bytes before the network header, offset of its EtherType or None for raw IP)
LINK_TYPES = {1: (14, 12), 113: (16, 14), 276: (20, 0), 101: (0, None), 12: (0, None), 228: (0, None)}
ETH_P_IP, ETH_P_8021Q = 0x0800, 0x8100


@dataclass
class Subflow:
    """One TCP connection (tshark's `tcp.stream`) that carried MPTCP options."""

    connection: int  # tshark's `mptcp.stream`
    src: str | None = None  # of its first packet with a payload (None: it carried none)
    dst: str | None = None
    bytes: int = 0  # TCP payload of its segments that carry an MPTCP option, both directions


@dataclass
class Reading:
    subflows: list[Subflow]
    mp_capable_syns: int  # SYNs without ACK carrying MP_CAPABLE
    mp_join_syns: int  # SYNs without ACK carrying MP_JOIN


def packets(path: Path):
    """The captured bytes of each IPv4 packet of a capture, from its IP header on."""
    with open(path, "rb") as f:
        magic = f.read(4)
        f.seek(0)
        frames = _pcapng(f, path) if magic == b"\x0a\x0d\x0d\x0a" else _pcap(f, path)
        for linktype, frame in frames:
            if linktype not in LINK_TYPES:
                raise EnvironmentProblem(f"{path.name}: link type {linktype} is not read here")
            skip, ethertype_at = LINK_TYPES[linktype]
            if ethertype_at is None:
                yield frame
                continue
            if len(frame) < skip:
                continue
            ethertype, at = int.from_bytes(frame[ethertype_at:ethertype_at + 2], "big"), skip
            if linktype == 1 and ethertype == ETH_P_8021Q:
                ethertype, at = int.from_bytes(frame[16:18], "big"), at + 4
            if ethertype == ETH_P_IP:
                yield frame[at:]


def _pcap(f, path: Path):
    """(link type, frame) per record of a classic pcap file (what `tcpdump -w` writes)."""
    head = f.read(24)
    order = {b"\xd4\xc3\xb2\xa1": "<", b"\x4d\x3c\xb2\xa1": "<", b"\xa1\xb2\xc3\xd4": ">",
             b"\xa1\xb2\x3c\x4d": ">"}.get(head[:4])
    if len(head) < 24 or order is None:
        raise EnvironmentProblem(f"{path.name}: not a pcap or pcapng file")
    linktype = struct.unpack(order + "I", head[20:24])[0] & 0x0FFFFFFF
    record = struct.Struct(order + "IIII")
    while len(rh := f.read(16)) == 16:
        incl = record.unpack(rh)[2]
        frame = f.read(incl)
        if len(frame) < incl:
            return  # cut short: tcpdump was stopped while writing
        yield linktype, frame


def _pcapng(f, path: Path):
    """(link type, frame) per enhanced or simple packet block of a pcapng file (what tshark and
    editcap write)."""
    order, linktypes = "<", []
    while len(bh := f.read(8)) == 8:
        if bh[:4] == b"\x0a\x0d\x0d\x0a":  # section header: its byte-order magic says how to read the rest
            order = "<" if f.read(4) == b"\x4d\x3c\x2b\x1a" else ">"
            f.seek(-4, 1)
            linktypes = []
        btype, length = struct.unpack(order + "II", bh)
        body = f.read(length - 8)
        if length < 12 or len(body) < length - 8:
            return
        if btype == 1:  # interface description
            linktypes.append(struct.unpack_from(order + "H", body)[0])
        elif btype == 6:  # enhanced packet: interface, timestamp (2 words), captured length, original length
            iface, _, _, incl = struct.unpack_from(order + "IIII", body)
            yield linktypes[iface], body[20:20 + incl]
        elif btype == 3 and linktypes:  # simple packet: original length, then the packet
            yield linktypes[0], body[4:]


def _ipv4(b: int) -> str:
    return f"{b >> 24}.{b >> 16 & 255}.{b >> 8 & 255}.{b & 255}"


def _mptcp_options(opts: bytes):
    """(subtype, option bytes) of each MPTCP option in a TCP header's options."""
    i, n = 0, len(opts)
    while i < n:
        kind = opts[i]
        if kind == 0:
            return
        if kind == 1:
            i += 1
            continue
        if i + 1 >= n or opts[i + 1] < 2:
            return  # malformed: the rest cannot be delimited
        length = opts[i + 1]
        if kind == TCPOPT_MPTCP and i + 2 < n:
            yield opts[i + 2] >> 4, opts[i:i + length]
        i += length


def token(key: bytes, version: int) -> bytes:
    """The token a key gives (RFC 8684 3.2, RFC 6824 for version 0)."""
    return (hashlib.sha1 if version == 0 else hashlib.sha256)(key).digest()[:4]


def read(path: Path) -> Reading:
    """Every MPTCP subflow of the capture with its payload bytes, and the SYN counts."""
    streams: dict[tuple, Subflow] = {}
    tokens: dict[bytes, int] = {}
    connections = 0
    capable = join = 0
    for ip in packets(Path(path)):
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total, src, dst = struct.unpack_from(">H6xII", ip, 2)[0], *struct.unpack_from(">II", ip, 12)
        tcp = ip[ihl:]
        if len(tcp) < 14:
            continue
        sport, dport = struct.unpack_from(">HH", tcp)
        doff, flags = (tcp[12] >> 4) * 4, tcp[13]
        key = (min((src, sport), (dst, dport)), max((src, sport), (dst, dport)))
        sub = streams.get(key)
        options = list(_mptcp_options(tcp[20:doff])) if doff > 20 else []
        for subtype, opt in options:
            if sub is None:  # the first MPTCP option of this TCP connection
                if subtype == MP_JOIN and len(opt) == 12 and opt[4:8] in tokens:
                    conn = tokens[opt[4:8]]
                else:
                    conn, connections = connections, connections + 1
                    if subtype == MP_JOIN and len(opt) == 12:
                        tokens.setdefault(opt[4:8], conn)
                sub = streams[key] = Subflow(conn)
            if subtype == MP_CAPABLE and len(opt) in (12, 20, 22, 24):  # sender's key, then the receiver's
                for k in (opt[4:12], opt[12:20]) if len(opt) >= 20 else (opt[4:12],):
                    tokens.setdefault(token(k, opt[2] & 15), sub.connection)
        if options and flags & SYN and not flags & ACK:
            subtypes = {s for s, _ in options}
            capable += MP_CAPABLE in subtypes
            join += MP_JOIN in subtypes
        payload = total - ihl - doff
        if options and payload > 0:  # tshark's `-Y mptcp`: a segment without an MPTCP option is not counted
            if sub.src is None:
                sub.src, sub.dst = _ipv4(src), _ipv4(dst)
            sub.bytes += payload
    return Reading(list(streams.values()), capable, join)
