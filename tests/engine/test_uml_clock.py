"""The UML guest's clock is chosen in one place (uml.clock_args), with a clear error."""

import pytest

from mptcplab.core.errors import EnvironmentProblem
from mptcplab.places import uml_kernel as uml


def test_default_and_chosen_clock(monkeypatch):
    monkeypatch.delenv("MPTCPLAB_UML_CLOCK", raising=False)
    assert uml.clock_args() == ["time-travel"]
    monkeypatch.setenv("MPTCPLAB_UML_CLOCK", "time-travel=inf-cpu")
    assert uml.clock_args() == ["time-travel=inf-cpu"]
    monkeypatch.setenv("MPTCPLAB_UML_CLOCK", "host")
    assert uml.clock_args() == []
    monkeypatch.setenv("MPTCPLAB_UML_CLOCK", "fast")
    with pytest.raises(EnvironmentProblem, match="MPTCPLAB_UML_CLOCK='fast': choose one of"):
        uml.clock_args()


def test_the_kernel_is_patched_and_the_patch_keys_the_cache(monkeypatch, tmp_path):
    """The stale-alarm fix, the AMX hosts' XSAVE fix (and the minrtt scheduler) are applied to
    every build, and editing a patch means a new kernel."""
    names = {p.name: p for p in uml.PATCHES}
    assert set(names) == {"time-travel-stale-alarm.patch", "mptcp-minrtt-scheduler.patch", "host-xstate-size.patch"}
    assert "+\tif (time_travel_next_event >= time_travel_time)" in names["time-travel-stale-alarm.patch"].read_text()
    # SETREGSET gets the host's whole XSAVE size, never 6.12's fixed 2,696 bytes alone
    assert "+\t\t\tiov.iov_len = host_xstate_bytes;" in names["host-xstate-size.patch"].read_text()
    monkeypatch.setattr(uml, "find_source", lambda: (tmp_path / "linux-source-6.12.tar.xz", "6.12.117-1"))
    before = uml.kernel_dir()
    edited = tmp_path / "edited.patch"
    edited.write_text(uml.PATCHES[0].read_text() + "\n")
    monkeypatch.setattr(uml, "PATCHES", [edited])
    assert uml.kernel_dir() != before
