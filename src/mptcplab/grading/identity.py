"""One host identity (UID and GID) per submission, leased from a reserved range.

Everything a submission runs (its kernel, its checker, the oracle that calls its functions) runs
under a UID that no other submission, and no account of the host, holds while it is graded. Limits
the kernel keeps per user (RLIMIT_NPROC counts every process and thread of a UID on the whole
host, signals, /proc access) then bind one submission only: a fork bomb or a notebook hoarding
threads exhausts its own count, never its neighbours'. Memory, processes and CPU of the tree are
limited by the submission's own cgroup (`cgroup.py`).

The range is the one systemd reserves for dynamic users (61184-65519, "DynamicUser=" in
systemd.exec(5)); it is what `systemd-run -p DynamicUser=yes` would hand out, but systemd is not
running on every grading host (containers, CI), and bubblewrap's user namespaces map the sandbox's
user back onto the caller's (root here), which shares its limits: hence this small lease, kept
by hand. A lease is an exclusive flock on /run/mptcplab/grading-uids/<uid>.lock, held for the
whole grading of one submission, so two grading processes on one host never share a UID; a UID
that has a passwd entry or still owns a process is skipped.
"""

from __future__ import annotations

import fcntl
import os
import pwd
import threading
from contextlib import contextmanager
from pathlib import Path

FIRST, LAST = 61184, 65519  # systemd's dynamic-user range
LOCKS = Path("/run/mptcplab/grading-uids")
_local = threading.Lock()
_held: set[int] = set()


def _busy(uid: int) -> bool:
    """A host account or a live process holds this UID."""
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        pass
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    return True
            except OSError:
                continue
    return False


@contextmanager
def lease():
    """A UID (also used as GID) for one submission; released when the block ends."""
    LOCKS.mkdir(parents=True, exist_ok=True, mode=0o700)
    for uid in range(FIRST, LAST + 1):
        with _local:
            if uid in _held:
                continue
            fd = os.open(LOCKS / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            if _busy(uid):
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
                continue
            _held.add(uid)
        try:
            yield uid
        finally:
            with _local:
                _held.discard(uid)
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        return
    raise RuntimeError(f"no free UID left in {FIRST}-{LAST} for a submission")
