"""Which place runs a lab under `--where auto`: a pure function over measured check results.

The order, and why (also on the site's UML and VM pages):
1. native, when this kernel has every capability the lab needs *including netem*: nothing
   emulates the kernel, so nothing can distort the measurement, and it is the fastest.
2. otherwise, among the places that offer what the lab needs and whose recorded setup check for
   this lab (or, before the lab has run there, the example's check) *passed*, the one whose check
   took the least wall-clock time: the same work done faster leaves more of the 2 cores to the
   kernel under test. A failed check rules a place out, whatever its speed: a place whose
   measurements break physics is the wrong place, not a slow one.
3. a never-checked UML comes after every passing place (it boots in seconds, and the lab's own
   setup check runs first). A never-checked VM is not picked by `auto`: its first check costs
   minutes under software emulation, and measured here (QEMU TCG, 2 cores) the guest adds ~1-4 ms
   to every RTT (taken out of netem's delay where a path has enough, latency.py; the example's
   0 ms path has none), so a VM must pass a lab's check (or `mptcplab example --where vm`) once first.
Native without netem comes last: only when no place with netem offers the lab's needs or every
such place failed its check (the lab then runs without propagation delay, and says so).
Nothing here probes the machine: the caller passes the capabilities and records (see places.records).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

UNMEASURED_ORDER = ("uml",)  # places auto may try before they have passed a check (see 3.)


@dataclass(frozen=True)
class CheckResult:
    """One place's setup check for one lab (or "example"): what was measured, against what bound.

    `measured` and `bound` are flat {name: number} dicts (e.g. rate_mbps, rtt_ms, and the physics
    check's window-limited goodput bound); `passed` is the check's verdict, `wall_s` how long it
    took on the host's clock, `how` how and when it was measured (command, kernel, date, load).
    """

    place: str
    lab: str
    passed: bool
    wall_s: float
    measured: dict = field(default_factory=dict)
    bound: dict = field(default_factory=dict)
    how: str = ""
    kit: str = ""  # the kit (version and commit) whose checks made this verdict (records.kit_stamp)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "CheckResult":
        return cls(**{k: d[k] for k in ("place", "lab", "passed", "wall_s")},
                   measured=d.get("measured", {}), bound=d.get("bound", {}), how=d.get("how", ""),
                   kit=d.get("kit", ""))


@dataclass(frozen=True)
class Choice:
    place: str | None  # None: no place can run the lab
    why: str


def choose(lab: str, needs: tuple[str, ...], capabilities: dict[str, set[str]],
           records: list[CheckResult]) -> Choice:
    """The place for `lab`. capabilities: {place: what it offers} for the places this host has
    (e.g. {"native": {"tbf", "bpf_struct_ops"}, "uml": {"netem", "tbf"}}); records: check results."""
    native = capabilities.get("native")
    if native is not None and "netem" in native and set(needs) <= native:
        return Choice("native", "this kernel has netem and everything the lab needs")
    # Elsewhere netem is required too: a lab without propagation delay is not the paper's lab.
    wanted = set(needs) | {"netem"}
    able = [p for p, caps in capabilities.items() if p != "native" and wanted <= caps]
    if not able:
        if native is not None and set(needs) <= native:
            return Choice("native", "no place here offers netem with " + (", ".join(needs) or "nothing else")
                          + ": native, without propagation delay")
        return Choice(None, f"no place here offers {', '.join(sorted(wanted))}")
    # The lab's own check beats the example's: it measured this lab's links.
    best: dict[str, CheckResult] = {}
    for r in records:
        if r.place in able and r.lab in (lab, "example"):
            if r.place not in best or (best[r.place].lab == "example" and r.lab == lab):
                best[r.place] = r
    passing = sorted((r for r in best.values() if r.passed), key=lambda r: r.wall_s)
    if passing:
        r = passing[0]
        others = ", ".join(f"{o.place} {o.wall_s:.0f} s" for o in passing[1:])
        return Choice(r.place, f"{r.place} passed the {r.lab} check in {r.wall_s:.0f} s wall-clock"
                      + (f" (also passed: {others})" if others else "") + _failed(best))
    unchecked = [p for p in UNMEASURED_ORDER if p in able and p not in best]
    if unchecked:
        return Choice(unchecked[0], f"{unchecked[0]} offers {', '.join(needs) or 'what the lab needs'} and has "
                      "not been checked yet" + _failed(best))
    untried = "".join(f"; {p} has not passed a check yet (`mptcplab example --where {p}` checks it)"
                      for p in able if p not in best and p not in UNMEASURED_ORDER)
    if native is not None and set(needs) <= native:
        return Choice("native", "no place with netem has passed its check: native, without propagation delay"
                      + _failed(best) + untried)
    return Choice(None, "no place that offers what the lab needs has passed its check" + _failed(best) + untried)


def _failed(best: dict[str, CheckResult]) -> str:
    bad = [r for r in best.values() if not r.passed]
    return "".join(f"; {r.place} failed its {r.lab} check ({_summary(r)})" for r in bad)


def _summary(r: CheckResult) -> str:
    keys = sorted(set(r.measured) & set(r.bound))
    return ", ".join(f"{k} {r.measured[k]:g} vs bound {r.bound[k]:g}" for k in keys) or r.how or "see its run"
