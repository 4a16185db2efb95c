"""Guests die with the kit: PR_SET_PDEATHSIG for the processes that run a guest kernel.

A guest (UML kernel, QEMU) runs in its own session so Ctrl-C reaches the kit first and the kit
stops it in order; but a SIGKILLed kit cannot stop anything, so the kernel is asked to SIGKILL the
guest when its parent dies. The state file (record-before-create) and `mptcplab clean` remain the
guarantee for everything else (temporary directories, grandchildren the kernel does not signal).
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from pathlib import Path

from . import guest_markers

PR_SET_PDEATHSIG = 1


def die_with_parent_preexec():
    """A `preexec_fn` for Popen: the child gets SIGKILL when the process that started it exits.
    The signal survives execve (not across set-uid programs), so vng's exec of QEMU keeps it."""
    parent = os.getpid()

    def preexec() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl: do what the signal would have
            os._exit(1)

    return preexec


def guest_pids(marker_prefix: bytes) -> list[int]:
    """Processes with an argument starting with marker_prefix (e.g. b"umid=mlab-", b"guest=mlab-")."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(a.startswith(marker_prefix) for a in args):
            pids.append(int(proc.name))
    return pids


def wait_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    """Wait until these processes have exited; returns those still alive at the timeout."""
    deadline = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < deadline:
        alive = [p for p in alive if Path(f"/proc/{p}").exists() and not _zombie(p)]
        if alive:
            time.sleep(0.1)
    return alive


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def orphan_guests() -> list[int]:
    """Guest processes that no live kit process owns (its state file's owner is dead or absent)."""
    import json

    from ..core.state import STATE_DIR, _pid_alive

    owned: set[int] = set()
    for f in STATE_DIR.glob("*.json") if STATE_DIR.exists() else []:
        try:
            st = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if _pid_alive(st.get("owner", 0)):
            owned |= {i["pgid"] for i in st.get("items", []) if i.get("kind") == "process" and i.get("pgid")}
    # Guests are named so they can be found without a state file: each place's MARKER (UML kernels
    # carry `umid=mlab-*`, virtme-ng/QEMU guests `mlab-vm-*`: QEMU's -name, the guest's hostname).
    return [pid for marker in guest_markers() for pid in guest_pids(marker) if not _descends_from(pid, owned)]


def _descends_from(pid: int, groups: set[int]) -> bool:
    """Whether pid, or a process it descends from, is in one of these process groups. By ancestry,
    not the pid's own group: a guest calls setsid() (UML's kernel does, under `unshare --fork`), so
    its group is not the one the kit recorded, and a live `mptcplab uml run` was killed as an
    orphan by an experiment starting beside it."""
    while pid > 1:
        try:
            if os.getpgid(pid) in groups:
                return True
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])  # ppid
        except (OSError, ValueError, IndexError):
            return False
    return False


def reap_orphan_guests(timeout: float = 15.0) -> list[int]:
    """SIGKILL guests of dead runs and wait until they are gone; returns the pids it killed.
    Raises EnvironmentProblem when one survives: an experiment must not run beside a guest."""
    from ..core.errors import EnvironmentProblem
    from ..core.state import kill_each

    pids = orphan_guests()
    kill_each(pids)
    alive = wait_gone(pids, timeout)
    if alive:
        raise EnvironmentProblem(f"guest processes of an earlier run survive SIGKILL: {alive}; "
                                 "run `mptcplab clean`, or check `ps -p " + ",".join(map(str, alive)) + "`")
    return pids


def guarded(argv: list[str]) -> list[str]:
    """argv as the first process of a new PID namespace (util-linux `unshare`): PR_SET_PDEATHSIG
    reaches only a direct child, but a guest is a tree (vng -> virtme-run -> QEMU; UML's helper
    processes). `--kill-child` SIGKILLs that first process when `unshare` dies, and when a PID
    namespace's first process dies the kernel kills every other process in it."""
    return ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", *argv]
