"""Where a lab runs, given what the kernel here can do."""

import pytest

from mptcplab import doctor
from mptcplab.core import kernel
from mptcplab.core.errors import EnvironmentProblem, UsageError
from mptcplab.places.decide import decide


@pytest.fixture
def caps(monkeypatch):
    have = {"netem": False, "bpf_struct_ops": True, "tbf": True, "kprobes": False}
    monkeypatch.setattr(kernel, "has", lambda c: have[c])
    monkeypatch.setattr(kernel, "inside_uml", lambda: False)
    monkeypatch.setattr(kernel, "require_root", lambda: None)
    # The guest places without booting anything: UML is there, the VM is not, nothing measured yet.
    monkeypatch.setattr("mptcplab.places.uml.available", lambda: (True, "test"))
    monkeypatch.setattr("mptcplab.places.vm.available", lambda: (False, "test"))
    monkeypatch.setattr("mptcplab.places.records.load", lambda: [])
    monkeypatch.delenv("MPTCPLAB_WHERE", raising=False)
    return have


def test_auto_prefers_native_netem_else_uml(caps):
    assert decide("auto", ("netem",)).place == "uml"
    caps["netem"] = True
    assert decide("auto", ("netem",)).place == "native"


def test_lab_needing_struct_ops_never_goes_to_uml(caps):
    assert decide("auto", ("bpf_struct_ops",)).place == "native"
    caps["bpf_struct_ops"] = False
    with pytest.raises(EnvironmentProblem, match="no place here honours .*native lacks bpf_struct_ops"):
        decide("auto", ("bpf_struct_ops",))
    with pytest.raises(EnvironmentProblem, match="needs bpf_struct_ops, which uml cannot offer; use --where vm"):
        decide("uml", ("bpf_struct_ops",))


def test_native_without_netem_says_how_to_fix(caps):
    with pytest.raises(EnvironmentProblem, match="lacks netem.*doctor.*--where uml or --where vm"):
        decide("native", ("netem",))


def test_inside_uml_is_native(caps, monkeypatch):
    monkeypatch.setattr(kernel, "inside_uml", lambda: True)
    assert decide("uml", ("netem",)).place == "native"


def test_bad_where(caps):
    with pytest.raises(UsageError, match="auto, native, uml or vm"):
        decide("elsewhere")


def test_vm_when_asked_and_offered(caps, monkeypatch):
    monkeypatch.setattr("mptcplab.places.vm.available", lambda: (True, "test"))
    monkeypatch.setattr("mptcplab.places.vm.capabilities", lambda: {"netem", "tbf", "kprobes", "bpf_struct_ops"})
    monkeypatch.setattr("mptcplab.places.vm.accelerator", lambda: "tcg")
    assert decide("vm", ("netem", "bpf_struct_ops")).place == "vm"
    # auto: Lab 2 (netem for its delays, struct_ops) goes to the VM, the only place honouring both,
    # checked or not (its own setup check runs first); native without netem never runs it
    picked = decide("auto", ("netem", "bpf_struct_ops"), lab="lab2")
    assert picked.place == "vm" and "native lacks netem" in picked.why and "QEMU TCG" in picked.why
    from mptcplab.places.choice import CheckResult

    monkeypatch.setattr("mptcplab.places.records.load",
                        lambda: [CheckResult(place="vm", lab="lab2", passed=False, wall_s=300)])
    with pytest.raises(EnvironmentProblem, match="vm failed its lab2 check.*--recheck"):
        decide("auto", ("netem", "bpf_struct_ops"), lab="lab2")


def test_checks_have_fixes():
    for check in doctor.checks():
        assert check.name and (check.ok or check.fix), check
