"""`ss -tinmHM dport = :PORT` without starting `ss`: the same sockets read through one SOCK_DIAG
netlink dump per protocol and family, printed as iproute2 6.1's `ss` prints them.

Why: in the VM place under TCG every program started costs its emulated CPU ~16-20 M instructions
(fork, ld.so, page faults): at one `ss` per 0.05 s sample the observer took ~30% of the guest's CPU
during a Lab 2 transfer (/work/coord/s22/vm-guest-cost.md). A dump from a process that stays up
costs the kernel's walk of a namespace's few sockets.

The output is ss's text, so `observe.parse_ss` and every reader of ss's lines (`observe.ss_sockets`)
read it as they read `ss`: the socket line `netid state recv-q send-q local peer` (the device a
socket is bound to after its address, `10.2.0.1%dev:port`), then a tab and the info line, field by
field as `ss` 6.1 (Debian 12's iproute2) prints them with -i and -m, each only when ss prints it
(ssthresh not while infinite, rtt not before a sample, retrans not while both counts are 0, ...).
The columns are not padded. `-o` and `-e` fields (timers, ts/sack) are not printed, as in ss
without them.

Hand-written rather than pyroute2's DiagSocket (not in the kit's venv; its 0.9.7): it leaves
SKMEMINFO and ULP_INFO as hex, decodes an MPTCP socket's INET_DIAG_INFO (struct mptcp_info) as a
struct tcp_info, and importing it costs ~0.3 s of CPU, several guest seconds per sampler in the VM.
The layouts below are the kernel's uapi (linux/inet_diag.h, tcp.h, mptcp.h, sock_diag.h), which
only grow at their end: a shorter attribute reads as zeros beyond it, as in ss.
"""

from __future__ import annotations

import functools
import os
import socket
import struct
import time

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST, NLM_F_ROOT, NLM_F_MATCH = 0x1, 0x100, 0x200
NLMSG_ERROR, NLMSG_DONE = 2, 3
IPPROTO_MPTCP = 262
NETIDS = {socket.IPPROTO_TCP: "tcp", IPPROTO_MPTCP: "mptcp"}

# the states ss shows by default (SS_CONN): all but LISTEN, CLOSE, TIME-WAIT and SYN-RECV
STATES = {1: "ESTAB", 2: "SYN-SENT", 3: "SYN-RECV", 4: "FIN-WAIT-1", 5: "FIN-WAIT-2", 6: "TIME-WAIT",
          7: "UNCONN", 8: "CLOSE-WAIT", 9: "LAST-ACK", 10: "LISTEN", 11: "CLOSING"}
SS_CONN = ((1 << 12) - 1) & ~((1 << 10) | (1 << 7) | (1 << 6) | (1 << 3))

# request: struct inet_diag_req_v2 (family, protocol, ext, pad, states, inet_diag_sockid)
REQ = struct.Struct("=BBBxI48x")
# what -m and -i ask for: MEMINFO, INFO, VEGASINFO, CONG, SKMEMINFO (bit = attribute - 1)
EXT = (1 << 0) | (1 << 1) | (1 << 2) | (1 << 3) | (1 << 6)
INET_DIAG_REQ_BYTECODE, INET_DIAG_REQ_PROTOCOL = 1, 3
INET_DIAG_BC_D_EQ = 12  # "dport = :P": the kernel's filter, as ss compiles it into its request

# reply: struct inet_diag_msg, then attributes
MSG = struct.Struct("=BBBBHH16s16sIQIIIII")  # its ports are big-endian: read apart (socket_text)
INFO, VEGASINFO, CONG, SKMEMINFO, DCTCPINFO, BBRINFO, ULP_INFO = 2, 3, 4, 7, 9, 16, 19
INET_ULP_INFO_NAME, INET_ULP_INFO_MPTCP = 1, 3

TCP_INFO = struct.Struct("=8B24I4Q6IQ3Q2I2Q4I")  # struct tcp_info up to tcpi_snd_wnd: what ss 6.1 reads
TCP_INFO_FIELDS = (
    "state ca_state retransmits probes backoff options wscale app_limited "
    "rto ato snd_mss rcv_mss unacked sacked lost retrans fackets last_data_sent last_ack_sent "
    "last_data_recv last_ack_recv pmtu rcv_ssthresh rtt rttvar snd_ssthresh snd_cwnd advmss reordering "
    "rcv_rtt rcv_space total_retrans pacing_rate max_pacing_rate bytes_acked bytes_received "
    "segs_out segs_in notsent_bytes min_rtt data_segs_in data_segs_out delivery_rate busy_time "
    "rwnd_limited sndbuf_limited delivered delivered_ce bytes_sent bytes_retrans dsack_dups reord_seen "
    "rcv_ooopack snd_wnd").split()
MPTCP_INFO = struct.Struct("=6B2xIIQQQ")  # struct mptcp_info up to mptcpi_rcv_nxt
TCPI_OPT_WSCALE = 4
MPTCP_INFO_FLAG_FALLBACK, MPTCP_INFO_FLAG_REMOTE_KEY_RECEIVED = 1, 2
# the MPTCP subflow's ULP attributes (MPTCP_SUBFLOW_ATTR_*) and its flags' letters, in ss's order
SF_TOKEN_REM, SF_TOKEN_LOC, SF_MAP_SEQ, SF_MAP_SFSEQ, SF_SSN_OFFSET, SF_MAP_DATALEN, SF_FLAGS, SF_ID_REM, \
    SF_ID_LOC = 1, 2, 4, 5, 6, 7, 8, 9, 10
# bits 0-8: MCAP_REM, MCAP_LOC, JOIN_REM, JOIN_LOC, BKUP_REM, BKUP_LOC, FULLY_ESTABLISHED, CONNECTED, MAPVALID
SF_FLAG_LETTERS = "MmJjBbecv"


def request(family: int, protocol: int, dport: int) -> bytes:
    """One dump request as ss sends it: the states ss shows, -i and -m's extensions, the filter
    "dport = :P" as kernel bytecode, and for MPTCP (above 255) the protocol as an attribute."""
    body = REQ.pack(family, protocol & 0xFF, EXT, SS_CONN)
    # one op: D_EQ, yes -> past the end (accept), no -> 4 beyond it (reject); its port in the next op's `no`
    bytecode = struct.pack("=BBH", INET_DIAG_BC_D_EQ, 8, 12) + struct.pack("=BBH", 0, 0, dport)
    body += _attr(INET_DIAG_REQ_BYTECODE, bytecode)
    if protocol > 255:
        body += _attr(INET_DIAG_REQ_PROTOCOL, struct.pack("=I", protocol))
    return struct.pack("=IHHII", 16 + len(body), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_ROOT | NLM_F_MATCH,
                       1, 0) + body


def _attr(kind: int, data: bytes) -> bytes:
    return struct.pack("=HH", 4 + len(data), kind) + data + bytes(-len(data) % 4)


def attributes(data: bytes, offset: int = 0) -> dict[int, bytes]:
    """Netlink attributes (type -> payload) from `offset` on; the nested flag bits dropped."""
    out = {}
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        out[kind & 0x3FFF] = data[offset + 4:offset + length]
        offset += (length + 3) & ~3
    return out


def messages(sock: socket.socket, request: bytes, quiet: bool = False) -> list[bytes]:
    """The messages (without their netlink header) answering one dump request. An error answer
    raises OSError unless `quiet`."""
    sock.send(request)
    out = []
    while True:
        data = sock.recv(1 << 16)
        offset = 0
        while offset + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, offset)
            if kind == NLMSG_DONE:
                return out
            if kind == NLMSG_ERROR:
                errno = -struct.unpack_from("=i", data, offset + 16)[0]
                if errno and not quiet:
                    raise OSError(errno, f"netlink dump: {os.strerror(errno)}")
                return out
            out.append(data[offset + 16:offset + length])
            offset += max(16, (length + 3) & ~3)


def dump(sock: socket.socket, family: int, protocol: int, dport: int) -> list[bytes]:
    """The inet_diag messages of one dump. A kernel without MPTCP's diag module answers with an
    error: it has no MPTCP socket to show, and ss is silent then too."""
    return messages(sock, request(family, protocol, dport), quiet=protocol == IPPROTO_MPTCP)


def _address(family: int, raw: bytes, port: int, ifname: str | None = None) -> str:
    """ss -n's address: a.b.c.d or [v6] (* for the unspecified v6 address), %device, :port (* for 0)."""
    if family == socket.AF_INET:
        host = socket.inet_ntop(family, raw[:4])
    else:
        host = "*" if raw == bytes(16) else f"[{socket.inet_ntop(family, raw)}]"
    return f"{host}{'%' + ifname if ifname else ''}:{port or '*'}"


def _string(raw: bytes) -> str:
    return raw.split(b"\0")[0].decode()


def _g(v: float) -> str:
    return "%g" % v  # C's %g, which ss uses for milliseconds


def _skmem(raw: bytes) -> str:
    m = struct.unpack_from(f"={len(raw) // 4}I", raw)
    text = " skmem:(r%u,rb%u,t%u,tb%u,f%u,w%u,o%u" % m[:7]
    if len(m) >= 8:
        text += ",bl%u" % m[7]
    if len(m) >= 9:
        text += ",d%u" % m[8]
    return text + ")"


def _padded(raw: bytes, layout: struct.Struct) -> tuple:
    return layout.unpack_from(raw[:layout.size] + bytes(max(0, layout.size - len(raw))))


def tcp_info_text(attrs: dict[int, bytes], listening: bool = False) -> str:
    """ss 6.1's tcp_show_info: the fields of struct tcp_info it prints and when it prints them."""
    i = dict(zip(TCP_INFO_FIELDS, _padded(attrs[INFO], TCP_INFO)))
    out = []
    if CONG in attrs:
        out.append(_string(attrs[CONG]))
    if i["options"] & TCPI_OPT_WSCALE:
        out.append(f"wscale:{i['wscale'] & 0xF},{i['wscale'] >> 4}")
    if i["rto"] and i["rto"] != 3000000:
        out.append(f"rto:{_g(i['rto'] / 1000)}")
    if i["backoff"]:
        out.append(f"backoff:{i['backoff']}")
    if i["rtt"]:
        out.append(f"rtt:{_g(i['rtt'] / 1000)}/{_g(i['rttvar'] / 1000)}")
    if i["ato"]:
        out.append(f"ato:{_g(i['ato'] / 1000)}")
    for key, name in (("snd_mss", "mss"), ("pmtu", "pmtu"), ("rcv_mss", "rcvmss"), ("advmss", "advmss"),
                      ("snd_cwnd", "cwnd")):
        if i[key]:
            out.append(f"{name}:{i[key]}")
    if 0 < i["snd_ssthresh"] < 0xFFFF:  # TCP_INFINITE_SSTHRESH and above: ss leaves it out
        out.append(f"ssthresh:{i['snd_ssthresh']}")
    for key in ("bytes_sent", "bytes_retrans", "bytes_acked", "bytes_received", "segs_out", "segs_in",
                "data_segs_out", "data_segs_in"):
        if i[key]:
            out.append(f"{key}:{i[key]}")
    rtt = float(i["rtt"])
    if DCTCPINFO in attrs:
        enabled, ce_state, alpha, ab_ecn, ab_tot = _padded(attrs[DCTCPINFO], struct.Struct("=HHIII"))
        out.append(f"dctcp:(ce_state:{ce_state},alpha:{alpha},ab_ecn:{ab_ecn},ab_tot:{ab_tot})" if enabled
                   else "dctcp:fallback_mode")
    if BBRINFO in attrs:
        bw_lo, bw_hi, min_rtt, pacing_gain, cwnd_gain = _padded(attrs[BBRINFO], struct.Struct("=5I"))
        text = f"bbr:(bw:{(bw_hi << 32 | bw_lo) * 8.0:.0f}bps,mrtt:{_g(min_rtt / 1000.0)}"
        if pacing_gain:
            text += f",pacing_gain:{_g(pacing_gain / 256.0)}"
        if cwnd_gain:
            text += f",cwnd_gain:{_g(cwnd_gain / 256.0)}"
        out.append(text + ")")
    if VEGASINFO in attrs:
        enabled, _, vrtt, _ = _padded(attrs[VEGASINFO], struct.Struct("=4I"))
        if enabled and vrtt and vrtt != 0x7FFFFFFF:
            rtt = float(vrtt)
    if rtt > 0 and i["snd_mss"] and i["snd_cwnd"]:
        out.append(f"send {float(i['snd_cwnd']) * float(i['snd_mss']) * 8000000.0 / rtt:.0f}bps")
    for key, name in (("last_data_sent", "lastsnd"), ("last_data_recv", "lastrcv"), ("last_ack_recv", "lastack")):
        if i[key]:
            out.append(f"{name}:{i[key]}")
    if i["pacing_rate"] and i["pacing_rate"] != 2**64 - 1:
        text = f"pacing_rate {i['pacing_rate'] * 8.0:.0f}bps"
        if i["max_pacing_rate"] and i["max_pacing_rate"] != 2**64 - 1:
            text += f"/{i['max_pacing_rate'] * 8.0:.0f}bps"
        out.append(text)
    if i["delivery_rate"]:
        out.append(f"delivery_rate {i['delivery_rate'] * 8.0:.0f}bps")
    for key in ("delivered", "delivered_ce"):
        if i[key]:
            out.append(f"{key}:{i[key]}")
    if i["app_limited"] & 1:
        out.append("app_limited")
    if i["busy_time"]:
        out.append(f"busy:{i['busy_time'] // 1000}ms")
        for key in ("rwnd_limited", "sndbuf_limited"):
            if i[key]:
                out.append(f"{key}:{i[key] // 1000}ms({100.0 * i[key] / i['busy_time']:.1f}%)")
    if i["unacked"]:
        out.append(f"unacked:{i['unacked']}")
    if i["retrans"] or i["total_retrans"]:
        out.append(f"retrans:{i['retrans']}/{i['total_retrans']}")
    if i["lost"]:
        out.append(f"lost:{i['lost']}")
    if i["sacked"] and not listening:
        out.append(f"sacked:{i['sacked']}")
    for key in ("dsack_dups", "fackets"):
        if i[key]:
            out.append(f"{key}:{i[key]}")
    if i["reordering"] != 3:
        out.append(f"reordering:{i['reordering']}")
    if i["reord_seen"]:
        out.append(f"reord_seen:{i['reord_seen']}")
    if i["rcv_rtt"]:
        out.append(f"rcv_rtt:{_g(i['rcv_rtt'] / 1000)}")
    for key in ("rcv_space", "rcv_ssthresh"):
        if i[key]:
            out.append(f"{key}:{i[key]}")
    if i["notsent_bytes"]:
        out.append(f"notsent:{i['notsent_bytes']}")
    if i["min_rtt"] and i["min_rtt"] != 2**32 - 1:
        out.append(f"minrtt:{_g(i['min_rtt'] / 1000)}")
    for key in ("rcv_ooopack", "snd_wnd"):
        if i[key]:
            out.append(f"{key}:{i[key]}")
    return "".join(" " + w for w in out)


def ulp_text(raw: bytes) -> str:
    """ss 6.1's ULP fields: `tcp-ulp-NAME`, and an MPTCP subflow's flags, tokens and mapping."""
    ulp = attributes(raw)
    if INET_ULP_INFO_NAME not in ulp:
        return ""
    out = ["tcp-ulp-" + _string(ulp[INET_ULP_INFO_NAME])]
    sf = attributes(ulp.get(INET_ULP_INFO_MPTCP, b""))
    # ss reads each as a u32; maplen is a u16 (the attribute's zero padding completes it)
    u32 = lambda k: struct.unpack("=I", sf[k][:4].ljust(4, b"\0"))[0]  # noqa: E731
    if SF_FLAGS in sf and (flags := u32(SF_FLAGS)):
        out.append("flags:" + "".join(c for bit, c in enumerate(SF_FLAG_LETTERS) if flags >> bit & 1))
    if all(k in sf for k in (SF_TOKEN_REM, SF_TOKEN_LOC, SF_ID_REM, SF_ID_LOC)):
        out.append(f"token:{u32(SF_TOKEN_REM):04x}(id:{sf[SF_ID_REM][0]})"
                   f"/{u32(SF_TOKEN_LOC):04x}(id:{sf[SF_ID_LOC][0]})")
    if SF_MAP_SEQ in sf:
        out.append(f"seq:{struct.unpack_from('=Q', sf[SF_MAP_SEQ])[0]:x}")
    for key, name in ((SF_MAP_SFSEQ, "sfseq"), (SF_SSN_OFFSET, "ssnoff"), (SF_MAP_DATALEN, "maplen")):
        if key in sf:
            out.append(f"{name}:{u32(key):x}")
    return "".join(" " + w for w in out)


def mptcp_info_text(raw: bytes) -> str:
    """ss 6.1's mptcp_stats_print: the MPTCP socket's counts, flags, token and sequence numbers."""
    (subflows, signal, accepted, subflows_max, signal_max, accepted_max, flags, token, write_seq, snd_una,
     rcv_nxt) = _padded(raw, MPTCP_INFO)
    out = [f"{name}:{v}" for name, v in (("subflows", subflows), ("add_addr_signal", signal),
                                         ("add_addr_accepted", accepted), ("subflows_max", subflows_max),
                                         ("add_addr_signal_max", signal_max),
                                         ("add_addr_accepted_max", accepted_max)) if v]
    if flags & MPTCP_INFO_FLAG_FALLBACK:
        out.append("fallback")
    if flags & MPTCP_INFO_FLAG_REMOTE_KEY_RECEIVED:
        out.append("remote_key")
    out += [f"{name}:{v:x}" for name, v in (("token", token), ("write_seq", write_seq), ("snd_una", snd_una),
                                            ("rcv_nxt", rcv_nxt)) if v]
    return "".join(" " + w for w in out)


@functools.lru_cache(maxsize=None)
def device(ifindex: int) -> str:
    """A device's name in this namespace (ss: ll_index_to_name), looked up once."""
    try:
        return socket.if_indextoname(ifindex)
    except OSError:
        return f"if{ifindex}"


def socket_text(msg: bytes, protocol: int) -> str:
    """One socket as `ss -tinmM` prints it: its line, then a tab and its info line."""
    family, state, _, _, _, _, src, dst, ifindex, _, _, rqueue, wqueue, _, _ = MSG.unpack_from(msg)
    sport, dport = struct.unpack_from("!HH", msg, 4)
    dev = device(ifindex) if ifindex else None
    attrs = attributes(msg, MSG.size)
    info = _skmem(attrs[SKMEMINFO]) if SKMEMINFO in attrs else ""
    if protocol == IPPROTO_MPTCP:
        info += mptcp_info_text(attrs[INFO]) if INFO in attrs else ""
    else:
        info += tcp_info_text(attrs, listening=state == 10) if INFO in attrs else ""
        info += ulp_text(attrs[ULP_INFO]) if ULP_INFO in attrs else ""
    return (f"{NETIDS[protocol]} {STATES.get(state, 'UNKNOWN')} {rqueue} {wqueue} "
            f"{_address(family, src, sport, dev)} {_address(family, dst, dport)}\n\t{info}\n")


def snapshot(sock: socket.socket, dport: int) -> str:
    """What `ss -tinmHM dport = :P` prints now, in its order: TCP sockets (IPv4, then IPv6), then
    MPTCP sockets."""
    return "".join(socket_text(msg, protocol) for protocol in (socket.IPPROTO_TCP, IPPROTO_MPTCP)
                   for family in (socket.AF_INET, socket.AF_INET6) for msg in dump(sock, family, protocol, dport))


def sample(out: str, interval: float, stop: str, take) -> dict:
    """`@ <epoch>` and what `take()` returns, then a pause of `interval`, until the file `stop`
    exists (the sampler leaves by itself rather than being signalled while it writes). Each sample
    is written whole. Returns how many it took."""
    samples = 0
    with open(out, "w") as f:
        while not os.path.exists(stop):
            f.write(f"@ {time.time():.6f}\n{take()}")
            f.flush()
            samples += 1
            time.sleep(interval)
    return {"samples": samples}


def sample_ss(out: str, port: int, interval: float, stop: str) -> dict:
    """`ss -tinmHM dport = :PORT` every `interval` seconds (observe.SsSampler)."""
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG) as sock:
        return {"role": "ss", **sample(out, interval, stop, lambda: snapshot(sock, port))}
