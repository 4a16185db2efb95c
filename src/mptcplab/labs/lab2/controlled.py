"""Lab 2 analysis: the controlled runs kept beside a reference (export_controlled), what each
changed and its ratios to uncoupled, and their section of the report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...judge import physics
from ...net.links import LinkSpec
from .fairness import fairness_link
from .fmt import number
from .paper import TITLES
from .throughput import paired_table, throughput_table


CONTROLLED_DIR = "controlled"  # beside a reference: one folder per controlled run, its compact tables


def controlled_runs(out: Path) -> dict[str, dict]:
    """The controlled runs kept beside a reference (export_controlled): name -> its tables."""
    found = {}
    for d in sorted((Path(out) / CONTROLLED_DIR).glob("*/lab2-manifest.json")):
        found[d.parent.name] = {"throughput": pd.read_csv(d.parent / "throughput.csv"),
                                "fairness": pd.read_csv(d.parent / "fairness.csv"),
                                "manifest": json.loads(d.read_text())}
    return found


def controlled_ratio(tp: pd.DataFrame, algo: str, variant: str) -> dict | None:
    """`algo` ÷ uncoupled in one variant of a controlled run's throughput table: the paired
    difference's Holm-corrected interval (paired_table over that run's comparisons: one family per
    controlled run) as a ratio to uncoupled's mean there, with the spread and level behind it."""
    part = tp[tp.variant == variant]
    pt = paired_table(tp)
    row = pt[(pt.variant == variant) & (pt.algo == algo) & (pt.vs == "uncoupled")]
    base = part[part.algo == "uncoupled"].goodput_transfer_mbps.mean()
    if row.empty or not base == base or not row.iloc[0].half == row.iloc[0].half:
        return None
    r = row.iloc[0]
    return {"ratio": 1 + r["diff"] / base, "lo": 1 + r.lo / base, "hi": 1 + r.hi / base, "pairs": int(r.pairs),
            "level": r.level, "sd": r.sd, "uncoupled_mbps": base,
            "algo_mbps": part[part.algo == algo].goodput_transfer_mbps.mean(),
            "verdict": r.verdict, "runs_needed": r.runs_needed}


def _rate_bps(rate: str) -> float:
    return LinkSpec.parse(f"rate={rate}").rate_bps


def cross_change(ref_cross: dict | None, cross: dict | None) -> str | None:
    """A controlled run's cross traffic in words against the reference's ("the cross traffic at
    1.5 times its rate (p2 4.5mbit, p3 6mbit)"), or None when it is the same (no controlled change)."""
    ref_cross, cross = ref_cross or {}, cross or {}
    if not ref_cross or set(cross) != set(ref_cross) or all(
            _rate_bps(cross[p]["rate"]) == _rate_bps(ref_cross[p]["rate"]) for p in cross):
        return None
    factors = {round(_rate_bps(cross[p]["rate"]) / _rate_bps(ref_cross[p]["rate"]), 3) for p in cross}
    rates = ", ".join(f"{p} {cross[p]['rate']}" for p in sorted(cross))
    level = f"{factors.pop():g} times its rate" if len(factors) == 1 else "other rates"
    return f"the cross traffic at {level} ({rates}; this reference: " + \
        ", ".join(f"{p} {ref_cross[p]['rate']}" for p in sorted(ref_cross)) + ")"


def mechanisms(c: dict, ref_params: dict) -> dict[str, tuple[str, str]]:
    """What a controlled run changed, per variant it ran: variant -> (kind, words). The shared
    variant is the shared bottleneck; a static or mobility variant counts only when its cross
    traffic differs from the reference's (the cross-traffic sweep)."""
    found = {}
    variants = set(c["throughput"].variant) if not c["throughput"].empty else set()
    if "shared" in variants:
        link = ((c["manifest"].get("network") or {}).get("bottleneck") or {}).get("link")
        spec = LinkSpec.parse(link) if link else None
        mbps = spec.rate_bps / 1e6 if spec else None
        found["shared"] = ("shared", "all subflows and the cross traffic through "
                                     + (f"one {mbps:g} Mbit/s link" if mbps else "one link")
                                     + (f" with a RED queue (up to {spec.red:.0%} dropped at its upper threshold)"
                                        if spec and spec.red else ""))
    change = cross_change(ref_params.get("cross"), (c["manifest"].get("parameters") or {}).get("cross"))
    if change:
        found.update({v: ("cross", change) for v in variants - {"shared"}})
    return found


def controlled_section(controlled: dict[str, dict], ref_params: dict | None = None) -> list[str]:
    """The report's lines on each controlled run kept beside the reference: per variant it ran,
    what it changed and its throughput with each algorithm's corrected ratio to uncoupled, and
    fairness runs measured on the link."""
    lines = []
    for name, c in controlled.items():
        tp, fair, man = c["throughput"], c["fairness"], c["manifest"]
        plat = man.get("platform") or {}
        lines += [f"## Controlled run `{CONTROLLED_DIR}/{name}`", "",
                  f"Kernel {plat.get('kernel_release', '?')} ({plat.get('where', '?')}), "
                  f"commit {((man.get('git') or {}).get('commit') or '?')[:12]}; per-run provenance in its "
                  "`runs-manifest.csv`. Its paired comparisons with uncoupled are one family (Holm), apart from the "
                  "reference's.", ""]
        changed = mechanisms(c, ref_params or {})
        for variant in sorted(set(tp.variant)) if not tp.empty else []:
            kind, words = changed.get(variant, (None, "the reference's setup"))
            link = ((man.get("network") or {}).get("bottleneck") or {}).get("link", "?")
            what = (f"**Shared bottleneck** (`variants = [\"shared\"]`): every subflow and the cross traffic through "
                    f"one link ({link}), each path keeping its delay" if kind == "shared"
                    else f"**{words[0].upper() + words[1:]}**, {variant} variant")
            lines += [f"{what}. Throughput, mean ± 95% CI:", "",
                      "| algorithm | Mbit/s | runs | ÷ uncoupled (corrected interval) |", "|---|---|---|---|"]
            part = tp[tp.variant == variant]
            for r in throughput_table(part).itertuples():
                ratio = controlled_ratio(tp, r.algo, variant) if r.algo != "uncoupled" else None
                cell = (f"{ratio['ratio']:.3f} ({ratio['lo']:.3f}–{ratio['hi']:.3f}, {ratio['verdict']})" if ratio
                        else "—")
                lines.append(f"| {TITLES.get(r.algo, r.algo)} | {number(r.mean_mbps, r.ci95_mbps)} | {r.runs} | {cell} |")
            lines += [""]
        if not fair.empty and fair.get("shared_wire_mbps") is not None and fair.shared_wire_mbps.notna().any():
            link = fairness_link(man.get("parameters") or {}, "shared")
            rate = LinkSpec.parse(link).rate_bps if link else None
            both = fair.tcp_on_shared_mbps + fair.mptcp_on_shared_mbps
            ceiling = f" (its ceiling {physics.link_ceiling_bps(rate) / 1e6:.2f})" if rate else ""
            old = ((fair.tcp_goodput_transfer_mbps + fair.ss_mptcp_on_shared_mbps)
                   if "ss_mptcp_on_shared_mbps" in fair else None)
            lines += [f"**Fairness measured on the link**: {len(fair)} runs, the split of the shared path counted in "
                      "the emulator's capture of what the link delivered, over the span both flows used it "
                      f"(`measure.shared_link_rates`). TCP + MPTCP there: {both.min():.2f}–{both.max():.2f} Mbit/s"
                      f"{ceiling}; the link's wire rate {fair.shared_wire_mbps.min():.2f}–"
                      f"{fair.shared_wire_mbps.max():.2f} Mbit/s"
                      + (f" of {rate / 1e6:g}" if rate else "") + "."
                      + (f" The same runs as the reference measured them (TCP over its own span, MPTCP's part by "
                         f"`ss` byte shares): {old.min():.2f}–{old.max():.2f}." if old is not None and old.notna().any()
                         else ""), "",
                      "| algorithm | run | TCP | MPTCP on the shared path | together | MPTCP on the other path "
                      "| together, as the reference measured |",
                      "|---|---|---|---|---|---|---|"]
            for r in fair.sort_values(["algo", "rep"]).itertuples():
                was = old.loc[r.Index] if old is not None else float("nan")
                lines.append(f"| {TITLES.get(r.algo, r.algo)} | {r.rep} | {r.tcp_on_shared_mbps:.3f} | "
                             f"{r.mptcp_on_shared_mbps:.3f} | {r.tcp_on_shared_mbps + r.mptcp_on_shared_mbps:.3f} | "
                             f"{r.mptcp_on_other_mbps:.3f} | {was:.3f} |")
            lines += [""]
    return lines
