"""Lab 3's tso2_quick and n30_loss10 controls on made-up runs (labs/lab3/claims.py): the tso arms are
paired by run, the range control compares Fig. 16's gap at n 1-4 with n 20-30, and the high-loss
claim reads the range control's runs beside the reference's."""

import pandas as pd
import pytest

from mptcplab.labs.lab3 import analysis as la
from mptcplab.labs.lab3 import claims as ledger


def runs(n, loss, pps, names=None) -> pd.DataFrame:
    """Random-loss runs at these n, configured loss (fractions) and measured packets/s."""
    k = len(n)
    r = pd.DataFrame({"run": names or [f"random-r{i}" for i in range(k)], "scenario": "random", "n": n,
                      "loss_cfg": [f"{x:.0%}" for x in loss], "loss": loss, "base_rtt": 0.06, "p": loss,
                      "p_e": loss, "p_r": loss, "rtt": 0.061, "T": 0.3, "model_b": 1.0, "pps": pps,
                      "timeouts": 0, "loss_events_per_flow": 100, "queued": False})
    return la.predict(r)


def test_the_tso_arms_are_paired_by_run_and_say_which_way_the_gap_moved():
    names = [f"random-{l}pct-n{n:02d}-r{k}" for l in (1, 2) for n in (1, 4) for k in (1, 2)]
    n, loss = [1, 1, 4, 4] * 2, [0.01] * 4 + [0.02] * 4
    base = runs(n, loss, [200.0] * 8, names)
    # measured k times the larger prediction: the gap is (1 - lower/larger) / k, so the kit's arm
    # (k about 1.05) has the larger gap and the kernel's own (k about 1.5) the smaller
    top = base[["model1", "n_pftk_p"]].max(axis=1)
    kit = base.assign(pps=top * [1.05, 1.06, 1.05, 1.06, 1.04, 1.05, 1.04, 1.05])
    own = base.assign(pps=top * 1.5)
    kit, own = la.predict(kit), la.predict(own)
    t = {"runs": base, "controls": {ledger.TSO64: {"runs": kit}, ledger.TSO2: {"runs": own.iloc[::-1]}}}
    v = ledger.tso_moves_gap(t)
    assert v.numbers["pairs"] == 8 and v.numbers["gap_tso64"] > v.numbers["gap_tso2"]
    assert "tcp_min_tso_segs 64" in v.note and "8 paired" in v.note
    del t["controls"][ledger.TSO2]
    with pytest.raises(KeyError, match="tso2_quick"):
        ledger.tso_moves_gap(t)


def test_the_range_control_compares_few_and_many_flows_and_feeds_the_high_loss_claim():
    n = [1, 4, 20, 30] * 2
    loss = [0.05] * 4 + [0.10] * 4
    ctrl = runs(n, loss, [30.0, 120.0, 600.0, 900.0, 15.0, 60.0, 300.0, 450.0])
    t = {"runs": runs([1, 2], [0.01, 0.02], [200.0, 400.0]), "controls": {ledger.RANGE: {"runs": ctrl}}}
    v = ledger.more_flows_moves_gap(t)
    assert v.numbers["pairs"] == 4 and "n 1-4" in v.note and "4 pairs at the same loss" in v.note
    # the reference here has no run above 2% loss: the claim is judged on the control's eight
    assert len(ledger.random_runs(ledger.with_range(t), la.GRADED_MAX_LOSS)) == 8
    high = next(c for c in ledger.CLAIMS if c.id == "model1-high-loss")
    assert high.decide(t).numbers["runs"] == 8
    few = {"runs": t["runs"], "controls": {ledger.RANGE: {"runs": ctrl[ctrl.n <= 4]}}}
    with pytest.raises(KeyError, match="n >= 20"):
        ledger.more_flows_moves_gap(few)
    assert ledger.with_range({"runs": t["runs"], "controls": {}})["runs"] is t["runs"]
