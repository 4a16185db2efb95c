"""Lab 2's generated fragments: every measured number Lab 2's pages quote (the guide, the instructors'
reference page), made from the committed reference (solutions/results/lab2) and its claims.json.
`lab2.claims`, the verdicts of claims.json, is the kit's own (`mptcplab fragments`).

`fragments(ref)` returns {name: markdown}; `mptcplab fragments` writes each into the blocks
`<!-- generated: lab2.NAME -->`. The tables are the sections of the reference's own report
(analysis.report, cut at its headings), so a page and the report never disagree; the rest reads
the same tables and the ledger.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pandas as pd

from . import analysis
from . import claims as ledger
from ...judge import claims as judge

# fragment name -> the heading of the report's section it is (a prefix of it)
SECTIONS = {"delay-window": "What CS218's delay window did",
            "paired": "Paired:", "fairness": "Fairness:", "rfc6356": "RFC 6356's goals"}


def fragments(ref: Path | str) -> dict[str, str]:
    ref = Path(ref)
    sections = report_sections(analysis.report(ref))
    doc = ledger.judged(ref)
    out = {name: sections[title] for name, title in SECTIONS.items()}
    out.update({"reference": reference(ref), "setup": setup(ref), "throughput": sections[""],
                "stalls": sections["stalls"], "controlled": controlled(sections), "sizes": sizes(doc),
                "causes": causes(doc)})
    return out


def report_sections(md: str) -> dict[str, str]:
    """The report cut at its '## ' headings: {heading (or a prefix SECTIONS names): its body}; ""
    is the part before the first heading, without the title and the setup lines the page says itself."""
    parts = re.split(r"^## (.*)$", md, flags=re.M)
    # before the first section but its claims: the throughput table, the runs per point and the stalls
    head = re.split(r"^## (?!The report's claims).*$", md, maxsplit=1, flags=re.M)[0].splitlines()
    start = next(i for i, line in enumerate(head) if line.startswith("| algorithm | paper, mobility"))
    table = list(itertools.takewhile(lambda line: line.startswith("|"), head[start:]))
    runs = [line for line in head if line.startswith("Runs per algorithm and variant")]
    found = {"": "\n".join(table + [""] + runs) + "\n",
             "stalls": "".join(line + "\n" for line in head if line.startswith("Stalls"))}
    for title, body in zip(parts[1::2], parts[2::2]):
        found[title] = body.strip("\n") + "\n"
        for name, prefix in SECTIONS.items():
            if title.startswith(prefix):
                found[prefix] = found[title]
    missing = [p for p in SECTIONS.values() if p not in found]
    if missing:
        raise KeyError(f"the reference's report has no section {missing}: re-make it (--report-only)")
    return found


def controlled(sections: dict[str, str]) -> str:
    """The report's sections on the controlled runs, one '###' heading each."""
    parts = [f"### {title}\n\n{body}" for title, body in sections.items() if title.startswith("Controlled run")]
    return "\n".join(parts) if parts else "The reference keeps no controlled run.\n"


def reference(ref: Path) -> str:
    """What the reference is: kernel, place, commit and day of its runs (runs-manifest.csv), how many
    of each kind, how long the sweep took, and its controlled runs."""
    m = pd.read_csv(ref / "runs-manifest.csv")
    t = analysis.load(ref)
    man, tp, fair = t["manifest"], t["throughput"], t["fairness"]
    plat = man.get("platform") or {}
    started, finished = pd.to_datetime(m.started), pd.to_datetime(m.finished)
    per = tp.groupby(["algo", "variant"]).size()
    kernels, places, commits = (", ".join(sorted(set(m[c].astype(str)))) for c in ("kernel", "where", "commit"))
    duration = (man.get("experiment_parameters") or {}).get("duration_s", "?")
    minutes = (finished.max() - started.min()).total_seconds() / 60
    text = (f"Linux {kernels} in the {places} place ({plat.get('cpus', '?')} vCPU, accelerator "
            f"{plat.get('vm_accel', '-')}), commit {commits}, {started.min():%Y-%m-%d}: {len(tp)} transfers "
            f"({int(per.min())} runs of {duration} s per algorithm and variant) and {len(fair)} fairness runs, in "
            f"{minutes:.0f} min from the first run's start to the last one's end.")
    kept = analysis.controlled_runs(ref)
    if kept:
        text += " Controlled runs kept beside it: " + "; ".join(
            f"`{analysis.CONTROLLED_DIR}/{name}` ({len(c['throughput'])} transfers)" for name, c in kept.items()) + "."
    return text + "\n"


def setup(ref: Path) -> str:
    """The setup check's readings per path: ping RTT against the configured one, single-path TCP."""
    checks = (analysis.load(ref)["manifest"].get("setup_checks") or {}).get("paths") or {}
    lines = ["| path | link | configured RTT | ping RTT (min / median) | single-path TCP, Mbit/s |",
             "|---|---|---|---|---|"]
    for name, c in sorted(checks.items()):
        ping = c.get("ping") or {}
        lines.append(f"| {name} | {c.get('link', '?')} | {c.get('configured_rtt_ms', float('nan')):g} ms | "
                     f"{ping.get('min_ms', float('nan')):g} / {ping.get('median_ms', float('nan')):g} ms | "
                     f"{c.get('tcp_goodput_steady_mbps', float('nan')):g} |")
    return "\n".join(lines) + "\n"


def sizes(doc: dict) -> str:
    """Each claim's corrected interval read as a ratio (1 + the interval over the base's mean; the
    coupled claims' margin added back), beside the report's ratio: does the run exclude the
    report's size as well as, or instead of, its sign?"""
    lines = ["| claim | the report's ratio | this run's ratio | corrected interval of the ratio | the report's ratio |",
             "|---|---|---|---|---|"]
    for c in doc.get("claims", []):
        n, iv = c.get("numbers") or {}, c.get("interval")
        if "paper_ratio" not in n:
            continue
        base = n.get(f"{n.get('base')}_mbps")
        offset = 1 - ledger.COUPLED_MARGIN if c["id"].startswith("coupled") else 1
        if iv and base:
            lo, hi = offset + iv[0] / base, offset + iv[1] / base
            where = "inside" if lo <= n["paper_ratio"] <= hi else "above it" if n["paper_ratio"] > hi else "below it"
            cell = f"{lo:.3f}–{hi:.3f}"
        else:
            cell, where = "—", "—"
        lines.append(f"| {c['id']} | {n['paper_ratio']:.3f} | {n['ratio']:.3f} | {cell} | {where} |")
    return "\n".join(lines) + "\n"


def causes(doc: dict) -> str:
    """Per claim with candidate causes: each control's status and what it measured (claims.json)."""
    lines = ["| claim | control | candidate cause | status | what it measured |", "|---|---|---|---|---|"]
    for c in doc.get("claims", []):
        for k in c.get("causes", []):
            status = k["status"] + (f", corrected interval {k['interval'][0]:.3g}..{k['interval'][1]:.3g}"
                                    if k["status"] == judge.HOLDS and k.get("interval") else "")
            lines.append(f"| {c['id']} | {k['control']} | {_cell(k['cause'])} | {status} | {_cell(k['note'])} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
