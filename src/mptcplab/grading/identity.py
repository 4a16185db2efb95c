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

Nothing of one submission reaches the next holder of its UID. Its files live on the sandbox's
tmpfs mounts and its IPC objects in the sandbox's IPC namespace: both end with the sandbox. The
kernel's keyrings do not: a UID's user and user-session keyrings live as long as the kernel (they
belong to the user namespace), and its persistent keyring for days
(/proc/sys/kernel/keys/persistent_keyring_expiry); a key left there by one submission was read by
two later ones. So each sandbox joins a fresh session keyring of its own (`new_session_keyring`,
never the grader's), and every lease clears the UID's user and user-session keyrings and
invalidates its persistent keyring when it is taken and again when it ends (`scrub`, run as that
UID: keyrings answer to their owner). A grader killed mid-batch leaves keys only in UIDs no lease
holds, which the next lease of each scrubs first, and `mptcplab clean` scrubs (`scrub_free`).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import pwd
import subprocess
import sys
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


# keyctl(2): the syscall, so no library is needed (libkeyutils is not on every host).
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR, KEYCTL_READ, KEYCTL_INVALIDATE, KEYCTL_GET_PERSISTENT = 1, 7, 11, 21, 22
KEY_SPEC_SESSION_KEYRING, KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -3, -4, -5


def keyctl(op: int, *args) -> int:
    """keyctl(2) with integer or bytes arguments (None: NULL); raises OSError as the kernel says."""
    number = SYS_KEYCTL.get(os.uname().machine)
    if number is None:
        raise OSError(f"keyctl: no syscall number known for {os.uname().machine}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ret = libc.syscall(ctypes.c_long(number), ctypes.c_long(op), *(ctypes.c_long(a) if isinstance(a, int) else a
                                                                   for a in args))
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"keyctl({op}): {os.strerror(err)}")
    return ret


def new_session_keyring() -> None:
    """Leave the inherited session keyring (the grader's: whoever possesses it may read and link
    keys there) for a new anonymous one, owned by the caller and gone with its last process."""
    keyctl(KEYCTL_JOIN_SESSION_KEYRING, None)


def _scrub_self() -> bool:
    """Run as the UID: empty its user and user-session keyrings, invalidate its persistent one.
    Whether any of them held a key."""
    new_session_keyring()
    held = False
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING):
        held |= keyctl(KEYCTL_READ, ring, None, 0) > 0  # the size of its list of keys
        keyctl(KEYCTL_CLEAR, ring)
    try:
        persistent = keyctl(KEYCTL_GET_PERSISTENT, -1, KEY_SPEC_SESSION_KEYRING)
    except OSError as exc:
        if exc.errno != 95:  # EOPNOTSUPP: a kernel without persistent keyrings has nothing to invalidate
            raise
        return held
    held |= keyctl(KEYCTL_READ, persistent, None, 0) > 0
    keyctl(KEYCTL_INVALIDATE, persistent)
    return held


def scrub(*uids: int) -> list[int]:
    """Clear what the kernel keeps for these UIDs beyond their processes (their keyrings); each is
    done by a child that becomes the UID (a fresh process: the grader has threads). The UIDs that
    held a key."""
    if not uids:
        return []
    done = subprocess.run([sys.executable, "-I", "-m", "mptcplab.grading.identity", *map(str, uids)], check=True,
                          capture_output=True, text=True, timeout=60)
    return [int(u) for u in done.stdout.split()]


def scrub_free() -> list[str]:
    """Scrub every UID ever leased here that no lease holds now (`mptcplab clean`, `mptcplab grade`'s start)."""
    free = []
    for lock in sorted(LOCKS.glob("*.lock")) if LOCKS.is_dir() else []:
        uid = int(lock.stem)
        with _local:
            if uid in _held:
                continue
        fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            free += scrub(uid)
        finally:
            os.close(fd)
    return [f"the keys left in the kernel keyrings of grading UID {u}" for u in free]


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
            scrub(uid)  # whatever a grader killed before its own scrub left
            yield uid
        finally:
            try:
                scrub(uid)
            finally:
                with _local:
                    _held.discard(uid)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
        return
    raise RuntimeError(f"no free UID left in {FIRST}-{LAST} for a submission")


def main(argv: list[str]) -> int:
    """`python -I -m mptcplab.grading.identity UID...` (as root): scrub each UID in a child of its
    own; prints those that held a key."""
    for uid in map(int, argv):
        if not FIRST <= uid <= LAST:
            raise SystemExit(f"{uid} is not a grading UID ({FIRST}-{LAST})")
        pid = os.fork()
        if pid == 0:
            try:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                if _scrub_self():
                    print(uid, flush=True)
                os._exit(0)
            except BaseException as exc:
                print(f"scrub {uid}: {exc}", file=sys.stderr)
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
