"""What this machine can do for the labs, and how to fix what it cannot.

Each check returns a `Check` with a fix in words; `report()` adds the places this host offers and
where each lab will run and why (run.runner.place_for).
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

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


# The kernel features beyond netem and tbf that a lab may need or use (kernel.PLACE_CAPABILITIES):
# capability -> (what it is, what this kernel has when it has it, what the kit does without it, the fix).
FEATURES = {
    "kprobes": ("kprobes (send-buffer waits)", "kprobe on sk_stream_wait_memory",
                "not available: send-buffer waits are read from sched_switch kernel stacks instead",
                "a kernel with CONFIG_KPROBE_EVENTS (stock Ubuntu has it; UML does not)"),
    "bpf_struct_ops": ("BPF struct_ops congestion control", "BTF, bpftool and clang present",
                       "missing BTF, bpftool or clang",
                       "apt-get install clang llvm libbpf-dev bpftool (a kernel with BTF: /sys/kernel/btf/vmlinux)"),
    "minrtt_scheduler": ("MPTCP scheduler minrtt", "in net.mptcp.available_schedulers",
                         "not in net.mptcp.available_schedulers: what needs it runs where a kernel has it "
                         "(Places to run)",
                         "a kernel with vagrant/uml/mptcp-minrtt-scheduler.patch: the kit's UML kernel "
                         "(`mptcplab uml build`; x86 only) or its box kernel, which the Vagrant box boots and "
                         "a Debian VM installs from build/box/kernel-arm64/ or kernel-amd64/ "
                         "(`vagrant/provision.sh --only kernel`, then a restart; site/setup/lima.md)"),
}


def _needed_by(capability: str) -> str:
    """" (needed by lab2; part of lab1)": the labs as shipped that need it (Lab.needs) or whose
    parts do (Lab.part_needs); "" when none does."""
    from .run.lab import all_labs

    whole, part = [], []
    for lab in all_labs().values():
        if capability in lab.needs:
            whole.append(lab.id)
        elif capability in lab.parts_needing(lab.load_params(quick=False)):
            part.append(lab.id)
    said = ([", ".join(whole)] if whole else []) + ([f"part of {', '.join(part)}"] if part else [])
    return f" (needed by {'; '.join(said)})" if said else ""


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
    here = places.current()  # what this place's kernel can never offer, it declares (its OFFERS)
    for capability, (name, found, without, fix) in FEATURES.items():
        ok = kernel.has(capability)
        detail = found if ok else (f"the {here.KERNEL} offers none" if capability not in here.OFFERS else without)
        out.append(Check(name + _needed_by(capability), ok, detail, fix))
    # Where this kernel lacks netem, the places that offer it (UML, the VM) are listed by report()'s
    # "Places to run", each saying what it needs (Place.available).
    return out


# Said first: the checks of this kernel take seconds; measuring a guest place the first time takes
# minutes. Measured 2026-11-28 on the kit's 2-core machine under a load of 15-20 (other work): the VM's
# first probe under TCG took 11m54s (its kernel up after 10m23s); a boot alone takes 20-40 s when idle.
AHEAD = ("mptcplab doctor: this kernel and its tools first (seconds), then the places to run and where each "
         "lab would run. A guest place not measured here yet is measured now, once (cached after): the VM "
         "boots its kernel, which under software emulation takes about a minute on an idle host and over "
         "ten on a loaded one; it says what it is doing every 30 s.")


def report(emit: Callable[[str], None] = lambda line: None) -> tuple[str, bool]:
    """The whole report and whether every lab can run here; `emit` gets each line as soon as it is
    known (`mptcplab doctor` prints them: the places' first measurement takes minutes)."""
    lines, all_ok = [], True

    def say(*new: str) -> None:
        for line in new:
            lines.append(line)
            emit(line)

    for c in checks():
        mark = "ok " if c.ok else "MISSING"
        say(f"[{mark:7}] {c.name}" + (f": {c.detail}" if c.detail else ""))
        if not c.ok:
            say(f"          fix: {c.fix}")
    from .run.lab import all_labs
    from .run.runner import place_for

    say("", "Places to run (--where):")
    say(*overview.lines(), "")
    for lab in all_labs().values():
        try:
            picked = place_for(lab, lab.load_params(quick=False))  # the lab as shipped
            say(f"{lab.id} ({lab.title}): will run {places.get(picked.place).WORDS}: {picked.why}")
        except EnvironmentProblem as exc:
            all_ok = False
            say(f"{lab.id} ({lab.title}): CANNOT RUN here: {exc}")
    if not all_labs():
        say(f"labs needing netem will run {'natively' if kernel.netem_usable() or places.inside_guest() else 'in a guest'}")
    say("", *recorded_checks())
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
