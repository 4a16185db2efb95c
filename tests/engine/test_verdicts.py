"""Verdicts that cannot lock a user out: bad --set keys refused first, a place's verdict recorded
only from a complete check of the parameters it checked, re-checked on request, never lost to
another checkout's save."""

import json
import subprocess
import sys

import pytest

from mptcplab.cli import main
from mptcplab.core.errors import UsageError
from mptcplab.places import choice, records
from mptcplab.places.choice import CheckResult
from mptcplab.run.lab import check_keys, get_lab



def test_unknown_set_keys_at_any_depth_are_refused_before_anything_starts(monkeypatch, capsys):
    monkeypatch.setattr("mptcplab.run.runner.decide", lambda *a, **k: pytest.fail("a place was chosen"))
    assert main(["run", "lab1", "--quick", "--set", "paths.fast.dealy=3ms"]) == 2
    err = capsys.readouterr().err
    assert "no parameter 'paths.fast.dealy'; nearest valid: paths.fast.delay" in err and err.count("\n") == 1
    assert main(["run", "lab1", "--set", "sweep.repetitons=2"]) == 2
    assert "nearest valid: sweep.repetitions" in capsys.readouterr().err


def test_open_tables_take_new_names_with_their_siblings_keys():
    lab = get_lab("lab1")
    base = {"paths": {"fast": {"link": "rate=1mbit"}}, "sysctls": {"rcv": {}}}
    check_keys(lab, base, {"paths": {"third": {"link": "rate=2mbit"}}}, "--set")  # a new path
    check_keys(lab, base, {"sysctls": {"snd": {"net.ipv4.tcp_sack": 0}}}, "--set")  # a host, a sysctl
    with pytest.raises(UsageError, match="'paths.third.lnk'; nearest valid: paths.third.link"):
        check_keys(lab, base, {"paths": {"third": {"lnk": "rate=2mbit"}}}, "--set")


def _guest_that(fake, monkeypatch, result):
    """The fake place's run: the lab's setup check starts (verify.partial), then `result()`."""
    def run(argv, results, handed):
        (results[0] / "verify.partial").mkdir(parents=True, exist_ok=True)
        return result()
    monkeypatch.setattr(fake, "run", run)


def _interrupt():
    raise KeyboardInterrupt


@pytest.mark.parametrize("result", [_interrupt, lambda: 130, lambda: 1])
def test_an_interrupted_or_crashed_check_records_nothing(fake_place, monkeypatch, tmp_path, result):
    from mptcplab.run import runner

    _guest_that(fake_place, monkeypatch, result)
    try:
        runner.run_lab("lab1", quick=True, where="fake", out=tmp_path / "out")
    except KeyboardInterrupt:
        pass
    assert records.load() == []


def test_a_refused_check_is_recorded_under_the_parameters_it_checked(fake_place, monkeypatch, tmp_path):
    from mptcplab.run import runner

    _guest_that(fake_place, monkeypatch, lambda: 4)  # ExperimentFailed inside: the check's verdict
    over = {"sweep": {"repetitions": 1}}
    assert runner.run_lab("lab1", quick=True, where="fake", out=tmp_path / "a", overrides=over) == 4
    (r,) = records.load()
    assert (r.place, r.lab, r.passed, r.params) == ("fake", "lab1", False, records.params_key(over))
    # ... so it never speaks for the default lab
    assert choice.choose("lab1", ("netem",), {"fake": {"netem"}}, records.load()).place == "fake"
    assert runner.run_lab("lab1", quick=True, where="fake", out=tmp_path / "b") == 4
    assert {x.params for x in records.load()} == {"", records.params_key(over)}
    got = choice.choose("lab1", ("netem",), {"fake": {"netem"}}, records.load())
    assert got.place is None and "`mptcplab run lab1 --recheck` checks it again" in got.why


def test_recheck_forgets_the_labs_failures_and_checks_again(fake_place, monkeypatch, tmp_path, caplog):
    from mptcplab.run import runner

    records.save(CheckResult(place="fake", lab="lab1", passed=False, wall_s=3.0, how="exit status 4"))
    records.save(CheckResult(place="fake", lab="lab3", passed=False, wall_s=3.0, how="exit status 4"))
    caplog.set_level("INFO")
    assert runner.run_lab("lab1", quick=True, where="fake", out=tmp_path / "out", recheck=True) == 0
    assert "checking fake again for lab1" in caplog.text
    assert [(r.lab, r.passed) for r in records.load()] == [("lab3", False)]  # only this lab's


def test_main_accepts_recheck(monkeypatch):
    seen = {}
    monkeypatch.setattr("mptcplab.commands.run.run_lab", lambda *a, **kw: seen.setdefault("kw", kw) and 0)
    main(["run", "lab1", "--recheck"])
    assert seen["kw"]["recheck"] is True


def test_saving_keeps_other_checkouts_records(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(records, "kit_stamp", lambda: "0.1.0 other-checkout")
    records.save(CheckResult(place="uml", lab="lab1", passed=True, wall_s=1.0))
    monkeypatch.setattr(records, "kit_stamp", lambda: "0.1.0 this-checkout")
    records.save(CheckResult(place="uml", lab="lab1", passed=False, wall_s=2.0))
    kits = {d["kit"] for d in json.loads(records.path().read_text())}
    assert kits == {"0.1.0 other-checkout", "0.1.0 this-checkout"}


def test_concurrent_writers_lose_no_record(tmp_path):
    """Eight processes saving five records each at once: all forty are there (lock + merge)."""
    code = ("import sys; from mptcplab.places import records; from mptcplab.places.choice import CheckResult\n"
            "for j in range(5): records.save(CheckResult(place=f'p{sys.argv[1]}', lab=f'l{j}', passed=True, wall_s=1.0))")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", code, str(i)], env=env) for i in range(8)]
    assert [p.wait(60) for p in procs] == [0] * 8
    env_path = tmp_path / "cache" / "mptcplab" / "places" / "checks.json"
    assert len(json.loads(env_path.read_text())) == 40


def test_auto_asks_the_places_what_they_offer_and_cost_and_reproduce_says_not_reproduced(
        fake_place, monkeypatch, tmp_path):
    """On a host without netem, with only the test place (netem, tbf) besides native: Lab 1 goes there,
    saying what it costs; Lab 2 (netem and struct_ops) has no qualifying place and is not run."""
    from mptcplab.commands import reproduce as rep
    from mptcplab.core import kernel
    from mptcplab.places.decide import decide

    monkeypatch.setattr(kernel, "has", lambda c: c in {"tbf", "bpf_struct_ops"})
    monkeypatch.setattr(kernel, "inside_uml", lambda: False)
    monkeypatch.setattr("mptcplab.places.uml.available", lambda: (False, "test"))
    monkeypatch.setattr("mptcplab.places.vm.available", lambda: (False, "test"))
    picked = decide("auto", get_lab("lab1").needs, lab="lab1")
    assert picked.place == "fake" and "native lacks netem" in picked.why and "It costs: nothing" in picked.why
    ran = []
    outcomes = rep.reproduce({"lab2": get_lab("lab2")}, tmp_path, quick=True, runner=lambda *a: ran.append(a))
    assert ran == [] and outcomes[0].status == "cannot-run"
    (line,) = rep.summary(outcomes)
    assert line.startswith("  lab2   NOT reproduced: no place here can run it: no place here honours lab2's inputs")
    assert "native lacks netem" in line and "fake lacks bpf_struct_ops" in line
