"""Lab 2's claims ledger on the committed reference (the verdicts its claims.json records, each
divergence with its controls' status) and on a quick-like run (2 runs, no controlled runs, an
algorithm left out: "not resolved" or "not measured", saying why)."""

import shutil

import pandas as pd
import pytest

from mptcplab.judge import claims
from mptcplab.labs.lab2 import claims as ledger
from mptcplab.run.lab import REPO_ROOT, get_lab

REF = REPO_ROOT / "solutions" / "results" / "lab2"


@pytest.fixture(scope="module")
def judged() -> dict:
    return {c["id"]: c for c in claims.evaluate(ledger.CLAIMS, ledger.tables(REF))}


def test_the_reference_verdicts_are_those_committed(judged):
    committed = {c["id"]: (c["status"], c["cause"]) for c in claims.load(REF)["claims"]}
    assert {k: (c["status"], c["cause"]) for k, c in judged.items()} == committed


def test_each_divergence_names_its_controls(judged):
    lia = judged["lia-static-gain"]
    assert lia["status"] == claims.FAILS and lia["paper_value"].endswith("(+10.8%)")
    status = {k["control"]: k["status"] for k in lia["causes"]}
    # every control kept beside the reference excludes the report's ratio; issue 37's two are untried
    assert status == {"cross-half": claims.FAILS, "cross-1.5": claims.FAILS, "shared-bottleneck": claims.FAILS,
                      "report-alpha": claims.UNMEASURED, "load-loss": claims.UNMEASURED}
    assert lia["cause"] == "unexplained, tried: cross-half, cross-1.5, shared-bottleneck"
    coupled = judged["coupled-static"]
    assert coupled["cause"].startswith("cause measured by shared-bottleneck")
    assert "still admits" in coupled["cause"]  # the control's interval allows a penalty: said, not hidden
    # the shared run has no mobility events: it is no control of the mobility row
    assert judged["coupled-mobility"]["cause"] == "not tested"


def test_a_quick_run_says_what_it_lacks(tmp_path):
    for name in ("subflows.csv", "fairness.csv", "timeseries.csv", "lab2-manifest.json"):
        shutil.copy(REF / name, tmp_path / name)
    tp = pd.read_csv(REF / "throughput.csv")
    tp[(tp.rep <= 2) & (tp.algo != "lia")].to_csv(tmp_path / "throughput.csv", index=False)
    by = {c["id"]: c for c in claims.evaluate(ledger.CLAIMS, ledger.tables(tmp_path))}
    assert by["lia-static-gain"]["status"] == claims.UNMEASURED
    assert "the static runs of lia" in by["lia-static-gain"]["note"]
    assert by["cs218-static-gain"]["status"] == claims.UNRESOLVED and by["cs218-static-gain"]["runs_needed"]
    assert {k["status"] for k in by["cs218-static-gain"]["causes"]} == {claims.UNMEASURED}


def test_the_lab_declares_its_ledger_and_fragments():
    lab = get_lab("lab2")
    assert lab.judging.claims is ledger
    made = lab.judging.fragments(REF)
    assert {"reference", "setup", "throughput", "sizes", "causes", "controlled"} <= set(made)
    assert "6.12.117" in made["reference"] and "lia-static-gain" in made["causes"]
