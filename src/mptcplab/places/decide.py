"""Which place a lab runs in: `--where auto|<place>` for a lab with these needs. The places are asked
what they offer and what they cost; `auto` is places.choice.choose over the places this host
offers and their recorded checks, and says its reason once (`decide` returns it)."""

from __future__ import annotations

from . import REGISTRY, all_places, choice, choices, get, inside_guest, records
from ..core import kernel, log
from ..core.errors import EnvironmentProblem, UsageError


def decide(requested: str, needs: tuple[str, ...] = ("netem",), lab: str = "example") -> choice.Choice:
    """The place that runs the lab and why; raises when no place can run it."""
    if requested != "auto" and requested not in REGISTRY:
        raise UsageError(f"--where {requested!r}: choose {choices()}")
    here = next(p for p in all_places() if not p.GUEST)
    if kernel.inside_uml() or inside_guest():
        return choice.Choice(here.NAME, "already inside the place")  # this *is* the place
    if requested == here.NAME:
        kernel.require_root()  # the first thing to fix, before any capability
        missing = [n for n in needs if not kernel.has(n)]
        if missing:
            others = " or ".join(f"--where {p.NAME}" for p in all_places() if p.GUEST and set(needs) <= p.OFFERS)
            raise EnvironmentProblem(f"this kernel lacks {', '.join(missing)}; run `mptcplab doctor` for the fix"
                                     + (f", or use {others}" if others else ""))
        return choice.Choice(here.NAME, "asked for with --where")
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
        return choice.Choice(place.NAME, "asked for with --where")
    offered = {here.NAME: here.capabilities()}
    if set(needs) <= offered[here.NAME] and not any(r.place == here.NAME and r.lab == lab and not r.passed
                                                    and not r.params for r in records.load()):
        # The fast path of places.choice.choose, without probing the other places.
        return choice.choose(lab, tuple(needs), offered, [], {here.NAME: _facts(here)})
    for place in all_places():
        if place.GUEST and not set(needs) <= place.OFFERS:
            offered[place.NAME] = set(place.OFFERS)  # what it lacks is declared: nothing to probe
        if not place.GUEST or not set(needs) <= place.OFFERS:
            continue
        try:
            if place.available()[0]:
                offered[place.NAME] = place.capabilities()
        except EnvironmentProblem as exc:  # a VM that cannot boot is not a place
            log.get().warning("the %s place is unusable: %s", place.NAME, exc)
    picked = choice.choose(lab, tuple(needs), offered, records.load(),
                           {p.NAME: _facts(p) for p in all_places() if p.NAME in offered})
    if picked.place is None:
        raise EnvironmentProblem(f"{picked.why}; run `mptcplab doctor` for what to install")
    return picked


def _facts(place) -> choice.Facts:
    return choice.Facts(rank=place.RANK, cost=place.cost())
