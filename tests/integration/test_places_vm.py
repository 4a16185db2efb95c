"""The VM place on a real stock kernel (virtme-ng; KVM if it boots, else QEMU TCG), and guests
that die with a SIGKILLed kit in both guest places.

Skipped, with the reason, where the host has no VM place (no kernel package could be installed,
no QEMU, no virtme-ng): `mptcplab doctor` prints the same reason.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mptcplab import places
from mptcplab.places import lifetime, vm

pytestmark = pytest.mark.integration
MPTCPLAB = [sys.executable, "-m", "mptcplab.cli"]
HAVE_VM, WHY_NOT = vm.available()
needs_vm = pytest.mark.skipif(not HAVE_VM, reason=f"no VM place on this host: {WHY_NOT}")


def netem_delay_ms(qdiscs: list[str], dev: str) -> float | None:
    """The delay of the netem qdisc on `dev`, as `tc qdisc show` printed it (to 3 significant
    digits: "delay 38.7ms"), in ms."""
    import re

    for q in qdiscs:
        m = re.search(r"\bdelay ([\d.]+)(us|ms|s)\b", q)
        if q.startswith("qdisc netem") and f" dev {dev} " in q and m:
            return float(m.group(1)) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    return None


def leftovers() -> list[str]:
    left = [f"guest pid {p}" for m in places.guest_markers() for p in lifetime.guest_pids(m)]
    left += [f"dir {d}" for d in vm.cache_dir().glob(f"{vm.MARKER}*")] if vm.cache_dir().exists() else []
    left += [ln for ln in Path("/proc/self/mounts").read_text().splitlines() if "mlab" in ln]
    left += [ns for ns in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
             if ns.startswith("mlab-")]
    return left


@needs_vm
@pytest.mark.timeout(1500)
def test_example_in_the_vm(tmp_path):
    out = tmp_path / "example"
    res = subprocess.run(MPTCPLAB + ["example", "--where", "vm", "--out", str(out), "--seconds", "4"],
                         capture_output=True, text=True, timeout=1400)
    said = res.stdout + res.stderr
    if res.returncode == 4:
        # The place failed the physics check (on the host's clock a TCG guest added 2-4 ms to every RTT;
        # counting instructions, vm.TCG_CLOCK, next to nothing):
        # it must refuse in one line naming the check, the measured value and the bound, and
        # leave nothing behind. A pass is checked in full below.
        refusal = [ln for ln in said.splitlines() if "physics check failed in vm" in ln]
        assert refusal and "measured" in refusal[0] and "bound" in refusal[0], said[-3000:]
        assert leftovers() == []
        pytest.xfail(f"the VM place refused its physics check here: {refusal[0]}")
    assert res.returncode == 0, said[-3000:]
    (run,) = [d for d in out.iterdir() if d.is_dir()]
    manifest = json.loads((run / "manifest.json").read_text())
    checks = json.loads((run / "summary.json").read_text())["checks"]
    assert manifest["platform"]["where"] == "vm" and manifest["platform"]["vm_kernel"]
    assert manifest["clock"]["host_wall_s"] > 0  # wall-clock vs guest time, as in UML
    # The slow path's netem delays as configured (40 ms) less what the place's own latency took
    # out of them (latency.py: none where it adds too little), as the manifest records it.
    slow = next(p for p in manifest["network"]["paths"] if p["name"] == "slow")
    applied = (slow["own_latency"] or {}).get("netem_delay_ms", {}).get("link", 40.0)
    assert 0 < applied <= 40.0, slow
    assert netem_delay_ms(manifest["network"]["qdiscs"], "b-slow") == pytest.approx(applied, rel=5e-3)
    assert checks["passed"] and checks["mptcp"]["subflows_with_data"] == 2
    assert "RTT" in res.stdout and leftovers() == []


def _start(where: str, tmp_path: Path) -> subprocess.Popen:
    # We hold the machine's experiment lock; the child uses a private one.
    env = {**os.environ, "MPTCPLAB_LOCK": str(tmp_path / "child.lock")}
    proc = subprocess.Popen(MPTCPLAB + ["example", "--where", where, "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.time() + 900
    for line in proc.stdout:  # until the experiment inside the guest is under way
        if "verifying" in line or time.time() > deadline:
            break
    return proc


@pytest.mark.parametrize("where", [
    pytest.param("vm", marks=needs_vm),
    pytest.param("uml", marks=pytest.mark.skipif(not __import__("mptcplab.places.uml_kernel").places.uml_kernel.kernel_path(),
                                                 reason="the UML kernel is not built")),
])
@pytest.mark.timeout(1500)
def test_sigkill_kills_the_guest_and_clean_leaves_nothing(tmp_path, where):
    from mptcplab.run.results import experiment_lock

    with experiment_lock("test: waiting for running experiments before testing clean"):
        proc = _start(where, tmp_path)
        guests = [p for m in places.guest_markers() for p in lifetime.guest_pids(m)]
        assert guests, "the guest should be running"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        # The guest dies with the kit, before anyone cleans: no second experiment can meet it.
        assert lifetime.wait_gone(guests, 20) == [], "the guest outlived the SIGKILLed kit"
        res = subprocess.run(MPTCPLAB + ["clean", "--force"], capture_output=True, text=True,
                                 timeout=120)  # --force: this test holds the lock itself
        assert res.returncode == 0, res.stderr
        assert leftovers() == []
