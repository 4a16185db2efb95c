"""Lab 1's host-coupling control (issue 37, item 4): does RP's split of the held point into fast and
slow runs survive one UML kernel at a time?

The reference's held point ran in shards, two UML kernels at once on two cores. Its minrtt+rp runs
fall into a fast group and a slow one, and across them the host's wall-clock seconds per guest
second (each manifest's host_wall_s / guest_s) run against goodput. The `base` arm
(scripts/lab1-controls.sh base, kept as controlled/held-base) runs the held point again, one kernel
at a time. If the split came from the two kernels sharing the host, it should be gone there.

The split is read from the goodputs alone. Sorted, the runs part at their widest gap, and it is a
split when each side holds two runs or more and the gap is wider than either side's own range (a
run that is "mid" only by its RP counters falls on one side by its goodput; the report's section
gives each side's runs and range). The rank correlation is exploratory: nothing manipulated the
host's load, and no test is made of it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .claims import MINRTT_RP
from .paper_point import COMPACT_DIR, load_paper_point
from .second_place import CONTROLLED_DIR

BASE = "held-base"
SURVIVES, GONE, UNMEASURED = "survives", "does not survive", "not measured"


def held_runs(point: Path | str) -> pd.DataFrame:
    """The held minrtt+rp runs of a paper point (a reference, or a controlled/held-ARM folder), each
    with its manifest's guest_s and host_wall_s (runs-manifest.csv) and their ratio."""
    point = Path(point)
    runs = load_paper_point(point)
    runs = runs[(runs["group"] == "held") & (runs["scheduler"] == MINRTT_RP) & runs["goodput_transfer_mbps"].notna()]
    manifest = next((m for m in (point / "runs-manifest.csv", point / COMPACT_DIR / "runs-manifest.csv")
                     if m.exists()), None)
    clock = (pd.read_csv(manifest, usecols=["run", "guest_s", "host_wall_s"]) if manifest is not None
             else pd.DataFrame(columns=["run", "guest_s", "host_wall_s"]))
    out = runs[["run", "goodput_transfer_mbps"]].merge(clock, on="run", how="left")
    return out.assign(host_per_guest=out["host_wall_s"] / out["guest_s"])


def split(goodput: pd.Series) -> dict:
    """The goodputs parted at their widest gap: each side's runs and range, the gap, and whether it is
    a split (two runs or more each side, the gap wider than either side's range)."""
    g = goodput.dropna().sort_values().to_numpy()
    if len(g) < 4:
        return {"split": False, "runs": len(g)}
    gaps = g[1:] - g[:-1]
    i = int(gaps.argmax())
    slow, fast = g[:i + 1], g[i + 1:]
    wide = gaps[i] > max(slow[-1] - slow[0], fast[-1] - fast[0])
    return {"split": bool(wide and len(slow) >= 2 and len(fast) >= 2), "runs": len(g), "fast": len(fast),
            "slow": len(slow), "gap_mbps": float(gaps[i]), "fast_mbps": (float(fast[0]), float(fast[-1])),
            "slow_mbps": (float(slow[0]), float(slow[-1]))}


def spearman(runs: pd.DataFrame) -> float:
    """Spearman's rho of host_wall_s / guest_s with goodput over the runs that recorded both clocks."""
    r = runs.dropna(subset=["host_per_guest", "goodput_transfer_mbps"])
    return float(r["host_per_guest"].rank().corr(r["goodput_transfer_mbps"].rank())) if len(r) > 2 else float("nan")


def verdict(reference: pd.DataFrame, base: pd.DataFrame | None) -> dict:
    """SURVIVES when the base arm's held minrtt+rp runs split as the reference's do, GONE when they
    do not, UNMEASURED without the arm (or a reference with no split to test)."""
    ref = {**split(reference["goodput_transfer_mbps"]), "rho": spearman(reference)}
    if not ref["split"]:
        return {"status": UNMEASURED, "reference": ref, "base": None,
                "note": "the reference's held minrtt+rp runs show no split to test"}
    if base is None or base.empty:
        return {"status": UNMEASURED, "reference": ref, "base": None,
                "note": f"no controlled/{BASE}: run scripts/lab1-controls.sh base, then keep it with --controlled {BASE}"}
    arm = {**split(base["goodput_transfer_mbps"]), "rho": spearman(base)}
    return {"status": SURVIVES if arm["split"] else GONE, "reference": ref, "base": arm, "note": ""}


def judge(results_dir: Path | str) -> dict:
    """The verdict on a reference folder: its held point against controlled/held-base beside it."""
    d = Path(results_dir)
    base = d / CONTROLLED_DIR / BASE
    return verdict(held_runs(d), held_runs(base) if (base / "paper-point.csv").exists() else None)


def _said(s: dict) -> str:
    if not s.get("fast"):
        return f"{s['runs']} runs, too few to split"
    parts = (f"{s['fast']} fast ({s['fast_mbps'][0]:.1f}-{s['fast_mbps'][1]:.1f} Mbit/s), {s['slow']} slow "
             f"({s['slow_mbps'][0]:.1f}-{s['slow_mbps'][1]:.1f}), widest gap {s['gap_mbps']:.1f} Mbit/s")
    rho = f"; Spearman's rho of host_wall_s / guest_s with goodput {s['rho']:.2f}" if s["rho"] == s["rho"] else ""
    return ("split: " if s["split"] else "no split: ") + parts + rho


def markdown(results_dir: Path | str) -> str:
    """The control's section of the report: the verdict, then each side's split and rank correlation
    ("" for a run with no held minrtt+rp runs, such as a student's)."""
    v = judge(results_dir)
    if not v["reference"]["runs"]:
        return ""
    lines = ["## Host coupling: the held point one UML kernel at a time", "",
             f"RP's split of the held minrtt+rp runs into fast and slow ones, one kernel at a time: **{v['status']}**"
             + (f" ({v['note']})" if v["note"] else "") + ".", "",
             f"- this reference (its shards ran two UML kernels at once): {_said(v['reference'])}."]
    if v["base"] is not None:
        lines.append(f"- {BASE} (one kernel at a time): {_said(v['base'])}.")
    lines += ["", "A split is the widest gap between sorted goodputs, wider than either side's range, with two runs "
              "or more each side. The rank correlations are exploratory: nothing manipulated the host's load."]
    return "\n".join(lines) + "\n"
