"""Parsers of the observation sources, on text in the kernel's own formats."""

from pathlib import Path

import pytest

from mptcplab.measure import observe
from mptcplab.measure.observe import parse_ss, parse_trace, sndbuf_waits

TRACE = """\
 mlab-send-201    [000] d..2.   100.000000: sched_switch: prev_comm=mlab-send prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper next_pid=0 next_prio=120
 mlab-send-201    [000] d..2.   100.000001: <stack trace>
 => __schedule
 => schedule
 => wait_woken
 => sk_stream_wait_memory
 => mptcp_sendmsg
 => __sys_sendto
 <idle>-0       [000] d..2.   100.004000: sched_switch: prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=mlab-send next_pid=201 next_prio=120
 mlab-send-201    [000] d..2.   100.010000: sched_switch: prev_comm=mlab-send prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper next_pid=0 next_prio=120
 mlab-send-201    [000] d..2.   100.010001: <stack trace>
 => __schedule
 => schedule
 => do_nanosleep
 <idle>-0       [000] d..2.   100.020000: sched_switch: prev_comm=swapper prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=mlab-send next_pid=201 next_prio=120
 ksoftirqd-9     [000] ..s1.   100.030000: tcp_probe: family=AF_INET src=10.1.0.1:40000 dest=10.1.0.2:5201 mark=0x0 data_len=0 snd_nxt=0x10 snd_una=0x8 snd_cwnd=10 ssthresh=2147483647 snd_wnd=64256 srtt=120 rcv_wnd=65535 sock_cookie=1
"""


def test_sched_switch_stacks_give_only_send_buffer_waits():
    waits = sndbuf_waits(TRACE, clock_offset=1000.0, method="sched_switch:kstack")
    assert len(waits) == 1  # the nanosleep block is not a send-buffer wait
    row = waits.iloc[0]
    assert row["start"] == 1100.0 and abs(row["duration_s"] - 0.004) < 1e-9
    assert row["method"] == "sched_switch:kstack"


def test_kprobe_pairs():
    text = (" mlab-send-5 [000] ..... 1.000000: mlab_x_in: (sk_stream_wait_memory+0x0/0x2a0)\n"
            " mlab-send-5 [000] ..... 1.250000: mlab_x_out: (mptcp_sendmsg+0x1/0x2 <- sk_stream_wait_memory)\n")
    waits = sndbuf_waits(text, 0.0, "kprobe:sk_stream_wait_memory")
    assert waits["duration_s"].round(6).tolist() == [0.25]


def test_parse_trace_key_values_and_time():
    events = parse_trace(TRACE, clock_offset=1000.0)
    probe = events["tcp_probe"].iloc[0]
    assert probe["snd_cwnd"] == 10 and probe["srtt"] == 120 and probe["time"] == 1100.03
    assert probe["src"] == "10.1.0.1:40000"


def test_parse_ss_samples():
    text = ("@ 1700000000.5\n"
            "tcp   ESTAB 0 0 10.2.0.1%slow:41234 10.1.0.2:5201\n"
            "\t cubic wscale:7,7 rto:284 rtt:81.2/0.4 mss:1448 cwnd:312 ssthresh:200 bytes_acked:9000 "
            "unacked:120 retrans:0/3 notsent:4096 tcp-ulp-mptcp flags:Jjec\n")
    df = parse_ss(text)
    row = df.iloc[0]
    assert row["local"] == "10.2.0.1:41234" and row["cwnd"] == 312 and row["rtt_ms"] == 81.2
    assert row["retrans_total"] == 3 and row["notsent"] == 4096 and bool(row["mptcp_subflow"])
    assert row["netid"] == "tcp"


QDISC = """\
@ 1000.0
[{"kind":"netem","handle":"8002:","root":true,"refcnt":2,"options":{"limit":150,"delay":{"delay":0.03,\
"jitter":0,"correlation":0},"rate":{"rate":500000}},"bytes":151400,"packets":100,"drops":3,"overlimits":0,\
"requeues":0,"backlog":3028,"qlen":2}]
@ 1000.2
[{"kind":"netem","handle":"8002:","root":true,"refcnt":2,"options":{"limit":150},"bytes":302800,"packets":200,\
"drops":5,"overlimits":0,"requeues":0,"backlog":0,"qlen":0},{"kind":"pfifo","handle":"1:","parent":"8002:1",\
"bytes":9,"packets":9,"drops":9}]
@ 1000.4
[{"kind":"netem","handle":"8002:","root":true,"bytes":30
"""


def test_qdisc_samples_keep_the_root_counters_and_skip_a_cut_line():
    from mptcplab.measure.observe import parse_qdisc

    q = parse_qdisc(QDISC)
    assert q.time.tolist() == [1000.0, 1000.2]  # the last sample was cut short by the stop
    assert q.packets.tolist() == [100, 200] and q.drops.tolist() == [3, 5] and q.bytes.tolist() == [151400, 302800]
    assert set(q.kind) == {"netem"} and q.qlen.tolist() == [2, 0]


def test_one_sample_of_every_device_gives_each_devices_root_counters():
    """QdiscSampler with several devices samples the whole host at once (the setup check's paths)."""
    from mptcplab.measure.observe import parse_qdisc

    sample = lambda t, a, b: (f"@ {t}\n"  # noqa: E731
                              f'[{{"kind":"noqueue","handle":"0:","dev":"br-p1","root":true,"bytes":0,"packets":0}},'
                              f'{{"kind":"netem","handle":"8001:","dev":"b-p1","root":true,"bytes":{a},"packets":{a // 100}}},'
                              f'{{"kind":"netem","handle":"8002:","dev":"b-p2","root":true,"bytes":{b},"packets":{b // 100}}}]\n'
                              f"= {t + 0.05}\n")
    text = sample(1000.0, 1000, 5000) + sample(1000.2, 3000, 9000)
    assert parse_qdisc(text, "b-p1").bytes.tolist() == [1000, 3000]
    assert parse_qdisc(text, "b-p2").bytes.tolist() == [5000, 9000]
    assert parse_qdisc(text, "b-p2").time_after.tolist() == [1000.05, 1000.25]
    assert parse_qdisc(text, "b-p9").empty


def test_cpu_times_parse_proc_stat_and_softnet():
    stat = "cpu  10 1 20 60 0 0 9 0 0 0\ncpu0 10 1 20 60 0 0 9 0 0 0\nintr 5\n"
    assert observe.parse_proc_stat(stat) == {"user": 10, "nice": 1, "system": 20, "idle": 60, "iowait": 0,
                                              "irq": 0, "softirq": 9, "steal": 0}
    softnet = ("0000000a 00000001 00000002 00000000 00000000\n"
               "00000010 00000000 00000003 00000000 00000000\n")
    assert observe.parse_softnet(softnet) == {"processed": 26, "dropped": 1, "time_squeeze": 5}


def test_a_capture_is_stopped_only_once_tcpdump_has_written_what_it_holds(tmp_path):
    """tcpdump behind its socket (an emulated CPU under load) keeps writing after the transfer; a
    SIGINT then would lose the rest. drain() waits until the file stops growing."""
    import threading
    import time

    cap = observe.Capture.__new__(observe.Capture)
    cap.writing = tmp_path / "links.pcap"

    def tcpdump_catching_up():
        for _ in range(12):  # 1.2 s more of writing after the transfer ended
            with open(cap.writing, "ab") as f:
                f.write(b"x" * 100)
            time.sleep(0.1)

    writer = threading.Thread(target=tcpdump_catching_up)
    writer.start()
    took = cap.drain(settle_s=0.3)
    writer.join()
    assert cap.writing.stat().st_size == 1200 and 1.2 <= took < 3
    assert cap.drain(settle_s=0.3, limit_s=5) < 1  # nothing more to write: stops after settle_s


def test_a_capture_and_counters_say_where_their_time_went(tmp_path, monkeypatch):
    """tcpdump's start and stop and the nstat reads are steps of the run's `timings`: the setup
    check's MPTCP step took 14.7 s for a 3 s transfer in the VM, with nothing saying where. tcpdump
    writes into memory (observe.CAPTURES), and the capture lands in the run directory when it stops."""
    import io
    import json
    import subprocess

    from mptcplab.run.results import RunDir

    class Tcpdump:
        pid = 0
        stderr = io.StringIO("listening on any, link-type LINUX_SLL2\n")

        def send_signal(self, sig):
            pass

        def communicate(self, timeout=None):
            return "", "10 packets captured\n10 packets received by filter\n0 packets dropped by kernel\n"

    class Net:
        def popen(self, host, argv, **kw):
            Path(argv[argv.index("-w") + 1]).write_bytes(b"pcap")
            return Tcpdump()

        def stop(self, proc):
            pass

        def run(self, host, argv, **kw):
            return subprocess.CompletedProcess(argv, 0, json.dumps({"kernel": {"TcpExtX": 1}}), "")

    monkeypatch.setattr(observe.Capture, "drain", lambda self, **kw: 0.0)
    monkeypatch.setattr(observe, "CAPTURES", tmp_path / "memory")
    rd = RunDir(tmp_path / "r", {})
    with observe.Capture(Net(), "a", rd, name="c.pcap") as cap, observe.Counters(Net(), "a", rd):
        assert cap.writing.parent.parent == tmp_path / "memory" and not cap.path.exists()
    assert cap.path.read_bytes() == b"pcap" and not cap.writing.parent.exists()
    assert {"capture_start", "capture_stop", "counters"} <= set(rd.manifest["timings"])
    assert rd.manifest["observation"]["capture"]["captured"] == 10


def test_a_window_with_one_qdisc_sample_inside_is_judged_on_the_samples_around_it():
    """Under a load of 2 in the VM (2026-11-28) the setup check's qdisc sampler read the 40 ms path's
    emulator every 1-2.4 s: one sample inside the 3.9 s steady window, so no wire count, and the
    receiver's count alone (4.87 of a 4.78 ceiling, a release of held bytes at the window's start)
    refused the place. The samples around the window give what the link sent over a longer span."""
    import pandas as pd

    q = pd.read_csv(Path(__file__).parent / "fixtures" / "goodput" / "vm-lab2-p2-slow-qdisc-sampler.csv")
    window = (1795849663.802, 1795849667.680)
    assert observe.qdisc_window(q, window)["wire_mbps"] is None
    got = observe.qdisc_window(q, window, bracket=True)
    assert got["bracketed"] and got["span_s"] == pytest.approx(4.306, abs=1e-3)
    assert got["wire_mbps_min"] == pytest.approx(3.40, abs=0.01) and got["wire_mbps_min"] < 5.0
