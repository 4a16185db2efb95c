"""run.locate: a notebook finds the student's newest finished sweep wherever the kit's commands put it
(`mptcplab run`'s default folder, `reproduce`'s, any --out through the run index), and falls back to
the reference only with a loud banner."""

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mptcplab.core import paths
from mptcplab.run import locate as loc
from mptcplab.run import runner


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """An empty checkout: the reference folder only, the run index in a fresh cache."""
    root = tmp_path / "repo"
    (root / "solutions" / "results" / "lab1").mkdir(parents=True)
    monkeypatch.setattr(paths, "REPO_ROOT", root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("MPTCPLAB_LAB1_RESULTS", raising=False)
    monkeypatch.delenv("SUDO_USER", raising=False)
    monkeypatch.chdir(root)
    return root


def finished_sweep(out: Path, *, where="uml", kernel="6.12.117", quick=True, when=None, extra=()) -> Path:
    """A sweep with one run's manifest, concluded as `run`/`reproduce`/`merge` conclude one."""
    run = out / "wmem-1M-mptcp-r1"
    run.mkdir(parents=True)
    argv = ["mptcplab", "run", "lab1"] + (["--quick"] if quick else []) + list(extra)
    (run / "manifest.json").write_text(json.dumps({
        "command": argv, "platform": {"where": where, "kernel_release": kernel},
        "git": {"commit": "0123456789abcdef", "dirty": False}}))
    (run / "summary.json").write_text("{}")
    lab = SimpleNamespace(id="lab1", report=lambda o: "| paper | run |\n", judging=SimpleNamespace(claims=None))
    runner.conclude(lab, out, {"runs": 1})
    if when is not None:
        os.utime(out / loc.SUMMARY, (when, when))
    return out


def test_finds_the_run_commands_default_folder(repo):
    out = finished_sweep(runner.default_out("lab1", quick=True))
    got = loc.locate("lab1")
    assert got.path == out and not got.is_reference
    assert (got.place, got.kernel, got.quick, got.commit) == ("uml", "6.12.117", True, "0123456789ab")
    text = loc.banner(got)
    assert str(out) in text and "uml" in text and "6.12.117" in text and "quick" in text and "!!" not in text


def test_finds_reproduce_output_and_picks_the_newest(repo):
    older = finished_sweep(repo / "results" / "lab1", quick=False, when=time.time() - 3600)
    newer = finished_sweep(repo / "build" / "reproduce" / "lab1-quick", where="vm", kernel="6.12.48")
    got = loc.locate("lab1")
    assert got.path == newer and got.place == "vm" and "of 2 found" in got.reason
    assert loc.locate("lab1", usable=lambda p: p != newer).path == older


def test_finds_any_out_dir_through_the_run_index(repo, tmp_path):
    out = finished_sweep(tmp_path / "elsewhere" / "my-lab1")
    assert loc.locate("lab1").path == out
    assert json.loads(loc.index_file().read_text().splitlines()[-1])["path"] == str(out)


def test_a_run_made_with_set_is_named_as_such(repo, tmp_path):
    """A control made with --set (walkthrough 2 of Lab 3: the machine's newest run was another's control,
    announced as "YOUR results") is not the lab's plain run: the banner's first line says which values."""
    plain = finished_sweep(repo / "results" / "lab1-quick", when=time.time() - 3600)
    assert loc.banner(loc.locate("lab1")).startswith(f"Analysing YOUR results: {plain}")
    control = finished_sweep(tmp_path / "controls" / "tso64_quick",
                             extra=["--set", "repetitions=2", "--set=network.min_tso_segs=64", "--out", "x"])
    got = loc.locate("lab1")
    assert got.path == control and got.overrides == ("repetitions=2", "network.min_tso_segs=64")
    assert loc.banner(got).splitlines()[0] == \
        f"Analysing your newest lab1 run, made with --set repetitions=2 network.min_tso_segs=64: {control}"


def test_an_unfinished_sweep_is_not_a_result(repo):
    (repo / "results" / "lab1-quick" / "wmem-1M-mptcp-r1").mkdir(parents=True)  # runs, no analysis yet
    assert loc.locate("lab1").is_reference


def test_falls_back_to_the_reference_loudly(repo):
    got = loc.locate("lab1")
    assert got.is_reference and got.path == repo / "solutions" / "results" / "lab1"
    assert "no finished lab1 run found" in got.reason
    text = loc.banner(got)
    assert text.splitlines()[0] == "!" * 78 and "REFERENCE" in text and "MPTCPLAB_LAB1_RESULTS=" in text


def test_unusable_runs_fall_back_saying_which(repo):
    out = finished_sweep(repo / "results" / "lab1-quick")
    got = loc.locate("lab1", usable=lambda p: False)
    assert got.is_reference and str(out) in got.reason


def test_the_environment_overrides(repo, tmp_path, monkeypatch):
    finished_sweep(repo / "results" / "lab1-quick")
    mine = finished_sweep(tmp_path / "named", quick=False)
    monkeypatch.setenv("MPTCPLAB_LAB1_RESULTS", str(mine))
    got = loc.locate("lab1")
    assert got.path == mine and not got.is_reference and "MPTCPLAB_LAB1_RESULTS" in got.reason
    monkeypatch.setenv("MPTCPLAB_LAB1_RESULTS", str(tmp_path / "nowhere"))
    assert loc.locate("lab1").is_reference
