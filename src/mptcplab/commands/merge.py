"""`mptcplab merge DIR... [--out DIR]`: the shards of a sweep (`run --shard K/N`) as one sweep."""

from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser("merge", help="put the shards of a sweep (run --shard K/N) together: one results "
                                     "directory, the lab's tables and report, as one host would have made them")
    p.add_argument("shards", type=Path, nargs="+", metavar="DIR", help="the shards' results directories")
    p.add_argument("--out", type=Path, default=None,
                   help="the merged results directory (default: results/LAB[-quick]); must not hold results")
    p.set_defaults(func=_merge)


def _merge(args) -> int:
    from ..run import merge
    from ..run.runner import default_out

    plan = merge.plan(args.shards)
    merge.write(plan, args.out or default_out(plan.lab.id, plan.quick))
    return 0
