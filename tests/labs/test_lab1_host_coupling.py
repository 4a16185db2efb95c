"""Lab 1's host-coupling control (issue 37, item 4): the held point's split into fast and slow
minrtt+rp runs, against the `base` arm's runs one UML kernel at a time (controlled/held-base)."""

import shutil

import pandas as pd

from mptcplab.labs.lab1 import host_coupling as hc
from mptcplab.run.lab import REPO_ROOT

REF = REPO_ROOT / "solutions" / "results" / "lab1"


def runs(goodputs, host_per_guest=None):
    """Made-up held minrtt+rp runs: goodput and, per run, host seconds per guest second (10 guest s)."""
    ratio = host_per_guest or [1.0] * len(goodputs)
    return pd.DataFrame({"run": [f"r{i}" for i in range(len(goodputs))], "goodput_transfer_mbps": goodputs,
                         "guest_s": 10.0, "host_wall_s": [10.0 * r for r in ratio],
                         "host_per_guest": ratio})


SPLIT = runs([133, 131, 130, 128, 128, 110, 110, 105, 100, 99], [1.4, 1.6, 1.6, 1.4, 1.5, 1.9, 1.1, 2.0, 1.8, 1.8])


def test_the_reference_splits_five_fast_against_five_slow_and_is_not_measured_without_the_arm():
    v = hc.judge(REF)
    assert v["status"] == hc.UNMEASURED and "scripts/lab1-controls.sh base" in v["note"]
    ref = v["reference"]
    assert ref["split"] and (ref["fast"], ref["slow"]) == (5, 5) and ref["gap_mbps"] > 15
    assert -1 < ref["rho"] < 0  # host_wall_s / guest_s from runs-manifest.csv, exploratory
    assert "**not measured**" in hc.markdown(REF)


def test_a_split_survives_one_kernel_at_a_time():
    base = runs([134, 132, 129, 130, 131, 104, 101, 99, 98, 97])
    v = hc.verdict(SPLIT, base)
    assert v["status"] == hc.SURVIVES and (v["base"]["fast"], v["base"]["slow"]) == (5, 5)
    assert v["base"]["rho"] != v["base"]["rho"]  # one kernel, one ratio: no rank to correlate


def test_runs_in_one_group_do_not_survive():
    base = runs([131, 129, 133, 130, 128, 132, 127, 131, 130, 129], [1.1, 1.0, 1.2, 1.1, 1.0, 1.1, 1.2, 1.0, 1.1, 1.0])
    v = hc.verdict(SPLIT, base)
    assert v["status"] == hc.GONE and not v["base"]["split"]
    lone = runs([131, 129, 133, 130, 128, 132, 127, 131, 130, 100])  # one slow run is an outlier, not a group
    assert hc.verdict(SPLIT, lone)["status"] == hc.GONE


def test_the_arm_kept_beside_a_reference_is_read_from_its_folder(tmp_path):
    """The reference's own held point copied in as held-base: the same split, so it survives."""
    shutil.copytree(REF / "paper-point", tmp_path / "paper-point")
    shutil.copytree(REF / "paper-point", tmp_path / "controlled" / hc.BASE)
    v = hc.judge(tmp_path)
    assert v["status"] == hc.SURVIVES and v["base"] == v["reference"]
    assert "- held-base (one kernel at a time): split: 5 fast" in hc.markdown(tmp_path)
