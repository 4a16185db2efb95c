"""No goodput above its link's ceiling anywhere a student reads one: the committed references'
tables (what the notebooks load), their reports and the solution notebooks' outputs.

The tables are judged as `mptcplab check` judges them, by the functions each lab names for its tables
(`Lab.judging.results_checks`: every MPTCP run against its paths, Lab 3's runs against their bottleneck,
Lab 2's fairness runs against the shared path). The texts
are scanned for the two ways a goodput is set beside its ceiling in words: "N% of the ceiling /
of the link" and a physics verdict line "measured X Mbit/s, bound Y Mbit/s". The setup checks
recorded inside the manifests are judged by `mptcplab check` too but are not read by students; a
reference recorded before a measurement fix is reported there (see the lab's guide).
"""

import json
import re

import pytest

from mptcplab.judge import physics
from mptcplab.run.lab import REPO_ROOT, all_labs

RESULTS = REPO_ROOT / "solutions" / "results"
PERCENT = re.compile(r"(\d+(?:\.\d+)?)\s*% of the (?:ceiling|link)")
VERDICT = re.compile(r"measured ([\d.,]+) Mbit/s, bound ([\d.,]+) Mbit/s \(within\)[^\n\"]*ceiling")


def _texts():
    for report in sorted(RESULTS.glob("*/paper-vs-this-run.md")):
        yield str(report.relative_to(REPO_ROOT)), report.read_text()
    for nb in sorted((REPO_ROOT / "solutions").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        for i, c in enumerate(cells):
            for out in c.get("outputs", []):
                text = "".join(out.get("text", "")) + json.dumps(out.get("data", {}))
                yield f"{nb.name} cell {i}", text


def over_the_ceiling(text: str) -> list[str]:
    """The phrases of `text` that set a goodput above its ceiling."""
    bad = [m.group(0) for m in PERCENT.finditer(text) if float(m.group(1)) > physics.allowed(100)]
    for m in VERDICT.finditer(text):
        measured, bound = (float(x.replace(",", "")) for x in m.groups())
        if measured > physics.allowed(bound):
            bad.append(m.group(0)[:120])
    return bad


def test_the_scan_finds_what_it_looks_for():
    assert over_the_ceiling("TCP 5.2 Mbit/s after slow start, 108.7% of the link") == ["108.7% of the link"]
    assert over_the_ceiling("measured 99.19 Mbit/s, bound 95.64 Mbit/s (within); 103.7% of the ceiling")
    assert not over_the_ceiling("TCP 4.7 Mbit/s, 99.9% of the link; measured 4.7 Mbit/s, bound 4.78 Mbit/s (within)")


@pytest.mark.parametrize("where,text", list(_texts()), ids=lambda x: x if len(x) < 60 else None)
def test_no_report_or_notebook_output_shows_a_goodput_above_its_ceiling(where, text):
    assert not over_the_ceiling(text), f"{where}: {over_the_ceiling(text)}"


@pytest.mark.parametrize("lab", [p.name for p in sorted(RESULTS.iterdir()) if p.is_dir()])
def test_every_reference_table_is_within_its_ceilings(lab):
    verdicts = []
    for spec in all_labs().values():  # each lab's tables, judged by the functions it names
        for name, judge in spec.judging.results_checks.items():
            for table in sorted((RESULTS / lab).rglob(name)):
                verdicts += judge(table)
    assert verdicts, f"no table of {lab} judged"
    outside = [v.line() for v in verdicts if not v.ok and "ceiling" in v.check]
    assert not outside, f"{len(outside)} goodputs above their ceiling in {lab}: {outside[:5]}"
