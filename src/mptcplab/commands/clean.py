"""`mptcplab clean`: remove everything the kit created (and nothing else)."""

from __future__ import annotations

from .. import kernel, state


def register(sub) -> None:
    p = sub.add_parser("clean", help="remove namespaces, processes, tracing and BPF congestion controls "
                                     "the kit created")
    p.set_defaults(func=_clean)


def _clean(_args) -> int:
    kernel.require_root()
    removed = state.clean(all_owners=True)
    for line in removed:
        print(f"removed {line}")
    print("nothing left to clean" if not removed else f"cleaned {len(removed)} item(s)")
    return 0
