"""Transfers started together (traffic.concurrent: Lab 2's fairness runs) connect at one agreed
instant and each keeps its own result. The kit's real sender and receiver run over loopback; only
the network namespaces are left out."""

import subprocess

from mptcplab.traffic import Transfer, concurrent


class LoopbackNet:
    """The part of a running network the transfers use, every host on 127.0.0.1."""
    sender_start_s = None
    start_delay_s = 0.0  # how much longer than start_time measured a sender's start takes here

    def address(self, host, path):
        return "127.0.0.1"

    def run(self, host, argv, timeout=None, **kw):
        return subprocess.run(argv, check=True, timeout=timeout, capture_output=True)

    def popen(self, host, argv, what="", **kw):
        if self.start_delay_s and what == "bulk client":
            argv = ["sh", "-c", f'sleep {self.start_delay_s}; exec "$@"', "sh", *argv]
        return subprocess.Popen(argv, **kw)

    def stop(self, proc, grace=2.0):
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=grace)


def two_transfers(net):
    return concurrent(net, [Transfer("snd", "rcv", "p1", port=15201, sndbuf=65536),
                            Transfer("snd", "rcv", "p2", port=15202, sndbuf=65536)], duration=1.0)


def connected_once_ready_s(r) -> float:
    """How long after the later of the agreed instant and its own start-up a sender connected: what
    the mechanism controls. The rest of `start_late_s`, `ready_late_s`, is the host starting the
    process more slowly than start_time allowed (a loaded machine), recorded in every summary."""
    return r.extra["start_late_s"] - r.extra["ready_late_s"]


def test_transfers_start_at_one_instant_and_keep_their_own_results():
    net = LoopbackNet()
    a, b = two_transfers(net)
    assert net.sender_start_s is not None  # the start-up cost was measured once, for both
    for r in (a, b):
        assert r.proto == "tcp" and len(r.flows) == 1 and r.flows[0]["bytes"] > 0
        assert r.flows[0]["subflows"] == 1 and r.mbps > 0
        # each sender waited for the instant and connected as soon as it came (or, on a host too
        # busy to start it in time, as soon as it was ready): never before, never dawdling after
        assert r.extra["start_late_s"] >= 0 and 0 <= connected_once_ready_s(r) < 0.5, r.extra
    assert a.flows[0]["peer"].endswith(":15201") and b.flows[0]["peer"].endswith(":15202")


def test_a_sender_started_too_slowly_for_the_instant_connects_at_once_and_says_how_late_it_was():
    """A host busier than when start_time measured it: each sender's process starts 1 s later than
    the instant allowed for. It cannot wait for an instant that has passed; it connects when ready,
    and its summary says the lateness was its start-up (`ready_late_s`), not the connection."""
    net = LoopbackNet()
    net.start_delay_s = 1.0
    for r in two_transfers(net):
        assert r.extra["ready_late_s"] > 0.5 and r.extra["start_late_s"] >= r.extra["ready_late_s"], r.extra
        assert 0 <= connected_once_ready_s(r) < 0.5, r.extra
