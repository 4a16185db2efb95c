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


def shared_path_rates(mptcp, tcp, share_on_shared: float) -> dict:
    """The fairness run's shared path, both flows over one common window: the span in which both
    the MPTCP connection and the TCP flow were receiving (from the later first byte to the earlier
    last byte). `mptcp` and `tcp` are the flows' `traffic.BulkResult`s (their receivers' kernel
    counts; a window that starts in a stall is taken from where it began), `share_on_shared` the
    part of MPTCP's bytes its shared-path subflow carried.

    Rates of one link taken over different spans (each flow's first to last byte) add up to more
    than the link carried, because while one flow has not started or has drained the other has
    the link."""
    start, end = max(mptcp.t0, tcp.t0), min(mptcp.t_end, tcp.t_end)
    if not end > start:
        return {}
    m = mptcp.window_mbps(start, end)
    return {"shared_window_s": [round(float(start), 3), round(float(end), 3)],
            "mptcp_window_mbps": round(m, 3),
            "mptcp_on_shared_mbps": round(m * share_on_shared, 3),
            "tcp_on_shared_mbps": round(tcp.window_mbps(start, end), 3)}
