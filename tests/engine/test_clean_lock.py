"""`mptcplab clean` under a running experiment: refused (it would stop the experiment mid-run)
unless forced; with nobody holding the lock it cleans as before."""

import fcntl
import os
import subprocess
import sys

import pytest

from mptcplab.cli import main
from mptcplab.commands import clean as clean_command
from mptcplab.run import results


@pytest.fixture
def lock_file(tmp_path, monkeypatch):
    path = tmp_path / "experiment.lock"
    monkeypatch.setattr(results, "LOCK_FILE", path)
    monkeypatch.setattr(clean_command, "LOCK_FILE", path)
    return path


@pytest.fixture
def nothing_to_clean(monkeypatch):
    """The cleaning itself faked: this test is about when clean may start, not what it removes."""
    cleaned = []
    monkeypatch.setattr(clean_command.kernel, "require_root", lambda: None)
    monkeypatch.setattr(clean_command.state, "clean", lambda all_owners: cleaned.append("state") or [])
    monkeypatch.setattr(clean_command.places, "all_places", lambda: [])
    monkeypatch.setattr(clean_command, "all_labs", lambda: {})
    monkeypatch.setattr(clean_command.leftovers, "clean", lambda: [])
    return cleaned


def _hold(path):
    """Another process holding the lock, as a running experiment does."""
    code = ("import fcntl, sys, time\nf = open(sys.argv[1], 'a+')\nfcntl.flock(f, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_clean_refuses_while_an_experiment_holds_the_lock(lock_file, nothing_to_clean, capsys):
    holder = _hold(lock_file)
    try:
        assert results.experiment_running()
        assert main(["clean"]) == 2
        err = capsys.readouterr().err
        assert "an experiment is running" in err and "--force" in err
        assert nothing_to_clean == []
        assert main(["clean", "--force"]) == 0
        assert nothing_to_clean == ["state"]
    finally:
        holder.kill()
        holder.wait()


def test_clean_runs_when_nobody_holds_the_lock(lock_file, nothing_to_clean):
    assert not results.experiment_running()  # no lock file yet
    lock_file.touch()
    with open(lock_file) as f:  # a lock taken and let go by this process
        fcntl.flock(f, fcntl.LOCK_EX)
        fcntl.flock(f, fcntl.LOCK_UN)
    assert not results.experiment_running()
    assert main(["clean"]) == 0
    assert nothing_to_clean == ["state"]
    assert os.path.exists(lock_file)
