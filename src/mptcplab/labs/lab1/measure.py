"""Lab 1 measurement: pure functions from the detailed run's capture and traces to tables.

No network, no files written: a capture (or made-up packets) in, a table out, so each piece is
tested on its own (tests/labs). analysis.py turns these tables into the paper's figures.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from ...measure import observe
from ...measure.bulk import PORT
from ...measure.tshark import MPTCP_PREFS, fields

# What the figures need from each data segment. The DSS option's own numbers are read, and each
# packet's data sequence number is computed from them (see data_sequence_numbers): tshark 4.0's
# per-packet `mptcp.dsn` can point at the wrong mapping when several are outstanding.
PACKET_FIELDS = ["frame.time_epoch", "tcp.stream", "mptcp.stream", "ip.src", "tcp.seq", "tcp.len",
                 "tcp.options.mptcp.rawdataseqno", "tcp.options.mptcp.subflowseqno",
                 "tcp.options.mptcp.datalvllen", "mptcp.reinjection_of", "tcp.analysis.retransmission"]
DATA_FILTER = f"tcp.len > 0 && tcp.dstport == {PORT}"


def data_sequence_numbers(pk: pd.DataFrame) -> pd.Series:
    """Each data segment's MPTCP data sequence number (relative: the connection's first byte is 1).

    `pk` has stream, seq (relative TCP sequence number), and the DSS mapping fields map_dsn
    (64-bit), map_ssn (relative subflow sequence number) and map_len where the segment carries one.
    A segment belongs to the mapping of its subflow with the highest start at or below its sequence
    number (this also places TCP retransmissions and segments whose option held no mapping), and
    DSN = map_dsn + (seq - map_ssn), computed in uint64 so the 64-bit numbers stay exact and wrap.
    """
    maps = pk.loc[pk["map_dsn"].notna(), ["stream", "map_ssn", "map_dsn", "map_len"]].dropna()
    maps = maps.drop_duplicates(["stream", "map_ssn"], keep="last")
    map_dsn = maps["map_dsn"].to_numpy(np.uint64)  # looked up by position: a merge would make it float
    maps = pd.DataFrame({"stream": maps["stream"].to_numpy(np.int64), "map_ssn": maps["map_ssn"].to_numpy(np.int64),
                         "map_len": maps["map_len"].to_numpy(np.int64), "mi": np.arange(len(maps))})
    left = pd.DataFrame({"stream": pk["stream"].to_numpy(np.int64), "seq": pk["seq"].to_numpy(np.int64),
                         "pos": np.arange(len(pk))})
    hit = pd.merge_asof(left.sort_values("seq"), maps.sort_values("map_ssn"), left_on="seq", right_on="map_ssn",
                        by="stream", direction="backward").sort_values("pos")
    okv = (hit["mi"].notna() & (hit["seq"] < hit["map_ssn"] + hit["map_len"])).to_numpy()
    absolute = np.zeros(len(pk), dtype=np.uint64)
    mi = hit["mi"].to_numpy()[okv].astype(np.int64)
    offset = (hit["seq"] - hit["map_ssn"]).to_numpy()[okv].astype(np.int64).astype(np.uint64)
    absolute[okv] = map_dsn[mi] + offset
    conns = pk["conn"].to_numpy(np.int64) if "conn" in pk else np.zeros(len(pk), dtype=np.int64)
    out = pd.Series(pd.NA, index=pk.index, dtype="Int64")
    # Relative to the connection's first data byte (the earliest segment of each MPTCP connection).
    times = pk["time"].to_numpy()
    for conn in np.unique(conns[okv]):
        sel = okv & (conns == conn)
        first = np.flatnonzero(sel)[np.argmin(times[sel])]
        base = absolute[first] - np.uint64(1)
        out[sel] = (absolute[sel] - base).astype(np.int64)  # uint64 subtraction wraps like the DSN does
    return out


def packets_from_capture(pcap: Path | str, paths: dict[str, str], t0: float) -> pd.DataFrame:
    """The sender's data segments of a capture: time (s from t0), path, stream, seq, len, dsn,
    reinjection (Wireshark: data already sent on another subflow), tcp_retransmission, dsn_resent."""
    raw = fields(pcap, PACKET_FIELDS, display_filter=DATA_FILTER, prefs=MPTCP_PREFS)
    raw = raw[raw["ip.src"].isin(paths)]
    df = pd.DataFrame({
        "time": raw["frame.time_epoch"] - t0,
        "path": raw["ip.src"].astype(str).map(paths),
        "stream": raw["tcp.stream"], "conn": raw["mptcp.stream"].fillna(0),
        "seq": raw["tcp.seq"], "len": raw["tcp.len"],
        "map_dsn": raw["tcp.options.mptcp.rawdataseqno"], "map_ssn": raw["tcp.options.mptcp.subflowseqno"],
        "map_len": raw["tcp.options.mptcp.datalvllen"],
        "reinjection": raw["mptcp.reinjection_of"].notna().to_numpy(),
        "tcp_retransmission": raw["tcp.analysis.retransmission"].to_numpy(),
    }).sort_values("time", kind="stable").reset_index(drop=True)
    df["dsn"] = data_sequence_numbers(df)
    # Wireshark flags some retransmissions differently (after SACK, as fast or spurious ones): the
    # same subflow bytes sent again is a TCP retransmission whatever the flag says.
    df["tcp_retransmission"] |= df.duplicated(["stream", "seq"])
    # Data whose DSN was already sent, other than a TCP retransmission of the same subflow bytes:
    # MPTCP sent it again (a reinjection). A lower DSN alone is not one: each subflow gets its
    # own chunk of the data stream and may put it on the wire later.
    df["dsn_resent"] = df.duplicated("dsn") & ~df.duplicated(["stream", "seq"]) & df["dsn"].notna()
    cols = ["time", "path", "stream", "seq", "len", "dsn", "reinjection", "tcp_retransmission", "dsn_resent"]
    return df[cols]


def cwnd_drops(probe: pd.DataFrame) -> dict:
    """How often each subflow's cwnd fell by at least a quarter from one sample to the next."""
    out = {}
    for path, g in probe.sort_values("time").groupby("path"):
        cw = g["snd_cwnd"].to_numpy()
        out[path] = int(np.sum(cw[1:] < 0.75 * cw[:-1]))
    return out


# ---------------------------------------------------------------- the kernel's view of a run

def kernel_view(ss: pd.DataFrame, paths: dict[str, str], since: float | None = None) -> dict:
    """What the kernel said about one run's sockets, from `observe.parse_ss` samples, as the flat
    numbers a sweep row keeps (no raw samples).

    `paths` maps the sender's address on each path to the path's name. Per path: the subflow's (or
    the TCP connection's) median srtt `srtt_ms_<path>`, its min RTT `min_rtt_ms_<path>` and the
    most bytes it had unacknowledged `inflight_max_<path>` (ss's `unacked` segments x mss), and its
    own send buffer `sk_sndbuf_<path>` (skmem tb; a subflow has one besides the MPTCP socket's). For the
    run: `inflight_max`, the most unacknowledged bytes summed over subflows at one sample;
    `wmem_queued_max`, the most bytes queued (skmem w) in the send buffer of the socket the
    application writes to: the TCP socket, or the MPTCP socket, which ss lists with the same
    addresses as its first subflow but without TCP's fields. That socket's send buffer itself is
    recorded once, as the sender reads it after the transfer (`sndbuf_effective`, SO_SNDBUF).

    With `since` (epoch s), bytes in flight are judged from the samples taken then or later (after
    slow start, as `observe.ss_summary` does), and the run's whole-transfer peak is kept as
    `inflight_max_whole`.
    """
    out: dict = {"ss_samples": int(ss["time"].nunique()) if len(ss) else 0}
    if ss.empty:
        return out
    ss = ss.copy()
    ss["ip"] = ss["local"].astype(str).str.rsplit(":", n=1).str[0]
    ss["path"] = ss["ip"].map(paths)
    sub = ss["mptcp_subflow"].astype(bool)
    has_tcp = ss["rtt_ms"].notna() | ss["unacked"].notna()
    transport = ss[has_tcp & ss["path"].notna()].copy()  # TCP sockets: the connection or the subflows
    # The application's socket: plain TCP (not a subflow), or the MPTCP socket (no TCP fields).
    app = ss[~sub & ~has_tcp] if sub.any() else ss[~sub]
    transport["inflight"] = observe.inflight_bytes(transport["unacked"], transport["mss"])
    if since is not None and transport["inflight"].notna().any():
        out["inflight_max_whole"] = int(transport.groupby("time")["inflight"].sum().max())
    steady = transport if since is None else transport[transport["time"] >= since]
    # Each socket's figures are observe.ss_stats (the one statistic of ss samples, as in the run's
    # `kernel_tcp`), here per path and for the application's socket, under this table's names.
    for path, g in transport.groupby("path"):
        k = observe.ss_stats(g)
        for name, key, cast in (("sk_sndbuf", "sk_sndbuf", int), ("srtt_ms", "srtt_ms_median", float),
                                ("min_rtt_ms", "min_rtt_ms", float)):
            if key in k:
                out[f"{name}_{path}"] = cast(k[key])
    for path, g in steady.groupby("path"):
        k = observe.ss_stats(g)
        if "inflight_bytes_max" in k:
            out[f"inflight_max_{path}"] = int(k["inflight_bytes_max"])
    if steady["inflight"].notna().any():
        out["inflight_max"] = int(steady.groupby("time")["inflight"].sum().max())  # over subflows at once
    k = observe.ss_stats(app)
    if "wmem_queued_max" in k:
        out["wmem_queued_max"] = int(k["wmem_queued_max"])
    return out
