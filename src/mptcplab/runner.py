"""Run an experiment where it can run: here, or inside the kit's UML kernel.

`mptcplab run`, `mptcplab example` and `mptcplab reproduce` all come through `in_place()`: it
picks the place (see doctor.decide_where), takes the one-experiment-per-machine lock, cleans up
what dead runs left behind, turns SIGTERM into an unwinding exception and, for UML, re-executes
the same command inside the UML kernel with `--where native`.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Callable

from . import engine, kernel, log, state, uml
from .doctor import decide_where
from .lab import RunContext, get_lab
from .results import clock_totals, experiment_lock

_log = log.get()


def in_place(where: str, argv: list[str], here: Callable[[], int]) -> int:
    """Run `here()` natively, or `mptcplab ARGV --where native` inside UML."""
    to_uml = where == "uml" and not kernel.inside_uml()
    if not to_uml:
        kernel.require_root()
    with experiment_lock(), state.signals_unwind():
        stale = state.clean(all_owners=False)
        if stale:
            _log.info("removed what an earlier run left behind: %s", ", ".join(stale))
        if not to_uml:
            return here()
        binary = uml.kernel_path() or uml.build()
        _log.info("running in the UML kernel (%s)", binary.parent.name)
        return uml.run([sys.executable, "-m", "mptcplab", *_verbosity(), *argv, "--where", "native"],
                       env={"MPTCPLAB_UML_KERNEL": binary.parent.name, "PYTHONUNBUFFERED": "1"})


def _verbosity() -> list[str]:
    """-v / -q for the command re-run inside UML, so it speaks as this one does."""
    level = log.get().getEffectiveLevel()
    return ["-v"] if level <= 10 else ["-q"] if level >= 30 else []


def flatten_overrides(d: dict, prefix: str = ""):
    """{"a": {"b.c": 1}} -> ('a."b.c"', '1'): --set items that parse back to the same dict."""
    for k, v in d.items():
        key = f"{prefix}{json.dumps(k) if '.' in k or ' ' in k else k}"
        if isinstance(v, dict):
            yield from flatten_overrides(v, f"{key}.")
        else:
            yield key, json.dumps(v)  # JSON scalars and lists are valid TOML values


def default_out(lab_id: str, quick: bool) -> Path:
    return Path.cwd() / "results" / (f"{lab_id}-quick" if quick else lab_id)


def run_lab(lab_id: str, quick: bool = False, where: str = "auto", out: Path | None = None,
            fresh: bool = False, overrides: dict | None = None) -> int:
    lab = get_lab(lab_id)
    params = lab.load_params(quick, overrides)  # bad parameters fail here, before anything is configured
    place = decide_where(where, lab.needs, lab.uml_ok)
    out = Path(out or default_out(lab.id, quick)).resolve()
    if fresh and out.exists() and not kernel.inside_uml():
        shutil.rmtree(out)
    argv = ["run", lab.id, "--out", str(out)] + (["--quick"] if quick else [])
    argv += [f"--set={k}={v}" for k, v in flatten_overrides(overrides or {})]

    def here() -> int:
        out.mkdir(parents=True, exist_ok=True)
        where_now = "uml" if kernel.inside_uml() else "native"
        say = log.get(lab.id)
        say.info("%s — %s run, %s, results in %s", lab.title, "quick" if quick else "full", where_now, out)
        summary = engine.run(RunContext(lab=lab, params=params, out=out, quick=quick, where=where_now))
        (out / "lab-summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
        guest, wall = clock_totals(out)
        if guest:
            say.info("UML clock: the runs took %.0f s on the guest's time-travel clock and %.0f s of "
                     "wall-clock time (each manifest's `clock`)", guest, wall)
        (out / "paper-vs-this-run.md").write_text(lab.report(out))
        say.info("paper vs this run: %s", out / "paper-vs-this-run.md")
        return 0

    return in_place(place, argv, here)
