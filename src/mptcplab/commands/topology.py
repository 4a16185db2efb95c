"""`mptcplab topology`: print the exact ip/tc/sysctl commands of a network, without running them.

    mptcplab topology --lab lab1
    mptcplab topology --path fast=rate=100mbit --path slow=rate=100mbit,delay=40ms --mptcp 2
"""

from __future__ import annotations

from ..core.errors import UsageError
from ..net.topology import NetPath, Topology
from ..run.lab import get_lab


def register(sub) -> None:
    p = sub.add_parser("topology", help="print the ip/tc/sysctl commands that build a lab's network")
    p.add_argument("--lab", help="print this lab's topology (with its parameters)")
    p.add_argument("--quick", action="store_true", help="with --lab: the --quick parameters")
    p.add_argument("--path", action="append", default=[], metavar="NAME=SPEC",
                   help="a path from snd to rcv, e.g. slow=rate=100mbit,delay=40ms (repeatable)")
    p.add_argument("--mptcp", type=int, default=None, metavar="N", help="configure MPTCP for N subflows")
    p.add_argument("--no-netem", action="store_true", help="as on a kernel without netem (tbf only)")
    p.set_defaults(func=_topology)


def _topology(args) -> int:
    netem = not args.no_netem
    if args.lab:
        lab = get_lab(args.lab)
        topo = lab.topology(lab.load_params(args.quick))
        topo.netem = netem
    else:
        if not args.path:
            raise UsageError("give --lab LAB or at least one --path NAME=SPEC")
        paths = []
        for item in args.path:
            name, sep, spec = item.partition("=")
            if not sep:
                raise UsageError(f"--path {item!r}: write NAME=SPEC, e.g. slow=rate=100mbit,delay=40ms")
            paths.append(NetPath(name, "snd", "rcv", spec))
        topo = Topology("custom", ("snd", "rcv"), paths, mptcp_subflows=args.mptcp, netem=netem)
    print(topo.script(), end="")
    return 0
