"""What this machine can do for the labs, and how to fix what it cannot.

Each check returns a `Check` with a fix in words. `decide_where()` turns the capabilities into the
place a lab runs: natively when the kernel here has what the lab needs (netem for Labs 1 and 3),
else in the kit's User-Mode Linux kernel.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from .errors import EnvironmentProblem, UsageError
from .state import PREFIX

TRACEFS = Path("/sys/kernel/tracing")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    fix: str = ""


def _run(argv: list[str], **kw) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20, **kw)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 127, "", str(exc))


@functools.cache
def _qdisc_usable(kind_args: tuple[str, ...]) -> bool:
    """Can a qdisc of this kind be created? Tried in a throwaway namespace."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    ns = f"{PREFIX}-probe-{uuid.uuid4().hex[:6]}"
    if _run(["ip", "netns", "add", ns]).returncode != 0:
        return False
    try:
        _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        return _run(["tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", *kind_args]).returncode == 0
    finally:
        _run(["ip", "netns", "delete", ns])


def netem_usable() -> bool:
    return _qdisc_usable(("netem", "delay", "1ms"))


def tbf_usable() -> bool:
    return _qdisc_usable(("tbf", "rate", "10mbit", "burst", "32kb", "limit", "100kb"))


def ensure_tracefs() -> bool:
    if (TRACEFS / "events").exists():
        return True
    if os.geteuid() == 0:
        _run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)])
    return (TRACEFS / "events").exists()


@functools.cache
def kprobes_usable() -> bool:
    """Can a kprobe event be placed on sk_stream_wait_memory (the Lab 1 Fig. 10 method)?"""
    path = TRACEFS / "kprobe_events"
    if not ensure_tracefs() or not path.exists():
        return False
    name = f"{PREFIX}_probe"
    try:
        with open(path, "a") as f:
            f.write(f"p:{name} sk_stream_wait_memory\n")
        with open(path, "a") as f:
            f.write(f"-:{name}\n")
        return True
    except OSError:
        return False


def in_uml() -> bool:
    """Running inside a User-Mode Linux kernel (its /proc/cpuinfo says so)."""
    if os.environ.get("MPTCPLAB_WHERE") == "uml":
        return True
    try:
        return "User Mode Linux" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


def struct_ops_usable() -> bool:
    return (not in_uml() and Path("/sys/kernel/btf/vmlinux").exists() and shutil.which("bpftool") is not None
            and shutil.which("clang") is not None)


def _version(argv: list[str]) -> str:
    out = _run(argv)
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0] if text else ""


def checks() -> list[Check]:
    apt = "apt-get install"
    out: list[Check] = []
    root = os.geteuid() == 0
    out.append(Check("root privileges", root, "" if root else f"running as uid {os.geteuid()}",
                     "run mptcplab with sudo (namespaces, qdiscs and sysctls need root)"))
    mptcp = Path("/proc/sys/net/mptcp/enabled")
    enabled = mptcp.exists() and mptcp.read_text().strip() == "1"
    out.append(Check("MPTCP in the kernel", enabled,
                     "net.mptcp.enabled=1" if enabled else ("net.mptcp.enabled=0" if mptcp.exists() else "no net.mptcp"),
                     "sysctl -w net.mptcp.enabled=1" if mptcp.exists()
                     else "use a kernel >= 5.15 built with CONFIG_MPTCP (Ubuntu 24.04 and Debian 12 have it)"))
    netem = netem_usable()
    out.append(Check("sch_netem (delay, loss)", netem, "a netem qdisc can be created" if netem else
                     "creating a netem qdisc failed",
                     f"{apt} linux-modules-extra-$(uname -r) && modprobe sch_netem (Ubuntu); on Debian "
                     "`modprobe sch_netem`; where modules cannot be loaded, labs run in the UML kernel "
                     "(`mptcplab uml build`)"))
    out.append(Check("tbf (rate limits)", tbf_usable(), "", "enable CONFIG_NET_SCH_TBF / modprobe sch_tbf"))
    tools = {
        "ip": ("iproute2", ["ip", "-V"]), "tc": ("iproute2", ["tc", "-V"]),
        "ss": ("iproute2", ["ss", "-V"]), "nstat": ("iproute2", ["nstat", "-V"]),
        "ethtool": ("ethtool", ["ethtool", "--version"]), "tcpdump": ("tcpdump", ["tcpdump", "--version"]),
        "tshark": ("tshark", ["tshark", "--version"]), "iperf3": ("iperf3", ["iperf3", "--version"]),
        "ping": ("iputils-ping", ["ping", "-V"]),
    }
    for tool, (pkg, argv) in tools.items():
        path = shutil.which(tool)
        out.append(Check(f"tool {tool}", path is not None, _version(argv) if path and argv else (path or ""),
                         f"{apt} {pkg}"))
    if shutil.which("ip"):
        ok = _run(["ip", "mptcp", "help"]).returncode in (0, 255) and "mptcp" in _run(["ip", "mptcp", "help"]).stderr
        out.append(Check("ip mptcp (iproute2 >= 5.8)", ok, "", f"{apt} iproute2 (a version with `ip mptcp`)"))
    if shutil.which("iperf3"):
        v = re.search(r"iperf (\d+)\.(\d+)", _version(["iperf3", "--version"]))
        native = bool(v and (int(v[1]), int(v[2])) >= (3, 19))
        how = ("iperf3 --mptcp" if native else "via `mptcpize run iperf3`" if shutil.which("mptcpize")
               else "via the kit's LD_PRELOAD shim (no mptcpize here)" if shutil.which("gcc") else "")
        out.append(Check("iperf3 MPTCP mode", bool(how), how or "iperf3 < 3.19, no mptcpize, no gcc for the shim",
                         f"{apt} mptcpd (Ubuntu: provides mptcpize), or gcc, or iperf3 >= 3.19"))
    tracefs = ensure_tracefs()
    out.append(Check("tracefs", tracefs, str(TRACEFS), "mount -t tracefs nodev /sys/kernel/tracing "
                     "(kernel needs CONFIG_FTRACE with event tracing)"))
    for ev in ("tcp/tcp_probe", "mptcp/mptcp_subflow_get_send", "sched/sched_switch"):
        ok = (TRACEFS / "events" / ev).exists()
        out.append(Check(f"tracepoint {ev.replace('/', ':')}", ok, "",
                         "kernel built without this tracepoint; `ss -tiM` sampling is the fallback"))
    kp = kprobes_usable()
    out.append(Check("kprobes (send-buffer waits, Lab 1 Fig. 10)", kp,
                     "kprobe on sk_stream_wait_memory" if kp else
                     "not available: Lab 1 uses sched_switch kernel stacks instead",
                     "a kernel with CONFIG_KPROBE_EVENTS (stock Ubuntu has it; UML does not)"))
    so = struct_ops_usable()
    out.append(Check("BPF struct_ops congestion control (Lab 2)", so,
                     "BTF, bpftool and clang present" if so else
                     ("UML has no BPF JIT" if in_uml() else "missing BTF, bpftool or clang"),
                     f"{apt} clang llvm libbpf-dev bpftool (a kernel with BTF: /sys/kernel/btf/vmlinux)"))
    if not netem and not in_uml():
        from . import uml

        src = next(iter(sorted(Path("/usr/src").glob("linux-source-6.*.tar.xz"))), None)
        built = uml.kernel_path()
        out.append(Check("UML kernel (runs labs without netem)", built is not None or src is not None,
                         f"built: {built}" if built else (f"source: {src}, not built yet" if src else "no source"),
                         f"{apt} linux-source-6.12 bc flex bison libelf-dev, then `mptcplab uml build`"))
    return out


def decide_where(requested: str, needs: tuple[str, ...] = ("netem",), uml_ok: bool = True) -> str:
    """native or uml, for a lab with these needs; raises when neither can run it."""
    if requested not in ("auto", "native", "uml"):
        raise UsageError(f"--where {requested!r}: choose auto, native or uml")
    if in_uml():
        return "native"  # already inside the UML kernel: this *is* the place
    if requested == "native":
        from .topology import require_root

        require_root()  # the first thing to fix, before any capability
        native_ok = all(_has(n) for n in needs)
        if not native_ok:
            missing = [n for n in needs if not _has(n)]
            raise EnvironmentProblem(f"this kernel lacks {', '.join(missing)}; run `mptcplab doctor` for the fix"
                                     + (", or use --where uml" if uml_ok else ""))
        return "native"
    native_ok = all(_has(n) for n in needs)
    if requested == "uml":
        if not uml_ok:
            raise EnvironmentProblem("this lab cannot run in UML (it needs BPF struct_ops, and UML has no BPF JIT)")
        return "uml"
    if native_ok:
        return "native"
    if uml_ok:
        return "uml"
    raise EnvironmentProblem(f"this lab needs {', '.join(needs)} natively and cannot run in UML; "
                             "run `mptcplab doctor` for what to install")


def _has(capability: str) -> bool:
    return {"netem": netem_usable, "bpf_struct_ops": struct_ops_usable, "tbf": tbf_usable}[capability]()


def report() -> tuple[str, bool]:
    lines, all_ok = [], True
    for c in checks():
        mark = "ok " if c.ok else "MISSING"
        lines.append(f"[{mark:7}] {c.name}" + (f": {c.detail}" if c.detail else ""))
        if not c.ok:
            lines.append(f"          fix: {c.fix}")
    from .lab import all_labs

    lines.append("")
    for lab in all_labs().values():
        try:
            where = decide_where("auto", lab.needs, lab.uml_ok)
            lines.append(f"{lab.id} ({lab.title}): will run {'natively' if where == 'native' else 'in UML'}")
        except EnvironmentProblem as exc:
            all_ok = False
            lines.append(f"{lab.id} ({lab.title}): CANNOT RUN here: {exc}")
    if not all_labs():
        lines.append(f"labs needing netem will run {'natively' if netem_usable() or in_uml() else 'in UML'}")
    from .physics import describe_last

    lines += ["", *describe_last()]
    return "\n".join(lines), all_ok
