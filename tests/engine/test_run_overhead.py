"""What moved out of a run's timed path (benchmarks/results/vm_run_overhead.md): the record of where
a run's time went, the network's sysctls read without starting a program, the kernel's trace
parsed after the run from the raw text it kept."""

import json
import os
import shutil
import subprocess
import sys
import time

import pandas as pd
import pytest

from mptcplab.core import netns, process
from mptcplab.core.errors import EnvironmentProblem, ExperimentFailed
from mptcplab.measure import observe
from mptcplab.net import topology
from mptcplab.net.topology import Cmd
from mptcplab.run.results import RunDir, Sweep

from test_observe_parsers import TRACE


def test_timed_adds_each_steps_seconds_into_the_manifest(tmp_path):
    with Sweep(tmp_path).run("r1", {}) as rd:
        for _ in range(2):
            with rd.timed("record"):
                time.sleep(0.01)
        try:
            with rd.timed("measure"):
                raise ValueError("a failing step still counts")
        except ValueError:
            pass
    got = json.loads((tmp_path / "r1" / "manifest.json").read_text())["timings"]
    assert set(got) == {"record", "measure"} and got["record"] >= 0.02


def test_timed_also_records_the_cpu_a_step_cost(tmp_path):
    """Beside the step's seconds, the kernel's busy CPU seconds and the kit's own (with the programs
    it started that ended in the step): under the VM's instruction clock these, not the guest's
    seconds, are what a step costs the host."""
    with Sweep(tmp_path).run("r1", {}) as rd:
        with rd.timed("spin"):
            t = time.process_time()
            while time.process_time() - t < 0.3:
                pass
        with rd.timed("child"):  # a program that ends in the step counts in it
            subprocess.run([sys.executable, "-c", "import time\nt = time.process_time()\n"
                            "while time.process_time() - t < 0.3: pass"], check=True)
        with rd.timed("sleep"):
            time.sleep(0.3)
    m = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    kit, busy = m["timings_kit_cpu"], m["timings_busy"]
    assert set(kit) == set(busy) == {"spin", "child", "sleep"}
    assert kit["spin"] >= 0.28 and kit["child"] >= 0.28 and kit["sleep"] < 0.05
    assert busy["spin"] >= 0.25  # the whole machine's count: at least this process's
    assert "timings_host" not in m  # natively the host's clock is this one


def test_in_a_guest_timed_also_records_each_steps_seconds_on_the_hosts_clock(tmp_path, monkeypatch):
    monkeypatch.setenv("MPTCPLAB_WHERE", "uml")  # a guest place; here the "host" clock is this machine's
    with Sweep(tmp_path).run("r1", {}) as rd:
        with rd.timed("sleep"):
            time.sleep(0.3)
    m = json.loads((tmp_path / "r1" / "manifest.json").read_text())
    assert abs(m["timings_host"]["sleep"] - m["timings"]["sleep"]) < 0.1 and m["timings_host"]["sleep"] >= 0.25


def test_a_processes_cpu_seconds_are_read_while_it_runs():
    spin = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                             "while time.process_time() - t < 0.4: pass\ntime.sleep(30)"])
    try:
        time.sleep(1.0)
        assert 0.35 <= process.cpu_s(spin.pid) < 1.1
    finally:
        spin.kill()
        spin.wait()
    assert process.cpu_s(spin.pid) is None  # gone


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2")
def test_sysctls_read_inside_a_namespace_are_what_sysctl_prints_there():
    ns = f"mlab-test-sysctl-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv4.tcp_wmem=4096 16384 65536",
                        "net.ipv4.tcp_sack=0"], check=True)
        keys = ("net.ipv4.tcp_wmem", "net.mptcp.no_such_key", "net.ipv4.tcp_sack", "net.core.wmem_max")
        got = netns.read_sysctls(ns, keys)
        assert got["net.ipv4.tcp_wmem"] == "4096 16384 65536" and got["net.ipv4.tcp_sack"] == "0"
        assert got["net.mptcp.no_such_key"] is None
        printed = subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-n", "net.core.wmem_max"],
                                 capture_output=True, text=True, check=True).stdout.strip()
        assert got["net.core.wmem_max"] == printed
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    with pytest.raises(OSError):
        netns.read_sysctls("mlab-no-such-namespace", ["net.ipv4.tcp_sack"])


def test_a_trace_kept_raw_is_parsed_after_the_run_as_during_it(tmp_path):
    during, after = tmp_path / "during", tmp_path / "after"
    for d in (during, after):
        d.mkdir()
        (d / "trace.txt").write_text(TRACE)
    how = {"clock_offset": 1000.0, "mptcp": False, "waits": True, "wait_method": "sched_switch:kstack"}
    notes = observe.parse_trace_file(during / "trace.txt", during, **how)  # what Tracing(parse=True) does
    (after / observe.TRACE_PENDING).write_text(json.dumps(how))  # what Tracing(parse=False) leaves
    assert observe.parse_saved_trace(after) == notes == {"sndbuf_wait_count": 1}
    for name in ("tcp_probe.csv", "sndbuf_waits.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(after / name), pd.read_csv(during / name))
    probe = pd.read_csv(after / "tcp_probe.csv").iloc[0]
    assert (probe.saddr, probe.sport, probe.snd_nxt, probe.snd_una, probe.srtt_us) == ("10.1.0.1", 40000, 16, 8, 120)
    assert sorted(p.name for p in after.iterdir()) == ["sndbuf_waits.csv", "tcp_probe.csv"]  # raw and note gone
    assert observe.parse_saved_trace(after) is None  # once


STATS = "entries: {entries}\noverrun: {overrun}\ncommit overrun: 0\nbytes: 1234\noldest event ts:  5.000000\n" \
        "now ts:  9.000000\ndropped events: 0\nread events: 0\n"


class _Tracker:
    def __init__(self):
        self.items = []

    def add(self, kind, **info):
        self.items.append({"kind": kind, **info})
        return self.items[-1]

    def discard(self, item):
        if item in self.items:
            self.items.remove(item)


def _traced_block(tmp_path, monkeypatch, overrun: int):
    """A Tracing(parse=False) block over a stand-in tracefs: the kernel's part (the instance's
    `trace` and per-CPU `stats`) written by the test, as a run would have left them."""
    from types import SimpleNamespace

    tracefs, memory = tmp_path / "tracefs", tmp_path / "memory"
    (tracefs / "instances").mkdir(parents=True)
    monkeypatch.setattr(observe, "TRACEFS", tracefs)
    monkeypatch.setattr(observe, "CAPTURES", memory)
    monkeypatch.setattr(observe, "TRACKER", tracker := _Tracker())
    monkeypatch.setattr(observe.kernel, "tracefs_usable", lambda: True)
    monkeypatch.setattr(observe, "remove_trace_instance", lambda name: shutil.rmtree(tracefs / "instances" / name))
    rd = RunDir(tmp_path / "r1", {})
    run = rd.path
    tracing = observe.Tracing(SimpleNamespace(topo=SimpleNamespace(run_id="t1")), rd, port=5201, parse=False)
    tracing.__enter__()
    inst = tracefs / "instances" / tracing.name
    assert (inst / "tracing_on").read_text() == "1" and not (run / "trace.txt").exists()  # nothing read meanwhile
    header = "# tracer: nop\n#\n# entries-in-buffer/entries-written: 2/2   #P:2\n#\n" \
             "#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n#              | |         |   |||||     |         |\n"
    (inst / "trace").write_text(header + TRACE)
    for cpu, n in ((0, overrun), (1, 0)):
        (inst / "per_cpu" / f"cpu{cpu}").mkdir(parents=True)
        (inst / "per_cpu" / f"cpu{cpu}" / "stats").write_text(STATS.format(entries=1, overrun=n))
    return tracing, rd, run, tracker, memory


def test_a_trace_kept_raw_is_read_after_the_block_whole_and_parsed_as_a_live_one(tmp_path, monkeypatch):
    tracing, rd, run, tracker, memory = _traced_block(tmp_path, monkeypatch, overrun=0)
    tracing.__exit__(None, None, None)
    note = rd.manifest["observation"]["tracing"]
    assert (note["entries"], note["lost_events"], note["read"]) == (2, 0, "after the block (trace)")
    assert "trace_read" in rd.manifest["timings"] and not tracker.items and not list(memory.iterdir())
    live = tmp_path / "live"
    live.mkdir()
    (live / "trace.txt").write_text(TRACE)  # what trace_pipe gives: the same lines without the header
    how = json.loads((run / observe.TRACE_PENDING).read_text())
    assert observe.parse_saved_trace(run) == observe.parse_trace_file(live / "trace.txt", live, **how)
    pd.testing.assert_frame_equal(pd.read_csv(run / "tcp_probe.csv"), pd.read_csv(live / "tcp_probe.csv"))


def test_a_trace_whose_buffer_overflowed_is_refused_not_kept_without_its_start(tmp_path, monkeypatch):
    tracing, rd, run, tracker, _ = _traced_block(tmp_path, monkeypatch, overrun=57)
    with pytest.raises(ExperimentFailed, match="lost 57 events .*raise Tracing's buffer_kb"):
        tracing.__exit__(None, None, None)
    note = rd.manifest["observation"]["tracing"]
    assert (note["overrun"], note["lost_events"]) == (57, 57) and (run / "trace.txt").exists()  # kept as evidence
    assert not tracker.items


def test_a_networks_commands_run_batched_per_namespace_in_order():
    cmds = [Cmd(["ip", "netns", "add", "n1"]), Cmd(["ip", "netns", "exec", "n1", "sysctl", "-qw", "a=1"]),
            Cmd(["ip", "-n", "n1", "link", "set", "lo", "up"]), Cmd(["ip", "-n", "n1", "addr", "add", "10.1.0.1/24",
                                                                    "dev", "p1"]),
            Cmd(["tc", "-n", "n1", "qdisc", "replace", "dev", "p1", "root", "netem", "delay", "10ms"]),
            Cmd(["ip", "-n", "n2", "link", "set", "lo", "up"]), Cmd(["ethtool", "-K", "p1", "tso", "off"])]
    got = topology.batches(cmds)
    assert [(head, len(group)) for head, group in got] == [
        (["ip", "-batch", "-"], 2), (["ip", "-n", "n1", "-batch", "-"], 2), (["tc", "-n", "n1", "-batch", "-"], 1),
        (["ip", "-n", "n2", "-batch", "-"], 1), (["ethtool", "-K", "p1", "tso", "off"], 1)]
    assert topology.batch_lines(*got[0]) == "netns add n1\nnetns exec n1 sysctl -qw a=1\n"
    assert topology.batch_lines(*got[1]) == "link set lo up\naddr add 10.1.0.1/24 dev p1\n"


def test_a_failed_batch_names_the_command_that_failed(monkeypatch):
    ran = []

    def run(argv, check=True, input=None, **kw):
        ran.append((argv, input))
        return subprocess.CompletedProcess(argv, 1, "", 'Cannot find device "p9"\nCommand failed -:2\n')
    monkeypatch.setattr(topology.process, "run", run)
    net = topology.Network.__new__(topology.Network)
    cmds = [Cmd(["ip", "-n", "n1", "link", "set", "lo", "up"]), Cmd(["ip", "-n", "n1", "link", "set", "p9", "up"])]
    with pytest.raises(EnvironmentProblem, match=r'`ip -n n1 link set p9 up` failed \(1\): Cannot find device "p9"$'):
        net.check_all(cmds)
    assert ran == [(["ip", "-n", "n1", "-batch", "-"], "link set lo up\nlink set p9 up\n")]


def test_a_sweeps_transfer_time_is_its_runs_spans_or_common_windows(tmp_path):
    from mptcplab.run.results import transfer_seconds

    for key, summary in (("verify", {"checks": {}}), ("static-lia-r1", {"span_s": 9.5}),
                         ("fair-lia-r1", {"shared_window_s": [100.0, 108.25]})):
        with Sweep(tmp_path).run(key, {}) as rd:
            rd.summary.update(summary)
    assert transfer_seconds(tmp_path) == 9.5 + 8.25


def test_a_guests_finished_runs_are_converted_beside_it_and_never_after_it_exits(tmp_path):
    from mptcplab.run.runner import converting

    calls = []
    with converting(tmp_path, lambda out: calls.append((out, time.monotonic())), every_s=0.05):
        time.sleep(0.3)
    left = time.monotonic()
    assert len(calls) >= 3 and all(out == tmp_path for out, _ in calls)
    time.sleep(0.15)
    assert all(t <= left for _, t in calls)  # stopped (and joined) with the guest

    def broken(out):
        calls.append("broken")
        raise ValueError("a table it cannot read")

    calls.clear()
    with converting(tmp_path, broken, every_s=0.05):  # a failing conversion stops it, quietly
        time.sleep(0.3)
    assert calls == ["broken"]
    with converting(None, broken):  # nothing to convert into: nothing runs
        pass


def test_the_hosts_work_for_a_guest_runs_beside_its_boot_and_a_failure_is_only_said(caplog):
    from mptcplab.run.runner import beside_the_boot

    done = []
    with beside_the_boot(lambda: (time.sleep(0.2), done.append("built"))):
        assert done == []  # the guest boots meanwhile
    assert done == ["built"]  # joined before the sweep's analysis

    def broken():
        raise OSError("clang: not found")

    with beside_the_boot(broken):
        pass
    assert "the guest builds them itself" in caplog.text and "clang: not found" in caplog.text
