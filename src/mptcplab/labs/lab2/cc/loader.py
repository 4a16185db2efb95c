"""Build, register, list and remove the kit's BPF congestion controls (`mlab_*`).

`mlab_cc.bpf.c` is compiled once per algorithm with clang against a `vmlinux.h` dumped from
the running kernel's BTF (`bpftool btf dump`); both are cached under
`~/.cache/mptcplab/cc/<kernel>-<btf hash>/<source hash>/`, never in the repository. For a guest's
kernel (the VM place) the host writes that folder before the boot, from the kernel image's BTF
(`prebuild_for`, `image_btf`): the guest finds its objects built.
Registration is `bpftool struct_ops register`: the kernel then keeps the congestion control
(it shows up in `net.ipv4.tcp_available_congestion_control`) until
`bpftool struct_ops unregister name <name>`.

Recording (`load(..., record=True)`, then `recording(name)`): the same source built with
RECORD_SLOTS event slots; each callback writes its inputs and the window it set into the
program's `mlab_events` array map while `mlab_ctl.on` is set (see mlab_cc.bpf.c). Both maps are
mmapable and read through a memory map of each: `bpftool map dump` of 2^17 events is ~170 MB of
JSON and takes seconds, a memory map of the same is 19 MB read at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import mmap
import os
import platform
import re
import shutil
import struct
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd

from . import image_btf
from ....core import paths, process
from ....core.errors import EnvironmentProblem, UsageError
from ....core.files import replace_file
from ....measure.observe import ss_sockets

PREFIX = f"{paths.PREFIX}_"  # the kit's BPF congestion controls: mlab_<algo>
SOURCE = Path(__file__).with_name("mlab_cc.bpf.c")
BTF = Path("/sys/kernel/btf/vmlinux")
AVAILABLE = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
RECORD_SLOTS = 1 << 17  # events a recording build keeps (a 10 s lab run writes ~20-40 thousand)


@dataclass(frozen=True)
class Algorithm:
    key: str  # short name used on the command line and in results
    code: int  # MLAB_ALGO in mlab_cc.bpf.c
    name: str  # the congestion control's name (TCP_CONGESTION), <= 15 chars
    title: str  # as the report calls it
    rule: str  # one line: increase per ACK / decrease per loss


ALGORITHMS: dict[str, Algorithm] = {a.key: a for a in (
    Algorithm("uncoupled", 0, "mlab_uncoupled", "Uncoupled",
              "w_r += 1/w_r per ACK; w_r /= 2 on loss (Reno on every subflow)"),
    Algorithm("ewtcp", 1, "mlab_ewtcp", "EWTCP",
              "w_r += a/w_r per ACK, a = 1/sqrt(n); w_r /= 2 on loss"),
    Algorithm("coupled", 2, "mlab_coupled", "Fully Coupled",
              "w_r += 1/w_total per ACK; w_r -= w_total/2 on loss"),
    Algorithm("lia", 3, "mlab_lia", "RTT Compensator (LIA, RFC 6356)",
              "w_r += min(alpha/w_total, 1/w_r) per ACK; w_r /= 2 on loss"),
    Algorithm("cs218", 4, "mlab_cs218", "CS218 ALGO (delay window)",
              "LIA increase, plus DWND = LIA increase * best_rtt/last_rtt after more than 5 ACKs "
              "since the last loss; w_r /= 2 and ACK count = 0 on loss"),
    # Controls (issue 37), in no default run: the report's own RTT-compensator rule (its Sec. 1),
    # a = 1/sqrt(n) where LIA has alpha (for 4 equal paths twice LIA's), and CS218 on it.
    Algorithm("lia_report", 5, "mlab_rlia", "RTT Compensator, the report's rule (a = 1/√n)",
              "w_r += min(a/w_total, 1/w_r) per ACK, a = 1/sqrt(n); w_r /= 2 on loss"),
    Algorithm("cs218_report", 6, "mlab_rcs218", "CS218 ALGO on the report's rule",
              "the report's increase min(a/w_total, 1/w_r), a = 1/sqrt(n), plus DWND = that increase * "
              "best_rtt/last_rtt after more than 5 ACKs since the last loss; w_r /= 2 and ACK count = 0 on loss"),
)}


def resolve(names: list[str] | None) -> list[Algorithm]:
    """Algorithms by key ("lia") or kernel name ("mlab_lia"); all of them for None/[]/["all"]."""
    if not names or names == ["all"]:
        return list(ALGORITHMS.values())
    by_name = {a.name: a for a in ALGORITHMS.values()}
    out = []
    for n in names:
        algo = ALGORITHMS.get(n) or by_name.get(n)
        if algo is None:
            raise UsageError(f"unknown congestion control {n!r}; choose from: {', '.join(ALGORITHMS)} (or all)")
        out.append(algo)
    return out


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess:
    if shutil.which(argv[0]) is None:
        raise EnvironmentProblem(f"{argv[0]} is not installed: apt-get install clang llvm libbpf-dev bpftool")
    return process.run(argv, check=check)


def _require_bpf() -> None:
    if os.geteuid() != 0:
        raise EnvironmentProblem("registering BPF congestion controls needs root (run with sudo)")
    if not BTF.exists():
        raise EnvironmentProblem(f"{BTF} is missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF); "
                                 "BPF struct_ops congestion controls cannot load. UML has none either.")
    for tool in ("bpftool", "clang"):
        if shutil.which(tool) is None:
            raise EnvironmentProblem(f"{tool} is not installed: apt-get install clang llvm libbpf-dev bpftool")


def _kernel_dir(release: str, btf: bytes) -> Path:
    """A kernel's folder in the cache (its vmlinux.h): per release and BTF, so the host names a
    guest kernel's folder as the guest does (guest_kernel_dir)."""
    return paths.cache_dir("cc") / f"{release}-{hashlib.sha256(btf).hexdigest()[:12]}"


def kernel_dir() -> Path:
    """The running kernel's folder in the cache."""
    return _kernel_dir(platform.release(), BTF.read_bytes())


def cache_dir(kdir: Path | None = None) -> Path:
    """Per kernel BTF and per source: a kernel upgrade or an edit to the source rebuilds."""
    return (kdir or kernel_dir()) / hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]


def build(algos: list[Algorithm] | None = None, record: bool = False, kdir: Path | None = None) -> dict[str, Path]:
    """Compile each algorithm's object (cached); returns {name: object path}. `record`: the
    build with RECORD_SLOTS event slots (otherwise 1: nothing is kept). `kdir`: another kernel's
    cache folder, whose vmlinux.h a guest dumped (prebuild_for), instead of the running kernel's."""
    _require_bpf()
    out_dir = cache_dir(kdir) / ("record" if record else "")
    out_dir.mkdir(parents=True, exist_ok=True)
    vmlinux_h = (kdir or kernel_dir()) / "vmlinux.h"
    if not vmlinux_h.exists():
        if kdir is not None:  # only its own kernel's BTF can be dumped here, never into a guest's folder
            raise EnvironmentProblem(f"no vmlinux.h in {kdir}: that kernel's first run writes it")
        dump = _run(["bpftool", "btf", "dump", "file", str(BTF), "format", "c"])
        replace_file(vmlinux_h, dump.stdout.encode())
    objects = {}
    for algo in algos or ALGORITHMS.values():
        # libbpf names the object (and its .bss map) after the file: keep it `<name>.o`.
        obj = out_dir / f"{algo.name}.o"
        if not obj.exists():
            with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
                tmp_obj = Path(tmp) / obj.name
                # -mcpu=v3: atomic fetch-and-add with a result (the event slot), kernel >= 5.12
                _run(["clang", "-O2", "-g", "-target", "bpf", "-mcpu=v3", "-D__TARGET_ARCH_x86",
                      f"-DMLAB_ALGO={algo.code}", f"-DMLAB_NAME={algo.name}",
                      f"-DMLAB_EVENTS={RECORD_SLOTS if record else 1}",
                      "-I", str(vmlinux_h.parent), "-c", str(SOURCE), "-o", str(tmp_obj)])
                tmp_obj.replace(obj)
        objects[algo.name] = obj
    return objects


def guest_kernel_dir(image: Path) -> Path | None:
    """The cache folder of the kernel in `image` (not running here), its vmlinux.h written from the
    image's own BTF (image_btf): the folder a guest booted from it computes for itself (same
    release, same BTF hash). None when the image cannot be read here (then the guest dumps it)."""
    release = Path(image).name.removeprefix("vmlinuz-")
    try:
        btf = image_btf.btf(image)
    except (OSError, EnvironmentProblem):
        return None
    kdir = _kernel_dir(release, btf)
    if not (kdir / "vmlinux.h").exists():
        kdir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=kdir, suffix=".btf") as raw:
            raw.write(btf)
            raw.flush()
            dump = _run(["bpftool", "btf", "dump", "file", raw.name, "format", "c"])
        replace_file(kdir / "vmlinux.h", dump.stdout.encode())
    return kdir


def prebuild_for(release: str) -> list[Path]:
    """Compile the objects (both builds) on this host for another kernel, a guest's, before the
    guest boots: clang under software emulation took 54 s for them, natively a few seconds, and the
    result is the same file (same compiler, header, source and flags). The header comes from the
    guest kernel's image (/boot/vmlinuz-<release>, guest_kernel_dir), else from a vmlinux.h an
    earlier guest dumped into the shared cache. Returns the folders filled; none without clang here."""
    if shutil.which("clang") is None:
        return []
    kdirs = {d for d in paths.cache_dir("cc").glob(f"{release}-*") if (d / "vmlinux.h").exists()}
    from_image = guest_kernel_dir(Path("/boot") / f"vmlinuz-{release}")
    if from_image is not None:
        kdirs.add(from_image)
    for kdir in sorted(kdirs):
        for record in (False, True):
            build(record=record, kdir=kdir)
    return sorted(kdirs)


def _struct_ops() -> list[dict]:
    """bpftool's view of every registered struct_ops map."""
    if shutil.which("bpftool") is None:
        return []
    proc = _run(["bpftool", "-j", "struct_ops", "list"], check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        return []
    return json.loads(proc.stdout)


def list_loaded() -> list[str]:
    """Names of the registered `mlab_*` congestion controls."""
    return sorted(m["name"] for m in _struct_ops()
                  if m.get("name", "").startswith(PREFIX) and m.get("kernel_struct_ops") == "tcp_congestion_ops")


def available() -> list[str]:
    """What `TCP_CONGESTION` accepts right now."""
    return AVAILABLE.read_text().split() if AVAILABLE.exists() else []


def load(algos: list[Algorithm] | None = None, record: bool = False) -> list[str]:
    """Build and register; returns the names registered by this call (already loaded ones are
    skipped). `record`: the recording build (see `recording`)."""
    algos = algos or list(ALGORITHMS.values())
    objects = build(algos, record)
    loaded = set(list_loaded())
    done = []
    for algo in algos:
        if algo.name in loaded:
            if record and _maps(algo.name, fresh=True).get("mlab_events", {}).get("max_entries", 0) < RECORD_SLOTS:
                raise UsageError(f"{algo.name} is registered without event slots: "
                                 f"`sudo mptcplab cc unload {algo.key}` first to record")
            continue
        if algo.name in available():  # a built-in or module with our name: refuse to shadow it
            unload(done)
            raise EnvironmentProblem(f"a congestion control named {algo.name} exists and is not the kit's")
        _maps_of.pop(algo.name, None)
        try:
            _run(["bpftool", "struct_ops", "register", str(objects[algo.name])])
        except EnvironmentProblem:
            unload(done)  # all or nothing: no half-loaded set left behind
            raise
        done.append(algo.name)
    missing = [a.name for a in algos if a.name not in available()]
    if missing:
        unload(done)
        raise EnvironmentProblem(f"registered but not offered by the kernel: {', '.join(missing)}")
    return done


def unload(names: list[str]) -> list[str]:
    """Unregister these `mlab_*` congestion controls; returns the names removed.

    Sockets still using one keep it until they close; new sockets can no longer select it."""
    removed = []
    loaded = set(list_loaded())
    for name in names:
        if not name.startswith(PREFIX):
            raise UsageError(f"{name} is not one of the kit's congestion controls (they start with {PREFIX})")
        _maps_of.pop(name, None)
        if name in loaded and _run(["bpftool", "struct_ops", "unregister", "name", name], check=False).returncode == 0:
            removed.append(name)
    return removed


def unload_all() -> list[str]:
    """Remove every registered `mlab_*` congestion control (used by `mptcplab clean`)."""
    return unload(list_loaded())


@contextlib.contextmanager
def loaded(algos: list[Algorithm] | None = None, record: bool = False) -> Iterator[list[str]]:
    """Load for the duration of a block; afterwards remove what this block registered."""
    done = load(algos, record)
    try:
        yield [a.name for a in (algos or ALGORITHMS.values())]
    finally:
        unload(done)


# The programs' own counters (their .bss, see mlab_cc.bpf.c) that count events; `max_subflows` is a
# maximum, not a count, so it has no per-run difference.
COUNTS = ("acks", "coupled_acks", "dwnd_acks", "losses", "sockets")
_counter_maps: dict[str, int] = {}  # name -> id of its registered programs' .bss map (ids are not reused)


def parse_counters(dump: str) -> dict[str, int]:
    """A .bss map's variables from `bpftool -j map dump` (BTF-formatted: one {name: value} per
    variable), without the `mlab_` prefix; {} when the text is not such a dump."""
    try:
        fields = json.loads(dump)[0]["formatted"]["value"][".bss"]
        return {k.removeprefix(PREFIX): int(v) for item in fields for k, v in item.items()}
    except (ValueError, LookupError, TypeError, AttributeError):
        return {}


def stats(name: str) -> dict[str, int]:
    """The counters of registered congestion control `name` (ACKs handled, ACKs that saw sibling
    subflows, ACKs with the CS218 delay window, losses, sockets initialised, most subflows seen
    on one connection), read from the .bss map of *its* programs ({} when it is not registered).

    They count from its registration: a run's share is the difference of two readings (`counted`).
    The programs are found through the struct_ops map (`_maps`), not by map name, which another
    object's map may share; bpftool's run_cnt is no substitute, it stays 0 unless
    kernel.bpf_stats_enabled=1 (then struct_ops callbacks are counted too: their trampolines call
    update_prog_stats, kernel/bpf/trampoline.c in 6.12)."""
    for attempt in (0, 1):
        mid = _counter_maps.get(name)
        if mid is None or attempt:
            try:
                bss = [m for n, m in _maps(name, fresh=bool(attempt)).items() if n.endswith(".bss")]
            except EnvironmentProblem:  # not registered
                return {}
            if not bss:
                return {}
            mid = _counter_maps[name] = bss[0]["id"]
        values = parse_counters(_run(["bpftool", "-j", "map", "dump", "id", str(mid)], check=False).stdout)
        if values:
            return values
    return {}


def counted(before: dict[str, int], after: dict[str, int]) -> dict[str, int] | None:
    """What the program counted between two readings of `stats` (None if either is missing)."""
    if not before or not after:
        return None
    return {k: after[k] - before.get(k, 0) for k in COUNTS if k in after}


# ---------------------------------------------------------------- recording the callbacks

# struct mlab_event in mlab_cc.bpf.c, field for field
MAX_SUBFLOWS = 8
EVENT = np.dtype([("t_ns", "<u8"), ("acc", "<u8"), ("inc", "<u8")]
                 + [(f, "<u4") for f in ("sock", "kind", "saddr", "acked", "limited", "cwnd", "ssthresh", "out",
                                         "ack_count", "best_rtt_us", "last_rtt_us", "n", "self", "no_rtt")]
                 + [("w", "<u4", (MAX_SUBFLOWS,)), ("rtt", "<u4", (MAX_SUBFLOWS,))])
KINDS = {1: "init", 2: "rtt", 3: "ack", 4: "loss", 5: "undo"}
_NR_BPF = {"x86_64": 321, "aarch64": 280}
_BPF_MAP_GET_FD_BY_ID = 14


_maps_of: dict[str, dict[str, dict]] = {}  # name -> its maps while registered (load/unload forget it)


def _maps(name: str, fresh: bool = False) -> dict[str, dict]:
    """The maps of registered congestion control `name`, by map name (bpftool's JSON). Kept per
    name until this process loads or unloads it: four bpftool runs took about 2 s of every
    recorded run in the VM under software emulation (a detailed run's steps 2.6 s short of its
    `measure`); map ids are not reused, so a stale entry fails to open rather than open another map."""
    if not fresh and name in _maps_of:
        return _maps_of[name]
    so = [m for m in _struct_ops() if m.get("name") == name]
    if not so:
        raise EnvironmentProblem(f"{name} is not registered (sudo mptcplab cc load)")
    dump = _run(["bpftool", "-j", "struct_ops", "dump", "id", str(so[0]["id"])]).stdout
    prog_ids = {int(i) for i in re.findall(r"prog_id:(\d+)", dump)}
    progs = json.loads(_run(["bpftool", "-j", "prog", "show"]).stdout)
    map_ids = {m for p in progs if p["id"] in prog_ids for m in p.get("map_ids", [])}
    maps = _maps_of[name] = {m["name"]: m for m in json.loads(_run(["bpftool", "-j", "map", "show"]).stdout)
                             if m["id"] in map_ids}
    return maps


def _map_mmap(info: dict) -> mmap.mmap:
    """A read-write memory map of an mmapable array map, by id (bpf(BPF_MAP_GET_FD_BY_ID))."""
    nr = _NR_BPF.get(platform.machine())
    if nr is None:
        raise EnvironmentProblem(f"recording: no bpf syscall number known for {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    attr = struct.pack("<III", info["id"], 0, 0)  # map_id, next_id, open_flags
    fd = libc.syscall(nr, _BPF_MAP_GET_FD_BY_ID, ctypes.c_char_p(attr), len(attr))
    if fd < 0:
        raise EnvironmentProblem(f"bpf(MAP_GET_FD_BY_ID {info['id']}): {os.strerror(ctypes.get_errno())}")
    try:
        size = info["bytes_value"] * info["max_entries"]
        size = (size + mmap.PAGESIZE - 1) // mmap.PAGESIZE * mmap.PAGESIZE
        return mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    finally:
        os.close(fd)


@dataclass
class Recording:
    """What `recording()` collected: the events as the map held them (`raw`, EVENT records: what
    `save_raw` keeps, the cheapest copy a slow guest can make), `events` one row per callback
    (columns of EVENT, `w`/`rtt` spread into w0..w7 / rtt0..rtt7, `kind` by name), and how many
    events found the map full."""

    raw: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=EVENT))
    dropped: int = 0

    @property
    def events(self) -> pd.DataFrame:
        return events_frame(self.raw)


def save_raw(raw: np.ndarray, path: Path) -> Path:
    """The recorded events as they were in the map (numpy's .npy): load_raw reads them back."""
    with open(path, "wb") as f:
        np.save(f, raw, allow_pickle=False)
    return Path(path)


def load_raw(path: Path) -> np.ndarray:
    return np.load(path, allow_pickle=False)


def events_frame(raw: np.ndarray) -> pd.DataFrame:
    df = pd.DataFrame({f: raw[f] for f in EVENT.names if f not in ("w", "rtt")})
    for k in range(MAX_SUBFLOWS):
        df[f"w{k}"] = raw["w"][:, k]
        df[f"rtt{k}"] = raw["rtt"][:, k]
    df["kind"] = df.kind.map(KINDS)
    return df


@contextlib.contextmanager
def recording(name: str) -> Iterator[Recording]:
    """Record every callback of registered congestion control `name` (a recording build, see
    `load(record=True)`) during the block."""
    maps = _maps(name)
    if maps.get("mlab_events", {}).get("max_entries", 0) < 2:
        raise UsageError(f"{name} was registered without event slots: load it with record=True")
    try:
        ctl, ev = _map_mmap(maps["mlab_ctl"]), _map_mmap(maps["mlab_events"])
    except EnvironmentProblem:  # registered again by another process since: its maps now
        maps = _maps(name, fresh=True)
        ctl, ev = _map_mmap(maps["mlab_ctl"]), _map_mmap(maps["mlab_events"])
    rec = Recording()
    struct.pack_into("<IIII", ctl, 0, 0, 0, 0, 0)
    struct.pack_into("<I", ctl, 0, 1)
    try:
        yield rec
    finally:
        struct.pack_into("<I", ctl, 0, 0)
        time.sleep(0.05)  # let a callback that saw `on` finish its slot
        _, nxt, dropped, _ = struct.unpack_from("<IIII", ctl, 0)
        slots = maps["mlab_events"]["max_entries"]
        rec.raw, rec.dropped = np.frombuffer(ev, dtype=EVENT, count=min(nxt, slots)).copy(), dropped
        ctl.close()
        ev.close()


def parse_ss_cc(text: str) -> list[dict]:
    """Sockets and their congestion control from `ss -tin[mM]` output (the CC is the first word of
    each TCP socket's info line after any skmem:(...), e.g. `mlab_lia wscale:7,7 rto:204 ...`;
    MPTCP sockets have none)."""
    out = []
    for _, sock, line in ss_sockets(text):  # the kit's one reader of ss's socket lines
        # with -m the info line starts with skmem:(...) and the CC name follows it
        words = [w for w in line.split() if not w.startswith("skmem:")]
        first = words[0] if words else ":"
        out.append({**sock, "cc": first if ":" not in first else None, "mptcp_subflow": "tcp-ulp-mptcp" in line,
                    "info": line.strip()})
    return out


def in_use(net, host: str, port: int) -> list[dict]:
    """The established TCP sockets (MPTCP subflows included) of `host` towards `port`, with their CC."""
    # no `state` filter: with one, ss drops the State column and the fields shift
    text = net.run(host, ["ss", "-tinH", "dport", "=", f":{port}"]).stdout
    return [s for s in parse_ss_cc(text) if s["state"] == "ESTAB"]
