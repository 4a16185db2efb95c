"""Lab 3 parameters, sweep points and the analysis from run directories (no kernel needed)."""

import json

import numpy as np
import pandas as pd
import pytest

from mptcplab.core.errors import UsageError
from mptcplab.labs.lab3 import analysis as la
from mptcplab.labs.lab3 import experiment as l3
from mptcplab.labs.lab3 import measure as lm
from mptcplab.labs.lab3 import models
from mptcplab.run.lab import get_lab


def test_parameters_and_points():
    lab = get_lab("lab3")
    assert lab.needs == ("netem",)
    full, quick = lab.load_params(False), lab.load_params(True)
    assert full["flows"] == list(range(1, 11)) and full["cc"] == "reno"
    assert full["steady_s"] >= 60 and full["warmup_s"] > 0 and quick["steady_s"] < full["steady_s"]
    assert full["paths"]["p1"]["delay"] == "30ms"
    pts = [p.values for p in l3.points(full)]
    assert len(pts) == 10 * (len(full["random"]["loss"]) + len(full["droptail"]["capacity"]))
    assert len({p["key"] for p in pts}) == len(pts)
    rnd = [p for p in pts if p["scenario"] == "random"]
    assert rnd[0]["link"] == "delay=30ms,loss=0.1%" and rnd[0]["key"] == "random-0.1pct-n01-r1"
    dt = [p for p in pts if p["scenario"] == "droptail"]
    assert dt[0]["link"] == "rate=1mbit,delay=30ms,queue=5" and dt[-1]["key"] == "droptail-32mbit-n10-r1"
    losses = [float(p["loss_cfg"].rstrip("%")) for p in rnd]
    assert min(losses) == 0.1 and max(losses) == 5


def test_droptail_queue_is_one_bdp():
    assert l3.bdp_packets(8e6, 0.06) == 40  # 8 Mbit/s x 60 ms = 60 kB = 39.6 frames of 1514 B
    assert l3.bdp_packets(1e6, 0.06) == 5


def test_topology_keeps_loss_off_the_ack_path():
    topo = l3.topology(get_lab("lab3").load_params(True))
    p = topo.paths[0]
    assert p.reverse.loss == 0 and p.reverse.delay_s == 0.03 and p.rtt_s == pytest.approx(0.06)
    assert topo.sysctls["snd"]["net.ipv4.tcp_congestion_control"] == "reno"


def test_bad_flow_counts_are_rejected():
    params = get_lab("lab3").load_params(True)
    with pytest.raises(UsageError, match="flow counts"):
        l3.points({**params, "flows": [0, 2]})


# ---------------------------------------------------------------- a fake sweep through the analysis

def _fake_run(root, key, scenario, n, loss, seed):
    """Segments every ms per flow; each lost with probability `loss`, resent one RTT later."""
    rng = np.random.default_rng(seed)
    rows, rtt = [], 0.06
    for f in range(n):
        for i in range(4000):
            t = 100 + i * 0.001 + f * 1e-5
            rows.append((t, 40000 + f, "data", i * 1448, 1448, np.nan, np.nan))
            if rng.random() < loss:
                rows.append((t + rtt, 40000 + f, "data", i * 1448, 1448, np.nan, np.nan))
            if i % 2:  # tshark's ack_rtt counts the delayed ACK's wait
                rows.append((t + rtt, 40000 + f, "ack", np.nan, 0, (i + 1) * 1448, rtt + 0.006))
    pk = pd.DataFrame(rows, columns=["time", "flow", "kind", "seq", "len", "ack", "ack_rtt"]).sort_values("time")
    window = (100.0, 104.0)
    ss = pd.DataFrame([{"time": 100.0 + k * 0.2, "local": f"10.1.0.1:{40000 + f}", "rtt_ms": 61.0 + f,
                        "minrtt_ms": 60.0, "rto_ms": 264.0} for f in range(n) for k in range(20)])
    per_flow, agg = lm.measure(pk, window, lm.rto_per_flow(ss, window), lm.kernel_rtt_per_flow(ss, window))
    d = root / key
    d.mkdir()
    per_flow.to_csv(d / "flows.csv", index=False)
    lost = lm.lost_packets(pk[pk.kind == "data"], window)
    lost[["flow", "t"]].to_csv(d / "losses.csv", index=False)
    summary = {"scenario": scenario, "n": n, "rep": 1, "loss_cfg": f"{loss * 100:g}%" if scenario == "random" else None,
               "capacity_mbps": 4.0 if scenario == "droptail" else None, **agg, "model_b": 1,
               "goodput_window_mbps": 1.0,
               "p_r_emulator": loss, "capture_dropped": 0}
    (d / "summary.json").write_text(json.dumps(summary))
    (d / "manifest.json").write_text(json.dumps({"parameters": {"cc": "reno", "delay": "30ms", "steady_s": 4,
                                                                "warmup_s": 1, "model_b": 1},
                                                 "platform": {"kernel_release": "6.12", "where": "uml"}}))
    return agg


@pytest.fixture()
def sweep(tmp_path):
    _fake_run(tmp_path, "random-1pct-n01-r1", "random", 1, 0.01, 1)
    _fake_run(tmp_path, "random-1pct-n04-r1", "random", 4, 0.01, 2)
    _fake_run(tmp_path, "random-5pct-n04-r1", "random", 4, 0.05, 3)
    _fake_run(tmp_path, "droptail-4mbit-n04-r1", "droptail", 4, 0.02, 4)
    (tmp_path / "random-2pct-n02-r1.partial").mkdir()  # an unfinished run is ignored
    return tmp_path


def test_compact_predicts_every_model(sweep):
    t = la.compact(sweep)
    runs = t["runs"].set_index("run")
    assert len(runs) == 4 and set(t["losses"].run) == set(runs.index)
    r = runs.loc["random-1pct-n04-r1"]
    assert r.model1 == pytest.approx(models.parallel_per_flow(4, r.p, r.rtt, r["T"], 1))
    assert r.model2 == pytest.approx(models.parallel_cumulative(4, r.p_e, r.p_r, r.rtt, r["T"], 1))
    assert r.n_pftk_pe == pytest.approx(4 * models.pftk(r.p_e, r.rtt, r["T"], 1))
    assert r.err_model1 == pytest.approx(r.model1 / r.pps - 1)
    assert r.p_r >= r.p >= r.p_e > 0
    # The compact tables are enough to recount the loss events.
    L = t["losses"][t["losses"].run == "random-1pct-n04-r1"]
    assert len(lm.group_loss_events(L.t.to_numpy(), r.rtt)) == r.loss_events_cumulative
    assert len(L) == r.retransmissions


def test_error_summary_bands_report_and_figures(sweep):
    la.compact(sweep)
    runs = la.load(sweep)["runs"]
    s = la.error_summary(runs).set_index("runs")
    assert s.loc["all runs", "count"] == 4 and s.loc["droptail, p_r <= 10%", "count"] == 1
    assert s.loc["random, loss > 2%", "count"] == 1
    band = la.within_band(runs)
    dt = runs[runs.scenario == "droptail"]
    assert set(band.run) == {"random-1pct-n01-r1", "random-1pct-n04-r1", *dt[dt.p_r <= 0.02].run}
    assert (band.in_band_model1 == (band.err_model1.abs() <= 0.25)).all()
    md = la.report(sweep)
    assert md.startswith("# Lab 3 — paper vs this run") and "| the paper | this run |" in md
    assert "Median |relative error| per model" in md
    figs = la.write_figures(sweep, runs)
    assert {f.name for f in figs} >= {"median-error.html", "model-vs-measured.html", "throughput-random.html"}
    out = sweep / "ref"
    copied = la.export_reference(sweep, out)
    assert sorted(p.name for p in copied) == sorted(la.COMPACT) and not any(out.glob("*.pcap"))


def test_runs_carry_every_rtt_and_the_models_get_the_kernel_srtt(sweep):
    runs = la.compact(sweep)["runs"].set_index("run")
    r = runs.loc["random-1pct-n04-r1"]
    assert r.rtt == pytest.approx(r.srtt) and r.rtt_source == "ss srtt"
    assert r.srtt == pytest.approx(0.0625) and r.min_rtt == pytest.approx(0.060) and r.ack_rtt == pytest.approx(0.066)
    assert r.model1 == pytest.approx(models.parallel_per_flow(4, r.p, r.srtt, r["T"], 1))
    flows = la.load(sweep)["flows"]
    assert {"srtt", "min_rtt", "ack_rtt", "rtt_source"} <= set(flows.columns)


def test_rtt_sensitivity_feeds_each_rtt_in_turn(sweep):
    runs = la.compact(sweep)["runs"]
    s = la.rtt_sensitivity(runs)
    one = s[s.runs == "all runs"].set_index("rtt")
    assert list(one.index) == list(la.RTTS.values()) and (one["count"] == 4).all()
    assert one.loc["kernel min RTT", "rtt_ms"] == pytest.approx(60.0)
    # A shorter RTT predicts more throughput: min RTT > srtt > ack_rtt, for both models.
    for col in ("model1", "model2"):
        assert one.loc["kernel min RTT", col] > one.loc["kernel srtt", col] > one.loc["tshark ack_rtt", col]
    srtt = la.predict(runs)
    assert one.loc["kernel srtt", "model1"] == pytest.approx(srtt.err_model1.median())
    old = runs.drop(columns=["srtt", "min_rtt", "ack_rtt"])  # results recorded before the kernel's RTT was
    assert la.rtt_sensitivity(old).empty and "median RTT" not in la.report(sweep).split("ack_rtt")[0]


def test_padhye_vs_model1_is_counted_per_group_and_judged_with_holm():
    import numpy as np

    rng = np.random.default_rng(5)
    n = 12
    runs = pd.DataFrame({"run": [f"r{i}" for i in range(3 * n)], "scenario": ["random"] * (2 * n) + ["droptail"] * n,
                         "queued": False, "loss": [0.01] * n + [0.05] * n + [0.03] * n,
                         "p_r": [0.01] * n + [0.05] * n + [0.03] * n, "model1": 1.0})
    e1 = np.r_[rng.normal(0.05, 0.01, n), rng.normal(-0.20, 0.02, n), rng.normal(0.10, 0.05, n)]
    # low loss: indistinguishable; high loss: Padhye clearly closer; droptail: only 2 of 12 closer, but noisy
    e2 = np.r_[e1[:n] + rng.normal(0, 0.02, n), rng.normal(-0.05, 0.02, n), e1[2 * n:] + rng.normal(0.004, 0.01, n)]
    runs["err_model1"], runs["err_n_pftk_p"] = e1, e2
    t = la.padhye_vs_model1(runs).set_index("runs")
    assert t.loc["random, loss > 2%", ["count", "padhye_closer"]].tolist() == [n, n]
    assert t.loc["random, loss > 2%", "verdict"] == "n × Padhye closer"
    assert t.loc["random, loss <= 2%", "verdict"] == "not resolved"
    assert (t.level > 0.95).any() and ((t.verdict == "not resolved") == (t["diff"].abs() <= t.half)).all()
    said = la.padhye_sentence(la.padhye_vs_model1(runs))
    assert "came closer than model 1 in “random, loss > 2%”" in said and "not resolved in “random, loss <= 2%”" in said


def test_timeouts_model1_assumes_come_from_its_own_terms(sweep):
    runs = la.compact(sweep)["runs"]
    to = la.timeouts_vs_model1(runs).set_index("run")
    r = runs.set_index("run").loc["random-5pct-n04-r1"]
    terms = models.per_flow_terms(4, r.p, r.rtt, r["T"], 1)
    assert to.loc["random-5pct-n04-r1", "model1_timeouts"] == pytest.approx(float(terms["q1"]) * r.loss_events_per_flow)
    assert to.loc["random-5pct-n04-r1", "in_timeout"] == pytest.approx(float(terms["q"]) / 4)
    assert to.loc["random-5pct-n04-r1", "timeouts"] == 0  # the fake flows never fall silent
    text = la.report(sweep)
    assert "**Above 2 % random loss** (1 runs)" in text
    assert f"{to.loc['random-5pct-n04-r1', 'model1_timeouts']:.0f} timeouts per run" in text
    assert "the runs had 0–0 timeouts each in 4 s" in text


def test_report_makes_no_claim_about_the_papers_simulated_tcp(sweep):
    setup = la.report(sweep).split("\n\n")[1]  # the paragraph on the paper's setup and this run's
    assert "SACK" not in setup.split("real uploads")[0] and "does not say which TCP variant" in setup


def test_runs_the_place_limited_are_not_graded(sweep):
    runs = la.compact(sweep)["runs"]
    assert runs.base_rtt.eq(0.06).all() and not runs.queued.any()
    runs.loc[runs.run == "random-1pct-n04-r1", "rtt"] = 0.2  # a queue built up on the path
    dt = runs[runs.scenario == "droptail"].iloc[0]  # ... or could not fill the DropTail link
    runs.loc[runs.run == dt.run, "emulator_wire_mbps"] = 0.8 * dt.capacity_mbps
    runs = la.predict(runs)
    assert set(runs[runs.queued].run) == {"random-1pct-n04-r1", dt.run}
    assert not {"random-1pct-n04-r1", dt.run} & set(la.within_band(runs).run)
    assert la.error_summary(runs).set_index("runs").loc[la.QUEUED, "count"] == 2


def test_predict_leaves_lossless_runs_without_a_model():
    runs = pd.DataFrame([{"run": "x", "scenario": "droptail", "n": 1, "loss_cfg": None, "base_rtt": 0.06, "p": 0.0,
                          "p_e": 0.0, "p_r": 0.0, "rtt": 0.06,
                          "T": 0.26, "model_b": 1, "pps": 100.0}])
    out = la.predict(runs)
    assert out.model1.isna().all() and out.err_model2.isna().all()


def test_load_refuses_an_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no lab3 results"):
        la.load(tmp_path)


def test_reference_command_exports_only_a_completed_run(sweep, tmp_path):
    from mptcplab.cli import main

    dest = tmp_path / "reference"
    assert main(["notebooks", "reference", "lab3", str(sweep), "--dest", str(dest)]) == 2  # no lab-summary.json
    assert not dest.exists()
    (sweep / "lab-summary.json").write_text("{}")
    assert main(["notebooks", "reference", "lab3", str(sweep), "--dest", str(dest)]) == 0
    assert sorted(p.name for p in dest.iterdir()) == sorted([*la.COMPACT, "claims.json"])  # the claims judged on it


# ---------------------------------------------------------------- one run's bookkeeping, with fake sources

class _Rd:
    def __init__(self, path):
        self.path, self.summary, self.manifest = path, {}, {"observation": {"capture": {"dropped by kernel": 0}}}

    def file(self, name):
        return self.path / name


class _Source:
    """Stands in for an observation source: a context manager that leaves its files behind."""

    def __init__(self, rd, name, **attrs):
        self.path = rd.file(name)
        self.path.write_text("")
        self.__dict__.update(attrs)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_transfer_records_window_goodput_emulator_loss_and_kernel_rtts(tmp_path, monkeypatch):
    """transfer() with its sources faked: 2 flows, a 10 s window after 2 s of warm-up."""
    from mptcplab.measure.traffic import bulk_result

    t0, warmup, steady = 1000.0, 2.0, 10.0
    window = (t0 + warmup, t0 + warmup + steady)
    rd = _Rd(tmp_path)
    ss = pd.DataFrame([{"time": window[0] + k * 0.2, "state": "ESTAB", "local": f"10.1.0.1:{40000 + f}",
                        "peer": "10.1.0.2:5201", "rtt_ms": 62.0, "minrtt_ms": 60.0, "rto_ms": 264.0}
                       for f in range(2) for k in range(50)])
    qdisc = pd.DataFrame({"time": [t0, window[0] + 0.1, window[1] - 0.1, t0 + 13], "kind": "netem",
                          "packets": [0, 200, 1800, 2000], "drops": [0, 80, 96, 96], "qlen": [0, 40, 60, 0]})
    qdisc["bytes"] = qdisc.packets * 1514

    def fake_ss(net, host, rd, port, interval):
        src = _Source(rd, "ss.txt")
        ss.to_csv(rd.file("ss.csv"), index=False)
        return src

    def fake_bulk(*a, **kw):  # two flows, 0.88 Mbit/s each through the window; flow 1 drained early
        samples = lambda end: [[k / 10, 11000 * (k - int(t0 * 10))]  # noqa: E731
                               for k in range(int(t0 * 10), int(end * 10) + 1)]
        srv = {"flows": [{"flow": 0, "peer": "10.1.0.1:40000", "bytes": 11000 * 150, "first": t0, "last": t0 + 15,
                          "samples": samples(t0 + 15)},
                         {"flow": 1, "peer": "10.1.0.1:40001", "bytes": 11000 * 130, "first": t0, "last": t0 + 13,
                          "samples": samples(t0 + 13)}]}
        client = {"flows": [{"local": f"10.1.0.1:{40000 + i}", "cc": "reno"} for i in (0, 1)]}
        return bulk_result(client, srv, "10.1.0.2", 5201, "tcp", 15.0, 0.1)

    rows = []
    for f in (40000, 40001):
        for i in range(12000):
            t = t0 + i * 0.001
            rows.append((t, f, "data", i * 1448.0, 1448, np.nan, np.nan))
            if i % 2:
                rows.append((t + 0.06, f, "ack", np.nan, 0, (i + 1) * 1448.0, 0.066))
        rows.append((t0 + 5.06, f, "data", 5000 * 1448.0, 1448, np.nan, np.nan))  # segment 5000 lost once
    pk = pd.DataFrame(rows, columns=["time", "flow", "kind", "seq", "len", "ack", "ack_rtt"]).sort_values("time")

    monkeypatch.setattr(l3, "Capture", lambda net, host, rd, bpf_filter: _Source(rd, "capture.pcap"))
    monkeypatch.setattr(l3, "SsSampler", fake_ss)
    monkeypatch.setattr(l3, "Counters", lambda net, host, rd, name="counters.json": _Source(rd, name, delta={}))
    monkeypatch.setattr(l3, "QdiscSampler", lambda net, host, rd, dev, interval: _Source(rd, "q.txt", table=qdisc))
    monkeypatch.setattr(l3, "bulk", fake_bulk)
    monkeypatch.setattr(lm, "read_capture", lambda path, sender, port: pk)
    net = type("Net", (), {"address": lambda self, host, path: "10.1.0.1"})()
    point = {"key": "droptail-2mbit-n02-r1", "scenario": "droptail", "n": 2, "rep": 1, "loss_cfg": None,
             "capacity_mbps": 2.0, "link": "rate=2mbit,delay=30ms,queue=10", "duration_s": warmup + steady + 1}
    s = l3.transfer(net, rd, point, {"warmup_s": warmup, "steady_s": steady, "cc": "reno", "model_b": 1})
    assert s["goodput_window_mbps"] == pytest.approx(1.76)  # both flows were still sending through the window
    assert s["goodput_transfer_mbps"] == pytest.approx(11000 * 280 * 8 / 15 / 1e6, abs=1e-3)  # rounded to kbit/s
    assert sum(s["per_flow_mbps"]) > s["goodput_transfer_mbps"]  # flow 1's rate counts only its 13 s
    # The emulator over the window only: slow start's 80 drops of the warm-up are not counted.
    assert s["p_r_emulator"] == pytest.approx(16 / 1616) and s["emulator"]["transfer"]["dropped"] == 96
    assert s["emulator_wire_mbps"] == pytest.approx(1600 * 1514 * 8 / 9.8 / 1e6)
    assert s["emulator_qlen"] == 50  # the median of the two samples inside the window
    assert s["srtt"] == pytest.approx(0.062) and s["rtt"] == s["srtt"] and s["min_rtt"] == pytest.approx(0.060)
    assert s["ack_rtt"] == pytest.approx(0.066) and s["T"] == pytest.approx(0.264) and s["retransmissions"] == 2
    assert (tmp_path / "flows.csv").exists() and not (tmp_path / "capture.pcap").exists()


# ---------------------------------------------------------------- the reno_recovery control

def _arm(n_runs, err1, err2, timeouts, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"run": [f"random-5pct-n{i:02d}-r1" for i in range(1, n_runs + 1)], "scenario": "random",
                         "n": range(1, n_runs + 1), "loss_cfg": "5%", "loss": 0.05, "queued": False, "model1": 1.0,
                         "p": 0.05, "p_e": 0.05, "p_r": 0.05, "rtt": 0.065, "T": 0.3, "model_b": 1.0,
                         "loss_events_per_flow": 300, "timeouts": timeouts, "pps": 100.0,
                         "err_model1": rng.normal(err1, 0.02, n_runs), "err_n_pftk_p": rng.normal(err2, 0.02, n_runs)})


def _control(runs, read_back=la.RENO_RECOVERY):
    rm = pd.DataFrame({"run": runs.run, "commit": "abc", "kernel": "6.12", "where": "uml",
                       "sysctls_read_back": json.dumps({"snd": read_back})})
    return {"runs": runs, "runs_manifest": rm}


def test_recovery_control_measures_only_with_the_sysctls_applied():
    """The reno_recovery arms in figures (recovery_table, Holm over the two); the ledger's control
    (claims.py, whose verdict the report's divergences take) measures nothing unless every run read
    the four sysctls back as set."""
    from mptcplab.labs.lab3 import claims as ledger

    base = _arm(8, -0.20, -0.05, 1, 1)  # Linux's recovery: n x Padhye closer, few timeouts
    flipped = _arm(8, -0.02, -0.15, 120, 2)  # Reno's: model 1 closer
    tbl = la.recovery_table(base, flipped)
    assert tbl.verdict.tolist() == ["n × Padhye closer", "model 1 closer"] and tbl.level.max() > 0.95  # Holm
    assert tbl.timeouts.tolist() == [1, 120] and tbl.padhye_timeouts.iloc[0] > 0
    moves = ledger.recovery_moves(ledger.gap, "Fig. 16's gap", lambda m: m > 0)
    said = moves({"runs": base, "controls": {"reno_recovery": _control(flipped)}})
    assert said.numbers["linux_recovery"] > 0 > said.numbers["reno_recovery"]
    partly = {**la.RENO_RECOVERY, "net.ipv4.tcp_sack": "1"}  # not read back as set (or not recorded)
    with pytest.raises(KeyError, match="read back as set"):
        moves({"runs": base, "controls": {"reno_recovery": _control(flipped, partly)}})
    assert la.sysctls_applied(_control(flipped)["runs_manifest"]) == la.RENO_RECOVERY


# ---------------------------------------------------------------- the paced control (ACK ratio)

def _ack_arm(b, out_per_in, err1, seed, link="delay=30ms,loss=2%", gro="off"):
    rng = np.random.default_rng(seed)
    pts = [("2%", 1), ("2%", 4), ("5%", 1), ("5%", 4)]
    runs = pd.DataFrame({"run": [f"random-{l[:-1]}pct-n{n:02d}-r1" for l, n in pts], "scenario": "random",
                         "n": [n for _, n in pts], "loss_cfg": [l for l, _ in pts], "queued": False, "model1": 1.0,
                         "b": rng.normal(b, 0.1, 4), "rcv_in_segs": 10000, "rcv_out_segs": 10000 * out_per_in,
                         "rcv_delayed_acks": 100, "rcv_backlog_coalesce": 0,
                         "err_model1": rng.normal(err1, 0.01, 4), "err_model2": rng.normal(-0.05, 0.01, 4),
                         "err_n_pftk_p": rng.normal(-0.04, 0.01, 4)})
    rm = pd.DataFrame({"run": runs.run, "parameters": json.dumps({"link": link})})
    off = {k: "off" for k in ("generic-receive-offload", "generic-segmentation-offload", "tcp-segmentation-offload")}
    return {"runs": runs, "runs_manifest": rm,
            "manifest": {"network": {"offloads": {"rcv:p1": off, "emu:b-p1": {**off, "generic-receive-offload": gro}}}}}


def test_the_ack_ratio_is_blamed_on_spacing_only_when_a_rate_brings_b_to_the_delayed_ack_value():
    bursts = _ack_arm(8.0, 0.13, -0.15, 1)
    fast = _ack_arm(7.6, 0.14, -0.15, 2, "rate=1gbit,delay=30ms,loss=2%")  # 12 µs apart: still bursts
    slow = _ack_arm(2.1, 0.48, -0.15, 3, "rate=20mbit,delay=30ms,loss=2%")
    controls = {"linux_recovery": bursts, "paced_20mbit": slow, "paced": fast}
    paced = la.paced_controls(controls)
    assert [n for n, _ in paced] == ["paced", "paced_20mbit"] and la.link_rate(slow) == 20e6
    tbl = la.ack_ratio_table(bursts["runs"], paced)
    assert tbl.control.tolist() == ["linux_recovery", "paced", "linux_recovery", "paced_20mbit"]
    assert tbl.acks_per_segment.tolist() == pytest.approx([0.13, 0.14, 0.13, 0.48])
    assert tbl.arm.iloc[3].startswith("rate 20 Mbit/s (606 µs") and tbl.arm.iloc[1].startswith("rate 1 Gbit/s (12.1 µs")
    eff = la.ack_ratio_effect(bursts["runs"], paced)
    assert len(eff) == 6 and eff.level.min() > 0.95 and set(eff.verdict) == {"not resolved"}  # Holm over all
    empty = pd.DataFrame(columns=["scenario", "queued"])
    row = la.ack_ratio_row(empty, controls)
    assert row[2].startswith("cause measured: how closely the packets follow") and "pairs to resolve" in row[2]
    assert "with rate 1 Gbit/s" in row[2]  # the rate that did not bring b down is named
    only_fast = {"linux_recovery": bursts, "paced": fast}
    assert la.ack_ratio_row(empty, only_fast)[2].startswith("unexplained, tried: spacing the packets")
    gro_on = _ack_arm(2.1, 0.48, -0.15, 3, "rate=20mbit,delay=30ms,loss=2%", gro="on")  # offloads not off
    assert la.ack_ratio_row(empty, {"linux_recovery": bursts, "paced": gro_on})[2].startswith("unexplained, tried:")
    assert la.ack_ratio_row(empty, {"linux_recovery": bursts})[2].startswith("unexplained, tried:")
    assert la.ack_ratio_row(empty, {"linux_recovery": slow}) is None  # b already ~2: no divergence
    assert la.ack_ratio_row(empty, {}) is None


def test_a_controlled_run_kept_under_controls_is_read_by_the_reference_report(sweep):
    la.compact(sweep)
    ref = sweep / "ref"
    la.export_reference(sweep, ref)
    ctrl = ref / la.CONTROLS / "reno_recovery"
    la.export_controlled(sweep, ref, "reno_recovery")
    assert not (ctrl / "paper-vs-this-run.md").exists() and (ctrl / "runs-manifest.csv").exists()
    assert set(la.load_controls(ref)) == {"reno_recovery"} and la.load_controls(sweep) == {}
    text = (ref / "paper-vs-this-run.md").read_text()  # the reference's report, made again with the control
    assert text == la.report(ref)
    assert "### Controlled run: the models' Reno recovery (reno_recovery)" in text
    assert "| Reno-like recovery (all four off) |" in text
    la.export_reference(sweep, ref)  # the reference re-made: its report still reads the controls kept in it
    assert "### Controlled run: the models' Reno recovery (reno_recovery)" in (ref / "paper-vs-this-run.md").read_text()


def test_no_table_of_a_lab3_reference_is_replaced_alone(sweep):
    """runs, flows and losses come from the same flows: `--tables` is refused, naming what to do instead."""
    with pytest.raises(UsageError, match="--controlled NAME"):
        la.export_reference(sweep, sweep / "ref", tables=("runs",))
    assert not (sweep / "ref").exists()


def test_the_report_says_whether_any_run_was_queued(sweep):
    """A DropTail bottleneck that sent under 90% of its rate is named as queued; when none is, the
    report says every run is held against its band (a re-made reference must not go silent)."""
    summary = sweep / "droptail-4mbit-n04-r1" / "summary.json"
    for wire in (1.0, 3.9):  # Mbit/s the 4 Mbit/s bottleneck sent in the window
        summary.write_text(json.dumps({**json.loads(summary.read_text()), "emulator_wire_mbps": wire}))
        la.compact(sweep)
        if wire == 1.0:
            assert "1 run(s) (droptail-4mbit-n04-r1) were `queued`" in la.report(sweep)
    text = la.report(sweep)
    assert "No run was `queued`" in text and "were `queued`" not in text


def test_queued_runs_at_the_setup_checks_rate_are_blamed_on_it():
    man = {"network": {"paths": [{"link": "rate=20mbit,delay=30ms,queue=auto"}]}}
    queued = pd.DataFrame({"emulator_wire_mbps": [19.99, 20.0, 19.5], "scenario": "random"})
    assert la.setup_check_rate(man) == 20e6
    assert la.rate_cause(queued, man, None).startswith("cause measured: the setup check's 20 Mbit/s netem rate")
    assert la.rate_cause(queued.assign(emulator_wire_mbps=[12.0, 13.0, 19.99]), man, None).startswith("unexplained")
    assert la.rate_cause(queued, {}, None).startswith("unexplained")
    # the no_rate control's runs, with their qdiscs as the kernel listed them
    runs = pd.DataFrame({"run": ["random-0.1pct-n08-r1"], "scenario": "random", "loss_cfg": "0.1%", "n": 8,
                         "pps": 4800.0, "srtt": 0.061, "queued": False})
    rm = pd.DataFrame({"run": runs.run, "where": "uml",
                       "qdiscs": json.dumps(["qdisc netem 8002: dev b-p1 root refcnt 2 limit 10000 delay 30ms loss 0.1%"])})
    said = la.rate_cause(queued, man, {"runs": runs, "runs_manifest": rm})
    assert "0 with a rate on the data direction" in said and "4,800 packets/s, srtt 61.0 ms, not queued" in said


def test_run_sysctls_are_set_for_each_run_after_the_setup_check():
    """configure() sets run_sysctls (through the network, so the run's manifest records and reads
    them back); the network's own sysctls are what the setup check ran with."""
    import types

    from mptcplab.net.links import LinkSpec

    lab = l3.LAB
    params = lab.load_params(False, {"flows": [1], "random": {"loss": ["2%"]}, "droptail": {"capacity": []},
                                     "run_sysctls": {"snd": {"net.ipv4.tcp_sack": "0"}}})
    assert "net.ipv4.tcp_sack" not in l3.topology(params).sysctls.get("snd", {})
    point = l3.points(params)[0]
    calls = []
    topo = types.SimpleNamespace(path=lambda name: types.SimpleNamespace(link=LinkSpec.parse(point.values["link"])))
    net = types.SimpleNamespace(topo=topo, set_sysctl=lambda *a: calls.append(a), set_link=lambda *a: calls.append(a))
    l3.configure(net, point, params)
    assert calls == [("snd", "net.ipv4.tcp_sack", "0")]
    with pytest.raises(UsageError, match="unknown host"):
        lab.load_params(False, {"run_sysctls": {"emu": {"net.ipv4.tcp_sack": "0"}}})


def test_points_carry_their_transfer_time_for_the_dry_run():
    """Each run transfers warm-up + window + 1 s; `run --dry-run` sums points' duration_s."""
    params = {"flows": [1, 2], "repetitions": 1, "warmup_s": 10, "steady_s": 60, "paths": {"p1": {"delay": "30ms"}},
              "random": {"loss": ["1%"]}, "droptail": {"capacity": ["4mbit"]}}
    assert {p.values["duration_s"] for p in l3.points(params)} == {71.0}


def test_the_reference_says_whether_its_random_loss_runs_had_a_rate_from_their_qdiscs():
    """The ACK-ratio row names the reference's own random-loss runs' links as the kernel listed them."""
    bursts = _ack_arm(8.0, 0.13, -0.15, 1)
    ref = bursts["runs"].assign(base_rtt=0.06)
    netem = "qdisc netem 8002: dev b-p1 root refcnt 2 limit 10000 delay 30ms loss 2%"
    rm = pd.DataFrame({"run": ref.run, "qdiscs": [json.dumps([netem])] * 3 + [json.dumps([netem + " rate 20Mbit"])]})
    assert la.rated_runs(rm, ref.run) == 1 and la.rated_runs(None, ref.run) is None
    row = la.ack_ratio_row(ref, {"linux_recovery": bursts}, rm)
    assert "random loss in this reference (1 of 4 runs behind a rate on the link): b 8.0" in row[1]
    clean = rm.assign(qdiscs=json.dumps([netem]))
    assert "(4 runs, netem without a rate)" in la.ack_ratio_row(ref, {"linux_recovery": bursts}, clean)[1]
    assert "their links' qdiscs not kept" in la.ack_ratio_row(ref, {"linux_recovery": bursts})[1]


def test_the_shipped_report_is_what_the_analysis_makes_of_the_shipped_tables():
    """solutions/results/lab3/paper-vs-this-run.md regenerates byte for byte from the committed
    tables and controls (`mptcplab notebooks reference lab3 solutions/results/lab3 --report-only`):
    report()'s sections assembled in order say what the shipped report says."""
    from mptcplab.run.lab import REPO_ROOT

    ref = REPO_ROOT / "solutions" / "results" / "lab3"
    assert la.report(ref) == (ref / "paper-vs-this-run.md").read_text(), \
        "stale: run `mptcplab notebooks reference lab3 solutions/results/lab3 --report-only` and commit"
