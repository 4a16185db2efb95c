"""One control group per submission: memory, process count and CPU of its whole process tree.

rlimits are per process (five children of 2.6 GB each are 13 GB on the host), so each sandbox
joins a cgroup of its own: the memory limit covers every process and the tmpfs pages they write
(the copy and /tmp live on tmpfs, charged to the cgroup that writes them), `pids` stops fork
bombs across the tree, and a CPU quota of one core keeps N workers on N cores.

Written against the kernel's cgroup files directly: systemd-run would do the same through
systemd, which is not running on every grading host (containers, this CI machine); nsjail is
not packaged for Debian 12. Both layouts are handled: the unified v2 hierarchy when it has the
memory controller, else the v1 memory/pids/cpu hierarchies (hybrid hosts). The sandbox joins
by writing "0" (itself) to each `procs` file before it drops root (`sandbox.prepare`).

Socket buffers: v2 charges them to the group's memory (memory.stat `sock`), so they count in
memory.max, unless the kernel was booted with `cgroup.memory=nosocket`, which `available()` refuses.
Untested here: this project's machines (and CI) mount a hybrid hierarchy whose v2 part has no
memory controller (it is bound to v1), so no test can create a v2 group with memory.max.
v1 charges TCP buffers only once memory.kmem.tcp.limit_in_bytes is set: without it a submission
held 1,057 MiB of TCP buffers beyond its 4,096 MiB limit, and another kept the host's TCP memory at
its ceiling for 45 s. On v1 each group therefore gets a TCP limit of its own
(`Limits.socket_mb`): past it the kernel refuses the group more buffer, as it does to a host at
its tcp_mem ceiling, and neighbours keep theirs. No socket reaches beyond loopback anyway (the
sandbox's network namespace holds only lo).

Every group is named after its batch (`mlab-grade-<token>-<n>`, `leftovers.py`), so what a killed
grader left can be told from a live batch's and removed.
"""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from ..core import paths
from ..core.state import kill_each

ROOT = Path("/sys/fs/cgroup")
V2_PARENT = f"{paths.PREFIX}-grading"  # on v2, every batch's groups under this one (_v2_parent, leftovers)
PREFIX = f"{paths.PREFIX}-grade-"
TCP_LIMIT = "memory.kmem.tcp.limit_in_bytes"


def _own(hierarchy: str) -> str:
    """This process's cgroup path in a hierarchy ("" for v2) from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers.split(",") == ([] if hierarchy == "" else [hierarchy]) or hierarchy in controllers.split(","):
            return path
    return "/"


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


@dataclass
class Cgroup:
    dirs: list[Path] = field(default_factory=list)  # one per hierarchy (one for v2)
    version: int = 2

    @property
    def procs(self) -> list[str]:
        return [str(d / "cgroup.procs") for d in self.dirs]

    def socket_peak(self) -> int | None:
        """Largest TCP buffer memory of the tree so far, in bytes (v1 only: v2 counts it in memory_peak)."""
        for d in self.dirs:
            try:
                return int((d / "memory.kmem.tcp.max_usage_in_bytes").read_text())
            except (OSError, ValueError):
                continue
        return None

    def memory_peak(self) -> int | None:
        """Largest memory use of the whole tree so far, in bytes (None when the kernel does not say)."""
        for d in self.dirs:
            for name in ("memory.peak", "memory.max_usage_in_bytes"):
                try:
                    return int((d / name).read_text())
                except (OSError, ValueError):
                    continue
        return None

    def oom_killed(self) -> bool:
        """Whether the kernel killed a process of the group for memory (v2 memory.events, v1 memory.oom_control)."""
        for d in self.dirs:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    text = (d / name).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    k, _, v = line.partition(" ")
                    if k == "oom_kill" and v.strip().isdigit() and int(v) > 0:
                        return True
        return False

    def pids(self) -> list[int]:
        out: set[int] = set()
        for p in self.procs:
            try:
                out |= {int(x) for x in Path(p).read_text().split()}
            except OSError:
                pass
        return sorted(out)

    def kill(self) -> None:
        """SIGKILL every process left in the group (v2: cgroup.kill; v1: until none is left)."""
        for d in self.dirs:
            if (d / "cgroup.kill").exists():
                try:
                    _write(d / "cgroup.kill", "1")
                except OSError:
                    pass
        for _ in range(100):
            left = self.pids()
            if not left:
                return
            kill_each(left)
            time.sleep(0.05)

    def remove(self) -> None:
        self.kill()
        for d in self.dirs:
            for _ in range(200):  # up to 10 s: a killed hog freeing GiBs under load takes seconds to leave
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # processes still exiting
                    time.sleep(0.05)
            # still there: the next grade's leftovers.clean() removes it


def _enable(parent: Path, controllers: list[str]) -> None:
    have = (parent / "cgroup.subtree_control").read_text().split()
    missing = [c for c in controllers if c not in have]
    if missing:
        _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))


def _v2_parent() -> Path | None:
    """A v2 cgroup under which children get memory+pids+cpu: a `mlab-grading` group of our own,
    beside this process's cgroup (a cgroup holding processes cannot hand controllers down)."""
    if not (ROOT / "cgroup.controllers").exists():
        return None
    avail = (ROOT / "cgroup.controllers").read_text().split()
    if "memory" not in avail or "pids" not in avail:
        return None
    parent = ROOT / V2_PARENT
    try:
        _enable(ROOT, [c for c in ("memory", "pids", "cpu") if c in avail])
        parent.mkdir(exist_ok=True)
        _enable(parent, [c for c in ("memory", "pids", "cpu") if c in avail])
    except OSError:
        return None
    return parent


def sockets_charged(cmdline: str) -> bool:
    """Whether a v2 kernel booted with this command line charges socket buffers to memory.max."""
    return not any(arg.startswith("cgroup.memory=") and "nosocket" in arg.partition("=")[2].split(",")
                   for arg in cmdline.split())


def available() -> str | None:
    """None when per-submission cgroups work here, else why not."""
    if _v2_parent() is not None:
        if not sockets_charged(Path("/proc/cmdline").read_text()):
            return ("the kernel was booted with cgroup.memory=nosocket: a submission's socket buffers would "
                    "not count against its cgroup v2 memory limit (boot without it)")
        return None
    if all((ROOT / h / "cgroup.procs").exists() for h in ("memory", "pids")):
        if not (ROOT / "memory" / _own("memory").lstrip("/") / TCP_LIMIT).exists():
            return (f"the cgroup v1 memory hierarchy has no {TCP_LIMIT}: a submission's TCP buffers could not be "
                    "limited (a kernel built without CONFIG_MEMCG_KMEM?); use cgroup v2")
        return None
    return ("no usable cgroup (need cgroup v2 with the memory and pids controllers, or the v1 memory and "
            "pids hierarchies mounted under /sys/fs/cgroup)")


def create(memory_mb: int, pids: int, socket_mb: int, batch: str, cpus: float = 1.0) -> Cgroup:
    """A fresh cgroup of a batch (its token) with the limits set; raises OSError when none can be made
    (see available())."""
    name = f"{PREFIX}{batch}-{uuid.uuid4().hex[:8]}"
    mem = str(memory_mb * 1024 * 1024)
    period = 100_000
    quota = str(int(cpus * period))
    v2 = _v2_parent()
    if v2 is not None:
        d = v2 / name
        d.mkdir()
        cg = Cgroup([d], 2)
        _write(d / "memory.max", mem)
        if (d / "memory.swap.max").exists():
            _write(d / "memory.swap.max", "0")
        _write(d / "pids.max", str(pids))
        if (d / "cpu.max").exists():
            _write(d / "cpu.max", f"{quota} {period}")
        return cg
    cg = Cgroup([], 1)
    try:
        for hierarchy in ("memory", "pids", "cpu"):
            base = ROOT / hierarchy
            if not (base / "cgroup.procs").exists():
                if hierarchy == "cpu":
                    continue
                raise OSError(f"{base}: v1 {hierarchy} hierarchy not mounted")
            d = base / _own(hierarchy).lstrip("/") / name
            d.mkdir()
            cg.dirs.append(d)
            if hierarchy == "memory":
                _write(d / "memory.limit_in_bytes", mem)
                _write(d / TCP_LIMIT, str(socket_mb * 1024 * 1024))  # also what turns the charging on
                if (d / "memory.memsw.limit_in_bytes").exists():  # no swapping around the limit
                    _write(d / "memory.memsw.limit_in_bytes", mem)
            elif hierarchy == "pids":
                _write(d / "pids.max", str(pids))
            else:
                _write(d / "cpu.cfs_period_us", str(period))
                _write(d / "cpu.cfs_quota_us", quota)
    except OSError:
        cg.remove()
        raise
    return cg


def leftovers(live: set[str]) -> list[Cgroup]:
    """Groups of batches whose token is not in `live` (their grader is gone), and empty groups of
    older graders, one Cgroup per name across the hierarchies."""
    found: dict[str, Cgroup] = {}
    v2 = ROOT / V2_PARENT
    tops = [(v2, 2)] if v2.is_dir() else []
    tops += [(ROOT / h, 1) for h in ("memory", "pids", "cpu") if (ROOT / h / "cgroup.procs").exists()]
    for top, version in tops:
        for here, dirs, _ in os.walk(top):
            mine = [d for d in dirs if d.startswith(PREFIX)]
            dirs[:] = [d for d in dirs if not d.startswith(PREFIX)]
            for d in mine:
                token = d[len(PREFIX):].rpartition("-")[0]
                if token in live or not token and (Path(here) / d / "cgroup.procs").read_text().strip():
                    continue  # a live batch's, or an older grader's still in use (named without a batch)
                found.setdefault(d, Cgroup([], version)).dirs.append(Path(here) / d)
    return list(found.values())
