"""Lab 1 analysis: DSNs from DSS mappings, the degradation region, the figures and the report,
on synthetic inputs where the answer is known and on the shipped reference results (a real run)."""

import gzip
import json
import shutil

import numpy as np
import pandas as pd
import pytest

from mptcplab.judge import stats
from mptcplab.labs.lab1 import analysis as la
from mptcplab.labs.lab1 import measure as lm
from mptcplab.labs.lab1 import second_place
from mptcplab.run.lab import REPO_ROOT

REF = REPO_ROOT / "solutions/results/lab1"
has_tshark = shutil.which("tshark") is not None


# ---------------------------------------------------------------- data sequence numbers

def segments(rows):
    """A segment table as packets_from_capture builds it (64-bit DSNs kept exact: no float on the way)."""
    cols = list(zip(*rows))
    return pd.DataFrame({
        "time": cols[0], "stream": cols[1], "seq": cols[2], "len": cols[3],
        "map_dsn": pd.array(list(cols[4]), dtype="UInt64"),
        "map_ssn": pd.array(list(cols[5]), dtype="UInt32"), "map_len": pd.array(list(cols[6]), dtype="UInt32"),
    })


def test_dsn_from_mappings_two_subflows_retransmission_and_no_option():
    base = 2**64 - 3000  # the 64-bit DSN wraps inside this transfer: arithmetic must stay exact
    wrap = lambda x: x % 2**64  # noqa: E731
    pk = segments([
        (0.00, 0, 1, 1000, base, 1, 3000),           # fast subflow, mapping of 3000 bytes
        (0.01, 0, 1001, 1000, None, None, None),      # same mapping, option without it
        (0.02, 1, 1, 1000, wrap(base + 3000), 1, 2000),     # slow subflow carries DSN 3001..5000 (after the wrap)
        (0.03, 0, 2001, 1000, base, 1, 3000),
        (0.04, 0, 3001, 1000, wrap(base + 5000), 3001, 1000),
        (0.05, 1, 1001, 1000, None, None, None),
        (0.30, 1, 1, 1000, wrap(base + 3000), 1, 2000),     # TCP retransmission on the slow subflow
    ])
    dsn = lm.data_sequence_numbers(pk)
    assert list(dsn) == [1, 1001, 3001, 2001, 5001, 4001, 3001]
    assert dsn.dtype == "Int64"


def test_dsn_unknown_without_a_mapping():
    pk = segments([(0.0, 0, 1, 100, None, None, None), (0.1, 0, 101, 100, 10**6, 101, 100)])
    dsn = lm.data_sequence_numbers(pk)
    assert pd.isna(dsn.iloc[0]) and dsn.iloc[1] == 1


def test_reference_packets_are_consistent():
    """In the whole reference run every stream byte was sent once (apart from TCP retransmissions):
    the DSNs tile 1..N with no overlap, and N is the payload the capture holds."""
    d = la.Detail.load(REF)
    p = d.packets
    assert set(p["path"]) == {"fast", "slow"} and p["dsn"].notna().all()
    first = p[~p["tcp_retransmission"]].sort_values("dsn")
    ends = (first["dsn"] + first["len"]).to_numpy()
    assert first["dsn"].iloc[0] == 1 and (first["dsn"].to_numpy()[1:] == ends[:-1]).all()
    total = sum(s["bytes"] for s in d.summary["capture_check"]["subflows"])  # the runner's own count
    assert total == p["len"].sum()
    assert ends[-1] - 1 == first["len"].sum()


@pytest.mark.skipif(not has_tshark, reason="tshark not installed")
def test_packets_from_capture_match_the_exported_table():
    """The capture slice (handshakes + busiest 0.6 s) gives the same DSNs as the whole capture did."""
    d = la.Detail.load(REF)
    sl = lm.packets_from_capture(d.path / "capture-window.pcap", la.path_names(d.manifest), d.summary["t0"])
    win = sl[(sl["time"] > 0.1) & ~sl["tcp_retransmission"]]
    whole = d.packets[~d.packets["tcp_retransmission"]]
    joined = win.merge(whole, on=["stream", "seq"], suffixes=("", "_whole"))
    lo, hi = d.busiest_window()
    in_window = ((whole["time"] > max(lo, 0.1)) & (whole["time"] <= hi + 1e-6)).sum()
    # Every segment the whole capture has in the window is in the slice, at the same time.
    assert len(joined) == len(win) == in_window > 500
    assert (joined["time"] - joined["time_whole"]).abs().max() < 1e-5
    # The slice starts its DSN count at its own first segment, so compare differences.
    diff = (joined["dsn"] - joined["dsn_whole"]).unique()
    assert len(diff) == 1


# ---------------------------------------------------------------- the sweep

def synthetic_sweep(mptcp_mbps):
    rows = []
    for method in ("wmem", "sndbuf"):
        for b, m in mptcp_mbps.items():
            for rep in (1, 2, 3):
                rows += [{"method": method, "buffer_bytes": b, "config": "tcp-fast", "rep": rep,
                          "goodput_transfer_mbps": 95 + rep / 10},
                         {"method": method, "buffer_bytes": b, "config": "tcp-slow", "rep": rep,
                          "goodput_transfer_mbps": 40.0},
                         {"method": method, "buffer_bytes": b, "config": "mptcp", "rep": rep,
                          "goodput_transfer_mbps": m + rep}]
    return pd.DataFrame(rows)


def test_degradation_region_and_ci():
    sweep = synthetic_sweep({65536: 30, 131072: 60, 262144: 120, 1048576: 180})
    assert la.degradation_region(sweep) == [65536, 131072]
    t = la.throughput_table(sweep)
    row = t[(t.method == "wmem") & (t.buffer_bytes == 65536) & (t.config == "mptcp")].iloc[0]
    assert row["mean"] == pytest.approx(32) and row["std"] == pytest.approx(1)
    assert row["ci95"] == pytest.approx(4.3027 / np.sqrt(3), rel=1e-4)
    assert la.degradation_region(synthetic_sweep({65536: 100, 1048576: 180})) == []


def test_throughput_figure_has_a_panel_per_method_and_the_region_shaded():
    sweep = synthetic_sweep({65536: 30, 131072: 60, 262144: 120, 1048576: 180})
    fig = la.fig_throughput(sweep)
    by_axis = {}
    for tr in fig.data:
        by_axis.setdefault(tr.xaxis, []).append(tr.name)
    assert by_axis == {"x": ["tcp-fast", "tcp-slow", "mptcp"], "x2": ["tcp-fast", "tcp-slow", "mptcp"]}
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert sorted({r.xref for r in rects}) == ["x", "x2"] and len(rects) == 4
    for r in rects:  # each band covers a degraded size and no healthy one
        assert r.x0 < 131072 * 1.5 and r.x1 <= np.sqrt(131072 * 262144) + 1
    assert any("64 KiB to 128 KiB" in (a.text or "") for a in fig.layout.annotations)
    ci = la.fig_throughput(sweep, error="ci95")
    assert ci.data[2].error_y.array[0] == pytest.approx(4.3027 / np.sqrt(3), rel=1e-4)
    with pytest.raises(ValueError):
        la.fig_throughput(sweep, error="sem")


def test_effective_buffer_figure_puts_both_methods_on_the_msk_buffer_axis():
    sweep = la.load_sweep(REF)
    fig = la.fig_effective_buffer(sweep, la.Detail.load(REF).manifest)
    xs = {t.name: list(t.x) for t in fig.data}
    wm = sweep[(sweep.method == "wmem") & (sweep.config == "mptcp")]
    assert sorted(set(wm["sndbuf_effective"])) == xs["MPTCP, tcp_wmem = B B B"]
    assert la.slow_path_bdp(rtt_ms=80) == pytest.approx(100e6 * 1448 / 1514 / 8 * 0.08)


def test_reference_sweep_loads_and_shows_degradation():
    sweep = la.load_sweep(REF)
    assert {"method", "buffer_bytes", "config", "rep", "goodput_transfer_mbps"} <= set(sweep.columns)
    assert sweep["buffer_bytes"].dtype == np.int64
    assert la.degradation_region(sweep, "wmem")
    assert (sweep.loc[sweep.config != "mptcp", "goodput_transfer_mbps"] <= la.LINK_MBPS).all()


# ---------------------------------------------------------------- the detailed run

def test_cwnd_drops_and_busiest_window():
    probe = pd.DataFrame({"time": np.arange(8.0), "path": ["slow"] * 8,
                          "snd_cwnd": [10, 20, 40, 20, 30, 40, 39, 10]})
    assert lm.cwnd_drops(probe) == {"slow": 2}
    d = la.Detail(REF, {"duration_s": 10}, {}, pd.DataFrame(), probe,
                  pd.DataFrame({"start": [1.0, 5.0, 5.1, 5.2, 5.5, 9.0], "end": [1.1, 5.05, 5.15, 5.3, 5.6, 9.1],
                                "duration_s": [0.1, 0.05, 0.05, 0.1, 0.1, 0.1]}), {})
    assert d.busiest_window() == (5.0, 5.6)


def test_reference_figures_are_built_from_the_run():
    figs = la.figures(REF)
    assert len(figs) == len(la.FIGURE_NAMES) == 6
    d = la.Detail.load(REF)
    f4, f5, f6, f10, controls = figs[1:]
    assert {t.name for t in f4.data} == {"fast subflow", "slow subflow"}
    assert "MPTcpExtMPTCPRetrans" in f5.layout.title.text
    assert {t.name for t in f6.data if t.showlegend is not False} == {"fast subflow", "slow subflow"}
    assert d.method in f10.layout.title.text and f"{len(d.waits)} in" in f10.layout.title.text
    # Fig. 4 plots this run's DSNs, not a made-up curve
    ys = np.concatenate([np.asarray(t.y, dtype=float) for t in f4.data])
    assert ys.max() == pytest.approx(d.packets["dsn"].max() / 1e6, rel=0.01)
    assert d.label in {t.name for t in controls.data}  # the degraded run, with or without controls beside it


def test_report_names_kernel_place_and_paper_values():
    text = la.report(REF)
    d = la.Detail.load(REF)
    assert d.manifest["platform"]["kernel_release"] in text
    assert "User-Mode Linux" in text or "native" in text
    for paper_value in ("46.8", "278", "28 penalisations", "700"):
        assert paper_value in text
    assert f"{len(d.waits)} in" in text and d.method in text
    assert text.count("\n|") >= 8


# ---------------------------------------------------------------- export

@pytest.mark.skipif(not has_tshark, reason="tshark not installed")
@pytest.mark.slow  # tshark over the reference capture, then every figure as a PNG
def test_export_reference_round_trip(tmp_path):
    """A sweep directory laid out as the runner writes it (capture.pcap, tcp_probe.csv) exports to
    the compact layout, which loads to the same analysis."""
    src = tmp_path / "run"
    ref_det = la.find_detail(REF)
    det = src / ref_det.name
    det.mkdir(parents=True)
    for name in ("summary.json", "manifest.json", "counters.json", "sndbuf_waits.csv", "intervals.csv"):
        shutil.copy2(ref_det / name, det / name)
    shutil.copy2(ref_det / "capture-window.pcap", det / "capture.pcap")
    with gzip.open(ref_det / "tcp_probe.csv.gz", "rt") as f:
        (det / "tcp_probe.csv").write_text(f.read())
    shutil.copy2(REF / "sweep.csv", src / "sweep.csv")
    (src / "verify").mkdir()
    for name in ("summary", "manifest"):
        shutil.copy2(REF / f"verify-{name}.json", src / "verify" / f"{name}.json")

    out = la.export_reference(src, tmp_path / "ref")
    assert (out / "paper-vs-this-run.md").read_text().startswith("# Lab 1: paper vs this run")
    assert {p.name for p in (out / "figures").iterdir()} == {f"{n}.png" for n in la.FIGURE_NAMES} | {
        "mptcp-vs-effective-buffer.png"}
    assert not (out / det.name / "capture.pcap").exists() and (out / det.name / "capture-window.pcap").exists()
    again = la.Detail.load(out)
    assert len(again.packets) == len(la.Detail.load(src).packets)
    assert json.loads((out / det.name / "summary.json").read_text())["detail"] is True


def test_paper_point_table_gives_each_scheduler_its_mean_and_ci():
    import pandas as pd
    from mptcplab.labs.lab1 import paper_point as la

    rows = []
    for rep, (d, m, rp, tcp) in enumerate([(140, 120, 60, 94), (150, 118, 50, 95), (145, 122, 55, 94)], 1):
        for sched, mbps, opp in (("default", d, 0), ("minrtt", m, 0), ("minrtt+rp", rp, 30 + rep)):
            rows.append({"run": f"paper-1M-mptcp-{sched}-r{rep}", "buffer_bytes": 1 << 20, "config": "mptcp",
                         "scheduler": sched, "min_tso_segs": "64", "goodput_transfer_mbps": mbps, "rp_opp_retrans": opp,
                         "rp_penalised": opp // 2, "mptcp_retrans": 0})
        rows.append({"run": f"paper-1M-tcp-fast-r{rep}", "buffer_bytes": 1 << 20, "config": "tcp-fast",
                     "scheduler": None, "min_tso_segs": "64", "goodput_transfer_mbps": tcp})
        rows.append({"run": f"tso2-128K-mptcp-r{rep}", "buffer_bytes": 1 << 17, "config": "mptcp",
                     "scheduler": None, "min_tso_segs": "2", "goodput_transfer_mbps": 70.0})
    runs = pd.DataFrame(rows)
    runs.insert(0, "group", ["tso" if r.startswith("tso") else "schedulers" for r in runs["run"]])
    t = la.paper_point_table(runs).set_index(["group", "config", "scheduler"])
    rp = t.loc[("schedulers", "mptcp", "minrtt+rp")]
    assert rp["n"] == 3 and rp["mean"] == 55 and rp["opp_retrans"] == 32
    assert abs(rp["ci95"] - stats.t975(2) * 5 / 3 ** 0.5) < 1e-9  # t(2) x sd / sqrt(n)
    assert t.loc[("schedulers", "tcp-fast", "")]["mean"] == 94 + 1 / 3
    text = la.paper_point_markdown(runs)
    assert "| paper: MPTCP (out-of-tree kernel) | minRTT + RP | 5 | 46.8 | ± 4.4 |" in text
    assert "| this run: MPTCP | minrtt+rp | 3 | 55.0 |" in text and "| 128 KiB | mptcp | 2 | 3 | 70.0 |" in text
    v = la.paper_verdicts(runs).set_index("comparison")
    assert v.loc["MPTCP minrtt+rp - single-path TCP (fast)", "verdict"] == "MPTCP slower"
    assert v.loc["MPTCP minrtt+rp - default", "m"] == 6  # one family: the table's six comparisons
    assert "Holm-corrected over this table's 6 comparisons" in text
    # the tso control with only one setting has no comparison, and a held group gets its own table
    held = runs[runs["group"] == "schedulers"].assign(group="held", run=lambda r: "paper-sndbuf-" + r["run"])
    text = la.paper_point_markdown(pd.concat([runs, held]))
    assert "## The paper's 1 MiB held: SO_SNDBUF 1 MiB" in text and text.count("comparisons;") == 2


def test_a_quick_runs_verdicts_say_why_none_is_corrected_and_rp_shows_only_under_minrtt(tmp_path):
    """Walkthrough 4: a quick run (one run per side) read "Holm-corrected over this table's 0
    comparisons" above three rows, and its `default` run showed minrtt_rp_applied 1 (what the
    network's switch held: RP steers the minrtt scheduler only)."""
    import pandas as pd
    from mptcplab.labs.lab1 import paper_point as la

    rows = [("paper-1M-mptcp-default-r1", "mptcp", "default", "default", "1", 167.0),
            ("paper-1M-mptcp-minrtt+rp-r1", "mptcp", "minrtt+rp", "minrtt", "1", 165.0),
            ("paper-1M-tcp-fast-r1", "tcp-fast", None, None, None, 95.0)]
    pd.DataFrame(rows, columns=["run", "config", "scheduler", "scheduler_applied", "minrtt_rp_applied",
                                "goodput_transfer_mbps"]).assign(
        group="schedulers", buffer_bytes=1 << 20, min_tso_segs="64", rp_opp_retrans=0, rp_penalised=0,
        mptcp_retrans=0).to_csv(tmp_path / "paper-point.csv", index=False)
    runs = la.load_paper_point(tmp_path)
    assert runs.set_index("run")["minrtt_rp_applied"].isna().to_dict() == {
        "paper-1M-mptcp-default-r1": True, "paper-1M-mptcp-minrtt+rp-r1": False, "paper-1M-tcp-fast-r1": True}
    text = la.paper_point_markdown(runs)
    assert "none of this table's 3 comparisons has two runs or more per side, so none has an interval" in text
    assert "over this table's 0" not in text and text.count("| too few runs |") == 3


def test_paper_point_export_is_compact_with_provenance_and_checked(tmp_path):
    """The compact paper point: rows, one provenance row per run, one manifest; `mptcplab check`
    judges its single-path rows against physics, and the reference finds it in paper-point/."""
    import pandas as pd
    from mptcplab.commands.check import check_results
    from mptcplab.labs.lab1 import paper_point as la

    manifest = json.loads((REF / "detail-wmem-32K-mptcp" / "manifest.json").read_text())
    src = tmp_path / "run"
    for name, config, method, sched, mbps in (("paper-1M-mptcp-minrtt+rp-r1", "mptcp", "wmem", "minrtt+rp", 160.0),
                                              ("paper-1M-tcp-fast-r1", "tcp-fast", "wmem", None, 95.5),
                                              ("paper-sndbuf-512K-mptcp-minrtt+rp-r1", "mptcp", "sndbuf", "minrtt+rp", 120),
                                              ("tsokernel-1M-tcp-slow-r1", "tcp-slow", "wmem", None, 99.0)):
        (src / name).mkdir(parents=True)
        (src / name / "manifest.json").write_text(json.dumps(manifest))
        buf = 524288 if method == "sndbuf" else 1 << 20
        (src / name / "summary.json").write_text(json.dumps({
            "part": "paper_point", "method": method, "buffer_bytes": buf, "config": config, "scheduler": sched,
            "rep": 1, "goodput_transfer_mbps": mbps, "sndbuf_effective": 2 * buf if method == "sndbuf" else buf,
            "min_tso_segs": "2" if name.startswith("tso") else "64", "rp_opp_retrans": 3}))
    dest = la.export_paper_point(src, tmp_path / "ref" / la.COMPACT_DIR)
    assert sorted(p.name for p in dest.iterdir()) == ["manifest.json", "paper-point.csv", "paper-point.md",
                                                      "runs-manifest.csv"]
    prov = pd.read_csv(dest / "runs-manifest.csv")
    assert len(prov) == 4 and set(prov["kernel"]) == {manifest["platform"]["kernel_release"]}
    again = la.load_paper_point(tmp_path / "ref")  # found in the reference's paper-point/
    assert list(again["group"]) == ["schedulers", "schedulers", "held", "tso"]
    assert "Linux " in (dest / "paper-point.md").read_text()  # the setting, from the kept manifest
    bad = [v for v in check_results(tmp_path / "ref") if not v.ok]
    # tcp-slow at 99 Mbit/s is above its link's ceiling (its window bound, (1 MiB + 64 KiB) / 80 ms, is 111)
    assert len(bad) == 1 and all("tsokernel-1M-tcp-slow-r1" in v.check for v in bad)


def test_second_place_agreement_sets_each_places_ratio_beside_the_reference(tmp_path):
    """A scaled paper point kept beside the reference (dest/controlled/NAME) gets its MPTCP / TCP
    ratio with its interval beside the reference's, and one Holm family: each ratio against 1, each
    controlled run against the reference and against the other at the same scale."""
    ref = tmp_path / "ref"
    shutil.copytree(REF / "paper-point", ref / "paper-point")
    assert la.agreement_markdown(ref) == ""  # the reference alone: nothing to set beside it
    man = json.loads((REF / "paper-point" / "manifest.json").read_text())
    for name, where, mptcp, tcp in (("vm-scaled", "vm", [8.6, 8.8, 8.5, 8.9], [4.70, 4.72, 4.69, 4.71]),
                                    ("uml-scaled", "uml", [8.7, 8.9, 8.8, 8.6], [4.71, 4.70, 4.72, 4.70])):
        d = ref / "controlled" / name
        d.mkdir(parents=True)
        m = json.loads(json.dumps(man))
        m["platform"]["where"] = where
        for p in m["network"]["paths"]:
            p["link"] = p["link"].replace("100mbit", "5mbit")
        m["parameters"]["scale"] = 20
        (d / "manifest.json").write_text(json.dumps(m))
        rows = [{"group": "schedulers", "run": f"paper-52429-{c}-r{i}", "method": "wmem", "buffer": "52429", "buffer_bytes": 52429,
                 "config": c, "scheduler": "default" if c == "mptcp" else None, "rep": i, "goodput_transfer_mbps": v}
                for c, vals in (("mptcp", mptcp), ("tcp-fast", tcp)) for i, v in enumerate(vals, 1)]
        pd.DataFrame(rows).to_csv(d / "paper-point.csv", index=False)
    table, verdicts = la.agreement(second_place.datasets(ref))
    assert list(table["name"]) == ["reference", "uml-scaled", "vm-scaled"]
    assert list(table["scale"]) == [1, 20, 20] and table["rate_mbps"].tolist() == [100, 5, 5]
    ref_row = table.iloc[0]
    pp = pd.read_csv(REF / "paper-point" / "paper-point.csv")  # the committed reference's default / TCP
    pp = pp[(pp.group == "schedulers") & (pp.method == "wmem")]
    mean = {c: pp[(pp.config == c) & (pp.scheduler.fillna("default") == "default")].goodput_transfer_mbps.mean() for c in ("mptcp", "tcp-fast")}
    assert ref_row["ratio"] == pytest.approx(mean["mptcp"] / mean["tcp-fast"], abs=0.01)
    assert ref_row["ratio_lo"] < ref_row["ratio"] < ref_row["ratio_hi"]
    assert list(verdicts["comparison"]) == [
        "reference: MPTCP / TCP against 1", "uml-scaled: MPTCP / TCP against 1", "vm-scaled: MPTCP / TCP against 1",
        "uml-scaled / reference: ratio of their MPTCP / TCP", "vm-scaled / reference: ratio of their MPTCP / TCP",
        "vm-scaled / uml-scaled: ratio of their MPTCP / TCP"]
    assert (verdicts["m"] == 6).all()
    v = verdicts.set_index("comparison")
    assert v.loc["vm-scaled: MPTCP / TCP against 1", "verdict"] == "MPTCP faster"
    assert v.loc["vm-scaled / uml-scaled: ratio of their MPTCP / TCP", "verdict"] == "no difference resolved"
    text = la.agreement_markdown(ref)
    assert "fast 5 Mbit/s 0 ms, slow 5 Mbit/s 40 ms | 1/20 |" in text and "over these 6 comparisons" in text
    assert v.loc["uml-scaled / reference: ratio of their MPTCP / TCP", "verdict"] in (
        "uml-scaled's higher", "uml-scaled's lower", "no difference resolved")


def test_divergence_reads_the_held_runs_as_cause_measured_or_unexplained():
    """The paper-vs-this-run table's reading of the divergence comes from the verdicts: held at 1 MiB,
    a scheduler no longer above single-path TCP is the measured part; held minrtt+rp above the paper's
    46.8 Mbit/s, as the ledger judges it, leaves the rest unexplained; without the held runs nothing is
    measured."""
    runs = la.load_paper_point(REF)
    runs = runs[runs["group"] == "schedulers"]
    assert la.divergence(runs).startswith("unexplained, tried: minRTT with and without RP")
    held = runs.assign(group="held", run=lambda r: "paper-sndbuf-" + r["run"], sndbuf_effective=1 << 20)
    same = la.divergence(pd.concat([runs, held]))
    assert same.startswith("unexplained, tried:") and "held at 1,048,576 B" in same
    down = held.copy()
    down.loc[down["scheduler"] == "minrtt", "goodput_transfer_mbps"] = [80.0, 81.0, 79.5, 80.5, 80.2]
    text = la.divergence(pd.concat([runs, down]), {"status": "does not hold", "interval": [60.0, 80.0]})
    assert text.startswith("cause measured, in part:") and "minrtt below TCP" in text
    assert text.endswith("held minrtt+rp stays above the paper's 46.8 Mbit/s, corrected interval +60.0..+80.0 Mbit/s")
    unresolved = la.divergence(pd.concat([runs, down]), {"status": "not resolved", "interval": [-3.0, 9.0],
                                                         "runs_needed": 14})
    assert unresolved.endswith("not resolved, corrected interval -3.0..+9.0 Mbit/s, 14 held runs needed")
    assert la.divergence(pd.concat([runs, down])).endswith("(no ledger record)")


def test_subflow_inflight_reads_each_subflows_share_from_the_observed_run():
    """At tcp_wmem 1 MiB (3 MiB for the MPTCP socket upstream) the reference's observed default run
    kept the fast subflow busy in nearly every sample (all but 1 of 63 in the reference of
    2026-11-28) while the slow one held about 1 MiB."""
    t = la.subflow_inflight(REF / "paper-point" / "paper-detail-1M-mptcp-default").set_index("path")
    assert t.loc["fast", "idle_share"] < 0.05 and t.loc["fast", "samples"] > 20
    assert 0.9e6 < t.loc["slow", "inflight_median"] <= t.loc["slow", "inflight_max"] < 1.2e6


def test_the_shipped_report_is_what_the_analysis_makes_of_the_shipped_tables():
    """solutions/results/lab1/paper-vs-this-run.md regenerates byte for byte from the committed
    tables (`mptcplab notebooks reference lab1 solutions/results/lab1 --report-only`): report()'s
    sections assembled in order say what the shipped report says."""
    assert la.report(REF) == (REF / "paper-vs-this-run.md").read_text(), \
        "stale: run `mptcplab notebooks reference lab1 solutions/results/lab1 --report-only` and commit"
