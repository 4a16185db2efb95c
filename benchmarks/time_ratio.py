"""Benchmark record: each lab's wall time over the time its runs spent transferring, per place.

    .venv/bin/python benchmarks/time_ratio.py build/reproduce [MORE_REPRODUCE_DIRS...]

`mptcplab reproduce` measures, per lab, its wall time (the guest's boot, the setup check, the runs,
the analysis) and the seconds its runs' summaries record of their transfers
(results.transfer_seconds), and writes both with their ratio into `reproduce.json` beside its
report. This script adds those lab entries (labs that ran, whether they passed or failed) to
benchmarks/results/time_ratio.json, once each, and writes time_ratio.md from all of them: one row
per run of a lab, grouped by place and lab. A ratio of 1.0 would be a lab doing nothing but its
transfers; issue 27 asks quick Lab 2 in the VM under software emulation to stay within 2.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
RECORD = HERE / "results" / "time_ratio.json"


def entries(reproduce_dir: Path) -> list[dict]:
    """The lab entries of one reproduce run, each with the run's own facts."""
    rec = json.loads((reproduce_dir / "reproduce.json").read_text())
    run = {k: rec.get(k) for k in ("finished", "quick", "host", "kernel", "cpus", "load_avg_15min")}
    run["commit"] = ((rec.get("git") or {}).get("commit") or "")[:12] + ("+" if (rec.get("git") or {}).get("dirty") else "")
    return [{**run, **lab, "guest_clock": guest_clock(reproduce_dir / (lab["lab"] + ("-quick" if run["quick"] else "")))}
            for lab in rec["labs"] if lab.get("seconds") is not None]


def guest_clock(lab_dir: Path) -> str | None:
    """What the lab's guest clock followed (runs-manifest.csv): a VM's under TCG counts instructions
    since 2026-11-29, and its wall time is another thing than before (vm.TCG_CLOCK)."""
    import csv

    try:
        with open(lab_dir / "runs-manifest.csv", newline="") as f:
            return next((r.get("guest_clock") or None for r in csv.DictReader(f)), None)
    except OSError:
        return None


def table(rows: list[dict]) -> str:
    lines = ["| place | lab | quick | status | wall s | transfers s | ratio | guest's clock | finished (UTC) | commit | host, load (15 min) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["where"] or "", r["lab"], r["finished"])):
        ratio = f"**{r['ratio']:.2f}**" if r.get("ratio") is not None else "-"
        lines.append(f"| {r['where']} | {r['lab']} | {'yes' if r['quick'] else 'no'} | {r['status']} | "
                     f"{r['seconds']:.0f} | {r['transfer_s'] or 0:.0f} | {ratio} | {r.get('guest_clock') or '-'} | {r['finished'][:16]} | "
                     f"`{r['commit']}` | {r['host']} ({r['cpus']} cpus), {r['load_avg_15min']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dirs", nargs="+", type=Path, help="`mptcplab reproduce --out` directories")
    args = ap.parse_args()
    rows = json.loads(RECORD.read_text()) if RECORD.exists() else []
    seen = {(r["finished"], r["host"], r["lab"]) for r in rows}
    for d in args.dirs:
        for e in entries(d):
            if (e["finished"], e["host"], e["lab"]) not in seen:
                rows.append(e)
                seen.add((e["finished"], e["host"], e["lab"]))
    RECORD.write_text(json.dumps(rows, indent=1) + "\n")
    RECORD.with_suffix(".md").write_text(
        "# Time ratio: each lab's wall time over its runs' transfer time, per place\n\n"
        "Written by `benchmarks/time_ratio.py` from `mptcplab reproduce`'s `reproduce.json` (see the script's\n"
        "docstring for what each figure covers). Wall time is the host's; transfer time is each run's own\n"
        "record (`span_s`, else `duration_s`), on the clock of the place it ran in.\n\n" + table(rows) + "\n")
    print(RECORD.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
