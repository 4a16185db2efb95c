"""Real-kernel test: every kit congestion control loads, runs on BOTH subflows of a real MPTCP
connection (seen with `ss -ti` in the sender's namespace), couples (its counters saw two subflows),
and unloads, leaving no struct_ops and no namespace behind."""

import subprocess
import threading
import time

import pytest

from mptcplab.core import kernel
from mptcplab.labs.lab2 import cc
from mptcplab.measure import traffic
from mptcplab.net.topology import NetPath, Topology
from mptcplab.run.results import experiment_lock

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not kernel.struct_ops_usable() or __import__("os").geteuid() != 0,
                                 reason="needs root and BPF struct_ops (BTF, bpftool, clang; not UML)")]


def _kit_namespaces(run_id: str) -> list[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return [line.split()[0] for line in out.splitlines() if run_id in line]


def test_each_algorithm_runs_on_both_subflows_and_unloads():
    topo = Topology("cctest", hosts=("snd", "rcv"),
                    paths=[NetPath("p1", "snd", "rcv", "rate=5mbit"), NetPath("p2", "snd", "rcv", "rate=5mbit")],
                    mptcp_subflows=2)
    seen = {}
    with experiment_lock():
        already = set(cc.list_loaded())
        with cc.loaded() as names:
            assert set(names) <= set(cc.available())
            with topo.up() as net:
                for algo in cc.ALGORITHMS.values():
                    port = 5201 + algo.code
                    before = cc.stats(algo.name)
                    result = {}
                    t = threading.Thread(target=lambda: result.update(r=traffic.bulk(
                        net, "snd", "rcv", "p1", proto="mptcp", duration=3, cc=algo.name, port=port)))
                    t.start()
                    time.sleep(2)
                    seen[algo.name] = cc.in_use(net, "snd", port)
                    t.join()
                    r = result["r"]
                    after = cc.stats(algo.name)
                    assert r.flows[0]["cc"] == algo.name
                    assert r.flows[0]["subflows"] == 2
                    assert r.goodput_transfer_mbps > 3, f"{algo.name}: {r.goodput_transfer_mbps:.2f} Mbit/s over two 5 Mbit/s paths"
                    socks = seen[algo.name]
                    assert len(socks) == 2 and all(s["mptcp_subflow"] for s in socks), socks
                    assert {s["cc"] for s in socks} == {algo.name}, socks
                    assert {s["local"].split(":")[0] for s in socks} == {net.address("snd", "p1"),
                                                                         net.address("snd", "p2")}, socks
                    assert after["acks"] > before.get("acks", 0)
                    assert after["coupled_acks"] > before.get("coupled_acks", 0), "never saw a sibling subflow"
                    assert after["max_subflows"] == 2
                    if algo.name == "mlab_cs218":
                        assert after["dwnd_acks"] > before.get("dwnd_acks", 0)
        left = set(cc.list_loaded()) - already
    assert not left, f"still registered: {left}"
    assert not _kit_namespaces(topo.run_id)
