"""Transfers started together (traffic.concurrent: Lab 2's fairness runs) connect at one agreed
instant and each keeps its own result. The kit's real sender and receiver run over loopback; only
the network namespaces are left out."""

import subprocess

from mptcplab.traffic import Transfer, concurrent


class LoopbackNet:
    """The part of a running network the transfers use, every host on 127.0.0.1."""
    sender_start_s = None

    def address(self, host, path):
        return "127.0.0.1"

    def run(self, host, argv, timeout=None, **kw):
        return subprocess.run(argv, check=True, timeout=timeout, capture_output=True)

    def popen(self, host, argv, what="", **kw):
        return subprocess.Popen(argv, **kw)

    def stop(self, proc, grace=2.0):
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=grace)


def test_transfers_start_at_one_instant_and_keep_their_own_results():
    net = LoopbackNet()
    a, b = concurrent(net, [Transfer("snd", "rcv", "p1", port=15201, sndbuf=65536),
                            Transfer("snd", "rcv", "p2", port=15202, sndbuf=65536)], duration=1.0)
    assert net.sender_start_s is not None  # the start-up cost was measured once, for both
    for r in (a, b):
        assert r.proto == "tcp" and len(r.flows) == 1 and r.flows[0]["bytes"] > 0
        assert r.flows[0]["subflows"] == 1 and r.mbps > 0
        # both senders waited for the same instant: neither connected much after it
        assert 0 <= r.extra["start_late_s"] < 0.5, r.extra
    assert a.flows[0]["peer"].endswith(":15201") and b.flows[0]["peer"].endswith(":15202")
