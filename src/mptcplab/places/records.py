"""Recorded setup checks per place: what `--where auto` chooses from (places.choice).

After every run of a lab or of `mptcplab example` in a place, the run's setup check (the
`checks` that verify.check_paths wrote into the verify run's summary: per-path ping RTT and
single-TCP rate against the configured links, MPTCP subflows; later also the window-limited
physics bound) is kept as one CheckResult in `~/.cache/mptcplab/places/checks.json`, keyed by lab,
place, the `--set` parameters it ran with and the kit that checked, with the wall-clock time it took
and how it was measured (kernel, date, load average). Only a check that reached its verdict is
recorded (runner.in_place): an interrupted one says nothing about the place. Several checkouts
share the file: a save merges under a lock and replaces only its own key.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import fcntl
import json
import os
from pathlib import Path

from .. import __version__
from ..core import paths
from ..core.files import replace_file
from ..core.paths import git_commit
from .choice import CheckResult


# Files' times come from the kernel's coarse clock, up to a tick (4 ms at HZ=250) behind time.time():
# a directory made right after `since` may look older than it.
COARSE_S = 0.05


def path() -> Path:
    return paths.cache_dir("places", "checks.json")


def kit_stamp() -> str:
    """Which kit made a verdict: its version and git commit. A verdict is only reused by the same
    kit: the checks themselves change between commits, and the file lives in a cache that CI
    keeps between runs (a verdict left by an earlier commit once made a later CI run refuse UML
    for Lab 3 without checking it)."""
    return f"{__version__} {git_commit().get('commit') or 'installed'}"


def params_key(overrides: dict | None) -> str:
    """The `--set` overrides a check ran with, as a record's key ("" for the lab as shipped)."""
    return json.dumps(overrides, sort_keys=True, separators=(",", ":")) if overrides else ""


def _all() -> list[CheckResult]:
    """Every record in the file, of every kit (other checkouts share it)."""
    try:
        return [CheckResult.from_json(d) for d in json.loads(path().read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def load() -> list[CheckResult]:
    """The verdicts this kit made (see kit_stamp); those of other versions are not evidence."""
    return [r for r in _all() if r.kit == kit_stamp()]


def _key(r: CheckResult) -> tuple:
    return (r.lab, r.place, r.params, r.kit)


@contextlib.contextmanager
def _locked():
    """Hold the records' lock: read-merge-write by two checkouts at once must not lose a record."""
    p = path()
    p.parent.mkdir(parents=True, exist_ok=True)
    with open(p.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield p


def _write(p: Path, kept: list[CheckResult]) -> None:
    replace_file(p, json.dumps([r.to_json() for r in kept], indent=2) + "\n")


def save(result: CheckResult) -> None:
    """Record one verdict, replacing only the record of the same lab, place, parameters and kit."""
    result = dataclasses.replace(result, kit=kit_stamp())
    with _locked() as p:
        _write(p, [r for r in _all() if _key(r) != _key(result)] + [result])


def forget(lab: str) -> list[CheckResult]:
    """Drop this kit's recorded failures for `lab` (`run --recheck`): the next check decides again."""
    with _locked() as p:
        found = _all()
        gone = [r for r in found if r.kit == kit_stamp() and r.lab == lab and not r.passed]
        if gone:
            _write(p, [r for r in found if r not in gone])
    return gone


def _seconds(manifest: dict) -> float:
    clock = manifest.get("clock") or {}
    if clock.get("host_wall_s"):
        return float(clock["host_wall_s"])
    t0, t1 = manifest.get("started"), manifest.get("finished")
    return (dt.datetime.fromisoformat(t1) - dt.datetime.fromisoformat(t0)).total_seconds() if t0 and t1 else 0.0


def from_run(run_dir: Path, lab: str, place: str, params: str = "") -> CheckResult | None:
    """The CheckResult of one finished run directory whose summary holds `checks`, else None."""
    try:
        summary = json.loads((run_dir / "summary.json").read_text())
        manifest = json.loads((run_dir / "manifest.json").read_text())
    except (OSError, ValueError):
        return None
    checks = summary.get("checks")
    if not checks:
        return None
    measured, bound = {}, {}
    for name, row in checks.get("paths", {}).items():
        measured[f"{name}.rtt_ms"] = row.get("ping", {}).get("min_ms")  # what the RTT check judges (verify.py)
        bound[f"{name}.rtt_ms"] = row.get("configured_rtt_ms")
        measured[f"{name}.tcp_goodput_steady_mbps"] = row.get("tcp_goodput_steady_mbps")
        # What the place itself adds to the path's RTT (latency.py), compensated or not.
        measured[f"{name}.own_rtt_ms"] = (row.get("own_latency") or {}).get("own_rtt_ms")
        if row.get("link_utilisation"):
            bound[f"{name}.tcp_goodput_steady_mbps"] = round(row["tcp_goodput_steady_mbps"] / row["link_utilisation"],
                                                               2)
    # The window-limited transfer's verdicts (mptcplab.judge.verify.check_window), when the check ran one.
    for v in ((summary.get("physics") or {}).get("window") or {}).get("verdicts", []):
        measured[v["check"]], bound[v["check"]] = v["measured"], v["bound"]
    if (manifest.get("clock") or {}).get("guest_s"):
        measured["guest_s"] = manifest["clock"]["guest_s"]
    if "mptcp" in checks:
        measured["mptcp.subflows"] = checks["mptcp"].get("subflows_with_data")
    plat = manifest.get("platform", {})
    how = (f"{run_dir.name} on {plat.get('where')} kernel {plat.get('kernel_release')}"
           + (f" ({plat['vm_accel']})" if plat.get("vm_accel") else "")
           + f", {manifest.get('started', '')[:16]}Z, host load {os.getloadavg()[0]:.1f}")
    return CheckResult(place=place, lab=lab, passed=bool(checks.get("passed")), wall_s=round(_seconds(manifest), 1),
                       measured={k: v for k, v in measured.items() if v is not None},
                       bound={k: v for k, v in bound.items() if v is not None}, how=how, params=params)


def newest_check(sweep: Path) -> Path | None:
    """The newest finished run directory of a sweep whose summary holds a setup check."""
    runs = sorted((d for d in Path(sweep).iterdir() if (d / "summary.json").exists()),
                  key=lambda d: (d / "manifest.json").stat().st_mtime if (d / "manifest.json").exists() else 0) \
        if Path(sweep).exists() else []
    for d in reversed(runs):
        try:
            if json.loads((d / "summary.json").read_text()).get("checks"):
                return d
        except (OSError, ValueError):
            continue
    return None


def record_sweep(sweep: Path, lab: str, place: str, since: float, params: str = "") -> CheckResult | None:
    """Record the setup check a run made in `sweep` (if it made one after `since`, a time.time())."""
    d = newest_check(sweep)
    if d is None or (d / "manifest.json").stat().st_mtime < since - COARSE_S:
        return None
    result = from_run(d, lab, place, params)
    if result:
        save(result)
    return result


def record_failure(sweep: Path, lab: str, place: str, since: float, wall_s: float, why: str,
                   params: str = "") -> CheckResult | None:
    """Record a failed setup check: the check refused the place (the caller knows: ExperimentFailed,
    not an interrupt) and left an unfinished run directory
    (`KEY.partial`, see results.RunDir) made after `since` with no finished check after it."""
    fresh = [d for d in Path(sweep).glob("*.partial") if d.stat().st_mtime >= since - COARSE_S
             and (lab == "example" or d.name == "verify.partial")] if Path(sweep).exists() else []
    if not fresh:
        return None
    result = CheckResult(place=place, lab=lab, passed=False, wall_s=round(wall_s, 1), how=why, params=params)
    save(result)
    return result
