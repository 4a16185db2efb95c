"""The engine's sweep: one loop for every lab.

    summary = engine.run(ctx)

It asks the lab for its points, skips those already done (a sweep resumes where it stopped),
builds the network a point needs, runs the setup check once before the first measurement, and for
each point: applies the point's own settings (`Lab.running.configure`), records the network as the kernel
then reports it into the run's manifest, and measures (`Lab.measure`). Progress is logged per
run with an estimate of the time left in wall-clock time (inside UML, the host's clock: the
guest's time-travel clock skips idle time). Points may depend on results (a detailed run that
repeats the sweep's most degraded point), so the lab is asked again until it wants nothing new.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import shutil
import time

from . import shards
from ..core import eta, log
from ..core.errors import ExperimentFailed
from ..judge.verify import check_paths, describe
from .lab import Lab, Point, RunContext
from .results import Sweep, git_commit, wall_clock

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
            if getattr(net, "own_latency_s", None) is not None:  # of which the place's own latency's pings
                rd.manifest["timings"]["network_own_latency"] = round(net.own_latency_s, 3)
        with rd.timed("record"):
            net.record(rd)
        # Minutes in an emulated CPU, with nothing to count: its progress against the last time.
        with eta.step(say, "verifying the setup before measuring", f"{lab.id}/{ctx.where}/setup check",
                      clock=lambda: wall_clock(ctx.out)):
            # window=True: the physics check (mptcplab.judge.physics) in every place, before every lab.
            check_paths(net, rd, first.a, first.b, **{"window": True, **lab.running.path_checks})
            lines = [describe(rd.summary["checks"])]
            if lab.running.extra_check:
                with rd.timed("extra_check"):
                    lines.append(lab.running.extra_check(net, rd, params))
        say.info("setup verified:\n%s", "\n".join(lines))


def check_setup(ctx: RunContext, times: int) -> list[dict]:
    """The lab's setup check `times` times, each on a freshly built network (its own latency
    measured again), and nothing measured: `mptcplab run LAB --check-setup N`. How often does
    this place pass, and with what margins? Each attempt is a run directory
    (setup-check-K/verify, or verify.partial/failed.json when it refused); the table of all
    attempts is setup-checks.csv. Returns its rows."""
    lab, params, say = ctx.lab, ctx.params, log.get(ctx.lab.id)
    rows, progress = [], Progress(ctx, times, "setup checks to run")
    with lab.running.session(ctx):
        for i in range(1, times + 1):
            attempt = dataclasses.replace(ctx, out=ctx.out / f"setup-check-{i}")
            if Sweep(attempt.out).done(VERIFY):
                shutil.rmtree(attempt.out)  # a new attempt, never a resumed one
            refused, started = "", wall_clock(ctx.out)
            try:
                with lab.topology(params).up() as net:
                    setup_check(net, params, attempt)
            except ExperimentFailed as exc:
                refused = str(exc)
            rows += attempt_rows(attempt.out, i, refused)
            progress.step("setup check", f"REFUSED: {refused}" if refused else "passed", wall_clock(ctx.out) - started)
    table = ctx.out / "setup-checks.csv"
    with table.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]) if rows else ["attempt"])
        w.writeheader()
        w.writerows(rows)
    passed = len({r["attempt"] for r in rows if r["passed"]})
    say.info("setup checks: %d of %d passed (%s)", passed, times, table)
    return rows


def attempt_rows(out, attempt: int, refused: str) -> list[dict]:
    """One row per path of one setup-check attempt: the lowest and median ping RTT against the
    configured RTT and the check's bound, the place's own latency, and single-path TCP."""
    done, partial = out / VERIFY / "summary.json", out / f"{VERIFY}.partial" / "failed.json"
    summary = (json.loads(done.read_text()) if done.exists()
               else json.loads(partial.read_text())["summary"] if partial.exists() else {})
    checks = summary.get("checks") or {}
    bounds = {line.split(":")[0]: line for line in checks.get("physics", [])}
    rows = []
    for name, row in (checks.get("paths") or {"-": {}}).items():
        ping, own = row.get("ping") or {}, row.get("own_latency") or {}
        rows.append({"attempt": attempt, "passed": not refused, "path": name,
                     "configured_rtt_ms": row.get("configured_rtt_ms"), "ping_wire_ms": row.get("ping_wire_ms"),
                     "ping_min_ms": ping.get("min_ms"), "ping_median_ms": ping.get("median_ms"),
                     "ping_max_ms": ping.get("max_ms"), "own_floor_ms": own.get("own_rtt_ms"),
                     "taken_out_ms": own.get("taken_out_ms"), "own_spread_ms": own.get("own_spread_ms"), "rtt_verdict": bounds.get(f"lowest ping RTT on path {name}", ""),
                     "tcp_goodput_steady_mbps": row.get("tcp_goodput_steady_mbps"), "refused": refused[:300]})
    return rows


def run_point(lab: Lab, net, sweep: Sweep, point: Point, params: dict) -> str:
    """One run: the point's settings, then the network into the manifest, then the measurement."""
    with sweep.run(point.key, point.values) as rd:
        with rd.timed("configure"):
            lab.running.configure(net, point, params)
        with rd.timed("record"):
            net.record(rd)  # after configure: the manifest shows what this run really used
        with rd.timed("measure"):
            return lab.measure(net, rd, point, params)


class Progress:
    """`i/n key: line (elapsed, about ETA left)`, in wall-clock time: a sweep's runs, and the
    attempts of `--check-setup N`.

    The time left is the runs' own mean time times the runs left. Building a network and the setup
    check happen once and are left out: counted in, they made the first run of a quick Lab 2 say
    "about 1h17m left" of a sweep that took 20 minutes. (The setup check and the analysis say
    their own progress: eta.step.)
    """

    def __init__(self, ctx: RunContext, total: int, what: str = "runs to measure") -> None:
        self.ctx, self.total, self.done, self.measuring = ctx, total, 0, 0.0
        self.t0 = wall_clock(ctx.out)
        self.say = log.get(ctx.lab.id)
        self.say.info("%d %s", total, what)

    def step(self, key: str, line: str, took: float) -> None:
        self.done += 1
        self.measuring += took
        elapsed = wall_clock(self.ctx.out) - self.t0
        left = self.measuring / self.done * (self.total - self.done)
        rest = f", about {eta.duration(left)} left" if self.done < self.total else ""
        self.say.info("%d/%d %s: %s  [%s%s]", self.done, self.total, key, line, eta.duration(elapsed), rest)


def run(ctx: RunContext, analyse: bool = True) -> dict | None:
    """Every point of the lab's sweep that is not done yet; then the lab's `finish` (with
    analyse=False, none: inside a guest, whose CPU may be emulated ten times slower than the host's,
    the runner has the host analyse the runs after the guest exits). A shard (ctx.shard, see
    mptcplab.run.shards) runs its share of the points and records itself instead: its tables come from
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
    with lab.running.session(ctx), contextlib.ExitStack() as networks:
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
    return finish(ctx) if analyse else None


def finish(ctx: RunContext) -> dict:
    """The lab's `finish` (its tables from the runs on disk), with its progress against the last time."""
    with eta.step(log.get(ctx.lab.id), "analysing the runs",
                  f"{ctx.lab.id}/{ctx.where}/analysis/{'quick' if ctx.quick else 'full'}",
                  clock=lambda: wall_clock(ctx.out)):
        return ctx.lab.finish(ctx)
