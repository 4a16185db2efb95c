"""Lab 1 for real: `mptcplab run lab1 --quick` finds the degradation and records every figure input."""

import json
import subprocess
import sys

import pandas as pd
import pytest

from mptcplab.results import Sweep

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("lab1") / "lab1-quick"
    res = subprocess.run([sys.executable, "-m", "mptcplab.cli", "run", "lab1", "--quick", "--out", str(out)],
                         capture_output=True, text=True, timeout=1200)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return out


def test_setup_verified(sweep_dir):
    checks = json.loads((sweep_dir / "verify" / "summary.json").read_text())["checks"]
    assert checks["passed"] and checks["mptcp"]["one_per_path"]


def test_degradation_region_found(sweep_dir):
    table = Sweep(sweep_dir).summaries()
    runs = table[table["config"].notna() & table["detail"].isna()] if "detail" in table else table
    mean = runs.pivot_table(index=["method", "buffer_bytes"], columns="config", values="mbps")
    assert (mean["mptcp"] < mean["tcp-fast"]).any(), mean
    assert (runs["mbps"] <= 200).all()  # never above the two links together
    assert (runs[runs["config"] == "mptcp"]["subflows"] == 2).all()


def test_detail_run_has_every_figure_input(sweep_dir):
    (detail,) = [d for d in Sweep(sweep_dir).runs() if d.name.startswith("detail-")]
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
