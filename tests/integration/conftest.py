"""One quick real reproduction of every lab per test session, shared by the lab tests."""

import subprocess
import sys

import pytest


@pytest.fixture(scope="session")
def reproduced(tmp_path_factory):
    """`mptcplab reproduce --quick` into a fresh directory: every lab's quick run on a real kernel."""
    out = tmp_path_factory.mktemp("reproduce")
    res = subprocess.run([sys.executable, "-m", "mptcplab.cli", "reproduce", "--quick", "--out", str(out)],
                         capture_output=True, text=True, timeout=3600)
    (out / "pytest-reproduce.log").write_text(res.stdout + res.stderr)
    return out, res
