"""The Python reference of the multipath congestion-control rules, and its simulator."""

import math

import pytest

from mptcplab.labs.lab2 import ccref


def test_single_path_rules_reduce_to_reno():
    for algo in ccref.ALGORITHMS:
        assert ccref.increase(algo, [10.0], [0.05], 0) == pytest.approx(0.1), algo
        assert ccref.decrease(algo, [10.0], 0) == pytest.approx(5.0), algo


def test_uncoupled_ewtcp_coupled_increases():
    w, rtt = [10.0, 30.0, 20.0, 40.0], [0.02, 0.04, 0.03, 0.05]
    assert ccref.increase("uncoupled", w, rtt, 1) == pytest.approx(1 / 30)
    assert ccref.increase("ewtcp", w, rtt, 1) == pytest.approx(0.5 / 30)  # a = 1/sqrt(4)
    assert ccref.increase("coupled", w, rtt, 1) == pytest.approx(1 / 100)


def test_lia_alpha_matches_rfc6356():
    # equal RTTs and windows: alpha = 1/n, so the connection grows by 1/n packet per RTT in total
    for n in (2, 3, 5):
        assert ccref.lia_alpha([8.0] * n, [0.03] * n) == pytest.approx(1 / n)
    w, rtt = [10.0, 20.0], [0.01, 0.1]
    expected = 30 * max(10 / 0.01 ** 2, 20 / 0.1 ** 2) / (10 / 0.01 + 20 / 0.1) ** 2
    assert ccref.lia_alpha(w, rtt) == pytest.approx(expected)
    # never more aggressive than Reno on a subflow
    for r in range(2):
        assert ccref.lia_increase(w, rtt, r) <= 1 / w[r] + 1e-12
    assert ccref.lia_increase([1.0, 100.0], [0.01, 0.01], 0) == pytest.approx(min(100 / 101 / 101, 1.0))


def test_cs218_delay_window():
    lia = 0.01
    for acks in range(0, ccref.CS218_MIN_ACKS + 1):
        assert ccref.delay_window(lia, acks, 0.02, 0.02) == 0, "no delay window before the 6th ACK"
        assert ccref.cs218_increase(lia, acks, 0.02, 0.02) == lia
    assert ccref.delay_window(lia, 6, 0.02, 0.02) == pytest.approx(lia), "DWND = alpha when RTT = best RTT"
    assert ccref.cs218_increase(lia, 6, 0.02, 0.02) == pytest.approx(2 * lia)
    assert ccref.delay_window(lia, 6, 0.02, 0.04) == pytest.approx(lia / 2)
    tail = [ccref.cs218_increase(lia, 50, 0.02, rtt) for rtt in (0.02, 0.2, 2.0, 200.0)]
    assert tail == sorted(tail, reverse=True) and tail[-1] == pytest.approx(lia, rel=1e-3), "tends to LIA"


def test_cs218_uses_a_student_rule():
    calls = []

    def rule(lia, acks, best, last):
        calls.append((acks, best, last))
        return 3 * lia

    w, rtt = [10.0, 10.0], [0.02, 0.02]
    got = ccref.increase("cs218", w, rtt, 0, ack_count=7, best_rtt=0.01, last_rtt=0.02, cs218_rule=rule)
    assert got == pytest.approx(3 * ccref.lia_increase(w, rtt, 0))
    assert calls == [(7, 0.01, 0.02)]


def test_decrease_rules():
    assert ccref.decrease("lia", [3.0, 50.0], 0) == ccref.MIN_CWND
    assert ccref.decrease("cs218", [30.0, 50.0], 1) == 25.0
    assert ccref.decrease("coupled", [30.0, 50.0], 1) == 10.0  # 50 - 80/2
    assert ccref.decrease("coupled", [30.0, 50.0], 0) == ccref.MIN_CWND
    with pytest.raises(ValueError, match="unknown algorithm"):
        ccref.decrease("cubic", [1.0], 0)


def test_simulator_is_deterministic_and_respects_capacity():
    a = ccref.scenario_paths("lia", duration=6).frame()
    b = ccref.scenario_paths("lia", duration=6).frame()
    assert a.equals(b)
    res = ccref.scenario_paths("uncoupled", duration=8)
    pps = 5e6 / 8 / 1500
    assert 0.3 * 3 * pps < res.throughput("mptcp", 2) <= 3 * pps * 1.02


def test_simulated_fairness_orders_the_algorithms():
    ratio = {}
    for algo in ("uncoupled", "lia", "cs218"):
        r = ccref.scenario_fairness(algo, duration=20)
        ratio[algo] = r.throughput("mptcp", 5) / r.throughput("tcp", 5)
    assert ratio["uncoupled"] > 1.6, ratio  # two Reno subflows take about twice a TCP flow's share
    assert ratio["lia"] < 1.4, ratio  # RFC 6356: no more than one TCP flow on a shared bottleneck
    assert ratio["cs218"] >= ratio["lia"] * 0.9, ratio
    assert all(math.isfinite(v) for v in ratio.values())


def test_the_reports_rule_is_a_over_w_total_capped_by_reno():
    """The report's RTT compensator (issue 37's control): min(a / w_total, 1 / w_r), a = 1/sqrt(n),
    whatever the RTTs; for four equal paths twice LIA's alpha (1/4), and CS218 adds its window to it."""
    w, rtt = [10.0] * 4, [0.02, 0.04, 0.06, 0.08]
    assert ccref.increase("lia_report", w, rtt, 0) == pytest.approx(0.5 / 40)
    assert ccref.increase("lia_report", w, [0.03] * 4, 2) == pytest.approx(2 * ccref.increase("lia", w, [0.03] * 4, 2))
    assert ccref.increase("lia_report", [1.0, 100.0], [0.01, 0.01], 0) == pytest.approx(1 / math.sqrt(2) / 101)
    assert ccref.increase("lia_report", [1.0, 1.0], [0.01, 0.01], 0) == pytest.approx(1 / math.sqrt(2) / 2)
    # w_r <= w_total <= sqrt(n) w_total: Reno's cap 1/w_r never binds, the rule is a / w_total
    for r in (0, 1):
        assert ccref.increase("lia_report", [60.0, 2.0], [0.01, 0.5], r) == pytest.approx(1 / math.sqrt(2) / 62)
    assert ccref.increase("lia_report", [10.0], [0.05], 0) == pytest.approx(0.1)  # one path: Reno
    base = ccref.increase("lia_report", w, rtt, 0)
    assert ccref.increase("cs218_report", w, rtt, 0, ack_count=6, best_rtt=0.02, last_rtt=0.04) == pytest.approx(
        1.5 * base)
    assert ccref.increase("cs218_report", w, rtt, 0, ack_count=5, best_rtt=0.02, last_rtt=0.02) == pytest.approx(base)
    assert set(ccref.REPORT_RULE).isdisjoint(ccref.ALGORITHMS)  # the notebook's questions keep their five


def test_cs218_report_keeps_cs218s_count_as_the_kernel_does():
    sub = ccref.SubflowCC("cs218_report")
    sub.on_rtt(20_000)
    w = [20.0, 20.0]
    for _ in range(6):
        sub.on_ack(20, 10, 1, True, w, [20_000.0, 40_000.0], 0)
    assert sub.ack_count == 6
    assert sub.inc == pytest.approx(2 * ccref.report_increase(w, 0))  # best = last: the window doubles it
    sub.on_loss(20, w, [20_000.0, 40_000.0], 0)
    assert sub.ack_count == 0
