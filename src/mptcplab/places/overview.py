"""The places this host offers, in words: `mptcplab doctor`'s "Places to run" section."""

from __future__ import annotations

from . import all_places
from ..core import kernel
from ..core.errors import EnvironmentProblem


def lines() -> list[str]:
    out = []
    for place in all_places():
        name = place.NAME
        ok, why = place.available()
        if not ok:
            out.append(f"  {name:6} not available: {why}")
            continue
        try:
            caps = place.capabilities()
            details = place.describe()
        except EnvironmentProblem as exc:
            out.append(f"  {name:6} unusable: {exc}")
            continue
        out.append(f"  {name:6} offers: " + ", ".join(f"{c} {'yes' if c in caps else 'no'}" for c in kernel.PLACE_CAPABILITIES))
        out += [f"         {d}" for d in details]
    return out
