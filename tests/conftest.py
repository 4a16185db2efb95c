"""Fixtures for every test."""

import pytest


@pytest.fixture(autouse=True)
def step_times(tmp_path_factory, monkeypatch):
    """Steps' remembered times (mptcplab.run.eta) go to a file of the test's own, never the user's cache."""
    from mptcplab.run import eta

    f = tmp_path_factory.mktemp("eta") / "steps.json"
    monkeypatch.setattr(eta, "_file", lambda: f)
    return f
