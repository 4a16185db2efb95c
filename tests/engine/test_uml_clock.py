"""The UML guest's clock is chosen in one place (uml.clock_args), with a clear error."""

import pytest

from mptcplab import uml
from mptcplab.errors import EnvironmentProblem


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
