"""A sweep split across hosts: `mptcplab run LAB --shard K/N` runs shard K of N.

The sweep's points are the lab's (`Lab.points(params, None)`: every run its parameters define,
each keyed by its parameters and repetition, so a run's key, directory and seeds are the same
whichever shard runs it). The i-th point (0-based, in the lab's order) belongs to shard
i mod N + 1: round-robin, so each shard gets every kind of run and the shards take about as long.
Points a lab chooses from its complete sweep (a detailed run at a setting its results single out)
need the whole sweep: no shard runs them; `mptcplab run` on the merged directory adds them.

Each shard writes `shard.json` beside its runs: the lab, K/N, the full parameters, the kit's
commit and its runs. `mptcplab merge` (mptcplab.run.merge) checks the shards against each other.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import UsageError
from .results import Sweep

SHARD_FILE = "shard.json"


@dataclass(frozen=True)
class Shard:
    k: int  # 1..n
    n: int

    @classmethod
    def parse(cls, text: str) -> "Shard":
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m or not 1 <= int(m[1]) <= int(m[2]):
            raise UsageError(f"--shard {text!r}: write K/N with 1 <= K <= N, e.g. --shard 2/8")
        return cls(int(m[1]), int(m[2]))

    def __str__(self) -> str:
        return f"{self.k}/{self.n}"

    @property
    def name(self) -> str:
        """Its results directory's default name: shard-K-of-N."""
        return f"shard-{self.k}-of-{self.n}"


def select(points: list, shard: Shard) -> list:
    """Shard K of N's share of `points`: the i-th point for every i with i mod N = K - 1."""
    return points[shard.k - 1::shard.n]


def share(lab, params: dict, shard: Shard) -> list:
    """The points of the lab's sweep that shard K/N runs. More shards than points is a usage error
    (a shard with nothing to do is a job that wastes its allocation)."""
    points = lab.points(params, None)
    if shard.n > len(points):
        raise UsageError(f"--shard {shard}: {lab.id} with these parameters has {len(points)} runs; "
                         f"split it into at most {len(points)} shards")
    return select(points, shard)


def record(ctx, git: dict) -> dict:
    """Write the shard's `shard.json` (what `mptcplab merge` checks) and return it."""
    keys = [p.key for p in share(ctx.lab, ctx.params, ctx.shard)]
    done = Sweep(ctx.out)
    info = {"lab": ctx.lab.id, "shard": str(ctx.shard), "quick": ctx.quick, "parameters": ctx.params,
            "git": git, "runs": [k for k in keys if done.done(k)], "points": len(ctx.lab.points(ctx.params, None))}
    (Path(ctx.out) / SHARD_FILE).write_text(json.dumps(info, indent=2, default=str) + "\n")
    return info
