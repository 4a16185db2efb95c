"""Run directories (atomic, resumable), manifests and the cleanup state file."""

import json
import os

import pytest

from mptcplab.core import state
from mptcplab.run.results import Sweep, clock_totals, completed, completed_names, transfer_seconds


def test_run_dir_is_atomic_and_has_provenance(tmp_path):
    sweep = Sweep(tmp_path)
    with pytest.raises(RuntimeError):
        with sweep.run("a", {"x": 1}) as rd:
            rd.write_text("partial.txt", "half")
            raise RuntimeError("crash")
    assert not sweep.done("a") and (tmp_path / "a.partial").exists() and not (tmp_path / "a").exists()
    with sweep.run("a", {"x": 1}) as rd:
        rd.summary["goodput_transfer_mbps"] = 9.5
    assert sweep.done("a") and not (tmp_path / "a.partial").exists()
    m = json.loads((tmp_path / "a" / "manifest.json").read_text())
    for key in ("started", "finished", "parameters", "platform", "tools", "git", "command"):
        assert key in m
    assert m["platform"]["kernel_release"] == os.uname().release
    assert m["parameters"] == {"x": 1}
    assert sweep.summaries().to_dict("records") == [{"run": "a", "goodput_transfer_mbps": 9.5}]


def test_a_run_written_before_the_goodput_vocabulary_reads_by_the_current_names(tmp_path):
    """A sweep resumes over its earlier runs: their summaries name the goodputs as the previous
    commit did (Lab 3's `mbps` was its steady window's); the readers see the current names."""
    old = {"lab1": {"config": "tcp-fast", "mbps": 95.1},
           "lab3": {"mbps": 3.8, "mbps_transfer": 3.7},
           "verify": {"checks": {"paths": {"fast": {"tcp_mbps": 94.0, "tcp_steady_mbps": 95.0}},
                                 "mptcp": {"mptcp_mbps": 150.0}}, "physics": {"window": {"goodput_mbps": 9.0}}}}
    for key, summary in old.items():
        (tmp_path / key).mkdir()
        (tmp_path / key / "manifest.json").write_text(json.dumps({"run": key}))
        (tmp_path / key / "summary.json").write_text(json.dumps(summary))
    got = dict(completed(tmp_path))
    assert got[tmp_path / "lab1"] == {"config": "tcp-fast", "goodput_transfer_mbps": 95.1}
    assert got[tmp_path / "lab3"] == {"goodput_window_mbps": 3.8, "goodput_transfer_mbps": 3.7}
    assert got[tmp_path / "verify"] == {
        "checks": {"paths": {"fast": {"tcp_goodput_transfer_mbps": 94.0, "tcp_goodput_steady_mbps": 95.0}},
                   "mptcp": {"mptcp_goodput_transfer_mbps": 150.0}},
        "physics": {"window": {"goodput_steady_mbps": 9.0}}}


def test_a_uml_run_records_guest_and_host_seconds(tmp_path, monkeypatch):
    """Under UML the manifest keeps both clocks (see places.guest.host_time); natively there is one."""
    import time

    with Sweep(tmp_path).run("native", {}):
        pass
    assert "clock" not in json.loads((tmp_path / "native" / "manifest.json").read_text())
    monkeypatch.setenv("MPTCPLAB_WHERE", "uml")
    with Sweep(tmp_path).run("uml", {}):
        time.sleep(0.3)
    m = json.loads((tmp_path / "uml" / "manifest.json").read_text())
    # Here the "host" clock is this machine's own, so both read the same interval.
    assert m["clock"]["guest_s"] >= 0.3 and abs(m["clock"]["host_wall_s"] - m["clock"]["guest_s"]) < 0.1
    assert not any(a.startswith(".host-clock") for a in m["artefacts"]) and not list(tmp_path.rglob(".host-clock*"))
    assert clock_totals(tmp_path) == (m["clock"]["guest_s"], m["clock"]["host_wall_s"])  # the native run adds 0


def test_sweep_lists_only_complete_runs(tmp_path):
    sweep = Sweep(tmp_path)
    with sweep.run("done", {}):
        pass
    (tmp_path / "crashed.partial").mkdir()
    assert [p.name for p in sweep.runs()] == ["done"]


def test_transfer_seconds_sums_what_each_run_recorded_of_its_transfer(tmp_path):
    """The time ratio's denominator, from run directories as the three labs write them: a bulk
    transfer's measured span (Labs 1 and 2, and Lab 3's n flows), a run that records only its
    configured duration (Lab 2's fairness runs), the setup check and a skipped point (nothing), and
    an unfinished run (not a run)."""
    def run(key, summary, done=True):
        d = tmp_path / (key if done else key + ".partial")
        d.mkdir()
        (d / "manifest.json").write_text(json.dumps({"run": key}))
        (d / "summary.json").write_text(json.dumps(summary))

    run("verify", {"checks": {"passed": True}})
    run("wmem-64K-mptcp-r1", {"proto": "mptcp", "duration_s": 10.0, "span_s": 10.093})
    run("r1-static-lia", {"duration_s": 8.0, "span_s": 8.5})
    run("fair-lia-r1", {"duration_s": 6.0, "mptcp_goodput_transfer_mbps": 3.1})
    run("paper-1M-mptcp-minrtt-r1", {"part": "paper_point", "skipped": "no such scheduler"})
    run("random-1pct-n2-r1", {"scenario": "random", "n": 2, "span_s": 25.4})
    run("crashed", {"span_s": 99.0}, done=False)
    assert transfer_seconds(tmp_path) == pytest.approx(10.093 + 8.5 + 6.0 + 25.4)
    assert transfer_seconds(tmp_path / "absent") == 0.0
    # A resumed sweep: its wall time is divided by what this invocation transferred ("0.0x" before).
    done = completed_names(tmp_path)
    assert "crashed" not in done and "crashed.partial" not in done and "verify" in done
    run("r2-static-lia", {"duration_s": 8.0, "span_s": 8.25})
    assert transfer_seconds(tmp_path, excluding=done) == pytest.approx(8.25)
    assert completed_names(tmp_path / "absent") == set()


def test_state_file_records_and_clean_removes_dead_owner(tmp_path, monkeypatch):
    monkeypatch.setattr(state, "STATE_DIR", tmp_path)
    d = tmp_path / "leftover"
    d.mkdir()
    # a state file left by a process that no longer exists
    (tmp_path / "999999.json").write_text(json.dumps({"owner": 999999, "items": [{"kind": "dir", "path": str(d)}]}))
    t = state.Tracker()
    item = t.add("dir", path=str(tmp_path / "mine"))
    assert json.loads(t.path.read_text())["items"] == [item]
    removed = state.clean(all_owners=False)
    assert removed == [f"directory {d}"] and not d.exists()
    assert t.path.exists()  # our own (live) state is left alone
    t.discard(item)
    assert not t.path.exists()


def test_a_runs_stamps_are_the_hosts_wall_clock(tmp_path, monkeypatch):
    """In UML the guest's clock skips idle time (Lab 3's runs were stamped 40 min late): `started`,
    `finished` and `failed` come from the place's reading of the host's clock (results.wall_clock)."""
    from mptcplab.run import results

    clock = iter([1795000000.0, 1795000042.5, 1795000050.0])
    monkeypatch.setattr(results, "wall_clock", lambda directory: next(clock))
    rd = results.RunDir(tmp_path / "r1", {})
    rd.keep_evidence(RuntimeError("x"))
    rd.finish()
    m = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert (m["started"], m["failed"], m["finished"]) == (
        "2026-11-18T11:06:40.000+00:00", "2026-11-18T11:07:22.500+00:00", "2026-11-18T11:07:30.000+00:00")
