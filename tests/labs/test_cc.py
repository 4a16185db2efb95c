"""Unit tests of the BPF congestion-control package (no kernel needed, except the compile test)."""

import os
import shutil
from pathlib import Path

import pytest

from mptcplab.core.errors import UsageError
from mptcplab.labs.lab2 import cc
from mptcplab.labs.lab2.cc import loader

SS_SAMPLE = """\
ESTAB 0      179704      10.1.1.1:48436     10.1.2.1:5201
\t mlab_cs218 wscale:10,10 rto:240 rtt:36.449/4.964 mss:1448 cwnd:19 ssthresh:10 tcp-ulp-mptcp flags:Mec
ESTAB 0      164168      10.2.1.1%p2:48527     10.1.2.1:5201
\t mlab_cs218 wscale:10,10 rto:236 rtt:35.59/5.498 mss:1448 cwnd:18 ssthresh:10 tcp-ulp-mptcp flags:Jjec
SYN-SENT 0 1 10.3.1.1:40000 10.1.2.1:5201
\t cubic rto:1000 mss:524
"""


def test_names_fit_the_kernel_and_the_clean_prefix():
    names = [a.name for a in cc.ALGORITHMS.values()]
    assert len(set(names)) == len(names)
    for n in names:
        assert n.startswith("mlab_"), "mptcplab clean finds the kit's CCs by this prefix"
        assert len(n) <= 15, "TCP_CA_NAME_MAX is 16 bytes with the NUL"
    # stats() finds the .bss map by the first 8 characters (libbpf 1.1 cuts names there)
    assert len({n[:8] for n in names}) == len(names)
    assert sorted(a.code for a in cc.ALGORITHMS.values()) == list(range(len(names)))


def test_resolve_accepts_keys_names_and_all():
    assert [a.key for a in cc.resolve(["lia", "mlab_cs218"])] == ["lia", "cs218"]
    assert len(cc.resolve(None)) == len(cc.resolve(["all"])) == len(cc.ALGORITHMS)
    with pytest.raises(UsageError, match="unknown congestion control 'cubic'"):
        cc.resolve(["cubic"])


def test_unload_refuses_foreign_names(monkeypatch):
    monkeypatch.setattr(loader, "list_loaded", lambda: [])
    with pytest.raises(UsageError, match="not one of the kit's"):
        cc.unload(["bbr"])


def test_list_loaded_filters_prefix_and_kind(monkeypatch):
    monkeypatch.setattr(loader, "_struct_ops", lambda: [
        {"id": 1, "name": "mlab_lia", "kernel_struct_ops": "tcp_congestion_ops"},
        {"id": 2, "name": "bpf_cubic", "kernel_struct_ops": "tcp_congestion_ops"},
        {"id": 3, "name": "mlab_other", "kernel_struct_ops": "sched_ext_ops"},
    ])
    assert cc.list_loaded() == ["mlab_lia"]


def test_parse_ss_finds_the_cc_of_each_subflow():
    socks = cc.parse_ss_cc(SS_SAMPLE)
    assert [(s["local"], s["cc"], s["mptcp_subflow"]) for s in socks] == [
        ("10.1.1.1:48436", "mlab_cs218", True), ("10.2.1.1:48527", "mlab_cs218", True),
        ("10.3.1.1:40000", "cubic", False)]


def test_parse_ss_reads_the_cc_after_skmem():
    # `ss -tinmM` (the lab samplers) puts skmem:(...) before the CC name (iproute2 6.1)
    text = ("tcp ESTAB 0 0 10.1.0.1:37634 10.1.1.2:5201\n"
            "\t skmem:(r0,rb131072,t0,tb46080,f0,w0,o0,bl0,d0) mlab_uncoupled wscale:7,7 rto:204 tcp-ulp-mptcp\n")
    assert [(s["cc"], s["mptcp_subflow"]) for s in cc.parse_ss_cc(text)] == [("mlab_uncoupled", True)]


def test_source_names_every_algorithm():
    src = loader.SOURCE.read_text()
    assert f"ALGO_CS218 {cc.ALGORITHMS['cs218'].code}" in src
    assert "CS218_MIN_ACKS 5" in src  # "more than 5 consecutive ACKs"


@pytest.mark.skipif(not (shutil.which("clang") and Path("/sys/kernel/btf/vmlinux").exists() and os.geteuid() == 0),
                    reason="needs clang, kernel BTF and root")
@pytest.mark.slow  # clang compiles every BPF congestion control
def test_every_algorithm_compiles(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    objects = cc.build()
    assert set(objects) == {a.name for a in cc.ALGORITHMS.values()}
    for obj in objects.values():
        assert obj.stat().st_size > 0 and str(obj).startswith(str(tmp_path))


@pytest.mark.skipif(not (shutil.which("clang") and Path("/sys/kernel/btf/vmlinux").exists() and os.geteuid() == 0),
                    reason="needs clang, kernel BTF and root")
@pytest.mark.slow  # clang compiles the programs for the guest's kernel (36 s measured on a loaded host)
def test_prebuild_for_a_guest_kernel_uses_the_vmlinux_h_its_guest_dumped(tmp_path, monkeypatch):
    """The VM place compiles a guest's objects on the host, into the folder the guest reads."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert loader.prebuild_for("9.9.9-guest") == []  # no guest has dumped its header yet: it builds itself
    cc.build(algos=[cc.ALGORITHMS["uncoupled"]])  # the host's own vmlinux.h stands in for a guest's
    guest = loader.paths.cache_dir("cc") / "9.9.9-guest-0123456789ab"
    guest.mkdir()
    shutil.copy(loader.kernel_dir() / "vmlinux.h", guest / "vmlinux.h")
    assert loader.prebuild_for("9.9.9-guest") == [guest]
    for sub in ("", "record"):
        built = {p.name for p in (loader.cache_dir(guest) / sub).glob("*.o")}
        assert built == {f"{a.name}.o" for a in cc.ALGORITHMS.values()}, sub


# `bpftool -j map dump id N` of a program's .bss, as bpftool 7.1 prints it (mlab_lia after one socket)
BSS_DUMP = ('[{"value":{".bss":[{"mlab_acks":5},{"mlab_coupled_acks":4},{"mlab_dwnd_acks":0},'
            '{"mlab_losses":1},{"mlab_max_subflows":2},{"mlab_sockets":3}]},"formatted":{"value":{".bss":['
            '{"mlab_acks":5},{"mlab_coupled_acks":4},{"mlab_dwnd_acks":0},{"mlab_losses":1},'
            '{"mlab_max_subflows":2},{"mlab_sockets":3}]}}}]')


def test_counters_are_parsed_from_the_programs_bss_dump_and_differenced_per_run():
    before = cc.parse_counters(BSS_DUMP)
    assert before == {"acks": 5, "coupled_acks": 4, "dwnd_acks": 0, "losses": 1, "max_subflows": 2, "sockets": 3}
    after = {**before, "acks": 905, "coupled_acks": 804, "losses": 4, "sockets": 5, "max_subflows": 4}
    # max_subflows is a maximum since registration: no per-run difference
    assert cc.counted(before, after) == {"acks": 900, "coupled_acks": 800, "dwnd_acks": 0, "losses": 3, "sockets": 2}
    assert cc.counted({}, after) is None and cc.counted(before, {}) is None
    for bad in ("", "[]", '[{"value": 1}]', "not json"):
        assert cc.parse_counters(bad) == {}


def test_counters_are_read_from_the_registered_programs_own_map(monkeypatch):
    """Found through the struct_ops' programs (not by map name), looked up once, and looked up
    again when the map is gone (the program was registered anew)."""
    calls = []
    maps = {"mlab_events": {"id": 7}, "mlab_ctl": {"id": 8}, "mlab_lia.bss": {"id": 9}}
    monkeypatch.setattr(loader, "_counter_maps", {"mlab_lia": 3})  # a stale id from an earlier registration
    monkeypatch.setattr(loader, "_maps", lambda name, fresh=False: calls.append((name, fresh)) or maps)

    def run(argv, check=True):
        from types import SimpleNamespace
        return SimpleNamespace(stdout=BSS_DUMP if argv[-1] == "9" else "", returncode=0 if argv[-1] == "9" else 255)
    monkeypatch.setattr(loader, "_run", run)
    assert cc.stats("mlab_lia")["sockets"] == 3 and calls == [("mlab_lia", True)]
    assert cc.stats("mlab_lia")["acks"] == 5 and calls == [("mlab_lia", True)]  # cached: one bpftool call per reading

    def unregistered(name, fresh=False):
        raise loader.EnvironmentProblem(f"{name} is not registered")
    monkeypatch.setattr(loader, "_maps", unregistered)
    monkeypatch.setattr(loader, "_counter_maps", {})
    assert cc.stats("mlab_lia") == {}


def test_a_registered_ccs_maps_are_looked_up_once_until_it_is_loaded_or_unloaded_again(monkeypatch):
    """recording() opens the maps of a congestion control registered for the whole sweep: the four
    bpftool runs that find them (about 2 s per recorded run in the emulated VM) happen once."""
    import subprocess

    calls = []

    def bpftool(argv, check=True):
        calls.append(argv[1:])
        out = {("-j", "struct_ops", "list"): '[{"id": 7, "name": "mlab_lia", "kernel_struct_ops": "tcp_congestion_ops"}]',
               ("-j", "struct_ops", "dump", "id", "7"): "prog_id:41 prog_id:42",
               ("-j", "prog", "show"): '[{"id": 41, "map_ids": [3, 4]}, {"id": 42, "map_ids": [4]}]',
               ("-j", "map", "show"): '[{"id": 3, "name": "mlab_ctl"}, {"id": 4, "name": "mlab_events"}, {"id": 5, "name": "x"}]',
               ("struct_ops", "unregister", "name", "mlab_lia"): ""}[tuple(argv[1:])]
        return subprocess.CompletedProcess(argv, 0, out, "")

    monkeypatch.setattr(loader, "_run", bpftool)
    monkeypatch.setattr(loader, "_maps_of", {})
    first = loader._maps("mlab_lia")
    assert set(first) == {"mlab_ctl", "mlab_events"} and len(calls) == 4
    assert loader._maps("mlab_lia") == first and len(calls) == 4  # kept
    assert loader._maps("mlab_lia", fresh=True) == first and len(calls) == 8  # asked again when told
    loader.unload(["mlab_lia"])
    calls.clear()
    loader._maps("mlab_lia")
    assert len(calls) == 4  # forgotten by the unload


def test_the_reports_rule_is_its_own_program_chosen_by_the_algorithms_list(tmp_path, monkeypatch):
    """Issue 37's control: `--set 'algorithms=["uncoupled","lia_report","cs218_report"]'` gives the
    runs other struct_ops programs (compiled with their own MLAB_ALGO and name), and the kernel is
    told those names (TCP_CONGESTION: the transfer's cc)."""
    from mptcplab.labs.lab2 import experiment
    from mptcplab.run.lab import get_lab

    lab = get_lab("lab2")
    params = lab.load_params(False, {"algorithms": ["uncoupled", "lia_report", "cs218_report"]})
    algos = experiment.algorithms(params)
    assert [a.name for a in algos] == ["mlab_uncoupled", "mlab_rlia", "mlab_rcs218"]
    assert {p.values["algo"] for p in lab.points(params)} == {"uncoupled", "lia_report", "cs218_report"}
    src = loader.SOURCE.read_text()
    for key, define in (("lia_report", "ALGO_LIA_REPORT"), ("cs218_report", "ALGO_CS218_REPORT")):
        assert f"#define {define} {cc.ALGORITHMS[key].code}" in src
    (tmp_path / "vmlinux.h").write_text("")
    ran = []
    monkeypatch.setattr(loader, "_require_bpf", lambda: None)
    monkeypatch.setattr(loader, "_run", lambda argv, check=True: ran.append(argv) or Path(argv[-1]).write_bytes(b"o"))
    cc.build(algos[1:], kdir=tmp_path)
    defines = [[a for a in argv if a.startswith("-DMLAB_")] for argv in ran]
    assert defines == [["-DMLAB_ALGO=5", "-DMLAB_NAME=mlab_rlia", "-DMLAB_EVENTS=1"],
                       ["-DMLAB_ALGO=6", "-DMLAB_NAME=mlab_rcs218", "-DMLAB_EVENTS=1"]]
    assert cc.ALGORITHMS["lia"].code == 3 and "lia_report" not in experiment.LAB.load_params(False)["algorithms"]
