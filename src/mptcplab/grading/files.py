"""Files the grader writes: only into directories it made, never through a link.

A student cannot reach these directories (the sandboxes do not show them); opening each one with
O_NOFOLLOW and creating files relative to its descriptor (O_EXCL | O_NOFOLLOW, after removing
whatever had the name) still makes sure nothing planted on the way is followed.
"""

from __future__ import annotations

import os
from pathlib import Path


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
