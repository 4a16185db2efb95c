"""What the kernel we run on can do, asked once, in one place.

The ground floor of the engine: `doctor` reports these, `runner` picks a place with them,
`topology` picks netem or tbf, `observe` picks kprobes or sched_switch. Every probe tries the
real thing (a qdisc in a throwaway namespace, a kprobe event) rather than reading a config file,
because a module can be configured and still fail to load.
"""

from __future__ import annotations

import functools
import os
import shutil
import uuid
from pathlib import Path

from . import process
from .errors import UsageError
from .paths import PREFIX, TRACEFS

BTF = Path("/sys/kernel/btf/vmlinux")


def inside_uml() -> bool:
    """Is this kernel User-Mode Linux? (its /proc/cpuinfo says so, however it was booted)."""
    try:
        return "User Mode Linux" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def require_root() -> None:
    if os.geteuid() != 0:
        raise UsageError("this needs root (namespaces, qdiscs, sysctls): run it with sudo")


@functools.cache
def _qdisc_usable(kind_args: tuple[str, ...]) -> bool:
    """Can a qdisc of this kind be created? Tried in a throwaway namespace."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    ns = f"{PREFIX}-probe-{uuid.uuid4().hex[:6]}"
    if process.run(["ip", "netns", "add", ns], check=False, timeout=20).returncode != 0:
        return False
    try:
        process.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=False, timeout=20)
        return process.run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", *kind_args],
                        check=False, timeout=20).returncode == 0
    finally:
        process.run(["ip", "netns", "delete", ns], check=False, timeout=20)


def netem_usable() -> bool:
    return _qdisc_usable(("netem", "delay", "1ms"))


def tbf_usable() -> bool:
    return _qdisc_usable(("tbf", "rate", "10mbit", "burst", "32kb", "limit", "100kb"))


def tracefs_usable() -> bool:
    """Is tracefs mounted (mounting it when we may)?"""
    if (TRACEFS / "events").exists():
        return True
    if os.geteuid() == 0:
        process.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], check=False, timeout=20)
    return (TRACEFS / "events").exists()


@functools.cache
def kprobes_usable() -> bool:
    """Can a kprobe event be placed on sk_stream_wait_memory (the Lab 1 Fig. 10 method)?"""
    path = TRACEFS / "kprobe_events"
    if not tracefs_usable() or not path.exists():
        return False
    name = f"{PREFIX}_probe"
    try:
        write_kprobe_events(f"p:{name} sk_stream_wait_memory")
        write_kprobe_events(f"-:{name}")
        return True
    except OSError:
        return False


def write_kprobe_events(*lines: str) -> None:
    """Append definitions to tracefs's kprobe_events. Not open(path, "a"): Python seeks to the end
    of a file opened for appending, and kprobe_events (a seq_file) refuses SEEK_END with EINVAL,
    which made every kernel look like it had no kprobes."""
    fd = os.open(TRACEFS / "kprobe_events", os.O_WRONLY | os.O_APPEND)
    try:
        for line in lines:
            os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def struct_ops_usable() -> bool:
    """BPF struct_ops congestion controls: BTF, bpftool and clang, and not UML (no BPF JIT)."""
    return (not inside_uml() and BTF.exists() and shutil.which("bpftool") is not None
            and shutil.which("clang") is not None)


SCHEDULERS = Path("/proc/sys/net/mptcp/available_schedulers")


def minrtt_usable() -> bool:
    """The paper's minRTT scheduler (with its RP mechanism): registered only by a kernel carrying the
    kit's vagrant/uml/mptcp-minrtt-scheduler.patch (mainline registers `default` alone and does
    not export the call a module would need to add one)."""
    try:
        return "minrtt" in SCHEDULERS.read_text().split()
    except OSError:
        return False


CAPABILITIES = {
    "netem": netem_usable,
    "tbf": tbf_usable,
    "tracefs": tracefs_usable,
    "kprobes": kprobes_usable,
    "bpf_struct_ops": struct_ops_usable,
    "minrtt_scheduler": minrtt_usable,
}
# What a place's kernel may offer a lab (`Lab.needs`, each place's OFFERS and capabilities()), in
# the order doctor lists them: all but tracefs, which every place mounts (doctor checks it on its own line).
PLACE_CAPABILITIES = tuple(name for name in CAPABILITIES if name != "tracefs")


def has(capability: str) -> bool:
    return CAPABILITIES[capability]()
