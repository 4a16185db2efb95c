"""Lab 2 measurement: pure functions from `ss` samples to per-subflow tables.

No network: text in, rows out, so they are tested on made-up `ss` output (tests/labs).
"""

from __future__ import annotations

import re

from . import cc


def subflow_table(ss_text: str, want_cc: str) -> list[dict]:
    """Per socket at its last `ss` sample: path (by local address), CC, segments and bytes."""
    last: dict[tuple, dict] = {}
    for s in cc.parse_ss_cc(ss_text):
        if s["netid"] == "tcp":  # the MPTCP socket (netid mptcp) shares the first subflow's address
            last[s["local"]] = s
    rows = []
    sock_re = {k: re.compile(rf"\b{k}:(\d+)") for k in ("data_segs_out", "bytes_acked", "bytes_retrans",
                                                         "segs_out")}
    for local, s in sorted(last.items()):
        row = {"local": local, "path_index": int(local.split(".")[1]), "cc": s["cc"],
               "mptcp_subflow": s["mptcp_subflow"]}
        for k, rx in sock_re.items():
            m = rx.search(s.get("info", ""))
            row[k] = int(m.group(1)) if m else 0
        row["cc_ok"] = s["cc"] == want_cc
        rows.append(row)
    return rows
