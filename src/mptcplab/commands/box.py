"""`mptcplab box kernel|try`: the kit's box kernel (Debian's 6.12 with the paper's scheduler)."""

from __future__ import annotations

import sys

from ..places import box_kernel


def register(sub) -> None:
    p = sub.add_parser("box", help="the kit's box kernel: Debian's 6.12 with the paper's minRTT scheduler")
    bsub = p.add_subparsers(dest="box_command", metavar="ACTION")
    k = bsub.add_parser("kernel", help="build the box kernel's .deb (cached); prints its directory")
    k.add_argument("--arch", choices=sorted(box_kernel.ARCHES), default=None, help="default: this host's")
    k.add_argument("-j", "--jobs", type=int, default=None, help="parallel make jobs (default: all cores)")
    k.set_defaults(func=_kernel)
    t = bsub.add_parser("try", help="boot the built kernel (this host's arch) in a VM and list its MPTCP schedulers")
    t.set_defaults(func=_try)
    p.set_defaults(func=lambda a: p.print_help() or 2)


def _kernel(args) -> int:
    print(box_kernel.build(args.arch, jobs=args.jobs))
    return 0


def _try(_args) -> int:
    from ..places import vm

    image = box_kernel.build() / "image"
    # What the minrtt_scheduler capability needs from a kernel: the scheduler and its RP switch.
    return vm.boot(["sh", "-c", "uname -r; sysctl net.mptcp.available_schedulers net.mptcp.minrtt_rp"],
                   kimg=image, stream=sys.stdout)
