"""`mptcplab reproduce [--quick] [--out DIR]`: every lab where it can run, one HTML report.

Each lab goes through the same code path as `mptcplab run labN` (runner.run_lab), one after the
other (they measure throughput: never two at once). A lab that cannot run on this machine is
reported with the reason; a lab that fails is reported and the others still run. A lab that ran
is reported with the paper's claims that held on its run (its claims.json, judge.claims), never as
"reproduced" for "ran". Each lab's wall
time is set against the time its runs spent transferring (the time ratio: the summary's last
lines, the report, and reproduce.json for benchmarks/time_ratio.py). Exit status:
0 when every lab that could run succeeded, 1 when one failed (or, with --strict, could not run).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import sys
import threading
import time
from pathlib import Path

from .. import report
from ..core import log
from ..core.errors import EnvironmentProblem, ExperimentFailed, UsageError
from ..judge import claims
from ..places import choices as place_choices, get as get_place
from ..run import results
from ..run.lab import all_labs
from ..run.runner import place_for, restarts, run_lab


_log = log.get("reproduce")


def register(sub) -> None:
    p = sub.add_parser("reproduce", help="run every lab where it can run and write one HTML report")
    p.add_argument("--quick", action="store_true", help="the short version of every lab")
    p.add_argument("--out", type=Path, default=Path("build/reproduce"), help="results and report.html (default: %(default)s)")
    p.add_argument("--labs", help="comma-separated subset, e.g. lab1,lab3 (default: all)")
    p.add_argument("--where", default="auto", help=f"{place_choices()}, for every lab (default: auto)")
    p.add_argument("--report-only", action="store_true", help="rebuild report.html from results already in --out")
    p.add_argument("--strict", action="store_true", help="exit 1 also when a lab cannot run on this machine")
    p.set_defaults(func=_reproduce)


def reproduce(labs: dict, out: Path, quick: bool, where: str = "auto", report_only: bool = False,
              runner=run_lab) -> list[report.LabOutcome]:
    """Each lab's place is decided once, here (to report it), and handed to `runner`
    (runner.run_lab: `runner(lab_id, quick, where, out, picked=...)`), after every place the labs
    go to is ready (ready_places)."""
    picks = {lab.id: _decide(lab, quick, where) for lab in labs.values()} if report_only else \
        ready_places(labs, quick, where)
    outcomes = []
    for lab in labs.values():
        sweep = out / (f"{lab.id}-quick" if quick else lab.id)
        o = report.LabOutcome(lab.id, lab.title, "ok", out=sweep)
        picked = picks[lab.id]
        if isinstance(picked, Exception):
            status = "cannot-run" if isinstance(picked, (EnvironmentProblem, UsageError)) else "failed"
            o.status, o.detail, o.out = status, str(picked), None
            log.get(lab.id).warning("%s: %s", "CANNOT RUN here" if status == "cannot-run" else "NOT RUN", picked)
            outcomes.append(o)
            continue
        o.where = picked.place
        if report_only:
            if not sweep.exists():
                o.status, o.detail = "failed", f"no results in {sweep} (run without --report-only)"
            else:  # where these results were made, as their manifests record it; the claims judged again
                claims.write(lab, sweep)
                places = {(m.get("platform") or {}).get("where") for _, m in report.manifests(sweep)} - {None}
                o.where = "/".join(sorted(places)) or o.where
            outcomes.append(o)
            continue
        _log.info("== %s: %s (%s, %s)", lab.id, lab.title, "quick" if quick else "full", o.where)
        started, restarts_before, done_before = time.monotonic(), len(restarts(sweep)), results.completed_names(sweep)
        tail = io.StringIO()
        try:
            with contextlib.redirect_stderr(_Tee(sys.stderr, tail)):
                rc = runner(lab.id, quick, where, sweep, picked=picked)
            if rc:
                o.status, o.detail = "failed", f"exit status {rc}" + _why_failed(sweep)
        except (EnvironmentProblem, ExperimentFailed, UsageError) as exc:
            o.status, o.detail = "failed", f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # a bug in one lab must not cost the others their run
            o.status, o.detail = "failed", f"{type(exc).__name__}: {exc}"
        # From when the lab took the experiment lock: a wait behind another run is not the lab's time.
        o.seconds = time.monotonic() - max(started, results.lock_taken() or started)
        o.transfer_s = results.transfer_seconds(sweep, excluding=done_before)
        o.log_tail = tail.getvalue()[-4000:]
        o.extra["restarts"] = len(restarts(sweep)) - restarts_before
        _log.info("== %s: %s%s", lab.id, o.status, ": " + o.detail if o.detail else "")
        outcomes.append(o)
    return outcomes


def _decide(lab, quick: bool, where: str):
    """The lab's place (runner.place_for), or why it has none."""
    try:
        return place_for(lab, lab.load_params(quick), where)
    except (EnvironmentProblem, UsageError) as exc:
        return exc


def ready_places(labs: dict, quick: bool, where: str) -> dict:
    """Every lab's place (or why it has none: an exception), each place made ready before any lab runs.

    What overlaps, and why it is safe: a place's one-off host work (Place.ready: the UML kernel's
    build, ~7 min on 2 cores) starts in a thread as soon as a lab is decided there, beside the
    deciding of the labs after it (which boots the VM once to measure its kernel, when that is not
    cached) and the host-side files of each lab's guest (Place.prepare: Lab 2's BPF objects). None of
    that measures anything. Labs still measure one at a time, after all of it: a lab in the VM beside
    the compile has not been shown to pass its physics checks as it does alone (its emulated CPU
    shares the 2 cores; Lab 2's RTT check allows 0.5 ms on its 20 ms path), nor has a UML lab (the
    host-coupling control decides that), so no measurement overlaps the build. A place whose
    ready() failed (a build error) fails its labs with the reason; the others still run."""
    picks, readying, failed = {}, {}, {}

    def ready(place) -> None:
        try:
            place.ready()
        except Exception as exc:  # noqa: BLE001 - its labs report it; the other places' labs still run
            failed[place.NAME] = exc

    for lab in labs.values():
        picks[lab.id] = picked = _decide(lab, quick, where)
        if isinstance(picked, Exception) or picked.place in readying:
            continue
        place = get_place(picked.place)
        readying[picked.place] = threading.Thread(target=ready, args=(place,), name=f"ready-{place.NAME}",
                                                  daemon=True)
        readying[picked.place].start()
    for lab in labs.values():
        if not isinstance(picks[lab.id], Exception):
            try:  # run_lab prepares again beside the guest's boot: a lab's prebuild keeps what it built
                get_place(picks[lab.id].place).prepare(lab)
            except Exception as exc:  # noqa: BLE001 - the guest builds for itself then, as run_lab says
                log.get(lab.id).warning("preparing its guest's files beside the build failed: %s", exc)
    for name, thread in readying.items():
        if thread.is_alive():
            _log.info("waiting for the %s place to be ready (its one-off build)", name)
        thread.join()
    for lab_id, picked in picks.items():
        if not isinstance(picked, Exception) and picked.place in failed:
            picks[lab_id] = RuntimeError(f"the {picked.place} place could not be made ready: {failed[picked.place]}")
    return picks


def _why_failed(sweep: Path) -> str:
    """The error of the run that failed last in `sweep` (results.RunDir.keep_evidence), if any: a
    guest's refusal reaches the host only as an exit status."""
    failed = sorted(sweep.glob("*.partial/failed.json"), key=lambda f: f.stat().st_mtime) if sweep.exists() else []
    if not failed:
        return ""
    try:
        return f" ({failed[-1].parent.name}: {json.loads(failed[-1].read_text())['error']})"
    except (OSError, ValueError, KeyError):
        return ""


def summary(outcomes: list[report.LabOutcome]) -> list[str]:
    """The last lines of `reproduce`: per lab, where it ran and which of the paper's claims held on the
    run (its claims.json: a run that finished is not a reproduction), or why it did not run."""
    from ..places import find

    out = []
    for o in outcomes:
        place = find(o.where)
        where = place.WORDS if place else (o.where or "")
        if o.status == "ok":
            took = f" ({_took(o.seconds)}{_ratio(o)})" if o.seconds is not None else ""
            n = o.extra.get("restarts", 0)
            again = f"; its guest stopped {n}x and was started again (restarts.json)" if n else ""
            see = f" ({o.out / claims.FILE})" if o.claims() is not None else ""
            out.append(f"  {o.lab_id:6} ran {where}{took}{again}: {o.claims_words()}{see}")
        elif o.status == "cannot-run":
            out.append(f"  {o.lab_id:6} NOT reproduced: no place here can run it: {o.detail}")
        else:
            out.append(f"  {o.lab_id:6} NOT reproduced: the run {where} failed: {o.detail}")
    return out


def _took(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def _ratio(o: report.LabOutcome) -> str:
    return f", {o.ratio:.1f}x its {_took(o.transfer_s)} of transfers" if o.ratio else ""


def record(outcomes: list[report.LabOutcome], quick: bool) -> dict:
    """reproduce.json beside the report: per lab where it ran, its wall time, its transfers' time
    and their ratio (benchmarks/time_ratio.py keeps them per place and lab), and the claims that held."""
    return {"finished": results.now(), "quick": quick, "host": platform.node(), "kernel": platform.release(),
            "cpus": os.cpu_count(), "load_avg_15min": round(os.getloadavg()[2], 2), "git": results.git_commit(),
            "labs": [{"lab": o.lab_id, "status": o.status, "where": o.where, "detail": o.detail,
                      "seconds": None if o.seconds is None else round(o.seconds, 1),
                      "transfer_s": None if o.transfer_s is None else round(o.transfer_s, 1),
                      "ratio": None if o.ratio is None else round(o.ratio, 2), "claims": _claims_record(o)}
                     for o in outcomes]}


def _claims_record(o: report.LabOutcome) -> dict | None:
    """How many of the lab's claims held on the run, and each claim's verdict (None: not judged)."""
    doc = o.claims() if o.status == "ok" else None
    if doc is None:
        return None
    verdicts = {c["id"]: c["status"] for c in doc["claims"]}
    return {"hold": sum(v == claims.HOLDS for v in verdicts.values()), "of": len(verdicts), "verdicts": verdicts}


class _Tee(io.TextIOBase):
    def __init__(self, *streams):
        self.streams = streams

    def write(self, s):
        for st in self.streams:
            st.write(s)
        return len(s)

    def flush(self):
        for st in self.streams:
            st.flush()


def _reproduce(args) -> int:
    labs = all_labs()
    if args.labs:
        wanted = [x.strip() for x in args.labs.split(",") if x.strip()]
        unknown = [w for w in wanted if w not in labs]
        if unknown:
            raise UsageError(f"unknown lab(s) {', '.join(unknown)}; have {', '.join(labs) or 'none'}")
        labs = {k: v for k, v in labs.items() if k in wanted}
    if not labs:
        raise UsageError("no labs are installed")
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    outcomes = reproduce(labs, out, args.quick, args.where, args.report_only)
    page = out / "report.html"
    page.write_text(report.render(outcomes, labs, args.quick))
    if not args.report_only:  # --report-only measures no time
        (out / "reproduce.json").write_text(json.dumps(record(outcomes, args.quick), indent=2) + "\n")
    print(f"\nreport: {page}")
    print(*summary(outcomes), sep="\n")
    failed = any(o.status == "failed" for o in outcomes)
    skipped = any(o.status == "cannot-run" for o in outcomes)
    return 1 if failed or (args.strict and skipped) else 0
