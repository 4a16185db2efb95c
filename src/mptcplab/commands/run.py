"""`mptcplab run LAB [--quick] [--where PLACE] [--shard K/N]`: run a lab's experiment for real."""

from __future__ import annotations

from pathlib import Path

from .. import places
from ..core.errors import UsageError
from ..run.lab import all_labs
from ..run.runner import plan, run_lab
from ..run.shards import Shard


def register(sub) -> None:
    p = sub.add_parser("run", help="run a lab's experiment (resumable; results with manifests)")
    p.add_argument("lab", help=f"which lab: {', '.join(all_labs()) or '(none installed)'}")
    p.add_argument("--quick", action="store_true", help="the short version (fewer points, shorter runs; for CI)")
    p.add_argument("--where", default="auto", help=f"{places.choices()} (auto: the fastest place that honours "
                   "the lab's inputs and has not failed its setup check)")
    p.add_argument("--out", type=Path, default=None, help="results directory (default: results/LAB[-quick])")
    p.add_argument("--fresh", action="store_true", help="discard earlier results in --out instead of resuming")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                   help="override a parameter of experiment.toml, e.g. --set sweep.repetitions=2 (TOML value)")
    p.add_argument("--shard", default=None, metavar="K/N",
                   help="run only shard K of N of the sweep's runs (default --out: results/LAB[-quick]-shard-K-of-N); "
                   "put the shards together with `mptcplab merge`")
    p.add_argument("--recheck", action="store_true", help="forget this lab's recorded failed setup checks, so "
                   "--where auto may pick those places again (the lab's own check then decides)")
    p.add_argument("--check-setup", type=int, default=0, metavar="N",
                   help="measure nothing: build the lab's network and run its setup check N times, each on a "
                   "fresh network; a table of every attempt in OUT/setup-checks.csv (how dependable is this place?)")
    p.add_argument("--dry-run", action="store_true", help="measure nothing and start no place: list the runs "
                   "this invocation would make (per setting: how many, how many already done in --out) and exit")
    p.set_defaults(func=lambda a: _plan(a) if a.dry_run else run_lab(
        a.lab, a.quick, a.where, a.out, a.fresh, parse_overrides(a.overrides), shard=a.shard and Shard.parse(a.shard),
        recheck=a.recheck, check_setup=a.check_setup))


def _plan(a) -> int:
    print(plan(a.lab, a.quick, a.out, parse_overrides(a.overrides), shard=a.shard and Shard.parse(a.shard)))
    return 0


def parse_overrides(items: list[str]) -> dict:
    """KEY=VALUE items -> nested dict. KEY is a TOML key (quote parts with dots:
    sysctls.snd."net.ipv4.tcp_sack"=0); VALUE is a TOML value, or else a bare string."""
    import json
    import tomllib

    out: dict = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {item!r}: write KEY=VALUE, e.g. --set sweep.repetitions=2")
        try:
            parsed = tomllib.loads(f"{key} = {value}")
        except tomllib.TOMLDecodeError:
            try:
                parsed = tomllib.loads(f"{key} = {json.dumps(value)}")  # a bare word is a string
            except tomllib.TOMLDecodeError as exc:
                raise UsageError(f"--set {item!r}: {exc}") from None
        _merge_into(out, parsed)
    return out


def _merge_into(base: dict, over: dict) -> None:
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(base.get(k), dict):
            _merge_into(base[k], v)
        else:
            base[k] = v
