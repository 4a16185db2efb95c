"""Lab 2 measurement: pure functions from `ss` samples and the emulator's capture to tables.

No network: text or packets in, rows out, so they are tested on made-up `ss` output and a faked
link (tests/labs).
"""

from __future__ import annotations

import re

import pandas as pd

from . import cc
from ...measure import tshark


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


# what the emulator's capture of the links is read into (tshark field -> column)
LINK_FIELDS = {"frame.time_epoch": "time", "ip.src": "src", "ip.len": "ip_len", "tcp.srcport": "sport",
               "tcp.dstport": "dport", "tcp.seq": "seq", "tcp.len": "len"}
ETHERNET = 14  # an Ethernet header: what the link's rate limit counts on top of the IP packet


def link_packets(pcap) -> pd.DataFrame:
    """The data segments the links delivered (the emulator's capture of its egress, observe.Capture
    with direction="out"), one row per packet with relative sequence numbers (LINK_FIELDS)."""
    df = tshark.fields(pcap, list(LINK_FIELDS), display_filter="tcp",
                       prefs={"tcp.relative_sequence_numbers": "TRUE", "tcp.analyze_sequence_numbers": "TRUE"})
    df = df.rename(columns=LINK_FIELDS)
    df["src"] = df["src"].astype(str)
    return df


def _new_bytes(g: pd.DataFrame, start: float, end: float) -> int:
    """Payload bytes one subflow (5-tuple) carried for the first time in (start, end]: how far its
    highest sequence number sent moved in the window, so a retransmission is not counted twice."""
    g = g[g.len > 0].sort_values("time")
    inside = g[(g.time > start) & (g.time <= end)]
    if inside.empty:
        return 0
    before = g[g.time <= start]
    base = int((before.seq + before.len).max()) if len(before) else int(inside.seq.min())
    return max(0, int((inside.seq + inside.len).max()) - base)


def shared_link_rates(pkts: pd.DataFrame, shared_prefix: str, ports: dict[str, int]) -> dict:
    """The fairness run's split of the shared link, from what the emulator delivered (pkts: one row
    per data segment as link_packets reads them): the TCP flow and the MPTCP connection's subflows,
    each by its destination port (`ports`: {"tcp": ..., "mptcp": ...}), the MPTCP subflows by path
    (source address starting with `shared_prefix`, e.g. "10.1.0.", is the shared path).

    Over one window, the span in which both flows were sending on the shared link (from the later
    first segment there to the earlier last one), each flow's goodput on the shared path is the payload it carried there
    for the first time. Every byte counted crossed the shared link once inside the window, so the
    two together cannot exceed what the link can carry in it (its goodput ceiling), whatever the
    senders' or receivers' clocks did. `ss` byte shares sampled a few times per run could (the
    2026-11 reference: up to 2.3% above the ceiling).

    Returns shared_window_s, tcp_on_shared_mbps, mptcp_on_shared_mbps, mptcp_on_other_mbps,
    mptcp_share_on_shared (MPTCP's payload on the shared path / on both, same window) and
    shared_wire_mbps (both flows' packets on the shared link, Ethernet headers included: what its
    rate limit counts); {} when the flows never overlapped."""
    data = pkts[pkts.len > 0]
    flows = {name: data[data.dport == port] for name, port in ports.items()}
    on_shared = {name: f[f.src.str.startswith(shared_prefix)] for name, f in flows.items()}
    if any(f.empty for f in on_shared.values()):
        return {}
    start = max(float(f.time.min()) for f in on_shared.values())
    end = min(float(f.time.max()) for f in on_shared.values())
    if not end > start:
        return {}
    span = end - start

    def mbps(rows: pd.DataFrame) -> float:
        return sum(_new_bytes(g, start, end) for _, g in rows.groupby(["src", "sport"])) * 8 / span / 1e6

    m_shared, m_other = mbps(on_shared["mptcp"]), mbps(flows["mptcp"][~flows["mptcp"].src.str.startswith(shared_prefix)])
    shared = pkts[pkts.src.str.startswith(shared_prefix) & pkts.dport.isin(list(ports.values()))]
    wire = shared[(shared.time > start) & (shared.time <= end)]
    return {"shared_window_s": [round(start, 3), round(end, 3)],
            "tcp_on_shared_mbps": round(mbps(on_shared["tcp"]), 3),
            "mptcp_on_shared_mbps": round(m_shared, 3), "mptcp_on_other_mbps": round(m_other, 3),
            "mptcp_share_on_shared": round(m_shared / (m_shared + m_other), 4) if m_shared + m_other else None,
            "shared_wire_mbps": round(float((wire.ip_len + ETHERNET).sum()) * 8 / span / 1e6, 3)}
