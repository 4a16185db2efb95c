"""The kit's User-Mode Linux kernel as a place (the kernel itself: mptcplab.uml)."""

from __future__ import annotations

import sys
from pathlib import Path

from .. import log, uml

NAME = "uml"


def available() -> tuple[bool, str]:
    built = uml.kernel_path()
    if built:
        return True, f"built: {built}"
    src = next(iter(sorted(Path("/usr/src").glob("linux-source-6.*.tar.xz"))), None)
    if src:
        return True, f"source {src.name}, built on first use (`mptcplab uml build`, about 7 min on 2 cores)"
    return False, "no UML kernel and no linux-source-6.* to build one (apt-get install linux-source-6.12)"


def capabilities() -> set[str]:
    # What vagrant/uml/mptcplab.config gives it; UML cannot have kprobes or a BPF JIT (uml.UML_LACKS).
    return {"netem", "tbf"}


def describe() -> list[str]:
    ok, why = available()
    return [why, "no kprobes, no BPF JIT (struct_ops); time-travel clock"]


def run(argv: list[str], writable: list) -> int:
    # hostfs gives the guest the whole host filesystem read-write, so `writable` needs nothing here.
    kernel = uml.kernel_path() or uml.build()
    log.get().info("running in the UML kernel (%s)", kernel.parent.name)
    return uml.run([sys.executable, "-m", "mptcplab", *argv],
                   env={"MPTCPLAB_UML_KERNEL": kernel.parent.name, "PYTHONUNBUFFERED": "1"})


def clean() -> list[str]:
    return []  # UML kernels carry umid=mlab-*: state.clean's sweep kills them
