"""Lab 2 parameters, topology and analysis (no kernel needed)."""

import json
from pathlib import Path
import math

import numpy as np
import pandas as pd
import pytest

from mptcplab.core.errors import UsageError
from mptcplab.labs.lab2 import analysis as la
from mptcplab.labs.lab2 import experiment as l2
from mptcplab.labs.lab2 import measure as l2m
from mptcplab.labs.lab2 import raw as l2raw
from mptcplab.labs.lab2 import reference as l2ref
from mptcplab.run.lab import get_lab

SS = """\
@ 100.0
mptcp ESTAB 0 0 10.1.0.1:40000 10.1.0.2:5201
\t subflows:1 add_addr_signal:0 remote_key:1 local_key:2 token:3
tcp ESTAB 0 0 10.1.0.1:40000 10.1.0.2:5201
\t mlab_lia wscale:7,7 rto:208 rtt:5/1 cwnd:10 bytes_acked:1000 segs_out:50 data_segs_out:40 tcp-ulp-mptcp flags:Mmec
tcp ESTAB 0 0 10.2.0.1%p2:40001 10.1.0.2:5201
\t mlab_lia wscale:7,7 rto:212 rtt:9/2 cwnd:12 bytes_acked:2000 bytes_retrans:1448 data_segs_out:70 tcp-ulp-mptcp flags:Jjec
@ 100.25
tcp ESTAB 0 0 10.2.0.1%p2:40001 10.1.0.2:5201
\t mlab_lia wscale:7,7 rto:212 rtt:9/2 cwnd:12 bytes_acked:5000 bytes_retrans:1448 data_segs_out:90 tcp-ulp-mptcp flags:Jjec
"""


def test_lab_declares_its_delays_and_bpf_so_neither_uml_nor_native_without_netem():
    lab = get_lab("lab2")
    assert lab.needs == ("netem", "bpf_struct_ops")
    full, quick = lab.load_params(False), lab.load_params(True)
    assert full["repetitions"] == 10 and quick["repetitions"] < full["repetitions"]
    assert quick["fairness"]["paths"] == full["fairness"]["paths"]  # [quick.fairness] merges, not replaces
    assert set(full["algorithms"]) == {"uncoupled", "ewtcp", "coupled", "lia", "cs218"}


def test_a_controlled_run_may_skip_the_fairness_runs_but_not_the_transfers():
    """fairness.repetitions = 0: a controlled run that measures only transfers (the shared
    bottleneck, the cross-traffic sweep); the transfers' repetitions stay >= 1."""
    lab = get_lab("lab2")
    params = lab.load_params(False, {"variants": ["shared"], "repetitions": 2, "fairness": {"repetitions": 0}})
    keys = [p.key for p in lab.points(params, None)]
    assert len(keys) == 10 and not any(k.startswith("fair-") for k in keys)
    with pytest.raises(UsageError, match="repetitions >= 1"):
        lab.load_params(False, {"repetitions": 0})


def test_topology_keeps_every_path_delay():
    """No place without netem runs the lab (`needs`), so the delays are never dropped."""
    params = get_lab("lab2").load_params(True)
    topo = l2.topology(params)
    assert topo.mptcp_subflows == len(topo.paths) == 4
    assert [p.link.delay_s for p in topo.paths] == [0.01, 0.02, 0.03, 0.04]
    assert all(p.link.rate_bps == 5e6 for p in topo.paths)
    assert [p.link.delay_s for p in l2.fairness_topology(params).paths] == [0.01, 0.02]


def test_topology_rejects_bad_mobility():
    params = get_lab("lab2").load_params(True)
    params["mobility"] = [{"at": 0.5, "path": "p9", "link": "rate=1mbit"}]
    with pytest.raises(UsageError, match="mobility entry"):
        l2.topology(params)


def test_subflow_table_takes_the_last_sample_of_each_subflow():
    rows = l2m.subflow_table(SS, "mlab_lia")
    assert [(r["path_index"], r["data_segs_out"], r["bytes_acked"], r["cc_ok"]) for r in rows] == [
        (1, 40, 1000, True), (2, 90, 5000, True)]
    assert all(r["mptcp_subflow"] for r in rows)
    assert not any(r["cc_ok"] for r in l2m.subflow_table(SS, "mlab_cs218"))


def _tp():
    rows = []
    for variant in ("static", "mobility"):
        for algo, base in (("uncoupled", 15.0), ("lia", 14.0), ("cs218", 16.0), ("coupled", 13.0)):
            for rep, d in enumerate((-0.5, 0.0, 0.5), 1):
                rows.append({"run": f"{variant}-{algo}-r{rep}", "algo": algo, "variant": variant, "rep": rep,
                             "goodput_transfer_mbps": base + d, "subflows": 4, "cc": f"mlab_{algo}",
                             "subflow_ccs": f"mlab_{algo}"})
    return pd.DataFrame(rows)


def test_throughput_table_and_paper_comparison():
    t = la.throughput_table(_tp())
    row = t[(t.algo == "cs218") & (t.variant == "static")].iloc[0]
    assert row.mean_mbps == pytest.approx(16.0) and row.runs == 3
    assert row.ci95_mbps == pytest.approx(4.3027 * 0.5 / math.sqrt(3), rel=1e-4)
    assert row.vs_uncoupled == pytest.approx(16 / 15)
    pv = la.paper_vs_run(_tp()).set_index("algo")
    assert pv.loc["cs218", "paper_static_vs_uncoupled"] == pytest.approx(25.05 / 22.3328)
    assert pv.loc["lia", "run_mobility"] == pytest.approx(14.0)


def test_report_from_compact_tables(tmp_path):
    _tp().to_csv(tmp_path / "throughput.csv", index=False)
    pd.DataFrame(columns=["algo", "variant", "rep", "path", "packets", "bytes_retrans"]).to_csv(
        tmp_path / "subflows.csv", index=False)
    pd.DataFrame([{"algo": "lia", "rep": 1, "mptcp_goodput_transfer_mbps": 6.0, "tcp_goodput_transfer_mbps": 3.5,
                   "mptcp_share_on_shared": 0.25,
                   "mptcp_on_shared_mbps": 1.5}]).to_csv(tmp_path / "fairness.csv", index=False)
    pd.DataFrame(columns=["algo", "variant", "path", "t", "cwnd", "srtt_ms", "rto_ms"]).to_csv(
        tmp_path / "timeseries.csv", index=False)
    (tmp_path / "lab2-manifest.json").write_text(json.dumps({"platform": {"kernel_release": "6.18"}}))
    md = la.report(tmp_path)
    assert "| CS218 ALGO | 25.04 |" in md and "16.00 ±" in md
    assert "| RTT Compensator / LIA | 6.00 (1 run) | 1.50 (1 run) | 3.50 (1 run) | 70% (1 run) | — | no uncoupled runs |" in md
    pd.DataFrame([{"path": 1, "ca_acks": 100, "with_dwnd": 90, "share": 0.9, "dwnd_mean": 0.75, "dwnd_median": 0.8,
                   "best_rtt_ms": 20.0, "last_rtt_ms": 26.0, "variant": "static", "rep": 1}]).to_csv(
        tmp_path / "delay-window.csv", index=False)
    (tmp_path / "lab2-manifest.json").write_text(json.dumps({"bpf_vs_reference": {
        "static-cs218-r1": {"events": 10, "mismatches": 0}, "static-lia-r1": {"events": 5, "mismatches": 2}}}))
    md = la.report(tmp_path)
    assert "| static | p1 | 100 | 90.0% | 0.7500 | 20.00 | 26.00 |" in md
    assert "15 recorded callbacks in 2 runs, **mismatches in {'static-lia-r1': 2}**" in md
    ft = la.fairness_table(pd.read_csv(tmp_path / "fairness.csv"))
    assert ft.tcp_share_of_shared.iloc[0] == pytest.approx(0.7)
    _tp().iloc[:0].to_csv(tmp_path / "throughput.csv", index=False)  # a fairness-only run (variants = [])
    md = la.report(tmp_path)
    assert "Runs per algorithm and variant: 0." in md and "| CS218 ALGO | 25.04 | — |" in md


def test_load_refuses_an_empty_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no lab2 results"):
        la.load(tmp_path)


def test_paired_differences_use_the_same_runs():
    tp = _tp()
    # make the runs co-vary: run r is 1 Mbit/s up or down for every algorithm (shared cross traffic)
    t = la.paired_table(tp).set_index(["variant", "algo", "vs"])
    row = t.loc[("static", "cs218", "uncoupled")]
    assert row["diff"] == pytest.approx(1.0) and row.pairs == 3
    assert row.ci95 == pytest.approx(0.0) and row.half == pytest.approx(0.0)
    assert row.verdict == "more than uncoupled"
    assert t.loc[("static", "lia", "uncoupled")].verdict == "less than uncoupled"
    assert t.loc[("static", "cs218", "lia")]["diff"] == pytest.approx(2.0)
    # independent means would not resolve these (intervals of ±1.24 overlap); pairs do
    indep = la.throughput_table(tp).set_index(["algo", "variant"])
    assert indep.loc[("cs218", "static"), "ci95_mbps"] > 1.0


def _fair():
    rows = []
    for algo, shared, tcp, share_on_shared in (("uncoupled", 2.5, 2.3, 0.36), ("coupled", 0.6, 4.2, 0.12),
                                               ("lia", 2.4, 2.4, 0.35)):
        for rep, d in enumerate((-0.2, 0.0, 0.2, 0.1, -0.1), 1):
            rows.append({"algo": algo, "rep": rep, "mptcp_goodput_transfer_mbps": 4.5 + shared + d,
                         "tcp_goodput_transfer_mbps": tcp - d,
                         "mptcp_on_shared_mbps": shared + d, "mptcp_share_on_shared": share_on_shared + d / 10})
    return pd.DataFrame(rows)


def test_fairness_verdict_is_relative_to_uncoupled():
    ft = la.fairness_table(_fair()).set_index("algo")
    assert ft.loc["uncoupled", "verdict"] == "the baseline"
    assert ft.loc["coupled", "verdict"] == "leaves TCP more than uncoupled"
    assert ft.loc["lia", "verdict"] == "not resolved"
    assert ft.loc["lia", "tcp_share_ci95"] > 0
    # the old threshold would have called LIA "harmless" (share 0.5) and uncoupled not (0.48)
    assert ft.loc["lia", "tcp_share_of_shared"] >= 0.5 > ft.loc["uncoupled", "tcp_share_of_shared"]


def test_rfc6356_goals_as_checks():
    rc = la.rfc6356_checks(_fair()).set_index(["algo", "goal"])
    assert rc.loc[("coupled", 2), "verdict"] == "met"  # 0.6 on the shared path against TCP's 4.2
    assert rc.loc[("uncoupled", 2), "verdict"] == "not resolved"  # 2.5 vs 2.3 with ±0.4 noise
    assert rc.loc[("coupled", 3), "verdict"] == "met"  # less of its traffic on the shared path
    assert ("uncoupled", 3) not in rc.index  # goal 3 is relative to uncoupled
    assert rc.loc[("lia", 1), "verdict"] == "met"  # 6.9 in total against TCP's 2.4
    # with a lone-path yardstick above what coupled gets, goal 1 fails for it
    rc = la.rfc6356_checks(_fair(), best_path_mbps=6.0).set_index(["algo", "goal"])
    assert rc.loc[("coupled", 1), "verdict"] == "violated"
    assert set(la.RFC6356_GOALS) == {1, 2, 3}


def test_paired_table_is_holm_corrected():
    """The ten comparisons are one family: the interval is wider than the uncorrected 95% one and a
    difference the uncorrected interval would resolve is "not resolved" here (fails without Holm)."""
    import numpy as np

    rng = np.random.default_rng(7)
    rows = []
    for variant in ("static", "mobility"):
        for algo, shift in (("uncoupled", 0.0), ("ewtcp", 0.0), ("coupled", -5.0), ("lia", 0.0), ("cs218", 0.0)):
            for rep in range(1, 11):
                rows.append({"run": f"{variant}-{algo}-r{rep}", "algo": algo, "variant": variant, "rep": rep,
                             "goodput_transfer_mbps": 14.0 + shift + rng.normal(0, 0.5), "subflows": 4, "cc": algo,
                             "subflow_ccs": algo})
    tp = pd.DataFrame(rows)
    # static CS218 3.1 standard errors above uncoupled: p ~ 0.013, under 0.05 but not under 0.05/9
    base = tp[(tp.variant == "static") & (tp.algo == "uncoupled")].set_index("rep").goodput_transfer_mbps
    noise = np.array([0.3, -0.3, 0.2, -0.2, 0.1, -0.1, 0.25, -0.25, 0.05, -0.05])
    tp.loc[(tp.variant == "static") & (tp.algo == "cs218"), "goodput_transfer_mbps"] = (base + 0.2 + noise).to_numpy()
    t = la.paired_table(tp).set_index(["variant", "algo", "vs"])
    assert len(t) == 10 and (t.half > t.ci95).all() and (t.level > 0.95).all()
    row = t.loc[("static", "cs218", "uncoupled")]
    assert row.lo < 0 < row["diff"] - row.ci95  # uncorrected: resolved; corrected: not
    assert row.verdict == "not resolved" and row.runs_needed > row.pairs
    assert t.loc[("static", "coupled", "uncoupled")].verdict == "less than uncoupled"
    # not resolved exactly when the corrected interval spans zero
    assert ((t.lo < 0) & (t.hi > 0)).eq(t.verdict == "not resolved").all()


def test_goodput_bins_count_the_bins_where_nothing_arrived_and_stalls_are_found():
    # 10 s at 5 Mbit/s in 0.1 s bins, nothing from 4.0 to 6.5 s (intervals.csv leaves those bins out)
    rows = [{"time": 1000 + k / 10, "flow": 0, "bytes": 5e6 / 8 / 10, "goodput_bin_mbps": 5.0} for k in range(100)
            if not 40 <= k < 65]
    bins = la.goodput_bins(pd.DataFrame(rows), 1000.0).assign(run="static-lia-r7")
    assert len(bins) == 20 and bins.goodput_bin_mbps.max() == pytest.approx(5.0)
    st = la.stalls(bins).iloc[0]
    assert st.stall and st.longest_low_s == pytest.approx(2.5) and st.from_s == pytest.approx(4.0)
    short = la.goodput_bins(pd.DataFrame([r for r in rows if not 40 <= (r["time"] - 1000) * 10 < 80] + [
        {"time": 1000 + k / 10, "flow": 0, "bytes": 5e6 / 8 / 10, "goodput_bin_mbps": 5.0} for k in range(50, 65)]), 1000.0)
    assert not la.stalls(short.assign(run="x")).iloc[0].stall  # 1 s low, 1.5 s back, 0.5 s low: no 2 s stall
    # the reference's goodput-bins.csv, written when the column was `mbps`, is read by today's name
    ref = la.load(Path(__file__).parents[2] / "solutions" / "results" / "lab2")["goodput-bins"]
    assert list(ref.columns) == ["run", "t", "goodput_bin_mbps"] and la.stalls(ref).stall.sum() == 8


def test_the_log_and_the_report_compute_from_the_same_unrounded_figures(tmp_path):
    """`run`'s log and the report once printed "0.1385 ± 0.1207" and "0.13 ± 0.06" for the same
    quick run: the report read throughput.csv written at 4 significant digits, and with 2 pairs a
    0.01 Mbit/s rounding is the size of the spread. Both now read the table, which keeps the runs'
    figures as recorded."""
    man = {"network": {"paths": [{"name": "p1", "link": "rate=5mbit,delay=10ms,queue=25"},
                                 {"name": "p2", "link": "rate=5mbit,delay=20ms,queue=50"}]},
           "git": {"commit": "a" * 40, "dirty": False}, "platform": {"where": "vm", "kernel_release": "6.12"}}
    # differences 0.129 and 0.148 (0.1385 ± 0.1207 with 2 pairs); at 4 digits 0.13 and 0.14 (0.135 ± 0.064)
    mbps = {("uncoupled", 1): 14.437, ("uncoupled", 2): 12.906, ("cs218", 1): 14.566, ("cs218", 2): 13.054}
    for (algo, rep), m in mbps.items():
        d = tmp_path / f"static-{algo}-r{rep}"
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps(man))
        (d / "summary.json").write_text(json.dumps({
            "algo": algo, "variant": "static", "rep": rep, "goodput_transfer_mbps": m, "subflows": 2,
                                                    "cc": f"mlab_{algo}",
            "subflow_ccs": [f"mlab_{algo}"], "packets_per_subflow": {}, "retrans_per_subflow": {}, "span_s": 8.0}))
    in_memory = la.paired_table(la.compact(tmp_path)["throughput"]).iloc[0]
    from_files = la.paired_table(la.load(tmp_path)["throughput"]).iloc[0]
    assert from_files["diff"] == pytest.approx(in_memory["diff"], abs=1e-9)
    assert from_files.half == pytest.approx(in_memory.half, abs=1e-9) and from_files.pairs == 2
    assert in_memory["diff"] == pytest.approx(0.1385) and in_memory.ci95 == pytest.approx(0.1207, abs=1e-4)
    rounded = {k: float(f"{v:.4g}") for k, v in mbps.items()}
    old = la.stats.paired(pd.Series({r: rounded[("cs218", r)] for r in (1, 2)}),
                          pd.Series({r: rounded[("uncoupled", r)] for r in (1, 2)}))
    assert old["ci95"] == pytest.approx(0.0635, abs=1e-3)  # what the report printed then
    assert (tmp_path / "runs-manifest.csv").exists()
    assert set(pd.read_csv(tmp_path / "throughput.csv").commit) == {"a" * 12}


def test_bpf_counters_are_shown_only_when_they_counted_what_ran():
    zero = {a: {"acks": 0, "losses": 0} for a in ("mlab_lia", "mlab_cs218")}
    assert la.bpf_counters({"bpf_counters": zero, "bpf_vs_reference": {"r1": {"events": 10}}}) is None
    assert la.bpf_counters({"bpf_counters": zero, "runs": 4}) is None
    counted = {"mlab_lia": {"acks": 7, "losses": 1}}
    assert la.bpf_counters({"bpf_counters": counted, "runs": 4}).loc["mlab_lia", "acks"] == 7
    assert la.bpf_counters({}) is None


def test_bpf_counters_are_summed_from_each_runs_own_reading(tmp_path):
    """Each run records what its program counted (experiment.bpf_counted); the manifest sums them
    per program, whatever `run` command (a resumed sweep) made each run, and keeps a recorded run's
    counters beside its replayed callbacks."""
    for rep, count in ((1, {"acks": 900, "coupled_acks": 800, "dwnd_acks": 0, "losses": 3, "sockets": 4}),
                       (2, {"acks": 100, "coupled_acks": 90, "dwnd_acks": 0, "losses": 1, "sockets": 4})):
        d = tmp_path / f"static-lia-r{rep}"
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps({"network": {"paths": [{"name": "p1", "link": "rate=5mbit"}]}}))
        (d / "summary.json").write_text(json.dumps({
            "algo": "lia", "variant": "static", "rep": rep, "goodput_transfer_mbps": 4.0, "subflows": 1,
                                                    "cc": "mlab_lia",
            "subflow_ccs": ["mlab_lia"], "packets_per_subflow": {}, "retrans_per_subflow": {}, "span_s": 8.0,
            "bpf_counters": count}))
    man = la.compact(tmp_path)["manifest"]
    assert man["bpf_counters"] == {"mlab_lia": {"acks": 1000, "coupled_acks": 890, "dwnd_acks": 0, "losses": 4,
                                                "sockets": 8, "runs": 2}}
    assert la.bpf_counters(man).loc["mlab_lia", "runs"] == 2
    zero = {"mlab_lia": {"acks": 0, "losses": 0, "runs": 2}}
    assert la.bpf_counters({"bpf_counters": zero, "runs": 2}) is None  # `runs` alone is not a count
    replayed = {"static-lia-r1": {"events": 9, "acks_congestion_avoidance": 899, "losses": 3, "subflows": 4,
                                  "counted": {"acks": 900, "losses": 3, "sockets": 4}}, "old": {"events": 5}}
    assert la.counted_vs_recorded(replayed).endswith("read 900 congestion-avoidance ACKs, 3 losses and 4 sockets; "
                                                     "the recorded callbacks 899, 3 and 4.")
    assert la.counted_vs_recorded({"old": {"events": 5}}) == ""


def _fake_link(seconds_each, rate=5e6, retransmit_every=0):
    """What the emulator's egress delivers from a 5 Mbit/s FIFO link, one packet at a time, as
    link_packets reads it: per flow (name, src, sport, dport, payload, t_first, t_last, other_path),
    full-size segments, the flows sharing the link round-robin while both send; every
    `retransmit_every`-th segment of a flow repeats an earlier one. Other-path segments go on a
    second link of their own."""
    rows, nxt = [], {}
    flows = seconds_each
    t = min(f[5] for f in flows)
    end = max(f[6] for f in flows)
    sent = {f[0]: 0 for f in flows}
    while t < end:
        for link in ("shared", "other"):
            active = [f for f in flows if f[5] <= t < f[6] and (f[7] == (link == "other"))]
            if not active:
                continue
            f = active[sent[f"rr-{link}"] % len(active)] if f"rr-{link}" in sent else active[0]
            sent[f"rr-{link}"] = sent.get(f"rr-{link}", 0) + 1
            name, src, sport, dport, payload = f[:5]
            seq = nxt.get(name, 1)
            sent[name] += 1
            if retransmit_every and sent[name] % retransmit_every == 0 and seq > 1 + 10 * payload:
                seq_out = seq - 10 * payload  # a retransmission: the link carries it, the flow gains nothing
            else:
                seq_out, nxt[name] = seq, seq + payload
            ip_len = payload + 52  # IP 20 + TCP 20 + timestamps 12 (MPTCP's DSS shrinks the payload instead)
            rows.append({"time": t, "src": src, "ip_len": ip_len, "sport": sport, "dport": dport,
                         "seq": seq_out, "len": payload})
        t += (1448 + 52 + 14) * 8 / rate
    return pd.DataFrame(rows)


def test_the_shared_links_split_comes_from_what_the_emulator_delivered():
    """A faked network: TCP from 1000 to 1010 s, the MPTCP subflow on the shared link from 1001 to
    1011 s and one on the other link throughout, the shared link full all the time. Over their own
    spans the two flows' rates add up to more than the link (the reference's 2.3% over its
    ceiling); over the common window, counted where the link delivered them, they add up to at
    most its goodput ceiling, retransmissions counted once."""
    flows = [("tcp", "10.1.0.1", 40001, 5202, 1448, 1000.0, 1010.0, False),
             ("m1", "10.1.0.1", 40000, 5201, 1428, 1001.0, 1011.0, False),
             ("m2", "10.2.0.1", 40002, 5201, 1428, 1000.0, 1011.0, True)]
    pkts = _fake_link(flows, retransmit_every=20)
    ceiling = 5e6 * 1448 / 1514 / 1e6
    own = {name: pkts[(pkts.sport == sport)].pipe(
        lambda g: (g.seq + g.len).max() * 8 / (g.time.max() - g.time.min()) / 1e6) for name, _, sport, *_ in flows}
    assert own["tcp"] + own["m1"] > ceiling * 1.02  # each over its own span: more than the link
    w = l2m.shared_link_rates(pkts, "10.1.0.", {"mptcp": 5201, "tcp": 5202})
    assert w["shared_window_s"][0] == pytest.approx(1001.0, abs=0.01) and w["shared_window_s"][1] <= 1010.0
    both = w["tcp_on_shared_mbps"] + w["mptcp_on_shared_mbps"]
    assert both <= ceiling
    assert both == pytest.approx(ceiling * (1 - 1 / 20), rel=0.02)  # every 20th segment was a repeat
    assert w["shared_wire_mbps"] == pytest.approx(5.0, rel=0.01)
    assert w["tcp_on_shared_mbps"] == pytest.approx(w["mptcp_on_shared_mbps"] * 1448 / 1428, rel=0.02)  # round-robin
    assert w["mptcp_share_on_shared"] == pytest.approx(
        w["mptcp_on_shared_mbps"] / (w["mptcp_on_shared_mbps"] + w["mptcp_on_other_mbps"]), abs=1e-3)
    assert w["mptcp_share_on_shared"] == pytest.approx(1 / 3, abs=0.01)  # half the shared link, all of the other
    # flows that never overlap give no split, rather than one over a span only one of them used
    apart = _fake_link([("tcp", "10.1.0.1", 40001, 5202, 1448, 1000.0, 1002.0, False),
                        ("m1", "10.1.0.1", 40000, 5201, 1428, 1003.0, 1005.0, False)])
    assert l2m.shared_link_rates(apart, "10.1.0.", {"mptcp": 5201, "tcp": 5202}) == {}



def test_the_fairness_network_takes_the_paths_vocabulary_and_stored_runs_keep_their_keys(tmp_path):
    """`fairness.paths.<name>.link` / `.delay`, as every lab's `paths`; the keys before it are refused
    by name, and a sweep recorded with them (the reference's) is still judged by `mptcplab check`."""
    lab = get_lab("lab2")
    params = lab.load_params(True, {"fairness": {"paths": {"shared": {"delay": "5ms"}}}})
    assert [p.link.delay_s for p in l2.fairness_topology(params).paths] == [0.005, 0.02]
    with pytest.raises(UsageError, match="'fairness.shared_delay' is now called 'fairness.paths.shared.delay'"):
        lab.load_params(True, {"fairness": {"shared_delay": "5ms"}})
    with pytest.raises(UsageError, match="give its delay as fairness.paths.other.delay"):
        lab.load_params(True, {"fairness": {"paths": {"other": {"link": "rate=5mbit,delay=5ms"}}}})
    judge = lab.judging.results_checks["fairness.csv"]
    row = {"algo": "lia", "rep": 1, "tcp_on_shared_mbps": 2.9, "mptcp_on_shared_mbps": 1.8, "shared_wire_mbps": 4.9}
    for stored in ({"paths": {"shared": {"link": "rate=5mbit,queue=50", "delay": "10ms"}}},
                   {"shared": "rate=5mbit,queue=50", "shared_delay": "10ms"}):
        d = tmp_path / str(len(stored))
        d.mkdir()
        pd.DataFrame([row]).to_csv(d / "fairness.csv", index=False)
        (d / "lab2-manifest.json").write_text(json.dumps({"parameters": {"fairness": stored}}))
        verdicts = judge(d / "fairness.csv")
        assert len(verdicts) == 2 and all(v.ok for v in verdicts), stored

def _controlled_sweep(d, coupled_mbps, uncoupled_mbps=(4.5, 4.6, 4.4)):
    """A made-up controlled run: the shared-bottleneck variant (3 pairs) and 2 fairness runs."""
    net = {"paths": [{"name": f"p{i}", "link": f"delay={10 * i}ms,queue=auto"} for i in (1, 2, 3, 4)],
           "bottleneck": {"name": "shared", "link": "rate=5mbit,delay=0ms,queue=50", "paths": ["p1", "p2", "p3", "p4"]}}
    man = {"network": net, "git": {"commit": "b" * 40, "dirty": False}, "started": "2026-11-25T07:00:00",
           "platform": {"where": "vm", "kernel_release": "6.12.117+deb12-amd64"},
           "parameters": {"shared_bottleneck": {"link": "rate=5mbit,queue=50"}, "duration_s": 10}}
    for algo, values in (("uncoupled", uncoupled_mbps), ("coupled", coupled_mbps)):
        for rep, m in enumerate(values, 1):
            r = d / f"shared-{algo}-r{rep}"
            r.mkdir(parents=True)
            (r / "manifest.json").write_text(json.dumps(man))
            (r / "summary.json").write_text(json.dumps({
                "algo": algo, "variant": "shared", "rep": rep, "goodput_transfer_mbps": m, "subflows": 4,
                                                        "cc": f"mlab_{algo}",
                "subflow_ccs": [f"mlab_{algo}"], "packets_per_subflow": {}, "retrans_per_subflow": {}, "span_s": 10.0}))
    link = {"link": "rate=5mbit,queue=50"}
    fman = {**man, "parameters": {"fairness": {"paths": {"shared": link, "other": link}}}}
    for algo in ("uncoupled", "coupled"):
        r = d / f"fair-{algo}-r1"
        r.mkdir()
        (r / "manifest.json").write_text(json.dumps(fman))
        (r / "summary.json").write_text(json.dumps({
            "algo": algo, "cc": f"mlab_{algo}", "rep": 1, "mptcp_goodput_transfer_mbps": 5.0,
                                                    "tcp_goodput_transfer_mbps": 3.1,
            "mptcp_share_on_shared": 0.3, "mptcp_on_shared_mbps": 1.5, "tcp_on_shared_mbps": 3.2,
            "mptcp_on_other_mbps": 3.5, "shared_wire_mbps": 4.99}))


def test_a_controlled_shared_bottleneck_run_gives_the_divergence_its_cause(tmp_path):
    """The reference's fully coupled at 0.53-0.62 of uncoupled against the report's 0.97-1.0: a
    shared-bottleneck run whose ratio holds the report's and clears the separate paths' is the
    cause measured; one that excludes the report's leaves it unexplained, saying what was tried."""
    import shutil

    from mptcplab.commands.check import check_results

    ref = tmp_path / "ref"
    shutil.copytree(Path(__file__).parents[2] / "solutions" / "results" / "lab2", ref)
    _controlled_sweep(tmp_path / "near", coupled_mbps=(4.45, 4.6, 4.5))
    la.export_controlled(tmp_path / "near", ref, "shared-bottleneck")
    text = (ref / "paper-vs-this-run.md").read_text()
    coupled = [line for line in text.splitlines() if line.startswith("| Fully Coupled | static")]
    assert coupled and "cause measured: all subflows and the cross traffic through one 5 Mbit/s link" in coupled[0]
    assert "## Controlled run `controlled/shared-bottleneck`" in text and "Fairness measured on the link" in text
    assert (ref / "controlled" / "shared-bottleneck" / "runs-manifest.csv").exists()
    man = json.loads((ref / "controlled" / "shared-bottleneck" / "lab2-manifest.json").read_text())
    # no setup check: from its runs
    assert man["parameters"]["fairness"]["paths"]["shared"]["link"] == "rate=5mbit,queue=50"
    verdicts = [v for v in check_results(ref / "controlled") if "fair-" in v.check]
    assert len(verdicts) == 4 and all(v.ok for v in verdicts)  # TCP + MPTCP and the wire rate, per run

    _controlled_sweep(tmp_path / "far", coupled_mbps=(2.2, 2.4, 2.3))
    la.export_controlled(tmp_path / "far", ref, "shared-bottleneck")
    coupled = [line for line in (ref / "paper-vs-this-run.md").read_text().splitlines()
               if line.startswith("| Fully Coupled | static")]
    assert "unexplained, tried: all subflows and the cross traffic through one 5 Mbit/s link" in coupled[0]
    assert "excludes the report's" in coupled[0]


def _raw_events():
    """Three callbacks of one subflow on path 2 (10.2.0.1), as the BPF map holds them."""
    from mptcplab.labs.lab2.cc.loader import EVENT

    raw = np.zeros(3, dtype=EVENT)
    raw["t_ns"] = [1_000_000_000, 1_020_000_000, 1_045_000_000]
    raw["sock"] = 7
    raw["kind"] = [1, 2, 3]  # init, rtt, ack
    raw["saddr"] = 0x0100020A  # 10.2.0.1 in network order, read as a little-endian u32
    raw["cwnd"], raw["ssthresh"], raw["n"], raw["acked"], raw["limited"] = 10, 2**31 - 1, 1, 2, 1
    raw["last_rtt_us"] = [0, 40_000, 41_000]
    raw["w"][:, 0], raw["rtt"][:, 0] = 10, 40_000
    return raw


def test_recorded_callbacks_kept_raw_make_the_trace_the_run_used_to_write(tmp_path):
    """A detail run keeps its BPF callbacks raw (cc-events.npy, a memory copy in the guest); the
    analysis makes cc-trace.csv.gz from them, the table the run itself wrote before, and the run's
    manifest then lists it."""
    from mptcplab.labs.lab2 import cc, cctrace
    from mptcplab.labs.lab2.cc.loader import Recording
    from mptcplab.run.results import Sweep

    raw = _raw_events()
    with Sweep(tmp_path).run("static-cs218-r1", {}) as rd:
        cc.save_raw(raw, rd.file(la.CC_EVENTS_RAW))
        rd.summary.update({"algo": "cs218", "variant": "static", "rep": 1})
    run = tmp_path / "static-cs218-r1"
    assert la.convert_raw(tmp_path) == ["static-cs218-r1"] and la.convert_raw(tmp_path) == []
    before = cctrace.compact(Recording(raw=raw).events, "cs218")  # what the run wrote in the guest before
    after = cctrace.load(run / "cc-trace.csv.gz")
    pd.testing.assert_frame_equal(after, cctrace.load(cctrace.save(before, tmp_path / "before.csv.gz")))
    assert list(after.path) == [2, 2, 2] and list(after.kind) == ["init", "rtt", "ack"]
    assert not (run / la.CC_EVENTS_RAW).exists()
    assert "cc-trace.csv.gz" in json.loads((run / "manifest.json").read_text())["artefacts"]


def test_a_fairness_runs_split_is_counted_from_its_capture_after_the_run(tmp_path, monkeypatch):
    """The run keeps the emulator's capture (tshark starts slowly in an emulated CPU); the analysis
    counts the split from it once: into the summary, links.csv.gz, the capture removed. A capture
    with no span both flows used fails the lab, naming the run."""
    from mptcplab.core.errors import ExperimentFailed
    from mptcplab.run.results import Sweep

    flows = [("tcp", "10.1.0.1", 40001, 5202, 1448, 1000.0, 1004.0, False),
             ("m1", "10.1.0.1", 40000, 5201, 1428, 1000.5, 1004.0, False),
             ("m2", "10.2.0.1", 40002, 5201, 1428, 1000.0, 1004.0, True)]
    capture = {"file": "links.pcap", "ports": {"mptcp": 5201, "tcp": 5202}, "shared_prefix": "10.1.0."}
    with Sweep(tmp_path).run("fair-lia-r1", {}) as rd:
        rd.write_text("links.pcap", "")
        rd.summary.update({"algo": "lia", "rep": 1, "mptcp_goodput_transfer_mbps": 5.0,
                           "tcp_goodput_transfer_mbps": 2.4, "link_capture": capture})
    monkeypatch.setattr(l2raw, "link_packets", lambda pcap: _fake_link(flows))
    run = tmp_path / "fair-lia-r1"
    assert la.convert_raw(tmp_path) == ["fair-lia-r1"] and la.convert_raw(tmp_path) == []
    s = json.loads((run / "summary.json").read_text())
    assert s["mptcp_share_on_shared"] == pytest.approx(1 / 3, abs=0.02) and s["shared_window_s"][0] >= 1000.5
    assert (run / "links.csv.gz").exists() and not (run / "links.pcap").exists()
    assert "links.csv.gz" in json.loads((run / "manifest.json").read_text())["artefacts"]
    assert la.compact(tmp_path)["fairness"].mptcp_share_on_shared.tolist() == [s["mptcp_share_on_shared"]]

    with Sweep(tmp_path).run("fair-lia-r2", {}) as rd:
        rd.write_text("links.pcap", "")
        rd.summary.update({"algo": "lia", "rep": 2, "mptcp_goodput_transfer_mbps": 5.0,
                           "tcp_goodput_transfer_mbps": 2.4, "link_capture": capture})
    monkeypatch.setattr(l2raw, "link_packets", lambda pcap: _fake_link(flows[:1]))  # TCP alone on the link
    with pytest.raises(ExperimentFailed, match="fair-lia-r2: the emulator saw no span"):
        la.convert_raw(tmp_path)


REF_CROSS = {"p2": {"rate": "3mbit", "on_s": 1.0, "off_s": 1.0}, "p3": {"rate": "4mbit", "on_s": 0.5, "off_s": 1.5}}


def _runs(variant, means, reps, spread=0.1, seed=3):
    """A throughput table: per algorithm its mean, runs 1..reps, a common per-run swing (the seeded
    cross traffic moves every algorithm alike in run r) plus a little of each algorithm's own."""
    rng = np.random.default_rng(seed)
    swing = rng.normal(0, 1.0, reps)
    rows = []
    for algo, m in means.items():
        own = rng.normal(0, spread, reps)
        for rep in range(1, reps + 1):
            rows.append({"run": f"{variant}-{algo}-r{rep}", "algo": algo, "variant": variant, "rep": rep,
                         "goodput_transfer_mbps": m + swing[rep - 1] + own[rep - 1], "subflows": 4,
                         "cc": f"mlab_{algo}",
                         "subflow_ccs": f"mlab_{algo}"})
    return pd.DataFrame(rows)


def _controlled(tp, cross=REF_CROSS, bottleneck=None):
    net = {"bottleneck": {"link": bottleneck}} if bottleneck else {}
    return {"throughput": tp, "fairness": pd.DataFrame(columns=la.FAIRNESS_COLUMNS),
            "manifest": {"network": net, "parameters": {"cross": cross}, "platform": {"where": "vm"},
                         "git": {"commit": "c" * 40}}}


# the reference: LIA and CS218 at 0.94-0.95 of uncoupled (static), well clear of the report's 1.108 / 1.122
REFERENCE = _runs("static", {"uncoupled": 14.5, "ewtcp": 14.9, "coupled": 7.8, "lia": 13.7, "cs218": 13.8}, 10)
HALF = {"p2": {**REF_CROSS["p2"], "rate": "1.5mbit"}, "p3": {**REF_CROSS["p3"], "rate": "2mbit"}}
MORE = {"p2": {**REF_CROSS["p2"], "rate": "4.5mbit"}, "p3": {**REF_CROSS["p3"], "rate": "6mbit"}}


def _status(controlled):
    dv = la.divergences(REFERENCE, controlled, {"cross": REF_CROSS}).set_index(["algo", "variant"])
    return {a: dv.loc[(a, "static"), "status"] for a in ("lia", "cs218")}


def test_the_rows_without_a_controlled_run_say_what_is_runnable():
    s = _status({})
    assert s["lia"] == s["cs218"] == la.RUNNABLE and s["lia"].startswith("unexplained, tried: nothing controlled yet")
    # a static run with the reference's own cross traffic changes nothing: it is no controlled run
    s = _status({"same": _controlled(_runs("static", {"uncoupled": 14.5, "lia": 16.1, "cs218": 16.3}, 5))})
    assert s["lia"] == la.RUNNABLE


def test_a_cross_traffic_level_that_holds_the_reports_ratio_is_the_cause_and_one_that_excludes_it_is_tried():
    """LIA at 1.11 of uncoupled with 1.5 times the cross traffic (5 tight pairs): its corrected
    interval holds the report's 1.108 and clears the reference's, so the cause is measured;
    CS218 at 0.95 there excludes the report's 1.122: unexplained, and the row says what was tried."""
    tp = _runs("static", {"uncoupled": 12.0, "lia": 13.32, "cs218": 11.4}, 5, spread=0.05)
    s = _status({"cross-1.5": _controlled(tp, MORE)})
    assert s["lia"].startswith("cause measured: the cross traffic at 1.5 times its rate (p2 4.5mbit, p3 6mbit; "
                               "this reference: p2 3mbit, p3 4mbit) (controlled run `controlled/cross-1.5`, "
                               "static variant, 5 pairs)"), s["lia"]
    assert "holds the report's 1.108 and lies above this reference's" in s["lia"]
    assert s["cs218"].startswith("unexplained, tried: the cross traffic at 1.5 times its rate")
    assert "excludes the report's 1.122" in s["cs218"]
    # the figures are the controlled run's own: its means in Mbit/s, its corrected interval
    r = la.controlled_ratio(tp, "cs218", "static")
    assert f"CS218 ALGO {r['algo_mbps']:.2f} against uncoupled {r['uncoupled_mbps']:.2f} Mbit/s, " \
           f"{r['lo']:.2f}–{r['hi']:.2f} of uncoupled" in s["cs218"]
    levels = la.paired_table(tp).level  # Holm over the run's three comparisons: one family
    assert r["pairs"] == 5 and len(levels) == 3 and levels.max() == pytest.approx(1 - 0.05 / 3)


def test_every_controlled_run_that_bears_on_a_row_is_named_and_an_unresolved_one_says_how_many_pairs():
    """Shared bottleneck (every algorithm) and two cross levels, all tried: the row lists each with
    its result; a run whose interval holds the report's ratio but overlaps the reference's is not
    resolved, with the pairs that would resolve it."""
    shared = _runs("shared", {"uncoupled": 3.0, "ewtcp": 3.0, "coupled": 2.8, "lia": 2.85, "cs218": 2.9}, 6,
                   spread=0.05)
    wide = _runs("static", {"uncoupled": 14.0, "lia": 14.9, "cs218": 13.3}, 3, spread=0.6, seed=5)
    ctl = {"cross-half": _controlled(wide, HALF),
           "shared-bottleneck": _controlled(shared, bottleneck="rate=5mbit,delay=0ms,queue=50")}
    s = _status(ctl)
    assert s["lia"].startswith("unexplained, tried: the cross traffic at 0.5 times its rate")
    assert "all subflows and the cross traffic through one 5 Mbit/s link (controlled run " \
           "`controlled/shared-bottleneck`, shared variant, 6 pairs)" in s["lia"]
    lia_half = la.controlled_ratio(wide, "lia", "static")
    assert lia_half["lo"] <= 1.108 <= lia_half["hi"]  # 3 loose pairs hold everything
    assert "but overlaps this reference's" in s["lia"] and "pairs would" in s["lia"]
    dv = la.divergences(REFERENCE, ctl, {"cross": REF_CROSS})
    coupled = dv[dv.algo == "coupled"].status.iloc[0]
    assert "shared-bottleneck" in coupled and "cross-half" not in coupled  # the cross sweep ran without it


def test_the_report_shows_each_controlled_run_with_what_it_changed(tmp_path):
    tp = _runs("static", {"uncoupled": 12.0, "lia": 13.32, "cs218": 11.4}, 5, spread=0.05)
    lines = "\n".join(la.controlled_section({"cross-1.5": _controlled(tp, MORE)}, {"cross": REF_CROSS}))
    assert "## Controlled run `controlled/cross-1.5`" in lines
    assert "**The cross traffic at 1.5 times its rate (p2 4.5mbit, p3 6mbit; this reference: p2 3mbit, p3 4mbit)**, " \
           "static variant" in lines
    assert "| CS218 ALGO | 11." in lines and "less than uncoupled" in lines


def test_the_manifest_names_every_command_that_resumed_the_sweep(tmp_path):
    for i, (cmd, started) in enumerate([(["mptcplab", "run", "lab2", "--set", "repetitions=6"], "10:00"),
                                        (["mptcplab", "run", "lab2", "--set", "repetitions=6"], "10:01"),
                                        (["mptcplab", "run", "lab2"], "11:00")]):
        d = tmp_path / f"static-uncoupled-r{i + 1}"
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps({"command": cmd, "started": f"2026-11-25T{started}",
                                                     "git": {"commit": "a" * 40, "dirty": False}}))
        (d / "summary.json").write_text("{}")
    inv = la.invocations(tmp_path)
    assert [(e["command"], e["runs"], e["commits"]) for e in inv] == [
        ("mptcplab run lab2 --set repetitions=6", 2, ["a" * 12]), ("mptcplab run lab2", 1, ["a" * 12])]


def test_the_shipped_report_is_what_the_analysis_makes_of_the_shipped_tables():
    """solutions/results/lab2/paper-vs-this-run.md regenerates byte for byte from the committed
    tables and controlled runs (`mptcplab notebooks reference lab2 solutions/results/lab2 --report-only`)."""
    ref = Path(__file__).parents[2] / "solutions" / "results" / "lab2"
    assert la.report(ref) == (ref / "paper-vs-this-run.md").read_text(), \
        "stale: run `mptcplab notebooks reference lab2 solutions/results/lab2 --report-only` and commit"


def test_a_re_made_reference_reports_the_controlled_runs_kept_beside_it(tmp_path, monkeypatch):
    """`notebooks reference lab2 SWEEP` into a reference that keeps controlled/: its report is made
    there, so the divergence rows keep their controlled runs (the sweep has none of its own)."""
    import shutil

    monkeypatch.setattr(l2ref, "compact", lambda sweep: None)  # the stand-in sweep holds compact tables only

    shipped = Path(__file__).parents[2] / "solutions" / "results" / "lab2"
    sweep, ref = tmp_path / "sweep", tmp_path / "ref"
    shutil.copytree(shipped, sweep, ignore=shutil.ignore_patterns(la.CONTROLLED_DIR))
    shutil.copytree(shipped / la.CONTROLLED_DIR, ref / la.CONTROLLED_DIR)
    la.export_reference(sweep, ref)
    # then, as `mptcplab notebooks reference` does: the report's claims judged in the reference, its report again
    from mptcplab.judge import claims

    claims.write(get_lab("lab2"), ref)
    (ref / "paper-vs-this-run.md").write_text(la.report(ref))
    assert (ref / "paper-vs-this-run.md").read_text() == (shipped / "paper-vs-this-run.md").read_text()
