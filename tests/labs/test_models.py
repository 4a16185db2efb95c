"""mptcplab.labs.lab3.models: properties of the equations and values worked out by hand from the paper."""

import math

import numpy as np
import pytest

from mptcplab.labs.lab3 import models as m

P = np.array([1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.4])


# ---------------------------------------------------------------- values derived by hand

def test_model1_by_hand_n2():
    # n = 2 makes the linear term p b (2 - n) of (17) vanish: 3 n^2 p x^2 = 2b, x = sqrt(2b / (3 n^2 p)).
    n, p, b, rtt, T = 2, 0.01, 1, 0.1, 1.0
    x = math.sqrt(2 * b / (3 * n * n * p))  # 4.0825 rounds per TD period
    w = 2 * n * x / b  # E[W_f] = 16.33 packets (25)
    s = 1 - 1 / w  # p_lr = 1 / E[W_f]
    q1 = (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (w - 3)))  # (27): 0.2540
    z = T * (1 + 32 * p * p) / (1 - p)
    q = q1 * z / (x * rtt)  # E[nTO] = 0.6306 < n
    expect = (1 - q / n) / (p * x * rtt) + q / (z * (1 - p))
    assert q1 == pytest.approx(0.25403, abs=1e-5) and q == pytest.approx(0.63053, abs=1e-5)
    assert expect == pytest.approx(168.35, abs=0.01)
    assert m.parallel_per_flow(n, p, rtt, T, b) == pytest.approx(expect, rel=1e-12)
    t = m.per_flow_terms(n, p, rtt, T, b)
    assert (float(t["x"]), float(t["w"]), float(t["q1"])) == pytest.approx((x, w, q1), rel=1e-12)


def test_model1_is_equation_29_with_a_minus_sign():
    # (29) is (28) expanded; its two fractions are joined by a minus (lost in print). With
    # D = 2pb - npb + sqrt(...): B = 6n^2 (1 + Q p/(1-p)) / (D RTT) - 36 n^3 p z Q / (D^2 RTT^2),
    # z = E[Z^TO] (here the algorithm's T (1 + 32p^2)/(1-p)). Valid while E[nTO] < n.
    n, p, b, rtt, T = 5, 0.003, 2, 0.08, 0.3
    D = 2 * p * b - n * p * b + math.sqrt(n * n * p * p * b * b - 4 * n * p * p * b * b + 4 * p * p * b * b
                                          + 24 * b * n * n * p)
    Q = float(m.timeout_probability(D / (3 * n * p * b)))  # E[W_f] of (25)
    z = T * (1 + 32 * p * p) / (1 - p)
    eq29 = 6 * n * n * (1 + Q * p / (1 - p)) / (D * rtt) - 36 * n ** 3 * p * z * Q / (D * D * rtt * rtt)
    assert float(m.per_flow_terms(n, p, rtt, T, b)["q"]) < n
    assert m.parallel_per_flow(n, p, rtt, T, b) == pytest.approx(eq29, rel=1e-12)
    # Without timeouts it is (19): 6 n^2 / (RTT D).
    assert m.parallel_per_flow(n, p, rtt, T, b) < 6 * n * n / (rtt * D)


def test_model2_by_hand_n4_j2():
    # j = p_r / p_e = 2 = n / 2 makes j (2j - n) of (43) vanish: x = sqrt(2 b j / (3 n^2 p_e)).
    n, pe, pr, b, rtt, T = 4, 0.01, 0.02, 1, 0.1, 1.0
    j = pr / pe
    x = math.sqrt(2 * b * j / (3 * n * n * pe))  # 2.8868
    w = n * x / (2 * b) + 3 * n * n * x / (2 * b * j)  # E[W] (40) = 40.41
    q1 = j * n / w  # (47): 0.1979
    z = T * (1 + 32 * pe * pe) / (1 - pe)
    q = q1 * z / (x * rtt)
    expect = (1 - q / n) / (pe * x * rtt) + q / (z * (1 - pe))
    assert w == pytest.approx(40.41452, abs=1e-4) and expect == pytest.approx(286.926, abs=0.01)
    assert m.parallel_cumulative(n, pe, pr, rtt, T, b) == pytest.approx(expect, rel=1e-12)


def test_model2_caps_q1_at_n_as_equation_47():
    # Bursty loss: many packets per loss event, j n / w well above 1. (47) caps at n, the print at 1.
    args = (2, 0.02, 0.2, 0.06, 0.3)
    eq47 = m.cumulative_terms(*args)
    printed = m.cumulative_terms(*args, q1_cap="1")
    assert eq47["j"] == pytest.approx(10) and eq47["j1"] == pytest.approx(2)
    raw = float(eq47["j"] * 2 / eq47["w"])
    assert 1 < raw < 2 and float(eq47["q1"]) == pytest.approx(raw) and float(printed["q1"]) == 1.0
    assert m.parallel_cumulative(*args) == pytest.approx(float(eq47["B"]))
    assert float(eq47["B"]) < float(printed["B"])  # more flows in timeout -> less throughput


def test_pftk_by_hand():
    p, rtt, T, b = 0.01, 0.1, 1.0, 1
    ew = 1 + math.sqrt(8 * 0.99 / (3 * 0.01) + 1)  # (2+b)/(3b) = 1
    s = 0.99
    q = min(1, (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (ew - 3))) / (1 - s ** ew))
    f = 1 + p + 2 * p ** 2 + 4 * p ** 3 + 8 * p ** 4 + 16 * p ** 5 + 32 * p ** 6
    expect = (0.99 / p + ew + q / 0.99) / (rtt * (ew / 2 + 1) + q * T * f / 0.99)
    assert m.pftk(p, rtt, T, b) == pytest.approx(expect, rel=1e-12)
    # Receiver-window limited: wmax below E[W] uses Padhye's second case.
    wmax = 8
    qm = min(1, (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (wmax - 3))) / (1 - s ** wmax))
    lim = (0.99 / p + wmax + qm / 0.99) / (rtt * (wmax / 8 + 0.99 / (p * wmax) + 2) + qm * T * f / 0.99)
    assert m.pftk(p, rtt, T, b, wmax=wmax) == pytest.approx(lim, rel=1e-12)
    assert m.pftk(p, rtt, T, b, wmax=1000) == pytest.approx(expect)


def test_tfrc_by_hand():
    p, R, t = 0.02, 0.05, 0.2
    expect = 1 / (R * math.sqrt(2 * p / 3) + t * 3 * math.sqrt(3 * p / 8) * p * (1 + 32 * p * p))
    assert m.tfrc(p, R, t) == pytest.approx(expect, rel=1e-12)
    assert m.tfrc(p, R, t, b=2) < expect


# ---------------------------------------------------------------- properties

@pytest.mark.parametrize("n", [1, 2, 5, 10, 50])
def test_decreasing_in_loss(n):
    for f in (lambda p: m.parallel_per_flow(n, p, 0.06, 0.26),
              lambda p: m.parallel_cumulative(n, p, np.minimum(0.99, 1.5 * p), 0.06, 0.26),
              lambda p: n * m.pftk(p, 0.06, 0.26), lambda p: n * m.tfrc(p, 0.06, 0.26)):
        b = f(P)
        assert np.all(np.diff(b) < 0), b


def test_n_flows_near_n_times_one_at_low_loss():
    for n in (2, 4, 10):
        for p in (1e-5, 1e-4):
            ratio = m.parallel_per_flow(n, p, 0.06, 0.26) / (n * m.parallel_per_flow(1, p, 0.06, 0.26))
            assert ratio == pytest.approx(1, abs=0.02)
    # ... and not at high loss, where the round-robin term p b (2 - n) matters.
    assert m.parallel_per_flow(10, 0.05, 0.06, 0.01) / (10 * m.parallel_per_flow(1, 0.05, 0.06, 0.01)) > 1.05


def test_one_flow_near_padhye_at_low_loss():
    for p in (1e-5, 1e-4, 1e-3):
        assert m.parallel_per_flow(1, p, 0.06, 0.26) / m.pftk(p, 0.06, 0.26) == pytest.approx(1, abs=0.02)
        assert m.parallel_cumulative(1, p, p, 0.06, 0.26) / m.pftk(p, 0.06, 0.26) == pytest.approx(1, abs=0.02)


def test_saturated_floor_when_every_flow_times_out():
    # A long timeout (or high loss) puts E[nTO] at its cap n: B = n / (T (1 + 32 p^2)).
    for n, p, T in ((3, 0.01, 50.0), (8, 0.2, 0.26), (1, 0.4, 1.0)):
        t = m.per_flow_terms(n, p, 0.06, T)
        assert float(t["q"]) == n
        assert float(t["B"]) == pytest.approx(n / (T * (1 + 32 * p * p)))
        c = m.cumulative_terms(n, p, p, 0.06, T)
        if float(c["q"]) == n:
            assert float(c["B"]) == pytest.approx(n / (T * (1 + 32 * p * p)))


def test_small_window_is_always_a_timeout():
    assert m.timeout_probability(np.array([0.5, 1, 2.9, 3]) ).tolist() == [1, 1, 1, 1]
    w = np.array([4.0, 10, 100, 1000])
    q = m.timeout_probability(w)
    assert np.all(np.diff(q) < 0) and np.all(q > 0)
    assert q[-1] * 1000 == pytest.approx(3 * (1 + (1 - math.exp(-1))), rel=0.01)  # ~ 3/w (2 - 1/e)
    # The whole of model 1 stays finite where w < 1 (very high loss, b = 2).
    assert np.isfinite(m.parallel_per_flow(1, 0.9, 0.06, 0.26, b=2))


def test_printed_algorithm1_is_the_misprint():
    # Same everywhere except q1's first factor, which makes almost every loss a timeout.
    t = m.per_flow_terms(4, 0.005, 0.06, 0.26)
    printed_q1 = (1 - 1 / t["w"]) ** 3 * (1 + (1 - 1 / t["w"]) ** 3 * (1 - (1 - 1 / t["w"]) ** (t["w"] - 3)))
    assert float(m.timeout_probability_as_printed(t["w"])) == pytest.approx(min(1.0, float(printed_q1)))
    assert float(m.timeout_probability_as_printed(t["w"])) == 1.0 and float(t["q1"]) < 0.3
    assert m.algorithm1_as_printed(4, 0.005, 0.06, 0.26) < 0.8 * m.parallel_per_flow(4, 0.005, 0.06, 0.26)
    # At high loss both saturate at the floor and agree.
    assert m.algorithm1_as_printed(4, 0.2, 0.06, 0.26) == pytest.approx(m.parallel_per_flow(4, 0.2, 0.06, 0.26))


def test_arrays_broadcast_and_scalars_stay_scalars():
    assert isinstance(m.parallel_per_flow(2, 0.01, 0.06, 0.26), float)
    out = m.parallel_per_flow(np.arange(1, 11)[:, None], P[None, :], 0.06, 0.26)
    assert out.shape == (10, len(P))
    assert out[3, 4] == pytest.approx(m.parallel_per_flow(4, P[4], 0.06, 0.26))
    out2 = m.parallel_cumulative([1, 2, 3], [0.01, 0.01, 0.01], [0.01, 0.015, 0.02], 0.06, 0.26)
    assert out2.shape == (3,) and np.all(np.isfinite(out2))
    assert m.pftk([0.01, 0.02], 0.06, 0.26).shape == (2,)


@pytest.mark.parametrize("call, match", [
    (lambda: m.parallel_per_flow(0, 0.01, 0.06, 0.26), "n >= 1"),
    (lambda: m.parallel_per_flow(2, 0.0, 0.06, 0.26), "0 < p < 1"),
    (lambda: m.parallel_per_flow(2, [0.01, 1.0], 0.06, 0.26), r"0 < p < 1; got 1\.0"),
    (lambda: m.parallel_per_flow(2, 0.01, -0.06, 0.26), "rtt > 0"),
    (lambda: m.parallel_per_flow(2, 0.01, 0.06, 0), "t0 > 0"),
    (lambda: m.parallel_per_flow(2, 0.01, 0.06, 0.26, b=0), "b > 0"),
    (lambda: m.parallel_per_flow(2, float("nan"), 0.06, 0.26), "p contains NaN"),
    (lambda: m.parallel_per_flow(2, "x", 0.06, 0.26), "p must be a number"),
    (lambda: m.parallel_cumulative(2, 0.02, 0.01, 0.06, 0.26), "p_r >= p_e"),
    (lambda: m.parallel_cumulative(2, 0.02, 1.2, 0.06, 0.26), "0 < p_r < 1"),
    (lambda: m.parallel_cumulative(2, [0.01, 0.02], [0.01, 0.02, 0.03], 0.06, 0.26), "do not broadcast"),
    (lambda: m.pftk(0.01, 0.06, 0.26, wmax=0), "wmax > 0"),
    (lambda: m.tfrc(1.5, 0.06, 0.26), "0 < p < 1"),
])
def test_invalid_input_is_rejected_clearly(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_uncapped_closed_form_goes_negative_which_the_cap_prevents():
    # Why (29)/(48) are not implemented directly: E[nTO] is not capped there, exceeds n at high
    # loss, and the throughput (1 - E[nTO]/n) / (p E[X] RTT) + ... turns negative.
    n, p, rtt, T = 2, 0.1, 0.06, 0.26
    t = m.per_flow_terms(n, p, rtt, T)
    uncapped_q = float(t["q1"] * t["z"] / (t["x"] * rtt))
    uncapped = (1 - uncapped_q / n) / (p * float(t["x"]) * rtt) + uncapped_q / (float(t["z"]) * (1 - p))
    assert uncapped_q > n and uncapped < 0
    assert m.parallel_per_flow(n, p, rtt, T) == pytest.approx(n / (T * (1 + 32 * p * p)))


def test_model1_with_a_consistent_timeout_count_is_a_diagnostic_between_model1_and_padhye():
    from mptcplab.labs.lab3 import models as m

    # low loss: timeouts are rare, the count does not matter
    assert m.parallel_per_flow_consistent(4, 0.001, 0.065, 0.3) == pytest.approx(m.parallel_per_flow(4, 0.001, 0.065, 0.3), rel=1e-3)
    # high loss: (24) counts more flows in a timeout than the self-consistent share, so predicts less
    for p in (0.02, 0.05, 0.1):
        assert m.parallel_per_flow(4, p, 0.065, 0.3) < m.parallel_per_flow_consistent(4, p, 0.065, 0.3)
