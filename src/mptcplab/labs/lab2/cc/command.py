"""`mptcplab cc load|list|unload`: Lab 2's multipath congestion controls (BPF struct_ops), a command
the lab adds to the CLI (`Lab.commands`), for trying them outside a run."""

from __future__ import annotations

from . import loader


def register(sub) -> None:
    p = sub.add_parser("cc", help="load, list or unload the kit's multipath congestion controls (BPF, Lab 2)")
    csub = p.add_subparsers(dest="cc_command", metavar="ACTION", required=True)
    names = ", ".join(loader.ALGORITHMS)

    load = csub.add_parser("load", help="build (cached) and register congestion controls")
    load.add_argument("algos", nargs="*", metavar="ALGO", help=f"{names}; default: all")
    load.set_defaults(func=_load)

    ls = csub.add_parser("list", help="the kit's algorithms, which are registered, and their counters")
    ls.set_defaults(func=_list)

    unload = csub.add_parser("unload", help="unregister congestion controls")
    unload.add_argument("algos", nargs="*", metavar="ALGO", help=f"{names}; default: every registered mlab_*")
    unload.set_defaults(func=_unload)


def _load(args) -> int:
    algos = loader.resolve(args.algos)
    done = loader.load(algos)
    for a in algos:
        print(f"{a.name:15} {'registered' if a.name in done else 'already registered'}")
    print("select one per socket with setsockopt(IPPROTO_TCP, TCP_CONGESTION, b\"<name>\"); "
          "on an MPTCP socket it applies to every subflow")
    return 0


def _list(_args) -> int:
    loaded = set(loader.list_loaded())
    print(f"{'name':15} {'state':11} {'acks':>9} {'coupled':>9} {'dwnd':>9} {'losses':>7} {'max_sf':>6}  rule")
    for a in loader.ALGORITHMS.values():
        st = loader.stats(a.name) if a.name in loaded else {}
        cols = [st.get(k, "-") for k in ("acks", "coupled_acks", "dwnd_acks", "losses", "max_subflows")]
        print(f"{a.name:15} {'registered' if a.name in loaded else '-':11} "
              f"{cols[0]:>9} {cols[1]:>9} {cols[2]:>9} {cols[3]:>7} {cols[4]:>6}  {a.rule}")
    return 0


def _unload(args) -> int:
    names = [a.name for a in loader.resolve(args.algos)] if args.algos else loader.list_loaded()
    removed = loader.unload(names)
    for name in removed:
        print(f"unregistered {name}")
    if not removed:
        print("no mlab_* congestion control was registered")
    return 0
