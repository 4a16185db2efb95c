"""The host's own kernel: the experiment runs in this process (see runner.in_place)."""

from __future__ import annotations

import platform as _platform
import time
from pathlib import Path

from ..core import kernel

NAME = "native"
GUEST = False
WORDS = "natively"
RAN = "natively on this kernel"
KERNEL = "native kernel"
CLOCK = ""
RANK = 0  # nothing emulated: the fastest place, when its kernel honours the lab's inputs
OFFERS = set(kernel.PLACE_CAPABILITIES)  # what a kernel here may offer (capabilities() probes)
MARKER = ""  # no guest: the experiment runs in this process


def available() -> tuple[bool, str]:
    return True, f"kernel {_platform.release()}"


def capabilities() -> set[str]:
    return {name for name in OFFERS if kernel.has(name)}


def cost() -> str:
    return ""


def describe() -> list[str]:
    return [f"kernel {_platform.release()}"]


def ready() -> None:
    return None


def prepare(lab) -> None:
    return None


def platform() -> dict:
    return {}


def wall_clock(directory: Path) -> float:
    return time.time()


def run(argv: list[str], results: list, handed: dict) -> int:
    raise RuntimeError("the native place runs in-process: runner.in_place calls the experiment directly")


def clean() -> list[str]:
    return []  # namespaces, tracefs instances: state.clean; a lab's own objects: Lab.running.clean
