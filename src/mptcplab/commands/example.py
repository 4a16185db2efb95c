"""`mptcplab example`: the engine's two-path example experiment (the paper's Figure 3 network).

Two 100 Mbit/s paths, one with 40 ms one-way delay. It verifies what every lab relies on and
writes the evidence with a manifest: ping RTT per path, single-path TCP rate per path, an
MPTCP transfer shown from its own capture to use exactly one subflow per path, and the physics
check's window-limited transfer (physics.py): measured vs bound, pass or refuse.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import places
from ..core import log
from ..judge.verify import check_paths, describe
from ..net.topology import NetPath, Topology
from ..places.decide import decide
from ..run.results import Sweep
from ..run.runner import in_place


def register(sub) -> None:
    p = sub.add_parser("example", help="two-path example experiment: verifies RTT, rate and MPTCP subflows")
    p.add_argument("--where", default="auto", help=places.choices())
    p.add_argument("--out", type=Path, default=Path("results/example"), help="results directory")
    p.add_argument("--seconds", type=float, default=5.0, help="length of each transfer")
    p.set_defaults(func=_example)


def topology() -> Topology:
    return Topology("example", hosts=("snd", "rcv"),
                    paths=[NetPath("fast", "snd", "rcv", "rate=100mbit,delay=0ms"),
                           NetPath("slow", "snd", "rcv", "rate=100mbit,delay=40ms")],
                    mptcp_subflows=2)


def _example(args) -> int:
    out = args.out.resolve()
    where = decide(args.where).place
    say = log.get("example")

    def here() -> int:
        key = time.strftime("%Y%m%d-%H%M%S")
        topo = topology()
        with Sweep(out).run(key, {"paths": [str(p.link) for p in topo.paths], "seconds": args.seconds}) as rd:
            with topo.up(rd) as net:
                say.info("verifying the two-path network (%s, kernel %s)", rd.manifest["platform"]["where"],
                         rd.manifest["platform"]["kernel_release"])
                try:
                    check_paths(net, rd, "snd", "rcv", tcp_seconds=args.seconds, window=True)
                finally:
                    say.info("physics check (measured vs bound):\n  %s",
                             "\n  ".join(rd.summary.get("checks", {}).get("physics", [])))
            say.info("%s", describe(rd.summary["checks"]))
        say.info("all checks passed; manifest: %s", out / key / "manifest.json")
        return 0

    return in_place(where, ["example", "--out", str(out), "--seconds", str(args.seconds)], here, out=out)
