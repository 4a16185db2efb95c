"""The places side by side: each place's recorded setup checks (rate, RTT, subflows, wall-clock
vs guest time) as one table, for `mptcplab reproduce`'s report and the site."""

from __future__ import annotations

import html

from .choice import CheckResult

COLUMNS = ("lab", "place", "passed", "rates Mbit/s (link)", "RTT ms (configured; place's own)", "subflows",
           "wall s", "guest s", "how")


def rows(results: list[CheckResult]) -> list[dict]:
    out = []
    for r in sorted(results, key=lambda r: (r.lab, r.place)):
        tcp = ".tcp_goodput_steady_mbps"
        paths = sorted({k.split(".")[0] for k in r.measured if k.endswith((tcp, ".rtt_ms"))})
        rate = ", ".join(f"{p} {r.measured[p + tcp]:g}" + (f" ({r.bound[p + tcp]:g})" if p + tcp in r.bound else "")
                         for p in paths if p + tcp in r.measured)
        rtt = ", ".join(f"{p} {r.measured[p + '.rtt_ms']:g} ({r.bound.get(p + '.rtt_ms', float('nan')):g}"
                        + (f"; {r.measured[p + '.own_rtt_ms']:g}" if p + ".own_rtt_ms" in r.measured else "") + ")"
                        for p in paths if p + ".rtt_ms" in r.measured)
        out.append({"lab": r.lab, "place": r.place, "passed": "yes" if r.passed else "NO",
                    "rates Mbit/s (link)": rate or "-", "RTT ms (configured; place's own)": rtt or "-",
                    "subflows": r.measured.get("mptcp.subflows", "-"), "wall s": f"{r.wall_s:.0f}",
                    "guest s": f"{r.measured['guest_s']:.0f}" if "guest_s" in r.measured else "-", "how": r.how})
    return out


def html_table(results: list[CheckResult]) -> str:
    if not results:
        return ("<p>No place has a recorded setup check yet: run <code>mptcplab example --where X</code> "
                "for each place this host offers.</p>")
    head = "".join(f"<th>{html.escape(c)}</th>" for c in COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(row[c]))}</td>" for c in COLUMNS) + "</tr>"
                   for row in rows(results))
    return f"<table><tr>{head}</tr>{body}</table>"


def markdown_table(results: list[CheckResult]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(str(row[c]) for c in COLUMNS) + " |" for row in rows(results)]
    return "\n".join(lines)
