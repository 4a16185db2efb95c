"""Benchmark record: does a sweep split in two shards run at once (one UML kernel per core) measure
what one shard at a time measures? Lab 3's DropTail runs paired by run key between two sweeps.

    .venv/bin/python benchmarks/uml_two_at_once.py NEW_RUNS_CSV OLD_RUNS_CSV > benchmarks/results/uml_two_at_once.md

Each quantity's paired difference (new - old) with its interval, Holm-corrected over the family
(mptcplab.judge.stats: the kit's one computation of a paired verdict). DropTail only: the random-loss runs
of the older sweeps ran behind a leftover 20 Mbit/s rate (see Lab 3's report), so they measured
something else.
"""

from __future__ import annotations

import sys

import pandas as pd

from mptcplab.judge import stats

QUANTITIES = [  # column, label, scale for printing, unit
    ("fill", "goodput / capacity", 100, "points"),
    ("p_r", "packet loss rate p_r", 100, "points"),
    ("srtt", "srtt", 1000, "ms"),
    ("err_model1", "model 1's error", 100, "points"),
    ("err_model2", "model 2's error", 100, "points"),
    ("err_n_pftk_p", "n x Padhye(p)'s error", 100, "points"),
]


def droptail(path: str) -> pd.DataFrame:
    r = pd.read_csv(path)
    r = r[r.scenario == "droptail"].set_index("run")
    return r.assign(fill=r.mbps / r.capacity_mbps)


def main(new_csv: str, old_csv: str) -> None:
    new, old = droptail(new_csv), droptail(old_csv)
    family = stats.holm(stats.paired(new[c], old[c]) for c, *_ in QUANTITIES)
    print(f"DropTail runs paired by key: {family[0]['pairs']} (new: {new_csv}; old: {old_csv})\n")
    print("| quantity | new (median) | old (median) | new - old (mean) | corrected interval | verdict | pairs to resolve |")
    print("|---|---|---|---|---|---|---|")
    for (col, label, scale, unit), st in zip(QUANTITIES, family):
        print(f"| {label} | {new[col].median() * scale:.2f} | {old[col].median() * scale:.2f} | "
              f"{st['diff'] * scale:+.2f} {unit} | [{st['lo'] * scale:+.2f}, {st['hi'] * scale:+.2f}] "
              f"({st['level']:.1%}) | {stats.verdict(st, 'new higher', 'new lower')} | "
              f"{stats.fmt_runs(st['runs_needed']) if not st['resolved'] else '-'} |")


if __name__ == "__main__":
    main(*sys.argv[1:3])
