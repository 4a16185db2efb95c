"""Lab 1's held-point controls in the ledger (issue 37): each switch's arm, kept beside a reference as
controlled/held-ARM (scripts/lab1-controls.sh), tests its cause of the headline's divergence."""

import shutil

import pandas as pd

from mptcplab.judge import claims
from mptcplab.labs.lab1 import claims as ledger
from mptcplab.run.lab import REPO_ROOT

REF = REPO_ROOT / "solutions" / "results" / "lab1"


def headline(t):
    [c] = [c for c in claims.evaluate(ledger.CLAIMS[:1], t)]
    return {k["control"]: k for k in c["causes"]}


def held(mptcp, tcp, buffer="512K"):
    """A made-up arm's held point: minrtt+rp and single-path TCP held by SO_SNDBUF `buffer` (512K: 1 MiB)."""
    rows = [{"group": "held", "buffer": buffer, "config": "mptcp", "scheduler": "minrtt+rp", "goodput_transfer_mbps": m}
            for m in mptcp]
    rows += [{"group": "held", "buffer": buffer, "config": "tcp-fast", "scheduler": None, "goodput_transfer_mbps": x}
             for x in tcp]
    return pd.DataFrame(rows)


def test_every_arm_is_a_control_of_the_headline_and_not_measured_until_kept():
    causes = headline(ledger.tables(REF))
    for arm in ledger.HELD_ARMS:
        assert causes[f"held-{arm}"]["status"] == claims.UNMEASURED
        assert f"scripts/lab1-controls.sh {arm}" in causes[f"held-{arm}"]["note"]


def test_an_arm_that_brings_mptcp_below_tcp_measures_its_cause():
    t = {**ledger.tables(REF), "arms": {"shaper": held([44, 47, 50, 46, 45, 48, 43, 49, 47, 46],
                                                       [93, 94, 93, 92, 94, 93, 94, 93, 92, 93])}}
    causes = headline(t)
    assert causes["held-shaper"]["status"] == claims.HOLDS
    assert causes["held-offloads"]["status"] == claims.UNMEASURED


def test_an_arm_kept_beside_a_reference_is_read_from_its_folder(tmp_path):
    """The reference's own held point copied in as an arm: the same comparison as held-1MiB's."""
    shutil.copytree(REF / "paper-point", tmp_path / "controlled" / "held-tso2")
    arms = ledger.held_arms(tmp_path)
    assert list(arms) == ["tso2"]
    t = {**ledger.tables(REF), "arms": arms}
    causes = headline(t)
    assert causes["held-tso2"]["numbers"] == causes["held-1MiB"]["numbers"]


def test_the_accounting_control_reads_each_held_buffer_below_1_mib(tmp_path):
    """minrtt-vs-out-of-tree.md's runs at SO_SNDBUF 384K/320K/256K, kept as controlled/held-384K...: at
    768 KiB minrtt+rp below TCP measures the cause; a folder holding another buffer is not read as it."""
    below = {"384K": held([44, 47, 50, 46, 45, 48, 43, 49, 47, 46], [93, 94, 93, 92, 94, 93, 94, 93, 92, 93], "384K"),
             "320K": held([60, 61], [93, 94], "512K")}  # kept under the wrong name
    causes = headline({**ledger.tables(REF), "below": below})
    assert causes["accounting-768K"]["status"] == claims.HOLDS
    assert causes["accounting-640K"]["status"] == claims.UNMEASURED and "not SO_SNDBUF 320K" in causes["accounting-640K"]["note"]
    assert causes["accounting-512K"]["status"] == claims.UNMEASURED and "--controlled held-256K" in causes["accounting-512K"]["note"]
    shutil.copytree(REF / "paper-point", tmp_path / "controlled" / "held-256K")
    assert list(ledger.held_below(tmp_path)) == ["256K"]


def test_each_held_point_is_judged_against_the_papers_figure_in_the_ledgers_family():
    """The reference's held minrtt+rp stays above the paper's 46.8 Mbit/s (sd 3.54, 5 runs); an arm at
    the paper's figure is not resolved, with the held runs that would resolve it; an arm well below it
    holds; an arm not kept is not measured. Each is one more comparison of the ledger's Holm family."""
    tcp = [93, 94, 93, 92, 94, 93, 94, 93, 92, 93]
    t = {**ledger.tables(REF), "arms": {"shaper": held([44, 47, 50, 46, 45, 48, 43, 49, 47, 46], tcp),
                                        "rmem": held([30, 32, 29, 31, 33, 30, 28, 31, 32, 30], tcp)}}
    causes = headline(t)
    ref = causes["held-1MiB-vs-paper"]
    assert ref["status"] == claims.FAILS and ref["interval"][0] > 0 and ref["numbers"]["paper_mbps"] == 46.8
    shaper = causes["held-shaper-vs-paper"]
    assert shaper["status"] == claims.UNRESOLVED and shaper["runs_needed"] and shaper["interval"][0] < 0 < shaper["interval"][1]
    assert causes["held-rmem-vs-paper"]["status"] == claims.HOLDS
    assert causes["held-tso2-vs-paper"]["status"] == claims.UNMEASURED
    assert ref["family"] == shaper["family"] == causes["held-shaper"]["family"]
    assert ledger.against_paper({"claims": [{"id": "slower-than-tcp", "causes": list(causes.values())}]}) == ref
