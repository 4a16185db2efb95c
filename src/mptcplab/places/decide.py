"""Which place a lab runs in: `--where auto|<place>` for a lab with these needs. The places are asked
what they offer; `auto` is places.choice.choose over the places this host offers and their
recorded checks."""

from __future__ import annotations

from .. import kernel, log
from ..errors import EnvironmentProblem, UsageError
from . import REGISTRY, all_places, choice, choices, get, inside_guest, records


def decide_where(requested: str, needs: tuple[str, ...] = ("netem",), lab: str = "example") -> str:
    """The name of the place that runs the lab; raises when no place can run it."""
    if requested != "auto" and requested not in REGISTRY:
        raise UsageError(f"--where {requested!r}: choose {choices()}")
    here = next(p for p in all_places() if not p.GUEST)
    if kernel.inside_uml() or inside_guest():
        return here.NAME  # already inside a guest kernel: this *is* the place
    if requested == here.NAME:
        kernel.require_root()  # the first thing to fix, before any capability
        missing = [n for n in needs if not kernel.has(n)]
        if missing:
            others = " or ".join(f"--where {p.NAME}" for p in all_places() if p.GUEST and set(needs) <= p.OFFERS)
            raise EnvironmentProblem(f"this kernel lacks {', '.join(missing)}; run `mptcplab doctor` for the fix"
                                     + (f", or use {others}" if others else ""))
        return here.NAME
    if requested != "auto":
        place = get(requested)
        lacks = set(needs) - place.OFFERS
        if lacks:
            raise EnvironmentProblem(f"this lab cannot run in {place.NAME}: it needs {', '.join(sorted(lacks))}, "
                                     f"which {place.NAME} cannot offer; use "
                                     + " or ".join(f"--where {p.NAME}" for p in all_places()
                                                   if p.GUEST and set(needs) <= p.OFFERS))
        ok, why = place.available()
        if not ok:
            raise EnvironmentProblem(f"no {place.NAME} place here: {why}")
        missing = set(needs) - place.capabilities()
        if missing:
            raise EnvironmentProblem(f"the {place.NAME} place's kernel lacks {', '.join(sorted(missing))}")
        return place.NAME
    if all(kernel.has(n) for n in needs) and kernel.has("netem"):
        return here.NAME  # the fast path of places.choice.choose, without probing the other places
    offered = {here.NAME: {n for n in ("netem", "tbf", "bpf_struct_ops") if kernel.has(n)}}
    for place in all_places():
        if not place.GUEST or not set(needs) <= place.OFFERS:
            continue
        try:
            if place.available()[0]:
                offered[place.NAME] = place.capabilities()
        except EnvironmentProblem as exc:  # a VM that cannot boot is not a place
            log.get().warning("the %s place is unusable: %s", place.NAME, exc)
    picked = choice.choose(lab, tuple(needs), offered, records.load())
    if picked.place is None:
        raise EnvironmentProblem(f"{picked.why}; run `mptcplab doctor` for what to install")
    return picked.place
