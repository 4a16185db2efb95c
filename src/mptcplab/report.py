"""One self-contained HTML page for `mptcplab reproduce`: per lab, where it ran (or why it could
not), which of the paper's claims held (its claims.json), its "paper vs this run" table, its
figures, and every run's manifest.

Plotly's JavaScript is inlined once in the page head, so the file opens offline and can be mailed
or attached to a course page as is. Figures come from each lab's `Lab.figures(sweep_dir)` (its analysis
module's `figures`), so every lab gets them.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import platform
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import places
from .judge import claims
from .places import compare, records
from .run.results import clock_totals


@dataclass
class LabOutcome:
    lab_id: str
    title: str
    status: str  # "ok", "failed", "cannot-run"
    where: str | None = None  # the place it ran in (mptcplab.places), or several joined by "/"
    detail: str = ""  # why it failed or cannot run
    out: Path | None = None  # sweep directory
    seconds: float | None = None  # the lab's wall time: boot, setup check, runs, analysis
    transfer_s: float | None = None  # its runs' transfers (results.transfer_seconds)
    log_tail: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        """Wall time per second of transfer (1.0: nothing but the transfers), or None unknown."""
        return self.seconds / self.transfer_s if self.seconds is not None and self.transfer_s else None

    def claims(self) -> dict | None:
        """Its results' claims.json (judge.claims), or None (no results, or a lab without a ledger)."""
        return claims.load(self.out) if self.out else None

    def claims_words(self) -> str:
        """Which of the paper's claims held on this run, in one line."""
        doc = self.claims()
        if doc is None:
            return "the paper's claims not judged: the lab has no claims ledger yet (see paper-vs-this-run.md)"
        return claims.summary_line(doc)

    def timing(self) -> str:
        """"412 s, 2.9x its 140 s of transfers", or the part that is known."""
        if self.seconds is None:
            return ""
        if self.ratio is None:
            return f"{self.seconds:.0f} s (its runs record no transfer time)"
        return f"{self.seconds:.0f} s, {self.ratio:.1f}x its {self.transfer_s:.0f} s of transfers"


def markdown_to_html(text: str) -> str:
    """Tables and text from a lab's report; any Markdown renderer the environment has, else <pre>."""
    try:
        import markdown

        return markdown.markdown(text, extensions=["tables", "fenced_code"])
    except ImportError:
        pass
    try:
        import mistune

        return mistune.html(text)
    except (ImportError, AttributeError):
        return f"<pre>{html.escape(text)}</pre>"


def manifests(out: Path) -> list[tuple[str, dict]]:
    """(name, manifest) for the sweep's own manifests and each completed run's."""
    found = []
    for p in sorted(out.glob("*manifest*.json")) + sorted(out.glob("*/manifest.json")):
        if p.parent.name.endswith(".partial"):
            continue
        try:
            found.append((str(p.relative_to(out)), json.loads(p.read_text())))
        except (OSError, ValueError) as exc:
            found.append((str(p.relative_to(out)), {"unreadable": str(exc)}))
    return found


CSS = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em} h2{border-bottom:2px solid #3f51b5;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0} th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}
th{background:#f0f2fa} .ok{color:#1b7e2b} .failed{color:#b00020} .cannot-run{color:#a66b00}
.badge{font-weight:bold} pre{background:#f6f6f6;padding:.6em;overflow:auto;max-height:30em;font-size:.85em}
details{margin:.3em 0} summary{cursor:pointer}
"""


def _places_table() -> str:
    return compare.html_table(records.load())


def render(outcomes: list[LabOutcome], labs: dict, quick: bool) -> str:
    from plotly.offline import get_plotlyjs

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    rows = "".join(
        f"<tr><td>{html.escape(o.lab_id)}</td><td>{html.escape(o.title)}</td>"
        f"<td class='{o.status} badge'>{'ran' if o.status == 'ok' else o.status}</td>"
        f"<td>{html.escape(o.claims_words() if o.status == 'ok' else '-')}</td><td>{html.escape(o.where or '-')}</td>"
        f"<td>{html.escape(o.timing())}</td><td>{html.escape(o.detail)}</td></tr>" for o in outcomes)
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>mptcplab reproduce</title>",
             f"<style>{CSS}</style><script>{get_plotlyjs()}</script></head><body>",
             f"<h1>mptcplab reproduce{' --quick' if quick else ''}</h1>",
             f"<p>{now} on <code>{html.escape(platform.node())}</code>, kernel "
             f"<code>{html.escape(platform.release())}</code>.</p>",
             "<table><tr><th>lab</th><th>title</th><th>status</th><th>the paper's claims</th><th>ran</th>"
             "<th>wall time</th><th>note</th></tr>", rows, "</table>",
             "<h2 id='places'>Places compared</h2><p>Each place's latest recorded setup check on this host "
             "(what <code>--where auto</code> chooses from; see the site's VM page):</p>", _places_table()]
    for o in outcomes:
        parts.append(f"<h2 id='{o.lab_id}'>{html.escape(o.lab_id)}: {html.escape(o.title)}</h2>")
        if o.status == "cannot-run":
            parts.append("<p class='cannot-run'><b>Not reproduced here:</b> no place on this machine can run it: "
                         f"{html.escape(o.detail)}</p>")
            continue
        place = places.find(o.where)
        parts.append(f"<p>Ran {place.RAN if place else html.escape(o.where or '?')}"
                     + (f" in {html.escape(o.timing())} (wall time over the time its runs spent "
                        "transferring)" if o.seconds is not None else "")
                     + (f"; results in <code>{html.escape(str(o.out))}</code>" if o.out else "") + ".</p>")
        guest, wall = clock_totals(o.out) if o.out and o.out.exists() else (0, 0)
        if guest:  # the runs' own place says how its clock differs from the host's
            ran_in = [places.find((m.get("platform") or {}).get("where")) for _, m in manifests(o.out)]
            clock = next((p.CLOCK for p in ran_in if p and p.CLOCK), "Its runs took {guest:.0f} s on the guest's "
                         "clock, {wall:.0f} s of wall-clock time (each manifest's <code>clock</code>).")
            parts.append(f"<p>{clock.format(guest=guest, wall=wall)}</p>")
        if o.status == "failed":
            parts.append(f"<p class='failed'><b>Failed:</b> {html.escape(o.detail)}</p>")
            if o.log_tail:
                parts.append(f"<pre>{html.escape(o.log_tail)}</pre>")
        doc = o.claims()
        if doc is not None:  # what held, before the tables it rests on
            parts.append("<h3>The paper's claims</h3>" + markdown_to_html(claims.markdown(doc)))
        lab = labs.get(o.lab_id)
        if not (o.out and o.out.exists() and lab):
            continue
        try:
            md = re.sub(r"^(#{1,4}) ", r"###\1 ", lab.report(o.out), flags=re.M)  # below the lab's own h2
            parts.append("<h3>Paper vs this run</h3>" + markdown_to_html(md))
        except Exception as exc:  # partial results: say so, keep the rest of the page
            parts.append(f"<p class='failed'>No paper-vs-run table: {html.escape(type(exc).__name__)}: "
                         f"{html.escape(str(exc))}</p>")
        try:
            figs = lab.figures(o.out)
        except Exception as exc:
            figs = []
            parts.append(f"<p class='failed'>Figures failed: {html.escape(type(exc).__name__)}: {html.escape(str(exc))}</p>")
        if figs:
            parts.append("<h3>Figures</h3>")
            parts += [f.to_html(full_html=False, include_plotlyjs=False) for f in figs]
        mans = manifests(o.out)
        if mans:
            parts.append(f"<h3>Manifests ({len(mans)})</h3>")
            for name, man in mans:
                place = (man.get("platform") or {}).get("where", "")
                parts.append(f"<details><summary><code>{html.escape(name)}</code> {html.escape(place)}</summary>"
                             f"<pre>{html.escape(json.dumps(man, indent=1, default=str))}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)
