"""Where an experiment runs: natively, in the kit's User-Mode Linux kernel, or in a virtual
machine booting the distribution's stock kernel. The runner picks and calls a place without
knowing which one it is; each place (a module here) has the same small interface:

    NAME                    "native" | "uml" | "vm"
    available() -> (ok, why)      can this host offer the place at all (kernel built/installed...)
    capabilities() -> set[str]    what its kernel offers: netem, tbf, kprobes, bpf_struct_ops
    describe() -> list[str]       lines for `mptcplab doctor` (kernel, accelerator, ...)
    run(argv, writable) -> int    run `mptcplab ARGV` there (the caller appends `--where native`),
                                  with `writable` directories written back to the host; exit status
    clean() -> list[str]          remove what a killed run of this place left (also `mptcplab clean`)
    prepare(lab)                  optional: host-side work before the lab boots there (Lab.prebuild)

Inside a guest the environment says where we are (MPTCPLAB_WHERE=uml|vm) and the guest is the
native place for the command that runs there.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

from ..errors import UsageError

NAMES = ("native", "uml", "vm")


def get(name: str) -> ModuleType:
    if name not in NAMES:
        raise UsageError(f"--where {name!r}: choose auto, {', '.join(NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def current() -> str:
    """The place this process runs in: "native" on the host, "uml" or "vm" inside a guest."""
    return os.environ.get("MPTCPLAB_WHERE", "native")


def inside_guest() -> bool:
    return current() != "native"


def offered() -> dict[str, set[str]]:
    """{place: capabilities} for every place this host can offer right now."""
    out = {}
    for name in NAMES:
        place = get(name)
        if place.available()[0]:
            out[name] = place.capabilities()
    return out
