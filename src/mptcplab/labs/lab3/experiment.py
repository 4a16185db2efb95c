"""Lab 3 experiment: n parallel TCP Reno flows against the throughput equations of Damjanovic et al.

One sender, one receiver, one path through the emulator with 30 ms one-way delay each way. For
every scenario point (random loss rate, or DropTail capacity) and n = 1..10: n Reno flows start
together; the sender-side capture, `ss` samples (the kernel's srtt, min RTT and RTO), the emulator's qdisc
counters and nstat counters are recorded; after the warm-up, the steady-state window gives p, p_e,
p_r, RTT, T, b and the throughput (measure.py), and the models are evaluated on them
(analysis.py).
"""

from __future__ import annotations

import math
import time

import pandas as pd

from . import analysis as lab3_analysis, claims as lab3_claims, fragments as lab3_fragments
from . import measure as lab3_measure, unseen as lab3_unseen
from ...core import log
from ...core.errors import ExperimentFailed, UsageError
from ...judge.check import check_runs_table
from ...measure.bulk import PORT
from ...measure.observe import Capture, Counters, CpuTimes, QdiscSampler, SsSampler, qdisc_window
from ...measure.traffic import bulk
from ...net.links import WIRE_BYTES, LinkSpec
from ...net.topology import EMULATOR, NetPath, Topology, port_facing, switches
from ...run.lab import Grading, Judging, Lab, Parameters, Point, RunContext, Running, link_with_delay

_log = log.get("lab3")


def _pct(loss: str) -> float:
    return LinkSpec.parse(f"loss={loss}").loss


def bdp_packets(rate_bps: float, rtt_s: float) -> int:
    """One bandwidth-delay product in full-size packets (the paper's DropTail queue)."""
    return max(2, math.ceil(rate_bps * rtt_s / 8 / WIRE_BYTES))


def points(params: dict, sweep=None) -> list[Point]:
    """Every run of the sweep, in order: scenario, its link (data direction), n, repetition."""
    recorded = {k: v for k, v in params.items() if k not in ("random", "droptail", "quick")}
    # The whole transfer: warm-up, the measured window, and 1 s so the window ends before the flows.
    duration = float(params["warmup_s"]) + float(params["steady_s"]) + 1.0
    return [Point(p["key"], {**recorded, **p, "duration_s": duration}) for p in sweep_points(params)]


def sweep_points(params: dict) -> list[dict]:
    """The runs as plain dicts: scenario, loss_cfg, capacity_mbps, link, n, rep, key."""
    delay = LinkSpec.parse(f"delay={params['paths']['p1']['delay']}").delay_s
    out = []
    flows = [int(n) for n in params["flows"]]
    if not flows or min(flows) < 1:
        raise UsageError(f"flows = {params['flows']}: give flow counts >= 1")
    # An optional rate on the random-loss link (`[random] rate`): above what the flows send, it
    # spaces the packets as a real link does (netem without one releases each burst at once).
    rate = params.get("random", {}).get("rate")
    for loss in params.get("random", {}).get("loss", []):
        link = (f"rate={rate}," if rate else "") + f"delay={params['paths']['p1']['delay']},loss={loss}"
        LinkSpec.parse(link)
        out += [{"scenario": "random", "loss_cfg": loss, "capacity_mbps": None, "link": link, "n": n}
                for n in flows]
    for cap in params.get("droptail", {}).get("capacity", []):
        rate = LinkSpec.parse(f"rate={cap}").rate_bps
        link = f"rate={cap},delay={params['paths']['p1']['delay']},queue={bdp_packets(rate, 2 * delay)}"
        out += [{"scenario": "droptail", "loss_cfg": None, "capacity_mbps": rate / 1e6, "link": link, "n": n}
                for n in flows]
    reps = int(params.get("repetitions", 1))
    out = [{**p, "rep": r} for p in out for r in range(1, reps + 1)]
    for p in out:
        p["key"] = key(p)
    return out


def key(p: dict) -> str:
    what = (f"{_pct(p['loss_cfg']) * 100:g}pct" if p["scenario"] == "random" else f"{p['capacity_mbps']:g}mbit")
    return f"{p['scenario']}-{what}-n{p['n']:02d}-r{p['rep']}"


def topology(params: dict) -> Topology:
    """One path snd -> rcv, as the setup check measures it (`paths.p1`: link and delay); each run
    then sets its scenario's link. The reverse (ACK) direction only has the delay."""
    p1 = params["paths"]["p1"]
    return Topology("lab3", hosts=("snd", "rcv"),
                    paths=[NetPath("p1", "snd", "rcv", link_with_delay(p1, "paths.p1"), f"delay={p1['delay']}")],
                    sysctls=params.get("sysctls", {}), **switches(params.get("network")))


RECOVERIES = ("TcpExtTCPSackRecovery", "TcpExtTCPRenoRecovery")  # nstat: fast recoveries entered
# nstat on the receiver -> the runs-table column (rcv_<key>).
RECEIVER_COUNTERS = {"out_segs": "TcpOutSegs", "in_segs": "TcpInSegs", "delayed_acks": "TcpExtDelayedACKs",
                     "backlog_coalesce": "TcpExtTCPBacklogCoalesce", "ofo_queue": "TcpExtTCPOFOQueue"}
BOTTLENECK_DEV = port_facing("p1")  # the emulator's egress toward rcv: the data direction's qdisc


def configure(net, point: Point, params: dict) -> None:
    """This run's link on the path (data direction); the ACK direction keeps its delay only. Then
    `run_sysctls`: set for the runs, after the setup check (which verifies the place with the
    network's own sysctls); recorded and read back into each run's manifest like the network's."""
    for host, values in params.get("run_sysctls", {}).items():
        for k, v in values.items():
            net.set_sysctl(host, k, str(v))
    link = point.values["link"]
    if str(net.topo.path("p1").link) != str(LinkSpec.parse(link)):
        net.set_link("p1", link, f"delay={params['paths']['p1']['delay']}")


def measure(net, rd, p: Point, params: dict) -> str:
    s = transfer(net, rd, p.values, params)
    return (f"{s['pps']:8.1f} pkt/s  p {s['p']:.4f}  p_e {s['p_e']:.4f}  "
            f"p_r {s['p_r']:.4f} (emulator {s['p_r_emulator'] or 0:.4f})  srtt {s['srtt'] * 1e3:5.1f} ms "
            f"(min {s['min_rtt'] * 1e3:5.1f}, ack_rtt {s['ack_rtt'] * 1e3:5.1f})  "
            f"T {s['T'] * 1e3:4.0f} ms  b {s['b']:.2f}  timeouts {s['timeouts']}")


def transfer(net, rd, point: dict, params: dict) -> dict:
    warmup, steady = float(params["warmup_s"]), float(params["steady_s"])
    n = point["n"]
    with Capture(net, "snd", rd, bpf_filter=f"tcp port {PORT}") as cap, \
            SsSampler(net, "snd", rd, PORT, interval=0.2) as ss, Counters(net, "snd", rd) as counters, \
            Counters(net, "rcv", rd, name="counters-rcv.json") as rcv_counters, \
            QdiscSampler(net, EMULATOR, rd, BOTTLENECK_DEV, interval=0.2) as qdisc, CpuTimes(rd) as cpu:
        r = bulk(net, "snd", "rcv", "p1", "tcp", duration=point["duration_s"], flows=n, cc=params["cc"], port=PORT)
    ccs = sorted({f["cc"] for f in r.flows})
    if ccs != [params["cc"]]:
        raise ExperimentFailed(f"{point['key']}: flows ran {ccs}, expected {params['cc']}")
    window = (r.t0 + warmup, r.t0 + warmup + steady)
    pk = lab3_measure.read_capture(cap.path, net.address("snd", "p1"), PORT)
    ss_table = pd.read_csv(ss.path.with_suffix(".csv"))
    rto = lab3_measure.rto_per_flow(ss_table, window)
    kernel_rtt = lab3_measure.kernel_rtt_per_flow(ss_table, window)
    per_flow, agg = lab3_measure.measure(pk, window, rto, kernel_rtt)
    per_flow.to_csv(rd.file("flows.csv"), index=False)
    # When each lost packet had been sent, from the window's start: enough to recount loss events.
    lost = lab3_measure.lost_packets(pk[pk["kind"] == "data"], window)
    lost[["flow", "t"]].to_csv(rd.file("losses.csv"), index=False)
    ss.path.unlink()  # ss.csv keeps the parsed samples
    if not params.get("keep_pcaps"):
        cap.path.unlink()
    # The emulator's own count of what it dropped, over the same window as p_r (the whole run would
    # add slow start's overshoot under DropTail); and over the whole transfer, for comparison.
    emu = qdisc_window(qdisc.table, window)
    whole = qdisc_window(qdisc.table, (-math.inf, math.inf))
    capture_note = rd.manifest.get("observation", {}).get("capture", {})
    rd.summary.update({
        **{k: point[k] for k in ("scenario", "n", "rep", "loss_cfg", "capacity_mbps", "link")},
        **agg, "model_b": lab3_analysis.model_b(agg["b"], params.get("model_b", 1)),
        # Goodput of the n flows together at the receiver, over the steady window (what `mptcplab
        # check` holds against the link's ceiling), and over the whole transfer, warm-up included.
        # Each flow's own rate over its own span, kept to show why their sum is not the aggregate.
        "goodput_window_mbps": round(r.goodput_window_mbps(*window), 3),
        "goodput_transfer_mbps": round(r.goodput_transfer_mbps, 3),
        "span_s": round(r.t_end - r.t0, 3),  # the whole transfer, warm-up included (as every lab records it)
        "per_flow_mbps": [round(f["goodput_transfer_mbps"], 3) for f in r.flows],
        "p_r_emulator": emu["p_r_emulator"], "emulator_wire_mbps": emu["wire_mbps"],
        # Packets the emulator held (delay line and queue) over the window: ~ rate x one-way delay
        # when it releases them on time, far more when it releases them late.
        "emulator_qlen": _window_median(qdisc.table, window, "qlen"),
        "emulator_wire_mbps_min": emu["wire_mbps_min"],
        "emulator": {"window": emu, "transfer": whole,
                     "qdisc": qdisc.table["kind"].iloc[-1] if len(qdisc.table) else None},
        "capture_dropped": capture_note.get("dropped by kernel"),
        "timeouts_nstat": counters.delta.get("TcpExtTCPTimeouts", 0),
        # How the sender's kernel recovered (whole transfer, warm-up included): fast recoveries
        # entered with and without SACK, tail-loss probes sent, timeouts F-RTO found spurious.
        "recoveries_nstat": sum(counters.delta.get(k, 0) for k in RECOVERIES),
        "loss_probes_nstat": counters.delta.get("TcpExtTCPLossProbes", 0),
        "recovery_nstat": {k: counters.delta.get(k, 0) for k in (*RECOVERIES, "TcpExtTCPLossProbes",
                                                                 "TcpExtTCPSpuriousRTOs", "TcpExtTCPTimeouts")},
        # How the receiver acknowledged (whole transfer): segments it sent (its ACKs), delayed-ACK
        # timers that fired, segments coalesced in a busy socket's backlog (one ACK then covers
        # them all), out-of-order segments queued: what the ACK ratio b is made of.
        **{f"rcv_{k}": rcv_counters.delta.get(v, 0) for k, v in RECEIVER_COUNTERS.items()},
        # How busy the kernel forwarding the packets was over the transfer (one kernel runs every
        # namespace): its CPU time by kind, and its receive softirq running out of budget or room.
        "cpu": cpu.share, "softnet": cpu.softnet,
        "cpu_busy": None if cpu.share["idle"] is None else round(1 - cpu.share["idle"], 4),
        "cpu_softirq": cpu.share["softirq"],
        "softnet_squeezed": cpu.softnet["time_squeeze"], "softnet_dropped": cpu.softnet["dropped"],
        "window": list(window), "cc": ccs[0],
    })
    return rd.summary


def _window_median(table: pd.DataFrame, window: tuple[float, float], col: str) -> float | None:
    if col not in table or table.empty:
        return None
    inside = table[(table["time"] >= window[0]) & (table["time"] <= window[1])]
    return float(inside[col].median()) if len(inside) else None


def check_parameters(params: dict) -> None:
    """What the generic checks cannot know: model_b is a number or "measured"."""
    if set(params.get("paths", {})) != {"p1"}:
        raise UsageError(f"paths = {sorted(params.get('paths', {}))}: lab3 has one path, [paths.p1] (its delay)")
    unknown = set(params.get("run_sysctls", {})) - {"snd", "rcv"}
    if unknown:
        raise UsageError(f"run_sysctls: unknown host(s) {', '.join(sorted(unknown))}; lab3's hosts are snd and rcv")
    b = params.get("model_b", 1)
    if not (b == "measured" or (isinstance(b, (int, float)) and not isinstance(b, bool) and b > 0)):
        raise UsageError(f"model_b = {b!r}: give a number > 0 (packets per ACK) or \"measured\"")


def check_congestion_control(net, rd, params: dict) -> str:
    """Part of the setup check: two flows on the lossless path really run the configured CC."""
    r = bulk(net, "snd", "rcv", "p1", "tcp", duration=2, flows=2, cc=params["cc"], port=PORT)
    rd.summary["checks"]["cc_seen"] = sorted({f["cc"] for f in r.flows})
    if rd.summary["checks"]["cc_seen"] != [params["cc"]]:
        raise ExperimentFailed(f"flows ran {rd.summary['checks']['cc_seen']}, not {params['cc']}")
    return f"  congestion control: {params['cc']}"


def finish(ctx: RunContext) -> dict:
    tables = lab3_analysis.compact(ctx.out)
    runs = tables["runs"]
    summary = lab3_analysis.error_summary(runs)
    table = summary.to_string(index=False, formatters={c: "{:.1%}".format for c in lab3_analysis.MODELS})
    _log.info("median |model / measured - 1| per model:\n%s", table)
    figs = lab3_analysis.write_figures(ctx.out, runs)
    _log.info("figures: %s", ", ".join(str(f) for f in figs))
    return {"runs": len(runs), "minutes": round((time.monotonic() - ctx.started) / 60, 2),
            "median_abs_error": summary.to_dict("records")}


LAB = Lab(id="lab3", slug="03-parallel-tcp",
          title="The parallel-TCP throughput equation (Damjanovic et al.): n Reno flows vs models 1 and 2",
          topology=topology, points=points, measure=measure, finish=finish, analysis=lab3_analysis,
          needs=("netem",),
          running=Running(configure=configure, path_checks={"mptcp": False, "min_utilisation": 0.9},
                          extra_check=check_congestion_control),
          parameters=Parameters(check=check_parameters, renamed={"delay": "paths.p1.delay"}, any_kind=("model_b",)),
          judging=Judging(results_checks={"runs.csv": check_runs_table}, claims=lab3_claims,
                          fragments=lab3_fragments.fragments),
          grading=Grading(answer_keys={"models": ("per_flow_terms", "parallel_per_flow", "cumulative_terms", "parallel_cumulative"),  # q1, q2, q6
                                       "notebook": ("model1_reference", "model2_reference", "loss_events_reference"),  # q1-q3
                                       "measure": ("group_loss_events",),  # q3-q5
                                       "predictions": ("predict", "graded_runs")},  # q6, q7
                          answer_columns={"runs.csv": ("model1", "model2", "err_model1", "err_model2")},  # q6: each run's predictions
                          held_out=lab3_unseen.held_out, unseen_answers=lab3_unseen.answers))
