"""`mptcplab run LAB [--quick] [--where auto|native|uml]`: run a lab's experiment for real."""

from __future__ import annotations

from pathlib import Path

from ..lab import all_labs
from ..runner import run_lab


def register(sub) -> None:
    p = sub.add_parser("run", help="run a lab's experiment (resumable; results with manifests)")
    p.add_argument("lab", help=f"which lab: {', '.join(all_labs()) or 'lab1, lab2, lab3'}")
    p.add_argument("--quick", action="store_true", help="the short version (fewer points, shorter runs; for CI)")
    p.add_argument("--where", default="auto", help="auto (native when netem works, else UML), native, or uml")
    p.add_argument("--out", type=Path, default=None, help="results directory (default: results/LAB[-quick])")
    p.add_argument("--fresh", action="store_true", help="discard earlier results in --out instead of resuming")
    p.set_defaults(func=lambda a: run_lab(a.lab, a.quick, a.where, a.out, a.fresh))
