"""What a grader killed mid-batch leaves behind, and its removal by the next `mptcplab grade` or `mptcplab clean`.

A batch keeps everything it makes on disk under one work directory, /tmp/mlab-grading-<token>
(the redacted answer keys, each submission's copy and values), holds an flock on it for as long
as it runs, and names each submission's cgroup after the token (`cgroup.create`). A killed grader
drops the lock with its last descriptor, so `clean()` can tell its leftovers from a live batch's:
it removes every work directory nobody holds, kills what is still in the cgroups of those batches
and removes the groups, and clears the kernel keyrings of every grading UID no lease holds
(`identity.scrub_free`). The sandboxes themselves die with the grader (`sandbox.command`).
"""

from __future__ import annotations

import fcntl
import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..core import paths
from . import cgroup, identity

PREFIX = f"{paths.PREFIX}-grading-"


@contextmanager
def workdir():
    """(directory, token) of a new batch, locked until the block ends, then removed. Made under a
    starting name and renamed once locked, so `clean()` never sees it unlocked."""
    start = Path(tempfile.mkdtemp(prefix=f".{paths.PREFIX}-starting-"))  # root-owned, 0700
    fd = os.open(start, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        token = secrets.token_hex(6)
        path = start.with_name(PREFIX + token)
        os.rename(start, path)
        try:
            yield path, token
        finally:
            shutil.rmtree(path, ignore_errors=True)
    finally:
        os.close(fd)


def clean() -> list[str]:
    """Remove what killed graders left (see above); what was removed, in words."""
    removed, live = [], set()
    for d in sorted(Path(tempfile.gettempdir()).glob(PREFIX + "*")):
        try:
            fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            live.add(d.name.removeprefix(PREFIX))
            continue
        finally:
            os.close(fd)
        shutil.rmtree(d, ignore_errors=True)
        removed.append(f"grading work directory {d}")
    for group in cgroup.leftovers(live):
        group.remove()
        removed.append(f"grading cgroup {group.dirs[0].name} and its processes")
    return removed + identity.scrub_free()
