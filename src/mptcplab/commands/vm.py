"""`mptcplab vm run|status`: the distribution's stock kernel in a VM (virtme-ng), like `uml`."""

from __future__ import annotations

import argparse
from pathlib import Path

from . import guest_command
from ..places import vm


def register(sub) -> None:
    p = sub.add_parser("vm", help="run a command in a VM booting the distribution's stock kernel (virtme-ng)")
    vsub = p.add_subparsers(dest="vm_command", metavar="ACTION")
    r = vsub.add_parser("run", help="boot the stock kernel, run CMD inside as root, return its exit status")
    r.add_argument("--rwdir", action="append", type=Path, default=[], metavar="DIR",
                   help="a directory the guest may write (repeatable; the rest of the host is read-only)")
    r.add_argument("--timeout", type=float, default=None, help="seconds before the VM is stopped")
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    r.set_defaults(func=_run)
    s = vsub.add_parser("status", help="kernel, accelerator and what the guest kernel offers")
    s.set_defaults(func=_status)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _run(args) -> int:
    cmd = guest_command(args, "vm")
    from ..state import signals_unwind

    with signals_unwind():
        return vm.boot(cmd, writable=[Path.cwd(), *args.rwdir], timeout=args.timeout)


def _status(_args) -> int:
    ok, why = vm.available()
    print("VM place: " + ("; ".join(vm.describe()) if ok else why))
    if ok:
        print("guest kernel offers: " + ", ".join(sorted(vm.capabilities())))
    return 0 if ok else 1
