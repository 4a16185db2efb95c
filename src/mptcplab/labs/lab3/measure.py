"""Lab 3 measurement: the inputs of the throughput equations, from a sender-side capture.

Pure functions over pandas tables, so they can be tested on made-up packets and reused in the
notebook. The packet table has one row per TCP segment seen on the sender:

    time     epoch seconds
    flow     the sender's port (one TCP connection = one flow)
    kind     "data" (sender -> receiver, payload > 0) or "ack" (receiver -> sender)
    seq      relative sequence number of the first payload byte (data)
    len      payload bytes (data)
    ack      relative cumulative ACK number (ack)
    ack_rtt  tshark's tcp.analysis.ack_rtt for the ACK (s), NaN when it gives none

What is measured, per flow and for the aggregate (the guide explains why each is done so):

* a retransmission is a data segment that starts below the highest sequence number the flow has
  sent; every retransmission stands for one lost transmission (sender-side view: the emulator's
  drop counter is the independent check);
* p_r, the packet loss rate = losses / data segments sent, where the losses are the
  retransmissions of packets first sent inside the measurement window;
* a loss event = the losses of one RTT: losses are ordered by when the lost packet was first
  sent, and a loss more than one RTT after the first loss of the current event starts a new
  event (at most one per RTT, as TFRC counts them and as TCP halves its window once per RTT);
  per flow (model 1's p: all flows' events over all packets) and across the aggregate (model 2's
  p_e: the same rule applied to the losses of every flow together);
* RTT = the kernel's smoothed RTT (srtt, `ss` every 200 ms), averaged over the window; the
  kernel's min RTT and tshark's ACK round-trip time (ack_rtt) are kept beside it, so the models can
  be evaluated with each. Why not ack_rtt: its samples include the time the receiver held a
  delayed ACK back, and gave 62-70 ms on a 60 ms path. Linux's srtt is not free of that either (its
  sample runs from the *oldest* segment an ACK newly covers: net/ipv4/tcp_input.c,
  tcp_clean_rtx_queue -> seq_rtt_us), but min RTT is (from the newest, and the min filter skips
  suspected delayed ACKs: tcp_update_rtt_min); srtt - min_rtt in a run without a queue measures
  what is left. T = median of the kernel's RTO (ss) samples;
* b = segments newly acknowledged per ACK that advanced the cumulative ACK;
* throughput = data segments sent per second (retransmissions included: the models' B counts
  every packet sent), and goodput = new segments per second.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

TSHARK_FIELDS = ["frame.time_epoch", "ip.src", "tcp.srcport", "tcp.dstport", "tcp.seq", "tcp.len", "tcp.ack",
                 "tcp.analysis.ack_rtt", "tcp.flags.syn", "tcp.flags.fin"]
TSHARK_PREFS = {"tcp.relative_sequence_numbers": "TRUE", "tcp.analyze_sequence_numbers": "TRUE"}


# ---------------------------------------------------------------- packets

def read_capture(pcap, sender: str, port: int) -> pd.DataFrame:
    """The packet table of one capture (tshark -T fields, typed columns), only the connections to `port`."""
    from ...measure.tshark import fields

    raw = fields(pcap, TSHARK_FIELDS, display_filter=f"tcp.port == {port}", prefs=TSHARK_PREFS)
    return packet_table(raw, sender, port)


def packet_table(raw: pd.DataFrame, sender: str, port: int) -> pd.DataFrame:
    """tshark's columns -> the packet table (SYN and FIN segments and pure window updates dropped)."""
    cols = ["time", "flow", "kind", "seq", "len", "ack", "ack_rtt"]
    if raw.empty:
        return pd.DataFrame(columns=cols)
    syn = raw["tcp.flags.syn"].astype(str).isin(["1", "True", "true"])
    fin = raw["tcp.flags.fin"].astype(str).isin(["1", "True", "true"])
    from_sender = (raw["ip.src"] == sender) & (raw["tcp.dstport"] == port)
    to_sender = (raw["ip.src"] != sender) & (raw["tcp.srcport"] == port)
    length = pd.to_numeric(raw["tcp.len"], errors="coerce").fillna(0)
    data = raw[from_sender & (length > 0) & ~syn]
    acks = raw[to_sender & ~syn & ~fin]
    out = pd.concat([
        pd.DataFrame({"time": data["frame.time_epoch"], "flow": data["tcp.srcport"], "kind": "data",
                      "seq": data["tcp.seq"], "len": length[data.index], "ack": np.nan, "ack_rtt": np.nan}),
        pd.DataFrame({"time": acks["frame.time_epoch"], "flow": acks["tcp.dstport"], "kind": "ack",
                      "seq": np.nan, "len": 0, "ack": acks["tcp.ack"],
                      "ack_rtt": pd.to_numeric(acks["tcp.analysis.ack_rtt"], errors="coerce")}),
    ], ignore_index=True)
    out["time"] = out["time"].astype(float)
    out["flow"] = out["flow"].astype(int)
    return out.sort_values(["time", "kind"], kind="stable").reset_index(drop=True)[cols]


def mark_retransmissions(data: pd.DataFrame) -> pd.DataFrame:
    """Data segments with `retx` (starts below the highest byte sent before) and, for
    retransmissions, `t_orig`: when the flow first sent the byte at `seq` (the lost packet)."""
    d = data.sort_values(["flow", "time"], kind="stable").reset_index(drop=True)
    end = d["seq"] + d["len"]
    highest_before = end.groupby(d["flow"]).cummax().groupby(d["flow"]).shift(1)
    d["retx"] = d["seq"] < highest_before.fillna(-np.inf)
    orig = d.loc[~d["retx"], ["flow", "seq", "time"]].rename(columns={"time": "t_orig", "seq": "oseq"})
    rx = d.loc[d["retx"], ["flow", "seq"]].reset_index()
    if rx.empty:
        d["t_orig"] = np.nan
        return d
    # The original segment holding byte `seq`: the last original starting at or below it.
    hit = pd.merge_asof(rx.sort_values("seq"), orig.sort_values("oseq"), left_on="seq", right_on="oseq",
                        by="flow", direction="backward")
    d["t_orig"] = np.nan
    d.loc[hit["index"].to_numpy(), "t_orig"] = hit["t_orig"].to_numpy()
    return d


def group_loss_events(t_lost: np.ndarray, rtt: float) -> np.ndarray:
    """Start times of loss events: losses sorted by time; a loss more than `rtt` after the
    start of the current event opens the next one (at most one loss event per RTT)."""
    starts = []
    current = -np.inf
    for t in np.sort(np.asarray(t_lost, dtype=float)):
        if t > current + rtt:
            current = t
            starts.append(t)
    return np.array(starts)


# ---------------------------------------------------------------- per run

def _ss_in_window(ss: pd.DataFrame, window: tuple[float, float], column: str):
    """The `ss` samples inside the window that carry `column`, and each one's flow (local port)."""
    s = ss[(ss["time"] >= window[0]) & (ss["time"] <= window[1])].dropna(subset=[column])
    return s, s["local"].astype(str).str.rsplit(":", n=1).str[1].astype(int).rename("flow")


def rto_per_flow(ss: pd.DataFrame, window: tuple[float, float]) -> pd.Series:
    """Median kernel RTO (s) per flow from `ss` samples (columns time, local, rto_ms)."""
    if ss is None or ss.empty or "rto_ms" not in ss:
        return pd.Series(dtype=float)
    s, port = _ss_in_window(ss, window, "rto_ms")
    return (s.groupby(port)["rto_ms"].median() / 1000).rename("T")


def kernel_rtt_per_flow(ss: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    """The kernel's RTT per flow from `ss` samples in the window (columns time, local, rtt_ms,
    minrtt_ms): srtt = the mean of the smoothed RTT samples (s), min_rtt = the smallest min RTT (s),
    srtt_samples = how many samples the mean is of. Index: flow (the sender's port)."""
    cols = ["srtt", "min_rtt", "srtt_samples"]
    if ss is None or ss.empty or "rtt_ms" not in ss:
        return pd.DataFrame(columns=cols, index=pd.Index([], name="flow", dtype=int))
    s, port = _ss_in_window(ss, window, "rtt_ms")
    g = s.groupby(port)
    out = pd.DataFrame({"srtt": g["rtt_ms"].mean() / 1000, "srtt_samples": g["rtt_ms"].size()})
    if "minrtt_ms" in s:
        out["min_rtt"] = g["minrtt_ms"].min() / 1000
    return out.reindex(columns=cols)


def measure(pk: pd.DataFrame, window: tuple[float, float], rto: pd.Series | None = None,
            kernel_rtt: pd.DataFrame | None = None) -> tuple[pd.DataFrame, dict]:
    """Per-flow table and aggregate values of one run over the steady-state `window`.

    `rto`: T per flow in seconds (index = flow); missing flows get RTT + 200 ms, Linux's
    minimum RTO above the smoothed RTT (said in `T_source`).
    `kernel_rtt`: srtt, min_rtt and srtt_samples per flow (`kernel_rtt_per_flow`). The RTT the
    models get (`rtt`) is the kernel's srtt; a flow `ss` never sampled falls back on tshark's
    ack_rtt (said in `rtt_source`). All three RTTs are kept per flow and for the run.
    """
    t0, t1 = window
    if not t1 > t0:
        raise ValueError(f"empty measurement window {window}")
    span = t1 - t0
    data = mark_retransmissions(pk[pk["kind"] == "data"])
    acks = pk[(pk["kind"] == "ack") & (pk["time"] >= t0) & (pk["time"] <= t1)].sort_values(["flow", "time"])
    in_win = data[(data["time"] >= t0) & (data["time"] <= t1)]
    mss = float(in_win["len"].mode().iloc[0]) if not in_win.empty else np.nan
    lost = lost_packets(data, window)
    rows = []
    flows = sorted(data["flow"].unique())
    kern = kernel_rtt if kernel_rtt is not None else kernel_rtt_per_flow(None, window)
    for f in flows:
        fd = in_win[in_win["flow"] == f]
        fa = acks[acks["flow"] == f]
        ack_rtt = float(fa["ack_rtt"].mean()) if fa["ack_rtt"].notna().any() else np.nan
        srtt = float(kern["srtt"].get(f, np.nan))
        rtt = srtt if srtt == srtt else ack_rtt
        fl = lost[lost["flow"] == f]
        events = group_loss_events(fl["t"].to_numpy(), rtt if rtt == rtt else 0.0)
        adv = fa["ack"].diff()
        adv = adv[adv > 0]
        sent, retx = len(fd), len(fl)
        T = float(rto.get(f, np.nan)) if rto is not None else np.nan
        rows.append({
            "flow": int(f), "packets": sent, "retransmissions": retx, "loss_events": len(events),
            "p": len(events) / sent if sent else np.nan, "p_r": retx / sent if sent else np.nan,
            "rtt": rtt, "rtt_source": "ss srtt" if srtt == srtt else "tshark ack_rtt",
            "srtt": srtt, "min_rtt": float(kern["min_rtt"].get(f, np.nan)), "ack_rtt": ack_rtt,
            "T": T if T == T else rtt + 0.2, "T_source": "ss rto" if T == T else "rtt + 200 ms",
            "b": float(adv.sum() / mss / len(adv)) if len(adv) else np.nan,
            "pps": sent / span, "goodput_pps": (sent - retx) / span,
            "timeouts": timeouts(data[data["flow"] == f], T if T == T else rtt + 0.2, window),
        })
    per_flow = pd.DataFrame(rows)
    if per_flow.empty:
        raise ValueError("no data segments in the capture")
    # The run's RTT: the mean of every srtt sample of every flow (each flow's mean weighted by its
    # samples), else the mean of every ACK's ack_rtt.
    ack_rtt_all = float(acks["ack_rtt"].mean())
    sampled = per_flow.dropna(subset=["srtt"]).merge(kern[["srtt_samples"]], left_on="flow", right_index=True)
    srtt_all = float(np.average(sampled["srtt"], weights=sampled["srtt_samples"])) if len(sampled) else np.nan
    rtt_all = srtt_all if srtt_all == srtt_all else ack_rtt_all
    agg_events = group_loss_events(lost["t"].to_numpy(), rtt_all)
    packets = int(per_flow["packets"].sum())
    agg = {
        "n": len(flows), "window_s": span, "mss": mss, "packets": packets,
        "retransmissions": int(per_flow["retransmissions"].sum()),
        "loss_events_per_flow": int(per_flow["loss_events"].sum()), "loss_events_cumulative": len(agg_events),
        "p": per_flow["loss_events"].sum() / packets,  # model 1: loss events of any flow per packet
        "p_e": len(agg_events) / packets,  # model 2: loss events of the aggregate per packet
        "p_r": per_flow["retransmissions"].sum() / packets,
        "rtt": rtt_all, "rtt_source": "ss srtt" if srtt_all == srtt_all else "tshark ack_rtt",
        "srtt": srtt_all, "min_rtt": float(per_flow["min_rtt"].min()), "ack_rtt": ack_rtt_all,
        "T": float(per_flow["T"].mean()),
        "b": float(np.average(per_flow["b"].fillna(1.0), weights=per_flow["packets"].clip(lower=1))),
        "pps": float(per_flow["pps"].sum()), "goodput_pps": float(per_flow["goodput_pps"].sum()),
        "timeouts": int(per_flow["timeouts"].sum()),
    }
    return per_flow, agg


def lost_packets(data: pd.DataFrame, window: tuple[float, float]) -> pd.DataFrame:
    """One row per loss (retransmission) whose lost packet was first sent inside the window:
    flow, t_orig (when it was sent), time (when it was sent again), t (t_orig from the window start)."""
    d = data if "retx" in data else mark_retransmissions(data)
    lost = d[d["retx"] & (d["t_orig"] >= window[0]) & (d["t_orig"] <= window[1])]
    lost = lost[["flow", "t_orig", "time"]].sort_values("t_orig").reset_index(drop=True)
    # Seconds after the window start, to the microsecond: the loss events are counted on these,
    # so a table of them (losses.csv) recounts exactly the same events.
    lost["t"] = (lost["t_orig"] - window[0]).round(6)
    return lost


def timeouts(flow_data: pd.DataFrame, rto: float, window: tuple[float, float]) -> int:
    """Retransmissions in the window that follow a silence of at least 0.8 RTO from the flow:
    a retransmission timer fired (fast retransmits and tail-loss probes come sooner)."""
    d = flow_data.sort_values("time")
    gap = d["time"].diff()
    hit = d["retx"] & (gap >= 0.8 * rto) & (d["time"] >= window[0]) & (d["time"] <= window[1])
    return int(hit.sum())
