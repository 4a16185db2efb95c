"""`mptcplab doctor` is never silent for minutes (issue 35: a student killed it at 5 min while the VM
place was measured): it says up front what takes long, prints each line as soon as it is known, and
while the VM boots to be probed it says what it is doing, every 30 s, with the time left against the
last measurement on this host (core.eta), or that there is none and what to expect."""

import functools
import logging
import time
from pathlib import Path

from mptcplab import doctor
from mptcplab.core import eta
from mptcplab.places import vm


def slow_probe(monkeypatch, tmp_path, boot_s: float):
    """The VM place with a probe that boots for `boot_s` seconds, then answers; a tick every 0.05 s."""
    monkeypatch.setattr(vm, "kernel", lambda: Path("/boot/vmlinuz-6.12.0-test"))
    monkeypatch.setattr(vm, "cache_dir", lambda: tmp_path)
    monkeypatch.setattr(vm, "accelerator", lambda: "tcg")
    monkeypatch.setattr(vm.eta, "step", functools.partial(eta.step, every=0.05))

    def boot(command, stream, kimg, accel):
        stream.write("[    0.000000] Linux version 6.12\n")
        time.sleep(boot_s)  # the kernel boots under TCG
        stream.write(vm.STARTED + "\n")
        time.sleep(0.1)  # the probe inside
        stream.write('MLAB-CAPS ["kprobes", "netem", "tbf"]\n')
        return 0

    monkeypatch.setattr(vm, "boot", boot)


def test_a_slow_first_probe_says_what_it_does_and_what_to_expect(monkeypatch, tmp_path, caplog):
    slow_probe(monkeypatch, tmp_path, boot_s=0.3)
    with caplog.at_level(logging.INFO, logger="mptcplab"):
        assert vm.guest_capabilities() == {"kprobes", "netem", "tbf"}
    said = [r.getMessage() for r in caplog.records]
    assert "it boots under QEMU TCG, software emulation" in said[0]
    assert "no earlier probe here" in said[0] and "20-40 s" in said[0]  # what to expect, said as such
    assert said[1] == "VM probe of kernel 6.12.0-test"
    ticks = [s for s in said if s == "VM probe of kernel 6.12.0-test  [0m00s, no earlier time here to estimate the rest from]"]
    assert len(ticks) >= 3  # never silent while it boots, in a line short enough to read
    assert any(s.startswith("the VM's kernel is up after") for s in said)
    assert eta.last_took("vm/capabilities/tcg") >= 0.3  # the next first measurement is timed by this one


def test_a_later_probe_gives_the_time_left_from_the_last_one(monkeypatch, tmp_path, caplog):
    eta.remember("vm/capabilities/tcg", 150.0)  # another kernel's probe took 2m30s here
    slow_probe(monkeypatch, tmp_path, boot_s=0.3)
    with caplog.at_level(logging.INFO, logger="mptcplab"):
        vm.guest_capabilities()
    said = [r.getMessage() for r in caplog.records]
    assert "no earlier probe" not in said[0] and said[1] == "VM probe of kernel 6.12.0-test (last time 2m30s)"
    assert any("0m00s, about 2m29s left]" in s or "0m00s, about 2m30s left]" in s for s in said)


def test_doctor_says_up_front_what_takes_long_and_prints_each_line_when_known(monkeypatch):
    monkeypatch.setattr(doctor, "checks", lambda: [doctor.Check("tbf (rate limits)", True)])
    emitted = []

    def places_probed():  # by then the machine's own checks are out
        assert emitted[0] == "[ok     ] tbf (rate limits)"
        return ["  vm     offers: netem yes"]

    monkeypatch.setattr(doctor.overview, "lines", places_probed)
    text, _ = doctor.report(emit=emitted.append)
    assert emitted == text.split("\n")
    assert "cached" in doctor.AHEAD and "every 30 s" in doctor.AHEAD and "loaded" in doctor.AHEAD


def test_each_kernel_feature_names_the_labs_that_need_it():
    checks = {c.name: c for c in doctor.checks()}
    assert "BPF struct_ops congestion control (needed by lab2)" in checks
    assert "MPTCP scheduler minrtt (needed by part of lab1)" in checks
    assert not [name for name in checks if "Lab " in name]  # the labs say what they need; doctor names none
