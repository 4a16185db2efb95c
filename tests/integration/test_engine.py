"""The engine on a real kernel: the two-path example, bad input, and cleanup after SIGKILL.

These build real namespaces and, where the host has no netem, boot the kit's UML kernel
(built on first use and cached).
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration
MPTCPLAB = [sys.executable, "-m", "mptcplab.cli"]


def kit_leftovers() -> list[str]:
    left = [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
            if ns.startswith("mlab-")]
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if b"umid=mlab-" in (proc / "cmdline").read_bytes():
                    left.append(f"UML pid {proc.name}")
            except OSError:
                pass
    inst = Path("/sys/kernel/tracing/instances")
    left += [f"trace instance {p.name}" for p in inst.iterdir() if p.name.startswith("mlab")] if inst.exists() else []
    return left


def test_example_two_paths_verified_and_recorded(tmp_path):
    out = tmp_path / "example"
    res = subprocess.run(MPTCPLAB + ["example", "--out", str(out), "--seconds", "5"], capture_output=True,
                         text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    (run,) = [d for d in out.iterdir() if d.is_dir()]
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    checks = summary["checks"]
    assert checks["passed"]
    # single TCP over a 100 Mbit/s path reaches >= 95% of the link rate
    assert checks["paths"]["fast"]["link_utilisation"] >= 0.95
    # 40 ms one-way delay shows an 80 ms RTT within 2%
    assert abs(checks["paths"]["slow"]["ping"]["median_ms"] - 80) <= 1.6
    # MPTCP used exactly two subflows, one per path, proven from its own capture
    assert checks["mptcp"]["subflows_with_data"] == 2 and checks["mptcp"]["one_per_path"]
    assert checks["mptcp"]["mp_join_syns"] == 1
    # ... and the manifest records where and how
    assert manifest["platform"]["where"] in ("native", "uml")
    if manifest["platform"]["where"] == "uml":  # booted so that idle skips to the next timer
        assert manifest["platform"]["uml_clock"] == "time-travel"
    net = manifest["network"]
    assert any("netem" in q and "delay 40ms" in q for q in net["qdiscs"])
    assert any("subflow" in e for e in net["mptcp"]["snd"]["endpoints"])
    assert net["sysctls"]["snd"]["net.mptcp.enabled"] == "1"
    assert manifest["tools"]["tcpdump"] and manifest["git"]["commit"]
    assert kit_leftovers() == []


def test_bad_input_exit_2_and_nothing_configured():
    before = kit_leftovers()
    res = subprocess.run(MPTCPLAB + ["topology", "--path", "slow=rate=100mbit,delay=-40ms"], capture_output=True,
                         text=True)
    assert res.returncode == 2 and "bad delay '-40ms' (negative)" in res.stderr
    res = subprocess.run(MPTCPLAB + ["run", "lab1", "--where", "elsewhere"], capture_output=True, text=True)
    assert res.returncode == 2 and "--where 'elsewhere'" in res.stderr
    res = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *MPTCPLAB,
                          "example", "--where", "native", "--out", "/tmp/never"], capture_output=True, text=True,
                         env={**os.environ, "HOME": "/tmp"})
    assert res.returncode == 2 and "needs root" in res.stderr, res.stderr
    assert kit_leftovers() == before


@pytest.mark.parametrize("where", ["native", "uml"])
def test_sigkill_then_clean_leaves_nothing(tmp_path, where):
    # `mptcplab clean` removes everything the kit made, other runs' included: wait until no
    # experiment is running (they hold the lock) so this test never kills someone else's run.
    from mptcplab.run.results import experiment_lock

    tmp_before = {p.name for p in Path("/tmp").iterdir()}
    with experiment_lock("test: waiting for running experiments before testing clean"):
        _sigkill_then_clean(tmp_path, where, tmp_before)


def _sigkill_then_clean(tmp_path, where, tmp_before):
    # We hold the machine's experiment lock; the child uses a private one.
    env = {**os.environ, "MPTCPLAB_LOCK": str(tmp_path / "child.lock")}
    if where == "native":
        # A network with rate limits only works on any kernel; the process builds it and sleeps.
        code = ("from mptcplab.net.topology import Topology, NetPath; import time\n"
                "t = Topology('k', ('a', 'b'), [NetPath('p', 'a', 'b', 'rate=10mbit')], netem=False)\n"
                "with t.up() as net:\n"
                "    net.popen('a', ['sleep', '600'])\n"
                "    print('up', flush=True); time.sleep(600)\n")
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout.readline().strip() == "up"
    else:
        proc = subprocess.Popen(MPTCPLAB + ["example", "--where", "uml", "--out", str(tmp_path / "out")],
                                stdout=subprocess.PIPE, text=True, env=env)
        deadline = time.time() + 300
        for line in proc.stdout:  # wait until the experiment inside UML is under way
            if "verifying" in line or time.time() > deadline:
                break
    assert kit_leftovers(), "the experiment should be running"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    res = subprocess.run(MPTCPLAB + ["clean", "--force"], capture_output=True, text=True,
                             timeout=60)  # --force: this test holds the lock itself
    assert res.returncode == 0, res.stderr
    time.sleep(1)
    assert kit_leftovers() == []
    assert not [p.name for p in Path("/tmp").iterdir() if p.name.startswith("mlab-") and p.name not in tmp_before]
