"""What this machine can do for the labs, and how to fix what it cannot.

Each check returns a `Check` with a fix in words; `report()` adds the places this host offers and
where each lab will run and why (run.runner.place_for).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from . import places
from .core import kernel, process
from .core.errors import EnvironmentProblem
from .core.paths import TRACEFS
from .places import overview, records

@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    fix: str = ""


def _version(argv: list[str]) -> str:
    return process.first_line(argv) or ""


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
    netem = kernel.netem_usable()
    out.append(Check("sch_netem (delay, loss)", netem, "a netem qdisc can be created" if netem else
                     "creating a netem qdisc failed",
                     f"{apt} linux-modules-extra-$(uname -r) && modprobe sch_netem (Ubuntu); on Debian "
                     "`modprobe sch_netem`; where modules cannot be loaded, labs run in the UML kernel "
                     "(`mptcplab uml build`)"))
    out.append(Check("tbf (rate limits)", kernel.tbf_usable(), "", "enable CONFIG_NET_SCH_TBF / modprobe sch_tbf"))
    for tool, (pkg, argv) in process.TOOLS.items():
        path = shutil.which(tool)
        out.append(Check(f"tool {tool}", path is not None, _version(argv) if path and argv else (path or ""),
                         f"{apt} {pkg}"))
    if shutil.which("ip"):
        help_ = process.run(["ip", "mptcp", "help"], check=False, timeout=20)
        ok = help_.returncode in (0, 255) and "mptcp" in help_.stderr
        out.append(Check("ip mptcp (iproute2 >= 5.8)", ok, "", f"{apt} iproute2 (a version with `ip mptcp`)"))
    tracefs = kernel.tracefs_usable()
    out.append(Check("tracefs", tracefs, str(TRACEFS), "mount -t tracefs nodev /sys/kernel/tracing "
                     "(kernel needs CONFIG_FTRACE with event tracing)"))
    for ev in ("tcp/tcp_probe", "mptcp/mptcp_subflow_get_send", "sched/sched_switch"):
        ok = (TRACEFS / "events" / ev).exists()
        out.append(Check(f"tracepoint {ev.replace('/', ':')}", ok, "",
                         "kernel built without this tracepoint; `ss -tiM` sampling is the fallback"))
    kp = kernel.kprobes_usable()
    out.append(Check("kprobes (send-buffer waits, Lab 1 Fig. 10)", kp,
                     "kprobe on sk_stream_wait_memory" if kp else
                     "not available: Lab 1 uses sched_switch kernel stacks instead",
                     "a kernel with CONFIG_KPROBE_EVENTS (stock Ubuntu has it; UML does not)"))
    so = kernel.struct_ops_usable()
    here = places.current()  # what this place's kernel can never offer, it declares (its OFFERS)
    out.append(Check("BPF struct_ops congestion control (Lab 2)", so,
                     "BTF, bpftool and clang present" if so else
                     (f"the {here.KERNEL} offers none" if "bpf_struct_ops" not in here.OFFERS
                      else "missing BTF, bpftool or clang"),
                     f"{apt} clang llvm libbpf-dev bpftool (a kernel with BTF: /sys/kernel/btf/vmlinux)"))
    minrtt = kernel.minrtt_usable()
    out.append(Check("MPTCP scheduler minrtt (Lab 1's paper point)", minrtt,
                     "in net.mptcp.available_schedulers" if minrtt else
                     "not in net.mptcp.available_schedulers: Lab 1 runs where a kernel has it (Places to run)",
                     "a kernel with vagrant/uml/mptcp-minrtt-scheduler.patch: the kit's UML kernel has it "
                     "(`mptcplab uml build`; x86 only)"))
    # Where this kernel lacks netem, the places that offer it (UML, the VM) are listed by report()'s
    # "Places to run", each saying what it needs (Place.available).
    return out


def report() -> tuple[str, bool]:
    lines, all_ok = [], True
    for c in checks():
        mark = "ok " if c.ok else "MISSING"
        lines.append(f"[{mark:7}] {c.name}" + (f": {c.detail}" if c.detail else ""))
        if not c.ok:
            lines.append(f"          fix: {c.fix}")
    from .run.lab import all_labs
    from .run.runner import place_for

    lines += ["", "Places to run (--where):", *overview.lines(), ""]
    for lab in all_labs().values():
        try:
            picked = place_for(lab, lab.load_params(quick=False))  # the lab as shipped
            lines.append(f"{lab.id} ({lab.title}): will run {places.get(picked.place).WORDS}: {picked.why}")
        except EnvironmentProblem as exc:
            all_ok = False
            lines.append(f"{lab.id} ({lab.title}): CANNOT RUN here: {exc}")
    if not all_labs():
        lines.append(f"labs needing netem will run {'natively' if kernel.netem_usable() or places.inside_guest() else 'in a guest'}")
    lines += ["", *recorded_checks()]
    return "\n".join(lines), all_ok


def recorded_checks() -> list[str]:
    """The setup checks this kit recorded per place and lab (places.records: what `--where auto`
    chooses from), each figure against what it was judged by (the configured RTT, the link's
    ceiling, the window-limited transfer's bounds)."""
    found = sorted(records.load(), key=lambda r: (r.place, r.lab, r.params))
    if not found:
        return ["setup checks: none recorded here yet; `mptcplab example` runs one with the physics check"]
    lines = ["Setup checks recorded (place, lab, verdict, how):"]
    for r in found:
        lines.append(f"  {r.place}, {r.lab}{' with ' + r.params if r.params else ''}: "
                     f"{'passed' if r.passed else 'FAILED'} ({r.how})")
        lines += [f"      {name}: {value:g} against {r.bound[name]:g}" for name, value in r.measured.items()
                  if name in r.bound]
    return lines
