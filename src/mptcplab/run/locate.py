"""Where a notebook's data comes from: the student's newest finished sweep of a lab, wherever the
kit's commands put it, or, said loudly, the reference results.

A sweep is *finished* when its analysis has written `lab-summary.json` (runner.conclude, after
`mptcplab run`, `reproduce` and `merge`). The locator looks in three places:

- the environment: `MPTCPLAB_<LABID>_RESULTS` (e.g. MPTCPLAB_LAB1_RESULTS) names the folder outright;
- the folders the commands write by default: `results/<lab>[-quick]` (`mptcplab run`) and
  `build/reproduce/<lab>[-quick]` (`make reproduce`, `mptcplab reproduce`), under the repository
  and under the current directory;
- the run index, `~/.cache/mptcplab/sweeps.jsonl`: every concluded sweep appends a line (`remember`),
  so a sweep written anywhere with `--out DIR` is found too. Under sudo the line goes to the
  invoking user's index (SUDO_USER), whose notebook reads it, and the file stays theirs.

The newest finished sweep (its lab-summary.json's time) that the lab's `usable` accepts wins.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import os
import pwd
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..core import paths

SUMMARY = "lab-summary.json"  # written by runner.conclude: the mark of a finished sweep
INDEX = "sweeps.jsonl"


@dataclass(frozen=True)
class Located:
    path: Path
    is_reference: bool
    reason: str  # how it was chosen, or why it fell back to the reference
    place: str = ""  # where the runs ran (native, uml, vm), as their manifests record it
    kernel: str = ""
    when: str = ""  # ISO time the sweep finished (its analysis)
    quick: bool | None = None
    commit: str = ""
    lab: str = ""  # the lab id it was located for
    overrides: tuple[str, ...] = ()  # the run command's --set values: not the lab's plain run


def env_name(lab_id: str) -> str:
    return f"MPTCPLAB_{lab_id.upper()}_RESULTS"


def reference(lab_id: str) -> Path:
    return paths.REPO_ROOT / "solutions" / "results" / lab_id


def index_file(home: Path | None = None) -> Path:
    # MPTCPLAB_RUN_INDEX: another index (the test suite's own, so its sweeps in /tmp never become
    # a student's "newest run"); it also holds for the commands a test starts.
    if os.environ.get("MPTCPLAB_RUN_INDEX"):
        return Path(os.environ["MPTCPLAB_RUN_INDEX"])
    if home is None:
        return paths.cache_dir(INDEX)
    return home / ".cache" / "mptcplab" / INDEX


def remember(out: Path, lab_id: str) -> Path:
    """Append a concluded sweep to the run index (of the user behind sudo, if any, owned by them)."""
    user = os.environ.get("SUDO_USER")
    owner = None
    if os.geteuid() == 0 and user and user != "root":
        try:
            entry = pwd.getpwnam(user)
            index, owner = index_file(Path(entry.pw_dir)), (entry.pw_uid, entry.pw_gid)
        except KeyError:
            index = index_file()
    else:
        index = index_file()
    made = [p for p in (index.parent.parent, index.parent) if not p.exists()]
    index.parent.mkdir(parents=True, exist_ok=True)
    with index.open("a") as f:
        f.write(json.dumps({"lab": lab_id, "path": str(Path(out).resolve()), "quick": _facts(Path(out)).get("quick"),
                            "finished": _iso(_finished(Path(out)) or 0)}) + "\n")
    if owner:
        for p in [*made, index]:
            os.chown(p, *owner)
    return index


def _iso(epoch_s: float) -> str:
    return dt.datetime.fromtimestamp(epoch_s, dt.timezone.utc).isoformat(timespec="seconds")


def _finished(sweep: Path) -> float | None:
    try:
        return (sweep / SUMMARY).stat().st_mtime
    except OSError:
        return None


def candidates(lab_id: str) -> dict[Path, bool | None]:
    """Every folder that may hold a finished sweep of `lab_id` -> whether it was a quick run (None:
    not recorded), from the default folders and the run index (finished or not: see locate)."""
    found: dict[Path, bool | None] = {}
    for base in dict.fromkeys([paths.REPO_ROOT.resolve(), Path.cwd().resolve()]):
        for root in (base / "results", base / "build" / "reproduce"):
            for name, quick in ((lab_id, False), (f"{lab_id}-quick", True)):
                found.setdefault(root / name, quick)
    try:
        lines = index_file().read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("lab") == lab_id and entry.get("path"):
            found[Path(entry["path"])] = entry.get("quick")
    return found


def describe(lab_id: str, path: Path, reason: str, is_reference: bool = False,
             quick: bool | None = None) -> Located:
    """A Located for `path`, with place, kernel and commit from its newest run manifest (a
    reference copy keeps them in runs-manifest.csv or its top-level *-manifest.json)."""
    path = Path(path)
    facts = _facts(path)
    if quick is None:
        quick = facts.pop("quick", None)
    else:
        facts.pop("quick", None)
    when = _finished(path)
    return Located(path=path, is_reference=is_reference, reason=reason, when=_iso(when) if when else "",
                   quick=quick, lab=lab_id, **facts)


def _facts(path: Path) -> dict:
    manifests = sorted(path.glob("*/manifest.json"), key=_mtime) or sorted(path.glob("*manifest*.json"), key=_mtime)
    for m in reversed(manifests):
        try:
            man = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        plat, git = man.get("platform") or {}, man.get("git") or {}
        commit = git.get("commit") or ""
        command = man.get("command") or []
        return {"place": plat.get("where") or "", "kernel": plat.get("kernel_release") or "",
                "commit": f"{commit[:12]}{'+dirty' if git.get('dirty') else ''}" if commit else "",
                "quick": ("--quick" in command) if command else None, "overrides": _overrides(command)}
    try:
        with (path / "runs-manifest.csv").open() as f:
            rows = list(csv.DictReader(f))
    except OSError:
        rows = []
    if rows:
        last = max(rows, key=lambda r: r.get("finished") or "")
        return {"place": last.get("where") or "", "kernel": last.get("kernel") or "",
                "commit": last.get("commit") or ""}
    return {}


def _overrides(command: list[str]) -> tuple[str, ...]:
    """The `--set KEY=VALUE` values of a run's command line (either spelling argparse takes)."""
    return tuple([v for flag, v in zip(command, command[1:]) if flag == "--set"]
                 + [a.removeprefix("--set=") for a in command if a.startswith("--set=")])


def _mtime(p: Path) -> float:
    try:
        return p.stat().st_mtime
    except OSError:
        return 0.0


def locate(lab_id: str, usable: Callable[[Path], bool] | None = None) -> Located:
    """The student's newest finished sweep of `lab_id` (see the module's docstring), or the
    reference results with is_reference=True and the reason."""
    ref = reference(lab_id)
    named = os.environ.get(env_name(lab_id))
    if named:
        path = Path(named).expanduser().resolve()
        if not path.is_dir():
            return describe(lab_id, ref, f"{env_name(lab_id)}={named} is not a folder", is_reference=True)
        is_ref = ref.exists() and path == ref.resolve()
        return describe(lab_id, path, f"named by {env_name(lab_id)}", is_reference=is_ref)
    finished = sorted(((t, p, q) for p, q in candidates(lab_id).items() if (t := _finished(p)) is not None),
                      key=lambda x: x[0], reverse=True)
    rejected = []
    for _, path, quick in finished:
        if usable is None or usable(path):
            others = len(finished) - 1
            return describe(lab_id, path, "your newest finished run" + (f" (of {others + 1} found)" if others else ""),
                            quick=quick)
        rejected.append(path)
    if rejected:
        why = (f"your finished {lab_id} runs lack what this notebook needs: "
               + ", ".join(str(p) for p in rejected[:3]) + (" ..." if len(rejected) > 3 else ""))
    else:
        why = (f"no finished {lab_id} run found in results/, build/reproduce/ or the run index "
               f"({index_file()})")
    return describe(lab_id, ref, why, is_reference=True)


def banner(located: Located) -> str:
    """The notebook's first output: which results it analyses, or loudly that they are the reference."""
    how = f"{'quick' if located.quick else 'full'} run" if located.quick is not None else "run"
    facts = ", ".join(x for x in (f"finished {located.when}" if located.when else "",
                                  f"in {located.place}" if located.place else "",
                                  f"kernel {located.kernel}" if located.kernel else "",
                                  f"commit {located.commit}" if located.commit else "") if x)
    point = (f"To analyse another run: set {env_name(located.lab)}=/path/to/its/results before starting "
             f"Jupyter, or run `sudo mptcplab run {located.lab} --quick`.")
    if not located.is_reference:
        # a run whose parameters were changed (a control, a Going-further run) is not the lab's plain run: say so
        which = ("your newest " if located.reason.startswith("your newest") else "your ") + f"{located.lab} run"
        head = (f"Analysing {which}, made with --set {' '.join(located.overrides)}: {located.path}" if located.overrides
                else f"Analysing YOUR results: {located.path}")
        return "\n".join([head,
                          f"  {how}, {facts}" if facts else f"  {how}",
                          f"  chosen: {located.reason}.", f"  {point}"])
    bang = "!" * 78
    return "\n".join([bang, f"!! NOT YOUR RUN: these are the kit's REFERENCE results: {located.path}",
                      f"!! why: {located.reason}.",
                      f"!! the reference is a {how}" + (f": {facts}" if facts else ""), f"!! {point}", bang])
