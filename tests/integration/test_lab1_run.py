"""Lab 1 for real: its quick run (from the session's `mptcplab reproduce --quick`) finds the
degradation and records every figure input."""

import json

import pandas as pd
import pytest

from mptcplab.labs.lab1 import analysis as la
from mptcplab.run.results import Sweep

# The session's quick reproduction (every lab, ~30 min on a slow 2-core host) runs inside the
# first of these tests: it needs more than the suite's default 900 s.
pytestmark = [pytest.mark.integration, pytest.mark.timeout(3600)]


@pytest.fixture(scope="module")
def sweep_dir(reproduced):
    out, res = reproduced
    sweep = out / "lab1-quick"
    assert (sweep / "lab-summary.json").exists(), res.stdout[-3000:] + res.stderr[-3000:]
    return sweep


def test_setup_verified(sweep_dir):
    checks = json.loads((sweep_dir / "verify" / "summary.json").read_text())["checks"]
    assert checks["passed"] and checks["mptcp"]["one_per_path"]


def test_degradation_region_found(sweep_dir):
    table = Sweep(sweep_dir).summaries()
    runs = table[table["config"].notna() & table["detail"].isna()] if "detail" in table else table
    mean = runs.pivot_table(index=["method", "buffer_bytes"], columns="config", values="goodput_transfer_mbps")
    assert (mean["mptcp"] < mean["tcp-fast"]).any(), mean
    assert (runs["goodput_transfer_mbps"] <= 200).all()  # never above the two links together
    assert (runs[runs["config"] == "mptcp"]["subflows"] == 2).all()


def test_detail_run_has_every_figure_input(sweep_dir):
    detail = la.find_detail(sweep_dir)
    summary = json.loads((detail / "summary.json").read_text())
    assert summary["capture_check"]["subflows_with_data"] == 2
    probe = pd.read_csv(detail / "tcp_probe.csv")
    assert probe.groupby("sport").size().ge(10).sum() == 2  # cwnd samples for both subflows (Fig. 6/9)
    waits = pd.read_csv(detail / "sndbuf_waits.csv")
    assert len(waits) > 0 and waits["method"].iloc[0] in ("kprobe:sk_stream_wait_memory", "sched_switch:kstack")
    counters = json.loads((detail / "counters.json").read_text())
    assert "MPTcpExtMPJoinSynAckRx" in counters["delta"]
    assert (detail / "capture.pcap").stat().st_size > 100_000  # Fig. 4/5 come from the capture
    manifest = json.loads((detail / "manifest.json").read_text())
    assert manifest["observation"]["tracing"]["events"]["tcp_probe"]
    size = summary["buffer_bytes"]  # the manifest records the network after the run's buffer was set
    assert manifest["network"]["sysctls"]["snd"]["net.ipv4.tcp_wmem"] == f"{size} {size} {size}"


def test_control_runs_and_kernel_view(sweep_dir):
    """The control runs ran with the same observation, and every sweep run kept the kernel's view."""
    details = la.load_details(sweep_dir)
    assert details[0].control is None and {d.control for d in details[1:]} == {"mptcp@largest", "tcp-fast"}
    for d in details:
        assert len(d.waits) > 0 and len(d.probe) > 0, d.path.name
    table = la.wait_table(details, la.load_sweep(sweep_dir))
    assert (table["untraced_runs"] > 0).all()  # each has untraced sweep runs at its point: the cost of tracing
    sweep = la.load_sweep(sweep_dir)
    assert (sweep["ss_samples"] > 0).all() and sweep["sndbuf_effective"].notna().all()
    slow = sweep[sweep["config"] == "tcp-slow"]
    assert slow["min_rtt_ms_slow"].between(79, 90).all() and slow["inflight_max_slow"].notna().all()


def test_figures_and_report_from_its_own_capture(sweep_dir):
    figs = la.figures(sweep_dir)
    assert len(figs) == len(la.FIGURE_NAMES) and all(f.data for f in figs)
    text = (sweep_dir / "paper-vs-this-run.md").read_text()
    assert "| quantity | paper | this run |" in text
    assert "User-Mode Linux kernel" in text or "native kernel" in text
