"""Reading a network namespace's sysctls from inside the kit's own process.

Every run records each host's sysctls (Network.snapshot). `ip netns exec NS sysctl KEY...` starts two
programs per host, about 0.08 s each in the VM place under software emulation, for every run; a thread
that joins the namespace (setns) reads the same files in /proc/sys without starting any. The kernel
resolves /proc/sys/net for the reading thread's namespace, so the values are the namespace's own,
as `sysctl` run inside it prints them. Python 3.11 has no os.setns: libc's, through ctypes."""

from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path

CLONE_NEWNET = 0x40000000
NETNS_DIR = Path("/run/netns")  # where `ip netns add` pins a namespace


def sysctl_path(key: str) -> Path:
    return Path("/proc/sys") / key.replace(".", "/")


def join(ns: str) -> None:
    """Move the calling thread into network namespace `ns` (its name under /run/netns): the sockets
    it opens from then on are the namespace's."""
    fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into network namespace {ns}")
    finally:
        os.close(fd)


def read_sysctls(ns: str, keys) -> dict[str, str | None]:
    """`keys` as they are inside namespace `ns` (its name under /run/netns), whitespace as one
    space (tcp_wmem's tabs), None for a key the kernel lacks or will not let be read."""
    got: dict[str, str | None] = {}
    failed: list[BaseException] = []

    def inside() -> None:  # only this thread joins the namespace, and it ends here
        try:
            join(ns)
            for key in keys:
                try:
                    got[key] = " ".join(sysctl_path(key).read_text().split())
                except OSError:
                    got[key] = None
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            failed.append(exc)

    t = threading.Thread(target=inside, name=f"sysctls of {ns}")
    t.start()
    t.join()
    if failed:
        raise failed[0]
    return {k: got.get(k) for k in keys}
