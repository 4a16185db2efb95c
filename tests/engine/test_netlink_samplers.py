"""The samplers without programs against the programs, on this kernel: `ss` (measure.sockdiag) on
live TCP and MPTCP connections, the same text and the same parsed rows field by field; `tc -s -j
qdisc show` (measure.tcstats) on the emulator's qdiscs, the same objects but tc's options."""

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
from mptcplab.measure.observe import QdiscSampler, SsSampler, parse_ss
from mptcplab.net.topology import EMULATOR, NetPath, Topology, port_facing
from mptcplab.run.results import Sweep

PORT = 5299

def mptcp_on() -> bool:
    enabled = Path("/proc/sys/net/mptcp/enabled")
    return enabled.exists() and enabled.read_text().strip() == "1"


native = pytest.mark.skipif(os.geteuid() != 0 or not kernel.tbf_usable() or not shutil.which("ss") or not mptcp_on()
                            or not shutil.which("tc"),
                            reason="needs root, tbf, ss, tc and MPTCP to build connections on this host")

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
    assert not sampler.loop.writing.exists()  # its memory is gone


# In the emulator: tcstats, `tc`, tcstats again, back to back, N times (of device DEV if given).
QDISC_BRACKETS = """
import json, socket, subprocess, sys
from mptcplab.measure import tcstats
n, dev = int(sys.argv[1]), (sys.argv[2:] or [None])[0]
sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
out = []
for _ in range(n):
    before = tcstats.qdiscs(sock, dev)
    tc = subprocess.run(["tc", "-s", "-j", "qdisc", "show", *(["dev", dev] if dev else [])], capture_output=True,
                        text=True, check=True)
    out.append([before, [{k: v for k, v in q.items() if k != "options"} for q in json.loads(tc.stdout)],
                tcstats.qdiscs(sock, dev)])
print(json.dumps(out))
"""
QDISC_COUNTERS = ("bytes", "packets", "drops", "overlimits", "requeues")  # only grow


def qdisc_brackets(net, n: int, dev: str | None = None) -> list:
    return json.loads(net.run(EMULATOR, [sys.executable, "-c", QDISC_BRACKETS, str(n), *([dev] if dev else [])]).stdout)


@native
def test_idle_qdiscs_read_as_tc_prints_them_but_their_options():
    with two_paths().up() as net:
        net.run("snd", ["ping", "-c", "3", "-i", "0.2", "-q", net.address("rcv", "p1")])
        for dev in (None, port_facing("p1")):
            for before, tc, after in qdisc_brackets(net, 2, dev):
                assert before == tc == after, (before, tc)
        assert tc[0]["root"] and tc[0]["packets"] >= 3 and "dev" not in tc[0], tc  # the pings, on one device


@native
def test_the_qdisc_sampler_reads_a_transfer_as_tc_does_between_two_of_its_reads(tmp_path):
    """During a TCP transfer: every `tc` read's counters lie between the tcstats reads around it,
    and the sampler, forked by a host's spawner into the emulator's namespace, samples every
    device at its interval, each read bracketed within milliseconds."""
    devs = [port_facing("p1"), port_facing("p2")]
    with two_paths().up() as net, Sweep(tmp_path).run("r", {}) as rd:
        got = {}
        transfer = threading.Thread(target=lambda: got.update(r=traffic.bulk(net, "snd", "rcv", "p1", duration=2.0,
                                                                              port=PORT)))
        with QdiscSampler(net, EMULATOR, rd, devs, interval=0.1) as sampler:
            transfer.start()
            time.sleep(1.0)
            reads = qdisc_brackets(net, 5)
            transfer.join()
        for before, tc, after in reads:
            key = lambda q: (q.get("dev"), q["handle"])  # noqa: E731
            b, t, a = ({key(q): q for q in r} for r in (before, tc, after))
            assert b.keys() == t.keys() == a.keys()
            for k, q in t.items():
                assert set(q) == set(b[k]) == set(a[k]), (q, b[k])
                for col, v in q.items():
                    if col in QDISC_COUNTERS:
                        assert min(b[k][col], a[k][col]) <= v <= max(b[k][col], a[k][col]), (k, col, b[k], q, a[k])
                    elif col not in ("backlog", "qlen"):  # which move up and down
                        assert v == b[k][col] == a[k][col], (k, col)
        p1 = sampler.tables[devs[0]]
        assert len(p1) >= 15 and (p1["time_after"] - p1["time"]).median() < 0.01, p1
        assert p1["bytes"].is_monotonic_increasing and p1["bytes"].iloc[-1] > p1["bytes"].iloc[0]
        assert len(sampler.tables[devs[1]]) == len(p1)
        assert rd.manifest["process_cpu_s"]["qdisc sampler qdisc"] >= 0 and got["r"].goodput_transfer_mbps > 0
