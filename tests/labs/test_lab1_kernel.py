"""Lab 1 and physics: every sweep run keeps the kernel's view (ss) and `mptcplab check` judges it;
the control runs are wired through the engine like the detailed run; the analysis and the
notebook's checks flag runs above their window bound without grading the luck of the run.

A fake network: its ss sampler plays canned `ss -tinmHM` output, `bulk` returns a made-up result.
"""

import inspect
import json
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from mptcplab.core.errors import UsageError
from mptcplab.commands.check import check_results
from mptcplab.grading.feedback import CheckFailed
from mptcplab.labs.lab1 import analysis as la
from mptcplab.labs.lab1 import experiment as l1
from mptcplab.labs.lab1 import measure as lm
from mptcplab.measure import traffic
from mptcplab.measure.observe import parse_ss
from mptcplab.measure.traffic import BulkResult
from mptcplab.net.topology import BASE_SYSCTLS
from mptcplab.run import engine
from mptcplab.run.lab import REPO_ROOT, Lab, RunContext, get_lab
from mptcplab.run.results import Sweep

FIXTURES = REPO_ROOT / "tests" / "engine" / "fixtures" / "physics"
REF = REPO_ROOT / "solutions" / "results" / "lab1"
ADDR = {("snd", "fast"): "10.1.0.1", ("snd", "slow"): "10.2.0.1", ("rcv", "fast"): "10.1.0.2",
        ("rcv", "slow"): "10.2.0.2"}


def tcp_slow_samples(unacked=(60, 85)):
    """Single-path TCP over the 80 ms path, tcp_wmem 64K, as `ss -tinmHM` prints it."""
    out = ""
    for i, u in enumerate(unacked):
        out += (f"@ {100 + i * 0.25:.2f}\n"
                "tcp   ESTAB 0      0      10.2.0.1%slow:40010 10.2.0.2:5201\n"
                f"\t skmem:(r0,rb131072,t0,tb65536,f0,w{70000 + 50000 * i},o0,bl0,d0) cubic wscale:7,7 rto:284 "
                f"rtt:{81.2 - 0.4 * i}/0.4 mss:1448 pmtu:1500 rcvmss:536 advmss:1448 cwnd:90 "
                f"bytes_acked:{100000 * (i + 1)} unacked:{u} minrtt:{80.05 - 0.03 * i:.2f}\n")
    return out


def mptcp_samples():
    """MPTCP over both paths: two subflows (tcp-ulp-mptcp), then the MPTCP socket, which ss lists
    with its first subflow's addresses and its own skmem (tb = the MPTCP socket's sk_sndbuf)."""
    out = ""
    for i, (uf, us) in enumerate(((20, 30), (10, 40))):
        out += (f"@ {200 + i * 0.25:.2f}\n"
                "tcp   ESTAB 0      0      10.1.0.1:40000 10.1.0.2:5201\n"
                f"\t skmem:(r0,rb131072,t0,tb65536,f0,w60000,o0,bl0,d0) cubic wscale:7,7 rto:201 rtt:0.{3 + i}/0.1 "
                f"mss:1448 cwnd:40 unacked:{uf} minrtt:0.05 tcp-ulp-mptcp flags:Mmec token:0000(id:0)/1234(id:0)\n"
                "tcp   ESTAB 0      0      10.2.0.1%slow:40001 10.1.0.2:5201\n"
                f"\t skmem:(r0,rb131072,t0,tb65536,f0,w90000,o0,bl0,d0) cubic wscale:7,7 rto:284 rtt:8{0 + i}.5/1 "
                f"mss:1448 cwnd:60 unacked:{us} minrtt:80.02 tcp-ulp-mptcp flags:Jjecv token:0000(id:2)/1234(id:0)\n"
                "mptcp ESTAB 0      0      10.1.0.1:40000 10.1.0.2:5201\n"
                f"\t skmem:(r0,rb131072,t0,tb200704,f0,w{180000 + i},o0,bl0,d0) subflows:1 add_addr_signal:0 "
                "remote_key token:1234 write_seq:5 snd_una:3 rcv_nxt:7\n")
    return out


class FakeNet:
    """What Lab 1's measure, configure and the engine touch; ss plays `samples`."""

    def __init__(self, tmp: Path, samples: str):
        self.canned = tmp / "ss-canned.txt"
        self.canned.write_text(samples)
        self.sysctls = {"snd": {"net.ipv4.tcp_wmem": "4096 16384 4194304", "net.core.wmem_max": str(1 << 30)}}
        self.topo = SimpleNamespace(paths=[SimpleNamespace(name="fast", a="snd", b="rcv", rtt_s=0.0),
                                           SimpleNamespace(name="slow", a="snd", b="rcv", rtt_s=0.08)],
                                    mptcp_subflows=2, base_sysctls=lambda: dict(BASE_SYSCTLS))

    def address(self, host, path):
        return ADDR[(host, path)]

    def stop(self, proc):
        proc.wait(timeout=10)

    def set_sysctl(self, host, key, value):
        self.sysctls.setdefault(host, {})[key] = str(value)

    def sysctl(self, host, key):
        return self.sysctls.get(host, {}).get(key)

    def record(self, rd):
        rd.manifest["network"] = {"sysctls": json.loads(json.dumps(self.sysctls)), "paths": [
            {"name": "fast", "a": "snd", "b": "rcv", "link": "rate=100mbit,delay=0ms", "a_addr": "10.1.0.1",
             "rtt_ms_configured": 0.0},
            {"name": "slow", "a": "snd", "b": "rcv", "link": "rate=100mbit,delay=40ms", "a_addr": "10.2.0.1",
             "rtt_ms_configured": 80.0}]}


@pytest.fixture(autouse=True)
def canned_ss(monkeypatch):
    """The ss sampler (the `ss` role traffic.spawn forks in the sender) plays the network's samples."""
    def spawn(net, host, role, *args, **kw):
        assert role == "ss"
        shutil.copy(net.canned, args[args.index("--out") + 1])
        return subprocess.Popen(["echo", json.dumps({"role": "ss", "cpu_s": 0.0})], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    monkeypatch.setattr(traffic, "spawn", spawn)


def fake_bulk(mbps):
    def bulk(net, src, dst, path, proto="tcp", duration=10.0, sndbuf=None, port=5201, **kw):
        flow = {"flow": 0, "bytes": mbps * 1e6 / 8 * duration, "goodput_transfer_mbps": mbps,
                "sndbuf": sndbuf * 2 if sndbuf else 65536,
                "subflows": 2 if proto == "mptcp" else 1}
        iv = pd.DataFrame({"time": [1.0, 1.1], "flow": [0, 0], "bytes": [1000, 1000], "mbps": [0.08, 0.08]})
        return BulkResult("mptcplab.measure.bulk", proto, duration, 1.0, 1.0 + duration, [flow], iv)
    return bulk


@pytest.fixture
def quick():
    return get_lab("lab1").load_params(quick=True)


def _point(params, key):
    return next(p for p in l1.sweep_points(params) if p.key == key)


# ---------------------------------------------------------------- the kernel's view of every sweep run

def test_kernel_view_of_a_single_path_run():
    v = lm.kernel_view(parse_ss(tcp_slow_samples()), {"10.1.0.1": "fast", "10.2.0.1": "slow"})
    assert v == {"ss_samples": 2, "sk_sndbuf_slow": 65536, "srtt_ms_slow": 81.0, "min_rtt_ms_slow": 80.02,
                 "inflight_max_slow": 85 * 1448, "inflight_max": 85 * 1448, "wmem_queued_max": 120000}


def test_kernel_view_of_an_mptcp_run_keeps_the_mptcp_socket_apart():
    v = lm.kernel_view(parse_ss(mptcp_samples()), {"10.1.0.1": "fast", "10.2.0.1": "slow"})
    assert v["srtt_ms_fast"] == pytest.approx(0.35) and v["srtt_ms_slow"] == pytest.approx(81.0)
    assert v["min_rtt_ms_slow"] == 80.02 and v["inflight_max_slow"] == 40 * 1448
    assert v["inflight_max"] == 50 * 1448  # summed over the subflows at one sample
    assert v["wmem_queued_max"] == 180001  # the MPTCP socket's, not a subflow's
    assert v["sk_sndbuf_fast"] == v["sk_sndbuf_slow"] == 65536
    assert lm.kernel_view(parse_ss(""), {}) == {"ss_samples": 0}


def test_kernel_view_judges_bytes_in_flight_after_slow_start_and_keeps_the_whole_peak():
    # 90 segments in the first sample (slow start), 60 in the steady window from t = 100.1
    v = lm.kernel_view(parse_ss(tcp_slow_samples((90, 60))), {"10.2.0.1": "slow"}, since=100.1)
    assert v["inflight_max_slow"] == v["inflight_max"] == 60 * 1448
    assert v["inflight_max_whole"] == 90 * 1448
    assert "inflight_max_whole" not in lm.kernel_view(parse_ss(tcp_slow_samples()), {"10.2.0.1": "slow"})


def test_sweep_run_records_the_kernel_view_and_keeps_only_parsed_samples(tmp_path, monkeypatch, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(12.0))
    point = _point(quick, "wmem-64K-tcp-slow-r1")
    engine.run_point(l1.LAB, FakeNet(tmp_path, tcp_slow_samples()), Sweep(tmp_path / "sweep"), point, quick)
    run = tmp_path / "sweep" / point.key
    s = json.loads((run / "summary.json").read_text())
    assert s["srtt_ms_slow"] == 81.0 and s["min_rtt_ms_slow"] == 80.02 and s["inflight_max_slow"] == 85 * 1448
    assert s["sndbuf_effective"] == 65536 and s["wmem_queued_max"] == 120000 and s["ss_samples"] == 2
    assert "sk_sndbuf_kernel" not in s  # the send buffer is recorded once: sndbuf_effective
    assert s["kernel_tcp"]["ss"]["inflight_bytes_max"] == 85 * 1448  # what check_run_dir reads
    assert not (run / "ss.txt").exists() and (run / "ss.csv").exists()  # parsed samples kept, raw text not
    note = json.loads((run / "manifest.json").read_text())["observation"]["ss"]
    assert note["interval_s"] == l1.SWEEP_SS_INTERVAL_S and note["file"] == "ss.csv" and note["raw"] is None
    # ... and sweep.csv carries it, so the compact copy keeps it
    la.compact(tmp_path / "sweep")
    row = pd.read_csv(tmp_path / "sweep" / "sweep.csv").iloc[0]
    assert row["inflight_max_slow"] == 85 * 1448 and row["min_rtt_ms_slow"] == 80.02


def _judged(verdicts):
    return sorted((v.check.split(": ", 1)[-1].split("): ")[-1], v.ok) for v in verdicts)


def test_mptcplab_check_judges_the_sweep_runs_once(tmp_path, monkeypatch, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(12.0))
    point = _point(quick, "wmem-64K-tcp-slow-r1")
    engine.run_point(l1.LAB, FakeNet(tmp_path, tcp_slow_samples()), Sweep(tmp_path / "sweep"), point, quick)
    la.compact(tmp_path / "sweep")
    # 12 Mbit/s with 123 kB in flight: within (64K + 64K) / 80 ms = 13.1 Mbit/s and 131,072 bytes
    assert _judged(check_results(tmp_path / "sweep")) == [
        ("bytes in flight", True), ("goodput vs link ceiling", True), ("single-path TCP vs window bound", True),
        ("the kernel's min RTT", True)]  # 80.02 ms on the 80 ms path


def test_mptcplab_check_fails_a_sweep_run_above_its_bounds_also_in_the_compact_copy(tmp_path, monkeypatch, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(37.0))  # the UML kernel's artefact (issue 12)
    point = _point(quick, "wmem-64K-tcp-slow-r1")
    engine.run_point(l1.LAB, FakeNet(tmp_path, tcp_slow_samples((600, 947))), Sweep(tmp_path / "sweep"), point,
                     quick)
    la.compact(tmp_path / "sweep")
    assert _judged(check_results(tmp_path / "sweep")) == [
        ("bytes in flight", False), ("goodput vs link ceiling", True), ("single-path TCP vs window bound", False),
        ("the kernel's min RTT", True)]
    compact = tmp_path / "compact"  # the reference layout: sweep.csv and a manifest, no run directories
    compact.mkdir()
    shutil.copy2(tmp_path / "sweep" / "sweep.csv", compact / "sweep.csv")
    shutil.copy2(tmp_path / "sweep" / point.key / "manifest.json", compact / "verify-manifest.json")
    bad = [v for v in check_results(compact) if not v.ok]
    assert _judged(bad) == [("bytes in flight", False), ("single-path TCP vs window bound", False)]
    assert "1,371,256" in " ".join(v.line() for v in bad)  # 947 segments x 1448 bytes


def test_mptcp_sweep_run_records_both_subflows(tmp_path, monkeypatch, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(40.0))
    point = _point(quick, "sndbuf-64K-mptcp-r1")
    engine.run_point(l1.LAB, FakeNet(tmp_path, mptcp_samples()), Sweep(tmp_path / "sweep"), point, quick)
    s = json.loads((tmp_path / "sweep" / point.key / "summary.json").read_text())
    assert s["proto"] == "mptcp" and s["inflight_max"] == 50 * 1448 and s["wmem_queued_max"] == 180001
    assert {"srtt_ms_fast", "srtt_ms_slow", "inflight_max_fast", "inflight_max_slow"} <= set(s)
    # MPTCP has no single-path window bound: nothing of this run is judged on bytes in flight
    assert not [v for v in check_results(tmp_path / "sweep") if "bytes in flight" in v.check]


def test_each_buffer_is_parsed_once_and_sets_what_its_method_says(tmp_path, monkeypatch, quick):
    b = l1.SendBuffer.parse("64K", "sndbuf")
    assert (b.size, b.so_sndbuf, b.tcp_wmem) == (65536, 65536, l1.DEFAULT_WMEM)
    assert (l1.SendBuffer.parse("1M").tcp_wmem, l1.SendBuffer.parse("1M").so_sndbuf) == ("1048576 1048576 1048576", None)
    assert l1.SendBuffer.of(_point(quick, "sndbuf-64K-mptcp-r1").values) == b  # a point carries it, parsed
    sent = []
    monkeypatch.setattr(l1, "bulk", lambda *a, **kw: sent.append(kw["sndbuf"]) or fake_bulk(40.0)(*a, **kw))
    for key in ("sndbuf-64K-mptcp-r1", "wmem-64K-mptcp-r1"):
        net = FakeNet(tmp_path, mptcp_samples())
        engine.run_point(l1.LAB, net, Sweep(tmp_path / "sweep"), _point(quick, key), quick)
        sent.append(net.sysctls["snd"]["net.ipv4.tcp_wmem"])
    assert sent == [65536, l1.DEFAULT_WMEM, None, "65536 65536 65536"]


# ---------------------------------------------------------------- the control runs

class Recorder:
    """Stand-ins for Capture, Counters and Tracing that record how they were made."""

    def __init__(self):
        self.calls = []

    def kind(self, name):
        rec = self

        class Observer:
            wait_method = "kprobe:sk_stream_wait_memory"
            delta = {"MPTcpExtMPTCPRetrans": 3}  # Counters: nstat's differences

            def __init__(self, *args, **kw):
                rec.calls.append((name, kw))

            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False
        return Observer


@pytest.fixture
def observed(monkeypatch):
    rec = Recorder()
    for name in ("Capture", "Counters", "Tracing"):
        monkeypatch.setattr(l1, name, rec.kind(name))
    monkeypatch.setattr(l1, "verify_capture", lambda pcap, n: rec.calls.append(("verify_capture", {"n": n}))
                        or {"subflows_with_data": n})
    return rec


def test_control_run_on_the_fast_path_is_observed_like_the_detailed_run(tmp_path, monkeypatch, observed, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(95.0))
    main, tcp, big = l1.detail_points(quick, 65536)
    assert (main.key, tcp.key, big.key) == ("detail-wmem-64K-mptcp", "detail-wmem-64K-tcp-fast", "detail-wmem-1M-mptcp")
    line = engine.run_point(l1.LAB, FakeNet(tmp_path, tcp_slow_samples()), Sweep(tmp_path), tcp, quick)
    s = json.loads((tmp_path / tcp.key / "summary.json").read_text())
    assert s["detail"] is True and s["control"] == "tcp-fast" and s["config"] == "tcp-fast"
    assert s["sndbuf_wait_method"] == "kprobe:sk_stream_wait_memory" and "capture_check" not in s
    assert [c[0] for c in observed.calls] == ["Capture", "Counters", "Tracing"]
    assert observed.calls[2][1] == {"mptcp": False, "sndbuf_waits": True}
    assert (tmp_path / tcp.key / "ss.csv").exists()  # the detailed runs keep their samples (50 ms)
    manifest = json.loads((tmp_path / tcp.key / "manifest.json").read_text())
    assert manifest["network"]["sysctls"]["snd"]["net.ipv4.tcp_wmem"] == "65536 65536 65536"
    assert "95.0 Mbit/s" in line


def test_degraded_run_and_large_buffer_control_verify_their_subflows(tmp_path, monkeypatch, observed, quick):
    monkeypatch.setattr(l1, "bulk", fake_bulk(25.0))
    main, _, big = l1.detail_points(quick, 65536)
    for p in (main, big):
        engine.run_point(l1.LAB, FakeNet(tmp_path, mptcp_samples()), Sweep(tmp_path), p, quick)
    s_main = json.loads((tmp_path / main.key / "summary.json").read_text())
    s_big = json.loads((tmp_path / big.key / "summary.json").read_text())
    assert "control" not in s_main and s_big["control"] == "mptcp@largest" and s_big["buffer_bytes"] == 1 << 20
    assert [c for c in observed.calls if c[0] == "verify_capture"] == [("verify_capture", {"n": 2})] * 2
    assert all(kw == {"mptcp": True, "sndbuf_waits": True} for name, kw in observed.calls if name == "Tracing")
    assert la.find_detail(tmp_path) == tmp_path / main.key  # the degraded run, not a control
    assert [c for _, c in la.find_details(tmp_path)] == [None, "mptcp@largest"]


def _finished_sweep(root: Path, params: dict, degraded_at: int = 65536) -> Sweep:
    """Every sweep point done, MPTCP worst at `degraded_at` (the detail's "auto" picks it)."""
    for p in l1.sweep_points(params):
        v = p.values
        mbps = {"tcp-fast": 95.0, "tcp-slow": 12.0}.get(v["config"]) or (20.0 if v["buffer_bytes"] == degraded_at
                                                                        else 60.0)
        d = root / p.key
        d.mkdir(parents=True)
        (d / "summary.json").write_text(json.dumps({**v, "goodput_transfer_mbps": mbps}))
        (d / "manifest.json").write_text("{}")
    return Sweep(root)


def test_points_add_the_controls_after_the_sweep(tmp_path, quick):
    sweep = _finished_sweep(tmp_path / "q", quick)
    todo = l1.points(quick, sweep)
    extra = todo[len(l1.sweep_points(quick)) + len(l1.paper_points(quick)):]  # the paper's point comes first
    assert [p.key for p in extra] == ["detail-wmem-64K-mptcp", "detail-wmem-64K-tcp-fast", "detail-wmem-1M-mptcp"]
    assert [p.values.get("control") for p in extra] == [None, "tcp-fast", "mptcp@largest"]
    assert all(p.values["detail"] and p.values["duration_s"] == quick["detail"]["duration_s"] for p in extra)
    # nothing detailed before the sweep is complete
    assert l1.points(quick, None) == l1.sweep_points(quick) + l1.paper_points(quick)

    full = get_lab("lab1").load_params(quick=False, overrides={"sweep": {"repetitions": 1}})
    extra = l1.points(full, _finished_sweep(tmp_path / "f", full))[len(l1.sweep_points(full)) + len(l1.paper_points(full)):]
    assert [p.key for p in extra] == ["detail-wmem-64K-mptcp", "detail-wmem-64K-tcp-fast", "detail-wmem-4M-mptcp"]


@pytest.mark.parametrize("controls, keys", [
    ([], ["detail-wmem-64K-mptcp"]),
    (["mptcp@2M", "tcp-slow"], ["detail-wmem-64K-mptcp", "detail-wmem-2M-mptcp", "detail-wmem-64K-tcp-slow"]),
    (["mptcp"], ["detail-wmem-64K-mptcp"]),  # the degraded run itself: not run twice
])
def test_controls_are_a_parameter(controls, keys, quick):
    params = {**quick, "detail": {**quick["detail"], "controls": controls}}
    assert [p.key for p in l1.detail_points(params, 65536)] == keys


@pytest.mark.parametrize("spec, says", [("udp", "detail.controls"), ("mptcp@lots", "buffer size")])
def test_bad_controls_fail_when_the_parameters_are_read(spec, says):
    with pytest.raises(UsageError, match=says):
        get_lab("lab1").load_params(quick=True, overrides={"detail": {"controls": [spec]}})


def test_engine_runs_the_sweep_then_the_detailed_run_and_its_controls(tmp_path, monkeypatch, quick):
    monkeypatch.setattr(engine, "setup_check", lambda net, params, ctx: None)
    order = []

    class Topo:
        def __init__(self, params):
            pass

        def up(self):
            import contextlib
            return contextlib.nullcontext(FakeNet(tmp_path, ""))

    def measure(net, rd, point, params):
        order.append(point.key)
        v = point.values
        rd.summary.update({**v, "goodput_transfer_mbps": {"tcp-fast": 95.0, "tcp-slow": 12.0}.get(v["config"])
                           or (20.0 if v["buffer_bytes"] == 131072 else 60.0)})
        return "ok"

    lab = Lab(**{**vars(l1.LAB), "topology": Topo, "measure": measure, "finish": l1.finish})
    params = {**quick, "sweep": {**quick["sweep"], "methods": ["wmem"]}}
    summary = engine.run(RunContext(lab=lab, params=params, out=tmp_path / "run", quick=True, where="native"))
    n, paper = len(l1.sweep_points(params)), [p.key for p in l1.paper_points(params)]
    assert order[n:] == paper + ["detail-wmem-128K-mptcp", "detail-wmem-128K-tcp-fast", "detail-wmem-1M-mptcp"]
    assert summary["detail"] == "detail-wmem-128K-mptcp"
    assert summary["controls"] == ["detail-wmem-128K-tcp-fast", "detail-wmem-1M-mptcp"]
    sweep = la.load_sweep(tmp_path / "run")
    assert len(sweep) == n  # neither the paper's point nor the detailed runs are sweep rows


def test_load_sweep_compacts_a_resumed_sweep_again_and_reads_a_reference_as_it_is(tmp_path, quick):
    import os

    sweep = _finished_sweep(tmp_path / "s", quick)
    first = la.load_sweep(sweep.root)  # compacted on first read (sweep.csv written)
    old = sweep.root / "sweep.csv"
    os.utime(old, (1, 1))  # older than every run: a run added after it makes it stale
    run = sweep.root / "wmem-64K-tcp-fast-r9"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"run": run.name, "method": "wmem", "buffer": "64K",
                                                  "buffer_bytes": 65536, "config": "tcp-fast", "rep": 9,
                                                  "goodput_transfer_mbps": 90.0}))
    (run / "manifest.json").write_text("{}")
    assert len(la.load_sweep(sweep.root)) == len(first) + 1
    # a reference copy keeps its detailed runs beside sweep.csv: newer than it, they do not remake it
    ref = tmp_path / "ref"
    (ref / "detail-wmem-64K-mptcp").mkdir(parents=True)
    first.to_csv(ref / "sweep.csv", index=False)
    os.utime(ref / "sweep.csv", (1, 1))
    (ref / "detail-wmem-64K-mptcp" / "summary.json").write_text(json.dumps({"detail": True, "config": "mptcp"}))
    assert len(la.load_sweep(ref)) == len(first)


# ---------------------------------------------------------------- analysis: bounds, controls, tracing cost

def test_window_bounds_flag_what_mptcplab_check_fails():
    bad_dir = FIXTURES / "lab1-bad"
    sweep = la.load_sweep(bad_dir)
    bounds = la.window_bounds(sweep, la.sweep_manifest(bad_dir))
    failed = {v.check.split(":")[0].split("/")[-1] for v in check_results(bad_dir) if not v.ok}
    assert set(bounds.loc[bounds["above"], "run"]) == failed
    row = bounds.set_index("run").loc["wmem-32K-tcp-slow-r1"]
    assert row["sk_sndbuf"] == 32768 and row["window_mbps"] == pytest.approx(9.8304)
    text = la.describe_bounds(bounds)
    assert text.startswith("Physics check: 4 of 8 single-path runs")
    assert "wmem-32K-tcp-slow-r1: 37.5 Mbit/s over the slow path (RTT 80 ms) with sk_sndbuf 32,768 B" in text
    assert "= 9.8 Mbit/s" in text and "graded on your" in text
    fig = la.fig_throughput(sweep, manifest=la.sweep_manifest(bad_dir))
    marked = [t for t in fig.data if t.name and t.name.startswith("run above its physics bound")]
    assert sum(len(t.x) for t in marked) == 4 and "4 single-path run(s) above" in fig.layout.title.text
    assert [t.name for t in fig.data].count("tcp-slow's window bound: (sk_sndbuf + 64 KiB) / RTT") == 2


def test_window_bounds_pass_a_valid_sweep_and_judge_bytes_in_flight():
    manifest = json.loads((FIXTURES / "lab1-bad" / "manifest.json").read_text())
    rows = [{"run": f"wmem-64K-{c}-r1", "method": "wmem", "buffer_bytes": 65536, "config": c, "rep": 1,
             "goodput_transfer_mbps": m, "sndbuf_effective": 65536} for c,
            m in (("tcp-fast", 95.5), ("tcp-slow", 12.9))]
    sweep = pd.DataFrame(rows)
    bounds = la.window_bounds(sweep, manifest)
    assert not bounds["above"].any()
    assert la.describe_bounds(bounds).startswith("Physics check: all 2 single-path runs are within their bounds")
    sweep["inflight_max_slow"] = [np.nan, 200_000]  # more than 64K + 64K in flight at 12.9 Mbit/s: still a finding
    bounds = la.window_bounds(sweep, manifest)
    assert list(bounds["above"]) == [False, True]
    assert "200,000 bytes in flight at once, at most 131,072" in la.describe_bounds(bounds)


def test_mptcp_bounds_and_the_buffer_needed():
    manifest = json.loads((FIXTURES / "lab1-bad" / "manifest.json").read_text())
    rows = []
    for method, b, S, m in (("wmem", 65536, 196608, 30.0), ("wmem", 1 << 20, 3 << 20, 178.0),
                            ("sndbuf", 65536, 131072, 10.0)):
        rows += [{"method": method, "buffer_bytes": b, "config": "mptcp", "goodput_transfer_mbps": m,
                  "sndbuf_effective": S},
                 {"method": method, "buffer_bytes": b, "config": "tcp-fast", "goodput_transfer_mbps": 95.0,
                  "sndbuf_effective": S}]
    sweep = pd.DataFrame(rows)
    t = la.mptcp_bounds(sweep, manifest).set_index(["method", "buffer_bytes"])
    small = t.loc[("wmem", 65536)]
    assert small["s_per_rtt_mbps"] == pytest.approx(196608 * 8 / 0.08 / 1e6)
    assert small["where"] == "between S/RTT_slow and 2S/RTT_slow"
    # subflows: the fast one fills its link, the slow one carries at most (64K + 64K) / 80 ms
    assert small["subflow_bound_mbps"] == pytest.approx((95.64 + 13.1072) * 1.01, rel=1e-3)
    assert t.loc[("sndbuf", 65536)]["where"] == "below S/RTT_slow"  # 2B = 128K per subflow, S = 128K
    assert not t["above_subflow_bound"].any()
    lo, hi = la.buffer_needed(manifest)
    assert hi == pytest.approx(2 * lo) and hi == pytest.approx(100e6 * 1448 / 1514 / 8 * 0.08)
    assert la.crossing(sweep) == {"sndbuf": None, "wmem": float(3 << 20)}
    text = la.describe_mptcp_bounds(sweep, manifest)
    # bytes, as the table's S (walkthrough 4: MB beside a table in bytes), and where the crossing lies
    assert "478,203 bytes (T = RTT_slow / 2) to 956,407 bytes (T = RTT_slow)" in text
    assert ("wmem: MPTCP stays above single-path TCP on the fast path from S = 3,145,728 bytes, not at 196,608 bytes "
            "(this sweep's next smaller S)") in text


def _detail_copy(dest: Path, name: str, summary: dict, waits: list[tuple[float, float]]):
    """A detailed run laid out as the compact copy keeps a control run: tables, no packets."""
    d = dest / name
    d.mkdir(parents=True)
    ref = la.find_detail(REF)
    shutil.copy2(ref / "manifest.json", d / "manifest.json")
    t0 = 1000.0
    (d / "summary.json").write_text(json.dumps({"t0": t0, "duration_s": 10.0, "detail": True, "method": "wmem",
                                                **summary}))
    pd.DataFrame({"start": [t0 + a for a, _ in waits], "end": [t0 + b for _, b in waits],
                  "duration_s": [b - a for a, b in waits], "tid": 1, "method": "kprobe:sk_stream_wait_memory"}
                 ).to_csv(d / "sndbuf_waits.csv", index=False)
    return d


def test_controls_side_by_side_with_the_cost_of_tracing(tmp_path):
    run = tmp_path / "run"
    many_short = [(i * 0.01, i * 0.01 + 0.008) for i in range(1000)]  # 8 ms of every 10 ms: blocked 80 %
    _detail_copy(run, "detail-wmem-64K-mptcp", {"config": "mptcp", "buffer": "64K", "buffer_bytes": 65536,
                                                "goodput_transfer_mbps": 19.0}, [(0.0, 4.0), (4.01, 9.99)])
    _detail_copy(run, "detail-wmem-64K-tcp-fast", {"config": "tcp-fast", "buffer": "64K", "buffer_bytes": 65536,
                                                   "goodput_transfer_mbps": 90.0, "control": "tcp-fast"}, many_short)
    _detail_copy(run, "detail-wmem-4M-mptcp", {"config": "mptcp", "buffer": "4M", "buffer_bytes": 4 << 20,
                                               "goodput_transfer_mbps": 170.0, "control": "mptcp@largest"},
                 many_short[:500])
    sweep = pd.DataFrame([{"method": "wmem", "buffer_bytes": 65536, "config": "mptcp",
                           "goodput_transfer_mbps": m} for m in (24, 26)]
                         + [{"method": "wmem", "buffer_bytes": 65536, "config": "tcp-fast",
                             "goodput_transfer_mbps": 95.0}])
    details = la.load_details(run)
    assert [d.control for d in details] == [None, "mptcp@largest", "tcp-fast"]
    assert details[0].packets.empty and details[0].label == "MPTCP, tcp_wmem 64K (degraded run)"
    t = la.wait_table(details, sweep).set_index("run")
    assert t.loc["detail-wmem-64K-mptcp", "blocked_share"] == pytest.approx(0.998)
    assert t.loc["detail-wmem-64K-tcp-fast", "blocked_share"] == pytest.approx(0.8)
    assert t.loc["detail-wmem-64K-mptcp", "tracing_ratio"] == pytest.approx(19 / 25)
    assert t.loc["detail-wmem-64K-tcp-fast", "utilisation"] == pytest.approx(90 / la.GOODPUT_LIMIT)
    assert t.loc["detail-wmem-4M-mptcp", "untraced_runs"] == 0  # not in this sweep: no ratio claimed
    cost = la.describe_tracing_cost(t.reset_index())
    assert "detail-wmem-64K-mptcp: 19.0 Mbit/s traced vs 25.0 Mbit/s untraced (mean of 2" in cost
    assert "ratio 0.76" in cost and "detail-wmem-4M-mptcp: 170.0 Mbit/s traced; no untraced sweep run" in cost
    assert "No control runs" not in la.describe_waits(t.reset_index())
    fig = la.fig_waits_compare(details, sweep)
    assert [tr.name for tr in fig.data if tr.type == "scatter"] == [d.label for d in details]
    assert len([tr for tr in fig.data if tr.type == "bar"]) == 3


def test_report_states_controls_tracing_cost_and_physics():
    text = la.report(REF)
    waits = la.wait_table(la.load_details(REF), la.load_sweep(REF))
    main = waits[waits["control"].isna()].iloc[0]  # the ratio is computed from the run, whichever it is
    assert "Cost of tracing" in text and f"{main['run']}: {main['goodput_transfer_mbps']:.1f} vs {main['untraced_mbps']:.1f}" in text
    assert f"(x{main['tracing_ratio']:.2f})" in text
    assert "Single-path runs within their window bound" in text and "control runs" in text


# ---------------------------------------------------------------- the notebook's checks

def _master():
    """The master notebook by question name: name -> {"answer": the model answer's code cells, "tests":
    its test cells}, and "outside": the code cells in no question (Otter's BEGIN/END markers)."""
    nb = json.loads((REPO_ROOT / "solutions" / "01-send-buffer.ipynb").read_text())
    found, name, part = {"outside": {"answer": [], "tests": []}}, None, None
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            head = src.strip().splitlines()[0] if src.strip() else ""
            if head == "# BEGIN QUESTION":
                name = next(ln.split(":", 1)[1].strip() for ln in src.splitlines() if ln.startswith("name:"))
                found[name] = {"answer": [], "tests": []}
            elif head == "# END QUESTION":
                name = None
            part = {"# BEGIN SOLUTION": "answer", "# BEGIN TESTS": "tests"}.get(head, None if head.startswith("# END")
                                                                                else part)
        elif cell["cell_type"] == "code":
            found["outside" if name is None else name]["answer" if name is None else part].append(src)
    return found


def _answer(questions, name, env):
    """The notebook's model answer of question `name`, run in env (which it extends)."""
    for src in questions[name]["answer"]:
        exec(src, env)
    return env


def _public_check(questions, name, env):
    """The notebook's public test of question `name`, called as Otter calls it (arguments by name from env)."""
    for src in questions[name]["tests"]:
        if "hidden: true" in src:
            continue
        ns: dict = {}
        exec(src, ns)
        for fn in (f for key, f in ns.items() if key.startswith("test_")):
            fn(*(env[p] for p in inspect.signature(fn).parameters))


def test_notebook_flags_physics_in_an_ungraded_cell_and_grades_computations_only():
    questions = _master()
    assert any("la.window_bounds(sweep, detail.manifest)" in c and "la.describe_bounds" in c
               for c in questions["outside"]["answer"])  # a cell in no question: it earns and costs nothing
    assert not any("window_bounds" in c for q, parts in questions.items() if q != "outside" for c in parts["tests"])
    sweep = la.load_sweep(FIXTURES / "lab1-bad")  # 4 single-path runs above their bound
    env = _answer(questions, "q1", {"sweep": sweep})
    _answer(questions, "q2", env)
    for q in ("q1", "q2"):  # a right answer passes whatever the run measured
        _public_check(questions, q, env)


def test_q2_accepts_an_empty_region_and_says_how_to_find_one(capsys):
    """A run whose MPTCP is nowhere below TCP (a quick sweep's buffers may all be too large), of one
    method only (`--set sweep.methods`): [] passes, the answer's cell says how to see a region, and a
    wrong answer gets the check's words, not a KeyError on the method the run lacks."""
    questions = _master()
    sweep = pd.DataFrame([{"method": "wmem", "buffer_bytes": b, "config": c,
                           "goodput_transfer_mbps": m} for b in (262144, 1048576)
                          for c, m in (("tcp-fast", 95.0), ("tcp-slow", 12.0), ("mptcp", 120.0))])
    env = _answer(questions, "q2", _answer(questions, "q1", {"sweep": sweep}))
    said = capsys.readouterr().out
    assert env["degraded"] == [] and "smallest buffer may be too large" in said
    # the data is named as the cause only where the figure shows no region (walkthrough 4: a wrong
    # function's [] read as the sweep's fault)
    assert ("if the figure above shades buffers in its tcp_wmem panel, the check below says what your function "
            "missed") in said
    _public_check(questions, "q2", env)
    right = env["degraded_buffers"]
    smallest = lambda t, m: right(t, m) or [int(t.loc[m].index.min())]  # noqa: E731 (right on a made-up table)
    with pytest.raises(CheckFailed, match="On the means of the sweep this notebook loaded: keep each buffer size"):
        _public_check(questions, "q2", {**env, "degraded_buffers": smallest})


def _paper_runs(held_minrtt_mbps=120.0, held_at=524288):
    """Made-up paper-point runs: two groups, TCP at 95, MPTCP well above it unless told otherwise; the
    buffers as upstream gives them (tcp_wmem 1 MiB: 3 MiB; SO_SNDBUF `held_at`: twice it)."""
    rows = []
    for group, method, set_to, buf, slow_buf, slow_inflight in (
            ("schedulers", "wmem", 1048576, 3145728, 1048576, 1040000),
            ("held", "sndbuf", held_at, 2 * held_at, 2 * held_at, 0.86 * 2 * held_at)):
        for rep in (1, 2):
            rows.append({"group": group, "method": method, "buffer_bytes": float(set_to), "config": "tcp-fast",
                         "scheduler": np.nan, "subflows": np.nan, "goodput_transfer_mbps": 95.0 + rep,
                         "sndbuf_effective": 1048576.0,
                         "sk_sndbuf_slow": np.nan, "inflight_max_slow": np.nan, "inflight_max_fast": 140000.0,
                         "wmem_queued_max": 1.06e6})
            for sched, mbps in (("default", 150.0), ("minrtt", held_minrtt_mbps if group == "held" else 170.0)):
                rows.append({"group": group, "method": method, "buffer_bytes": float(set_to), "config": "mptcp",
                             "scheduler": sched, "subflows": 2.0, "goodput_transfer_mbps": mbps + rep,
                             "sndbuf_effective": float(buf),
                             "sk_sndbuf_slow": float(slow_buf), "inflight_max_slow": slow_inflight + 1000.0 * rep,
                             "inflight_max_fast": 140000.0, "wmem_queued_max": buf + 10000.0})
    rows.append({"group": "tso", "method": "wmem", "buffer_bytes": 131072.0, "config": "tcp-fast", "scheduler": np.nan,
                 "goodput_transfer_mbps": 10.0, "sndbuf_effective": 131072.0})
    return pd.DataFrame(rows)


def test_q16_q17_grade_the_buffers_derived_against_what_the_kernel_gave_the_runs():
    """Wrong rules (the paper's kernel, SO_SNDBUF not doubled, a float, the whole buffer left, ...) are
    tests/labs/test_lab1_checks.py's; here the rule is judged at the settings the runs used."""
    questions = _master()
    for runs in (_paper_runs(), _paper_runs(held_at=262144),  # held at the guide's "going further" 256K too
                 _paper_runs().query("group != 'held'")):  # runs without the held point: the tcp_wmem point alone
        env = _answer(questions, "q17", _answer(questions, "q16", {"paper_runs": runs}))
        for q in ("q16", "q17"):
            _public_check(questions, q, env)
    paper_kernel = _paper_runs()  # a kernel that gave the socket tcp_wmem[2] (the paper's): the rule disagrees
    at_wmem = (paper_kernel["group"] == "schedulers") & (paper_kernel["config"] == "mptcp")
    paper_kernel.loc[at_wmem, "sndbuf_effective"] = 1048576.0
    with pytest.raises(CheckFailed, match=r"At the paper's point \(wmem, 1,048,576 B, 2 subflows\) your rule "):
        _public_check(questions, "q16", {**env, "paper_runs": paper_kernel})


def test_q18_q19_grade_the_computation_whatever_the_runs_measured():
    """Whether minrtt held at 1 MiB fell below TCP or not, the model answers pass, on Part D's runs (a
    quick run's: the tcp_wmem point alone) and on Going further's (every group, Q19); the wrong ones (TCP
    pooled, the sign, the buffers' difference, the tso rows kept, unsorted, ...) are test_lab1_checks.py's."""
    questions = _master()
    for held_minrtt, below in ((120.0, []), (60.0, [("held", "minrtt")])):
        full = _paper_runs(held_minrtt)
        env = _answer(questions, "q18", {"paper_runs": full.query("group == 'schedulers'")})
        assert set(env["starved"].index.get_level_values("group")) == {"schedulers"}
        env = _answer(questions, "q19", {**env, "full_runs": full})
        assert env["below_tcp"](env["full_starved"]) == below
        for q in ("q18", "q19"):
            _public_check(questions, q, env)


def test_compact_copy_of_a_control_run_loads_without_packets(tmp_path):
    run = _detail_copy(tmp_path / "run", "detail-wmem-64K-tcp-fast",
                       {"config": "tcp-fast", "buffer": "64K", "buffer_bytes": 65536, "goodput_transfer_mbps": 90.0,
                        "control": "tcp-fast"}, [(1.0, 1.5)])
    pd.DataFrame({"time": [1000.5], "saddr": ["10.1.0.1"], "snd_cwnd": [40], "srtt_us": [300]}).to_csv(
        run / "tcp_probe.csv", index=False)
    parse_ss(tcp_slow_samples()).to_csv(run / "ss.csv", index=False)
    (run / "capture.pcap").write_bytes(b"")  # never copied
    from mptcplab.labs.lab1.detail import copy_run_tables

    copy_run_tables(run, tmp_path / "ref" / run.name)
    kept = {p.name for p in (tmp_path / "ref" / run.name).iterdir()}
    assert kept == {"summary.json", "manifest.json", "sndbuf_waits.csv", "tcp_probe.csv.gz", "ss.csv.gz"}
    d = la.Detail.load_run(tmp_path / "ref" / run.name)
    assert d.control == "tcp-fast" and d.packets.empty and list(d.probe["path"]) == ["fast"]
    assert d.blocked_share == pytest.approx(0.05) and d.counters == {}


def test_a_full_path_comes_from_the_runs_own_links():
    """A run with `--set` paths of 10 Mbit/s draws and reports 10 Mbit/s paths, not the lab's 100."""
    m = {"network": {"paths": [{"name": "fast", "link": "rate=10mbit,delay=5ms", "rtt_ms_configured": 10},
                               {"name": "slow", "link": "rate=10mbit,delay=40ms", "rtt_ms_configured": 80}]}}
    full, rate = la.full_path_mbps(m)
    assert rate == "10 Mbit/s" and full == pytest.approx(9.564, abs=1e-3)
    assert la.full_path_mbps(None) == (pytest.approx(95.64, abs=0.01), "100 Mbit/s")
    assert la.slow_path_bdp(m) == pytest.approx(full * 1e6 / 8 * 0.080)


# ---------------------------------------------------------------- the paper's point (issue 24)

def test_paper_point_runs_each_scheduler_beside_tcp_and_the_tso_control(quick):
    params = get_lab("lab1").load_params(quick=False)
    paper = l1.paper_points(params)
    keys = [p.key for p in paper]
    assert keys[:4] == ["paper-1M-mptcp-default-r1", "paper-1M-mptcp-minrtt-r1", "paper-1M-mptcp-minrtt+rp-r1",
                        "paper-1M-tcp-fast-r1"]
    assert sum(k.startswith("paper-1M-") and "detail" not in k for k in keys) == 4 * params["paper_point"]["repetitions"]
    assert "tsokernel-128K-tcp-slow-r1" in keys and "tso64-1M-mptcp-r3" in keys
    assert all(p.values["part"] == "paper_point" for p in paper)
    held = [p for p in paper if p.key.startswith(("paper-sndbuf-", "paper-detail-sndbuf-"))]
    assert {p.values["method"] for p in paper if p not in held} == {"wmem"}
    pp = params["paper_point"]
    assert len(held) == (len(pp["schedulers"]) + 1) * pp["sndbuf_repetitions"] + len(pp["sndbuf_detail"])
    assert all(p.values["method"] == "sndbuf" and p.values["buffer"] == pp["sndbuf"] for p in held)
    assert not any(p.key.startswith("paper-sndbuf-") for p in l1.paper_points(quick))  # --quick skips it
    only = get_lab("lab1").load_params(quick=False, overrides={"paper_point": {"only": True}})
    assert [p.key for p in l1.points(only, None)] == keys  # no sweep, no detailed run
    assert [p.key for p in l1.points(quick, None)][-3:] == ["paper-1M-mptcp-default-r1", "paper-1M-mptcp-minrtt+rp-r1",
                                                           "paper-1M-tcp-fast-r1"]


def test_the_scaled_paper_point_divides_rates_and_buffers_and_keeps_delays():
    """The second place (issue 24): a place that cannot carry 100 Mbit/s runs the paper's point with
    rates and buffers divided by one factor, delays kept; only as the paper's point alone."""
    lab = get_lab("lab1")
    over = {"paper_point": {"only": True, "scale": 20, "schedulers": ["default"], "detail": [], "tso_settings": [],
                            "sndbuf": "512K", "sndbuf_detail": []}}
    params = lab.load_params(quick=False, overrides=over)
    links = {p.name: str(p.link) for p in l1.topology(params).paths}
    assert links == {"fast": "rate=5mbit,delay=0ms,queue=auto", "slow": "rate=5mbit,delay=40ms,queue=auto"}
    paper = {p.key: p.values for p in l1.points(params, None)}
    assert paper["paper-52429-mptcp-default-r1"]["buffer_bytes"] == round((1 << 20) / 20)
    assert paper["paper-52429-tcp-fast-r5"]["scale"] == 20
    assert paper["paper-sndbuf-26214-mptcp-default-r1"]["method"] == "sndbuf"  # 512K / 20, doubled by the kernel
    unscaled = lab.load_params(quick=False, overrides={"paper_point": {"only": True}})
    assert [str(p.link) for p in l1.topology(unscaled).paths][0] == "rate=100mbit,delay=0ms,queue=auto"
    assert "scale" not in l1.paper_points(unscaled)[0].values
    with pytest.raises(UsageError, match="needs paper_point.only"):
        lab.load_params(quick=False, overrides={"paper_point": {"scale": 20}})


def test_configure_sets_the_scheduler_and_tso_and_sets_them_back(tmp_path, quick):
    net = FakeNet(tmp_path, "")
    net.sysctls["snd"].update({"net.mptcp.scheduler": "default", "net.mptcp.available_schedulers": "default minrtt",
                               "net.ipv4.tcp_min_tso_segs": "64"})
    net.sysctls["rcv"] = {"net.ipv4.tcp_min_tso_segs": "64"}
    paper = {p.key: p for p in l1.paper_points(get_lab("lab1").load_params(quick=False))}
    l1.configure(net, paper["paper-1M-mptcp-minrtt+rp-r1"], quick)
    assert net.sysctls["snd"]["net.mptcp.scheduler"] == "minrtt" and net.sysctls["snd"]["net.mptcp.minrtt_rp"] == "1"
    assert net.sysctls["snd"]["net.ipv4.tcp_wmem"] == "1048576 1048576 1048576"
    l1.configure(net, paper["paper-sndbuf-512K-mptcp-minrtt+rp-r1"], quick)  # held: SO_SNDBUF, tcp_wmem default
    assert net.sysctls["snd"]["net.ipv4.tcp_wmem"] == l1.DEFAULT_WMEM and net.sysctls["snd"]["net.mptcp.minrtt_rp"] == "1"
    l1.configure(net, paper["tsokernel-128K-mptcp-r1"], quick)
    assert net.sysctls["snd"]["net.mptcp.scheduler"] == "default"
    assert net.sysctls["snd"]["net.ipv4.tcp_min_tso_segs"] == net.sysctls["rcv"]["net.ipv4.tcp_min_tso_segs"] == "2"
    l1.configure(net, _point(quick, "wmem-64K-mptcp-r1"), quick)  # a sweep run: the kit's own again
    assert net.sysctls["snd"]["net.ipv4.tcp_min_tso_segs"] == net.sysctls["rcv"]["net.ipv4.tcp_min_tso_segs"] == "64"


def test_a_scheduler_the_kernel_lacks_is_recorded_as_skipped(tmp_path, quick):
    net = FakeNet(tmp_path, "")
    net.sysctls["snd"]["net.mptcp.available_schedulers"] = "default"
    point = next(p for p in l1.paper_points(quick) if p.values.get("scheduler") == "minrtt+rp")
    line = engine.run_point(l1.LAB, net, Sweep(tmp_path), point, quick)
    s = json.loads((tmp_path / point.key / "summary.json").read_text())
    assert "skipped" in line and "mptcp-minrtt-scheduler.patch" in s["skipped"] and "goodput_transfer_mbps" not in s
    assert "net.mptcp.minrtt_rp" not in net.sysctls["snd"]
