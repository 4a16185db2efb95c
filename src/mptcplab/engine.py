"""The engine's sweep: one loop for every lab.

    summary = engine.run(ctx)

It asks the lab for its points, skips those already done (a sweep resumes where it stopped),
builds the network a point needs, runs the setup check once before the first measurement, and for
each point: applies the point's own settings (`Lab.configure`), records the network as the kernel
then reports it into the run's manifest, and measures (`Lab.measure`). Progress is logged per
run with an estimate of the time left in wall-clock time (inside UML, the host's clock: the
guest's time-travel clock skips idle time). Points may depend on results (a detailed run that
repeats the sweep's most degraded point), so the lab is asked again until it wants nothing new.
"""

from __future__ import annotations

import contextlib
import time

from . import log, shards
from .lab import Lab, Point, RunContext
from .results import Sweep, git_commit, wall_clock
from .verify import check_paths, describe

VERIFY = "verify"  # the setup check's run directory


def setup_check(net, params: dict, ctx: RunContext) -> None:
    """Verify the lab's network before measuring on it: once per sweep (a resumed sweep keeps the
    verdict of its `verify` run). A failed check raises ExperimentFailed and nothing is measured.

    Each path's RTT and single-path TCP rate against its configuration, MPTCP's subflows (see
    verify.check_paths, with the lab's `path_checks` options), then the lab's own `extra_check`.
    """
    sweep = Sweep(ctx.out)
    if sweep.done(VERIFY):
        return
    lab, say = ctx.lab, log.get(ctx.lab.id)
    first = net.topo.paths[0]
    with sweep.run(VERIFY, {"what": "verify the setup", **params}) as rd:
        if getattr(net, "up_s", None) is not None:  # building the network it checks came first (Topology.up)
            rd.manifest.setdefault("timings", {})["network_up"] = round(net.up_s, 3)
        with rd.timed("record"):
            net.record(rd)
        say.info("verifying the setup before measuring")
        # window=True: the physics check (mptcplab.physics) in every place, before every lab.
        check_paths(net, rd, first.a, first.b, **{"window": True, **lab.path_checks})
        lines = [describe(rd.summary["checks"])]
        if lab.extra_check:
            with rd.timed("extra_check"):
                lines.append(lab.extra_check(net, rd, params))
        say.info("setup verified:\n%s", "\n".join(lines))


def run_point(lab: Lab, net, sweep: Sweep, point: Point, params: dict) -> str:
    """One run: the point's settings, then the network into the manifest, then the measurement."""
    with sweep.run(point.key, point.values) as rd:
        with rd.timed("configure"):
            lab.configure(net, point, params)
        with rd.timed("record"):
            net.record(rd)  # after configure: the manifest shows what this run really used
        with rd.timed("measure"):
            return lab.measure(net, rd, point, params)


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    """`i/n key: line (elapsed, about ETA left)`, in wall-clock time.

    The time left is the runs' own mean time times the runs left. Building a network and the setup
    check happen once and are left out: counted in, they made the first run of a quick Lab 2 say
    "about 1h17m left" of a sweep that took 20 minutes.
    """

    def __init__(self, ctx: RunContext, total: int) -> None:
        self.ctx, self.total, self.done, self.measuring = ctx, total, 0, 0.0
        self.t0 = wall_clock(ctx.out)
        self.say = log.get(ctx.lab.id)
        self.say.info("%d runs to measure", total)

    def step(self, key: str, line: str, took: float) -> None:
        self.done += 1
        self.measuring += took
        elapsed = wall_clock(self.ctx.out) - self.t0
        left = self.measuring / self.done * (self.total - self.done)
        eta = f", about {_duration(left)} left" if self.done < self.total else ""
        self.say.info("%d/%d %s: %s  [%s%s]", self.done, self.total, key, line, _duration(elapsed), eta)


def run(ctx: RunContext, analyse: bool = True) -> dict | None:
    """Every point of the lab's sweep that is not done yet; then the lab's `finish` (with
    analyse=False, none: inside a guest, whose CPU may be emulated ten times slower than the host's,
    the runner has the host analyse the runs after the guest exits). A shard (ctx.shard, see
    mptcplab.shards) runs its share of the points and records itself instead: its tables come from
    `mptcplab merge`."""
    lab, params, sweep = ctx.lab, ctx.params, Sweep(ctx.out)
    say = log.get(lab.id)
    ctx.started = ctx.started or time.monotonic()

    def points():
        return shards.share(lab, params, ctx.shard) if ctx.shard else lab.points(params, sweep)

    wanted = points()
    left = [p for p in wanted if not sweep.done(p.key)]
    if len(left) < len(wanted):
        say.info("resuming: %d of %d runs already done", len(wanted) - len(left), len(wanted))
    with lab.session(ctx), contextlib.ExitStack() as networks:
        net, built = None, None
        while left:
            progress = Progress(ctx, len(left))
            for point in left:
                make = point.topology or lab.topology
                if make is not built:
                    networks.close()  # one network at a time: the previous one is torn down
                    net, built = networks.enter_context(make(params).up()), make
                    if make is lab.topology:
                        setup_check(net, params, ctx)
                started = wall_clock(ctx.out)
                line = run_point(lab, net, sweep, point, params)
                progress.step(point.key, line, wall_clock(ctx.out) - started)
            left = [p for p in points() if not sweep.done(p.key)]
    if ctx.shard:
        return shards.record(ctx, git_commit())
    return lab.finish(ctx) if analyse else None
