"""Benchmark: where a sweep's wall-clock time goes, run by run, against its transfer time.

    sudo mptcplab -v run lab2 --quick --where vm --out /tmp/l2 --set 'algorithms=["cs218"]' \
        --set 'variants=["static"]' --set repetitions=2 --set fairness.repetitions=1
    .venv/bin/python benchmarks/vm_run_overhead.py /tmp/l2 [more sweeps...] [--markdown]

Per run: wall seconds (manifest started -> finished), transfer seconds (summary span_s: first to
last byte at the receiver; the fairness runs' flows over their common span), their ratio, and the
steps of manifest["timings"] (RunDir.timed). The setup check (`verify`) has no transfer of its
own to compare with; its steps say where its time went. Results: benchmarks/results/vm_run_overhead.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path

from mptcplab.run.results import transfer_s


def _epoch(iso: str) -> float:
    return dt.datetime.fromisoformat(iso).timestamp()


def rows(sweep: Path) -> list[dict]:
    out = []
    for d in sorted(p for p in sweep.iterdir() if (p / "manifest.json").exists() and (p / "summary.json").exists()):
        m, s = json.loads((d / "manifest.json").read_text()), json.loads((d / "summary.json").read_text())
        wall = _epoch(m["finished"]) - _epoch(m["started"])
        span = transfer_s(s)
        out.append({"sweep": sweep.name, "run": d.name, "started": m["started"], "wall_s": round(wall, 1),
                    "transfer_s": None if span is None else round(span, 3), "ratio": round(wall / span, 2) if span else None,
                    "timings": m.get("timings", {})})
    return sorted(out, key=lambda r: r["started"])


def markdown(all_rows: list[dict]) -> str:
    lines = ["| sweep | run | wall s | transfer s | wall / transfer | steps (s) |", "|---|---|---|---|---|---|"]
    for r in all_rows:
        steps = ", ".join(f"{k} {v:.1f}" for k, v in sorted(r["timings"].items(), key=lambda kv: -kv[1]) if v >= 0.1)
        lines.append(f"| {r['sweep']} | {r['run']} | {r['wall_s']:.1f} | {r['transfer_s'] or '':} | "
                     f"{r['ratio'] or ''} | {steps} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("sweeps", nargs="+", type=Path)
    p.add_argument("--markdown", action="store_true")
    a = p.parse_args()
    all_rows = [r for s in a.sweeps for r in rows(s)]
    if a.markdown:
        print(markdown(all_rows), end="")
        return
    for r in all_rows:
        print(json.dumps(r))


if __name__ == "__main__":
    main()
