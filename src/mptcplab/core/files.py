"""Writing a file whole: the one way the kit replaces a file that someone else may be reading."""

from __future__ import annotations

import os
from pathlib import Path


def replace_file(path: Path, data: str | bytes) -> None:
    """Write `path` whole: a new file renamed over it, so a reader elsewhere (another checkout
    sharing the cache, a guest while the host converts its runs, a guest building what the host is
    building) sees the old file or the new one, never part of one."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data.encode() if isinstance(data, str) else data)
    tmp.replace(path)
