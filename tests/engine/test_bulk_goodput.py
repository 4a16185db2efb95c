"""Goodput of several flows from the receiver's report: one span for all of them, never the sum of
each flow's own rate (the sum overran a 4 Mbit/s link's ceiling in Lab 3's DropTail runs)."""

import csv

import pytest

from mptcplab.judge import physics
from mptcplab.judge.check import check_runs_table
from mptcplab.measure.traffic import bulk_result

IV = 0.1
CEILING = physics.link_ceiling_bps(4e6)  # 3.826 Mbit/s of payload through a 4 Mbit/s link


def _flow(i, start, end, rate_bps, received_before=0.0):
    """What the receiver reports for one flow receiving `rate_bps` from `start` to `end` (epoch s):
    one sample per bin of the bytes the kernel had received by then."""
    k0, k1 = round(start / IV), round(end / IV)
    per_bin = rate_bps / 8 * IV
    samples = [[k * IV, received_before + per_bin * (k - k0)] for k in range(k0, k1 + 1)]
    return {"flow": i, "peer": f"10.1.0.1:{40000 + i}", "bytes": received_before + per_bin * (k1 - k0),
            "first": start + IV, "last": end, "counted": "kernel", "samples": samples}


def shared_link():
    """Two flows share the link: both from 1000 s; flow 1's sender has drained at 1010 s, after
    which flow 0 has the link to itself until 1020 s. The link is full all the time."""
    f0 = _flow(0, 1000.0, 1010.0, CEILING / 2)
    late = _flow(0, 1010.0, 1020.0, CEILING, received_before=f0["bytes"])
    f0.update(bytes=late["bytes"], last=late["last"], samples=f0["samples"] + late["samples"][1:])
    srv = {"flows": [f0, _flow(1, 1000.0, 1010.0, CEILING / 2)]}
    client = {"flows": [{"local": f"10.1.0.1:{40000 + i}", "cc": "reno"} for i in (0, 1)]}
    return bulk_result(client, srv, "10.1.0.2", 5201, "tcp", 20.0, IV)


def test_goodput_of_several_flows_is_counted_over_one_span():
    r = shared_link()
    per_flow_sum = sum(f["goodput_transfer_mbps"] for f in r.flows) * 1e6
    # Each flow's own rate is right for that flow; their sum is not the link's goodput: flow 1's
    # rate counts its 10 s (0.5 of the link), flow 0's 20 s (0.75: it had flow 1's share in the
    # second half): 1.25 links.
    assert per_flow_sum == pytest.approx(1.25 * CEILING, rel=0.01) and per_flow_sum > CEILING * 1.2
    assert r.goodput_transfer_mbps * 1e6 == pytest.approx(CEILING, rel=0.01)
    assert r.goodput_transfer_mbps * 1e6 <= physics.allowed(CEILING)


def test_window_goodput_interpolates_the_kernel_count():
    r = shared_link()
    assert r.goodput_window_mbps(1005.0, 1015.0) * 1e6 == pytest.approx(CEILING)
    assert r.goodput_window_mbps(1005.03, 1014.97) * 1e6 == pytest.approx(CEILING)
    assert r.goodput_window_mbps(1015.0, 1005.0) == 0.0
    # the bins for plots hold the same bytes: the link is full in every one of them
    per_bin = r.intervals.groupby("time")["bytes"].sum()
    assert per_bin.to_numpy() * 8 / IV == pytest.approx(CEILING)


def test_a_late_reader_does_not_move_bytes_into_the_window():
    """The receiver was descheduled from 1000.9 to 1001.06 s and read the backlog at once. Counted
    at read time, the 160 ms of bytes land after 1001.0 and a 2 s window from there shows 104% of
    the link; the kernel's count (sampled at the late read too) puts them where they arrived."""
    rate = CEILING
    per_s = rate / 8
    samples = [[t, (t - 1000.0) * per_s] for t in (1000.0, 1000.5, 1000.9, 1001.06, 1001.5, 1002.0, 1003.0)]
    srv = {"flows": [{"flow": 0, "peer": "10.1.0.1:40000", "bytes": 3 * per_s, "first": 1000.0,
                      "last": 1003.0, "counted": "kernel", "samples": samples}]}
    r = bulk_result({"flows": [{"local": "10.1.0.1:40000"}]}, srv, "10.1.0.2", 5201, "tcp", 3.0, IV)
    assert r.goodput_steady_mbps(1.0) * 1e6 == pytest.approx(rate)
    assert r.extra["counted"] == ["kernel"]


def test_one_flow_goodput_is_unchanged():
    srv = {"flows": [_flow(0, 1000.0, 1010.0, 3e6)]}
    r = bulk_result({"flows": [{"local": "10.1.0.1:40000"}]}, srv, "10.1.0.2", 5201, "tcp", 10.0, IV)
    assert r.goodput_transfer_mbps == pytest.approx(r.flows[0]["goodput_transfer_mbps"])


def test_checker_judges_lab3_goodput_against_the_ceiling(tmp_path):
    table = tmp_path / "lab3" / "runs.csv"
    table.parent.mkdir()
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "scenario", "capacity_mbps", "goodput_window_mbps", "emulator_wire_mbps"])
        w.writerow(["droptail-4mbit-n08-r1", "droptail", 4.0, 3.998, ""])  # the old sum of per-flow rates
        w.writerow(["droptail-4mbit-n02-r1", "droptail", 4.0, 3.82, 3.995])  # 3.82 = 3.995 x 1448 / 1514
        w.writerow(["droptail-4mbit-n04-r1", "droptail", 4.0, 3.82, 4.2])  # an emulator faster than told
        w.writerow(["random-1pct-n08-r1", "random", "", 19.0, 19.9])  # no capacity: nothing to judge
    verdicts = check_runs_table(table)
    assert [v.ok for v in verdicts] == [False, True, True, True, False]
    assert verdicts[0].bound == pytest.approx(CEILING * 1.01 / 1e6)
    assert "emulator's wire rate" in verdicts[-1].line() and verdicts[-1].bound == pytest.approx(4.04)


def test_a_window_starting_in_a_loss_repair_counts_the_stall():
    """A loss at 1000.8 s: the in-order count stands still until the retransmission fills the hole at
    1001.2 s, then every byte held behind it is counted at once, though they crossed the link during
    the stall. Taken from 1001.0 (inside the stall), the old reading was 110% of the ceiling."""
    per_s = CEILING / 8
    held = 0.4 * per_s  # what crossed during the stall, delivered at 1001.2
    samples = [[1000.0 + k * IV, k * IV * per_s] for k in range(9)]  # 1000.0 .. 1000.8 steady
    samples += [[1000.9, 0.8 * per_s], [1001.0, 0.8 * per_s], [1001.1, 0.8 * per_s]]  # the stall
    samples += [[1001.2 + k * IV, (1.2 + k * IV) * per_s] for k in range(19)]  # released, then steady
    srv = {"flows": [{"flow": 0, "peer": "10.1.0.1:40000", "bytes": samples[-1][1], "first": 1000.0,
                      "last": samples[-1][0], "counted": "kernel", "samples": samples}]}
    r = bulk_result({"flows": [{"local": "10.1.0.1:40000"}]}, srv, "10.1.0.2", 5201, "tcp", 3.0, IV)
    naive = (r.received_by(r.t_end) - r.received_by(1001.0)) * 8 / (r.t_end - 1001.0)
    assert naive > CEILING * 1.09 and held > 0  # what the window read before: 110% of the ceiling
    assert r.stall_start(1001.0) == pytest.approx(1000.8)
    assert r.goodput_window_mbps(1001.0, r.t_end) * 1e6 == pytest.approx(CEILING)
    assert r.goodput_steady_mbps(1.0) * 1e6 <= CEILING * (1 + 1e-9)
    assert r.goodput_window_mbps(1000.5, r.t_end) * 1e6 == pytest.approx(CEILING)  # a moving count: unchanged


def test_a_nearly_still_count_is_a_stall_too():
    """The setup check's single TCP on Lab 2's 80 ms path in the VM (2026-11-25, the receiver's own
    samples): from 0.64 s to 1.0 s the count crept at 0.59 Mbit/s while a loss was repaired, then
    the held bytes came at 9.9 Mbit/s. Judged from 1.0 s, the first window read 5.2 Mbit/s of a
    5 Mbit/s link (ceiling 4.78); from where the repair began it reads what the link carried."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p4-loss-repair.json").read_text())
    r = BulkResult("kit", "tcp", 4.0, d["t0"], d["t_end"], [], None, samples=d["samples"])
    start = d["t0"] + 1.0
    naive = (r.received_by(r.t_end) - r.received_by(start)) * 8 / (r.t_end - start) / 1e6
    assert naive == pytest.approx(5.2, abs=0.01)
    assert r.stall_start(start) == pytest.approx(d["t0"] + 0.635, abs=1e-3)
    assert r.goodput_steady_mbps(1.0) == pytest.approx(4.78, abs=0.01)
    assert r.goodput_steady_mbps(1.0) * 1e6 <= physics.link_ceiling_bps(5e6)  # 4.7815 of 4.7820
    assert r.stall_start(d["t0"] + 3.0) == pytest.approx(d["t0"] + 3.0)  # steady there: unchanged


def test_a_window_starting_in_the_release_after_a_repair_counts_the_repair():
    """The setup check's single TCP on Lab 1's 100 Mbit/s, 80 ms path in UML (2026-11-25): a repair
    from 0.66 s (19.5 Mbit/s) released its held bytes at 156-193 Mbit/s until 1.06 s; the window
    from 1.0 s began in the release and read 98.2 Mbit/s (ceiling 95.6)."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "uml-lab1-slow-release.json").read_text())
    r = BulkResult("kit", "tcp", 3.0, d["t0"], d["t_end"], [], None, samples=d["samples"])
    assert r.stall_start(d["t0"] + 1.0) == pytest.approx(d["t0"] + 0.662, abs=1e-3)
    assert r.goodput_steady_mbps(1.0) * 1e6 <= physics.link_ceiling_bps(100e6)
    assert r.goodput_steady_mbps(1.0) == pytest.approx(95.6, abs=0.1)


def test_a_window_starting_in_a_gap_of_the_samples_counts_the_whole_gap():
    """The setup check's single TCP on Lab 2's 80 ms path in the VM under a load of 2 (2026-11-25,
    the receiver's own samples): none from 0.66 to 1.34 s (the sampler not scheduled), a repair
    from about 1.0 s until the held bytes came at 1.68 s. From 1.0 s, with the count there
    interpolated across the gap, 4.88 Mbit/s of a 5 Mbit/s link; from where the gap began, what
    the link carried."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p4-sampling-gap.json").read_text())
    r = BulkResult("kit", "tcp", 5.7, d["t0"], d["t_end"], [], None, samples=d["samples"])
    start = d["t0"] + 1.0
    naive = (r.received_by(r.t_end) - r.received_by(start)) * 8 / (r.t_end - start) / 1e6
    assert naive == pytest.approx(4.88, abs=0.01)
    assert r.stall_start(start) == pytest.approx(d["t0"] + 0.656, abs=1e-3)
    assert r.goodput_steady_mbps(1.0) * 1e6 <= physics.link_ceiling_bps(5e6) * 1.001
    assert r.stall_start(d["t0"] + 3.0) == pytest.approx(d["t0"] + 3.0)  # steady and sampled there: unchanged


def test_the_whole_transfers_goodput_never_counts_bytes_from_before_the_first_read():
    """A reader that first reads 0.5 s into a transfer at the link's ceiling finds 0.5 s of bytes
    waiting: over first read to last byte, counting them reads 5% above the link (as the VM's setup
    check did, 4.86 Mbit/s on a 5 Mbit/s link); the transfer's goodput counts only what arrived
    inside the span."""
    f = _flow(0, 1000.0, 1010.0, CEILING)
    f["samples"] = [s for s in f["samples"] if s[0] >= 1000.5]  # the reader's first sample, at its first read
    f["first"] = 1000.5
    r = bulk_result({"flows": [{"local": "10.1.0.1:40000", "cc": "reno"}]}, {"flows": [f]}, "10.1.0.2", 5201,
                    "tcp", 10.0, IV)
    read = sum(fl["bytes"] for fl in r.flows) * 8 / (r.t_end - r.t0)  # what the reader read, over its span
    assert read > CEILING * 1.04
    assert r.goodput_transfer_mbps * 1e6 == pytest.approx(CEILING, rel=1e-6)


def test_a_tail_repaired_by_timeout_does_not_count_as_the_links_pace():
    """The setup check's single TCP on Lab 2's 40 ms path in the VM (2026-11-28, the receiver's own
    samples): 4.78 Mbit/s until 4.87 s, then the last 6.5 KB at 5.36 s (lost at the end, repaired by
    timeout). To the last byte the window read 4.28 Mbit/s, 89.5% of the ceiling, and the check
    refused the place; ended where the tail's stall began it reads the link's pace, not above it."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p2-tail-timeout.json").read_text())
    r = BulkResult("kit", "tcp", 3.0, d["t0"], d["t_end"], [], None, samples=d["samples"])
    naive = r.goodput_window_mbps(d["t0"] + 1.0, d["t_end"])
    assert naive == pytest.approx(4.28, abs=0.01)
    assert r.tail_start(d["t_end"]) == pytest.approx(d["t0"] + 4.87, abs=0.01)
    assert r.goodput_steady_mbps(1.0) == pytest.approx(4.787, abs=1e-3)  # the ceiling is 4.782: within its 1%
    assert physics.judge_link("p2", r.goodput_steady_mbps(1.0) * 1e6, 5e6, 0.9).ok
    assert not physics.judge_link("p2", naive * 1e6, 5e6, 0.9).ok  # the refusal it replaced
    # a transfer moving at its pace to the end keeps its end
    assert r.tail_start(d["t0"] + 4.5) == pytest.approx(d["t0"] + 4.5)


def test_a_short_slow_end_is_the_last_interval_not_a_tail_to_cut():
    """Under a load of 2 (2026-11-28), the 20 ms path's last samples: held bytes released at 8.4 Mbit/s
    for 0.09 s, then the last 11 KB in 0.13 s. Shorter than any retransmission timeout, that slow
    end is the last byte ending the last interval early: cut, the window kept the release and read
    4.87 Mbit/s of a 4.78 ceiling (refused); kept, it reads 4.70."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p1-release-at-the-end.json").read_text())
    r = BulkResult("kit", "tcp", 3.0, d["t0"], d["t_end"], [], None, samples=d["samples"])
    assert r.tail_start(d["t_end"]) == d["t_end"]
    assert r.goodput_steady_mbps(1.0) == pytest.approx(4.70, abs=0.01)
    assert physics.judge_link("p1", r.goodput_steady_mbps(1.0) * 1e6, 5e6, 0.9).ok


def test_a_window_starts_where_the_receiver_holds_no_out_of_order_data():
    """The setup check's single TCP on Lab 2's 60 ms path in the VM (CI, 2026-11-28, the receiver's
    samples): slow start ended in 113 drops, and the repair released held bytes at up to 6.9 Mbit/s
    until about 2 s in. Judged from 1.0 s the window read 4.97 Mbit/s of a 5 Mbit/s link (ceiling
    4.78); stall_start found no stall before 1.0 s to go back to. That run did not record its
    sender's SACKed count; here the sender reports held segments until 1.97 s, then none, and the
    window starts there."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p3-slow-start-repair.json").read_text())
    without = BulkResult("kit", "tcp", 4.0, d["t0"], d["t_end"], [], None, samples=d["samples"])
    assert without.goodput_steady_mbps(1.0) == pytest.approx(4.97, abs=0.01)  # the refusal
    assert without.clean_start(d["t0"] + 1.0) == d["t0"] + 1.0  # no sender's count: the window as before
    t0 = d["t0"]
    sacked = [[t0 + k * 0.05, 40 if 0.2 <= k * 0.05 < 1.97 else 0] for k in range(76)]
    r = BulkResult("kit", "tcp", 4.0, t0, d["t_end"], [], None, samples=d["samples"], sacked=[sacked])
    assert r.clean_start(t0 + 1.0) == pytest.approx(t0 + 2.0)  # the first sample from 1.97 s on
    assert r.goodput_steady_mbps(1.0) == pytest.approx(4.73, abs=0.01)
    assert physics.judge_link("p3", r.goodput_steady_mbps(1.0) * 1e6, 5e6, 0.9).ok
    # clean at the nominal start: the window keeps it; several flows: every one must be clean
    assert r.clean_start(t0 + 0.1) == pytest.approx(t0 + 0.1)
    assert r.clean_start(t0 + 0.12) == t0 + 0.12  # between two clean readings: t itself, not the next one
    two = BulkResult("kit", "tcp", 4.0, t0, d["t_end"], [], None, samples=d["samples"],
                     sacked=[sacked, [[t0 + 2.5, 0], [t0 + 2.2, 3]][::-1]])
    assert two.clean_start(t0 + 1.0) == pytest.approx(t0 + 2.5)


def test_a_count_read_long_after_its_time_is_read_again(monkeypatch):
    """bulk.timed_count: a reader descheduled between taking the time and reading the kernel's count
    (up to 296 ms in the VM under TCG) would pair the count with a time too early; such a reading
    is taken again, and a reading that never came quick is kept with both of its times."""
    import struct
    import time

    from mptcplab.measure import bulk

    class Sock:
        def __init__(self, slow):
            self.slow, self.calls = slow, 0

        def getsockopt(self, level, opt, size):
            if level == bulk.SOL_MPTCP:
                raise OSError("not MPTCP")
            self.calls += 1
            if self.calls <= self.slow:
                time.sleep(0.01)
            return bytes(bulk.TCPI_BYTES_RECEIVED) + struct.pack("=Q", 1000 * self.calls) + bytes(64)

    s = Sock(slow=2)
    before, count, after = bulk.timed_count(s)
    assert s.calls == 3 and count == 3000 and after - before <= bulk.COUNT_TIMED_WITHIN_S
    s = Sock(slow=99)
    before, count, after = bulk.timed_count(s, tries=2)
    assert s.calls == 2 and count == 2000 and after - before >= 0.01  # kept, with how long it took


def test_a_sender_reading_of_nothing_sacked_counts_only_when_the_next_agrees():
    """The setup check's single TCP on Lab 1's 20 Mbit/s fast path in UML (2026-11-29): the sender
    read 0 SACKed segments at about 1.0 s and 74 at 1.1 s, the receiver's count crept then released
    (12.6, then 35.4 Mbit/s), and a window from 1.0 s read 19.33 Mbit/s on a 19.13 ceiling. The hole
    was already there at 1.0 s; the sender had not heard of it yet."""
    import json
    from pathlib import Path

    from mptcplab.measure.traffic import BulkResult

    d = json.loads((Path(__file__).parent / "fixtures" / "goodput" /
                    "uml-lab1-fast-hole-before-the-sender-knew.json").read_text())
    r = BulkResult("kit", "tcp", 3.0, d["t0"], d["t_end"], [], None, samples=d["samples"], sacked=d["sacked"])
    assert r.clean_start(d["t0"] + 1.0) == pytest.approx(d["t0"] + 1.15, abs=0.01)
    assert physics.judge_link("fast", r.goodput_steady_mbps(1.0) * 1e6, 20e6, 0.95).ok
