"""Lab 3 analysis: each way a run departs from the paper, with its cause as measured by a control
or what was tried."""

from __future__ import annotations

import pandas as pd

from .ack_ratio import ack_ratio_row
from .fit import padhye_vs_model1
from .queued import rate_cause
from .recovery import recovery_cause


def divergences(r: pd.DataFrame, controls: dict | None = None, manifest: dict | None = None,
                runs_manifest: pd.DataFrame | None = None) -> list[tuple[str, str, str]]:
    """(divergence, this run's figures, cause) for each way this run departs from the paper: Fig.
    16's ranking where the Holm-corrected comparison resolves it against the paper (with the
    reno_recovery control's result if it was run), and the queued random-loss runs (with what held
    them)."""
    controls = controls or {}
    rows = []
    pm = padhye_vs_model1(r)
    against = pm[pm.verdict == "n × Padhye closer"]
    if len(against):
        rows.append(("n × Padhye(p) closer to the measurement than model 1 (the paper's Fig. 16: model 1 closer)",
                     "; ".join(f"{t.runs}: |error| {t.n_pftk_p:.0%} vs {t.model1:.0%}" for t in against.itertuples()),
                     recovery_cause(r, controls.get("reno_recovery"), controls.get("linux_recovery"))))
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
