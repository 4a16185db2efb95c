"""Transfers started together (traffic.concurrent: Lab 2's fairness runs) connect at one agreed
instant and each keeps its own result. The kit's real sender and receiver run over loopback; only
the network namespaces are left out."""

import os
import signal
import subprocess
import time

import pytest

from mptcplab.core.state import kill_process_group
from mptcplab.measure.traffic import Transfer, concurrent, spawn


class LoopbackNet:
    """The part of a running network the transfers use, every host on 127.0.0.1 (and its spawner,
    traffic.spawn, a process of this test)."""
    sender_start_s = None

    def __init__(self):
        self.spawners, self.procs = {}, []

    def address(self, host, path):
        return "127.0.0.1"

    def ns(self, host):
        return f"test-{os.getpid()}-{host}"

    def track(self, proc, what):
        self.procs.append(proc)
        return proc

    def run(self, host, argv, timeout=None, **kw):
        return subprocess.run(argv, check=True, timeout=timeout, capture_output=True)

    def popen(self, host, argv, what="", **kw):
        return self.track(subprocess.Popen(argv, start_new_session=True, **kw), what)

    def teardown(self):
        for proc in reversed(self.procs):
            kill_process_group(proc.pid, grace=1.0)
            proc.wait(timeout=2)
        for sock in self.spawners.values():
            os.unlink(sock)

    def stop(self, proc, grace=2.0):
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=grace)


@pytest.fixture
def net():
    net = LoopbackNet()
    yield net
    net.teardown()


def two_transfers(net):
    return concurrent(net, [Transfer("snd", "rcv", "p1", port=15201, sndbuf=65536),
                            Transfer("snd", "rcv", "p2", port=15202, sndbuf=65536)], duration=1.0)


def connected_once_ready_s(r) -> float:
    """How long after the later of the agreed instant and its own start-up a sender connected: what
    the mechanism controls. The rest of `start_late_s`, `ready_late_s`, is the host starting the
    process more slowly than start_time allowed (a loaded machine), recorded in every summary."""
    return r.extra["start_late_s"] - r.extra["ready_late_s"]


def test_transfers_start_at_one_instant_and_keep_their_own_results(net):
    a, b = two_transfers(net)
    assert net.sender_start_s is not None  # the start-up cost was measured once, for both
    for r in (a, b):
        assert r.proto == "tcp" and len(r.flows) == 1 and r.flows[0]["bytes"] > 0
        assert r.flows[0]["subflows"] == 1 and r.goodput_transfer_mbps > 0
        # each sender waited for the instant and connected as soon as it came (or, on a host too
        # busy to start it in time, as soon as it was ready): never before, never dawdling after
        assert r.extra["start_late_s"] >= 0 and 0 <= connected_once_ready_s(r) < 0.5, r.extra
    assert a.flows[0]["peer"].endswith(":15201") and b.flows[0]["peer"].endswith(":15202")


def test_a_sender_started_too_slowly_for_the_instant_connects_at_once_and_says_how_late_it_was(net):
    """A host busier than when start_time measured it: start_time allows each sender 0.7 s less
    than nothing, so the instant has passed before either is ready. A sender cannot wait for a past
    instant; it connects when ready, and its summary says the lateness was its start-up
    (`ready_late_s`), not the connection."""
    net.sender_start_s = -0.7
    for r in two_transfers(net):
        assert r.extra["ready_late_s"] > 0.5 and r.extra["start_late_s"] >= r.extra["ready_late_s"], r.extra
        assert 0 <= connected_once_ready_s(r) < 0.5, r.extra


def test_the_spawner_forks_each_role_as_a_process_of_its_own(net):
    """One spawner per host (started once), its children each in their own process group with the
    caller's pipes; exit statuses as subprocess.Popen gives them; stop by process group."""
    helped = spawn(net, "snd", "--help")
    out, err = helped.communicate(timeout=30)
    assert helped.returncode == 0 and "udp-sink" in out and err == ""
    bad = spawn(net, "snd", "client")  # argparse: --connect is required
    assert bad.communicate(timeout=30)[1].rstrip().endswith("the following arguments are required: --connect")
    assert bad.returncode == 2
    sink = spawn(net, "snd", "udp-sink", "--bind", "127.0.0.1", "--port", 15301, stdout=subprocess.DEVNULL)
    assert sink.poll() is None and os.getpgid(sink.pid) == sink.pid != os.getpgid(0)
    time.sleep(0.2)
    kill_process_group(sink.pid, grace=2.0)
    assert sink.wait(timeout=5) == -signal.SIGTERM
    assert list(net.spawners) == ["snd"] and len(net.procs) == 4  # the spawner and its three children
