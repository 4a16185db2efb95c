"""Recorded setup checks per place: what `--where auto` chooses from (places.choice).

After every run of a lab or of `mptcplab example` in a place, the run's setup check (the
`checks` that verify.check_paths wrote into the verify run's summary: per-path ping RTT and
single-TCP rate against the configured links, MPTCP subflows; later also the window-limited
physics bound) is kept as one CheckResult in `~/.cache/mptcplab/places/checks.json`, keyed by lab
and place, with the wall-clock time it took and how it was measured (kernel, date, load average).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
from pathlib import Path

from .. import __version__, paths
from ..paths import git_commit
from .choice import CheckResult


def path() -> Path:
    return paths.cache_dir("places", "checks.json")


def kit_stamp() -> str:
    """Which kit made a verdict: its version and git commit. A verdict is only reused by the same
    kit: the checks themselves change between commits, and the file lives in a cache that CI
    keeps between runs (a verdict left by an earlier commit once made a later CI run refuse UML
    for Lab 3 without checking it)."""
    return f"{__version__} {git_commit().get('commit') or 'installed'}"


def load() -> list[CheckResult]:
    """The verdicts this kit made (see kit_stamp); those of other versions are not evidence."""
    try:
        found = [CheckResult.from_json(d) for d in json.loads(path().read_text())]
    except (OSError, ValueError, KeyError, TypeError):
        return []
    return [r for r in found if r.kit == kit_stamp()]


def save(result: CheckResult) -> None:
    result = dataclasses.replace(result, kit=kit_stamp())
    kept = [r for r in load() if (r.lab, r.place) != (result.lab, result.place)] + [result]
    p = path()
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(json.dumps([r.to_json() for r in kept], indent=2) + "\n")
    tmp.replace(p)


def _seconds(manifest: dict) -> float:
    clock = manifest.get("clock") or {}
    if clock.get("host_wall_s"):
        return float(clock["host_wall_s"])
    t0, t1 = manifest.get("started"), manifest.get("finished")
    return (dt.datetime.fromisoformat(t1) - dt.datetime.fromisoformat(t0)).total_seconds() if t0 and t1 else 0.0


def from_run(run_dir: Path, lab: str, place: str) -> CheckResult | None:
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
        measured[f"{name}.rtt_ms"] = row.get("ping", {}).get("median_ms")
        bound[f"{name}.rtt_ms"] = row.get("configured_rtt_ms")
        measured[f"{name}.tcp_mbps"] = row.get("tcp_steady_mbps")
        # What the place itself adds to the path's RTT (latency.py), compensated or not.
        measured[f"{name}.own_rtt_ms"] = (row.get("own_latency") or {}).get("own_rtt_ms")
        if row.get("link_utilisation"):
            bound[f"{name}.tcp_mbps"] = round(row["tcp_steady_mbps"] / row["link_utilisation"], 2)
    # The window-limited transfer's verdicts (mptcplab.verify.check_window), when the check ran one.
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
                       bound={k: v for k, v in bound.items() if v is not None}, how=how)


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


def record_sweep(sweep: Path, lab: str, place: str, since: float) -> CheckResult | None:
    """Record the setup check a run made in `sweep` (if it made one after `since`, a time.time())."""
    d = newest_check(sweep)
    if d is None or (d / "manifest.json").stat().st_mtime < since:
        return None
    result = from_run(d, lab, place)
    if result:
        save(result)
    return result


def record_failure(sweep: Path, lab: str, place: str, since: float, wall_s: float, why: str) -> CheckResult | None:
    """Record a failed setup check: the run failed and left an unfinished run directory
    (`KEY.partial`, see results.RunDir) made after `since` with no finished check after it."""
    fresh = [d for d in Path(sweep).glob("*.partial") if d.stat().st_mtime >= since
             and (lab == "example" or d.name == "verify.partial")] if Path(sweep).exists() else []
    if not fresh:
        return None
    result = CheckResult(place=place, lab=lab, passed=False, wall_s=round(wall_s, 1), how=why)
    save(result)
    return result
