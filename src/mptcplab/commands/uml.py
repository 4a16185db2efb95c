"""`mptcplab uml build|run|status`: the User-Mode Linux kernel for hosts without netem."""

from __future__ import annotations

from ..places import uml_kernel as uml
from . import add_guest_run, guest_command


def register(sub) -> None:
    p = sub.add_parser("uml", help="build and run the User-Mode Linux kernel (netem + MPTCP anywhere)")
    usub = p.add_subparsers(dest="uml_command", metavar="ACTION")
    b = usub.add_parser("build", help="build the UML kernel from the distribution's linux-source (cached)")
    b.add_argument("-j", "--jobs", type=int, default=None, help="parallel make jobs (default: all cores)")
    b.set_defaults(func=_build)
    r = add_guest_run(usub, "kernel", "the UML kernel", _run)
    r.add_argument("--mem", default="2G", help="UML memory (default 2G)")
    s = usub.add_parser("status", help="where the cached kernel is, if built")
    s.set_defaults(func=_status)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _build(args) -> int:
    uml.build(jobs=args.jobs)
    return 0


def _run(args) -> int:
    cmd = guest_command(args, "uml")
    return uml.run(cmd, mem=args.mem, timeout=args.timeout)


def _status(_args) -> int:
    path = uml.kernel_path()
    print(f"UML kernel: {path}" if path else uml.not_built() or f"UML kernel: not built (cache: {uml.cache_root()})")
    return 0 if path else 1
