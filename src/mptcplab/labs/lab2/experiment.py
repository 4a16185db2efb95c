"""Lab 2 experiment: the CS218 delay-window multipath congestion control on the real kernel.

For each run r, variant (static / mobility) and algorithm: one MPTCP bulk transfer over the
paths of experiment.toml, one subflow per path, with the algorithm chosen by TCP_CONGESTION on the
MPTCP socket, while seeded UDP on/off cross traffic congests some paths and (mobility) the
emulator changes path capacities mid-run. Run 1 of each variant is observed in detail (tcp_probe,
`ss` every 50 ms). The shared-bottleneck variant (a controlled run) sends every path's traffic
through one link first. Then the fairness experiment: the MPTCP connection and one single-path
Reno flow sharing a bottleneck, their split counted in the emulator's capture of that link. The algorithms are BPF struct_ops programs (mptcplab.labs.lab2.cc), loaded for
the experiment and removed afterwards. Analysis: analysis.py.
"""

from __future__ import annotations

import contextlib
import threading
import time

from . import analysis as lab2_analysis, cc, claims as lab2_claims, fragments as lab2_fragments
from . import unseen as lab2_unseen
from .cc import command as cc_command
from .fairness import FAIRNESS_PATHS, PREVIOUS_PARAMETERS, check_fairness_table
from ...core import log, process
from ...core.errors import ExperimentFailed, UsageError
from ...judge.check import check_runs_table
from ...measure.bulk import PORT
from ...measure.observe import Capture, SsSampler, Tracing
from ...measure.traffic import Transfer, bulk, concurrent, start_time, udp_onoff
from ...net.links import LinkSpec
from ...net.topology import EMULATOR, Bottleneck, NetPath, Topology, switches
from ...run.lab import Grading, Judging, Lab, Parameters, Point, RunContext, Running, link_with_delay
from .measure import subflow_table

_log = log.get("lab2")
TCP_PORT = 5202
CROSS_PORT = 5301
CROSS_FIRST_S = 0.5  # the cross traffic starts this long before the MPTCP sender, as in the report


def topology(params: dict) -> Topology:
    paths = [NetPath(name, "snd", "rcv", link_with_delay(spec, f"paths.{name}")) for name, spec in params["paths"].items()]
    if len(paths) < 2:
        raise UsageError("lab2 needs at least two paths in experiment.toml")
    for name in params.get("cross", {}):
        if name not in params["paths"]:
            raise UsageError(f"cross.{name}: no such path; paths are {', '.join(params['paths'])}")
    for m in params.get("mobility", []):
        if m.get("path") not in params["paths"] or not 0 <= float(m.get("at", -1)) < 1:
            raise UsageError(f"mobility entry {m}: needs a known path and 0 <= at < 1")
        LinkSpec.parse(link_with_delay(m, "mobility"))
    return Topology("lab2", hosts=("snd", "rcv"), paths=paths, sysctls=params.get("sysctls", {}),
                    mptcp_subflows=len(paths), **switches(params.get("network")))


def shared_topology(params: dict) -> Topology:
    """The shared-bottleneck variant: the same paths and cross traffic, but every path's traffic
    toward the receiver crosses one link first (`shared_bottleneck.link`, its rate and queue); the
    paths keep only their delays, so the subflows still see different RTTs."""
    paths = [NetPath(name, "snd", "rcv", link_with_delay({"delay": spec.get("delay")}, f"paths.{name}"))
             for name, spec in params["paths"].items()]
    return Topology("lab2shared", hosts=("snd", "rcv"), paths=paths, sysctls=params.get("sysctls", {}),
                    mptcp_subflows=len(paths), **switches(params.get("network")),
                    bottleneck=Bottleneck("shared", params["shared_bottleneck"]["link"], tuple(params["paths"])))


def fairness_topology(params: dict) -> Topology:
    """The fairness runs' own network: `fairness.paths.shared` and `.other`, each `link` and `delay` as in `paths`."""
    paths = [NetPath(name, "snd", "rcv", link_with_delay(params["fairness"]["paths"][name], f"fairness.paths.{name}"))
             for name in FAIRNESS_PATHS]
    return Topology("lab2fair", hosts=("snd", "rcv"), paths=paths,
                    sysctls=params.get("sysctls", {}), mptcp_subflows=2, **switches(params.get("network")))


def algorithms(params: dict) -> list[cc.Algorithm]:
    return cc.resolve(list(params["algorithms"]))


# ---------------------------------------------------------------- one transfer

@contextlib.contextmanager
def bpf_counted(rd, algo: cc.Algorithm):
    """The program's own counters over the block, into the run's summary (`bpf_counters`: what this
    run's callbacks counted). Per run, not per sweep: the 2026-11 reference read them once at the
    end of a `run` that resumed a finished sweep (its first had crashed after the last run), from
    programs that process had just loaded, and showed zero for all five (sockets 0 included)."""
    before = cc.stats(algo.name)
    yield
    rd.summary["bpf_counters"] = cc.counted(before, cc.stats(algo.name))


def _schedule_mobility(net, params: dict, duration: float, t0: float,
                       applied: list[dict]) -> list[threading.Timer]:
    """Timers that change the paths at `at` x duration after the transfer started (t0, the sender's
    clock), each appending when its change began and ended (s after t0) to `applied`."""
    def change(m: dict) -> None:
        begun = time.time() - t0
        net.set_link(m["path"], link_with_delay(m, "mobility"))
        applied.append({"path": m["path"], "link": m["link"], "delay": m.get("delay"), "at_s": float(m["at"]) * duration,
                        "begun_s": round(begun, 3), "done_s": round(time.time() - t0, 3)})

    timers = []
    for m in params.get("mobility", []):
        t = threading.Timer(max(0.0, float(m["at"]) * duration - (time.time() - t0)), change, (m,))
        t.daemon = True
        timers.append(t)
    for t in timers:
        t.start()
    return timers


def transfer(net, rd, algo: cc.Algorithm, variant: str, rep: int, params: dict, detail: bool) -> dict:
    """One MPTCP transfer with cross traffic (and mobility); fills rd.summary, returns it."""
    duration = float(params["duration_s"])
    originals = {p.name: (p.link, p.reverse) for p in net.topo.paths}
    cross, timers = [], []  # cross: each cross path's UDP (sender, sink), stopped with the transfer

    def go() -> float:
        """The receiver listens: start the seeded cross traffic and the sender from one agreed
        instant, so that run r meets the same pattern under every algorithm however long the
        processes take to start (seconds in an emulated CPU)."""
        t = start_time(net, "snd", len(params.get("cross", {})) + 1)
        for i, (path, c) in enumerate(params.get("cross", {}).items()):
            cross.append(udp_onoff(net, "snd", "rcv", path, c["rate"], on_s=float(c["on_s"]),
                                   off_s=float(c["off_s"]), duration=duration + 60,  # stopped at the end
                                   seed=rep * 100 + i, port=CROSS_PORT + i, start_at=t))
        return t + CROSS_FIRST_S

    try:
        with SsSampler(net, "snd", rd, PORT, interval=0.05 if detail else 0.25) as sampler:
            # the raw trace is parsed after the run (analysis.convert_raw): tens of seconds in an emulated CPU
            observers = [Tracing(net, rd, PORT, parse=False)] if detail else []
            with rd.timed("observers_start"):
                for o in observers:
                    o.__enter__()
            record = detail and params.get("record_events", False)
            recorder = cc.recording(algo.name) if record else contextlib.nullcontext()
            applied: list[dict] = []

            def on_start(t0: float) -> None:  # mobility is timed from the transfer's start
                if variant in MOBILE:
                    timers.extend(_schedule_mobility(net, params, duration, t0, applied))

            try:
                # counted inside the recording: the same callbacks; timed: the transfer itself
                with recorder as rec, bpf_counted(rd, algo), rd.timed("bulk"):
                    r = bulk(net, "snd", "rcv", net.topo.paths[0].name, "mptcp", duration=duration, cc=algo.name,
                             port=PORT, start_at=go, on_start=on_start)
            finally:
                with rd.timed("observers_stop"):
                    for o in reversed(observers):
                        o.__exit__(None, None, None)
    finally:
        for t in timers:
            t.cancel()
        for path, (sender, sink) in zip(params.get("cross", {}), cross):
            rd.processes_cpu({f"udp sender {path}": process.cpu_s(sender.pid),
                              f"udp sink {path}": process.cpu_s(sink.pid)})
            net.stop(sender)
            net.stop(sink)
        for name, (link, reverse) in originals.items():
            p = net.topo.path(name)
            if (p.link, p.reverse) != (link, reverse):
                net.set_link(name, link, reverse)
    rd.processes_cpu({f"bulk {role}": s for role, s in r.cpu_s.items()})
    ss_text = sampler.path.read_text()
    with rd.timed("subflow_table"):
        subs = subflow_table(ss_text, algo.name)
    established = [s for s in subs if s["mptcp_subflow"]]
    if len(established) != net.topo.mptcp_subflows or not all(s["cc_ok"] for s in established):
        raise ExperimentFailed(f"{algo.name}: expected {net.topo.mptcp_subflows} subflows all running it, "
                               f"ss saw {[(s['local'], s['cc']) for s in subs]}")
    if not detail:
        sampler.path.unlink()  # the per-subflow totals below are what the analysis uses
    rd.write_json("subflows.json", subs)
    r.intervals.to_csv(rd.file("intervals.csv"), index=False)
    if record:  # every callback of the BPF program during the transfer (the differential test's input), as the
        # map held them: cc-trace.csv.gz is made from them after the run (analysis.convert_raw)
        with rd.timed("cc_events_save"):
            cc.save_raw(rec.raw, rd.file(lab2_analysis.CC_EVENTS_RAW))
        rd.summary["cc_events"] = {"recorded": len(rec.raw), "dropped": rec.dropped}
    rd.summary["sender_start_s"] = round(net.sender_start_s, 3)  # what start_time allowed per process
    if variant in MOBILE:  # when each change really began and ended (s after the transfer's start)
        rd.summary["mobility_applied"] = sorted(applied, key=lambda m: m["begun_s"])
    rd.summary.update({"algo": algo.key, "cc": algo.name, "variant": variant, "rep": rep, "detail": detail,
                       **r.summary(), "subflow_ccs": sorted({s["cc"] for s in established}),
                       "packets_per_subflow": {f"p{s['path_index']}": s["data_segs_out"] for s in established},
                       "retrans_per_subflow": {f"p{s['path_index']}": s["bytes_retrans"] for s in established}})
    return rd.summary


# ---------------------------------------------------------------- fairness: MPTCP + one TCP flow

def together(net, flows: list[dict], duration: float) -> list[dict]:
    """Start several bulk transfers at once (each: proto, path, cc, port); per-flow results."""
    results = concurrent(net, [Transfer("snd", "rcv", f["path"], f["proto"], f["cc"], f["port"]) for f in flows],
                         duration)
    out = []
    for f, r in zip(flows, results):
        flow = r.flows[0]
        out.append({**f, "goodput_transfer_mbps": r.goodput_transfer_mbps, "bytes": flow["bytes"],
                    "start_late_s": r.extra.get("start_late_s"),
                    "cc_seen": flow["cc"], "subflows": flow["subflows"], "result": r})
    return out


def fairness_run(net, rd, algo: cc.Algorithm, rep: int, params: dict) -> dict:
    duration = float(params["fairness"]["duration_s"])
    flows = [{"name": "mptcp", "proto": "mptcp", "path": "shared", "cc": algo.name, "port": PORT},
             {"name": "tcp", "proto": "tcp", "path": "shared", "cc": "reno", "port": TCP_PORT}]
    # The split of the shared path is counted where the link delivers it: the emulator's egress,
    # after its qdisc (each data segment once, drops never), headers only.
    capture = Capture(net, EMULATOR, rd, name="links.pcap", snaplen=96, direction="out",
                      bpf_filter=f"tcp dst port {PORT} or tcp dst port {TCP_PORT}")
    with capture, SsSampler(net, "snd", rd, PORT, interval=0.25, name="ss-mptcp.txt") as s_m, \
            SsSampler(net, "snd", rd, TCP_PORT, interval=0.25, name="ss-tcp.txt"), bpf_counted(rd, algo), \
            rd.timed("bulk"):  # the rest of `measure`: the capture's start and drain, the samplers, the counters
        res = together(net, flows, duration)
    m, t = res
    if m["subflows"] != 2 or m["cc_seen"] != algo.name or t["cc_seen"] != "reno":
        raise ExperimentFailed(f"fairness run: MPTCP had {m['subflows']} subflows with {m['cc_seen']}, "
                               f"TCP ran {t['cc_seen']}")
    rd.write_json("subflows.json", subflow_table(s_m.path.read_text(), algo.name))
    # The split is counted from the capture after the run (analysis.convert_raw, on the host after a
    # guest): tshark takes many seconds to start in an emulated CPU.
    rd.summary.update({"algo": algo.key, "cc": algo.name, "rep": rep, "duration_s": duration,
                       "mptcp_goodput_transfer_mbps": round(m["goodput_transfer_mbps"], 3),
                       "tcp_goodput_transfer_mbps": round(t["goodput_transfer_mbps"], 3),
                       "start_late_s": {"mptcp": m["start_late_s"], "tcp": t["start_late_s"]},
                       "link_capture": {"file": capture.path.name, "ports": {"mptcp": PORT, "tcp": TCP_PORT},
                                        "shared_prefix": net.address("snd", "shared").rsplit(".", 1)[0] + "."}})
    for f in (m, t):  # the per-interval data behind these figures
        f["result"].intervals.to_csv(rd.file(f"intervals-{f['name']}.csv"), index=False)
        rd.processes_cpu({f"{f['name']} {role}": s for role, s in f["result"].cpu_s.items()})
    return rd.summary


# ---------------------------------------------------------------- the lab

VARIANTS = ("static", "mobility", "shared", "shared_mobility")
# the variants with [[mobility]]'s events; on the shared bottleneck (shared_mobility, a control) each
# event sets its path's own rate and delay behind the shared link, as on the separate paths
MOBILE = ("mobility", "shared_mobility")
SHARED = ("shared", "shared_mobility")  # on shared_topology


def points(params: dict, sweep=None) -> list[Point]:
    """Per repetition, variant and algorithm one MPTCP transfer (repetition 1 observed in detail);
    the shared-bottleneck variant's after the others (its own network, built once); then the
    fairness runs on theirs."""
    algos = algorithms(params)
    for variant in params["variants"]:
        if variant not in VARIANTS:
            raise UsageError(f"variants: {variant!r} is not one of {', '.join(VARIANTS)}")
    out = []
    for shared in (False, True):
        for rep in range(1, int(params["repetitions"]) + 1):
            for variant in params["variants"]:
                if (variant in SHARED) != shared:
                    continue
                for algo in algos:
                    out.append(Point(key(rep, variant, algo), {
                        "algo": algo.key, "variant": variant, "rep": rep, "detail": rep == 1,
                        "duration_s": params["duration_s"], "cross": params.get("cross"),
                        "mobility": params.get("mobility") if variant in MOBILE else None,
                        "shared_bottleneck": params["shared_bottleneck"] if shared else None},
                        topology=shared_topology if shared else None))
    for rep in range(1, int(params["fairness"]["repetitions"]) + 1):
        for algo in algos:
            out.append(Point(f"fair-{algo.key}-r{rep}", {"algo": algo.key, "rep": rep, "fairness": params["fairness"]},
                             topology=fairness_topology))
    return out


def measure(net, rd, point: Point, params: dict) -> str:
    v = point.values
    algo = next(a for a in algorithms(params) if a.key == v["algo"])
    if point.topology is fairness_topology:
        s = fairness_run(net, rd, algo, v["rep"], params)
        return (f"MPTCP {s['mptcp_goodput_transfer_mbps']:5.2f}  TCP {s['tcp_goodput_transfer_mbps']:5.2f} Mbit/s "
                "(the shared link's split: after the runs)")
    s = transfer(net, rd, algo, v["variant"], v["rep"], params, v["detail"])
    return f"{s['goodput_transfer_mbps']:6.2f} Mbit/s  subflows {s['subflows']} all {','.join(s['subflow_ccs'])}"


def check_congestion_control(net, rd, params: dict) -> str:
    """Part of the setup check: which congestion controls the kernel offers (the BPF ones loaded)."""
    rd.summary["available_congestion_control"] = cc.available()
    return f"  congestion controls available: {' '.join(rd.summary['available_congestion_control'])}"


@contextlib.contextmanager
def session(ctx: RunContext):
    """The BPF congestion controls, loaded for the whole sweep (each run records what its program
    counted: bpf_counted)."""
    algos = algorithms(ctx.params)
    with cc.loaded(algos, record=bool(ctx.params.get("record_events", False))):
        yield


def finish(ctx: RunContext) -> dict:
    params = ctx.params
    lab2_analysis.compact(ctx.out)
    tables = lab2_analysis.load(ctx.out)  # as the report reads them: the written files, not the in-memory copy
    throughput = lab2_analysis.throughput_table(tables["throughput"])
    paired = lab2_analysis.paired_table(tables["throughput"])
    fairness = lab2_analysis.fairness_table(tables["fairness"])
    # the same tables, from the same files, as the report (paper-vs-this-run.md) and the notebook
    _log.info("throughput:\n%s\npaired with uncoupled (Holm-corrected intervals: diff ± half at level):\n%s\n"
              "fairness:\n%s", throughput.to_string(index=False),
              paired[["variant", "algo", "vs", "diff", "half", "level", "verdict", "runs_needed"]].to_string(index=False),
              fairness.to_string(index=False))
    n_algos = len(algorithms(params))
    return {"runs": int(params["repetitions"]) * len(params["variants"]) * n_algos,
            "fairness_runs": int(params["fairness"]["repetitions"]) * n_algos,
            "throughput": throughput.to_dict("records"), "paired": paired.to_dict("records"),
            "fairness": fairness.to_dict("records")}


def clean() -> list[str]:
    """The BPF congestion controls (mlab_*) a killed run left loaded."""
    return [f"BPF congestion control {name}" for name in cc.unload_all()]


def key(rep: int, variant: str, algo: cc.Algorithm) -> str:
    return f"{variant}-{algo.key}-r{rep}"


LAB = Lab(id="lab2", slug="02-delay-window-cc",
          title="CS218 delay-window multipath congestion control vs uncoupled, EWTCP, coupled and LIA (BPF)",
          topology=topology, points=points, measure=measure, finish=finish, analysis=lab2_analysis,
          needs=("netem", "bpf_struct_ops"),
          # paths_at_once: the setup check's single-path TCP on the four paths side by side, as every
          # run loads them (MPTCP over all four at 5 Mbit/s each): 3 s instead of four times 3-6 s
          running=Running(session=session, path_checks={"min_utilisation": 0.9, "paths_at_once": True},
                          extra_check=check_congestion_control, clean=clean, prebuild=cc.loader.prebuild_for,
                          convert=lab2_analysis.convert_raw),
          parameters=Parameters(renamed={"runs": "repetitions", "fairness.runs": "fairness.repetitions",
                                         **PREVIOUS_PARAMETERS},
                                may_skip=("fairness.repetitions",)),
          judging=Judging(results_checks={"throughput.csv": check_runs_table, "fairness.csv": check_fairness_table},
                          claims=lab2_claims, fragments=lab2_fragments.fragments),
          # the notebook's graded functions: Q1's rule, Q4's table, Q7's share and Q8's verdicts (the
          # CS218 simulations run the student's rule, or a stand-in without the delay window); the
          # reference tables hold per-run inputs: every answer is a statistic over them (no answer column)
          grading=Grading(answer_keys={"ccref": ("cs218_increase", "delay_window"),
                                       "throughput": ("throughput_table",), "fairness": ("fairness_table", "_share")},
                          held_out=lab2_unseen.held_out, unseen_answers=lab2_unseen.answers),
          commands=(cc_command.register,))
