"""Shards back into one sweep: `mptcplab merge DIR... [--out DIR]`.

    plan = merge.plan([Path("shard-1-of-3"), Path("shard-2-of-3"), Path("shard-3-of-3")])
    merge.write(plan, Path("results/lab3-quick"))

`plan` reads each shard's `shard.json` (mptcplab.run.shards) and its runs' manifests and refuses,
with one line each, what would make the merged sweep differ from one measured on one host:
shards of another lab, kit commit or parameters; runs measured in different places or kernels
(pooling them would mix two experiments; merge each group on its own); a run measured twice
(a duplicate) or by no shard (a gap); a run the sweep does not have. `write` then copies the runs
into one directory, exactly as a single-host run lays them out (the first shard's setup check is
the sweep's `verify`; every shard's own files are kept under `shards/`), and builds the lab's
tables and report with the same code `mptcplab run` uses.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from ..core import log
from ..core.errors import UsageError
from .engine import VERIFY
from .lab import Lab, RunContext, get_lab
from .results import Sweep
from .runner import conclude
from .shards import SHARD_FILE

SHARDS_DIR = "shards"  # each shard's own files in the merged directory
MERGE_FILE = "merge.json"  # what was merged: the provenance of the merged sweep
SHOWN = 5  # keys named in a refusal before "and N more"


@dataclass
class Source:
    dir: Path
    info: dict  # its shard.json
    runs: list[str]  # its completed runs, the setup check excluded
    manifests: list[dict]  # theirs, and the setup check's (it ran in the same place)


@dataclass
class Plan:
    lab: Lab
    params: dict
    quick: bool
    sources: list[Source]
    place: dict  # {"where", "kernel_release"}, the one every run shares
    git: dict


def _names(items, shown: int = SHOWN) -> str:
    items = list(items)
    more = f" and {len(items) - shown} more" if len(items) > shown else ""
    return ", ".join(str(i) for i in items[:shown]) + more


def _read(d: Path) -> Source:
    if not (d / SHARD_FILE).exists():
        raise UsageError(f"{d}: not a finished shard (no {SHARD_FILE}): run it with "
                         "`mptcplab run LAB --shard K/N --out DIR` until it completes")
    info = json.loads((d / SHARD_FILE).read_text())
    runs = [r.name for r in Sweep(d).runs() if r.name != VERIFY]
    names = [VERIFY, *runs] if Sweep(d).done(VERIFY) else runs
    return Source(d, info, runs, [json.loads((d / r / "manifest.json").read_text()) for r in names])


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def _differences(a: dict, b: dict) -> list[str]:
    fa, fb = _flat(a), _flat(b)
    return [f"{k} ({fa.get(k, '(unset)')!r} vs {fb.get(k, '(unset)')!r})"
            for k in sorted(set(fa) | set(fb)) if fa.get(k) != fb.get(k)]


def _grouped(by: dict) -> str:
    """{value: [dirs]} -> "value (dir, dir); value (dir)"."""
    return "; ".join(f"{value} ({_names(dirs, 3)})" for value, dirs in by.items())


def _one(what: str, by: dict, advice: str) -> None:
    if len(by) > 1:
        raise UsageError(f"cannot merge {what}: {_grouped(by)}; {advice}")


def plan(dirs: list[Path]) -> Plan:
    """Every check, nothing written. Raises UsageError with one line saying what is wrong."""
    if not dirs:
        raise UsageError("merge needs the shards' directories: mptcplab merge DIR... [--out DIR]")
    sources = [_read(Path(d)) for d in dirs]
    first = sources[0]

    _one("shards of different labs", _by(sources, lambda s: s.info["lab"]), "merge each lab on its own")

    # the kit: each shard's commit, and each of its runs' (a shard resumed after a `git pull`)
    commits: dict = {}
    for s in sources:
        for c in {_commit(s.info.get("git"))} | {_commit(m.get("git")) for m in s.manifests}:
            commits.setdefault(c, []).append(s.dir)
    _one("shards of different kit commits", commits, "re-run the shards of the other commits with one kit")

    for s in sources[1:]:
        diff = _differences(first.info["parameters"], s.info["parameters"])
        if s.info.get("quick") != first.info.get("quick"):
            diff.insert(0, f"--quick ({first.info.get('quick')} vs {s.info.get('quick')})")
        if diff:
            raise UsageError(f"cannot merge shards of different lab parameters: {s.dir} differs from "
                             f"{first.dir} in {_names(diff, 3)}")

    places: dict = {}
    for s in sources:
        for m in s.manifests:
            p = m.get("platform") or {}
            places.setdefault(f"{p.get('where')} kernel {p.get('kernel_release')}", []).append(s.dir)
    places = {k: sorted(set(v)) for k, v in places.items()}
    _one("runs measured in different places or kernels", places,
         "they are different experiments: merge each group of shards on its own")

    lab = get_lab(first.info["lab"])
    params = first.info["parameters"]
    wanted = [p.key for p in lab.points(params, None)]
    where: dict = {}
    for s in sources:
        for r in s.runs:
            where.setdefault(r, []).append(s.dir)
    twice = {k: v for k, v in where.items() if len(v) > 1}
    if twice:
        raise UsageError(f"cannot merge: {len(twice)} runs measured twice (duplicates): "
                         + _names(f"{k} in {_names(v, 2)}" for k, v in sorted(twice.items())))
    unknown = sorted(set(where) - set(wanted))
    if unknown:
        raise UsageError(f"cannot merge: {len(unknown)} runs are not in {lab.id}'s sweep with these parameters: "
                         + _names(unknown))
    missing = [k for k in wanted if k not in where]
    if missing:
        raise UsageError(f"cannot merge: {len(missing)} of {len(wanted)} runs missing (gaps): {_names(missing)}; "
                         f"run the shards that hold them{_missing_shards(missing, wanted, sources)}")
    place = (first.manifests[0].get("platform") or {}) if first.manifests else {}
    return Plan(lab, params, bool(first.info.get("quick")), sources,
                {k: place.get(k) for k in ("where", "kernel_release")}, first.info.get("git") or {})


def _missing_shards(missing: list[str], wanted: list[str], sources: list[Source]) -> str:
    """", e.g. shard 2/3" when every shard was one split of N: the shards those runs belong to."""
    splits = {s.info["shard"].split("/")[1] for s in sources}
    if len(splits) != 1:
        return ""
    n, index = int(splits.pop()), {k: i for i, k in enumerate(wanted)}
    ks = sorted({index[k] % n + 1 for k in missing})
    return f" ({_names(f'shard {k}/{n}' for k in ks)})"


def _by(sources: list[Source], what) -> dict:
    out: dict = {}
    for s in sources:
        out.setdefault(what(s), []).append(s.dir)
    return out


def _commit(git: dict | None) -> str:
    git = git or {}
    return f"{git.get('commit')}{' with uncommitted changes' if git.get('dirty') else ''}"


def write(p: Plan, out: Path) -> dict:
    """Copy the runs into `out` as one sweep, then the lab's tables and report. Returns the lab's
    summary (lab-summary.json)."""
    out = Path(out)
    if Sweep(out).runs() or (out / MERGE_FILE).exists():
        raise UsageError(f"{out} already holds results; merge into a new directory (--out)")
    out.mkdir(parents=True, exist_ok=True)
    for i, s in enumerate(p.sources):
        runs = set(s.runs)
        for r in s.runs:
            shutil.copytree(s.dir / r, out / r)
        own = out / SHARDS_DIR / s.dir.name
        own = own.with_name(f"{own.name}-{i + 1}") if own.exists() else own
        own.mkdir(parents=True)
        for f in s.dir.iterdir():
            if f.name in runs or f.name.endswith(".partial"):
                continue
            if f.name == VERIFY and i == 0:  # the sweep's setup check, as a single-host run has one;
                shutil.copytree(f, out / VERIFY)  # the other shards' stay with their shard's files
            else:
                (shutil.copytree if f.is_dir() else shutil.copy2)(f, own / f.name)
    provenance = {"lab": p.lab.id, "quick": p.quick, "git": p.git, "place": p.place, "parameters": p.params,
                  "shards": [{"dir": str(s.dir), "shard": s.info["shard"], "runs": len(s.runs),
                              "hosts": sorted({m["platform"].get("hostname") for m in s.manifests})}
                             for s in p.sources]}
    (out / MERGE_FILE).write_text(json.dumps(provenance, indent=2, default=str) + "\n")
    ctx = RunContext(lab=p.lab, params=p.params, out=out.resolve(), quick=p.quick, where=str(p.place.get("where")),
                     started=time.monotonic())
    later = [q.key for q in p.lab.points(p.params, Sweep(out)) if not Sweep(out).done(q.key)]
    summary = p.lab.finish(ctx)
    if not later:  # the report reads every run (Lab 1's reads its detailed run): `run` concludes the rest
        conclude(p.lab, out, summary)
    say = log.get(p.lab.id)
    say.info("merged %d shards (%d runs) into %s", len(p.sources), sum(len(s.runs) for s in p.sources), out)
    if later:
        say.warning("%d runs need the whole sweep (%s): add them on one host with `mptcplab run %s%s --out %s` "
                    "and the shards' --set options (it resumes: only those run), which rebuilds the tables "
                    "and writes the report", len(later), _names(later, 3), p.lab.id, " --quick" if p.quick else "", out)
    return summary
