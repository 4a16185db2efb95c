"""Where a lab runs, given what the kernel here can do."""

import pytest

from mptcplab import doctor, kernel
from mptcplab.errors import EnvironmentProblem, UsageError


@pytest.fixture
def caps(monkeypatch):
    have = {"netem": False, "bpf_struct_ops": True, "tbf": True}
    monkeypatch.setattr(kernel, "has", lambda c: have[c])
    monkeypatch.setattr(kernel, "inside_uml", lambda: False)
    monkeypatch.setattr(kernel, "require_root", lambda: None)
    return have


def test_auto_prefers_native_netem_else_uml(caps):
    assert doctor.decide_where("auto", ("netem",)) == "uml"
    caps["netem"] = True
    assert doctor.decide_where("auto", ("netem",)) == "native"


def test_lab_needing_struct_ops_never_goes_to_uml(caps):
    assert doctor.decide_where("auto", ("bpf_struct_ops",), uml_ok=False) == "native"
    caps["bpf_struct_ops"] = False
    with pytest.raises(EnvironmentProblem, match="cannot run in UML"):
        doctor.decide_where("auto", ("bpf_struct_ops",), uml_ok=False)
    with pytest.raises(EnvironmentProblem, match="no BPF JIT"):
        doctor.decide_where("uml", ("bpf_struct_ops",), uml_ok=False)


def test_native_without_netem_says_how_to_fix(caps):
    with pytest.raises(EnvironmentProblem, match="lacks netem.*doctor.*--where uml"):
        doctor.decide_where("native", ("netem",))


def test_inside_uml_is_native(caps, monkeypatch):
    monkeypatch.setattr(kernel, "inside_uml", lambda: True)
    assert doctor.decide_where("uml", ("netem",)) == "native"


def test_bad_where(caps):
    with pytest.raises(UsageError, match="auto, native or uml"):
        doctor.decide_where("vm")


def test_checks_have_fixes():
    for check in doctor.checks():
        assert check.name and (check.ok or check.fix), check
