"""What every guest place (UML, the VM) does the same way, written once: the script that runs the
kit's command inside the guest, the guest's private directory on the host (tracked, so `mptcplab
clean` removes it after a kill), its process (guarded: it dies with the kit), and the console
reader with its errors (a panic, a hung guest, a deadline)."""

from __future__ import annotations

import codecs
import compileall
import os
import py_compile
import selectors
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path

from ..core.errors import EnvironmentProblem
from ..core.state import TRACKER, kill_process_group
from .lifetime import die_with_parent_preexec, guarded, guest_pids, wait_gone

PANIC = "Kernel panic - not syncing"
RESUMES = "Finished runs are kept; the same command resumes after them."

SCRIPT = """#!/bin/sh
{setup}
mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null
export HOME={home} PATH={path} MPTCPLAB_WHERE={where} {env}
cd {cwd} 2>/dev/null || cd /
{command} </dev/null 2>&1
rc=$?
{after}
echo $rc > {status}
{end}
"""


def script(where: str, command: list[str], status: Path, env: dict[str, str] | None = None, setup: str = "",
           after: str = "", end: str = "", home: str | None = None) -> str:
    """The guest's /bin/sh script: `setup` (what the guest's init has not mounted), tracefs and bpffs,
    the kit's environment (MPTCPLAB_WHERE says which place this is), the command from the host's
    working directory, `after` (with $rc, its exit status), the status into `status` (a file the host
    reads back), then `end`.

    The host's XDG_CACHE_HOME goes in too: the kit's cache (paths.cache_dir) must be the same
    directory on both sides. Without it a guest fell back to $HOME/.cache: in the VM, where only the
    host's cache directory is writable, the setup check failed writing physics/vm.json there
    (read-only file system); in UML it wrote to a cache the host was not using."""
    if os.environ.get("XDG_CACHE_HOME"):
        env = {"XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"], **(env or {})}
    return SCRIPT.format(
        setup=setup.strip(), home=shlex.quote(home or str(Path.home())),
        path=shlex.quote(os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")), where=where,
        env=" ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()), cwd=shlex.quote(os.getcwd()),
        command=shlex.join(command), after=after.strip(), status=shlex.quote(str(status)), end=end.strip())


def start_up(stat: str | None = None, uptime: str | None = None) -> tuple[float, float] | None:
    """(seconds from the guest kernel's start to this process's, seconds since): where a guest's
    time before its first line went, kernel and init or the kit's Python start (its imports cost
    many times the host's under software emulation). On the guest's clock (UML's skips idle time).
    None where /proc cannot say. `stat`, `uptime`: /proc/self/stat and /proc/uptime's text (tests)."""
    try:
        stat = stat if stat is not None else Path("/proc/self/stat").read_text()
        uptime = uptime if uptime is not None else Path("/proc/uptime").read_text()
        # field 22, starttime in clock ticks after boot; fields counted after the ")" closing the name
        started = int(stat[stat.rindex(")") + 2:].split()[19]) / os.sysconf("SC_CLK_TCK")
        return started, float(uptime.split()[0]) - started
    except (OSError, ValueError, IndexError):
        return None


def byte_compile(package: Path) -> None:
    """Compile the kit's modules to bytecode here, before a guest starts, whatever
    PYTHONDONTWRITEBYTECODE says. A guest runs the host's files, and the VM's are read-only: a
    module without a current .pyc is compiled from source by every guest process that imports it
    (the kit's, its spawners'), on every boot, and under software emulation that is seconds (the
    kit's imports took 23 s in the VM, its ~90 modules without bytecode when the host had
    PYTHONDONTWRITEBYTECODE set). Up-to-date files are skipped (a few ms); a package the user
    cannot write to is left as it is (an installed kit has its bytecode from pip)."""
    compileall.compile_dir(str(package), quiet=2, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)


def panic_line(text: str) -> str | None:
    """The kernel's panic line in a guest's console output, if it panicked."""
    i = text.find(PANIC)
    return text[i:].splitlines()[0].strip() if i >= 0 else None


class Silent(EnvironmentProblem):
    """The guest printed nothing for longer than the caller's quiet limit (a hung guest)."""


class TimedOut(EnvironmentProblem):
    """The command inside the guest passed its deadline."""


class Stopped(EnvironmentProblem):
    """The guest ended without its command's exit status: the emulator or the guest kernel died
    under the command (virtme-ng says 255, "unexpected exit"). The runner starts a sweep once more."""


class Panicked(EnvironmentProblem):
    """The guest's kernel panicked (the message is its panic line); a panicked kernel never exits."""


def chunks(proc: subprocess.Popen, deadline: float | None, quiet_limit_s: float | None = None):
    """Yield output as it comes (progress bars redraw with \\r); stop when the deadline passes,
    with `Silent` when nothing came for `quiet_limit_s`, or with `Panicked` once the chunk that
    holds a kernel panic has been yielded (so the caller has shown and kept it)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    last, seen = time.monotonic(), ""
    while True:
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise TimedOut("the command inside the guest timed out")
        if quiet_limit_s is not None and now - last >= quiet_limit_s:
            raise Silent(f"nothing printed for {now - last:.0f} s")
        if not sel.select(timeout=1.0):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            return
        last = time.monotonic()
        text = decoder.decode(chunk)
        yield text
        seen = (seen + text)[-4096:]  # a panic line may arrive split across chunks
        if panic := panic_line(seen):
            raise Panicked(panic)


class Tail:
    """The last lines a guest printed, kernel lines included: the message of a guest that stopped
    without an exit status carries them, because a log read from its end (CI keeps the last few
    kilobytes of a failed test) would otherwise show only "see output above"."""

    def __init__(self, lines: int = 15):
        self.lines, self.text = lines, ""

    def add(self, text: str) -> None:
        self.text = (self.text + text)[-8192:]

    def stopped(self, what: str, exit_status: int | None, more: str = "") -> Stopped:
        last = [line.rstrip() for line in self.text.replace("\r", "\n").splitlines() if line.strip()]
        msg = f"{what} stopped before the command finished (exit status {exit_status}, no status file). {RESUMES}"
        msg += "\nIts last lines:\n  " + "\n  ".join(last[-self.lines:]) if last else "\nIt printed nothing."
        return Stopped(msg + more)


def host_time(directory: Path) -> float:
    """The host's wall clock, read from a guest: the mtime the host gives a file written through
    hostfs. Under UML's time-travel clock, idle time is skipped and time spent in the guest kernel
    is partly not counted, so guest seconds and wall-clock seconds differ; manifests keep both."""
    stamp = Path(directory) / f".host-clock.{threading.get_ident()}"  # a thread's own: eta.step reads it too
    with open(stamp, "w") as f:
        f.write("t")
        f.flush()
        os.fsync(f.fileno())
    t = os.stat(stamp).st_mtime
    stamp.unlink()
    return t


class Boot:
    """One guest's life on the host. `rundir` (its script, exit status, temporary files) is
    recorded before it exists and removed at the end; `start` runs the guest guarded in its own
    session; `close` stops whatever is left of it (and waits for processes carrying `marker`)."""

    def __init__(self, rundir: Path, what: str, marker: bytes | None = None) -> None:
        self.rundir, self.what, self.marker = Path(rundir), what, marker
        self._dir_item = TRACKER.add("dir", path=str(self.rundir))  # recorded before it exists
        self.rundir.mkdir(parents=True, exist_ok=True)
        self.status = self.rundir / "status"
        self.proc: subprocess.Popen | None = None
        self._proc_item = None

    def start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen:
        self.proc = subprocess.Popen(guarded(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=die_with_parent_preexec(), env=env)
        # Recorded once it has a pid; before that, `clean` finds it by its marker.
        self._proc_item = TRACKER.add("process", pgid=self.proc.pid, what=self.what)
        return self.proc

    def exit_status(self) -> int | None:
        """What the command inside wrote to its status file; None if it never got there."""
        if not self.status.exists():
            return None
        return int(self.status.read_text().strip() or 1)

    def close(self) -> None:
        if self.proc is not None:
            kill_process_group(self.proc.pid)
        if self.marker:  # grandchildren outside the process group (QEMU under vng)
            wait_gone(guest_pids(self.marker))
        if self._proc_item is not None:
            TRACKER.discard(self._proc_item)
        shutil.rmtree(self.rundir, ignore_errors=True)
        TRACKER.discard(self._dir_item)

    def __enter__(self) -> "Boot":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
