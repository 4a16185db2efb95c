"""mptcplab.judge.stats: quantiles, intervals, Holm's correction and runs needed."""

import math

import pandas as pd
import pytest

from mptcplab.judge import stats


def test_t_quantiles_are_students():
    assert stats.t975(1) == pytest.approx(12.7062, abs=1e-4)
    assert stats.t975(4) == pytest.approx(2.7764, abs=1e-4)
    assert stats.t975(40) == pytest.approx(2.0211, abs=1e-4)  # not the normal 1.96 beyond 30 dof
    assert stats.t_quantile(0.99, 9) == pytest.approx(3.2498, abs=1e-4)
    assert math.isnan(stats.t975(0)) and math.isnan(stats.t975(math.nan))


def test_mean_ci():
    m, ci, n = stats.mean_ci([10.0, 12.0, float("nan")])
    assert (m, n) == (11.0, 2) and ci == pytest.approx(stats.t975(1) * math.sqrt(2) / math.sqrt(2))
    m, ci, n = stats.mean_ci([5.0])
    assert m == 5.0 and math.isnan(ci) and n == 1


def test_paired_drops_unpaired_runs_and_refuses_repeated_keys():
    a = pd.Series([10.0, 11.0, 12.0, 13.0], index=[1, 2, 3, 4])
    b = pd.Series([9.5, 10.0, 11.8, 12.0, 99.0], index=[1, 2, 3, 4, 5])  # run 5 has no pair
    st = stats.paired(a, b)
    sd = pd.Series([0.5, 1.0, 0.2, 1.0]).std(ddof=1)
    assert st["pairs"] == 4 and st["diff"] == pytest.approx(0.675) and st["sd"] == pytest.approx(sd)
    assert st["ci95"] == pytest.approx(stats.t975(3) * sd / 2)
    assert 0 < st["p"] < 0.05
    with pytest.raises(ValueError, match="repeat"):  # a resumed sweep's duplicate rep would pair n x n
        stats.paired(pd.Series([1.0, 2.0], index=[1, 1]), pd.Series([1.0, 2.0], index=[1, 1]))


def test_runs_needed_is_the_smallest_n():
    n = stats.runs_needed(0.675, 0.4)
    power = lambda k: (stats.t975(k - 1) + stats.z_power()) * 0.4 / math.sqrt(k)  # noqa: E731
    assert power(n) <= 0.675 < power(n - 1)
    assert stats.runs_needed(0.675, 0.4, level=0.995) > n  # a corrected level needs more
    assert stats.runs_needed(0.01, 1.0) == math.inf and math.isnan(stats.runs_needed(1.0, math.nan))


def test_holm_matches_the_textbook_procedure():
    # p = 0.01, 0.04, 0.03, 0.005 (m = 4): Holm's thresholds 0.0125, 0.0167, 0.025, 0.05 in p order
    fam = [{"diff": 1.0, "se": 0.1, "dof": 10, "p": p, "sds": (0.3,)} for p in (0.01, 0.04, 0.03, 0.005)]
    out = stats.holm(fam)
    assert [x["p_holm"] for x in out] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [x["resolved"] for x in out] == [True, False, False, True]
    # the levels of the steps that ran, then the stopping step's for the rest
    assert [round(x["level"], 6) for x in out] == [round(1 - 0.05 / 3, 6), 0.975, 0.975, 0.9875]


def test_holm_interval_spans_zero_exactly_when_not_resolved():
    import numpy as np

    rng = np.random.default_rng(3)
    fam = [stats.paired(pd.Series(rng.normal(mu, 1.0, 8)), pd.Series(np.zeros(8)))
           for mu in (0.0, 0.3, 0.8, 1.2, 2.0, -0.9)]
    for x in stats.holm(fam):
        spans = x["lo"] < 0 < x["hi"]
        assert spans == (not x["resolved"]), x
        assert stats.verdict(x, "up", "down") == ("not resolved" if spans else "up" if x["diff"] > 0 else "down")


def test_welch():
    w = stats.welch([0.5, 0.6, 0.55], [0.4, 0.45, 0.5, 0.42])
    assert w["diff"] == pytest.approx(0.55 - 0.4425) and w["lo"] < w["diff"] < w["hi"]
    assert 2 < w["dof"] < 5
    few = stats.welch([0.5], [0.4, 0.5])
    assert math.isnan(few["ci95"]) and stats.verdict(stats.holm([few])[0], "up", "down") == "too few runs"


def test_welch_against_a_published_summary_is_scipys_and_plans_runs_of_one_side():
    from scipy.stats import ttest_ind_from_stats

    a = [50.0, 47.0, 52.0, 45.0, 49.0, 55.0]
    st = stats.welch_summary(a, 46.8, 3.54, 5)
    ref = ttest_ind_from_stats(sum(a) / 6, pd.Series(a).std(), 6, 46.8, 3.54, 5, equal_var=False)
    assert st["diff"] / st["se"] == pytest.approx(ref.statistic) and st["p"] == pytest.approx(ref.pvalue)
    # the published side's 5 runs bound the standard error: a small difference never resolves
    assert math.isinf(stats.holm([st])[0]["runs_needed"])
    assert stats.holm([stats.welch_summary([60.0, 58, 62], 46.8, 3.54, 5)])[0]["resolved"]


def test_the_kit_and_its_labs_load_without_scipy_until_a_statistic_is_asked_for():
    """A guest place only measures: the command it runs (the CLI with every lab loaded) does not
    pay for scipy's import in an emulated CPU."""
    import subprocess
    import sys

    code = ("import sys; from mptcplab.cli import build_parser; build_parser(); from mptcplab.run import lab, runner; "
            "[lab.get_lab(f'lab{i}') for i in (1, 2, 3)]; assert 'scipy' not in sys.modules, 'scipy imported'; "
            "from mptcplab.judge import stats; stats.t975(4); assert 'scipy' in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
