"""Lab 2 analysis: the fairness runs, the MPTCP connection against one TCP flow on a shared path
(Welch against uncoupled, Holm-corrected), and RFC 6356's three goals as checks on them."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pandas as pd

from ...judge import physics, stats
from ...judge.check import ceiling, number, wire_rate
from ...judge.stats import mean_ci
from ...net.links import LinkSpec
from .paper import ORDER

# The fairness runs' network: two paths in the vocabulary of `paths` (`fairness.paths.<name>.link`, `.delay`).
FAIRNESS_PATHS = ("shared", "other")
# Their keys before that vocabulary: refused in experiment.toml and --set (Parameters.renamed), read in
# the parameters of runs recorded with them (fairness_link), such as the reference's.
PREVIOUS_PARAMETERS = {**{f"fairness.{p}": f"fairness.paths.{p}.link" for p in FAIRNESS_PATHS},
                       **{f"fairness.{p}_delay": f"fairness.paths.{p}.delay" for p in FAIRNESS_PATHS}}


def fairness_link(params: dict, name: str) -> str | None:
    """The `link` (rate, queue) of the fairness network's path `name` in a run's parameters, by its
    key now or its previous one (PREVIOUS_PARAMETERS); None when the run had none."""
    f = params.get("fairness") or {}
    return ((f.get("paths") or {}).get(name) or {}).get("link") or f.get(name)


def tcp_on_shared(g: pd.DataFrame) -> pd.Series:
    """The TCP flow's goodput on the shared path over the same window as MPTCP's there (runs that
    measured it, `tcp_on_shared_mbps`), else its own (older runs: its own span)."""
    own = g.tcp_on_shared_mbps if "tcp_on_shared_mbps" in g else pd.Series(math.nan, index=g.index)
    return own.fillna(g.tcp_goodput_transfer_mbps)


def _share(g: pd.DataFrame) -> pd.Series:
    """The TCP flow's share of what crossed the shared path, per run (with MPTCP's, 100%)."""
    return tcp_on_shared(g) / (tcp_on_shared(g) + g.mptcp_on_shared_mbps)


def fairness_table(fair: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: the MPTCP connection, its part on the shared path, the TCP flow there, the
    TCP flow's share of the shared path (mean, 95% CI), and that share against uncoupled's
    (Welch interval of the difference; the verdict says whether the algorithm leaves the TCP
    flow more than uncoupled does)."""
    rows, family = [], []
    base = _share(fair[fair.algo == "uncoupled"]) if (fair.algo == "uncoupled").any() else pd.Series(dtype=float)
    for algo, g in fair.groupby("algo"):
        row = {"algo": algo, "runs": len(g)}
        for col, values in (("mptcp_goodput_transfer_mbps", g.mptcp_goodput_transfer_mbps),
                            ("mptcp_on_shared_mbps", g.mptcp_on_shared_mbps), ("tcp_on_shared_mbps", tcp_on_shared(g))):
            row[col], row[col.replace("mbps", "ci95")], _ = mean_ci(values)
        row["tcp_share_of_shared"], row["tcp_share_ci95"], _ = mean_ci(_share(g))
        if algo != "uncoupled" and len(base):
            family.append((len(rows), stats.welch(_share(g), base)))
        row.update({"share_vs_uncoupled": math.nan, "share_vs_uncoupled_ci95": math.nan,
                    "share_vs_uncoupled_level": math.nan, "runs_needed": math.nan,
                    "verdict": "the baseline" if algo == "uncoupled" else "no uncoupled runs"})
        rows.append(row)
    # the comparisons with uncoupled are one family (Holm): the interval shown is the corrected one
    for (i, _), w in zip(family, stats.holm(w for _, w in family)):
        rows[i].update({"share_vs_uncoupled": w["diff"], "share_vs_uncoupled_ci95": w["half"],
                        "share_vs_uncoupled_level": w["level"], "runs_needed": w["runs_needed"],
                        "verdict": stats.verdict(w, "leaves TCP more than uncoupled",
                                                 "leaves TCP less than uncoupled")})
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    t["order"] = t.algo.map({a: i for i, a in enumerate(ORDER)})
    return t.sort_values("order").drop(columns="order").reset_index(drop=True)


RFC6356_GOALS = {
    1: ("Improve throughput: do at least as well as a single-path TCP flow on the best of its paths",
        "MPTCP total − the goodput ceiling of its best path (the most a single-path TCP flow could carry "
        "there) > 0"),
    2: ("Do no harm: take no more from a shared bottleneck than a single TCP flow on it would",
        "MPTCP's traffic on the shared path − the TCP flow's there ≤ 0 (paired per run)"),
    3: ("Balance congestion: move traffic off the most congested path",
        "share of MPTCP's bytes on the shared path − uncoupled's < 0 (Welch)"),
}


def rfc6356_checks(fair: pd.DataFrame, best_path_mbps: float | None = None) -> pd.DataFrame:
    """RFC 6356's three goals as checks on the fairness runs, per algorithm: the difference in
    RFC6356_GOALS, its Holm-corrected interval (all goals and algorithms of the table are one
    family) and "met" (interval entirely on the right side), "violated" (entirely on the wrong
    side) or "not resolved" (across zero), with the runs that would resolve it.

    Goal 1's yardstick is the best a single-path TCP flow could carry on the best of the
    connection's paths: that path's goodput ceiling (`best_path_mbps`, physics.link_ceiling_bps);
    without it, the TCP flow measured beside it on the shared path (a lower bound)."""
    keys, family = [], []
    base = fair[fair.algo == "uncoupled"]
    for algo, g in fair.groupby("algo"):
        g = g.set_index("rep")
        best = g.tcp_goodput_transfer_mbps if best_path_mbps is None else pd.Series(best_path_mbps, index=g.index)
        checks = {1: stats.paired(g.mptcp_goodput_transfer_mbps, best),
                  2: stats.paired(g.mptcp_on_shared_mbps, tcp_on_shared(g))}
        if algo != "uncoupled" and len(base):
            checks[3] = stats.welch(g.mptcp_share_on_shared, base.mptcp_share_on_shared)
        for goal, st in checks.items():
            keys.append({"algo": algo, "goal": goal, "what": RFC6356_GOALS[goal][1]})
            family.append(st)
    rows = []
    for k, st in zip(keys, stats.holm(family)):
        good_if_positive = k["goal"] == 1
        v = stats.verdict(st, "met" if good_if_positive else "violated", "violated" if good_if_positive else "met")
        rows.append({**k, "diff": st["diff"], "ci95": st["ci95"], "half": st["half"], "level": st["level"],
                     "p_holm": st["p_holm"], "runs_needed": st["runs_needed"], "verdict": v})
    t = pd.DataFrame(rows, columns=["algo", "goal", "what", "diff", "ci95", "half", "level", "p_holm", "runs_needed",
                                    "verdict"])
    t["order"] = t.algo.map({a: i for i, a in enumerate(ORDER)})
    return t.sort_values(["goal", "order"]).drop(columns="order").reset_index(drop=True)


def best_path_ceiling_mbps(man: dict) -> float | None:
    """Goal 1's yardstick: the goodput ceiling of the best path the fairness runs' MPTCP connection
    had (physics.link_ceiling_bps of the shared and the private link's rate), from the parameters."""
    rates = []
    for name in FAIRNESS_PATHS:
        try:
            rates.append(LinkSpec.parse(fairness_link(man.get("parameters") or {}, name)).rate_bps)
        except Exception:  # noqa: BLE001 - a run without that link: no yardstick from it
            continue
    rates = [r for r in rates if r]
    return physics.link_ceiling_bps(max(rates)) / 1e6 if rates else None


def check_fairness_table(table: Path) -> list[physics.Verdict]:
    """`mptcplab check` of the fairness runs (LAB.judging.results_checks): the TCP flow and the MPTCP
    connection's subflow share one link, so together they carry at most its ceiling
    (`tcp_on_shared_mbps` where the run measured both over one window, else
    `tcp_goodput_transfer_mbps`), and the link's capture on its egress at most its rate. The link is
    the `fairness.paths.shared.link` parameter of the manifest beside the table (fairness_link)."""
    try:
        man = json.loads((table.parent / "lab2-manifest.json").read_text())
        link = fairness_link(man.get("parameters") or {}, "shared")
    except (OSError, ValueError, TypeError):
        return []
    if not link:
        return []
    rate = LinkSpec.parse(link).rate_bps
    out = []
    with open(table, newline="") as f:
        for row in csv.DictReader(f):
            tcp = number(row.get("tcp_on_shared_mbps")) or number(row.get("tcp_goodput_transfer_mbps"))
            both = tcp + number(row.get("mptcp_on_shared_mbps"))
            where = f"{table.parent.name}/fair-{row.get('algo')}-r{row.get('rep')}"
            out += ceiling(where, both, rate, what="TCP + MPTCP on the shared path vs its ceiling")
            if number(row.get("shared_wire_mbps")):  # the emulator's own count of what the link delivered
                out.append(wire_rate(f"{where}: the shared link's wire rate", number(row["shared_wire_mbps"]), rate,
                                     "both flows' packets captured on its egress"))
    return out
