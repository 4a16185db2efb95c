"""The ss sampler without `ss` (measure.sockdiag) against `ss` itself, on live TCP and MPTCP
connections of this kernel: the same text and the same parsed rows, field by field."""

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mptcplab.core import kernel
from mptcplab.measure import traffic
from mptcplab.measure.observe import SsSampler, parse_ss
from mptcplab.net.topology import NetPath, Topology
from mptcplab.run.results import Sweep

PORT = 5299

def mptcp_on() -> bool:
    enabled = Path("/proc/sys/net/mptcp/enabled")
    return enabled.exists() and enabled.read_text().strip() == "1"


native = pytest.mark.skipif(os.geteuid() != 0 or not kernel.tbf_usable() or not shutil.which("ss") or not mptcp_on(),
                            reason="needs root, tbf, ss and MPTCP to build connections on this host")

# In the sender: sockdiag, `ss`, sockdiag again, back to back, N times: each `ss` read bracketed.
BRACKETS = """
import json, socket, subprocess, sys
from mptcplab.measure import sockdiag
port, n = int(sys.argv[1]), int(sys.argv[2])
sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, sockdiag.NETLINK_SOCK_DIAG)
out = []
for _ in range(n):
    before = sockdiag.snapshot(sock, port)
    ss = subprocess.run(["ss", "-tinmHM", "dport", "=", f":{port}"], capture_output=True, text=True, check=True)
    out.append([before, ss.stdout, sockdiag.snapshot(sock, port)])
print(json.dumps(out))
"""

# An MPTCP connection (two subflows) and a plain TCP one (reno) that send 2 MB each and then stay idle.
IDLE_SENDER = """
import socket, sys, time
socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM, proto) for proto in (262, socket.IPPROTO_TCP)]
socks[1].setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, b"reno")
for s in socks:
    s.connect((sys.argv[1], int(sys.argv[2])))
    s.sendall(bytes(2 << 20))
print("sent", flush=True)
time.sleep(120)
"""
RECEIVER = """
import socket, sys, threading
lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)  # MPTCP: plain TCP clients fall back
lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
lsock.bind((sys.argv[1], int(sys.argv[2])))
lsock.listen(4)
print("ready", flush=True)
def drain(c):
    while c.recv(1 << 16):
        pass
while True:
    c, _ = lsock.accept()
    threading.Thread(target=drain, args=(c,), daemon=True).start()
"""

# parse_ss's numbers that only grow or only shrink (minrtt), or do not change, during a transfer:
# `ss` read between two sockdiag snapshots lies between them (the others may move up and down)
MONOTONIC = ("bytes_acked", "retrans_total", "minrtt_ms", "mss", "skmem_tb")


def brackets(net, n: int, port: int = PORT) -> list[list[str]]:
    out = net.run("snd", [sys.executable, "-c", BRACKETS, str(port), str(n)])
    return json.loads(out.stdout)


def rows(text: str) -> dict:
    """parse_ss's rows of one snapshot, by socket, NaN as None."""
    table = parse_ss("@ 1\n" + text)
    return {(r["netid"], r["local"], r["peer"]): {k: None if isinstance(v, float) and math.isnan(v) else v
                                                   for k, v in r.items()} for r in table.to_dict("records")}


def without_times(text: str) -> list[list[str]]:
    """Each line's words but the milliseconds since the last send, receive and ACK, which run on
    while nothing else moves, and the columns' padding."""
    return [[w for w in line.split() if not w.startswith(("lastsnd:", "lastrcv:", "lastack:"))]
            for line in text.splitlines()]


def two_paths():
    return Topology("sd", ("snd", "rcv"), [NetPath("p1", "snd", "rcv", "rate=20mbit"),
                                           NetPath("p2", "snd", "rcv", "rate=20mbit")], netem=False, mptcp_subflows=2)


@native
def test_idle_connections_read_as_ss_prints_them_word_for_word():
    with two_paths().up() as net:
        addr = net.address("rcv", "p1")
        server = net.popen("rcv", [sys.executable, "-c", RECEIVER, addr, str(PORT)], stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        client = net.popen("snd", [sys.executable, "-c", IDLE_SENDER, addr, str(PORT)], stdout=subprocess.PIPE,
                           text=True)
        assert client.stdout.readline().strip() == "sent"
        time.sleep(1.5)  # every byte acknowledged, the second subflow joined: nothing moves
        for before, ss, after in brackets(net, 3):
            assert without_times(before) == without_times(ss) == without_times(after), (before, ss)
            assert rows(before) == rows(ss)
        words = ss.split()
        assert words.count("tcp") == 3 and words.count("mptcp") == 1 and words.count("tcp-ulp-mptcp") == 2
        assert "reno" in words and " skmem:(" in ss and "subflows:1" in words, ss
        assert brackets(net, 1, port=PORT + 1) == [["", "", ""]]  # the kernel's filter: other ports' sockets left out


@native
def test_the_sampler_reads_a_transfer_as_ss_does_between_two_of_its_reads(tmp_path):
    """During an MPTCP transfer: every `ss` read lies between the sockdiag reads around it (a
    field that did not move across them reads the same, present or absent), and the sampler,
    forked by the sender's spawner, takes its samples at its interval."""
    with two_paths().up() as net, Sweep(tmp_path).run("r", {}) as rd:
        got = {}
        transfer = threading.Thread(target=lambda: got.update(r=traffic.bulk(net, "snd", "rcv", "p1", proto="mptcp",
                                                                              duration=3.0, port=PORT)))
        with SsSampler(net, "snd", rd, PORT, interval=0.05) as sampler:
            transfer.start()
            time.sleep(1.5)
            reads = brackets(net, 5)
            transfer.join()
        for before, ss, after in reads:
            b, s, a = rows(before), rows(ss), rows(after)
            assert b.keys() == s.keys() == a.keys() and len(s) == 3, (before, ss)
            for sock in s:
                for col, v in s[sock].items():
                    lo, hi = b[sock][col], a[sock][col]
                    if col in MONOTONIC or not isinstance(v, (float, type(None))):  # and state, addresses, ...
                        if lo == hi:
                            assert v == lo, (sock, col, lo, v, hi)
                        elif None not in (lo, v, hi):
                            assert min(lo, hi) <= v <= max(lo, hi), (sock, col, lo, v, hi)
                    elif (lo is None) == (hi is None):  # cwnd, rtt, unacked, ...: up and down within a bracket
                        assert (v is None) == (lo is None), (sock, col, lo, v, hi)
        stamps = [float(line[2:]) for line in sampler.path.read_text().splitlines() if line.startswith("@ ")]
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        assert len(stamps) >= 30 and 0.05 <= statistics.median(gaps) < 0.07, gaps
        conns = rd.summary["kernel_tcp"]["ss"]["connections"]
        assert len(conns) == 3 and any(k.endswith("(mptcp socket)") for k in conns), conns
        assert rd.manifest["process_cpu_s"]["ss sampler ss"] >= 0 and got["r"].goodput_transfer_mbps > 0
    assert not sampler.writing.exists()  # its memory is gone
