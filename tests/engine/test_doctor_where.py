"""Where a lab runs, given what the kernel here can do."""

import pytest

from mptcplab import doctor
from mptcplab.core import kernel
from mptcplab.core.errors import EnvironmentProblem, UsageError
from mptcplab.places.decide import decide


@pytest.fixture
def caps(monkeypatch):
    have = {"netem": False, "bpf_struct_ops": True, "tbf": True, "kprobes": False, "minrtt_scheduler": False}
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


def test_lab1_paper_point_needs_the_scheduler_and_auto_says_so_before_any_run(caps, fake_place, monkeypatch):
    """The kit's box before its kernel carries the patch: netem natively, no minrtt, no UML; the only
    other place (the test place) lacks minrtt too. Lab 1 as shipped is refused before anything runs,
    in doctor and by `run`, naming the paper point; without the minRTT runs it runs natively."""
    from mptcplab.run.lab import get_lab
    from mptcplab.run.runner import place_for, run_lab

    caps["netem"] = True
    monkeypatch.setattr("mptcplab.places.uml.available", lambda: (False, "no linux-source"))
    monkeypatch.setattr(fake_place, "OFFERS", {"netem", "tbf"})
    lab = get_lab("lab1")
    assert lab.needs_for(lab.load_params(quick=True)) == ("minrtt_scheduler", "netem")
    with pytest.raises(EnvironmentProblem, match="native lacks minrtt_scheduler.*fake lacks minrtt_scheduler"
                                                 ".*minrtt_scheduler is needed by lab1's paper point"):
        run_lab("lab1", quick=True, where="auto")
    assert fake_place.calls == [] and fake_place.prepared == []
    monkeypatch.setattr(doctor, "checks", lambda: [])
    text, ok = doctor.report()
    assert not ok and "lab1 (" in text and "CANNOT RUN here" in text.split("lab1 (")[1].splitlines()[0]
    assert "minrtt_scheduler no" in text
    without = lab.load_params(quick=True, overrides={"paper_point": {"schedulers": ["default"]}})
    assert lab.needs_for(without) == ("netem",) and place_for(lab, without).place == "native"


def test_lab1_goes_to_uml_over_a_native_kernel_without_the_scheduler(caps):
    """UML carries the kit's patch: `auto` prefers it to a native kernel with netem but no minrtt."""
    from mptcplab.run.lab import get_lab
    from mptcplab.run.runner import place_for

    caps["netem"] = True
    lab = get_lab("lab1")
    picked = place_for(lab, lab.load_params(quick=False))
    assert picked.place == "uml" and "native lacks minrtt_scheduler" in picked.why
    caps["minrtt_scheduler"] = True  # the box's kernel with the patch
    assert place_for(lab, lab.load_params(quick=False)).place == "native"
