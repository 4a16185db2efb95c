"""Lab 3 analysis: what held the `queued` random-loss runs (a rate left on the path?), and what
the no_rate control measured without it."""

from __future__ import annotations

import pandas as pd

from ...net.links import WIRE_BYTES, LinkSpec
from .controls import data_netem


def setup_check_rate(manifest: dict) -> float | None:
    """The rate (bit/s) the setup check gave the path, from the results' manifest, if any."""
    for p in (manifest.get("network") or {}).get("paths") or []:
        link = LinkSpec.parse(p.get("link", ""))
        if link.rate_bps:
            return link.rate_bps
    return None


def rate_cause(queued: pd.DataFrame, manifest: dict, control: dict | None) -> str:
    """The cause cell of the queued random-loss runs: 'cause measured' when the emulator sent them
    at the setup check's rate (within 1%), a rate `tc qdisc replace` left on the path before the kit
    replaced a netem qdisc that loses its rate (topology._link_cmds); the no_rate control, if run,
    says what the path carried without it."""
    rate = setup_check_rate(manifest)
    wire = queued.emulator_wire_mbps.dropna() * 1e6
    if rate is None or wire.empty or not ((wire - rate).abs() <= 0.01 * rate).mean() >= 0.5:
        return ("unexplained, tried: comparing the emulator's wire rate with the links' rates. Runnable: the "
                "same points again (experiment.toml, no_rate)")
    text = (f"cause measured: the setup check's {rate / 1e6:g} Mbit/s netem rate stayed on the path "
            f"({rate / 8 / WIRE_BYTES:,.0f} full-size packets/s), not the place. netem_change() sets a rate only "
            "from TCA_NETEM_RATE, which tc sends only with `rate`, so `tc qdisc replace` with the random-loss link "
            "kept it (a UML run's manifest lists `netem ... delay 30ms loss 2% rate 20Mbit` for the link "
            "`delay=30ms,loss=2%`); every random-loss run of these results ran behind it, those below it with its "
            "queue in their RTT (which the models are fed). The kit now gives such a link a new qdisc")
    if control is not None:
        c = control["runs"]
        c = c[c.scenario == "random"]
        if len(c):
            rm = control["runs_manifest"]
            rm = rm[rm.run.isin(c.run)] if "run" in rm else rm  # its measured runs (not the setup check)
            said = "; ".join(f"loss {t.loss_cfg}, n = {t.n}: {t.pps:,.0f} packets/s, srtt {t.srtt * 1e3:.1f} ms, "
                             f"{'queued' if t.queued else 'not queued'}" for t in c.itertuples())
            rated = sum("rate" in q for q in rm.get("qdiscs", pd.Series(dtype=str)).dropna().map(data_netem))
            text += (f". With it (control no_rate, {len(c)} run(s) in {', '.join(sorted(set(rm['where'].dropna())))}"
                     f", {rated} with a rate on the data direction): {said}")
    return text
