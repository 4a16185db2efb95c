"""Lab 3's timeout_share control on made-up runs: both models fed the measured share of loss events
that ended in a timeout, in place of their own estimates (labs/lab3/timeout_share.py)."""

import numpy as np
import pandas as pd
import pytest

from mptcplab.judge import claims
from mptcplab.labs.lab3 import analysis as la
from mptcplab.labs.lab3 import claims as ledger
from mptcplab.labs.lab3 import models
from mptcplab.labs.lab3 import timeout_share as ts


def made_up_runs(timeouts=(0, 0, 3, 12), loss_events=(100, 400, 600, 900)) -> pd.DataFrame:
    """Four random-loss runs, 60 ms, a 300 ms RTO, b = 1; the measured throughput is made up."""
    n = len(timeouts)
    runs = pd.DataFrame({
        "run": [f"random-r{i}" for i in range(n)], "scenario": "random", "n": [1, 2, 4, 8][:n],
        "loss_cfg": ["1%", "2%", "3%", "5%"][:n], "base_rtt": 0.06,
        "p": [0.01, 0.02, 0.03, 0.05][:n], "p_e": [0.008, 0.015, 0.02, 0.03][:n],
        "p_r": [0.01, 0.02, 0.03, 0.05][:n], "rtt": 0.061, "T": 0.3, "model_b": 1.0,
        "pps": [130.0, 170.0, 260.0, 330.0][:n],
        "timeouts": list(timeouts), "loss_events_per_flow": list(loss_events)})
    return la.predict(runs)


def test_the_share_is_timeouts_over_loss_events_and_undefined_without_any():
    r = pd.DataFrame({"timeouts": [0, 3, 2], "loss_events_per_flow": [50, 12, 0]})
    share = ts.measured_share(r)
    assert share[0] == 0 and share[1] == 0.25 and np.isnan(share[2])


def test_fed_their_own_estimate_both_models_are_unchanged():
    """The fed formulas are the models': given each model's own timeout probability back, the same
    prediction to rounding (model 1 through Algorithm 1's steps, Padhye's eq. 31 without wmax)."""
    n, p, rtt, t0 = np.array([1, 3, 10]), np.array([0.001, 0.02, 0.08]), 0.06, 0.25
    own_q1 = models.per_flow_terms(n, p, rtt, t0, 1)["q1"]
    assert np.allclose(ts.model1(n, p, rtt, t0, 1, own_q1), models.parallel_per_flow(n, p, rtt, t0, 1), rtol=1e-12)
    own_q = models.pftk_timeout_probability(p, 2)
    assert np.allclose(ts.padhye(p, rtt, t0, 2, own_q), models.pftk(p, rtt, t0, 2), rtol=1e-12)


def test_fewer_timeouts_predict_more_throughput():
    p = 0.03
    assert ts.model1(4, p, 0.06, 0.3, 1, 0.0) > ts.model1(4, p, 0.06, 0.3, 1, 0.2) > ts.model1(4, p, 0.06, 0.3, 1, 1.0)
    assert ts.padhye(p, 0.06, 0.3, 1, 0.0) > ts.padhye(p, 0.06, 0.3, 1, 0.2) > ts.padhye(p, 0.06, 0.3, 1, 1.0)
    # no timeouts: model 1 is the TD periods alone, 1 / (p E[X] rtt)
    x = models.per_flow_terms(4, p, 0.06, 0.3, 1)["x"]
    assert ts.model1(4, p, 0.06, 0.3, 1, 0.0) == pytest.approx(1 / (p * x * 0.06))


def test_fed_adds_each_models_prediction_and_error_and_the_gap_both_ways():
    runs = made_up_runs()
    r = ts.fed(runs)
    assert list(r.timeout_share) == [0, 0, 0.005, pytest.approx(12 / 900)]
    assert np.allclose(r.err_model1_fed, r.model1_fed / r.pps - 1)
    assert np.allclose(r.n_pftk_p_fed, r.n * ts.padhye(r.p, r.rtt, r["T"], 1.0, r.timeout_share))
    g = ts.gaps(r)
    assert np.allclose(g.own, r.err_model1.abs() - r.err_n_pftk_p.abs())
    assert np.allclose(g.fed, r.err_model1_fed.abs() - r.err_n_pftk_p_fed.abs())
    # a run without loss events has no share and is left out
    assert len(ts.fed(made_up_runs(loss_events=(0, 400, 600, 900)))) == 3


def test_the_ledger_reads_the_control_as_fig16s_and_says_what_it_lacks():
    fig16 = next(c for c in ledger.CLAIMS if c.id == "fig16")
    control = next(k for k in fig16.controls if k.id == "timeout_share")
    v = control.decide({"runs": made_up_runs(), "controls": {}})
    assert v.comparison["pairs"] == 4 and v.expect == claims.GREATER
    assert v.numbers["runs"] == 4 and "fed the measured share" in v.note
    # runs recorded without their timeouts counted: not measured, naming what is missing
    old = made_up_runs().drop(columns=["timeouts"])
    [record] = [c for c in claims.evaluate((fig16,), {"runs": old, "controls": {}})[0]["causes"]
                if c["control"] == "timeout_share"]
    assert record["status"] == claims.UNMEASURED and "timeouts" in record["note"]
