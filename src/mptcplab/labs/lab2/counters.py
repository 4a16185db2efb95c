"""Lab 2 analysis: the BPF programs' own counters, summed over runs and set beside the recorded
callbacks."""

from __future__ import annotations

import pandas as pd


def sum_counters(per_run: dict[str, list[dict]]) -> dict[str, dict]:
    """Per program, its runs' counters summed, with how many runs they are (`runs`)."""
    return {name: {**{k: sum(r.get(k, 0) for r in rows) for k in sorted({k for r in rows for k in r})},
                   "runs": len(rows)} for name, rows in per_run.items()}


def bpf_counters(man: dict) -> pd.DataFrame | None:
    """The BPF programs' own counters summed over the runs that used them (ACKs in congestion
    avoidance, of them with sibling subflows and with the delay window, losses, sockets; `runs`),
    one row per program, or None when there are none or they did not count what ran (all zero
    while the runs used the programs). Each run reads its program's counters before and after
    itself (experiment.bpf_counted). The 2026-11 reference, made before that, read them once per
    `run` command and shows zero for all five: see experiment.bpf_counted."""
    counters = man.get("bpf_counters") or {}
    if not counters:
        return None
    ran = sum(v.get("events", 0) for v in (man.get("bpf_vs_reference") or {}).values())
    ran = ran or (man.get("runs") or 0) + (man.get("fairness_runs") or 0)  # every run used the programs
    if ran and not any(v for c in counters.values() for k, v in c.items() if k != "runs"):
        return None
    return pd.DataFrame(counters).T


def counted_vs_recorded(checked: dict) -> str:
    """The programs' own counters beside the callbacks recorded in the same runs (runs since each
    run reads its counters, experiment.bpf_counted): two independent counts of what ran."""
    both = [v for v in checked.values() if v.get("counted")]
    if not both:
        return ""
    total = {k: sum(v["counted"].get(k, 0) for v in both) for k in ("acks", "losses", "sockets")}
    seen = {k: sum(v.get(k, 0) for v in both) for k in ("acks_congestion_avoidance", "losses", "subflows")}
    return (f" In those {len(both)} runs the programs' own counters read {total['acks']} congestion-avoidance "
            f"ACKs, {total['losses']} losses and {total['sockets']} sockets; the recorded callbacks "
            f"{seen['acks_congestion_avoidance']}, {seen['losses']} and {seen['subflows']}.")
