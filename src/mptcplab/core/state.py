"""What the kit created, and how to remove it.

Every process that creates something (a namespace, a process, a tracefs instance, a UML kernel)
records it first in its own state file, `/run/mptcplab/state/<pid>.json`, so that
`mptcplab clean` can remove it even after a SIGKILL. Cleaning also scans for the kit's name
prefix (`mlab`), so a lost state file never leaves anything behind. Nothing without the prefix
or a state entry is touched.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from . import process
from .files import replace_file
from .kernel import write_kprobe_events
from .paths import PREFIX, TRACEFS
STATE_DIR = Path(os.environ.get("MPTCPLAB_STATE_DIR", "/run/mptcplab/state"))


class Tracker:
    """Records resources of this process in its state file before they are created."""

    def __init__(self) -> None:
        self.path = STATE_DIR / f"{os.getpid()}.json"
        self.items: list[dict] = []

    def add(self, kind: str, **info) -> dict:
        item = {"kind": kind, **info}
        self.items.append(item)
        self._write()
        return item

    def discard(self, item: dict) -> None:
        if item in self.items:
            self.items.remove(item)
            self._write()

    def _write(self) -> None:
        STATE_DIR.mkdir(parents=True, exist_ok=True)
        replace_file(self.path, json.dumps({"owner": os.getpid(), "items": self.items}))
        if not self.items:
            self.path.unlink(missing_ok=True)


TRACKER = Tracker()


class Terminated(KeyboardInterrupt):
    """SIGTERM/SIGHUP turned into an exception, so `with` blocks unwind and clean up."""


@contextlib.contextmanager
def signals_unwind():
    """While inside, SIGTERM and SIGHUP raise `Terminated` (Ctrl-C already raises KeyboardInterrupt)."""

    def handler(signum, _frame):
        raise Terminated(f"signal {signal.Signals(signum).name}")

    old = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


# ---------------------------------------------------------------- removal

def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return process.run(argv, check=False, timeout=60)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_each(pids) -> list[int]:
    """SIGKILL each of `pids`; the ones signalled (one already gone, or not ours to kill, is passed over)."""
    killed = []
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(pid), signal.SIGKILL)
            killed.append(int(pid))
    return killed


def kill_process_group(pgid: int, grace: float = 2.0) -> bool:
    """SIGTERM a process group, then SIGKILL what is left. True if anything was signalled."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            # An exited leader that is our unreaped child still "exists" for killpg(pgid, 0):
            # stop waiting as soon as it has exited (WNOWAIT leaves its status to Popen.wait).
            if os.waitid(os.P_PID, pgid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                break
        except ChildProcessError:
            pass  # not our child
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)
    return True


def remove_namespace(name: str) -> bool:
    """Kill every process inside the namespace, then delete it (its veths go with it)."""
    if not (Path("/run/netns") / name).exists():
        return False
    kill_each(_run(["ip", "netns", "pids", name]).stdout.split())
    for _ in range(50):
        if _run(["ip", "netns", "delete", name]).returncode == 0:
            return True
        time.sleep(0.1)
    return False


def remove_trace_instance(name: str) -> bool:
    path = TRACEFS / "instances" / name
    if not path.exists():
        return False
    with contextlib.suppress(OSError):
        (path / "tracing_on").write_text("0")
    for _ in range(20):
        try:
            path.rmdir()  # tracefs instances are removed with rmdir
            return True
        except OSError:
            time.sleep(0.1)
    return False


def remove_kprobe_events() -> list[str]:
    """Remove the kit's kprobe events (named `mlab_*`) from tracefs."""
    path = TRACEFS / "kprobe_events"
    removed = []
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            # e.g. "p:kprobes/mlab_wm sk_stream_wait_memory"
            name = line.split()[0].split(":", 1)[1].split("/")[-1]
            if name.startswith(PREFIX):
                write_kprobe_events(f"-:{name}")
                removed.append(f"kprobe event {name}")
    return removed


def _remove_item(item: dict) -> str | None:
    kind = item["kind"]
    if kind == "netns" and remove_namespace(item["name"]):
        return f"namespace {item['name']}"
    if kind == "process" and kill_process_group(item["pgid"]):
        return f"process group {item['pgid']} ({item.get('what', '')})"
    if kind == "trace_instance" and remove_trace_instance(item["name"]):
        return f"tracefs instance {item['name']}"
    if kind == "dir" and Path(item["path"]).exists():
        shutil.rmtree(item["path"], ignore_errors=True)
        return f"directory {item['path']}"
    return None


def clean(all_owners: bool = True) -> list[str]:
    """Remove what the kit created. With all_owners=False, only what dead processes left behind.

    Returns a line per removed thing.
    """
    removed: list[str] = []
    if STATE_DIR.exists():
        for f in sorted(STATE_DIR.glob("*.json")):
            try:
                state = json.loads(f.read_text())
            except (OSError, json.JSONDecodeError):
                f.unlink(missing_ok=True)
                continue
            owner = state.get("owner", 0)
            if owner == os.getpid() or (not all_owners and _pid_alive(owner)):
                continue
            if all_owners and owner != os.getpid() and _pid_alive(owner):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(owner, signal.SIGTERM)  # let a live run unwind its own resources first
                    time.sleep(0.5)
            for item in reversed(state.get("items", [])):
                done = _remove_item(item)
                if done:
                    removed.append(done)
            f.unlink(missing_ok=True)
    if all_owners:
        removed += _sweep_by_prefix()
    return removed


def _sweep_by_prefix() -> list[str]:
    """Catch anything with the kit's prefix that no state file mentions."""
    removed = []
    netns_dir = Path("/run/netns")
    if netns_dir.exists():
        for ns in sorted(netns_dir.iterdir()):
            if ns.name.startswith(PREFIX + "-") and remove_namespace(ns.name):
                removed.append(f"namespace {ns.name}")
    instances = TRACEFS / "instances"
    if instances.exists():
        for inst in sorted(instances.iterdir()):
            if inst.name.startswith(PREFIX) and remove_trace_instance(inst.name):
                removed.append(f"tracefs instance {inst.name}")
    removed += remove_kprobe_events()
    return removed  # guests: each place's clean(); a lab's own kernel objects: Lab.running.clean (commands/clean.py)
