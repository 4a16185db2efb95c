"""The network's switches (topology.SWITCHES, each lab's [network] table; issue 37's controls): the
commands each one adds or changes, and, where this kernel can build the network (root and tbf, no
netem needed), what the kernel reads back: `tc -s qdisc`, `ethtool -k`, sysctl."""

import os
import re

import pytest

from mptcplab.core import kernel
from mptcplab.core.errors import UsageError
from mptcplab.net.topology import KIT_MIN_TSO_SEGS, NetPath, Topology, switches
from mptcplab.run.lab import get_lab


def two_paths(netem=True, **kw):
    """Lab 1's two paths; without netem (this host) the delay is left out so tbf can build them."""
    slow = "rate=100mbit,delay=40ms" if netem else "rate=100mbit"
    return Topology("sw", ("snd", "rcv"), [NetPath("fast", "snd", "rcv", "rate=100mbit"),
                                           NetPath("slow", "snd", "rcv", slow)], netem=netem, **kw)


def argvs(topo):
    """The commands, the run's own namespace names taken out."""
    return [[a.replace(topo.run_id, "RUN") for a in c.argv] for c in topo.commands()]


def test_the_switches_default_to_the_kits_network():
    assert switches(None) == {"min_tso_segs": KIT_MIN_TSO_SEGS, "offloads": False, "sender_shaper": False}
    assert argvs(two_paths(**switches({}))) == argvs(two_paths())
    for bad in ({"min_tso_segs": 0}, {"min_tso_segs": True}, {"offloads": "yes"}, {"shaper": True}):
        with pytest.raises(UsageError, match="network"):
            switches(bad)


def test_min_tso_segs_sets_every_host_and_a_hosts_own_sysctl_still_wins():
    cmds = argvs(two_paths(min_tso_segs=2, sysctls={"rcv": {"net.ipv4.tcp_min_tso_segs": "8"}}))
    set_ = {(c[3], c[-1]) for c in cmds if c[-1].startswith("net.ipv4.tcp_min_tso_segs=")}
    topo = two_paths()
    assert {v for _, v in set_} == {"net.ipv4.tcp_min_tso_segs=2", "net.ipv4.tcp_min_tso_segs=8"}
    assert len(set_) == 2 and topo.base_sysctls()["net.ipv4.tcp_min_tso_segs"] == str(KIT_MIN_TSO_SEGS)


def test_offloads_go_on_at_the_hosts_and_stay_off_at_the_emulator():
    topo = two_paths(offloads=True)
    eth = [c for c in argvs(topo) if "ethtool" in c]
    hosts = [c for c in eth if c[3] != "mlab-RUN-emu"]
    emu = [c for c in eth if c[3] == "mlab-RUN-emu"]
    assert len(hosts) == len(emu) == 4
    assert all(c[-6:] == ["tso", "on", "gso", "on", "gro", "on"] for c in hosts)
    assert all(c[-6:] == ["tso", "off", "gso", "off", "gro", "off"] for c in emu)


def test_the_sender_shaper_moves_the_rate_to_the_senders_egress_and_leaves_the_delay():
    topo = two_paths(sender_shaper=True)
    tc = [c for c in argvs(topo) if c[0] == "tc"]
    shaper = [c for c in tc if c[2] == "mlab-RUN-snd"]
    assert [c[6] for c in shaper] == ["fast", "slow"] and all(c[8:11] == ["tbf", "rate", "100mbit"] for c in shaper)
    forward = {c[6]: c[8:] for c in tc if c[2] == "mlab-RUN-emu" and c[6].startswith("b-")}
    assert "rate" not in forward["b-slow"] and forward["b-slow"][:3] == ["netem", "delay", "40ms"]
    backward = {c[6]: c[8:] for c in tc if c[2] == "mlab-RUN-emu" and c[6].startswith("a-")}
    assert "rate" in backward["a-slow"]  # the ACK direction keeps its link
    # the slow path's queue (one BDP, 661 packets) moves with the rate, into tbf's limit in bytes
    slow = next(c for c in shaper if c[6] == "slow")
    assert int(slow[slow.index("limit") + 1]) == 661 * 1514
    with pytest.raises(UsageError, match="no rate"):
        Topology("sw", ("snd", "rcv"), [NetPath("p", "snd", "rcv", "delay=30ms")], netem=True, sender_shaper=True)


@pytest.mark.parametrize("lab", ["lab1", "lab2", "lab3"])
def test_every_lab_takes_the_switches_from_its_network_table(lab):
    params = get_lab(lab).load_params(True, {"network": {"min_tso_segs": 2}})
    topo = get_lab(lab).topology(params)
    assert topo.min_tso_segs == 2 and topo.base_sysctls()["net.ipv4.tcp_min_tso_segs"] == "2"
    assert get_lab(lab).topology(get_lab(lab).load_params(True)).min_tso_segs == KIT_MIN_TSO_SEGS


def test_lab1_takes_the_shaper_and_offloads():
    lab = get_lab("lab1")
    topo = lab.topology(lab.load_params(True, {"network": {"sender_shaper": True, "offloads": True}}))
    assert topo.sender_shaper and topo.offloads


# ---------------------------------------------------------------- read back from this kernel

native = pytest.mark.skipif(os.geteuid() != 0 or not kernel.tbf_usable(),
                            reason="needs root and tbf to build a network on this host")


@native
def test_the_kernel_reads_back_each_switch(tmp_path):
    """Built here (tbf, no delay): the sender's tbf carries the packets, the emulator's forward
    qdisc has no rate, the hosts' offloads are on, every host has tcp_min_tso_segs 2, and the
    receiver's tcp_rmem (Lab 1's receiver control, a plain sysctl) is what was asked."""
    rmem = "4096 87380 6291456"
    topo = two_paths(netem=False, min_tso_segs=2, offloads=True, sender_shaper=True,
                     sysctls={"rcv": {"net.ipv4.tcp_rmem": rmem}})
    with topo.up() as net:
        net.run("snd", ["ping", "-c", "3", "-i", "0.2", "-q", net.address("rcv", "slow")])
        shaped = net.run("snd", ["tc", "-s", "qdisc", "show", "dev", "slow"]).stdout
        assert re.search(r"qdisc tbf \S+ root .*rate 100Mbit", shaped), shaped
        assert int(re.search(r"Sent (\d+) bytes (\d+) pkt", shaped).group(2)) >= 3, shaped
        forward = net.run("emu", ["tc", "qdisc", "show", "dev", "b-slow"]).stdout
        assert "rate" not in forward and "tbf" not in forward, forward
        for host in ("snd", "rcv"):
            off = net.offloads(host, "slow")
            assert off["tcp-segmentation-offload"] == off["generic-segmentation-offload"] == "on", off
            assert off["generic-receive-offload"] == "on", off
            assert net.sysctl(host, "net.ipv4.tcp_min_tso_segs") == "2"
        assert net.offloads("emu", "b-slow")["generic-segmentation-offload"] == "off"
        assert net.sysctl("rcv", "net.ipv4.tcp_rmem") == " ".join(rmem.split())
        snap = net.snapshot()
        assert snap["switches"] == {"min_tso_segs": 2, "offloads": True, "sender_shaper": True}
        assert any("tbf" in q for q in snap["host_qdiscs"]["snd"])
