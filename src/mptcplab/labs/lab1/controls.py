"""Lab 1 analysis: the control runs and the cost of tracing: send-buffer waits with and without tracing."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from .bounds import _paths_full_mbps
from .detail import Detail


def wait_table(details: list[Detail], sweep: pd.DataFrame,
               share: Callable[[pd.DataFrame, float], float] | None = None) -> pd.DataFrame:
    """The detailed runs side by side: goodput, send-buffer waits (count, median length, share of
    the time blocked), how full the paths it used were, and the cost of tracing: the traced run's
    goodput over the mean of the untraced sweep runs at the same point (method, buffer, config).

    `share(waits, duration_s)` computes `blocked_share`; without it, the kit's own, an answer key
    (Lab 1's Q6) that grading hides where student code runs: the notebook passes the student's Q6,
    and whatever it returns that is not a number becomes NaN.

    Any sender that writes faster than the network carries is blocked most of the time, whatever
    limits it; what tells starvation apart is a sender blocked while a path it may use is idle."""
    rows = []
    for d in details:
        blocked = d.blocked_share if share is None else _number(share, d.waits, d.duration)
        s = d.summary
        same = sweep[(sweep["method"] == s.get("method", "wmem")) & (sweep["buffer_bytes"] == s.get("buffer_bytes"))
                     & (sweep["config"] == s.get("config"))]
        untraced = float(same["goodput_transfer_mbps"].mean()) if len(same) else np.nan
        full = _paths_full_mbps(d.manifest, s.get("config"))
        rows.append({
            "run": d.path.name, "label": d.label, "control": d.control, "config": s.get("config"),
            "buffer_bytes": s.get("buffer_bytes"), "duration_s": d.duration,
                     "goodput_transfer_mbps": s.get("goodput_transfer_mbps"),
            "paths_full_mbps": full, "utilisation": s.get("goodput_transfer_mbps", np.nan) / full,
            "waits": len(d.waits),
            "median_wait_ms": float(d.waits["duration_s"].median() * 1e3) if len(d.waits) else np.nan,
            "blocked_share": blocked, "wait_method": d.method,
            "untraced_mbps": untraced, "untraced_runs": len(same),
            "tracing_ratio": s.get("goodput_transfer_mbps", np.nan) / untraced if untraced else np.nan})
    return pd.DataFrame(rows, columns=["run", "label", "control", "config", "buffer_bytes", "duration_s",
                                       "goodput_transfer_mbps",
                                       "paths_full_mbps", "utilisation", "waits", "median_wait_ms", "blocked_share",
                                       "wait_method", "untraced_mbps", "untraced_runs", "tracing_ratio"])


def _number(fn: Callable, *args) -> float:
    try:
        got = fn(*args)
    except Exception:  # noqa: BLE001 - a student's unfinished function leaves the column empty, not the cell broken
        return np.nan
    return float(got) if isinstance(got, (int, float, np.integer, np.floating)) and not isinstance(got, bool) else np.nan


def describe_tracing_cost(table: pd.DataFrame) -> str:
    """One line per detailed run: traced goodput against the untraced sweep runs at the same point."""
    lines = []
    for r in table.itertuples():
        if r.untraced_runs:
            lines.append(f"{r.run}: {r.goodput_transfer_mbps:.1f} Mbit/s traced vs {r.untraced_mbps:.1f} Mbit/s untraced "
                         "(mean of "
                         f"{r.untraced_runs} sweep run(s) at the same point): ratio {r.tracing_ratio:.2f}, "
                         f"the traced run delivered {r.tracing_ratio:.0%} of the untraced rate")
        else:
            lines.append(f"{r.run}: {r.goodput_transfer_mbps:.1f} Mbit/s traced; "
                         "no untraced sweep run at the same point")
    return "\n".join(lines)


def describe_waits(table: pd.DataFrame) -> str:
    """The blocked share of each detailed run, read against the controls."""
    lines = [f"{r.label}: {r.goodput_transfer_mbps:.1f} Mbit/s ({r.utilisation:.0%} of the "
             f"{'two paths' if r.config == 'mptcp' else 'path'}), blocked {r.blocked_share:.1%} of the time in "
             f"{r.waits} waits (median {r.median_wait_ms:.2f} ms)" for r in table.itertuples()]
    if table["control"].isna().all():
        lines.append("No control runs in these results (made before the kit ran them): `sudo mptcplab run lab1` "
                     "with the same --out resumes the sweep and adds them.")
    return "\n".join(lines)
