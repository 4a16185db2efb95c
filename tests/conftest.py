"""Fixtures for every test."""

import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_run_index(tmp_path_factory):
    """Session fixtures (the integration suite's one reproduction) conclude sweeps before any function
    fixture runs: they too are remembered in an index of the suite's own (see run_index), in pytest's
    temporary directory, so nothing is left behind in /tmp."""
    os.environ["MPTCPLAB_RUN_INDEX"] = str(tmp_path_factory.mktemp("session-index") / "sweeps.jsonl")


@pytest.fixture(autouse=True)
def step_times(tmp_path_factory, monkeypatch):
    """Steps' remembered times (mptcplab.core.eta) go to a file of the test's own, never the user's cache."""
    from mptcplab.core import eta

    f = tmp_path_factory.mktemp("eta") / "steps.json"
    monkeypatch.setattr(eta, "_file", lambda: f)
    return f


@pytest.fixture(autouse=True)
def run_index(tmp_path_factory, monkeypatch):
    """Sweeps a test concludes are remembered in an index of the test's own (mptcplab.run.locate), never
    the user's: a notebook would take the suite's /tmp sweeps for the student's newest run."""
    f = tmp_path_factory.mktemp("index") / "sweeps.jsonl"
    monkeypatch.setenv("MPTCPLAB_RUN_INDEX", str(f))
    return f
