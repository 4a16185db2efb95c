"""judge.claims: a lab's ledger decided over its tables, one Holm family per lab, claims.json, and the
words reproduce and the reports use."""

import json
from types import SimpleNamespace

import pandas as pd

from mptcplab.judge import claims as cl
from mptcplab.judge import stats
from mptcplab.run import runner

FAST = [10.0, 10.2, 9.9, 10.1, 10.0]
SLOW = [8.0, 8.1, 7.9, 8.2, 8.0]
NOISY = [9.0, 11.5, 8.5, 12.0, 9.5]  # a difference that one test at 5% resolves, Holm over three does not


def claim(id, decide, controls=()):
    return cl.Claim(id, f"{id} statement", "42", "Fig. 1, p. 2", f"{id} predicate", decide, controls)


def test_a_comparison_is_judged_by_its_sign_after_holm():
    holds = claim("faster", lambda t: cl.Verdict.tested(stats.welch(t["a"], t["b"]), cl.GREATER))
    fails = claim("slower", lambda t: cl.Verdict.tested(stats.welch(t["a"], t["b"]), cl.LESS))
    out = cl.evaluate((holds, fails), {"a": FAST, "b": SLOW})
    assert [c["status"] for c in out] == [cl.HOLDS, cl.FAILS]
    assert out[0]["family"] == 2 and out[0]["interval"][0] > 0 and out[0]["p_holm"] >= out[0]["p"]


def test_holm_over_the_family_leaves_a_weak_difference_unresolved_with_runs_needed():
    weak = stats.welch(NOISY, [8.0, 8.4, 7.6, 8.2, 7.9])
    assert stats.ALPHA / 3 < weak["p"] < stats.ALPHA  # alone it would hold
    null = claim("null", lambda t: cl.Verdict.tested(stats.welch(FAST, NOISY), cl.GREATER))  # p ~ 0.5
    weak_claim = claim("weak", lambda t: cl.Verdict.tested(weak, cl.GREATER))
    out = cl.evaluate((weak_claim, null, null), {})
    assert out[0]["status"] == cl.UNRESOLVED and out[0]["runs_needed"] > 5
    assert out[0]["interval"][0] < 0 < out[0]["interval"][1]


def test_missing_points_are_not_measured_and_say_which():
    out = cl.evaluate((claim("x", lambda t: cl.Verdict.tested(stats.welch(t["absent"], SLOW), cl.LESS)),), {})
    assert out[0]["status"] == cl.UNMEASURED and "absent" in out[0]["note"]


def test_a_divergence_names_the_control_that_measured_its_cause():
    moved = cl.Control("pacing-off", "pacing", lambda t: cl.Verdict.tested(stats.welch(FAST, SLOW), cl.GREATER))
    still = cl.Control("same-kernel", "the kernel", lambda t: cl.Verdict.tested(stats.welch(FAST, FAST), cl.GREATER))
    absent = cl.Control("other-place", "the place", lambda t: cl.Verdict.missing("no runs in another place"))
    fails = lambda t: cl.Verdict.tested(stats.welch(FAST, SLOW), cl.LESS)  # noqa: E731
    explained = cl.evaluate((claim("c", fails, (moved, still, absent)),), {})[0]
    assert explained["status"] == cl.FAILS and explained["cause"].startswith("cause measured by pacing-off: pacing")
    assert [c["status"] for c in explained["causes"]] == [cl.HOLDS, cl.UNRESOLVED, cl.UNMEASURED]
    assert cl.evaluate((claim("c", fails, (still, absent)),), {})[0]["cause"] == "unexplained, tried: same-kernel"
    assert cl.evaluate((claim("c", fails, (absent,)),), {})[0]["cause"] == "not tested"


def test_a_verdict_decided_without_a_comparison_keeps_its_status():
    fit = claim("fit", lambda t: cl.Verdict(cl.HOLDS if t["err"] < 0.1 else cl.FAILS, {"err": t["err"]}))
    assert cl.evaluate((fit,), {"err": 0.05})[0]["status"] == cl.HOLDS


def test_conclude_writes_claims_json_before_the_report_and_the_summary_line(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ledger = SimpleNamespace(
        CLAIMS=(claim("faster", lambda t: cl.Verdict.tested(stats.welch(t["runs"].a, t["runs"].b), cl.GREATER)),
                claim("slower", lambda t: cl.Verdict.tested(stats.welch(t["runs"].a, t["runs"].b), cl.LESS)),
                claim("loss", lambda t: cl.Verdict.tested(stats.welch(t["loss"], SLOW), cl.LESS))),
        tables=lambda out: {"runs": pd.read_csv(out / "runs.csv")})
    out = tmp_path / "sweep"
    out.mkdir()
    pd.DataFrame({"a": FAST, "b": SLOW}).to_csv(out / "runs.csv", index=False)
    seen = []
    lab = SimpleNamespace(id="labx", judging=SimpleNamespace(claims=ledger), report=lambda o: seen.append(cl.load(o)) or "report")
    runner.conclude(lab, out, {})
    doc = json.loads((out / cl.FILE).read_text())
    assert seen == [doc] and doc["lab"] == "labx"
    line = cl.summary_line(doc)
    assert line.startswith("1 of 3 of the paper's claims hold; does not hold: slower")
    assert "not measured by this run: loss" in line
    table = cl.markdown(doc)
    assert "| faster: faster statement | 42 | Fig. 1, p. 2 | holds, difference" in table
