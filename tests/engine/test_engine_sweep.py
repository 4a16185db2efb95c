"""The engine's sweep with a fake network: settings before the record, resume, one setup check."""

import json
import sys
from types import SimpleNamespace

import pytest

from mptcplab.cli import main
from mptcplab.core import paths
from mptcplab.labs.lab1 import experiment as l1
from mptcplab.net.topology import BASE_SYSCTLS
from mptcplab.run import engine
from mptcplab.run.lab import Lab, Point, RunContext, Running, get_lab
from mptcplab.run.results import Sweep, git_commit, tool_versions


class FakeNet:
    """What the engine and Lab 1's settings touch: sysctls per host, and the record."""

    def __init__(self):
        self.sysctls = {"snd": {"net.ipv4.tcp_wmem": "4096 16384 4194304", "net.core.wmem_max": str(1 << 30)}}
        self.topo = SimpleNamespace(paths=[SimpleNamespace(a="snd", b="rcv")], base_sysctls=lambda: dict(BASE_SYSCTLS))

    def set_sysctl(self, host, key, value):
        self.sysctls.setdefault(host, {})[key] = str(value)

    def sysctl(self, host, key):
        return self.sysctls.get(host, {}).get(key)

    def record(self, rd):  # as topology.Network.record: the kernel's view at this moment
        rd.manifest["network"] = {"sysctls": json.loads(json.dumps(self.sysctls))}


def test_lab1_detail_manifest_shows_the_tcp_wmem_the_run_used(tmp_path):
    params = get_lab("lab1").load_params(quick=True)
    point = l1.detail_point(params, 131072)
    lab = Lab(**{**vars(l1.LAB), "measure": lambda net, rd, p, params: "measured"})
    engine.run_point(lab, FakeNet(), Sweep(tmp_path), point, params)
    manifest = json.loads((tmp_path / point.key / "manifest.json").read_text())
    assert manifest["network"]["sysctls"]["snd"]["net.ipv4.tcp_wmem"] == "131072 131072 131072"
    assert manifest["parameters"]["detail"] is True and point.key == "detail-wmem-128K-mptcp"


def _toy_lab(measured, checks):
    class Topo:
        def __init__(self, params):
            pass

        def up(self):
            import contextlib

            return contextlib.nullcontext(FakeNet())

    def points(params, sweep):
        return [Point(f"p{i}", {"i": i}) for i in range(3)]

    def measure(net, rd, point, params):
        measured.append(point.key)
        rd.summary["i"] = point.values["i"]
        return "ok"

    return Lab(id="toy", slug="00-toy", title="toy", topology=Topo, points=points, measure=measure,
               finish=lambda ctx: {"done": len(Sweep(ctx.out).runs())}, analysis=None,
               running=Running(extra_check=lambda net, rd, params: checks.append(1) or "checked"))


def test_sweep_checks_once_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "check_paths", lambda net, rd, a, b, **kw: rd.summary.setdefault("checks", {}))
    monkeypatch.setattr(engine, "describe", lambda checks: "")
    measured, checks = [], []
    lab = _toy_lab(measured, checks)
    ctx = RunContext(lab=lab, params={}, out=tmp_path, quick=True, where="native")
    (tmp_path / "p1").mkdir()  # a run done earlier is skipped
    (tmp_path / "p1" / "manifest.json").write_text("{}")
    (tmp_path / "p1" / "summary.json").write_text("{}")
    assert engine.run(ctx) == {"done": 4}  # verify + p0..p2
    assert measured == ["p0", "p2"] and checks == [1]
    engine.run(ctx)
    assert measured == ["p0", "p2"] and checks == [1]  # nothing left, no second check


def test_the_setup_checks_timings_count_building_its_network_and_the_own_latency_pings_in_it(tmp_path, monkeypatch):
    monkeypatch.setattr(engine, "check_paths", lambda net, rd, a, b, **kw: rd.summary.setdefault("checks", {}))
    monkeypatch.setattr(engine, "describe", lambda checks: "")
    net = FakeNet()
    net.up_s, net.own_latency_s = 27.0, 16.4  # Topology.up: the whole, and the pings of the place's own latency
    lab = _toy_lab([], [])
    engine.setup_check(net, {}, RunContext(lab=lab, params={}, out=tmp_path, quick=True, where="native"))
    timings = json.loads((tmp_path / engine.VERIFY / "manifest.json").read_text())["timings"]
    assert (timings["network_up"], timings["network_own_latency"]) == (27.0, 16.4)


def test_time_left_counts_the_runs_not_the_setup(tmp_path, monkeypatch, caplog):
    """A setup check of 100 s and runs of 10 s: after the first run, 2 runs are about 20 s left."""
    clock = [0.0]
    monkeypatch.setattr(engine, "wall_clock", lambda out: clock[0])

    def check_paths(net, rd, a, b, **kw):
        clock[0] += 100
        rd.summary["checks"] = {}

    monkeypatch.setattr(engine, "check_paths", check_paths)
    monkeypatch.setattr(engine, "describe", lambda checks: "")
    lab = _toy_lab([], [])
    lab = Lab(**{**vars(lab), "measure": lambda net, rd, point, params: clock.__setitem__(0, clock[0] + 10) or "ok"})
    with caplog.at_level("INFO", logger="mptcplab.toy"):
        engine.run(RunContext(lab=lab, params={}, out=tmp_path, quick=True, where="native"))
    lines = [r.getMessage() for r in caplog.records]
    assert "3 runs to measure" in lines
    assert "1/3 p0: ok  [1m50s, about 0m20s left]" in lines and "3/3 p2: ok  [2m10s]" in lines, lines


@pytest.mark.parametrize("argv, says", [
    (["run", "lab3", "--quick", "--set", "loss=150%"], "no parameter 'loss'"),
    (["run", "lab1", "--quick", "--set", "sweep.repetitions=-1"], "repetitions"),
    (["run", "lab1", "--quick", "--set", "paths.fast.link=rate=fast"], "bad rate"),
    (["run", "lab3", "--quick", "--set", "steady_s=0"], "duration"),
    (["run", "lab3", "--quick", "--set", "flows=4"], "should be a list"),
    (["run", "lab2", "--quick", "--set", "runs=3"], "now called 'repetitions'"),
    (["run", "lab3", "--quick", "--set", "model_b=fast"], "model_b"),
])
def test_bad_parameters_fail_before_any_place_starts(argv, says, capsys, monkeypatch):
    from mptcplab.run import runner

    monkeypatch.setattr(runner, "in_place", lambda *a: pytest.fail("a place was started"))
    assert main(argv) == 2
    assert says in capsys.readouterr().err


def test_the_runner_runs_a_lab_in_a_guest_place_it_knows_only_by_its_registry_entry(fake_place, tmp_path):
    from mptcplab.run import runner

    out = tmp_path / "lab1"
    assert runner.run_lab("lab1", quick=True, where="fake", out=out, overrides={"sweep": {"repetitions": 1}}) == 0
    (argv, results, handed), = fake_place.calls
    assert argv[:4] == ["run", "lab1", "--out", str(out)] and argv[-2:] == ["--where", "native"]
    assert "--quick" in argv and not any(a.startswith("--set") for a in argv)  # parameters go as data:
    assert handed["params"]["sweep"]["repetitions"] == 1 and handed["params"]["paths"]  # resolved here
    assert handed["command"] == sys.argv  # the user's command line, for the guest's manifests
    assert handed["tools"] == tool_versions()  # read here: the guest runs the same files, slower
    assert handed["git"] == git_commit()  # likewise: `git status` over 9p took ~8 s in the VM
    assert results == [out] and json.loads((out / "lab-summary.json").read_text())["argv"] == argv
    assert fake_place.prepared == ["lab1"]
    assert fake_place.compiled == [paths.PACKAGE]  # the guest reads the kit's bytecode, compiled here
    # the guest measured; the host analyses, as the place the runs came from
    (ctx,) = fake_place.analysed
    assert (ctx.lab.id, ctx.out, ctx.where, ctx.shard) == ("lab1", out, "fake", None)


@pytest.mark.parametrize("quick", [False, True])
def test_a_shard_in_a_guest_gets_quick_only_when_asked(fake_place, tmp_path, quick):
    """The guest's command says --quick only for a quick run, and gets the parameters of the run
    asked for (a full shard's are the full sweep's, not [quick]'s)."""
    from mptcplab.run import runner
    from mptcplab.run.shards import Shard

    assert runner.run_lab("lab3", quick=quick, where="fake", out=tmp_path / "s", shard=Shard(2, 3)) == 0
    (argv, _, handed), = fake_place.calls
    assert ("--quick" in argv) is quick and "--shard=2/3" in argv
    assert handed["params"] == get_lab("lab3").load_params(quick)


def test_a_place_decided_by_the_caller_is_not_decided_again(fake_place, tmp_path, monkeypatch, caplog):
    """`reproduce` decides each lab's place once (to report it) and hands the decision on; the
    "runs X: why" line is still said once, by run_lab."""
    from mptcplab.places.choice import Choice
    from mptcplab.run import runner

    monkeypatch.setattr(runner, "decide", lambda *a, **k: pytest.fail("decided a second time"))
    caplog.set_level("INFO")
    picked = Choice("fake", "the only place that offers netem here")
    assert runner.run_lab("lab1", quick=True, where="auto", out=tmp_path / "lab1",
                          overrides={"sweep": {"repetitions": 1}}, picked=picked) == 0
    assert len(fake_place.calls) == 1
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("runs ")]
    assert said == ["runs in the fake place: the only place that offers netem here"]


def test_a_lab_goes_to_the_test_place_only_when_it_offers_what_the_lab_needs(fake_place):
    from mptcplab.core.errors import EnvironmentProblem
    from mptcplab.places.decide import decide

    assert decide("fake", ("netem",)).place == "fake"
    with pytest.raises(EnvironmentProblem, match="needs bpf_struct_ops, which fake cannot offer"):
        decide("fake", ("bpf_struct_ops",), lab="lab2")


def test_inside_the_test_place_the_manifest_carries_its_facts(fake_place, monkeypatch, tmp_path):
    from mptcplab.run.results import Sweep

    from mptcplab import places

    monkeypatch.setenv("MPTCPLAB_WHERE", "fake")
    monkeypatch.setenv(*places.hand({"command": ["mptcplab", "run", "lab1", "--set", "x=1"]}).popitem())
    with Sweep(tmp_path).run("r1", {}):
        pass
    m = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert m["platform"]["where"] == "fake" and m["platform"]["fake"] is True and "clock" in m
    assert m["command"] == ["mptcplab", "run", "lab1", "--set", "x=1"]  # what the user ran, not the guest's


def test_the_host_prepares_a_guest_under_the_experiment_lock(fake_place, tmp_path, monkeypatch):
    """The host's work for a guest (Lab 2: compiling its BPF objects) waits for the lock like the
    experiment: beside another run's measurement it would disturb it. It counts in the lab's time."""
    import contextlib

    from mptcplab.run import runner

    held = []

    @contextlib.contextmanager
    def lock():
        held.append(True)
        yield
        held.append(False)

    monkeypatch.setattr(runner, "experiment_lock", lock)
    monkeypatch.setattr(fake_place, "prepare", lambda lab: fake_place.prepared.append((lab.id, held[-1:])))
    assert runner.run_lab("lab1", quick=True, where="fake", out=tmp_path / "l1", overrides={"sweep": {"repetitions": 1}}) == 0
    assert fake_place.prepared == [("lab1", [True])]


def test_a_guest_records_the_tool_versions_and_commit_the_host_handed_it(fake_place, monkeypatch, tmp_path):
    """In a guest the manifests carry the host's reading of the tools and the checkout (the same
    files): the VM under software emulation ran `tshark --version` past its timeout and recorded
    None, and its first `git status` over 9p took ~8 s of the setup check."""
    from mptcplab import places
    from mptcplab.core import paths, process
    from mptcplab.run import results

    commit = {"commit": "0123abc", "dirty": False}
    monkeypatch.setenv("MPTCPLAB_WHERE", "fake")
    monkeypatch.setenv(*places.hand({"command": ["mptcplab"], "tools": {"tshark": "TShark 4.0.17"},
                                     "git": commit}).popitem())
    monkeypatch.setattr(process, "first_line", lambda argv, *a, **k: pytest.fail(f"ran {argv} in the guest"))
    monkeypatch.setattr(process, "run", lambda argv, *a, **k: pytest.fail(f"ran {argv} in the guest"))
    paths.git_commit.cache_clear()
    results.tool_versions.cache_clear()
    try:
        with results.Sweep(tmp_path).run("r1", {}):
            pass
    finally:
        results.tool_versions.cache_clear()
    manifest = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert manifest["tools"] == {"tshark": "TShark 4.0.17"} and manifest["git"] == commit


def test_check_setup_repeats_the_check_on_fresh_networks_and_tables_every_attempt(tmp_path, monkeypatch, caplog):
    """`run LAB --check-setup N`: N attempts, each its own network and run directory; a refusal is
    one row (with what it had measured), not the end of the series; nothing is measured. Its
    progress is said as a sweep's runs are (engine.Progress)."""
    from mptcplab.core.errors import ExperimentFailed

    attempts, clock = [], [0.0]
    monkeypatch.setattr(engine, "wall_clock", lambda out: clock[0])

    def check_paths(net, rd, a, b, **kw):
        clock[0] += 60
        attempts.append(net)
        rd.summary["checks"] = {"paths": {"p1": {"configured_rtt_ms": 20.0, "ping": {"min_ms": 20.3, "median_ms": 21.0},
                                                 "own_latency": {"own_rtt_ms": 1.5, "own_spread_ms": 0.7}}},
                                "physics": ["lowest ping RTT on path p1: measured 20.3 ms, bound 20.81 ms (within)"]}
        if len(attempts) == 2:
            raise ExperimentFailed("lowest ping RTT on path p1: measured 22 ms (OUTSIDE)")

    monkeypatch.setattr(engine, "check_paths", check_paths)
    monkeypatch.setattr(engine, "describe", lambda checks: "")
    measured = []
    lab = _toy_lab(measured, [])
    with caplog.at_level("INFO", logger="mptcplab.toy"):
        rows = engine.check_setup(RunContext(lab=lab, params={}, out=tmp_path, quick=True, where="native"), 3)
    assert [r["passed"] for r in rows] == [True, False, True] and measured == []
    said = [r.getMessage() for r in caplog.records]
    assert "3 setup checks to run" in said and "1/3 setup check: passed  [1m00s, about 2m00s left]" in said, said
    assert any(line.startswith("2/3 setup check: REFUSED: lowest ping RTT") for line in said), said
    assert len({id(n) for n in attempts}) == 3  # a fresh network each time
    assert rows[1]["ping_min_ms"] == 20.3 and "OUTSIDE" in rows[1]["refused"]  # kept from failed.json
    assert rows[0]["own_spread_ms"] == 0.7 and "within" in rows[0]["rtt_verdict"]
    table = (tmp_path / "setup-checks.csv").read_text().splitlines()
    assert len(table) == 4 and table[0].startswith("attempt,passed,path")
    assert (tmp_path / "setup-check-2" / "verify.partial" / "failed.json").exists()


def test_a_guest_that_dies_under_a_sweep_is_started_once_more_and_the_restart_kept(fake_place, tmp_path, monkeypatch):
    """A guest ending without an exit status (the emulator or its kernel died: virtme-ng's 255) is
    not the experiment's verdict: the sweep resumes after its finished runs in a new guest, once."""
    from mptcplab.places import guest
    from mptcplab.run import runner

    deaths = ["[  512.1] Out of memory: Killed process 71 (python3)", "qemu: terminating"]
    real_run = fake_place.run

    def dies_first(argv, results, handed):
        if len(fake_place.calls) < len(deaths):
            fake_place.calls.append((argv, results, handed))
            tail = guest.Tail()
            tail.add(deaths[len(fake_place.calls) - 1] + "\n")
            raise tail.stopped("the fake guest", 255)
        return real_run(argv, results, handed)

    monkeypatch.setattr(fake_place, "run", dies_first)
    out = tmp_path / "lab1"
    kw = dict(quick=True, where="fake", out=out, overrides={"sweep": {"repetitions": 1}})
    monkeypatch.setattr(runner, "RESTARTS", 1)
    with pytest.raises(guest.Stopped, match="qemu: terminating"):  # died twice: the second is the error
        runner.run_lab("lab1", **kw)
    kept = json.loads((out / "restarts.json").read_text())
    assert [k["place"] for k in kept] == ["fake"] and "Out of memory" in kept[0]["error"]

    fake_place.calls.clear()
    deaths[:] = ["qemu: terminating"]  # dies once: the second guest finishes the sweep
    assert runner.run_lab("lab1", **kw) == 0
    assert len(fake_place.calls) == 2 and len(json.loads((out / "restarts.json").read_text())) == 2
