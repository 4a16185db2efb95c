"""Lab 3's generated fragments: the measured numbers its guide and the instructors' reference page
(site/instructors/lab3-reference.md) quote, made from the committed reference (solutions/results/lab3)
by the lab's own analysis, so a page and the report never disagree. `mptcplab fragments` writes each
into the blocks `<!-- generated: lab3.NAME -->`; `lab3.claims`, the verdicts of its claims.json, is
the kit's own.

The report's sections (the paper beside the run, the divergences, timeouts, the two controlled runs,
the RTT fed to the models, where the runs came from) are taken from the committed report
(paper-vs-this-run.md) whole, so the page shows the report's own tables under its own headings.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from . import analysis, models

# The report's sections: a block (paragraph, table or heading) that starts with the key opens the
# fragment named by the value; None drops the section (the page has it from elsewhere: lab3.claims,
# lab3.errors) or has no use for it (the report's opening paragraph).
SECTIONS = {
    "# Lab 3": None,
    "## The paper's claims": None,
    "| the paper | this run |": "paper-vs-run",
    "## Divergences": "divergences",
    "Median |relative error|": None,
    "Timeouts in the measurement window": "timeouts",
    "### Controlled run: the models' Reno recovery": "recovery",
    "### Controlled run: the ACK ratio": "ack-ratio",
    "The RTT fed to the models": "rtt",
    "Where the runs came from": "provenance",
}


def fragments(ref: Path | str) -> dict[str, str]:
    ref = Path(ref)
    runs = analysis.load(ref)["runs"]
    controls = analysis.load_controls(ref)
    return {"reference": reference(ref, runs), "errors": errors(runs), "inputs": inputs(runs),
            "place": place(runs, controls), "timing": timing(ref), "quick": quick(), "appendix": appendix(),
            **report_sections(ref)}


def reference(ref: Path, runs: pd.DataFrame) -> str:
    """What the reference is: kernel, place, commits and days of its runs (runs-manifest.csv), and how
    many runs of each scenario; its controls likewise."""
    def where(folder: Path) -> str:
        m = pd.read_csv(folder / "runs-manifest.csv")
        m = m[m["run"] != "verify"]
        days = sorted({s[:10] for s in m["started"].astype(str)})
        return (f"Linux {', '.join(sorted(set(m['kernel'].astype(str))))} "
                f"({', '.join(sorted(set(m['where'].astype(str))))}), commit{'s' if m['commit'].nunique() > 1 else ''} "
                f"{', '.join(sorted(set(m['commit'].astype(str))))}, {' to '.join(dict.fromkeys([days[0], days[-1]]))}")
    counts = runs.groupby("scenario").size()
    lines = [f"The reference's {len(runs)} runs ({counts.get('random', 0)} random loss, {counts.get('droptail', 0)} "
             f"DropTail): {where(ref)}."]
    for name, c in analysis.load_controls(ref).items():
        lines.append(f"- control `{name}`: {len(c['runs'])} run{'s' if len(c['runs']) != 1 else ''}, {where(ref / analysis.CONTROLS / name)}")
    return "\n".join(lines) + "\n"


def errors(runs: pd.DataFrame) -> str:
    """Median |relative error| per model and group of runs (analysis.error_summary), as the report."""
    s = analysis.error_summary(runs)
    head = "| runs | count | " + " | ".join(analysis.MODELS.values()) + " |"
    rows = [f"| {t['runs']} | {t['count']} | " + " | ".join(f"{t[c]:.0%}" for c in analysis.MODELS) + " |"
            for _, t in s.iterrows()]
    return "\n".join([head, "|---|---|" + "---|" * len(analysis.MODELS), *rows]) + "\n"


def _span(s: pd.Series, fmt: str) -> str:
    """median (min–max) of a column, each value formatted with `fmt`."""
    return f"{fmt.format(s.median())} ({fmt.format(s.min())}–{fmt.format(s.max())})"


def inputs(runs: pd.DataFrame) -> str:
    """The models' measured inputs per scenario: the kernel's RTO (T), its srtt against the base RTT,
    and the ACK ratio b measured from the capture (the models are fed model_b)."""
    lines = ["| scenario | runs | T, ms | srtt, ms | srtt / base RTT, at most | b measured (segments per ACK) | b fed to the models |",
             "|---|---|---|---|---|---|---|"]
    for name, g in runs.groupby("scenario"):
        lines.append(f"| {name} | {len(g)} | {_span(g['T'] * 1000, '{:.0f}')} | {_span(g.srtt * 1000, '{:.1f}')} | "
                     f"{(g.srtt / g.base_rtt).max():.2f} | {_span(g.b, '{:.1f}')} | "
                     f"{', '.join(f'{v:g}' for v in sorted(set(g.model_b)))} |")
    return "\n".join(lines) + "\nMedian (least–most) over the runs of each scenario.\n"


def place(runs: pd.DataFrame, controls: dict) -> str:
    """What the place carried: each DropTail bottleneck's rate on the wire against its capacity, the
    random-loss runs' RTT against the base RTT (no queue where there is no capacity limit), the most
    packets per second any run sent, the guest's busiest CPU; and the no_rate control's point."""
    dt, rnd = runs[runs.scenario == "droptail"], runs[runs.scenario == "random"]
    top = runs.loc[runs.pps.idxmax()]
    fill = dt.emulator_wire_mbps / dt.capacity_mbps
    at_max = dt[dt.capacity_mbps == dt.capacity_mbps.max()]
    lines = [f"- DropTail: every bottleneck, {dt.capacity_mbps.min():g} to {dt.capacity_mbps.max():g} Mbit/s, sent "
             f"{fill.min():.0%}–{fill.max():.0%} of its rate on the wire ({at_max.pps.min():,.0f}–{at_max.pps.max():,.0f} "
             f"packets/s at {dt.capacity_mbps.max():g} Mbit/s).",
             f"- Random loss (no capacity limit): srtt {rnd.srtt.min() * 1000:.1f}–{rnd.srtt.max() * 1000:.1f} ms, at most "
             f"{(rnd.srtt / rnd.base_rtt).max():.2f} × the base RTT.",
             f"- The most any run sent: {top.pps:,.0f} packets/s ({top.emulator_wire_mbps:.0f} Mbit/s on the wire; "
             f"{top.run}); the guest's CPU was at most {runs.cpu_busy.max():.0%} busy.",
             f"- Runs marked `queued`: {int(runs.queued.astype(bool).sum())}."]
    if "no_rate" in controls:
        c = controls["no_rate"]["runs"].iloc[0]
        lines.append(f"- Control `no_rate` ({c.run}, netem without a rate): {c.pps:,.0f} packets/s at a srtt of "
                     f"{c.srtt * 1000:.1f} ms.")
    return "\n".join(lines) + "\n"


def timing(ref: Path) -> str:
    """How long the reference's runs took (runs-manifest.csv), on the host's clock and the guests'."""
    m = pd.read_csv(ref / "runs-manifest.csv")
    m = m[m["run"] != "verify"]
    return (f"{len(m)} runs in {', '.join(sorted(set(m['where'].astype(str))))}: {m.host_wall_s.sum() / 60:.0f} min of "
            f"wall-clock time on the host and {m.guest_s.sum() / 60:.0f} min on the guests' clocks, summed over the runs "
            f"(each run {m.host_wall_s.median():.0f} s on the host, {m.guest_s.median():.0f} s on its guest's clock: median).\n")


def quick() -> str:
    """What `--quick` runs, from experiment.toml's [quick] table (no run is timed here)."""
    from ...run.lab import get_lab  # the lab's parameters, as `mptcplab run` reads them
    p = get_lab("lab3").load_params(quick=True)
    points = len(p["flows"]) * (len(p["random"]["loss"]) + len(p["droptail"]["capacity"])) * p["repetitions"]
    return (f"The quick run: {points} runs of {p['warmup_s'] + p['steady_s']} s each (a {p['warmup_s']} s warm-up, "
            f"then a {p['steady_s']} s window), n = {', '.join(map(str, p['flows']))}, random loss "
            f"{', '.join(p['random']['loss'])}, DropTail {', '.join(p['droptail']['capacity'])}.\n")


def appendix() -> str:
    """Two figures of the equations themselves, computed with the kit's models: what (29) gives at high
    loss without the algorithms' cap on the flows in a timeout, and how far 1 + 32p² is from f(p)."""
    n, p, rtt, t0 = 2, 0.10, 0.06, 0.26
    t = models.per_flow_terms(n, p, rtt, t0)
    r = t["q1"] * t["z"] / (t["x"] * rtt)  # E[nTO] of (24), uncapped
    uncapped = float((1 - r / n) / (p * t["x"] * rtt) + r / (t["z"] * (1 - p)))
    def gap(q: float) -> float:  # relative distance of TFRC's 1 + 32p² from Padhye's f(p)
        return float(abs(1 + 32 * q * q - models.f_poly(q)) / models.f_poly(q))
    small = max(gap(q) for q in np.linspace(0.001, 0.02, 50))
    return (f"- Uncapped, at p = {p:.0%}, n = {n}, RTT {rtt * 1000:.0f} ms, T {t0 * 1000:.0f} ms: E[nTO] = {float(r):.1f} "
            f"flows of {n}, and (29) gives {uncapped:.0f} packets/s.\n"
            f"- 1 + 32p² against f(p): at most {small:.1%} apart up to p = 2%, {gap(0.05):.1%} at p = 5%.\n")


def report_sections(ref: Path) -> dict[str, str]:
    """The committed report cut into its sections (SECTIONS), headings dropped. A section the report
    lacks (a run without controls) says so."""
    found: dict[str, list[str]] = {}
    current = None
    for block in re.split(r"\n\s*\n", (ref / "paper-vs-this-run.md").read_text()):
        block = block.strip("\n")
        key = next((k for k in SECTIONS if block.startswith(k)), None)
        if key is not None:
            current = SECTIONS[key]
        if current is not None and block and not block.startswith("#"):
            found.setdefault(current, []).append(block)
    return {name: "\n\n".join(found.get(name, ["Not in this reference's report."])) + "\n"
            for name in dict.fromkeys(v for v in SECTIONS.values() if v)}
