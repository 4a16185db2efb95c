"""Topology validation and the commands it generates (no network is built here)."""

import pytest

from mptcplab.core.errors import UsageError
from mptcplab.net import mptcpconf
from mptcplab.net.topology import NetPath, Topology


def kato(**kw):
    return Topology("t", ("snd", "rcv"), [NetPath("fast", "snd", "rcv", "rate=100mbit"),
                                          NetPath("slow", "snd", "rcv", "rate=100mbit,delay=40ms")],
                    netem=True, **kw)


def test_script_has_emulation_on_emulator_only_both_directions():
    topo = kato(mptcp_subflows=2)
    cmds = [c.argv for c in topo.commands()]
    qdiscs = [c for c in cmds if c[0] == "tc"]
    emu = topo.ns("emu")
    assert len(qdiscs) == 4 and all(c[2] == emu for c in qdiscs)
    slow = [c for c in qdiscs if c[6].endswith("-slow")]
    assert {c[6] for c in slow} == {"a-slow", "b-slow"} and all("40ms" in c for c in slow)


def test_offloads_off_on_every_veth_end():
    cmds = [c.argv for c in kato().commands()]
    eth = [c for c in cmds if "ethtool" in c]
    assert len(eth) == 8 and all(c[-6:] == ["tso", "off", "gso", "off", "gro", "off"] for c in eth)


def test_offloads_are_read_back_as_ethtool_reports_them():
    import subprocess
    from mptcplab.net.topology import Network

    out = ("Features for p1:\nrx-checksumming: on\ntcp-segmentation-offload: off\n"
           "\ttx-tcp-segmentation: off\ngeneric-segmentation-offload: off\ngeneric-receive-offload: on\n"
           "large-receive-offload: off [fixed]\nrx-gro-list: off\n")
    net = Network(kato())
    net.run = lambda host, argv, check=True: subprocess.CompletedProcess(argv, 0, out, "")
    assert net.offloads("rcv", "fast") == {"tcp-segmentation-offload": "off", "generic-segmentation-offload": "off",
                                           "generic-receive-offload": "on", "large-receive-offload": "off",
                                           "rx-gro-list": "off"}


def test_offloads_are_read_once_per_network_for_every_interface_of_every_path():
    """Set when the network is built and changed by nothing after, so read once, not before every
    run (an `ethtool` per interface costs seconds in an emulated CPU)."""
    import subprocess
    from mptcplab.net.topology import Network

    asked = []
    net = Network(kato())
    net.run = lambda host, argv, check=True: (asked.append((host, argv[-1])),
                                              subprocess.CompletedProcess(argv, 0, "rx-gro-list: off\n", ""))[1]
    first = net.offloads_all()
    assert net.offloads_all() is first and len(asked) == 4 * len(net.topo.paths) == len(first)
    assert {dev for _, dev in asked} == {"fast", "slow", "a-fast", "b-fast", "a-slow", "b-slow"}


def test_mptcp_endpoints_one_subflow_per_extra_path_with_dev():
    topo = kato(mptcp_subflows=2)
    cmds = [c.argv for c in topo.commands() if "mptcp" in c.argv]
    ep = [c for c in cmds if "endpoint" in c]
    assert ep == [["ip", "-n", topo.ns("snd"), "mptcp", "endpoint", "add", "10.2.0.1", "dev", "slow", "subflow"]]
    limits = {c[2]: c[-4:] for c in cmds if "limits" in c}
    assert limits[topo.ns("snd")] == ["subflow", "1", "add_addr_accepted", "0"]
    assert limits[topo.ns("rcv")] == ["subflow", "1", "add_addr_accepted", "0"]


def test_the_manifests_mptcp_state_is_one_batch_read_as_the_two_listings_were():
    """Network.snapshot lists a host's endpoints and limits with one `ip -batch` (mptcpconf.show_command);
    the manifest's `network.mptcp` keeps what `ip mptcp endpoint show` and `limits show` printed alone
    (as a Lab 2 sender's and receiver's manifest recorded them, session 22's trial-s0)."""
    argv, lines = mptcpconf.show_command("mlab-x-snd")
    assert argv == ["ip", "-n", "mlab-x-snd", "-batch", "-"]
    assert lines == "mptcp endpoint show\nmptcp limits show\n"
    sender = ("10.2.0.1 id 1 subflow dev p2 \n10.3.0.1 id 2 subflow dev p3 \n10.4.0.1 id 3 subflow dev p4 \n"
              "add_addr_accepted 0 subflows 3 \n")  # the batch's output (ip 6.1, trailing spaces and all)
    assert mptcpconf.parse_show(sender) == {
        "endpoints": ["10.2.0.1 id 1 subflow dev p2 ", "10.3.0.1 id 2 subflow dev p3 ", "10.4.0.1 id 3 subflow dev p4"],
        "limits": ["add_addr_accepted 0 subflows 3"]}
    assert mptcpconf.parse_show("add_addr_accepted 0 subflows 3 \n") == {  # the receiver: no endpoint
        "endpoints": [], "limits": ["add_addr_accepted 0 subflows 3"]}


def test_each_path_is_one_bridged_subnet():
    topo = kato()
    cmds = [c.argv for c in topo.commands()]
    emu = topo.ns("emu")
    assert ["ip", "-n", emu, "link", "add", "br-slow", "type", "bridge"] in cmds
    assert ["ip", "-n", emu, "link", "set", "a-slow", "master", "br-slow"] in cmds
    assert ["ip", "-n", emu, "link", "set", "b-slow", "master", "br-slow"] in cmds
    assert ["ip", "-n", topo.ns("snd"), "addr", "add", "10.2.0.1/24", "dev", "slow"] in cmds
    assert ["ip", "-n", topo.ns("rcv"), "addr", "add", "10.2.0.2/24", "dev", "slow"] in cmds
    assert not any("route" in c or "rule" in c for c in cmds)


def test_sysctls_per_host_and_metrics_cache_off():
    topo = kato(sysctls={"snd": {"net.ipv4.tcp_wmem": "4096 131072 131072"}})
    lines = topo.script().splitlines()
    assert f"ip netns exec {topo.ns('snd')} sysctl -qw 'net.ipv4.tcp_wmem=4096 131072 131072'" in lines
    assert f"ip netns exec {topo.ns('rcv')} sysctl -qw net.ipv4.tcp_no_metrics_save=1" in lines


def test_kernel_limits_are_raised_by_the_topology_never_lowered_and_put_back(monkeypatch):
    import mptcplab.net.topology as topology

    monkeypatch.setattr(topology, "_root_sysctl", lambda key: 212992)
    topo = kato(kernel_limits={"net.core.wmem_max": 4 << 20})
    assert topo.commands()[0].argv == ["sysctl", "-qw", f"net.core.wmem_max={4 << 20}"]
    assert "the kernel's net.core.wmem_max is 212992" in topo.script()
    ran = []
    monkeypatch.setattr(topology, "remove_namespace", lambda name: None)
    monkeypatch.setattr(topology.process, "run", lambda argv, **kw: ran.append(argv))
    topology.Network(topo).teardown()
    assert ran == [["sysctl", "-qw", "net.core.wmem_max=212992"]]
    # a kernel that already has more keeps it: nothing set, nothing put back
    monkeypatch.setattr(topology, "_root_sysctl", lambda key: 8 << 20)
    topo = kato(kernel_limits={"net.core.wmem_max": 4 << 20})
    assert not [c for c in topo.commands() if "net.core.wmem_max" in " ".join(c.argv)] and topo.limits_raised() == {}


def test_script_is_replayable_shell():
    script = kato(mptcp_subflows=2).script()
    assert script.startswith("#!/bin/sh") and "set -e" in script
    assert "tc -n mlab-" in script and "ip netns add mlab-" in script


def test_addresses():
    topo = kato()
    assert topo.address("snd", "slow") == "10.2.0.1" and topo.address("rcv", "fast") == "10.1.0.2"


@pytest.mark.parametrize("kwargs, words", [
    ({"hosts": ("snd", "rcv"), "paths": [NetPath("p", "snd", "nobody")]}, "unknown host 'nobody'"),
    ({"hosts": ("Snd",), "paths": []}, "host name"),
    ({"hosts": ("a", "b"), "paths": [NetPath("p", "a", "a")]}, "to itself"),
    ({"hosts": ("a", "b"), "paths": [NetPath("p", "a", "b")], "mptcp_subflows": 3}, "mptcp_subflows=3"),
    ({"hosts": ("a", "b"), "paths": [NetPath("p", "a", "b")], "sysctls": {"c": {}}}, "unknown host 'c'"),
])
def test_bad_topologies(kwargs, words):
    with pytest.raises(UsageError, match=words):
        Topology("t", netem=True, **kwargs)


def test_unknown_host_lookup():
    with pytest.raises(UsageError, match="unknown host 'x'"):
        kato().address("x", "fast")


def test_a_link_that_drops_its_rate_gets_a_new_netem_qdisc():
    """netem keeps a rate `tc qdisc replace` does not mention (netem_change sets it only from
    TCA_NETEM_RATE): Lab 3's random-loss runs kept the setup check's 20 Mbit/s that way."""
    from mptcplab.net.topology import Network

    topo = Topology("t", ("snd", "rcv"), [NetPath("p1", "snd", "rcv", "rate=20mbit,delay=30ms", "delay=30ms")],
                    netem=True)
    net = Network(topo)
    ran = []
    net.check_all = lambda cmds: ran.extend(c.argv for c in cmds)
    net.set_link("p1", "delay=30ms,loss=1%", "delay=30ms")
    b = [c for c in ran if "b-p1" in c]
    assert [c[4] for c in b] == ["del", "replace"] and "rate" not in b[1]
    assert [c[4] for c in ran if "a-p1" in c] == ["replace"]  # the ACK direction never had a rate
    ran.clear()
    net.set_link("p1", "delay=30ms,loss=2%", "delay=30ms")  # no rate before either: changed in place
    net.set_link("p1", "rate=8mbit,delay=30ms,queue=40", "delay=30ms")  # a rate is set by replace
    assert all(c[4] == "replace" for c in ran)


def test_a_bottleneck_is_one_queue_the_paths_cross_toward_b():
    """Every packet a host on the a side sends on a shared path goes to the bottleneck's ifb first
    (ingress redirect on the emulator's a-side port); the b side and the b->a direction are each
    path's own."""
    from mptcplab.net.topology import Bottleneck

    topo = Topology("t", ("snd", "rcv"), [NetPath("p1", "snd", "rcv", "delay=10ms"),
                                          NetPath("p2", "snd", "rcv", "delay=20ms")],
                    netem=True, mptcp_subflows=2, bottleneck=Bottleneck("shared", "rate=5mbit,queue=50", ("p1", "p2")))
    cmds = [c.argv for c in topo.commands()]
    emu = topo.ns("emu")
    assert ["ip", "-n", emu, "link", "add", "ifb-shared", "type", "ifb"] in cmds
    root = next(c for c in cmds if c[:6] == ["tc", "-n", emu, "qdisc", "replace", "dev"] and c[6] == "ifb-shared")
    assert root[8:] == ["netem", "rate", "5mbit", "limit", "50"]
    redirects = [c for c in cmds if "mirred" in c]
    assert [c[6] for c in redirects] == ["a-p1", "a-p2"] and all(c[-2:] == ["dev", "ifb-shared"] for c in redirects)
    # the redirect needs the ingress qdisc before it, and the paths keep their delays without a rate
    assert cmds.index(["tc", "-n", emu, "qdisc", "add", "dev", "a-p1", "handle", "ffff:", "ingress"]) < cmds.index(
        redirects[0])
    assert all("rate" not in c for c in cmds if c[:4] == ["tc", "-n", emu, "qdisc"] and c[6].startswith("b-"))
    with pytest.raises(UsageError, match="bottleneck 'shared'"):
        Topology("t", ("snd", "rcv"), [NetPath("p1", "snd", "rcv")], netem=True,
                 bottleneck=Bottleneck("shared", "rate=5mbit", ("p9",)))
