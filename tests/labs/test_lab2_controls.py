"""Lab 2's controls of issue 37 as switches: the load-dependent medium (a RED queue on the shared
link: the qdiscs the kit installs), the shared bottleneck with mobility events (the events change
the paths behind the shared link), and the claims ledger, which says "not measured" until a control
set's runs are kept beside the reference and decides them from what the runs read back once they are."""

import json
import time

import pandas as pd
import pytest

from mptcplab.core.errors import UsageError
from mptcplab.judge import claims
from mptcplab.labs.lab2 import claims as ledger, experiment
from mptcplab.net.links import LinkSpec
from mptcplab.net.topology import Network
from mptcplab.run.lab import REPO_ROOT, get_lab

REF = REPO_ROOT / "solutions" / "results" / "lab2"
RED = "rate=5mbit,queue=50,red=50%"


def emulator_tc(topo, dev):
    """The `tc qdisc` commands the kit runs on the emulator's device `dev`, from `qdisc` on."""
    return [c.argv[4:] for c in topo.commands() if c.argv[:2] == ["tc", "-n"] and dev in c.argv
            and c.argv[3] == "qdisc"]


def test_red_on_the_shared_link_replaces_netems_fifo_with_a_token_bucket_and_red():
    lab = get_lab("lab2")
    fifo = experiment.shared_topology(lab.load_params(False))
    red = experiment.shared_topology(lab.load_params(False, {"shared_bottleneck": {"link": RED}}))
    for t in (fifo, red):
        t.netem = True
    assert emulator_tc(fifo, "ifb-shared") == [["replace", "dev", "ifb-shared", "root", "netem", "rate", "5mbit",
                                                "limit", "50"]]
    root, child = emulator_tc(red, "ifb-shared")
    assert root == ["replace", "dev", "ifb-shared", "root", "handle", "1:", "tbf", "rate", "5mbit", "burst", "3028",
                    "limit", str(50 * 1514)]
    # RED inside the bucket: thresholds 8 and 25 packets of the 50 (1/6, 1/2), max_p 0.5, the link's rate
    assert child == ["replace", "dev", "ifb-shared", "parent", "1:1", "handle", "10:", "red", "limit", str(50 * 1514),
                     "min", str(8 * 1514), "max", str(25 * 1514), "avpkt", "1514", "burst", "14",
                     "probability", "0.5", "bandwidth", "5mbit"]
    # the paths keep their delays, unchanged by the switch
    assert emulator_tc(red, "b-p1") == emulator_tc(fifo, "b-p1")


def test_red_needs_a_rate_and_no_netem_field():
    assert str(LinkSpec.parse(RED)) == "rate=5mbit,delay=0ms,queue=50,red=50%"
    for bad in ("queue=50,red=50%", "rate=5mbit,delay=10ms,red=50%", "rate=5mbit,loss=1%,red=50%"):
        with pytest.raises(UsageError, match="red needs a rate and no delay"):
            LinkSpec.parse(bad)
    for bad in ("rate=5mbit,red=0%", "rate=5mbit,red=150%", "rate=5mbit,red=0.5"):
        with pytest.raises(UsageError, match="bad red"):
            LinkSpec.parse(bad)
    with pytest.raises(UsageError, match="RED is two qdiscs"):
        LinkSpec.parse(RED).qdisc_args(0.1, netem=True)
    lab = get_lab("lab2")  # a path's own link has its delay in netem: refused, not silently FIFO
    with pytest.raises(UsageError, match="red needs"):
        lab.topology(lab.load_params(False, {"paths": {"p1": {"link": "rate=5mbit,queue=25,red=50%"}}}))


def test_the_shared_variant_with_mobility_runs_the_events_on_the_shared_network():
    lab = get_lab("lab2")
    params = lab.load_params(False, {"variants": ["shared_mobility"], "repetitions": 1,
                                     "algorithms": ["uncoupled", "coupled"], "fairness": {"repetitions": 0}})
    points = lab.points(params)
    assert [p.key for p in points] == ["shared_mobility-uncoupled-r1", "shared_mobility-coupled-r1"]
    assert all(p.topology is experiment.shared_topology and p.values["mobility"] == params["mobility"]
               and p.values["shared_bottleneck"] == params["shared_bottleneck"] for p in points)
    # the events, on the shared network: each path's own rate and delay behind the shared link change
    topo = experiment.shared_topology(params)
    topo.netem = True
    net = Network(topo)
    ran = []
    net.check_all = lambda cmds: ran.extend(c.argv for c in cmds)
    applied = []
    timers = experiment._schedule_mobility(net, params, 0.2, time.time(), applied)
    for t in timers:
        t.join(5)
    assert [m["path"] for m in sorted(applied, key=lambda m: m["at_s"])] == ["p1", "p4", "p1"]
    forward = [c[8:] for c in ran if c[3:5] == ["qdisc", "replace"] and c[6] == "b-p1"]
    assert ["netem", "delay", "60ms", "rate", "1mbit"] in [c[:5] for c in forward]
    assert not any("ifb-shared" in c for c in ran)  # the shared link itself is not what moves


def test_the_controls_are_not_measured_until_their_runs_are_kept(tmp_path):
    """On the reference (no such runs): "not measured yet", naming the control set. With runs kept
    under a control set's name (made here from the reference's own, relabelled), each is decided from
    what the runs read back, and refused when they do not show it (another program, a FIFO link)."""
    t = ledger.tables(REF)
    by = {c["id"]: c for c in claims.evaluate(ledger.CLAIMS, t)}
    for claim, control in (("lia-static-gain", "report-alpha"), ("cs218-static-gain", "load-loss"),
                           ("coupled-static", "load-loss"), ("coupled-mobility", "shared-mobility")):
        k = next(k for k in by[claim]["causes"] if k["control"] == control)
        assert k["status"] == claims.UNMEASURED and f"control set {control}" in k["note"], k

    tp = t["throughput"]
    static = tp[tp.variant == "static"]
    rule = static[static.algo.isin(["uncoupled", "lia", "cs218"])].copy()
    rule["algo"] = rule.algo.map({"uncoupled": "uncoupled", "lia": "lia_report", "cs218": "cs218_report"})
    rule["cc"] = rule.algo.map({"uncoupled": "mlab_uncoupled", "lia_report": "mlab_rlia", "cs218_report": "mlab_rcs218"})
    shared = t["controlled"]["shared-bottleneck"]
    red_manifest = json.loads(json.dumps(shared["manifest"]))
    red_manifest["network"]["bottleneck"]["link"] = RED
    red_manifest["network"]["qdiscs"] = [  # as `tc qdisc show` lists what the kit installs with the switch
        "qdisc tbf 1: dev ifb-shared root refcnt 2 rate 5Mbit burst 3028b lat 116ms",
        "qdisc red 10: dev ifb-shared parent 1:1 limit 75700b min 12112b max 37850b "]
    mobile = shared["throughput"].assign(variant="shared_mobility")
    t["controlled"].update({
        "report-alpha": {"throughput": rule, "fairness": pd.DataFrame(), "manifest": {}},
        "load-loss": {**shared, "manifest": red_manifest},
        "shared-mobility": {**shared, "throughput": mobile}})
    by = {c["id"]: c for c in claims.evaluate(ledger.CLAIMS, t)}

    def control(claim, name):
        return next(k for k in by[claim]["causes"] if k["control"] == name)

    for claim, name, words in (("lia-static-gain", "report-alpha", "a = 1/√n"),
                               ("cs218-static-gain", "load-loss", "RED"),
                               ("coupled-mobility", "shared-mobility", "mobility events")):
        k = control(claim, name)
        assert k["status"] != claims.UNMEASURED and words in k["note"], k
    # runs that do not show the change are no evidence of it
    t["controlled"]["report-alpha"]["throughput"] = rule.assign(cc="mlab_lia")
    t["controlled"]["load-loss"] = {**shared, "manifest": {**red_manifest, "network": {
        **red_manifest["network"], "qdiscs": shared["manifest"]["network"]["qdiscs"]}}}  # configured, not listed
    by = {c["id"]: c for c in claims.evaluate(ledger.CLAIMS, t)}
    assert "mlab_rlia" in control("lia-static-gain", "report-alpha")["note"]
    assert control("lia-static-gain", "report-alpha")["status"] == claims.UNMEASURED
    assert control("coupled-static", "load-loss")["status"] == claims.UNMEASURED


def test_the_reports_controlled_section_names_the_red_queue():
    from mptcplab.labs.lab2 import analysis

    t = ledger.tables(REF)
    shared = t["controlled"]["shared-bottleneck"]
    red = json.loads(json.dumps(shared["manifest"]))
    red["network"]["bottleneck"]["link"] = RED
    assert "RED" not in analysis.mechanisms(shared, t["parameters"])["shared"][1]
    assert "with a RED queue (up to 50%" in analysis.mechanisms({**shared, "manifest": red}, t["parameters"])["shared"][1]
