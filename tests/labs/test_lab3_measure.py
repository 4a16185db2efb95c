"""Lab 3 measurement on made-up packet tables: every quantity checked against a count by hand."""

import numpy as np
import pandas as pd
import pytest

from mptcplab.labs.lab3 import measure as lm
from mptcplab.measure.observe import qdisc_window

MSS = 1000
RTT = 0.06


def flow_packets(flow, n_seg, lost=(), t_start=100.0, gap=0.001, rto_losses=()):
    """A flow sending n_seg segments every `gap` s; each lost segment is resent one RTT later
    (fast retransmit), or after a 0.3 s silence for those in `rto_losses`. ACK every 2 segments."""
    rows = []
    for i in range(n_seg):
        rows.append({"time": t_start + i * gap, "flow": flow, "kind": "data", "seq": i * MSS, "len": MSS,
                     "ack": np.nan, "ack_rtt": np.nan})
        if i % 2 == 1:
            rows.append({"time": t_start + i * gap + RTT, "flow": flow, "kind": "ack", "seq": np.nan, "len": 0,
                         "ack": (i + 1) * MSS, "ack_rtt": RTT})
    t_end = t_start + n_seg * gap
    for i in lost:
        rows.append({"time": t_start + i * gap + RTT, "flow": flow, "kind": "data", "seq": i * MSS, "len": MSS,
                     "ack": np.nan, "ack_rtt": np.nan})
    for i in rto_losses:  # the flow goes silent, then the timer fires
        rows.append({"time": t_end + 0.3, "flow": flow, "kind": "data", "seq": i * MSS, "len": MSS,
                     "ack": np.nan, "ack_rtt": np.nan})
    return rows


def table(*flows):
    pk = pd.DataFrame([r for f in flows for r in f])
    return pk.sort_values("time", kind="stable").reset_index(drop=True)


def test_retransmissions_and_original_send_times():
    pk = table(flow_packets(1, 200, lost=(50, 60)))
    d = lm.mark_retransmissions(pk[pk.kind == "data"])
    rx = d[d.retx].sort_values("seq")
    assert rx.seq.tolist() == [50 * MSS, 60 * MSS]
    assert rx.t_orig.tolist() == pytest.approx([100.050, 100.060])
    assert int((~d.retx).sum()) == 200


def test_retransmission_with_other_boundaries_maps_to_the_segment_holding_it():
    # The kernel may resend a range cut differently: byte 50500 was first sent in segment 50.
    pk = table(flow_packets(1, 100))
    extra = pd.DataFrame([{"time": 101.0, "flow": 1, "kind": "data", "seq": 50 * MSS + 500, "len": 500,
                           "ack": np.nan, "ack_rtt": np.nan}])
    d = lm.mark_retransmissions(pd.concat([pk[pk.kind == "data"], extra]))
    assert d[d.retx].t_orig.tolist() == pytest.approx([100.050])


def test_loss_events_at_most_one_per_rtt():
    assert lm.group_loss_events([1.0, 1.01, 1.059, 1.061, 1.2], 0.06).tolist() == [1.0, 1.061, 1.2]
    assert lm.group_loss_events([], 0.06).size == 0


def test_per_flow_and_cumulative_loss_event_rates():
    # Flow 1 loses segments 100 and 110 (10 ms apart: one event) and 500 (another).
    # Flow 2 loses segment 105: its own event, but within one RTT of flow 1's first loss, so
    # the aggregate counts 100/105/110 as one loss event. Per flow 3 events, aggregate 2.
    pk = table(flow_packets(1, 1000, lost=(100, 110, 500)), flow_packets(2, 1000, lost=(105,)))
    per_flow, agg = lm.measure(pk, (100.0, 102.0))
    f = per_flow.set_index("flow")
    assert f.loc[1, "loss_events"] == 2 and f.loc[2, "loss_events"] == 1
    assert f.loc[1, "retransmissions"] == 3 and f.loc[1, "packets"] == 1003
    assert agg["loss_events_per_flow"] == 3 and agg["loss_events_cumulative"] == 2
    assert agg["packets"] == 2004
    assert agg["p"] == pytest.approx(3 / 2004) and agg["p_e"] == pytest.approx(2 / 2004)
    assert agg["p_r"] == pytest.approx(4 / 2004)
    assert f.loc[1, "p"] == pytest.approx(2 / 1003) and f.loc[2, "p_r"] == pytest.approx(1 / 1001)
    assert agg["p_r"] >= agg["p"] >= agg["p_e"]


def test_rtt_b_throughput_and_default_timeout():
    pk = table(flow_packets(1, 1000, lost=(10,)), flow_packets(2, 1000))
    per_flow, agg = lm.measure(pk, (100.0, 102.0))
    assert per_flow.rtt.tolist() == pytest.approx([RTT, RTT])
    assert per_flow.b.tolist() == pytest.approx([2.0, 2.0])  # one ACK per two segments
    assert agg["b"] == pytest.approx(2.0) and agg["mss"] == MSS
    assert per_flow.pps.tolist() == pytest.approx([1001 / 2, 1000 / 2])
    assert per_flow.goodput_pps.tolist() == pytest.approx([500, 500])
    assert agg["pps"] == pytest.approx(2001 / 2)
    assert per_flow["T"].tolist() == pytest.approx([RTT + 0.2] * 2)
    assert set(per_flow.T_source) == {"rtt + 200 ms"}


def test_window_limits_what_is_counted():
    pk = table(flow_packets(1, 1000, lost=(100, 800)))
    _, agg = lm.measure(pk, (100.5, 101.0))  # segments 500..1000 and the loss of 800 only
    assert agg["loss_events_per_flow"] == 1 and agg["retransmissions"] == 1
    with pytest.raises(ValueError, match="empty measurement window"):
        lm.measure(pk, (101.0, 101.0))


def test_kernel_rto_from_ss_and_timeouts_from_silence():
    pk = table(flow_packets(1, 1000, lost=(10,), rto_losses=(900,)))
    ss = pd.DataFrame({"time": [100.5, 101.0, 101.5], "local": ["10.1.0.1:40001"] * 3,
                       "rto_ms": [264.0, 268.0, 500.0]})
    rto = lm.rto_per_flow(ss.assign(local="10.1.0.1:1"), (100.0, 102.0))
    assert rto.to_dict() == {1: pytest.approx(0.268)}
    per_flow, agg = lm.measure(pk, (100.0, 102.0), rto=rto)
    assert per_flow.loc[0, "T"] == pytest.approx(0.268) and per_flow.loc[0, "T_source"] == "ss rto"
    assert per_flow.loc[0, "timeouts"] == 1 and agg["timeouts"] == 1  # the fast retransmit is not one


def test_packet_table_from_tshark_columns():
    raw = pd.DataFrame({
        "frame.time_epoch": [1.0, 1.001, 1.002, 1.05, 1.06],
        "ip.src": ["10.1.0.1", "10.1.0.2", "10.1.0.1", "10.1.0.2", "10.1.0.1"],
        "tcp.srcport": [40000, 5201, 40000, 5201, 40000],
        "tcp.dstport": [5201, 40000, 5201, 40000, 5201],
        "tcp.seq": [0, 0, 1, 1, 1449], "tcp.len": [0, 0, 1448, 0, 1448], "tcp.ack": [0, 1, 1, 1449, 1],
        "tcp.analysis.ack_rtt": [np.nan, 0.001, np.nan, 0.048, np.nan],
        "tcp.flags.syn": [1, 1, 0, 0, 0], "tcp.flags.fin": [0, 0, 0, 0, 0],
    })
    pk = lm.packet_table(raw, "10.1.0.1", 5201)
    assert pk.kind.tolist() == ["data", "ack", "data"]
    assert pk.flow.unique().tolist() == [40000]
    assert pk[pk.kind == "ack"].ack_rtt.tolist() == [0.048]


def test_read_capture_types_tshark_columns_like_the_untyped_reader():
    """On a real capture (Lab 1's reference slice), the typed reader gives the same packet table."""
    import json

    from mptcplab.labs.lab1.analysis import find_detail
    from mptcplab.measure.tshark import fields
    from mptcplab.run.lab import REPO_ROOT

    d = find_detail(REPO_ROOT / "solutions/results/lab1")
    sender = json.loads((d / "manifest.json").read_text())["network"]["paths"][0]["a_addr"]
    typed = lm.read_capture(d / "capture-window.pcap", sender, 5201)
    raw = fields(d / "capture-window.pcap", lm.TSHARK_FIELDS, display_filter="tcp.port == 5201",
                 prefs=lm.TSHARK_PREFS, typed=False)
    guessed = lm.packet_table(raw, sender, 5201)
    assert len(typed) > 1000 and set(typed["kind"]) == {"data", "ack"}
    pd.testing.assert_frame_equal(typed.astype({"kind": object}), guessed.astype({"kind": object}), check_dtype=False)


def test_emulator_loss_is_counted_over_the_window_only():
    # Warm-up (t < 10): slow start overshoots the queue, 50 drops in 1000 packets. In the window
    # [10, 20]: 10 drops in 2000 packets sent. After it: the drain, no drops.
    q = pd.DataFrame({"time": [0.0, 9.9, 10.1, 15.0, 19.9, 25.0],
                      "packets": [0, 1000, 1010, 2000, 3010, 3500],
                      "drops": [0, 50, 50, 55, 60, 60]})
    q["bytes"] = q.packets * 1514
    w = qdisc_window(q, (10.0, 20.0))
    assert (w["sent"], w["dropped"]) == (2000, 10) and w["span_s"] == pytest.approx(9.8)
    assert w["p_r_emulator"] == pytest.approx(10 / 2010)
    assert w["wire_mbps"] == pytest.approx(2000 * 1514 * 8 / 9.8 / 1e6)
    whole = qdisc_window(q, (-np.inf, np.inf))
    assert whole["p_r_emulator"] == pytest.approx(60 / 3560)  # what the old before/after count gave
    assert qdisc_window(q, (12.0, 14.0))["p_r_emulator"] is None  # no two samples inside
    assert qdisc_window(pd.DataFrame(), (10.0, 20.0))["sent"] is None


def _ss(samples):
    """`ss` rows (observe.parse_ss columns) from (time, port, srtt ms, min RTT ms)."""
    return pd.DataFrame([{"time": t, "local": f"10.1.0.1:{port}", "rtt_ms": srtt, "minrtt_ms": mn, "rto_ms": 264.0}
                         for t, port, srtt, mn in samples])


def test_kernel_rtt_per_flow_from_ss_in_the_window():
    ss = _ss([(99.0, 1, 300.0, 60.0),  # warm-up: not in the window
              (100.5, 1, 61.0, 60.2), (101.0, 1, 63.0, 60.1), (101.5, 2, 70.0, 60.4), (103.0, 2, 90.0, 60.0)])
    k = lm.kernel_rtt_per_flow(ss, (100.0, 102.0))
    assert k.loc[1, "srtt"] == pytest.approx(0.062) and k.loc[1, "min_rtt"] == pytest.approx(0.0601)
    assert k.loc[1, "srtt_samples"] == 2 and k.loc[2, "srtt_samples"] == 1
    assert lm.kernel_rtt_per_flow(pd.DataFrame(), (100.0, 102.0)).empty


def test_models_get_the_kernel_srtt_and_every_rtt_is_kept():
    # tshark's ack_rtt says 60 ms here (flow_packets); the kernel says srtt 62 / 66 ms, min 60 ms.
    # Flow 1 loses segments 100 and 161, 61 ms apart: two loss events with the 60 ms ack_rtt, one
    # with the kernel's 62 ms srtt, which is what the models and the loss events now use.
    pk = table(flow_packets(1, 1000, lost=(100, 161)), flow_packets(2, 1000), flow_packets(3, 1000))
    ss = _ss([(100.5, 1, 62.0, 60.0), (101.0, 2, 66.0, 60.1), (101.5, 2, 66.0, 60.1)])  # flow 3: no samples
    per_flow, agg = lm.measure(pk, (100.0, 102.0), kernel_rtt=lm.kernel_rtt_per_flow(ss, (100.0, 102.0)))
    f = per_flow.set_index("flow")
    assert f.loc[1, "rtt"] == pytest.approx(0.062) and f.loc[1, "rtt_source"] == "ss srtt"
    assert f.loc[1, "ack_rtt"] == pytest.approx(RTT) and f.loc[1, "min_rtt"] == pytest.approx(0.060)
    assert f.loc[1, "loss_events"] == 1 and f.loc[1, "T"] == pytest.approx(0.262)
    assert f.loc[3, "rtt"] == pytest.approx(RTT) and f.loc[3, "rtt_source"] == "tshark ack_rtt"
    # The run: every srtt sample of every flow (62, 66, 66), the smallest min RTT, all ACKs' ack_rtt.
    assert agg["srtt"] == pytest.approx(0.064667, abs=1e-6) and agg["rtt"] == agg["srtt"]
    assert agg["rtt_source"] == "ss srtt" and agg["min_rtt"] == pytest.approx(0.060)
    assert agg["ack_rtt"] == pytest.approx(RTT) and agg["loss_events_cumulative"] == 1
    _, old = lm.measure(pk, (100.0, 102.0))  # without ss: tshark's ack_rtt, as before
    assert old["rtt"] == pytest.approx(RTT) and old["rtt_source"] == "tshark ack_rtt"
    assert old["loss_events_per_flow"] == 2


def test_qdisc_rate_bounds_take_the_time_a_read_may_have_taken():
    """Under TCG starting `tc` takes a while: the sample's read happened between `time` and
    `time_after`, so the lowest rate the samples allow divides by the longest span."""
    from mptcplab.measure.observe import parse_qdisc
    text = ("@ 10.0\n[{\"kind\":\"netem\",\"root\":true,\"packets\":0,\"bytes\":0,\"drops\":0}]\n= 10.2\n"
            "@ 12.0\n[{\"kind\":\"netem\",\"root\":true,\"packets\":900,\"bytes\":1375000,\"drops\":0}]\n= 12.5\n")
    q = parse_qdisc(text)
    assert list(q["time_after"]) == [10.2, 12.5]
    w = qdisc_window(q, (9.0, 13.0))
    assert w["wire_mbps"] == pytest.approx(5.5) and w["wire_mbps_min"] == pytest.approx(4.4)
