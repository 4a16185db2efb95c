"""Run directories, manifests and resumable sweeps.

A run writes into `<key>.partial/` and is renamed to `<key>/` only after its manifest and summary
are complete, so a crashed run never looks complete. A sweep is a directory of runs; re-running
it skips completed runs and redoes partial ones.

    sweep = Sweep("results/lab1-quick")
    with sweep.run("wmem-128K-mptcp-r1", params) as rd:
        ...  # rd.path is the directory; rd.manifest and rd.summary are dicts
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import functools
import json
import os
import platform
import shutil
import sys
import time
from pathlib import Path

from .. import __version__, places
from ..core import log, paths, process
from ..measure.observe import parse_proc_stat
from ..measure.traffic import PREVIOUS_KEYS, read_summary
from ..places import guest

LOCK_FILE = Path(os.environ.get("MPTCPLAB_LOCK", "/run/mptcplab/experiment.lock"))


def now() -> str:
    return stamp(time.time())


def stamp(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc).isoformat(timespec="milliseconds")


@functools.cache
def tool_versions() -> dict:
    """The versions of the tools the runs use. In a guest place, the host's reading (handed, see
    runner.in_place): the guest runs the host's own files (hostfs, 9p), and under software
    emulation `tshark --version` outlived its 10 s timeout, so the VM's manifests said None."""
    if "tools" in places.handed():
        return places.handed()["tools"]
    _first_line = process.first_line
    deb = lambda pkg: _first_line(["dpkg-query", "-W", "-f=${Version}", pkg])  # noqa: E731
    first = {}  # each package's version from its first program (process.TOOLS)
    for pkg, argv in process.TOOLS.values():
        first.setdefault(pkg, argv)
    return {"mptcplab": __version__, "python": platform.python_version(),
            **{pkg: _first_line(argv) for pkg, argv in first.items()}, "mptcpd (mptcpize)": deb("mptcpd")}


def git_commit() -> dict:
    """The checkout's commit and whether it has uncommitted changes (paths.git_commit). In a guest
    place, the host's reading (handed, see runner.in_place): the guest runs the host's checkout
    read-only, and under software emulation its first `git status` over 9p took ~8 s of the setup
    check (benchmarks/results/vm_run_overhead.md)."""
    return places.handed().get("git") or paths.git_commit()


def platform_info() -> dict:
    place = places.current()
    info = {
        "where": place.NAME,
        "kernel_release": platform.release(),
        "kernel_version": platform.version(),
        "machine": platform.machine(),
        "hostname": platform.node(),
        "cpus": os.cpu_count(),
        **place.platform(),  # the guest's own facts (which kernel build, its clock)
    }
    return info


def busy_cpu_s() -> float:
    """A count of the CPU seconds this kernel has spent busy, summed over its CPUs (its differences
    are what mean something): each online CPU's time less what /proc/stat counts as idle and
    iowait. Not the sum of /proc/stat's busy fields: those are timer ticks that landed on busy
    work, and an idle CPU without ticks (NO_HZ) counts none of the interrupts that wake it (Lab 2's
    setup check in the VM: 1.8-1.9 s by the ticks in two runs, 2.5 s by this count in a third).
    In a guest this is the guest's own count, and under the VM's instruction clock (vm.TCG_CLOCK)
    it counts the instructions the host emulated, while a wait (for 9p, for a timer) counts as
    idle and may still move the guest's clock by seconds, which `timings` then counts. It is not
    all a run costs the host: QEMU spends CPU of its own while the guest idles (a plain Lab 2 run,
    2026-11-29: 1.1-1.2 busy guest seconds, 30-38 s of QEMU's CPU in three runs).
    Natively and in UML the same count; natively it includes whatever else the machine runs."""
    text = Path("/proc/stat").read_text()
    ticks = parse_proc_stat(text)
    cpus = sum(1 for line in text.splitlines() if line.startswith("cpu") and not line.startswith("cpu "))
    return cpus * time.monotonic() - (ticks["idle"] + ticks["iowait"]) / os.sysconf("SC_CLK_TCK")


def kit_cpu_s() -> float:
    """CPU seconds of this process and of the children it has waited for (os.times)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def wall_clock(directory: Path) -> float:
    """Now, in wall-clock seconds: the host's, as the place this runs in reads it (UML's guest clock
    skips idle time: places.guest.host_time)."""
    return places.current().wall_clock(directory)


class RunDir:
    def __init__(self, final: Path, params: dict) -> None:
        self.final = Path(final)
        self.path = self.final.with_name(self.final.name + ".partial")
        if self.path.exists():
            shutil.rmtree(self.path)  # an earlier attempt that never finished
        self.path.mkdir(parents=True)
        self.summary: dict = {}
        self.manifest: dict = {
            "run": self.final.name,
            "started": self._wall(),
            "command": places.handed().get("command", sys.argv),  # the user's, also inside a guest
            "parameters": params,
            "platform": platform_info(),
            "tools": tool_versions(),
            "git": git_commit(),
        }
        self._clocks = self._read_clocks() if places.current().GUEST else None
        self._busy = busy_cpu_s()

    def file(self, name: str) -> Path:
        return self.path / name

    def processes_cpu(self, seconds: dict[str, float | None]) -> None:
        """CPU seconds each named process of the run used (manifest["process_cpu_s"]: the samplers,
        the trace reader, the transfer's ends, cross traffic): where a guest's CPU is what a run
        costs the host, the share of each besides the steps' totals (timed)."""
        self.manifest.setdefault("process_cpu_s", {}).update(seconds)

    def write_text(self, name: str, text: str) -> Path:
        path = self.file(name)
        path.write_text(text)
        return path

    def write_json(self, name: str, obj) -> Path:
        return self.write_text(name, json.dumps(obj, indent=2, default=str) + "\n")

    @contextlib.contextmanager
    def timed(self, step: str):
        """Where a run's time went: the block's seconds added to manifest["timings"][step] (on this
        place's clock; UML's time-travel clock skips idle time, manifest["clock"] says how much).
        A guest under software emulation spends most of a run outside its transfer (process starts,
        parsing): this record says where, run by run (benchmarks/results/vm_run_overhead.md).
        Beside it, what the block cost in CPU: manifest["timings_busy"][step], the seconds the
        kernel was busy (busy_cpu_s: every process and the kernel's own work, such as forwarding
        the emulated network's packets), and manifest["timings_kit_cpu"][step], those of the kit's
        own process and of the programs it started that ended in the block (kit_cpu_s: a live trace
        reader counts in the step that stops it). In a guest also manifest["timings_host"][step], the
        step's seconds on the host's wall clock (guest.host_time): under the VM's instruction clock
        what a step cost the host, which neither the guest's seconds nor its busy ones say (QEMU
        works while the guest idles: busy_cpu_s)."""
        t, busy, kit = time.monotonic(), busy_cpu_s(), kit_cpu_s()
        host = guest.host_time(self.path) if self._clocks else None
        try:
            yield
        finally:
            spent = [("timings", time.monotonic() - t), ("timings_busy", busy_cpu_s() - busy),
                     ("timings_kit_cpu", kit_cpu_s() - kit)]
            if host is not None:
                spent.append(("timings_host", guest.host_time(self.path) - host))
            for key, seconds in spent:
                steps = self.manifest.setdefault(key, {})
                steps[step] = round(steps.get(step, 0.0) + seconds, 3)

    def _wall(self) -> str:
        """Now on the host's wall clock (wall_clock): a UML guest's own clock skips idle time, and
        Lab 3's runs there were stamped 40 min after they ran."""
        return stamp(wall_clock(self.path))

    def _read_clocks(self) -> tuple[float, float]:
        return time.time(), guest.host_time(self.path)

    def keep_evidence(self, exc: BaseException) -> None:
        """A run that failed: what it had measured and why it stopped, in <key>.partial/failed.json
        (never summary.json: a partial run must not look done)."""
        self.manifest["failed"] = self._wall()
        self.write_json("failed.json", {"error": f"{type(exc).__name__}: {exc}", "summary": self.summary,
                                        "manifest": self.manifest})

    def finish(self) -> Path:
        self.manifest["finished"] = self._wall()
        if self._clocks:
            (guest0, host0), (guest1, host1) = self._clocks, self._read_clocks()
            # guest_busy_s: of guest_s, the seconds the guest's CPUs were busy (busy_cpu_s)
            self.manifest["clock"] = {"guest_s": round(guest1 - guest0, 3), "host_wall_s": round(host1 - host0, 3),
                                      "guest_busy_s": round(busy_cpu_s() - self._busy, 3)}
        self.manifest["artefacts"] = sorted(p.name for p in self.path.iterdir())
        self.write_json("summary.json", self.summary)
        self.write_json("manifest.json", self.manifest)
        if self.final.exists():
            shutil.rmtree(self.final)
        self.path.rename(self.final)
        return self.final


class Sweep:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)

    def done(self, key: str) -> bool:
        d = self.root / key
        return (d / "manifest.json").exists() and (d / "summary.json").exists()

    @contextlib.contextmanager
    def run(self, key: str, params: dict):
        rd = RunDir(self.root / key, params)
        try:
            yield rd  # an exception leaves <key>.partial behind, which never counts as done
        except BaseException as exc:
            rd.keep_evidence(exc)
            raise
        rd.finish()

    def runs(self) -> list[Path]:
        return sorted(d for d in self.root.iterdir()  # a crash after finish() wrote both files leaves a .partial
                      if d.is_dir() and not d.name.endswith(".partial") and self.done(d.name)) \
            if self.root.exists() else []

    def summaries(self):
        """One row per completed run: its summary, plus `run` (the key)."""
        import pandas as pd

        rows = [{"run": d.name, **read_summary(d)} for d in self.runs()]
        return pd.DataFrame(rows)


def clock_totals(sweep: Path | str) -> tuple[float, float]:
    """(guest seconds, host wall-clock seconds) summed over a sweep's guest runs (places.guest.host_time)."""
    guest = wall = 0.0
    for d in Sweep(sweep).runs():
        clock = json.loads((d / "manifest.json").read_text()).get("clock") or {}
        guest += clock.get("guest_s", 0.0)
        wall += clock.get("host_wall_s", 0.0)
    return guest, wall


def transfer_s(summary: dict) -> float | None:
    """A run's transfer time, on the clock of the place it ran in (a UML guest's: the time the
    kernel under test lived): first to last byte at its receiver (`span_s`, measured); for
    transfers side by side, the window all were receiving (`shared_window_s`); else the transfer's
    configured `duration_s`. None for a run without one (the setup check, a skipped point)."""
    if summary.get("span_s") is not None:
        return float(summary["span_s"])
    window = summary.get("shared_window_s")
    if window:
        return float(window[1] - window[0])
    return float(summary["duration_s"]) if summary.get("duration_s") is not None else None


def transfer_seconds(sweep: Path | str, excluding: set[str] = frozenset()) -> float:
    """How long a sweep's completed runs spent transferring (transfer_s of each): what a lab's
    wall-clock time is divided by (`run`'s last line, `reproduce`'s time ratio). `excluding`: the
    runs already complete when this invocation started (completed_names): a resumed sweep's time is
    divided by the transfers it made, not by every run's."""
    return sum(t for d, s in completed(sweep) if d.name not in excluding and (t := transfer_s(s)) is not None)


def completed_names(sweep: Path | str) -> set[str]:
    return {d.name for d in Sweep(sweep).runs()}


_lock_taken: list[float] = []  # time.monotonic() when this process last took the experiment lock


def lock_taken() -> float | None:
    """When this process last took the experiment lock (time.monotonic()): a lab's wall-clock time
    counts from there, not from a wait behind another experiment."""
    return _lock_taken[-1] if _lock_taken else None


@contextlib.contextmanager
def experiment_lock(wait_message: str = "another experiment is running; waiting for it to finish"):
    """One experiment at a time per machine: two runs at once would measure each other."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log.get().info(wait_message)
            fcntl.flock(f, fcntl.LOCK_EX)
        _lock_taken.append(time.monotonic())
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def experiment_running() -> bool:
    """True while another process holds the experiment lock (an experiment is measuring)."""
    if not LOCK_FILE.exists():
        return False
    with open(LOCK_FILE, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def copy_compact(sweep: Path | str, dest: Path | str, names) -> list[Path]:
    """Copy a sweep's compact files (never its per-run directories) to a reference folder,
    e.g. solutions/results/labN/."""
    sweep, dest = Path(sweep), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(sweep / name, dest / name)) for name in names]


RUNS = ("*/summary.json",)  # the runs a compact table is made from: by default every run of the sweep


def _runs(sweep: Path, runs: tuple[str, ...]) -> list[Path]:
    return [p for pattern in runs for p in sweep.glob(pattern)]


def compact_is_stale(sweep: Path | str, table: str, runs: tuple[str, ...] = RUNS) -> bool:
    """True when a sweep's compact `table` is missing or older than one of its runs (the summaries
    `runs` names): a resumed sweep (or a new run into the same directory) must be compacted again
    before anything reads it, or the notebook would print an interval over other runs than the report's."""
    sweep = Path(sweep)
    t = sweep / table
    if not t.exists():
        return True
    with open(t) as f:
        if set(f.readline().strip().split(",")) & set(PREVIOUS_KEYS):
            return True  # compacted before the goodput vocabulary: made again with its names
    made = t.stat().st_mtime
    return any(p.stat().st_mtime > made for p in _runs(sweep, runs))


def compacted(path: Path | str, table: str, compact, lab: str, runs: tuple[str, ...] = RUNS) -> Path:
    """The folder whose compact tables a lab's `load` reads: a sweep's, compacted again first when
    `table` is stale (compact_is_stale), or a reference copy's as it is; none there is an error.
    `runs`: the summaries `table` is made from, where a reference copy keeps other runs beside it
    (Lab 1's keeps its detailed runs)."""
    path = Path(path)
    if _runs(path, runs):
        if compact_is_stale(path, table, runs):
            compact(path)
    elif not (path / table).exists():
        raise FileNotFoundError(f"{path}: no {lab} results (run `sudo mptcplab run {lab} --quick`)")
    return path


def run_commit(run_dir: Path | str) -> str | None:
    """The git commit (12 hex digits, "+dirty" if the tree had changes) that made a run, from its
    manifest: a sweep resumed across commits shows its mixture row by row."""
    try:
        git = json.loads((Path(run_dir) / "manifest.json").read_text()).get("git") or {}
    except (OSError, ValueError):
        return None
    commit = git.get("commit")
    return f"{commit[:12]}{'+dirty' if git.get('dirty') else ''}" if commit else None


RUN_MANIFEST_COLUMNS = ["run", "started", "finished", "commit", "kernel", "kernel_build", "where", "guest_clock",
                        "emulation", "guest_s", "host_wall_s", "qdiscs", "sysctls_set", "sysctls_read_back",
                        "parameters"]


def run_manifests(sweep: Path | str) -> list[dict]:
    """One compact row per completed run of a sweep, from its manifest: when it ran, the commit
    that made it (`run_commit`), kernel (and UML's build: judge.provenance tells builds apart) and
    place (UML's clock mode, the run's guest and wall-clock seconds), the emulator's qdiscs as the kernel listed them, the sysctls the kit set and the same keys read back from the kernel after setting (as
    applied; None where the run recorded none), and the run's own parameters. A reference keeps this table (runs-manifest.csv), so a sweep resumed
    across commits or places shows its mixture run by run."""
    rows = []
    for d in Sweep(sweep).runs():
        try:
            m = json.loads((d / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        net, plat = m.get("network") or {}, m.get("platform") or {}
        rows.append({"run": d.name, "started": m.get("started"), "finished": m.get("finished"),
                     "commit": run_commit(d), "kernel": plat.get("kernel_release"),
                     "kernel_build": plat.get("uml_kernel"),  # UML's build (source, config, patches); None elsewhere
                     "where": plat.get("where"),
                     # the guest's clock: UML's mode (time-travel, ...), the VM's (instructions under TCG); None natively
                     "guest_clock": plat.get("uml_clock") or plat.get("vm_clock"),
                     "emulation": net.get("emulation"), "guest_s": (m.get("clock") or {}).get("guest_s"),
                     "host_wall_s": (m.get("clock") or {}).get("host_wall_s"),
                     # the emulator's qdiscs as the kernel listed them: what the links really were
                     "qdiscs": json.dumps(net.get("qdiscs"), separators=(",", ":")),
                     "sysctls_set": json.dumps(net.get("sysctls_set"), sort_keys=True, separators=(",", ":")),
                     # the same keys as the kernel reported them after setting: what was applied
                     "sysctls_read_back": json.dumps(
                         {h: {k: (net.get("sysctls") or {}).get(h, {}).get(k) for k in keys}
                          for h, keys in (net.get("sysctls_set") or {}).items()},
                         sort_keys=True, separators=(",", ":")),
                     "parameters": json.dumps(m.get("parameters"), sort_keys=True, separators=(",", ":"),
                                              default=str)})
    return rows


def completed(sweep: Path | str):
    """(run directory, its summary) for every completed run of a sweep, in name order."""
    for d in Sweep(sweep).runs():
        yield d, read_summary(d)
