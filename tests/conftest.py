"""Fixtures for every test."""

import os
import tempfile

import pytest


def pytest_configure(config):
    # The session's fixtures (the integration suite's one reproduction) conclude sweeps before any
    # function fixture runs: they too are remembered in the suite's own index (see run_index).
    os.environ.setdefault("MPTCPLAB_RUN_INDEX", os.path.join(tempfile.mkdtemp(prefix="mlab-test-index-"), "sweeps.jsonl"))


@pytest.fixture(autouse=True)
def step_times(tmp_path_factory, monkeypatch):
    """Steps' remembered times (mptcplab.run.eta) go to a file of the test's own, never the user's cache."""
    from mptcplab.run import eta

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
