"""Files the grader reads and writes: a submission is data, never a path to follow.

Reading (`read_submission`): a submission is one regular file of its own, read by the grader
without following a link. An archive from an LMS may hold symbolic links (to the master notebook,
to /etc/shadow), hard links (a second name of a root-only file), FIFOs, devices or directories
named `*.ipynb`; read as root, any of them would hand the student what the grader can read, or hang
the batch. So the name is looked at first (lstat: nothing is opened that is not a regular file),
then opened with O_NOFOLLOW | O_NONBLOCK and checked again on the descriptor (same file, still
regular, one name), and read up to a size cap. A regular file with one name that was not reached
through a link holds what the archive put there: nothing a submitter could not read.
`collect` walks folders without entering linked ones. The instructor's own arguments (a folder or a
file named on the command line) are taken as given.

Writing: a student cannot reach the grader's directories (the sandboxes do not show them);
opening each one with O_NOFOLLOW and creating files relative to its descriptor (O_EXCL |
O_NOFOLLOW, after removing whatever had the name) still makes sure nothing planted on the way is
followed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class Refused(Exception):
    """Not read as a submission; args[0] says why, in words for the student's row."""


class Oversized(Exception):
    """A submission file over the cap (args[0]: its size in bytes)."""


KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO (named pipe)",
         stat.S_IFCHR: "a device", stat.S_IFBLK: "a device", stat.S_IFSOCK: "a socket"}


def _refusal(st: os.stat_result) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return f"{KINDS.get(stat.S_IFMT(st.st_mode), 'not a regular file')}, not a notebook"
    if st.st_nlink > 1:  # a second name of some other file: the grader would read that file
        return f"a hard link (one of {st.st_nlink} names of one file), not a notebook of its own"
    return None


def read_submission(path: Path, cap: int) -> bytes:
    """The bytes of one submission, at most `cap`; raises Refused (with the reason) or Oversized."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise Refused(f"unreadable ({exc.strerror})") from None
    why = _refusal(st)
    if why:
        raise Refused(why)
    if st.st_size > cap:
        raise Oversized(st.st_size)
    try:  # O_NONBLOCK: a FIFO swapped in since the lstat does not hang the open
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        raise Refused(f"unreadable ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        now = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise Refused("replaced while the grader opened it")
        why = _refusal(now)
        if why:
            raise Refused(why)
        data = f.read(cap + 1)
    if len(data) > cap:
        raise Oversized(len(data))
    return data


def collect(paths: list[Path], pattern: str = ".ipynb") -> tuple[list[Path], list[str]]:
    """The submissions among `paths`: files named as given, and under each folder every entry whose
    name ends in `pattern` (links, FIFOs and folders so named included: each is its own row), in
    name order, without entering linked folders or `.ipynb_checkpoints`. Also: what was skipped."""
    found: list[Path] = []
    skipped: list[str] = []
    for p in paths:
        if not os.path.lexists(p):
            skipped.append(f"{p}: no such file or directory")
            continue
        if not p.is_dir():  # a file named on the command line, whatever it is: read (or refused) as given
            found.append(p)
            continue
        under = []
        for top, dirs, names in os.walk(p, followlinks=False):
            dirs[:] = [d for d in dirs if d != ".ipynb_checkpoints"]
            for name in names + dirs:
                q = Path(top) / name
                if name.endswith(pattern):
                    under.append(q)
                elif name in dirs and q.is_symlink():
                    skipped.append(f"{q}: a link to a folder, not entered")
        found += sorted(under)
    return found, skipped


def open_dir(path: Path) -> int:
    """A directory (made if missing), opened without following a link at its last component."""
    path.mkdir(parents=True, exist_ok=True)
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)


def write_in(dir_fd: int, name: str, data: bytes, mode: int = 0o644) -> None:
    """Write name inside an open directory; a link planted there is replaced, never followed."""
    if "/" in name or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    try:
        os.unlink(name, dir_fd=dir_fd)
    except FileNotFoundError:
        pass
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dir_fd)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def write_text(dest: Path, name: str, text: str) -> None:
    fd = open_dir(dest)
    try:
        write_in(fd, name, text.encode())
    finally:
        os.close(fd)
