"""Physics bounds, the verdicts a place prints, and `mptcplab check` on real results."""

import json
import math
import subprocess
from pathlib import Path

from mptcplab.cli import main
from mptcplab.judge import physics, verify
from mptcplab.commands.check import check_results
from mptcplab.measure.observe import parse_ss, ss_summary

FIXTURES = Path(__file__).parent / "fixtures" / "physics"

# One sample from the host kernel (6.18, tbf 10 Mbit/s, tcp_wmem 32K), in `ss -tinmHM` form.
SS = """\
@ 1394.99
ESTAB 0      32608  10.1.0.1:56832 10.1.0.2:5201
\t skmem:(r0,rb131072,t0,tb32768,f2592,w34272,o0,bl0,d0) reno wscale:10,10 rto:244 rtt:41.3/7.981 mss:1448 \
pmtu:1500 rcvmss:536 advmss:1448 cwnd:108 bytes_sent:262144 bytes_acked:229537 unacked:23 minrtt:0.035 snd_wnd:117
"""


def test_send_buffer_doubling_and_bounds():
    assert physics.sk_sndbuf_for(32768) == 65536  # SO_SNDBUF is doubled
    assert physics.sk_sndbuf_for(1 << 20, wmem_max=212992) == 2 * 212992  # ...after the wmem_max cap
    assert physics.sk_sndbuf_for(tcp_wmem_max=65536) == 65536  # tcp_wmem is taken as is
    assert physics.unacked_bound_bytes(65536) == 131072
    # Lab 1's slow path: tcp_wmem 32K over 80 ms may carry at most (32K + 64K) / 80 ms = 9.8 Mbit/s.
    assert math.isclose(physics.window_bound_bps(32768, 0.080) / 1e6, 9.8304)
    assert physics.window_bound_bps(32768, 0) == math.inf
    assert math.isclose(physics.link_ceiling_bps(100e6) / 1e6, 95.64, abs_tol=0.01)


def test_verdicts_name_check_value_and_bound_in_one_line():
    v = physics.judge_window("slow", 41.05e6, 1_434_616, 65536, 0.080)
    assert [x.ok for x in v] == [False, False]
    line = physics.refusal(v)
    assert "\n" not in line and "unacked bytes on path slow" in line and "1,434,616" in line
    assert "131,072" in line and "window-limited goodput" in line
    ok = physics.judge_window("slow", 9.0e6, 95_000, 65536, 0.080)
    assert physics.refusal(ok) is None
    assert not physics.judge_rtt("slow", 83.0, 80.0).ok and physics.judge_rtt("slow", 80.9, 80.0).ok
    assert not physics.judge_link("fast", 80e6, 100e6, 0.95).ok and physics.judge_link("fast", 95e6, 100e6, 0.95).ok


def test_ss_summary_records_srtt_minrtt_inflight_and_buffer():
    s = ss_summary(parse_ss(SS))
    assert s["srtt_ms_median"] == 41.3 and s["min_rtt_ms"] == 0.035
    assert s["inflight_bytes_max"] == 23 * 1448 and s["sk_sndbuf"] == 32768 and s["wmem_queued_max"] == 34272


def test_ss_summary_keeps_the_mptcp_socket_apart_from_its_first_subflow():
    # ss lists the MPTCP socket with its first subflow's addresses: one record each, not one mixed
    text = ("@ 100.0\n"
            "tcp   ESTAB 0 0 10.1.0.1:40000 10.1.0.2:5201\n"
            "\t skmem:(r0,rb131072,t0,tb65536,f0,w30000,o0,bl0,d0) cubic rtt:0.3/0.1 mss:1448 unacked:20 "
            "minrtt:0.05 tcp-ulp-mptcp\n"
            "mptcp ESTAB 0 0 10.1.0.1:40000 10.1.0.2:5201\n"
            "\t skmem:(r0,rb131072,t0,tb200704,f0,w180000,o0,bl0,d0) subflows:1\n")
    conns = ss_summary(parse_ss(text))["connections"]
    assert conns["10.1.0.1:40000->10.1.0.2:5201"] == {
        "samples": 1, "srtt_ms_median": 0.3, "min_rtt_ms": 0.05, "sk_sndbuf": 65536, "wmem_queued_max": 30000,
        "inflight_bytes_median": 20 * 1448, "inflight_bytes_max": 20 * 1448}
    assert conns["10.1.0.1:40000->10.1.0.2:5201 (mptcp socket)"] == {
        "samples": 1, "sk_sndbuf": 200704, "wmem_queued_max": 180000}


def test_checker_fails_on_the_uml_lab1_sweep():
    bad = [v for v in check_results(FIXTURES / "lab1-bad") if not v.ok]
    # every single-path run over the 80 ms path is above its window bound; the 0 ms path and MPTCP are not judged so
    assert sorted(v.check.split(":")[0] for v in bad) == sorted(
        f"lab1-bad/{m}-{b}-tcp-slow-r1" for m in ("sndbuf", "wmem") for b in ("32K", "64K"))
    assert main(["check", str(FIXTURES / "lab1-bad")]) == 1


def test_checker_passes_on_a_real_correct_run():
    # The host's 6.18 behind a 10 Mbit/s tbf with no delay: network-limited (at most 99,912 B in
    # flight, within 131,072 anyway), so its bytes in flight are not judged (physics.window_limited)
    assert check_results(FIXTURES / "host-good") == []
    assert main(["check", str(FIXTURES / "host-good")]) == 0


def test_doctor_shows_each_places_recorded_check_with_the_window_verdicts(tmp_path, monkeypatch):
    """One store of a place's verdicts (places.records): doctor reads the window-limited transfer's
    verdicts there, as `--where auto` reads the checks."""
    from mptcplab import doctor
    from mptcplab.places import records
    from mptcplab.places.choice import CheckResult

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert "none recorded" in doctor.recorded_checks()[0]
    bad = physics.judge_window("slow", 41e6, 1_434_616, 65536, 0.08)
    records.save(CheckResult(place="uml", lab="example", passed=False, wall_s=30.0, how=physics.refusal(bad) or "",
                             measured={v.check: v.measured for v in bad}, bound={v.check: v.bound for v in bad}))
    lines = doctor.recorded_checks()
    assert lines[1].startswith("  uml, example: FAILED (physics check failed in ")
    assert any(line.strip().startswith("unacked bytes on path slow: 1.43462e+06 against") for line in lines[2:])


def window_check(tmp_path, monkeypatch, skmem_tb: int | None):
    """verify.check_window on the real sampler playing the samples of a UML run (skmem tb as given),
    with the sender's own getsockopt(SO_SNDBUF) reading 65536: (verdicts, the recorded window)."""
    import pandas as pd

    from mptcplab.measure import observe, traffic
    from mptcplab.net.topology import NetPath, Topology
    from mptcplab.run.results import Sweep

    t0 = 1000.0
    rows = [(t0 + 0.24, 103, 164504), (t0 + 0.38, 39, 57432)] + [(t0 + 1.0 + 0.1 * k, 50, 90000) for k in range(30)]
    table = pd.DataFrame([{"time": t, "state": "ESTAB", "local": "10.1.0.1:1", "peer": "10.1.0.2:5299",
                           "unacked": u, "mss": 1448, "skmem_w": w, "skmem_tb": skmem_tb, "minrtt_ms": 60.0,
                           "rtt_ms": 61.0} for t, u, w in rows])

    per_s = 50 * 1448 / 0.06  # 50 segments a round trip
    samples = [[t0 + 0.1 * k, per_s * 0.1 * k, per_s * 0.1 * k] for k in range(41)]
    result = traffic.BulkResult("mptcplab.measure.bulk", "tcp", 4.0, t0, t0 + 4.0, [{"bytes": per_s * 4, "sndbuf": 65536}],
                                pd.DataFrame(), samples=[samples])
    monkeypatch.setattr(observe, "parse_ss", lambda text: table)  # the real sampler, playing these samples
    monkeypatch.setattr(traffic, "bulk", lambda *a, **kw: result)
    topo = Topology("w", hosts=("snd", "rcv"), paths=[NetPath("p1", "snd", "rcv", "rate=20mbit,delay=30ms")])

    def spawn(net, host, role, *args, **kw):  # the sampler forked in the sender: its file, its JSON
        Path(args[args.index("--out") + 1]).touch()
        return subprocess.Popen(["echo", '{"role": "ss", "cpu_s": 0.0}'], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
    monkeypatch.setattr(traffic, "spawn", spawn)

    class Net:
        def stop(self, proc):
            proc.wait(timeout=10)

    net = Net()
    net.topo = topo
    with Sweep(tmp_path).run("r", {}) as rd:
        return verify.check_window(net, rd, "snd", "rcv"), rd.summary["physics"]["window"]


def test_window_check_judges_in_flight_bytes_after_slow_start(tmp_path, monkeypatch):
    """The UML sample that failed CI: 149,144 B in flight 0.24 s into slow start (cwnd, not the
    buffer, limited the sender), then within the bound. Judged after slow start; the peak is kept."""
    verdicts, window = window_check(tmp_path, monkeypatch, skmem_tb=65536)
    kern = window["kernel"]
    assert [v.ok for v in verdicts] == [True, True] and window["sk_sndbuf"] == 65536
    assert kern["inflight_bytes_max"] == 50 * 1448 and kern["inflight_bytes_max_whole"] == 103 * 1448


def test_the_window_check_takes_the_send_buffer_from_the_kernel_only(tmp_path, monkeypatch):
    """No `ss -m` send buffer in the samples: the check refuses, saying why, rather than judging
    with another source (the sender's getsockopt, or SO_SNDBUF doubled by hand)."""
    verdicts, window = window_check(tmp_path, monkeypatch, skmem_tb=None)
    assert [v.ok for v in verdicts] == [False] and "sk_sndbuf" not in window
    assert "none in 30 `ss -m` samples (window-ss.txt)" in verdicts[0].line()  # the steady ones


def test_bytes_in_flight_are_bounded_only_where_the_buffer_limits_the_transfer(tmp_path):
    # Lab 1's slow path with SO_SNDBUF 64K: (128K + 64K) / 80 ms = 19.7 Mbit/s < the 95.6 the link carries
    assert physics.window_limited(131072, 0.080, 100e6)
    # its fast path (0 ms) and Lab 2's 5 Mbit/s paths: the network, not the buffer, limits the sender
    assert not physics.window_limited(131072, 0.0, 100e6) and not physics.window_limited(65536, 0.080, 5e6)
    assert physics.window_limited(65536, 0.060, None)  # no rate limit: judged
    # The UML sample (SO_SNDBUF 64K, fast path, cwnd 142 -> 71 at a loss, 141 segments out) is not
    # judged; the same overrun on the slow path is.
    run = tmp_path / "sndbuf-64K-tcp-r1"
    run.mkdir()
    paths = [{"name": n, "link": f"rate=100mbit,delay={d}ms", "a_addr": a, "rtt_ms_configured": 2 * d}
             for n, d, a in (("fast", 0, "10.1.0.1"), ("slow", 40, "10.2.0.1"))]
    (run / "manifest.json").write_text(json.dumps({"network": {"paths": paths}}))
    conn = {"sk_sndbuf": 131072, "inflight_bytes_max": 204168}
    (run / "summary.json").write_text(json.dumps({"proto": "tcp", "kernel_tcp": {"ss": {"connections": {
        "10.1.0.1:44352->10.1.0.2:5201": conn, "10.2.0.1:40010->10.2.0.2:5201": conn}}}}))
    verdicts = check_results(tmp_path)
    assert [(v.check.split("(ss, ")[1].split(":")[0], v.ok) for v in verdicts] == [("10.2.0.1", False)]


def test_the_link_is_judged_not_above_its_rate_on_the_emulators_own_count():
    assert physics.judge_link("p4", 4.7e6, 5e6, 0.9, wire_bps=4.95e6).ok
    assert not physics.judge_link("p4", 4.7e6, 5e6, 0.9, wire_bps=5.6e6).ok  # the emulator sent too much
    assert not physics.judge_link("p4", 3.0e6, 5e6, 0.9, wire_bps=3.1e6).ok  # the place cannot fill it
    assert not physics.judge_link("p4", 5.1e6, 5e6, 0.9).ok  # no emulator count: the goodput decides


def test_a_wire_count_below_the_goodput_is_not_trusted():
    # Lab 2's setup check in the VM, path p4 (5 Mbit/s): the sampler's bracketed window read 2.84 Mbit/s
    # sent while the receiver counted 4.85 Mbit/s = 101.4% of the 4.78 ceiling. 2.84 Mbit/s of frames
    # carry at most 2.72 of payload: the count is another window's, so the goodput decides.
    v = physics.judge_link("p4", 4.85e6, 5e6, 0.9, wire_bps=2.84e6)
    assert not v.ok and "judged on the goodput" in v.line()
    assert physics.judge_link("p4", 4.80e6, 5e6, 0.9, wire_bps=2.84e6).ok  # within: the same reading, no refusal
    # frames of 5.0 Mbit/s carry 4.78 Mbit/s of payload: not the 5.1 received either
    assert not physics.judge_link("p4", 5.1e6, 5e6, 0.9, wire_bps=5.0e6).ok


def test_mptcplab_check_judges_a_setup_check_as_the_run_did(tmp_path):
    from mptcplab.judge.check import check_setup_checks

    def row(goodput, wire):
        return {"link": "rate=5mbit", "tcp_goodput_steady_mbps": goodput, "emulator_wire_mbps_min": wire}
    rows = {"p4": row(4.85, 2.84), "p3": row(4.80, 2.84), "p2": row(4.70, 5.6), "p1": row(4.70, 4.95)}
    (tmp_path / "lab2-manifest.json").write_text(json.dumps({"setup_checks": {"paths": rows}}))
    got = {v.check.split("path ")[1].split(":")[0]: v.ok for v in check_setup_checks(tmp_path / "lab2-manifest.json")}
    run = {name: physics.judge_link(name, r["tcp_goodput_steady_mbps"] * 1e6, 5e6, 0.9,
                                    r["emulator_wire_mbps_min"] * 1e6).ok
           for name, r in rows.items()}
    assert got == run == {"p4": False, "p3": True, "p2": False, "p1": True}


def test_mptcp_goodput_is_held_to_what_all_its_paths_could_carry():
    five = {p: 5e6 for p in ("p1", "p2", "p3", "p4")}
    assert math.isclose(physics.paths_ceiling_bps(five, 8.0), physics.link_ceiling_bps(20e6))
    # Lab 2's mobility over 8 s: p1 5 -> 1 Mbit/s at 2.4 s and back at 5.6 s, p4 5 -> 8 at 4 s:
    # 19.9 Mbit/s of link on average
    nominal = [{"path": "p1", "rate_bps": 1e6, "begun_s": 2.4, "done_s": 2.4},
               {"path": "p4", "rate_bps": 8e6, "begun_s": 4.0, "done_s": 4.0},
               {"path": "p1", "rate_bps": 5e6, "begun_s": 5.6, "done_s": 5.6}]
    assert math.isclose(physics.paths_ceiling_bps(five, 8.0, nominal), physics.link_ceiling_bps(19.9e6))
    # a change that took 0.8 s to apply: a cut counts from when it was done, a rise from when it began
    slow = [{**c, "done_s": c["begun_s"] + 0.8} for c in nominal]
    assert math.isclose(physics.paths_ceiling_bps(five, 8.0, slow), physics.link_ceiling_bps(20.3e6))
    assert physics.paths_ceiling_bps({"p1": 5e6, "p2": None}, 8.0) == math.inf


def test_no_connection_is_faster_than_the_lowest_rtt_its_path_was_configured_with(tmp_path):
    # Lab 2's mobility run: p4 configured 80 ms, cut to 40 ms (20 ms each way) during the run
    run = tmp_path / "mobility-lia-r1"
    run.mkdir()
    paths = [{"name": n, "link": "rate=5mbit", "a_addr": a, "rtt_ms_configured": r}
             for n, a, r in (("p1", "10.1.0.1", 20.0), ("p4", "10.4.0.1", 80.0), ("p0", "10.9.0.1", 0.0))]
    (run / "manifest.json").write_text(json.dumps({"network": {"paths": paths}}))
    conns = {"10.1.0.1:1->10.1.0.2:5201": {"min_rtt_ms": 19.2},  # 0.8 ms faster than configured
             "10.4.0.1:2->10.1.0.2:5201": {"min_rtt_ms": 40.1},  # the mobility change's 40 ms
             "10.9.0.1:3->10.1.0.2:5201": {"min_rtt_ms": 0.05}}  # no delay: nothing to judge
    (run / "summary.json").write_text(json.dumps({"proto": "mptcp", "kernel_tcp": {"ss": {"connections": conns}},
                                                  "mobility_applied": [{"path": "p4", "delay": "20ms"}]}))
    got = {v.check.split("(ss, ")[1].split(":")[0]: (v.ok, v.bound) for v in check_results(tmp_path)}
    assert got == {"10.1.0.1": (False, 19.5), "10.4.0.1": (True, 39.2)}


def test_checker_catches_mobility_timed_from_before_the_transfer_started():
    # A Lab 2 quick run in the VM (TCG) whose path changes were timed from before the sender had
    # started (seconds of interpreter start-up): 21.3 Mbit/s where the schedule allows 19.2.
    bad = [v for v in check_results(FIXTURES / "lab2-vm-misaligned") if not v.ok]
    assert [v.check for v in bad] == ["mobility-uncoupled-r1: MPTCP goodput vs its paths' ceilings"]
    assert bad[0].measured == 21.298 and 19.1 < bad[0].bound < 19.3


def test_a_run_whose_kernel_queued_past_its_buffer_stays_outside_with_the_measured_cause(tmp_path, capsys):
    """Lab 1's tcp_min_tso_segs control: the kernel's own 2 lets single-path TCP queue 12 x its
    buffer (the reference's tsokernel-128K-tcp-slow-r2: ss -m w 1,683,640 against tb 131,072). The
    check keeps it outside its window bound and names what the run recorded; a run outside its
    bound whose queue stayed within the buffer gets no cause (nothing it recorded explains it)."""
    manifest = {"network": {"paths": [{"name": "slow", "link": "rate=100mbit,delay=40ms", "rtt_ms_configured": 80}]}}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    head = "run,method,buffer_bytes,config,goodput_transfer_mbps,sndbuf_effective,inflight_max_slow,wmem_queued_max,min_tso_segs\n"
    (tmp_path / "paper-point.csv").write_text(
        head + "tsokernel-128K-tcp-slow-r2,wmem,131072,tcp-slow,44.66,131072,1481304,1683640,2\n"
        "tso64-128K-tcp-slow-r1,wmem,131072,tcp-slow,12.2,131072,131768,133952,64\n"
        "broken-128K-tcp-slow-r1,wmem,131072,tcp-slow,30.0,131072,,133952,64\n")
    from mptcplab.labs.lab1.bounds import check_sweep
    verdicts = check_sweep(tmp_path / "paper-point.csv")
    bad = {(v.check.split(" ")[0].split("/")[-1], v.check.rsplit(": ", 1)[-1]): v for v in verdicts if not v.ok}
    assert set(bad) == {("tsokernel-128K-tcp-slow-r2", "single-path TCP vs window bound"),
                        ("tsokernel-128K-tcp-slow-r2", "bytes in flight"),
                        ("broken-128K-tcp-slow-r1", "single-path TCP vs window bound")}
    cause = bad[("tsokernel-128K-tcp-slow-r2", "bytes in flight")].cause
    assert "1,683,640 B (12.8 x sk_sndbuf 131,072 B" in cause and "tcp_min_tso_segs 2" in cause
    assert "cause measured: " in bad[("tsokernel-128K-tcp-slow-r2", "bytes in flight")].line()
    assert bad[("broken-128K-tcp-slow-r1", "single-path TCP vs window bound")].cause == ""
    # the kit's own 64 with an overrun is named as an overrun, without blaming the setting
    assert "tcp_min_tso_segs" not in physics.queue_overrun(131072, 400_000, "64")
    assert physics.queue_overrun(131072, 131072 + 65536, "2") == ""  # sendmsg's one-skb overshoot is allowed
    assert main(["check", str(tmp_path)]) == 1
    assert "3 outside physics in" in capsys.readouterr().out.splitlines()[-1]
