"""The three places: the pure choice under `--where auto`, the VM's command line, check records."""

import json
import time
from pathlib import Path

import pytest

from mptcplab.places import choice, compare, lifetime, records, vm
from mptcplab.places.choice import CheckResult


def rec(place, passed=True, wall=100.0, lab="lab1", **kw):
    return CheckResult(place=place, lab=lab, passed=passed, wall_s=wall, **kw)


NO_NETEM = {"native": {"tbf", "bpf_struct_ops"}, "uml": {"netem", "tbf"},
            "vm": {"netem", "tbf", "kprobes", "bpf_struct_ops"}}


def test_native_with_netem_wins_without_measuring():
    caps = {**NO_NETEM, "native": {"netem", "tbf"}}
    got = choice.choose("lab1", ("netem",), caps, [rec("uml", wall=1.0)])
    assert got.place == "native" and "netem" in got.why


def test_fastest_passing_place_wins():
    got = choice.choose("lab1", ("netem",), NO_NETEM, [rec("uml", wall=300), rec("vm", wall=200)])
    assert got.place == "vm" and "200 s" in got.why and "uml 300 s" in got.why


def test_a_failed_check_rules_a_place_out_whatever_its_speed():
    records_ = [rec("uml", passed=False, wall=10, measured={"p.tcp_goodput_steady_mbps": 44.5},
                    bound={"p.tcp_goodput_steady_mbps": 3.3}),
                rec("vm", wall=500)]
    got = choice.choose("lab1", ("netem",), NO_NETEM, records_)
    assert got.place == "vm" and "uml failed" in got.why and "44.5 vs bound 3.3" in got.why


def test_the_labs_own_check_beats_the_examples():
    records_ = [rec("uml", lab="example", wall=10), rec("uml", lab="lab1", passed=False, wall=10),
                rec("vm", lab="example", wall=50)]
    assert choice.choose("lab1", ("netem",), NO_NETEM, records_).place == "vm"
    # another lab still has only the example's checks: the faster one
    assert choice.choose("lab3", ("netem",), NO_NETEM, records_).place == "uml"


FACTS = {"native": choice.Facts(rank=0), "uml": choice.Facts(rank=1, cost="a UML kernel"),
         "vm": choice.Facts(rank=2, cost="software emulation, minutes per boot")}
LAB2 = ("netem", "bpf_struct_ops")


def test_unchecked_places_are_tried_fastest_first():
    assert choice.choose("lab1", ("netem",), NO_NETEM, [], FACTS).place == "uml"
    got = choice.choose("lab1", ("netem",), NO_NETEM, [rec("uml", passed=False)], FACTS)
    assert got.place == "vm" and "not been checked yet" in got.why and "uml failed" in got.why
    assert choice.choose("lab1", ("netem",), NO_NETEM, [rec("vm", wall=900)], FACTS).place == "vm"


def test_lab2_without_netem_goes_to_the_vm_and_says_why_and_what_it_costs():
    """Fidelity first: native without netem cannot honour the paths' delays, UML has no struct_ops."""
    got = choice.choose("lab2", LAB2, NO_NETEM, [], FACTS)
    assert got.place == "vm"
    assert "native lacks netem" in got.why and "uml lacks bpf_struct_ops" in got.why
    assert "It costs: software emulation" in got.why
    assert choice.choose("lab2", LAB2, NO_NETEM, [rec("vm", lab="example")], FACTS).place == "vm"


def test_no_qualifying_place_is_no_place_never_native_without_delays():
    only_native = {"native": {"tbf", "bpf_struct_ops"}, "uml": {"netem", "tbf"}}
    got = choice.choose("lab2", LAB2, only_native, [], FACTS)
    assert got.place is None and "native lacks netem" in got.why and "uml lacks bpf_struct_ops" in got.why
    got = choice.choose("lab2", LAB2, {"native": {"tbf"}, "uml": {"netem"}}, [])
    assert got.place is None and "bpf_struct_ops" in got.why


def test_native_with_netem_and_the_labs_needs_is_fastest():
    caps = {**NO_NETEM, "native": {"netem", "tbf", "bpf_struct_ops"}}
    got = choice.choose("lab2", LAB2, caps, [rec("vm", lab="lab2", wall=5)], FACTS)
    assert got.place == "native" and "It costs" not in got.why
    # ... unless its own check of the lab failed: then it does not qualify
    got = choice.choose("lab2", LAB2, caps, [rec("native", lab="lab2", passed=False), rec("vm", lab="lab2")], FACTS)
    assert got.place == "vm" and "native failed its lab2 check" in got.why


def test_every_place_failed():
    got = choice.choose("lab1", ("netem",), NO_NETEM, [rec("uml", passed=False), rec("vm", passed=False)])
    assert got.place is None and "failed" in got.why and "`mptcplab run lab1 --recheck` checks it again" in got.why
    got = choice.choose("lab2", LAB2, NO_NETEM, [rec("vm", lab="lab2", passed=False)])
    assert got.place is None and "vm failed its lab2 check" in got.why


def test_a_check_with_set_parameters_never_speaks_for_the_default_lab():
    failed_with_set = rec("uml", passed=False, params='{"paths":{"fast":{"link":"delay=1ms"}}}')
    assert choice.choose("lab1", ("netem",), NO_NETEM, [failed_with_set], FACTS).place == "uml"
    passed_with_set = rec("vm", wall=1, params='{"sweep":{"repetitions":1}}')
    assert choice.choose("lab1", ("netem",), NO_NETEM, [rec("uml", wall=500), passed_with_set], FACTS).place == "uml"


def test_check_result_round_trips_json():
    r = rec("vm", measured={"a": 1.0}, bound={"a": 2.0}, how="x")
    assert CheckResult.from_json(json.loads(json.dumps(r.to_json()))) == r


def test_vng_command_line(monkeypatch):
    monkeypatch.setattr(vm, "vng", lambda: "/v/bin/vng")
    argv = vm.vng_argv(Path("/boot/vmlinuz-6.12.117+deb12-amd64"), Path("/c/run.sh"), "mlab-vm-1234abcd",
                       [Path("/r/out"), Path("/c")], "tcg", 2, "4096M")
    assert argv[:3] == ["/v/bin/vng", "--run", "/boot/vmlinuz-6.12.117+deb12-amd64"]
    assert "--disable-kvm" in argv and argv[argv.index("--cpus") + 1] == "2"
    assert argv[argv.index("--memory") + 1] == "4096M" and argv[argv.index("--name") + 1] == "mlab-vm-1234abcd"
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--rwdir"] == ["/r/out", "/c"]
    assert "--rw" not in argv  # the host's filesystem stays read-only
    assert "--force-9p" in argv  # vng waited for a virtiofsd that never starts (3 x 3.1 s)
    assert argv[-2:] == ["--exec", "sh /c/run.sh"]
    # TCG's AVX2 sorted wrongly (vm.TCG_CPU); the host's / exported again, for the cached mount
    assert f"--qemu-opts=-cpu max,avx2=off {vm.TCG_CLOCK} {vm.CACHED_EXPORT}" in argv
    # under TCG the guest's clock counts instructions (vm.TCG_CLOCK): the host's load is not the network's
    assert "-icount shift=0,sleep=off" in vm.TCG_CLOCK
    # udev does not load the emulated PC's disk, watchdog and input drivers (vm.UNUSED_DRIVERS)
    append = argv[argv.index("--append") + 1]
    assert "modprobe.blacklist=ahci," in append and "virtio" not in append and "loglevel=4" in append
    kvm = vm.vng_argv(Path("/k"), Path("/s"), "n", [], "kvm", 1, "1G")
    assert "--disable-kvm" not in kvm and f"--qemu-opts={vm.CACHED_EXPORT}" in kvm
    # the whole tree lives in a PID namespace that dies with its first process
    assert lifetime.guarded(["vng"])[:4] == ["unshare", "--pid", "--fork", "--kill-child=SIGKILL"]


def test_the_guest_reads_pythons_and_the_programs_trees_cached_never_a_written_one(tmp_path):
    import sysconfig

    trees = vm.cached_trees([tmp_path])
    assert str(Path(sysconfig.get_paths()["purelib"]).resolve()) in trees or any(
        Path(sysconfig.get_paths()["purelib"]).resolve().is_relative_to(t) for t in trees)
    assert str(Path(vm.__file__).resolve().parents[2]) in trees  # the kit's package's parent
    assert "/usr/bin" in trees
    # a directory the guest writes is never covered by, nor covers, a cached tree
    assert "/usr/bin" not in vm.cached_trees([Path("/usr/bin/x")]) and "/usr/bin" not in vm.cached_trees([Path("/usr")])
    lines = vm.cached_mounts(["/a b", "/c"])
    assert f"cache=loose {vm.CACHED_TAG} {vm.CACHED_AT}" in lines and "for d in '/a b' /c;" in lines
    assert lines.endswith('|| echo "mptcplab: the host\'s files are read uncached in the VM (slower)"')


def test_a_silent_guest_is_stopped_and_its_kernel_quoted(tmp_path):
    import subprocess

    from mptcplab.places.guest import Silent, chunks as _chunks

    proc = subprocess.Popen(["sh", "-c", "echo started; sleep 30"], stdout=subprocess.PIPE)
    got, t0 = [], time.monotonic()
    with pytest.raises(Silent):
        for chunk in _chunks(proc, None, quiet_limit_s=1.5):
            got.append(chunk)
    proc.kill()
    assert got == ["started\n"] and time.monotonic() - t0 < 10
    console = tmp_path / vm.CONSOLE_LOG
    console.write_text("==== boot 1\n[    1.000000] old boot\n==== boot 2\nlab2: 10/25 mobility-cs218-r1\n"
                       "[  812.345678] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [ss:4242]\n")
    msg = vm.hung_message("nothing printed for 600 s", console)
    assert "soft lockup - CPU#0 stuck for 22s! [ss:4242]" in msg and "old boot" not in msg
    assert "resumes" in msg and str(console) in msg
    console.write_text("==== boot 1\nlab2: 10/25\n")
    assert "printed no warning" in vm.hung_message("x", console)


def test_a_guest_command_killed_by_a_signal_is_named_with_the_kernels_line(tmp_path):
    console = tmp_path / vm.CONSOLE_LOG
    console.write_text("==== boot 1\n[   1.0] python3[9]: segfault at 1 ip 2 sp 3 error 4 in old.so\n"
                       "==== boot 2\nlab2: 125/125 fair-cs218-r5\nSegmentation fault\n"
                       "[ 4321.5] python3[77]: segfault at 0 ip 00007f sp 00007e error 4 in libfoo.so[7f+1000]\n")
    msg = vm.crash_message(11, console)
    assert "killed by SIGSEGV" in msg and "libfoo.so" in msg and "old.so" not in msg
    assert "resumes" in msg and str(console) in msg
    assert "dmesg" in vm.AFTER  # the guest prints the kernel's line after a crash


def test_writable_dirs_collapse_to_the_outermost(tmp_path):
    a, b, c = tmp_path / "a", tmp_path / "a" / "b", tmp_path / "c"
    assert vm._outermost([b, a, c, a]) == [a, c]


def test_resources_from_host_size():
    cpus, memory = vm.resources("kvm")
    assert cpus >= 1 and 1024 <= int(memory.removesuffix("M")) <= 4096
    assert vm.resources("tcg")[0] == 1  # one emulated CPU: the RTT's jitter, see resources()


def test_newest_kernel_with_modules(monkeypatch, tmp_path):
    names = ["vmlinuz-6.1.0-28-amd64", "vmlinuz-6.12.9+deb12-amd64", "vmlinuz-6.12.117+deb12-amd64"]
    assert max((Path(n) for n in names), key=vm._version_key).name == "vmlinuz-6.12.117+deb12-amd64"


def _run_dir(root: Path, name: str, checks: dict, clock: dict | None = None) -> Path:
    d = root / name
    d.mkdir(parents=True)
    (d / "summary.json").write_text(json.dumps({"checks": checks}))
    manifest = {"started": "2026-11-23T18:00:00.000+00:00", "finished": "2026-11-23T18:01:30.000+00:00",
                "platform": {"where": "vm", "kernel_release": "6.12.117+deb12-amd64", "vm_accel": "tcg"}}
    if clock:
        manifest["clock"] = clock
    (d / "manifest.json").write_text(json.dumps(manifest))
    return d


def test_records_from_a_run_and_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    checks = {"passed": True, "paths": {"slow": {"ping": {"min_ms": 81.9, "median_ms": 82.4}, "configured_rtt_ms": 80.0,
                                                 "tcp_goodput_steady_mbps": 90.0, "link_utilisation": 0.94,
                                                 "own_latency": {"own_rtt_ms": 2.1, "compensated": True}}},
              "mptcp": {"subflows_with_data": 2}}
    _run_dir(tmp_path / "sweep", "verify", checks, clock={"guest_s": 60.0, "host_wall_s": 75.5})
    r = records.record_sweep(tmp_path / "sweep", "lab1", "vm", since=0)
    assert r.passed and r.wall_s == 75.5 and r.measured["slow.rtt_ms"] == 81.9 and r.bound["slow.rtt_ms"] == 80
    assert r.measured["slow.own_rtt_ms"] == 2.1  # what the place itself adds: the comparison shows it
    assert "slow 81.9 (80; 2.1)" in compare.markdown_table([r])
    assert r.measured["mptcp.subflows"] == 2 and "tcg" in r.how
    _run_dir(tmp_path / "sweep2", "20261123-1", checks)  # no guest clock: started -> finished
    records.record_sweep(tmp_path / "sweep2", "example", "uml", since=0)
    assert {(x.lab, x.place, x.wall_s) for x in records.load()} == {("lab1", "vm", 75.5), ("example", "uml", 90.0)}


def test_a_verdict_of_another_kit_is_not_reused(tmp_path, monkeypatch):
    """The records live in a cache CI keeps between runs: a failure recorded by an earlier commit
    must not stop a later one from checking the place itself."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(records, "kit_stamp", lambda: "0.1.0 old")
    records.save(CheckResult(place="uml", lab="lab3", passed=False, wall_s=1.0, how="exit status 4"))
    assert [r.kit for r in records.load()] == ["0.1.0 old"]
    monkeypatch.setattr(records, "kit_stamp", lambda: "0.1.0 new")
    assert records.load() == []


def test_a_failed_verify_is_recorded_as_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    (tmp_path / "sweep" / "verify.partial").mkdir(parents=True)
    assert records.record_failure(tmp_path / "sweep", "lab1", "uml", 0, 12.0, "exit status 1").passed is False
    (tmp_path / "s2" / "fixed-r1.partial").mkdir(parents=True)  # a later run failing is not the setup check
    assert records.record_failure(tmp_path / "s2", "lab1", "uml", 0, 12.0, "exit status 1") is None


def test_guest_markers_find_processes(tmp_path):
    import subprocess
    import sys

    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "mlab-vm-test0000"])
    try:
        found = []
        for _ in range(50):  # CI once saw none right after the start: give /proc a moment, then say what it shows
            found = lifetime.guest_pids(b"mlab-vm-test0000")
            if p.pid in found:
                break
            time.sleep(0.1)
        cmdline = Path(f"/proc/{p.pid}/cmdline")
        assert p.pid in found, (found, cmdline.read_bytes() if cmdline.exists() else "no such /proc entry")
    finally:
        p.kill()
        p.wait()
    assert lifetime.wait_gone([p.pid], 2) == []


def test_die_with_parent(tmp_path):
    """A child started with the preexec is SIGKILLed when its parent exits."""
    import subprocess
    import sys
    import time

    code = ("import subprocess, sys; from mptcplab.places.lifetime import die_with_parent_preexec\n"
            "c = subprocess.Popen(['sleep', '60'], preexec_fn=die_with_parent_preexec())\n"
            "print(c.pid, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    pid = int(out.stdout.split()[0])
    time.sleep(0.5)
    assert lifetime.wait_gone([pid], 5) == [], "the child outlived its parent"


def test_vm_prepares_on_the_host_only_for_labs_that_build_something(monkeypatch):
    import dataclasses

    from mptcplab.run.lab import get_lab

    asked = []
    monkeypatch.setattr(vm, "kernel", lambda: Path("/boot/vmlinuz-6.12.117+deb12-amd64"))
    vm.prepare(get_lab("lab1"))
    lab2 = get_lab("lab2")
    builds = dataclasses.replace(lab2.running, prebuild=lambda release: asked.append(release) or [])
    vm.prepare(dataclasses.replace(lab2, running=builds))
    assert asked == ["6.12.117+deb12-amd64"]
    assert get_lab("lab1").running.prebuild is None and lab2.running.prebuild is not None


def test_a_guest_kernel_panic_is_recognised():
    from mptcplab.places.guest import panic_line

    out = "lab3: 26/130 ...\nKernel panic - not syncing: Kernel mode fault at addr 0x40e, ip 0x6002a216\nCPU: 0"
    assert panic_line(out) == "Kernel panic - not syncing: Kernel mode fault at addr 0x40e, ip 0x6002a216"
    assert panic_line("lab3: 27/130 random-0.5pct-n07-r1: 1551.4 pkt/s") is None


def test_the_console_reader_stops_a_panicked_guest_after_showing_its_panic():
    import subprocess

    from mptcplab.places.guest import Panicked, chunks as _chunks

    # a panicked kernel prints its panic and then never exits
    proc = subprocess.Popen(["sh", "-c", "echo 'lab3: 27/130'; echo 'Kernel panic - not syncing: Kernel mode fault'; "
                             "sleep 30"], stdout=subprocess.PIPE)
    got, t0 = [], time.monotonic()
    with pytest.raises(Panicked, match="Kernel mode fault"):
        for chunk in _chunks(proc, None):
            got.append(chunk)
    proc.kill()
    assert "Kernel panic" in "".join(got) and time.monotonic() - t0 < 10


def test_a_guest_in_its_own_session_under_a_live_run_is_not_an_orphan(tmp_path, monkeypatch):
    """UML's kernel calls setsid() under `unshare --fork`: the kit records the group of the process
    it started, and the guest below it must still count as owned (an experiment once killed a live
    `mptcplab uml run` beside it)."""
    import json
    import os
    import subprocess
    import sys

    from mptcplab.core import state

    monkeypatch.setattr(state, "STATE_DIR", tmp_path)
    code = ("import os, subprocess, sys, time\n"
            "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)', 'umid=mlab-test0001'],"
            " start_new_session=True)\n"
            "print(c.pid, flush=True); time.sleep(30)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        guest = int(parent.stdout.readline())
        assert os.getpgid(guest) != parent.pid
        (tmp_path / "1.json").write_text(json.dumps({"owner": os.getpid(), "items": [
            {"kind": "process", "pgid": parent.pid}]}))
        assert guest not in lifetime.orphan_guests()
        (tmp_path / "1.json").write_text(json.dumps({"owner": os.getpid(), "items": []}))
        assert guest in lifetime.orphan_guests()
    finally:
        os.killpg(parent.pid, 9)
        subprocess.run(["pkill", "-9", "-f", "umid=mlab-test0001"], check=False)
        parent.wait()


def test_both_guests_run_the_command_from_one_script(tmp_path):
    """UML's init and the VM's script are the same script with each guest's own setup around it."""
    from mptcplab.places import guest, uml_kernel

    uml_init = guest.script("uml", ["mptcplab", "run", "lab1"], tmp_path / "status", {"A": "b c"},
                            setup=uml_kernel.INIT_SETUP, end="sync\nhalt -f", home="/root")
    vm_run = guest.script("vm", ["mptcplab", "run", "lab1"], tmp_path / "status", {"A": "b c"}, after=vm.AFTER)
    for text, where in ((uml_init, "uml"), (vm_run, "vm")):
        assert f"MPTCPLAB_WHERE={where} A='b c'" in text and "mptcplab run lab1 </dev/null 2>&1" in text
        assert f"echo $rc > {tmp_path / 'status'}" in text and "mount -t tracefs" in text
    assert uml_init.index("mount -t proc") < uml_init.index("mptcplab run") < uml_init.index("halt -f")
    assert "dmesg" in vm_run and "halt" not in vm_run


def test_a_guest_uses_the_hosts_cache_directory(tmp_path, monkeypatch):
    """A host whose XDG_CACHE_HOME moves the kit's cache hands it to the guest, whose own HOME would
    otherwise put the cache elsewhere (the VM: a read-only /root/.cache, where the setup check's
    physics record failed to be written in a fresh-cache `make reproduce`)."""
    from mptcplab.core import paths
    from mptcplab.places import guest

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache dir"))
    text = guest.script("vm", ["mptcplab", "run", "lab2"], tmp_path / "status", {"A": "b"})
    exported = next(line for line in text.splitlines() if line.startswith("export "))
    assert f"XDG_CACHE_HOME='{tmp_path / 'cache dir'}'" in exported and "A=b" in exported
    assert str(paths.cache_dir()).startswith(str(tmp_path / "cache dir"))  # the directory vm.run makes writable
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert "XDG_CACHE_HOME" not in guest.script("vm", ["true"], tmp_path / "status")


def test_a_guest_that_stops_without_a_status_says_its_last_lines():
    # CI keeps only a failed test's last kilobytes: "see output above" there shows nothing.
    from mptcplab.places import guest

    tail = guest.Tail(lines=3)
    tail.add("run 20/25 ok\r\nrun 21/25 starts\n[  512.1] Out of memory: Killed process 7")
    tail.add("1 (python3)\n\nqemu-system-x86_64: terminating on signal 15\n")
    msg = str(tail.stopped("the VM (vng)", 255))
    assert "exit status 255" in msg and "resumes" in msg
    assert msg.splitlines()[-4:] == ["Its last lines:", "  run 21/25 starts",
                                     "  [  512.1] Out of memory: Killed process 71 (python3)",
                                     "  qemu-system-x86_64: terminating on signal 15"]
    assert "It printed nothing" in str(guest.Tail().stopped("the UML kernel", 0))


def test_every_place_has_every_name_the_place_interface_declares(fake_place):
    """The `Place` protocol is what the kit asks of a place: a name it declares that a place lacks
    fails here, not in the middle of a run in that place (the test place is held to it too)."""
    from mptcplab import places

    declared = set(places.Place.__annotations__) | {n for n, v in vars(places.Place).items()
                                                    if callable(v) and not n.startswith("_")}
    assert {"NAME", "MARKER", "run", "clean", "platform", "wall_clock"} <= declared
    for place in places.all_places():
        assert not declared - set(dir(place)), f"{place.NAME} lacks {sorted(declared - set(dir(place)))}"


def test_the_guest_markers_are_the_guest_places_own(fake_place):
    from mptcplab import places
    from mptcplab.places import uml

    assert uml.MARKER.encode() in places.guest_markers() and vm.MARKER.encode() in places.guest_markers()
    assert fake_place.MARKER.encode() in places.guest_markers() and b"" not in places.guest_markers()


def test_the_vms_cost_is_the_last_recorded_measurement_with_its_date(tmp_path, monkeypatch):
    """Under software emulation the VM's cost names the last quick run of a lab the benchmarks recorded
    as reproduced there (benchmarks/time_ratio.py), whichever lab it was, never a failed run's or another
    place's; without a record, no figure at all."""
    from mptcplab.places import vm

    monkeypatch.setattr(vm, "accelerator", lambda: "tcg")
    monkeypatch.setattr(vm.paths, "data", lambda relative: tmp_path / relative)
    assert vm.cost().endswith("a busy guest second takes about 10 s of the host's")
    row = {"where": "vm", "lab": "lab2", "quick": True, "status": "ok", "seconds": 840.0, "transfer_s": 280.0,
           "ratio": 3.0, "finished": "2026-11-25T10:40:00", "cpus": 2, "guest_clock": vm.guest_clock("tcg")}
    rows = [row, {**row, "finished": "2026-11-26T09:00:00", "status": "failed"},
            {**row, "finished": "2026-11-26T09:00:00", "guest_clock": None},  # on the host's clock: another cost
            {**row, "finished": "2026-11-26T09:00:00", "where": "uml"},
            {**row, "finished": "2026-11-24T09:00:00", "seconds": 1440.0, "ratio": 7.2},
            {**row, "finished": "2026-11-25T10:50:00", "lab": "lab9", "quick": False}]
    (tmp_path / vm.TIME_RATIO).parent.mkdir(parents=True)
    (tmp_path / vm.TIME_RATIO).write_text(json.dumps(rows))
    assert vm.cost().endswith("(a quick lab2 took 14 min, 3.0x its 280 s of transfers, on 2026-11-25 on a 2-core "
                              "host: benchmarks/results/time_ratio.md)")


def test_a_guest_says_when_its_kernel_started_the_kit_and_how_long_the_kit_took():
    from mptcplab.places import guest

    # /proc/self/stat: the name may hold spaces and ")"; starttime (field 22) 500 ticks after boot
    stat = "123 (py (x) y) S " + " ".join(str(i) for i in range(4, 22)) + " 500 0 0"
    ticks = __import__("os").sysconf("SC_CLK_TCK")
    assert guest.start_up(stat, "45.50 3.00") == pytest.approx((500 / ticks, 45.5 - 500 / ticks))
    assert guest.start_up("garbage", "1.0 1.0") is None
    up = guest.start_up()  # this process, here
    assert up is not None and up[0] > 0 and up[1] >= 0


def test_the_kits_bytecode_is_written_before_a_guest_starts_whatever_the_environment_says(tmp_path, monkeypatch):
    """The VM's guest reads the host's files read-only: a module without current bytecode is
    compiled from source by every guest process, on every boot (seconds under TCG)."""
    import importlib.util

    from mptcplab.places import guest

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")  # as on the reference host
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("X = 1\n")
    (pkg / "sub" / "m.py").write_text("Y = 2\n")
    guest.byte_compile(pkg)
    pycs = [Path(importlib.util.cache_from_source(str(pkg / f))) for f in ("__init__.py", "sub/m.py")]
    for source, pyc in zip((pkg / "__init__.py", pkg / "sub" / "m.py"), pycs):
        head = pyc.read_bytes()[:16]  # magic, flags 0 (checked by the source's mtime), mtime, size
        assert head[:4] == importlib.util.MAGIC_NUMBER and int.from_bytes(head[4:8], "little") == 0
        assert int.from_bytes(head[8:12], "little") == int(source.stat().st_mtime)
    before = [p.stat().st_mtime_ns for p in pycs]
    guest.byte_compile(pkg)  # current: left alone
    assert [p.stat().st_mtime_ns for p in pycs] == before
