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

from . import __version__, log, places, process
from .places import guest
from .paths import git_commit

LOCK_FILE = Path(os.environ.get("MPTCPLAB_LOCK", "/run/mptcplab/experiment.lock"))


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds")


@functools.cache
def tool_versions() -> dict:
    _first_line = process.first_line
    deb = lambda pkg: _first_line(["dpkg-query", "-W", "-f=${Version}", pkg])  # noqa: E731
    return {
        "mptcplab": __version__,
        "python": platform.python_version(),
        "iproute2": _first_line(["ip", "-V"]),
        "tcpdump": _first_line(["tcpdump", "--version"]),
        "tshark": _first_line(["tshark", "--version"]),
        "iperf3": _first_line(["iperf3", "--version"]),
        "mptcpd (mptcpize)": deb("mptcpd"),
        "ethtool": _first_line(["ethtool", "--version"]),
    }


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
            "started": now(),
            "command": places.handed().get("command", sys.argv),  # the user's, also inside a guest
            "parameters": params,
            "platform": platform_info(),
            "tools": tool_versions(),
            "git": git_commit(),
        }
        self._clocks = self._read_clocks() if places.current().GUEST else None

    def file(self, name: str) -> Path:
        return self.path / name

    def write_text(self, name: str, text: str) -> Path:
        path = self.file(name)
        path.write_text(text)
        return path

    def write_json(self, name: str, obj) -> Path:
        return self.write_text(name, json.dumps(obj, indent=2, default=str) + "\n")

    def _read_clocks(self) -> tuple[float, float]:
        return time.time(), guest.host_time(self.path)

    def finish(self) -> Path:
        self.manifest["finished"] = now()
        if self._clocks:
            (guest0, host0), (guest1, host1) = self._clocks, self._read_clocks()
            self.manifest["clock"] = {"guest_s": round(guest1 - guest0, 3), "host_wall_s": round(host1 - host0, 3)}
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
        yield rd  # an exception leaves <key>.partial behind, which never counts as done
        rd.finish()

    def runs(self) -> list[Path]:
        return sorted(d for d in self.root.iterdir() if d.is_dir() and self.done(d.name)) \
            if self.root.exists() else []

    def summaries(self):
        """One row per completed run: its summary, plus `run` (the key)."""
        import pandas as pd

        rows = [{"run": d.name, **json.loads((d / "summary.json").read_text())} for d in self.runs()]
        return pd.DataFrame(rows)


def clock_totals(sweep: Path | str) -> tuple[float, float]:
    """(guest seconds, host wall-clock seconds) summed over a sweep's guest runs (places.guest.host_time)."""
    guest = wall = 0.0
    for d in Sweep(sweep).runs():
        clock = json.loads((d / "manifest.json").read_text()).get("clock") or {}
        guest += clock.get("guest_s", 0.0)
        wall += clock.get("host_wall_s", 0.0)
    return guest, wall


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
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def copy_compact(sweep: Path | str, dest: Path | str, names) -> list[Path]:
    """Copy a sweep's compact files (never its per-run directories) to a reference folder,
    e.g. solutions/results/labN/."""
    sweep, dest = Path(sweep), Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(sweep / name, dest / name)) for name in names]
