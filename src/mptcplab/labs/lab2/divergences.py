"""Lab 2 analysis: the report's ratios to uncoupled that this run's corrected intervals exclude, and
what the controlled runs measured of each one's cause."""

from __future__ import annotations

import math

import pandas as pd

from ...judge import stats
from .controlled import CONTROLLED_DIR, controlled_ratio, mechanisms
from .paper import TITLES
from .throughput import paired_table, paper_vs_run


# A divergence's cause where no controlled run kept beside the reference bears on it (`evidence`
# says what one does).
RUNNABLE = ("unexplained, tried: nothing controlled yet. Runnable: the cross-traffic sweep and the "
            "shared-bottleneck variant (experiment.toml)")
# Why a mechanism that holds the report's ratio would explain it, per kind of controlled run.
WHY = {"shared": "on a path of its own each uncoupled subflow can take a link's worth, through one shared link all "
                 "of them take one link's worth (the report's subflows shared one node's wireless medium)",
       "cross": "the report's 15 UDP clients congested its links at another level than this lab's two on/off "
                "sources"}


def evidence(div: dict, ratio: dict, name: str, variant: str, words: str, kind: str) -> dict:
    """One controlled run's bearing on the divergence `div` (algo, variant, paper, run_lo, run_hi:
    this reference's corrected ratio to uncoupled): `outcome` "cause" when its corrected interval
    holds the report's ratio and lies clear of the reference's on the report's side, "excluded"
    when it excludes the report's ratio, "unresolved" in between (with the pairs that would
    resolve it: to clear the reference's interval if its estimate lies beyond it, else to exclude
    the report's ratio); `text` says so with the run's own numbers."""
    lv = f"{ratio['level'] * 100:.2f}".rstrip("0").rstrip(".")
    p, a, b = div["paper"], div["run_lo"], div["run_hi"]
    above = p > b  # the report's ratio lies above this reference's interval (else below)
    text = (f"{words} (controlled run `{CONTROLLED_DIR}/{name}`, {variant} variant, {ratio['pairs']} pairs): "
            f"{TITLES.get(div['algo'], div['algo'])} {ratio['algo_mbps']:.2f} against uncoupled "
            f"{ratio['uncoupled_mbps']:.2f} Mbit/s, {ratio['lo']:.2f}–{ratio['hi']:.2f} of uncoupled ({lv}%)")
    if not ratio["lo"] <= p <= ratio["hi"]:
        return {"outcome": "excluded", "text": f"{text}, which excludes the report's {p:.3f}"}
    clear = ratio["lo"] > b if above else ratio["hi"] < a
    if clear:
        return {"outcome": "cause", "text": f"{text}, which holds the report's {p:.3f} and lies "
                                            f"{'above' if above else 'below'} this reference's {a:.2f}–{b:.2f}: "
                                            f"{WHY[kind]}"}
    bound = b if above else a
    beyond = ratio["ratio"] > bound if above else ratio["ratio"] < bound
    gap = (ratio["ratio"] - bound) if beyond else (p - ratio["ratio"])
    need = stats.runs_needed(gap * ratio["uncoupled_mbps"], ratio["sd"], ratio["level"])
    return {"outcome": "unresolved",
            "text": f"{text}, which holds the report's {p:.3f} but overlaps this reference's {a:.2f}–{b:.2f}: "
                    f"not resolved; {stats.fmt_runs(need)} pairs would "
                    f"{'clear the reference' if beyond else 'exclude the report'} at this spread"}


def divergence_status(found: list[dict]) -> str:
    """A divergence's cause in the report: "cause measured: ..." when a controlled run measured it
    (the others tried named after it), else "unexplained, tried: ..." with each controlled run's
    result, or what is runnable when none bears on it."""
    if not found:
        return RUNNABLE
    causes = [e["text"] for e in found if e["outcome"] == "cause"]
    others = [e["text"] for e in found if e["outcome"] != "cause"]
    if causes:
        return "cause measured: " + "; ".join(causes) + (". Also tried: " + "; ".join(others) if others else "")
    return "unexplained, tried: " + "; ".join(others)


def divergences(tp: pd.DataFrame, controlled: dict[str, dict] | None = None,
                ref_params: dict | None = None) -> pd.DataFrame:
    """Each algorithm and variant whose ratio to uncoupled in the report lies outside this run's
    Holm-corrected interval of that ratio (the paired difference over uncoupled's mean, + 1), with
    what the controlled runs (`controlled`: controlled_runs; `ref_params`: the reference's
    parameters, to tell what each changed) measured of its cause. The shared bottleneck bears on
    the static rows (it has no mobility events: against a mobility row it would change two causes
    at once), a cross-traffic level on the rows of the variant it ran."""
    pv = paper_vs_run(tp).set_index("algo")
    pt = paired_table(tp)
    rows = []
    for r in pt[pt.vs == "uncoupled"].itertuples():
        col = f"paper_{r.variant}_vs_uncoupled"  # the report has no shared-bottleneck variant
        paper = pv.loc[r.algo, col] if r.algo in pv.index and col in pv.columns else math.nan
        base = pv.loc["uncoupled", f"run_{r.variant}"] if "uncoupled" in pv.index else math.nan
        if not (paper == paper and base == base and r.half == r.half):
            continue
        lo, hi = 1 + r.lo / base, 1 + r.hi / base
        if lo <= paper <= hi:
            continue
        row = {"algo": r.algo, "variant": r.variant, "paper": paper, "run_lo": lo, "run_hi": hi}
        found = []
        for name, c in (controlled or {}).items():
            for variant, (kind, words) in mechanisms(c, ref_params or {}).items():
                if (kind == "cross" and variant != r.variant) or (kind == "shared" and r.variant == "mobility"):
                    continue
                ratio = controlled_ratio(c["throughput"], r.algo, variant)
                if ratio is not None:
                    found.append(evidence(row, ratio, name, variant, words, kind))
        rows.append({**row, "status": divergence_status(found)})
    return pd.DataFrame(rows, columns=["algo", "variant", "paper", "run_lo", "run_hi", "status"])
