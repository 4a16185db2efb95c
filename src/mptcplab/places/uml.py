"""The kit's User-Mode Linux kernel as a place (the kernel itself: uml_kernel)."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from . import guest, hand, lifetime
from . import uml_kernel as uml
from ..core import log
from ..core.paths import PREFIX
from ..core.state import kill_each

NAME = "uml"
GUEST = True
WORDS = "in the UML kernel"
RAN = "inside the kit's User-Mode Linux kernel"
KERNEL = "User-Mode Linux kernel"
CLOCK = ("Its runs took {guest:.0f} s on the UML guest's time-travel clock, {wall:.0f} s of wall-clock time (the "
         "guest skips idle time and counts its kernel's work only in part; each manifest's <code>clock</code>).")
RANK = 1  # boots in seconds; its time-travel clock skips idle time
# What vagrant/uml/mptcplab.config gives it (no kprobes, no BPF JIT), and the paper's minRTT scheduler:
# every build applies vagrant/uml/*.patch (uml_kernel.build; the build's directory hashes them).
OFFERS = {"netem", "tbf", "minrtt_scheduler"}
MARKER = f"umid={PREFIX}-"  # on every UML kernel's command line (uml_kernel.run): `clean` finds them
# The build's time, said wherever the kit speaks of it: the first build of the fresh-clone
# `make reproduce` of 2026-11-25, 400 s on the kit's 2-core machine (site/setup/uml.md, "Building
# it: how long it takes"; benchmarks/results/reproduce_fresh_clone.md).
BUILD_TIME = "6.7 min on a 2-core machine"


def available() -> tuple[bool, str]:
    wrong = uml.unsupported_arch()
    if wrong:
        return False, wrong
    built = uml.kernel_path()
    if built:
        return True, f"built: {built}"
    unbuilt = uml.not_built()  # an HZ variant asked for (MPTCPLAB_UML_HZ): never built by a run
    if unbuilt:
        return False, unbuilt
    src = next(iter(sorted(Path("/usr/src").glob("linux-source-6.*.tar.xz"))), None)
    if src:
        return True, f"source {src.name}, built on first use (`mptcplab uml build`, {BUILD_TIME})"
    return False, "no UML kernel and no linux-source-6.* to build one (apt-get install linux-source-6.12)"


def capabilities() -> set[str]:
    return set(OFFERS)


def cost() -> str:
    return (f"the kit's UML kernel: built once ({BUILD_TIME}), then boots in seconds; its clock "
            "skips idle time (each manifest records both clocks)")


def describe() -> list[str]:
    ok, why = available()
    return [why, "the paper's minRTT scheduler (the kit's patch); no kprobes, no BPF JIT (struct_ops); "
            "time-travel clock"]


def ready() -> None:
    """The kernel, built once (uml_kernel.build; cached): a compile, nothing measured."""
    uml.kernel_to_boot()


def prepare(lab) -> None:
    return None  # the guest runs the host's own files (hostfs): nothing to build for it


def platform() -> dict:
    """The kernel build (its cache directory's name), its CONFIG_HZ (read by the host from the build's
    config) and the guest's clock, from inside the guest."""
    hz = os.environ.get("MPTCPLAB_UML_KERNEL_HZ", "")
    info = {"uml_kernel": os.environ.get("MPTCPLAB_UML_KERNEL"), "hz": int(hz) if hz.isdigit() else None}
    with contextlib.suppress(OSError):  # "time-travel": the guest's clock skips idle time
        cmdline = Path("/proc/cmdline").read_text().split()
        info["uml_clock"] = next((a for a in cmdline if a.startswith("time-travel")), "host")
    return info


def wall_clock(directory: Path) -> float:
    """The host's wall clock: the guest's own skips idle time (guest.host_time)."""
    return guest.host_time(directory)


def run(argv: list[str], results: list, handed: dict) -> int:
    # hostfs gives the guest the whole host filesystem read-write, so `results` needs nothing here.
    kernel = uml.kernel_to_boot()
    hz = uml.config_hz(kernel.parent / "config")  # what the build has, not what was asked for
    log.get().info("running in the UML kernel (%s, HZ %s)", kernel.parent.name, hz)
    return uml.run([sys.executable, "-m", "mptcplab", *argv],
                   env={"MPTCPLAB_UML_KERNEL": kernel.parent.name, "MPTCPLAB_UML_KERNEL_HZ": str(hz or ""),
                        "PYTHONUNBUFFERED": "1", **hand(handed)})


def clean() -> list[str]:
    """Kill the UML kernels (and their helper processes) the kit booted and left behind."""
    return [f"UML process {pid}" for pid in kill_each(lifetime.guest_pids(MARKER.encode()))]
