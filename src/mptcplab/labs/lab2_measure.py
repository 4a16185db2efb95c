"""Lab 2 measurement: pure functions from `ss` samples to per-subflow tables.

No network: text in, rows out, so they are tested on made-up `ss` output (tests/labs).
"""

from __future__ import annotations

import re

from .. import cc


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


def shared_path_rates(mptcp_ss, tcp_ss, shared_prefix: str) -> dict:
    """The fairness run's shared path, both flows over one common window (from `ss` samples, as
    parsed by observe.parse_ss: time, local, bytes_acked, mptcp_subflow).

    Each rate is a difference of the kernel's `bytes_acked` over [start, end], the span in which
    both the TCP flow and the MPTCP connection were sampled: rates of one link taken over different
    spans (each flow's first to last byte) add up to more than the link carried, because while one
    flow has not started or has drained the other has the link (the reference's TCP + MPTCP on the
    shared path read up to 2.3% above its ceiling that way). `shared_prefix` is the sender's
    address on the shared path without its last byte ("10.1.0")."""
    import numpy as np

    subs = mptcp_ss[mptcp_ss.mptcp_subflow.astype(bool) & mptcp_ss.bytes_acked.notna()]
    tcp = tcp_ss[tcp_ss.bytes_acked.notna()]
    if subs.empty or tcp.empty:
        return {}
    start = max(subs.time.min(), tcp.time.min())
    end = min(subs.time.max(), tcp.time.max())
    if not end > start:
        return {}

    def acked(rows) -> float:  # bytes acked in [start, end], summed over the sockets of `rows`
        total = 0.0
        for _, s in rows.groupby("local"):
            at = np.interp([start, end], s.time, s.bytes_acked, left=0.0)
            total += at[1] - at[0]
        return total

    on_shared = acked(subs[subs.local.str.startswith(shared_prefix + ".")])
    mptcp_all = acked(subs)
    span = end - start
    return {"window_s": [round(float(start), 3), round(float(end), 3)],
            "mptcp_on_shared_mbps": round(on_shared * 8 / span / 1e6, 3),
            "mptcp_window_mbps": round(mptcp_all * 8 / span / 1e6, 3),
            "tcp_on_shared_mbps": round(acked(tcp) * 8 / span / 1e6, 3),
            "mptcp_share_on_shared": round(on_shared / mptcp_all, 4) if mptcp_all else None}
