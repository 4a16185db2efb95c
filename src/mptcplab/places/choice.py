"""Which place runs a lab under `--where auto`: a pure function over measured check results.

Fidelity first, then speed (also on the site's UML and VM pages):
1. A place *qualifies* for a lab only if it honours the lab's inputs: its kernel offers every
   capability the lab's registration declares (`Lab.needs`: netem for the paths' delays and loss,
   bpf_struct_ops for Lab 2's congestion controls, ...), and its recorded setup check for this
   lab with the lab's own parameters (or, before the lab has run there, the example's check) did
   not fail. A failed check rules a place out, whatever its speed: a place whose measurements
   break physics is the wrong place, not a slow one. The host's kernel without netem does not
   qualify for a lab with delays: it would run without propagation delay, which is not the lab.
2. Among the qualifying places, the fastest: the host's own kernel (rank 0: nothing emulated);
   then the places whose check passed, by its wall-clock time (the same work done faster leaves
   more of the 2 cores to the kernel under test); then the places not yet checked, in the order
   they declare (`Place.RANK`: UML boots in seconds, a VM under software emulation in minutes).
   A place not yet checked runs the lab's own setup check first, which refuses the lab if the
   place breaks physics.
3. No qualifying place: the lab cannot run here, and the reason names what each place lacks.
A check made with `--set` parameters speaks only for those parameters, never for the default lab.
Nothing here probes the machine: the caller passes the capabilities, records and place facts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass(frozen=True)
class CheckResult:
    """One place's setup check for one lab (or "example"): what was measured, against what bound.

    `measured` and `bound` are flat {name: number} dicts (e.g. rate_mbps, rtt_ms, and the physics
    check's window-limited goodput bound); `passed` is the check's verdict, `wall_s` how long it
    took on the host's clock, `how` how and when it was measured (command, kernel, date, load);
    `params` the `--set` overrides it ran with (records.params_key; "" for the lab as shipped).
    """

    place: str
    lab: str
    passed: bool
    wall_s: float
    measured: dict = field(default_factory=dict)
    bound: dict = field(default_factory=dict)
    how: str = ""
    kit: str = ""  # the kit (version and commit) whose checks made this verdict (records.kit_stamp)
    params: str = ""

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "CheckResult":
        return cls(**{k: d[k] for k in ("place", "lab", "passed", "wall_s")},
                   measured=d.get("measured", {}), bound=d.get("bound", {}), how=d.get("how", ""),
                   kit=d.get("kit", ""), params=d.get("params", ""))


@dataclass(frozen=True)
class Facts:
    """What a place declares about itself for the choice: its speed rank among places not yet
    measured (0: the host's own kernel, nothing emulated) and what running there costs, in words."""

    rank: int
    cost: str = ""


@dataclass(frozen=True)
class Choice:
    place: str | None  # None: no place can run the lab
    why: str


def choose(lab: str, needs: tuple[str, ...], capabilities: dict[str, set[str]],
           records: list[CheckResult], facts: dict[str, Facts] | None = None) -> Choice:
    """The place for `lab`. capabilities: {place: what it offers} for the places this host has
    (e.g. {"native": {"tbf", "bpf_struct_ops"}, "uml": {"netem", "tbf"}}); records: check results;
    facts: {place: Facts} (default: ranked in the order of `capabilities`, no cost stated)."""
    facts = facts or {p: Facts(rank=i) for i, p in enumerate(capabilities)}
    wanted = set(needs)
    lacking = {p: sorted(wanted - caps) for p, caps in capabilities.items() if not wanted <= caps}
    able = [p for p in capabilities if p not in lacking]
    # The lab's own check beats the example's: it measured this lab's links. Only checks of the
    # lab as shipped count (a run with --set checked other links).
    best: dict[str, CheckResult] = {}
    for r in records:
        if r.place in able and r.lab in (lab, "example") and not r.params:
            if r.place not in best or (best[r.place].lab == "example" and r.lab == lab):
                best[r.place] = r
    failed = {p for p, r in best.items() if not r.passed}
    qualified = [p for p in able if p not in failed]
    lacks = "; ".join(f"{p} lacks {', '.join(m)}" for p, m in lacking.items())
    if not qualified:
        return Choice(None, f"no place here honours {lab}'s inputs ({', '.join(sorted(wanted)) or 'nothing'})"
                      + (f": {lacks}" if lacks else "") + _failed(best, lab))

    unknown = Facts(rank=len(capabilities))  # a place that declared nothing: last

    def order(p: str):
        rank = facts.get(p, unknown).rank
        if rank == 0:
            return (0, 0.0)
        return (1, best[p].wall_s) if p in best else (2, float(rank))

    pick = min(qualified, key=order)
    if facts.get(pick, unknown).rank == 0:
        why = f"this kernel has everything {lab} needs ({', '.join(sorted(wanted)) or 'nothing special'})"
    elif pick in best:
        others = ", ".join(f"{p} {best[p].wall_s:.0f} s" for p in qualified if p != pick and p in best)
        why = (f"{pick} passed the {best[pick].lab} check in {best[pick].wall_s:.0f} s wall-clock"
               + (f" (also passed: {others})" if others else ""))
    else:
        why = f"{pick} offers {', '.join(sorted(wanted)) or 'what the lab needs'} and has not been checked yet"
    if lacks:
        why += f"; {lacks}"
    cost = facts.get(pick, unknown).cost
    return Choice(pick, why + _failed(best, lab) + (f". It costs: {cost}" if cost else ""))


def _failed(best: dict[str, CheckResult], lab: str) -> str:
    bad = [r for r in best.values() if not r.passed]
    return "".join(f"; {r.place} failed its {r.lab} check ({_summary(r)}): " + recheck_hint(r.lab, r.place)
                   for r in bad)


def recheck_hint(lab: str, place: str) -> str:
    """How to check a place again after a recorded failure (the record is replaced by the new check)."""
    if lab == "example":
        return f"`mptcplab example --where {place}` checks it again"
    return f"`mptcplab run {lab} --recheck` checks it again"


def _summary(r: CheckResult) -> str:
    keys = sorted(set(r.measured) & set(r.bound))
    return ", ".join(f"{k} {r.measured[k]:g} vs bound {r.bound[k]:g}" for k in keys) or r.how or "see its run"
