"""Run an experiment where it can run: here, inside the kit's UML kernel, or in a VM.

`mptcplab run`, `mptcplab example` and `mptcplab reproduce` all come through `in_place()`: it
picks the place (see places.decide), takes the one-experiment-per-machine lock, cleans up
what dead runs left behind (guests included: none may run beside the experiment), turns SIGTERM
into an unwinding exception and, for a guest place (mptcplab.places), re-executes the same
command there with `--where native`. The setup check each run makes is recorded per place
(places.records): `--where auto` chooses from those measurements.
"""

from __future__ import annotations

import contextlib
import csv
import json
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable

from . import engine, locate
from .. import places
from ..core import eta, kernel, log, paths, state
from ..core.errors import EnvironmentProblem, ExperimentFailed
from ..judge import claims
from ..places import guest, lifetime, records
from ..places.choice import Choice
from ..places.decide import decide
from .lab import RunContext, check_params, get_lab
from .results import (RUN_MANIFEST_COLUMNS, Sweep, clock_totals, completed_names, experiment_lock, git_commit,
                      lock_taken, now, run_manifests, tool_versions, transfer_seconds)
from .shards import Shard, share

_log = log.get()


def in_place(where: str, argv: list[str], here: Callable[[], int], out: Path | None = None,
             lab: str = "example", params: dict | None = None, checked: str = "",
             prepare: Callable[[], None] | None = None, convert: Callable[[Path], object] | None = None) -> int:
    """Run `here()` natively, or `mptcplab ARGV --where native` in the guest place `where`
    (after the kit's bytecode for that guest, guest.byte_compile, and with `prepare()` beside
    its boot, e.g. compiling its BPF objects: beside_the_boot; under the lock, as CPU work beside
    another experiment's measurement would disturb it, and counted in the lab's wall time, which
    starts when the lock is taken).
    `out` (the results directory) is written back from the guest and holds the setup check; the
    guest's command is handed the user's command line, the tool versions and the checkout's commit
    (for its manifests: read here, where they cost no emulated CPU) and the lab's `params` as
    resolved here (places.hand), not re-parsed from --set. `checked` keys the recorded setup
    check by the `--set` overrides it ran with (records.params_key). `convert` (Lab.running.convert): the
    guest's finished runs converted here while it measures the next (converting)."""
    to_guest = places.get(where).GUEST and not places.inside_guest()
    if not to_guest:
        kernel.require_root()
    with experiment_lock(), state.signals_unwind():
        stale = state.clean(all_owners=False)
        stale += [f"guest process {p}" for p in lifetime.reap_orphan_guests()]
        if stale:
            _log.info("removed what an earlier run left behind: %s", ", ".join(stale))
        if places.inside_guest():
            return here()
        since, t0 = time.time(), time.monotonic()
        refused = None  # why the check refused the place: only a verdict is recorded, never an interrupt
        try:
            handed = {"command": sys.argv, **({"params": params} if params is not None else {}),
                      **({"tools": tool_versions(), "git": git_commit()} if to_guest else {})}
            if to_guest:
                guest.byte_compile(paths.PACKAGE)  # before the boot: the guest's first import needs it
                with beside_the_boot(prepare), converting(out, convert):
                    rc = _in_guest(where, argv, out, handed)
            else:
                rc = here()
            if rc == ExperimentFailed.exit_status:  # the guest's command refused the experiment
                refused = f"exit status {rc}"
        except ExperimentFailed as exc:
            refused = str(exc)[:300]
            raise
        finally:
            if out is not None:  # a check that finished is recorded, passed or not (records.from_run)
                got = records.record_sweep(out, lab, where, since, checked)
                if got is None and refused:
                    records.record_failure(out, lab, where, since, time.monotonic() - t0, refused, checked)
        return rc


@contextlib.contextmanager
def beside_the_boot(prepare: Callable[[], None] | None):
    """`prepare()` (the host's work for the guest, Lab.running.prebuild: 4 s of clang for Lab 2's BPF
    objects with an empty cache) on the host's other core while the guest boots, instead of before:
    the guest needs its result only once the kit has started in it, 30-40 s later under software
    emulation. Its files appear whole (written, then renamed); a guest that got there first builds
    for itself, as it did before the host prepared anything, and so does one whose host failed."""
    if prepare is None:
        yield
        return

    def body() -> None:
        try:
            prepare()
        except Exception as exc:  # noqa: BLE001 - the guest builds for itself and says why if it cannot
            _log.warning("preparing the guest's files here failed (%s); the guest builds them itself", exc)

    with _alongside(body, "prepare"):
        yield


@contextlib.contextmanager
def converting(out: Path | None, convert: Callable[[Path], object] | None, every_s: float = 5.0):
    """Around a guest's sweep: every `every_s` its finished runs' raw records are converted here
    (Lab.running.convert), on the host's core that the emulated CPU leaves free, so the analysis after the
    guest has only the last runs left: the quick Lab 2's analysis after the guest took 12 s, 4-5 s
    with this (benchmarks/results/vm_run_overhead.md, vmspeed5). A finished run's directory is
    final (results.RunDir.finish renames it whole), so the guest never writes where the host
    converts. A conversion that fails stops the converting: the analysis then tries again and says
    why."""
    if out is None or convert is None:
        yield
        return
    stop = threading.Event()

    def loop() -> None:
        while not stop.wait(every_s):
            try:
                convert(out)
            except Exception as exc:  # noqa: BLE001 - the analysis after the guest meets it again
                _log.debug("converting the finished runs stopped: %s", exc)
                return

    with _alongside(loop, "converting", stop):
        yield


@contextlib.contextmanager
def _alongside(body: Callable[[], None], name: str, stop: threading.Event | None = None):
    """`body` in a thread for the block; at its end `stop` is set and the thread joined."""
    t = threading.Thread(target=body, name=name, daemon=True)
    t.start()
    try:
        yield
    finally:
        if stop is not None:
            stop.set()
        t.join()


# How many times a sweep's guest is started again after it stopped without an exit status.
RESTARTS = 1


def _in_guest(where: str, argv: list[str], out: Path | None, handed: dict) -> int:
    """Run the command in the guest place. A guest that dies under a sweep (guest.Stopped: the
    emulator or its kernel, not the experiment) is started once more: the sweep resumes after its
    finished runs and re-measures the one that was cut. Each restart is logged and kept in
    `restarts.json` in the results (reproduce's summary names it); a second death is the error."""
    restarted = 0
    while True:
        try:
            return places.get(where).run([*_verbosity(), *argv, "--where", places.current().NAME],
                                         [out] if out else [], handed)
        except guest.Stopped as exc:
            restarted += 1
            if out is None or restarted > RESTARTS:
                raise
            _log.warning("%s\nStarting it once more: the sweep resumes after its finished runs.", exc)
            out.mkdir(parents=True, exist_ok=True)
            (out / RESTARTS_FILE).write_text(json.dumps(
                [*restarts(out), {"at": now(), "place": where, "error": str(exc)}], indent=1) + "\n")


RESTARTS_FILE = "restarts.json"


def restarts(out: Path) -> list[dict]:
    """The guest restarts _in_guest recorded in a sweep's results (none if unreadable)."""
    f = out / RESTARTS_FILE
    try:
        return json.loads(f.read_text()) if f.exists() else []
    except (OSError, ValueError):
        return []


def _verbosity() -> list[str]:
    """-v / -q for the command re-run inside UML, so it speaks as this one does."""
    level = log.get().getEffectiveLevel()
    return ["-v"] if level <= 10 else ["-q"] if level >= 30 else []


def default_out(lab_id: str, quick: bool, shard: Shard | None = None) -> Path:
    out = Path.cwd() / "results" / (f"{lab_id}-quick" if quick else lab_id)
    return out.with_name(f"{out.name}-{shard.name}") if shard else out


def plan(lab_id: str, quick: bool = False, out: Path | None = None, overrides: dict | None = None,
         shard: Shard | None = None) -> str:
    """`mptcplab run LAB --dry-run`: the runs this invocation would make, from the same parameters
    and points the engine uses, nothing measured and no place started: one line per setting
    (its key without the repetition) with its runs done in `out` and to do, then the totals."""
    lab = get_lab(lab_id)
    params = lab.load_params(quick, overrides)  # bad parameters fail here, as in `run`
    out = Path(out or default_out(lab.id, quick, shard)).resolve()
    sweep = Sweep(out) if out.exists() else None
    points = share(lab, params, shard) if shard else lab.points(params, sweep)
    todo = [p for p in points if not (sweep and sweep.done(p.key))]
    left = {p.key for p in todo}
    groups: dict[str, list[int]] = {}  # setting -> [done, to do]
    for p in points:
        groups.setdefault(re.sub(r"-r\d+$", "", p.key), [0, 0])[1 if p.key in left else 0] += 1
    width = max((len(g) for g in groups), default=0)
    lines = [f"{lab.id}{' (quick)' if quick else ''}{f', shard {shard}' if shard else ''}: results in {out}"]
    lines += [f"  {g:<{width}}  {d + t:3d} run{'s' if d + t != 1 else ' '}  ({d} done)" for g, (d, t) in groups.items()]
    seconds = sum(float(p.values.get("duration_s", 0)) for p in todo)
    lines.append(f"{len(points)} runs, {len(points) - len(todo)} done, {len(todo)} to do: "
                 f"{eta.duration(seconds)} of transfers (a run costs more than its transfer: see each "
                 "manifest's `timings`)")
    lines.append("runs a lab chooses from its finished sweep (a detailed run, controls) are listed once the sweep "
                 "is done" + ("; no shard runs them: `mptcplab run` on the merged directory does" if shard else ""))
    return "\n".join(lines)


def conclude(lab, out: Path, summary: dict) -> None:
    """A complete sweep's lab-summary.json, runs-manifest.csv (each run's provenance:
    results.run_manifests), claims.json (the paper's claims judged on it, before the report, which
    reads them) and paper-vs-this-run.md (after `run`, and after `merge`); then the sweep is added
    to the run index, where notebooks find it (run.locate)."""
    say = log.get(lab.id)
    (out / "lab-summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
    with (out / "runs-manifest.csv").open("w", newline="") as f:  # each run's provenance, for every lab
        table = csv.DictWriter(f, fieldnames=RUN_MANIFEST_COLUMNS)
        table.writeheader()
        table.writerows(run_manifests(out))
    if claims.write(lab, out):
        say.info("the paper's claims: %s (%s)", claims.summary_line(claims.load(out)), out / claims.FILE)
    (out / "paper-vs-this-run.md").write_text(lab.report(out))
    say.info("paper vs this run: %s", out / "paper-vs-this-run.md")
    locate.remember(out, lab.id)


def place_for(lab, params: dict, where: str = "auto") -> Choice:
    """The place for a run of `lab` with `params`: places.decide over everything the run needs,
    its parts' own needs among them (Lab.needs_for), so a place that lacks one is refused before
    anything runs, and the refusal names the part that needs it."""
    try:
        return decide(where, lab.needs_for(params), lab=lab.id)
    except EnvironmentProblem as exc:
        parts = lab.parts_needing(params)
        if not parts:
            raise
        raise EnvironmentProblem(f"{exc}. " + "; ".join(f"{cap} is needed by {part}" for cap, part in parts.items())
                                 ) from None


def run_lab(lab_id: str, quick: bool = False, where: str = "auto", out: Path | None = None,
            fresh: bool = False, overrides: dict | None = None, shard: Shard | None = None,
            recheck: bool = False, picked: Choice | None = None, check_setup: int = 0) -> int:
    """`mptcplab run LAB`. `picked`: the place already decided for `where` (`reproduce` decides
    once per lab, to report it); without it the place is decided here. `check_setup`: N attempts
    of the setup check only (engine.check_setup), nothing measured."""
    lab = get_lab(lab_id)
    handed = places.handed().get("params")  # inside a guest: the parameters as the host resolved them
    if handed is not None:
        check_params(lab, handed)
    params = handed if handed is not None else lab.load_params(quick, overrides)  # bad ones fail here
    if shard:
        share(lab, params, shard)  # more shards than runs fails here too
    if recheck and not places.inside_guest():
        for r in records.forget(lab.id):
            _log.info("checking %s again for %s (it failed: %s)", r.place, lab.id, r.how or "see its run")
    picked = picked or place_for(lab, params, where)
    place = picked.place
    if where == "auto" and not places.inside_guest():
        log.get(lab.id).info("runs %s: %s", places.get(place).WORDS, picked.why)
    out = Path(out or default_out(lab.id, quick, shard)).resolve()
    if fresh and out.exists() and not places.inside_guest():
        shutil.rmtree(out)
    argv = ["run", lab.id, "--out", str(out)] + (["--quick"] if quick else [])
    argv += [f"--shard={shard}"] if shard else []
    argv += [f"--check-setup={check_setup}"] if check_setup else []

    started, done_before = time.monotonic(), completed_names(out)

    def here() -> int:
        out.mkdir(parents=True, exist_ok=True)
        where_now = places.current().NAME
        say = log.get(lab.id)
        if check_setup:  # attempts of the setup check only: a measurement of the place, recorded nowhere else
            rows = engine.check_setup(RunContext(lab=lab, params=params, out=out, quick=quick, where=where_now),
                                      check_setup)
            return ExperimentFailed.exit_status if any(not r["passed"] for r in rows) else 0
        say.info("%s — %s run%s, %s, results in %s", lab.title, "quick" if quick else "full",
                 f", shard {shard}" if shard else "", where_now, out)
        if places.inside_guest() and (up := guest.start_up()):
            say.info("in the guest: its kernel started the kit %.0f s after booting; the kit took %.0f s "
                     "to get here (Python's start and imports)", *up)
        ctx = RunContext(lab=lab, params=params, out=out, quick=quick, where=where_now, shard=shard)
        # Inside a guest the runs only: the host analyses them once the guest has exited (below),
        # where Python runs ten times faster than on an emulated CPU (a shard records itself).
        summary = engine.run(ctx, analyse=not places.inside_guest())
        if summary is not None:
            analyse(ctx, summary)
        return 0

    rc = in_place(place, argv, here, out=out, lab=lab.id, params=params, checked=records.params_key(overrides),
                  prepare=lambda: places.get(place).prepare(lab), convert=lab.running.convert)
    if check_setup or rc != 0 or places.inside_guest():
        return rc
    if places.get(place).GUEST and not shard:
        analyse(RunContext(lab=lab, params=params, out=out, quick=quick, where=place, started=started))
    wall, moving = time.monotonic() - (lock_taken() or started), transfer_seconds(out, excluding=done_before)
    log.get(lab.id).info("%s: %.0f s of wall-clock time for %.0f s of transfers (%s; where it went: each run's "
                         "manifest `timings`)", place, wall, moving, f"{wall / moving:.1f}x" if moving else "none")
    return rc


def analyse(ctx: RunContext, summary: dict | None = None) -> None:
    """A sweep's tables and report from its runs on disk: the lab's `finish` (unless the sweep
    returned its summary), then `conclude`; for a shard, only what it did (`mptcplab merge` analyses)."""
    lab, say, t0 = ctx.lab, log.get(ctx.lab.id), time.monotonic()
    summary = summary if summary is not None else engine.finish(ctx)
    guest_s, wall = clock_totals(ctx.out)  # not `guest`: that name is the places.guest module here
    if guest_s:
        say.info("%s clock: the runs took %.0f s on the guest's clock and %.0f s of "
                 "wall-clock time (each manifest's `clock`)", ctx.where, guest_s, wall)
    if ctx.shard:
        say.info("shard %s: %d runs done; merge the shards with `mptcplab merge`", ctx.shard, len(summary["runs"]))
        return
    conclude(lab, ctx.out, summary)
    if not places.inside_guest() and places.get(ctx.where).GUEST:
        say.info("analysed here after the guest exited (%.0f s)", time.monotonic() - t0)
