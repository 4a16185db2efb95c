"""`mptcplab vm run|status`: the distribution's stock kernel in a VM (virtme-ng), like `uml`."""

from __future__ import annotations

from pathlib import Path

from . import add_guest_run, guest_command
from ..places import vm


def register(sub) -> None:
    p = sub.add_parser("vm", help="run a command in a VM booting the distribution's stock kernel (virtme-ng)")
    vsub = p.add_subparsers(dest="vm_command", metavar="ACTION")
    r = add_guest_run(vsub, "VM", "the stock kernel", _run)
    r.add_argument("--rwdir", action="append", type=Path, default=[], metavar="DIR",
                   help="a directory the guest may write (repeatable; the rest of the host is read-only)")
    s = vsub.add_parser("status", help="kernel, accelerator and what the guest kernel offers")
    s.set_defaults(func=_status)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _run(args) -> int:
    cmd = guest_command(args, "vm")
    from ..core.state import signals_unwind

    with signals_unwind():
        return vm.boot(cmd, writable=[Path.cwd(), *args.rwdir], timeout=args.timeout)


def _status(_args) -> int:
    ok, why = vm.available()
    print("VM place: " + ("; ".join(vm.describe()) if ok else why))
    if ok:
        print("guest kernel offers: " + ", ".join(sorted(vm.capabilities())))
    return 0 if ok else 1
