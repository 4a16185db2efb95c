"""Lab 3 analysis: each way a run departs from the paper. A claim of the ledger (labs/lab3/claims.py)
that does not hold is a row with the ledger's own verdict, cause and controls, read from the
claims.json judged on the same tables, so the table and the ledger cannot disagree; the departures
of the setup from the models' assumptions that no claim decides (the ACK ratio, runs the place
limited) follow, each with the cause its control measured or what was tried."""

from __future__ import annotations

import pandas as pd

from ...judge.claims import FAILS, HOLDS, UNMEASURED, interval_text
from .ack_ratio import ack_ratio_row
from .fit import padhye_vs_model1
from .queued import rate_cause
from .recovery import timeouts_tried

# A claim's divergence in words, where the claim's statement reads poorly as one.
DIVERGES = {"fig16": "n × Padhye(p) closer to the measurement than model 1 (the paper's Fig. 16: model 1 closer)"}


def _interval(c: dict) -> str:
    iv = c.get("interval")
    return f", corrected interval {interval_text(iv)}" if iv else ""


def _controls(c: dict) -> str:
    """The claim's controls the ledger did not find to be its cause, a sentence each (verdict, runs
    needed, its note), then the ones this run has no runs for."""
    said = [f". {k['control']}: {k['status']}" + (f", {k['runs_needed']} runs needed" if k.get("runs_needed") else "")
            + (f"; {k['note']}{_interval(k)}" if k.get("note") else "")
            for k in c.get("causes", []) if k["status"] not in (HOLDS, UNMEASURED)]
    absent = [k["control"] for k in c.get("causes", []) if k["status"] == UNMEASURED]
    return "".join(said) + (f". Not measured by this run: {', '.join(absent)} (experiment.toml says how to run "
                            "each)" if absent else "")


def ledger_rows(r: pd.DataFrame, claims: dict | None) -> list[tuple[str, str, str]]:
    """(divergence, this run's figures, cause) for each claim of claims.json that does not hold: the
    ledger's figures and cause, its controls' verdicts; Fig. 16's with its groups and the computations
    made on the same runs (not controls)."""
    rows = []
    for c in (claims or {}).get("claims", []):
        if c["status"] != FAILS:
            continue
        figures = c.get("note", "") + _interval(c)
        cause = (c.get("cause") or "not tested") + _controls(c)
        if c["id"] == "fig16":
            pm = padhye_vs_model1(r)
            against = pm[pm.verdict == "n × Padhye closer"]
            if len(against):
                figures += "; groups where n × Padhye came closer: " + "; ".join(
                    f"{t.runs}: |error| {t.n_pftk_p:.0%} vs {t.model1:.0%}" for t in against.itertuples())
            cause += f". Computed on the same runs, not a control: {timeouts_tried(r)}"
        rows.append((DIVERGES.get(c["id"], f"{c['statement']} ({c['source']}): does not hold"), figures, cause))
    return rows


def divergences(r: pd.DataFrame, controls: dict | None = None, manifest: dict | None = None,
                runs_manifest: pd.DataFrame | None = None, claims: dict | None = None) -> list[tuple[str, str, str]]:
    """(divergence, this run's figures, cause) for each way this run departs from the paper: the
    ledger's claims that do not hold (`claims`: the claims.json judged on these tables; none without
    it), the ACK ratio against the models' delayed-ACK 2, and the queued random-loss runs (with what
    held them)."""
    controls = controls or {}
    rows = ledger_rows(r, claims)
    ack = ack_ratio_row(r, controls, runs_manifest)
    if ack:
        rows.append(ack)
    queued = r[r.queued.astype(bool) & (r.scenario == "random")]
    if len(queued):
        rows.append((f"{len(queued)} random-loss runs queued, not limited by the loss alone (excluded from the bands)",
                     f"their packet rates bunch at {queued.pps.min():,.0f}–{queued.pps.max():,.0f} packets/s whatever "
                     f"n ({int(queued.n.min())}–{int(queued.n.max())}) and loss, with RTTs up to "
                     f"{queued.rtt.max() / queued.base_rtt.max():.0f}× the base; the emulator sent "
                     f"{queued.emulator_wire_mbps.min():.2f}–{queued.emulator_wire_mbps.max():.2f} Mbit/s on the wire",
                     rate_cause(queued, manifest or {}, controls.get("no_rate"))))
    return rows
