"""The host's own kernel: the experiment runs in this process (see runner.in_place)."""

from __future__ import annotations

import platform

from .. import kernel

NAME = "native"


def available() -> tuple[bool, str]:
    return True, f"kernel {platform.release()}"


def capabilities() -> set[str]:
    probes = {"netem": kernel.netem_usable, "tbf": kernel.tbf_usable, "kprobes": kernel.kprobes_usable,
              "bpf_struct_ops": kernel.struct_ops_usable}
    return {name for name, probe in probes.items() if probe()}


def describe() -> list[str]:
    return [f"kernel {platform.release()}"]


def run(argv: list[str], writable: list) -> int:
    raise RuntimeError("the native place runs in-process: runner.in_place calls the experiment directly")


def clean() -> list[str]:
    return []  # namespaces, tracefs instances and BPF programs: state.clean handles them
