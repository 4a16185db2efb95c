"""Lab 3 analysis: the controlled runs kept with a reference (controls/NAME/) and what their
per-run provenance says (sysctls read back, the qdiscs listed)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...run import results
from .sweep import load


# A reference's controlled runs: one folder each under controls/, named for the experiment.toml
# variant that made it (its compact tables and runs-manifest.csv), e.g. controls/reno_recovery/.
CONTROLS = "controls"


def load_controls(path: Path) -> dict[str, dict]:
    """name -> the tables of each controlled run kept with a reference or a sweep (controls/NAME/),
    plus its per-run provenance (`runs_manifest`, empty if none was kept)."""
    root = Path(path) / CONTROLS
    out = {}
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if (d / "runs.csv").exists() or any(d.glob("*/summary.json")):
            t = load(d)
            rm = d / "runs-manifest.csv"
            t["runs_manifest"] = pd.read_csv(rm) if rm.exists() else pd.DataFrame(columns=results.RUN_MANIFEST_COLUMNS)
            out[d.name] = t
    return out


def sysctls_applied(runs_manifest: pd.DataFrame, host: str = "snd") -> dict:
    """The sysctls every measured run of a control had on `host` as the kernel read them back after
    setting them, or {} if any run read back something else or nothing (then nothing is claimed).
    The setup check (`verify`) is left out: `run_sysctls` are set after it."""
    rm = runs_manifest[runs_manifest["run"] != "verify"] if "run" in runs_manifest else runs_manifest
    seen = [json.loads(v).get(host, {}) if isinstance(v, str) else {}
            for v in rm.get("sysctls_read_back", pd.Series(dtype=object))]
    if not seen or any(x != seen[0] for x in seen):
        return {}
    return {k: str(v) for k, v in seen[0].items() if v is not None}


def data_netem(qdiscs: str) -> str:
    """The data direction's qdisc line (b-p1) from a runs-manifest `qdiscs` cell."""
    try:
        lines = json.loads(qdiscs) or []
    except ValueError:
        return ""
    return next((line for line in lines if "dev b-p1 " in line), "")
