"""Lab 1's second place (issue 24): the paper's point in another place, and whether the finding agrees.

A place that cannot carry the paper's 100 Mbit/s (the VM place under QEMU TCG) runs the paper's
point scaled ([paper_point] scale: rates and buffers divided by one factor, delays kept); the kit's
UML kernel runs the same scaled point. Each such run is kept beside the reference as a controlled
run (reference.export_controlled: dest/controlled/NAME/, the paper point's compact copy), and the agreement
table sets MPTCP (upstream's default scheduler) over single-path TCP on the fast path side by side:
the reference's own paper point (full rates) and every controlled run, each ratio with its 95%
interval, then one Holm-corrected family of verdicts: each ratio against 1, and the ratio of each
controlled run against the reference's and against the other places' at the same scale.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ...judge import stats
from ...net.links import LinkSpec
from .paper_point import holm_words, load_paper_point, _manifest_of, verdict_lines

CONTROLLED_DIR = "controlled"  # beside a reference: one folder per controlled run (its paper point)


def _setting(folder: Path, runs: pd.DataFrame) -> dict:
    """Where a paper point ran: place, kernel, each path's rate and one-way delay as configured, the
    fast path's rate, the scale (from its manifest)."""
    m = _manifest_of(folder, runs)
    man = json.loads(m.read_text()) if m else {}
    plat = man.get("platform", {})
    links = [(p["name"], LinkSpec.parse(p["link"])) for p in man.get("network", {}).get("paths", [])]
    scale = int((man.get("parameters") or {}).get("scale", 1))  # the run's point (experiment.paper_points)
    return {"where": plat.get("where", "?"), "kernel": plat.get("kernel_release", "?"), "scale": scale,
            "rate_mbps": links[0][1].rate_bps / 1e6 if links and links[0][1].rate_bps else math.nan,
            "paths": ", ".join(f"{n} {(s.rate_bps or 0) / 1e6:g} Mbit/s {s.delay_s * 1e3:g} ms" for n, s in links)}


def datasets(ref: Path | str) -> list[dict]:
    """The reference's paper point and each controlled run beside it: name, setting, and the
    goodputs of MPTCP with upstream's default scheduler and of single-path TCP on the fast path
    (the tcp_wmem runs of the paper's point; the held and tso groups are other questions)."""
    ref = Path(ref)
    out = []
    for name, folder in [("reference", ref), *((d.name, d) for d in sorted((ref / CONTROLLED_DIR).glob("*"))
                                                if (d / "paper-point.csv").exists())]:
        runs = load_paper_point(folder)
        runs = runs[(runs["group"] == "schedulers") & runs["goodput_transfer_mbps"].notna()] if len(runs) else runs
        if runs.empty:
            continue
        default = (runs["config"] == "mptcp") & (runs["scheduler"].fillna("default") == "default")
        mptcp = runs[default]["goodput_transfer_mbps"]
        tcp = runs[runs["config"] == "tcp-fast"]["goodput_transfer_mbps"]
        if len(mptcp) and len(tcp):
            out.append({"name": name, **_setting(folder, runs),
                        "buffer_bytes": int(runs["buffer_bytes"].iloc[0]), "mptcp": list(mptcp), "tcp": list(tcp)})
    return out


def agreement(sets: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per dataset its means and MPTCP/TCP ratio (95% interval), and one family of verdicts (Holm):
    each ratio against 1; each controlled run's ratio against the reference's and against every
    other controlled run's at the same scale (same rates: the place is the only difference)."""
    rows, family, labels = [], [], []
    ratio = {}
    for s in sets:
        r = stats.log_ratio(s["mptcp"], s["tcp"])
        ratio[s["name"]] = r
        (m, mh, mn), (t, th, tn) = stats.mean_ci(s["mptcp"]), stats.mean_ci(s["tcp"])
        rows.append({"name": s["name"], "where": s["where"], "kernel": s["kernel"], "scale": s["scale"],
                     "paths": s["paths"],
                     "rate_mbps": s["rate_mbps"], "buffer_bytes": s["buffer_bytes"], "n_mptcp": mn, "mptcp": m,
                     "mptcp_ci": mh, "n_tcp": tn, "tcp": t, "tcp_ci": th, "ratio": math.exp(r["diff"]),
                     "ratio_lo": math.exp(r["lo"]), "ratio_hi": math.exp(r["hi"])})
        family.append(r)
        labels.append(f"{s['name']}: MPTCP / TCP against 1")
    for i, a in enumerate(sets):
        for b in sets[:i]:
            if a["name"] != "reference" and (b["name"] == "reference" or a["scale"] == b["scale"]):
                family.append(stats.between(ratio[a["name"]], ratio[b["name"]]))
                labels.append(f"{a['name']} / {b['name']}: ratio of their MPTCP / TCP")
    verdicts = []
    for st, what in zip(stats.holm(family), labels):
        first = what.split(":")[0].split(" / ")[0]
        words = (("MPTCP faster", "MPTCP slower", "not resolved") if what.endswith("against 1") else
                 (f"{first}'s higher", f"{first}'s lower", "no difference resolved"))
        verdicts.append({"comparison": what, "factor": math.exp(st["diff"]), "lo": math.exp(st["lo"]),
                         "hi": math.exp(st["hi"]), "level": st["level"], "m": st["m"], "resolved": st["resolved"],
                         "verdict": stats.verdict(st, *words), "runs_needed": st["runs_needed"]})
    return pd.DataFrame(rows), pd.DataFrame(verdicts)


def agreement_markdown(ref: Path | str) -> str:
    """The agreement table of the reference and its controlled runs ("" with none beside it)."""
    sets = datasets(ref)
    if len(sets) < 2:
        return ""
    table, verdicts = agreement(sets)
    lines = ["## The second place: MPTCP / single-path TCP at the paper's point, in each place", "",
             "Upstream's default scheduler against single-path TCP on the fast path, tcp_wmem min = default = max. "
             "A scaled point divides both paths' rates and the buffer by its scale and keeps the slow path's "
             "delay, so the slow path's bandwidth-delay product and the buffer keep their proportion; packets "
             "(1448 B) and the kernel's one-skb allowance (64 KiB) do not scale.", "",
             "| run | place | kernel | paths (one-way delay) | scale | tcp_wmem | MPTCP: n, Mbit/s (95% CI) | "
             "TCP fast: n, Mbit/s (95% CI) | MPTCP / TCP (95% CI) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in table.itertuples():
        scale = "1" if r.scale == 1 else f"1/{r.scale}"
        lines.append(f"| {r.name} | {r.where} | {r.kernel} | {r.paths} | {scale} | "
                     f"{r.buffer_bytes:,} B | {r.n_mptcp}, {r.mptcp:.2f} ± {r.mptcp_ci:.2f} | "
                     f"{r.n_tcp}, {r.tcp:.2f} ± {r.tcp_ci:.2f} | {r.ratio:.2f} ({r.ratio_lo:.2f}-{r.ratio_hi:.2f}) |")
    lines += [""] + verdict_lines(verdicts, f"Verdicts ({holm_words(verdicts, 'these')}; ratios, so 1 is no "
                                  "difference; \"runs needed\": per side, for the corrected interval to exclude 1 at "
                                  "the observed factor):", ratio=True)
    return "\n".join(lines) + "\n"
