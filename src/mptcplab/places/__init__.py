"""Where an experiment runs: natively, in the kit's User-Mode Linux kernel, or in a virtual
machine booting the distribution's stock kernel. The runner picks and calls a place without
knowing which one it is: every place is a module here with the `Place` interface below, listed
once in REGISTRY. No module outside this package compares place names: it asks the place.

Inside a guest the environment says which place this is (MPTCPLAB_WHERE, set by the guest's
script, read once here: `current()`), and the guest is the native place for the command that
runs there.
"""

from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Protocol

from ..core.errors import UsageError

# name -> module. Imported by name when asked for, so a place's dependencies (virtme-ng, the UML
# build) load only where it is used. A fourth place is one module and one line here.
REGISTRY = {"native": f"{__name__}.native", "uml": f"{__name__}.uml", "vm": f"{__name__}.vm"}


class Place(Protocol):
    """What the engine asks of a place (each place is a module with these names)."""

    NAME: str  # what `--where` calls it, recorded as the manifest's platform.where
    GUEST: bool  # True: `run` starts another kernel; False: the experiment runs in this process
    WORDS: str  # how `doctor` says where a lab will run ("in the UML kernel")
    RAN: str  # how a report says where it ran ("inside the kit's User-Mode Linux kernel")
    KERNEL: str  # how a table names the kernel a run had ("User-Mode Linux kernel")
    CLOCK: str  # how a report says the guest's clock differs, with {guest} and {wall} seconds ("" if not)
    RANK: int  # how fast it runs a lab, for `auto` before a check has measured it: 0 = the host's kernel
    OFFERS: set[str]  # what its kernel may offer at most, declared: `auto` rules a place out without booting it
    MARKER: str  # in the command line of every process of its guests ("" if none): cleanup and orphans find them

    def available(self) -> tuple[bool, str]:
        """Can this host offer the place at all (kernel built/installed, tools present), and why."""

    def capabilities(self) -> set[str]:
        """What its kernel offers: netem, tbf, kprobes, bpf_struct_ops (mptcplab.core.kernel.PLACE_CAPABILITIES)."""

    def cost(self) -> str:
        """What running a lab here costs compared with the host's kernel, in words ("" if nothing):
        `auto` says it when it picks this place."""

    def describe(self) -> list[str]:
        """Lines for `mptcplab doctor` (kernel, accelerator, ...)."""

    def ready(self) -> None:
        """Host-side work the place needs once before any lab runs there, measuring nothing (UML:
        its kernel's build), or nothing: `reproduce` does it beside deciding and preparing the others."""

    def prepare(self, lab) -> None:
        """Host-side work before `lab` boots there (Lab.running.prebuild), or nothing."""

    def run(self, argv: list[str], results: list[Path], handed: dict) -> int:
        """Run `mptcplab ARGV` there (the caller appends `--where native`) and return its exit
        status. `results` are the directories the command writes: the place makes them writable
        there and their files reach the host when it returns (UML's hostfs and the VM's 9p share
        them; a place without a shared filesystem copies them back). `handed` is data for the
        command inside (`hand` puts it in the guest's environment; `handed()` reads it there)."""

    def clean(self) -> list[str]:
        """Remove what a killed run of this place left (its guest processes and directories)."""

    def platform(self) -> dict:
        """Facts a command running inside this place records in its manifest's `platform`
        (which guest kernel, its clock), read from the environment its `run` gave the guest."""

    def wall_clock(self, directory: Path) -> float:
        """Now, in the host's wall-clock seconds, as a command running here reads it (UML's guest
        clock skips idle time: it reads the host's from a file's mtime in `directory`)."""


def choices() -> str:
    """`--where`'s values in words: "auto, native, uml or vm"."""
    names = ["auto", *REGISTRY]
    return f"{', '.join(names[:-1])} or {names[-1]}"


def get(name: str) -> Place:
    if name not in REGISTRY:
        raise UsageError(f"--where {name!r}: choose {choices()}")
    return importlib.import_module(REGISTRY[name])


def all_places() -> list[Place]:
    return [get(name) for name in REGISTRY]


def find(name: str | None) -> Place | None:
    """The place of that name, or None (a name recorded by another version of the kit)."""
    return get(name) if name in REGISTRY else None


def current() -> Place:
    """The place this process runs in: native on the host, the guest's place inside a guest (its
    script exports MPTCPLAB_WHERE; the one reader of that variable)."""
    return get(os.environ.get("MPTCPLAB_WHERE", "native"))


def inside_guest() -> bool:
    return current().GUEST


HANDED = "MPTCPLAB_HANDED"


def hand(data: dict) -> dict[str, str]:
    """The environment entry a guest place gives its command: `data` as JSON (see handed)."""
    return {HANDED: json.dumps(data, default=str)}


def handed() -> dict:
    """What the host handed the command running in this guest: the user's command line
    (`command`) and a lab's parameters as resolved on the host (`params`); {} on the host."""
    return json.loads(os.environ.get(HANDED, "{}"))


def guest_markers() -> list[bytes]:
    """What marks a guest's processes, for every place that starts one (lifetime finds them by it)."""
    return [place.MARKER.encode() for place in all_places() if place.GUEST and place.MARKER]
