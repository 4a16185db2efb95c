"""Lab 2's claims ledger: what the CS218 report (Tabatabai-Yazdi et al., 2017) claims of its
throughput tables, decided over a run's tables (throughput.csv from `analysis.load`, and the
controlled runs a reference keeps in controlled/, `analysis.controlled_runs`).

The report gives means of 10 runs and no spread, in two tables: a Wi-Fi MANET with mobility and
the same without (static). Its claims are read as paired comparisons (run r meets the same seeded
cross traffic under every algorithm): a gain over another algorithm as the mean of the per-run
differences above zero; fully coupled "costing nothing" (22.31 vs 22.33 static, 24.06 vs 24.89 with
mobility) as fully coupled above (1 - COUPLED_MARGIN) x uncoupled. mptcplab.judge.claims corrects
the ledger's comparisons as one family (Holm).

A claim that does not hold is a divergence from the report, and its controls are the controlled
runs kept beside the reference, each changing one candidate cause: the cross traffic at half and
at 1.5 times its rate, and one shared link for every subflow. As in the reference's report
(`analysis.evidence`), a control whose ratio to uncoupled (its interval Holm-corrected over its own
run's comparisons) excludes the report's ratio did not bring the report's result back: it "does
not hold". One that holds the report's ratio is tested against this run's ratio (stats.between,
in the ledger's family): it "holds" (cause measured) when it lies clear of it on the report's side.
The causes issue 37 names that no committed run has tried yet are each a named control set of
experiment.toml (report-alpha, load-loss, shared-mobility): "not measured" until its runs are kept
beside the reference under that name, then decided as the others are, from what the runs read back
(the program each subflow ran, the shared link's RED queue, the variant's mobility events).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable

import pandas as pd

from . import analysis, cc
from ...net.links import LinkSpec
from ...judge import claims as judge
from ...judge import stats
from ...judge.claims import FAILS, GREATER, LESS, Claim, Control, Verdict

STATIC_TABLE = "Sec. 4, second throughput table (no mobility)"
MOBILITY_TABLE = "Sec. 4, first throughput table (mobility)"
# The kit's reading of "fully coupled costs nothing": its mean within 10% of uncoupled's (the
# report's own gaps, 0.1% static and 3.3% with mobility, are well inside it).
COUPLED_MARGIN = 0.10


def tables(results_dir: Path | str) -> dict:
    """The transfers (analysis.load, which compacts a sweep first) with the reference's parameters,
    and the controlled runs kept beside it (none in a student's run)."""
    d = Path(results_dir)
    t = analysis.load(d)
    return {"throughput": t["throughput"], "parameters": t["manifest"].get("parameters") or {},
            "controlled": analysis.controlled_runs(d)}


def judged(results_dir: Path | str) -> dict:
    """The ledger's verdicts on a results folder: its claims.json, or the ledger evaluated now (a
    folder made before the kit wrote one)."""
    return judge.judged("lab2", sys.modules[__name__], results_dir)


def paper(algo: str, variant: str) -> float:
    return float(analysis.PAPER.set_index("algo").loc[algo, f"paper_{variant}"])


def paper_ratio(algo: str, variant: str, base: str = "uncoupled") -> float:
    return paper(algo, variant) / paper(base, variant)


def paper_value(algo: str, variant: str, base: str = "uncoupled") -> str:
    """The report's two means and the gain they make, as the ledger's paper_value."""
    return f"{paper(algo, variant):g} vs {paper(base, variant):g} Mbit/s ({paper_ratio(algo, variant, base) - 1:+.1%})"


def by_rep(tp: pd.DataFrame, algo: str, variant: str) -> pd.Series:
    """An algorithm's goodputs in one variant, by run number; KeyError naming them if it has none."""
    g = tp[(tp.algo == algo) & (tp.variant == variant)] if len(tp) else tp
    if g.empty:
        raise KeyError(f"the {variant} runs of {algo}")
    return g.set_index("rep").goodput_transfer_mbps


def ratio_stats(tp: pd.DataFrame, algo: str, variant: str) -> dict:
    """algo ÷ uncoupled in one variant as an estimate for stats.between: 1 + the paired difference
    over uncoupled's mean, its standard error scaled the same way (uncoupled's mean taken as known,
    as analysis.controlled_ratio does)."""
    a, u = by_rep(tp, algo, variant), by_rep(tp, "uncoupled", variant)
    st, base = stats.paired(a, u), float(u.mean())
    return {"diff": 1 + st["diff"] / base, "se": st["se"] / base, "dof": st["dof"],
            "sds": (st["sd"] / base,) if st["sd"] == st["sd"] else ()}


def gain(algo: str, variant: str, base: str = "uncoupled") -> Callable[[dict], Verdict]:
    """`algo` carries more than `base` in `variant`: the paired difference above zero."""
    def decide(t: dict) -> Verdict:
        a, b = by_rep(t["throughput"], algo, variant), by_rep(t["throughput"], base, variant)
        st = stats.paired(a, b)
        return Verdict.tested(st, GREATER,
                              {f"{algo}_mbps": float(a.mean()), f"{base}_mbps": float(b.mean()), "base": base,
                               "pairs": st["pairs"],
                               "ratio": float(a.mean() / b.mean()), "paper_ratio": paper_ratio(algo, variant, base)},
                              f"{variant}: {analysis.TITLES[algo]} − {analysis.TITLES[base]} in the same run, "
                              f"Mbit/s ({st['pairs']} pairs; ratio of means {a.mean() / b.mean():.3f}, the report's "
                              f"{paper_ratio(algo, variant, base):.3f})")
    return decide


def coupled_close(variant: str) -> Callable[[dict], Verdict]:
    """Fully coupled within COUPLED_MARGIN of uncoupled: coupled − (1 − margin) × uncoupled above zero."""
    def decide(t: dict) -> Verdict:
        c, u = by_rep(t["throughput"], "coupled", variant), by_rep(t["throughput"], "uncoupled", variant)
        st = stats.paired(c, (1 - COUPLED_MARGIN) * u)
        return Verdict.tested(st, GREATER,
                              {"coupled_mbps": float(c.mean()), "uncoupled_mbps": float(u.mean()), "base": "uncoupled",
                               "pairs": st["pairs"],
                               "ratio": float(c.mean() / u.mean()), "paper_ratio": paper_ratio("coupled", variant)},
                              f"{variant}: fully coupled − {1 - COUPLED_MARGIN:g} × uncoupled in the same run, "
                              f"Mbit/s "
                              f"({st['pairs']} pairs; ratio of means {c.mean() / u.mean():.3f}, the report's "
                              f"{paper_ratio('coupled', variant):.3f})")
    return decide


# ------------------------------------------------------------------ controls

def controlled_variant(t: dict, name: str, kind: str) -> tuple[str, str]:
    """The variant of the controlled run `name` that changed `kind` ("shared" or "cross") and the
    change in words (analysis.mechanisms); KeyError when the reference keeps no such run."""
    c = t["controlled"].get(name)
    if c is None:
        raise KeyError(f"the controlled run {analysis.CONTROLLED_DIR}/{name}")
    found = [(v, words) for v, (k, words) in analysis.mechanisms(c, t["parameters"]).items() if k == kind]
    if not found:
        raise KeyError(f"a {kind} change in {analysis.CONTROLLED_DIR}/{name}")
    return found[0]


def moves(name: str, kind: str | Callable[[dict, str], tuple[str, str]], algo: str, variant: str,
          run_algo: str | None = None) -> Callable[[dict], Verdict]:
    """Does the controlled run `name` bring `algo` ÷ uncoupled to the report's ratio in `variant`?
    `kind`: what the run changed as analysis.mechanisms tells it ("shared", "cross"), or a function
    (tables, name) -> (its variant, the change in words) for what it does not tell; `run_algo`: the
    algorithm the run ran in `algo`'s place."""
    def decide(t: dict) -> Verdict:
        cvariant, words = kind(t, name) if callable(kind) else controlled_variant(t, name, kind)
        ctp = t["controlled"][name]["throughput"]
        own = analysis.controlled_ratio(ctp, run_algo or algo, cvariant)
        if own is None:
            raise KeyError(f"{run_algo or algo} and uncoupled in {analysis.CONTROLLED_DIR}/{name}")
        p = paper_ratio(algo, variant)
        here = ratio_stats(t["throughput"], algo, variant)  # this reference's own algo, the report's name
        numbers = {"controlled_ratio": own["ratio"], "controlled_lo": own["lo"], "controlled_hi": own["hi"],
                   "controlled_level": own["level"], "pairs": own["pairs"], "this_run_ratio": here["diff"],
                   "paper_ratio": p}
        said = (f"{words}: {analysis.TITLES[run_algo or algo]} ÷ uncoupled {own['ratio']:.3f} "
                f"({own['lo']:.2f}–{own['hi']:.2f} at {own['level']:.2%}, {own['pairs']} pairs, {cvariant} variant)")
        if not own["lo"] <= p <= own["hi"]:
            return Verdict(FAILS, numbers, (own["lo"], own["hi"]),
                           note=f"{said}, which excludes the report's {p:.3f}")
        st = stats.between(ratio_stats(ctp, run_algo or algo, cvariant), here)
        return Verdict.tested(st, GREATER if p > here["diff"] else LESS, numbers,
                              f"{said}, which holds the report's {p:.3f}"
                              + (f" and still admits a {1 - own['lo']:.0%} loss to uncoupled" if own["lo"] < 1 else "")
                              + f"; tested: its ratio − this run's {here['diff']:.3f}")
    return decide


# What a control set of experiment.toml (issue 37's) says before its runs are kept beside the reference
UNMEASURED_YET = "not measured yet: the control set {name} (labs/lab2/experiment.toml) has no runs kept beside the reference"


def not_yet(name: str, decide: Callable[[dict], Verdict]) -> Callable[[dict], Verdict]:
    """"Not measured" while the reference keeps no controlled run `name`; `decide` once it does."""
    return lambda t: decide(t) if name in t["controlled"] else Verdict.missing(UNMEASURED_YET.format(name=name))


def report_rule(t: dict, name: str) -> tuple[str, str]:
    """The static runs of the report's-rule programs, each run's subflows read back running them."""
    ctp = t["controlled"][name]["throughput"]
    for key in ("lia_report", "cs218_report"):
        ran = set(ctp[(ctp.algo == key) & (ctp.variant == "static")].cc)
        if ran != {cc.ALGORITHMS[key].name}:
            raise KeyError(f"the static runs of {key} with {cc.ALGORITHMS[key].name} in {analysis.CONTROLLED_DIR}/{name}")
    return "static", "the report's rule min(a / w_total, 1 / w_r), a = 1/√n (programs mlab_rlia, mlab_rcs218)"


def red_medium(t: dict, name: str) -> tuple[str, str]:
    """The shared variant on a link whose queue is RED: the network's bottleneck as configured, and a RED
    qdisc among those the kernel listed when the network was built (the manifest's `qdiscs`)."""
    c = t["controlled"][name]
    network = c["manifest"].get("network") or {}
    link = (network.get("bottleneck") or {}).get("link")
    spec = LinkSpec.parse(link) if link else None
    listed = any(q.startswith("qdisc red ") for q in network.get("qdiscs") or [])
    if spec is None or not spec.red or not listed or "shared" not in set(c["throughput"].variant):
        raise KeyError(f"shared runs through a RED link (configured and listed by tc) in {analysis.CONTROLLED_DIR}/{name}")
    return "shared", (f"every subflow and the cross traffic through one {spec.rate_bps / 1e6:g} Mbit/s link whose RED "
                      f"queue drops more as its average grows (up to {spec.red:.0%} at its upper threshold)")


def shared_mobile(t: dict, name: str) -> tuple[str, str]:
    if "shared_mobility" not in set(t["controlled"][name]["throughput"].variant):
        raise KeyError(f"the shared_mobility runs in {analysis.CONTROLLED_DIR}/{name}")
    return "shared_mobility", "the shared bottleneck with the mobility events"


CROSS_HALF = ("the cross-traffic level: the report's 15 UDP clients loaded its links otherwise than the lab's two "
              "on/off sources (here at half their rate)")
CROSS_UP = "the cross-traffic level (here at 1.5 times the lab's rate)"
SHARED = ("separate paths: the report's subflows shared one node's wireless medium (here every subflow through one "
          "link)")
REPORT_ALPHA = ("the report's own RTT-compensator rule, min(a / w_total, 1 / w_r) with a = 1/√n (the kit runs "
                "LIA's α for both LIA and CS218)")
LOAD_LOSS = ("a medium whose loss grows with load (the report's Wi-Fi MANET: contention, MAC retries), where a less "
             "aggressive sender loses less")


def gain_controls(algo: str) -> tuple[Control, ...]:
    """The candidate causes of a static gain over uncoupled that the lab's paths do not show."""
    return (Control("cross-half", CROSS_HALF, moves("cross-half", "cross", algo, "static")),
            Control("cross-1.5", CROSS_UP, moves("cross-1.5", "cross", algo, "static")),
            Control("shared-bottleneck", SHARED, moves("shared-bottleneck", "shared", algo, "static")),
            Control("report-alpha", REPORT_ALPHA,
                    not_yet("report-alpha", moves("report-alpha", report_rule, algo, "static", f"{algo}_report"))),
            Control("load-loss", LOAD_LOSS, not_yet("load-loss", moves("load-loss", red_medium, algo, "static"))))


CLAIMS: tuple[Claim, ...] = (
    Claim("lia-static-gain", "Without mobility, the RTT compensator (LIA) carries more than uncoupled",
          paper_value("lia", "static"), STATIC_TABLE,
          "static variant: mean of LIA − uncoupled in the same run above zero (paired)",
          gain("lia", "static"), gain_controls("lia")),
    Claim("cs218-static-gain", "Without mobility, CS218 carries more than uncoupled",
          paper_value("cs218", "static"), STATIC_TABLE,
          "static variant: mean of CS218 − uncoupled in the same run above zero (paired)",
          gain("cs218", "static"), gain_controls("cs218")),
    Claim("cs218-over-lia-static", "Without mobility, CS218's delay window adds throughput to LIA's: the highest",
          paper_value("cs218", "static", "lia"), STATIC_TABLE,
          "static variant: mean of CS218 − LIA in the same run above zero (paired)",
          gain("cs218", "static", "lia")),
    Claim("cs218-mobility-gain", "With mobility, CS218 carries more than uncoupled",
          paper_value("cs218", "mobility"), MOBILITY_TABLE,
          "mobility variant: mean of CS218 − uncoupled in the same run above zero (paired)",
          gain("cs218", "mobility")),
    Claim("cs218-over-lia-mobility", "With mobility, CS218's delay window adds throughput to LIA's",
          paper_value("cs218", "mobility", "lia"), MOBILITY_TABLE,
          "mobility variant: mean of CS218 − LIA in the same run above zero (paired)",
          gain("cs218", "mobility", "lia")),
    Claim("coupled-static", "Without mobility, fully coupled carries as much as uncoupled",
          paper_value("coupled", "static"), STATIC_TABLE,
          f"static variant: mean of fully coupled − {1 - COUPLED_MARGIN:g} × uncoupled in the same run above zero "
          f"(paired; the kit reads 'as much' as within {COUPLED_MARGIN:.0%})",
          coupled_close("static"),
          (Control("shared-bottleneck", SHARED, moves("shared-bottleneck", "shared", "coupled", "static")),
           Control("load-loss", LOAD_LOSS, not_yet("load-loss", moves("load-loss", red_medium, "coupled", "static"))))),
    Claim("coupled-mobility", "With mobility, fully coupled carries nearly as much as uncoupled",
          paper_value("coupled", "mobility"), MOBILITY_TABLE,
          f"mobility variant: mean of fully coupled − {1 - COUPLED_MARGIN:g} × uncoupled in the same run above zero "
          f"(paired; within {COUPLED_MARGIN:.0%})",
          coupled_close("mobility"),
          (Control("shared-mobility", SHARED,
                   not_yet("shared-mobility", moves("shared-mobility", shared_mobile, "coupled", "mobility"))),)),
)
