"""The UML place exists only on x86 hosts (arch/x86/um): elsewhere it says so before anything else."""

import platform
from pathlib import Path

import pytest

from mptcplab.core.errors import EnvironmentProblem
from mptcplab.places import uml, uml_kernel

BUILT = Path("/cache/uml/linux-source-6.12-6.12.117-1-abc/linux")


def test_an_arm64_host_is_told_up_front(monkeypatch):
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    monkeypatch.setattr(uml_kernel, "kernel_path", lambda: BUILT)  # the architecture outranks even a kernel
    assert uml.available() == (False, "not on this architecture (aarch64): User-Mode Linux runs only on x86 "
                                      "hosts (arch/x86/um)")

    def looked(*_):
        raise AssertionError("looked for the source")

    monkeypatch.setattr(uml_kernel, "kernel_dir", looked)
    with pytest.raises(EnvironmentProblem, match=r"no UML kernel here: not on this architecture \(aarch64\)"):
        uml_kernel.build()


@pytest.mark.parametrize("machine", ["x86_64", "i686"])
def test_an_x86_host_is_unchanged(monkeypatch, machine):
    monkeypatch.setattr(platform, "machine", lambda: machine)
    monkeypatch.setattr(uml_kernel, "kernel_path", lambda: BUILT)
    assert uml.available() == (True, f"built: {BUILT}")
