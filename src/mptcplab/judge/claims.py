"""Claims as data: each paper's claims a lab tests, evaluated on a run's tables.

A lab's ledger (`labs/labN/claims.py`) is a tuple of `Claim`s and a `tables(results_dir)` loader.
A claim decides itself over the tables (`decide(tables) -> Verdict`). A claim that rests on a
comparison (stats.paired / welch / log_ratio / between) hands it over uncorrected with the sign the
paper expects (`Verdict.tested`); `evaluate` corrects the lab's whole family at once with
`stats.holm` (every claim's and every control's comparison: one family per lab, as the reports do)
and only then says "holds", "does not hold" or "not resolved" (with the runs that would resolve
it). A claim decided otherwise (e.g. a fit's error against a bound) keeps the status it gave.

A claim that does not hold names the candidate causes of the divergence its `Control`s test:
each control reads the runs that manipulated that cause, "holds" meaning the manipulation moved
the outcome (the cause is measured), "does not hold" that it did not, "not measured" that the
control's runs are absent.

`write(lab, out)` evaluates a lab's ledger on a sweep (or a reference copy) and writes
`claims.json` beside its tables; `summary_line` and `markdown` are how `reproduce`, report.html and
the labs' reports say what held.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from . import stats

HOLDS, FAILS, UNRESOLVED, UNMEASURED = "holds", "does not hold", "not resolved", "not measured"
STATUSES = (HOLDS, FAILS, UNRESOLVED, UNMEASURED)
FILE = "claims.json"
LESS, GREATER = "less", "greater"  # the sign of the difference the paper expects


@dataclass(frozen=True)
class Verdict:
    status: str  # one of STATUSES
    numbers: dict = field(default_factory=dict)  # name -> the value the verdict rests on (rounded for reading)
    interval: tuple[float, float] | None = None  # the decisive difference's interval (Holm-corrected once evaluated)
    runs_needed: float | None = None  # runs (per side) that would resolve a "not resolved"
    note: str = ""  # what was compared, in words; for "not measured": which points are missing
    comparison: dict | None = None  # an uncorrected stats comparison, for evaluate's Holm family
    expect: str | None = None  # LESS or GREATER: the sign of comparison["diff"] the claim needs

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"verdict status {self.status!r}: one of {', '.join(STATUSES)}")
        if self.comparison is not None and self.expect not in (LESS, GREATER):
            raise ValueError(f"a verdict on a comparison says which sign the claim needs ({LESS!r} or {GREATER!r})")

    @classmethod
    def tested(cls, comparison: dict, expect: str, numbers: dict | None = None, note: str = "") -> "Verdict":
        """A verdict on `comparison` (uncorrected): its status is provisional until `evaluate`
        corrects the family it belongs to."""
        return cls(_status(comparison, expect), numbers or {}, _interval(comparison),
                   _runs(comparison.get("runs_needed")), note, comparison, expect)

    @classmethod
    def missing(cls, what: str) -> "Verdict":
        return cls(UNMEASURED, note=what)


@dataclass(frozen=True)
class Control:
    id: str
    cause: str  # the candidate cause of a divergence, in words
    decide: Callable[[dict], Verdict]  # HOLDS: manipulating the cause moved the outcome


@dataclass(frozen=True)
class Claim:
    id: str
    statement: str  # the paper's words, short
    paper_value: str  # its number, as text
    source: str  # "Fig. 3, p. 4"
    predicate: str  # in words: what decides it over a run's tables
    decide: Callable[[dict], Verdict]
    controls: tuple[Control, ...] = ()


def _status(st: dict, expect: str) -> str:
    """HOLDS / FAILS / UNRESOLVED of a comparison: corrected (from stats.holm) or not yet."""
    if "p_holm" in st:
        resolved = st["resolved"]  # None: too few runs for an interval
    else:
        resolved = st["p"] < stats.ALPHA if st.get("p") == st.get("p") else None
    if not resolved:
        return UNRESOLVED
    return HOLDS if (st["diff"] < 0) == (expect == LESS) else FAILS


def _interval(st: dict) -> tuple[float, float] | None:
    lo, hi = st.get("lo", math.nan), st.get("hi", math.nan)
    return (float(lo), float(hi)) if lo == lo and hi == hi else None


def _runs(n) -> float | None:
    return None if n is None or n != n else float(n)


def _safe(decide: Callable[[dict], Verdict], tables: dict) -> Verdict:
    """A decision over tables that lack its points is "not measured", saying which."""
    try:
        return decide(tables)
    except KeyError as exc:
        return Verdict.missing(f"the run lacks {exc.args[0]!r}")


def _corrected(verdicts: list[Verdict], alpha: float) -> list[Verdict]:
    """The verdicts resting on a comparison, judged again after Holm over all of them."""
    tested = [i for i, v in enumerate(verdicts) if v.comparison is not None and v.status != UNMEASURED]
    family = stats.holm([verdicts[i].comparison for i in tested], alpha=alpha)
    out = list(verdicts)
    for i, st in zip(tested, family):
        v = verdicts[i]
        out[i] = replace(v, status=_status(st, v.expect), interval=_interval(st),
                         runs_needed=_runs(st.get("runs_needed")) if not st.get("resolved") else None,
                         comparison=st)
    return out


def evaluate(claims: tuple[Claim, ...], tables: dict, alpha: float = stats.ALPHA) -> list[dict]:
    """Every claim (and its controls) decided over `tables`, the comparisons corrected as one family;
    one JSON-ready record per claim."""
    decided = [_safe(c.decide, tables) for c in claims]
    controls = [(i, k, _safe(k.decide, tables)) for i, c in enumerate(claims) for k in c.controls]
    corrected = _corrected(decided + [v for _, _, v in controls], alpha)
    verdicts, control_verdicts = corrected[:len(claims)], corrected[len(claims):]
    m = sum(1 for v in corrected if v.comparison is not None and v.status != UNMEASURED)
    out = []
    for i, (claim, v) in enumerate(zip(claims, verdicts)):
        mine = [(k, cv) for (j, k, _), cv in zip(controls, control_verdicts) if j == i]
        out.append({"id": claim.id, "statement": claim.statement, "paper_value": claim.paper_value,
                    "source": claim.source, "predicate": claim.predicate, **_record(v, m),
                    "causes": [{"control": k.id, "cause": k.cause, **_record(cv, m)} for k, cv in mine],
                    "cause": cause_summary(v.status, mine), "cause_short": cause_summary(v.status, mine, short=True)})
    return out


def _record(v: Verdict, m: int) -> dict:
    st = v.comparison or {}
    return {"status": v.status, "numbers": _json(v.numbers), "note": v.note,
            "interval": [_round(x) for x in v.interval] if v.interval else None,
            "level": _round(st["level"]) if "p_holm" in st and st.get("level") == st.get("level") else None,
            "p": _round(st.get("p")), "p_holm": _round(st.get("p_holm")) if "p_holm" in st else None,
            "family": m if "p_holm" in st else None,
            "runs_needed": (None if v.runs_needed is None else "> %d" % stats.RUNS_LIMIT if math.isinf(v.runs_needed)
                            else int(v.runs_needed))}


def _round(x, digits: int = 4):
    if x is None or isinstance(x, float) and x != x:
        return None
    return float(f"{float(x):.{digits}g}")


def _json(numbers: dict) -> dict:
    return {k: _round(v) if isinstance(v, float) else v for k, v in numbers.items()}


def cause_summary(status: str, controls: list[tuple[Control, Verdict]], short: bool = False) -> str:
    """For a claim that does not hold: which tested cause explains the divergence, or that none did
    (`short`: the controls' names only, for one-line summaries)."""
    if status != FAILS:
        return ""
    measured = [(k, v) for k, v in controls if v.status == HOLDS]
    if measured:
        if short:
            return "cause measured by " + ", ".join(k.id for k, _ in measured)
        return "; ".join(f"cause measured by {k.id}: {k.cause}" + (f"; {v.note}" if v.note else "")
                         + (f", corrected interval {interval_text(v.interval)}" if v.interval else "")
                         for k, v in measured)
    tried = [k.id for k, v in controls if v.status != UNMEASURED]
    return f"unexplained, tried: {', '.join(tried)}" if tried else "not tested"


def interval_text(iv) -> str:
    """A corrected interval as the ledger's words give it (claims.json's `interval`)."""
    return f"{iv[0]:.3g}..{iv[1]:.3g}"


def document(lab, out: Path) -> dict | None:
    """claims.json's content for a lab's results folder, or None for a lab without a ledger
    (Lab.judging.claims)."""
    module = lab.judging.claims
    return None if module is None else _document(lab.id, module, out)


def _document(lab_id: str, module, out: Path) -> dict:
    """The ledger `module` (its CLAIMS, and `tables(results_dir)`) decided on `out`. Tables that
    cannot be loaded make every claim "not measured", saying why."""
    claims = tuple(module.CLAIMS)
    try:
        tables = module.tables(Path(out))
    except (OSError, ValueError, KeyError) as exc:
        records = [{"id": c.id, "statement": c.statement, "paper_value": c.paper_value, "source": c.source,
                    "predicate": c.predicate, **_record(Verdict.missing(f"tables unreadable: {exc}"), 0),
                    "causes": [], "cause": "", "cause_short": ""} for c in claims]
    else:
        records = evaluate(claims, tables)
    return {"lab": lab_id, "alpha": stats.ALPHA, "correction": "holm over the lab's claims and controls",
            "claims": records}


def judged(lab_id: str, module, out: Path | str) -> dict:
    """A results folder's claims.json, or the ledger `module` decided on it now (a folder made
    before the kit wrote one): what a lab's own report reads."""
    return load(out) or _document(lab_id, module, out)


def write(lab, out: Path) -> Path | None:
    """Evaluate the lab's ledger on `out` and write out/claims.json (None: the lab has no ledger)."""
    doc = document(lab, out)
    if doc is None:
        return None
    path = Path(out) / FILE
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def load(out: Path) -> dict | None:
    """A results folder's claims.json, or None where it has none (or it is unreadable)."""
    try:
        return json.loads((Path(out) / FILE).read_text())
    except (OSError, ValueError):
        return None


def tally(doc: dict) -> dict[str, list[dict]]:
    """status -> the claims with it, in the ledger's order."""
    out: dict[str, list[dict]] = {s: [] for s in STATUSES}
    for c in doc.get("claims", []):
        out.setdefault(c["status"], []).append(c)
    return out


def summary_line(doc: dict) -> str:
    """'2 of 3 of the paper's claims hold; does not hold: X (cause ...); not resolved: Y (needs 6 runs)'."""
    by = tally(doc)
    total = sum(len(v) for v in by.values())
    parts = [f"{len(by[HOLDS])} of {total} of the paper's claims hold"]
    if by[FAILS]:
        parts.append("does not hold: " + ", ".join(
            c["id"] + (f" ({c.get('cause_short') or c['cause']})" if c.get("cause") else "") for c in by[FAILS]))
    if by[UNRESOLVED]:
        parts.append("not resolved: " + ", ".join(
            c["id"] + (f" (needs {c['runs_needed']} runs)" if c.get("runs_needed") else "") for c in by[UNRESOLVED]))
    if by[UNMEASURED]:
        parts.append("not measured by this run: " + ", ".join(c["id"] for c in by[UNMEASURED]))
    return "; ".join(parts)


def markdown(doc: dict) -> str:
    """The verdicts as a Markdown table (reports, report.html, guides' generated blocks)."""
    family = max((c.get("family") or 0 for c in doc.get("claims", [])), default=0)
    lines = [f"**{summary_line(doc)}.**" + (f" Intervals Holm-corrected over the lab's {family} comparisons "
                                            f"(family-wise error {doc.get('alpha', stats.ALPHA):g})." if family else ""), "",
             "| claim | the paper | source | verdict | what decided it |", "|---|---|---|---|---|"]
    for c in doc.get("claims", []):
        verdict = c["status"]
        if c.get("interval"):
            verdict += f", difference {interval_text(c['interval'])}"
        if c["status"] == UNRESOLVED and c.get("runs_needed"):
            verdict += f", {c['runs_needed']} runs needed"
        said = "; ".join(x for x in (c.get("note", ""), c.get("cause", "")) if x)
        lines.append(f"| {c['id']}: {_cell(c['statement'])} | {_cell(c['paper_value'])} | {_cell(c['source'])} "
                     f"| {verdict} | {_cell(said)} |")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
