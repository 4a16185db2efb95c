"""Lab 1 experiment: MPTCP send-buffer starvation (Kato et al. 2020).

The sweep: for each way of setting the send buffer (the `tcp_wmem` sysctl, the application's
SO_SNDBUF), each buffer size, and each configuration (single-path TCP on the fast path, on the slow
path, MPTCP over both), one bulk transfer per repetition. Repetitions are the outer loop, so a
sweep stopped half-way already covers every point once. Every sweep run samples `ss` every
half second and keeps the kernel's view of it (srtt, min RTT, bytes in flight, the send buffer)
as numbers in its summary, which `mptcplab check` judges against the window bound.

The paper's own point (`[paper_point]`, issue 24): MPTCP at 1 MiB with each scheduler (upstream's
"default", and the paper's "minrtt" without and with its RP mechanism, which the kit's UML kernel
carries as vagrant/uml/mptcp-minrtt-scheduler.patch) beside single-path TCP on the fast path, and
the `tcp_min_tso_segs` control (the kit's 64 against the kernel's own 2) at that point and at one
buffer inside the degradation region. Every one of these runs keeps its nstat counters (the RP
counters among them) in its summary.

Then one degraded run is repeated with full observation for the paper's Figures 4, 5, 6/9 and 10,
and the control runs (`[detail] controls`) with the same observation: a sender that writes faster
than the network carries blocks in sk_stream_wait_memory whatever limits it, so the degraded run's
waits are read against a single-path TCP run on the fast path at the same buffer and an MPTCP run
at a large one. The engine runs the points (mptcplab.run.engine); decoding the capture and the ss
samples is measure.py, tables and figures analysis.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from . import analysis as lab1_analysis, claims as lab1_claims, fragments as lab1_fragments, paper_point as lab1_paper_point
from . import unseen as lab1_unseen
from .bounds import check_sweep
from ...core import log
from ...core.errors import UsageError
from ...judge import physics
from ...measure.bulk import PORT
from ...measure.observe import Capture, Counters, SsSampler, Tracing
from ...measure.traffic import bulk, verify_capture
from ...net.links import LinkSpec
from ...net.topology import NetPath, Topology, switches
from ...run.lab import Grading, Judging, Lab, Point, RunContext, Running, link_with_delay
from ...run.results import Sweep
from .measure import kernel_view

_log = log.get("lab1")
CONFIGS = {  # config -> (protocol, path the connection starts on)
    "tcp-fast": ("tcp", "fast"),
    "tcp-slow": ("tcp", "slow"),
    "mptcp": ("mptcp", "fast"),
}
HOSTS = ("snd", "rcv")
DEFAULT_WMEM = "4096 16384 4194304"  # the kernel's default tcp_wmem, used with the SO_SNDBUF method
# ss in the sweep runs: one sample (date + `ss -tinmHM`) took ~11 ms of CPU on the kit's 2-core
# host (20 samples: 0.23 s, the host busy), so every 0.5 s is ~2 % of one CPU, the same in every
# sweep run; 20 samples of a 10 s transfer (8 of a 4 s one) catch a window-limited flow's plateau.
# The detailed runs sample every 50 ms, beside a capture and tracing.
SWEEP_SS_INTERVAL_S = 0.5
# Scheduler choices of [paper_point] -> (net.mptcp.scheduler, net.mptcp.minrtt_rp); the minrtt ones
# exist only in a kernel with the kit's patch (vagrant/uml/mptcp-minrtt-scheduler.patch).
SCHEDULERS = {"default": ("default", None), "minrtt": ("minrtt", "0"), "minrtt+rp": ("minrtt", "1")}
# tcp_min_tso_segs settings of the control: "kernel" is the kernel's own default (2, net/ipv4/tcp_ipv4.c),
# any number is written as is; every other run has the network's ([network] min_tso_segs: the kit's 64).
TSO_KERNEL_DEFAULT = "2"
# nstat counters each [paper_point] and detailed run keeps in its summary (its counters.json has all).
SUMMARY_COUNTERS = {"rp_opp_retrans": "MPTcpExtMinRTTOppRetrans", "rp_penalised": "MPTcpExtMinRTTPenalised",
                    "mptcp_retrans": "MPTcpExtMPTCPRetrans", "tcp_retrans_segs": "TcpRetransSegs"}


@dataclass(frozen=True)
class SendBuffer:
    """One run's send buffer, parsed once from the experiment file (`parse`) and read back from a
    point's values (`of`) wherever it is used: `label` as the file writes it ("128K"), `size` in
    bytes, and `method`, how it is set: "wmem" (tcp_wmem = size size size) or "sndbuf" (the
    application's SO_SNDBUF = size, tcp_wmem the kernel's default)."""

    label: str
    size: int
    method: str = "wmem"

    @classmethod
    def parse(cls, text, method: str = "wmem") -> "SendBuffer":
        """'128K' -> 131072 bytes, '1M' -> 1048576, or plain bytes."""
        m = re.fullmatch(r"\s*(\d+)\s*([KkMm]?)i?[Bb]?\s*", str(text))
        if not m:
            raise UsageError(f"buffer size {text!r}: write bytes or a number with K or M, e.g. 128K")
        return cls(text, int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()], method)

    @classmethod
    def of(cls, values: dict) -> "SendBuffer":
        """The buffer of a point, from its values (parsed when the point was made)."""
        return cls(values["buffer"], int(values["buffer_bytes"]), values["method"])

    def values(self) -> dict:
        """What a point records of it (its manifest's parameters, its summary)."""
        return {"method": self.method, "buffer": self.label, "buffer_bytes": self.size}

    @property
    def tcp_wmem(self) -> str:
        """The sender's net.ipv4.tcp_wmem for this run."""
        return f"{self.size} {self.size} {self.size}" if self.method == "wmem" else DEFAULT_WMEM

    @property
    def so_sndbuf(self) -> int | None:
        """The SO_SNDBUF the sending application requests, if any."""
        return self.size if self.method == "sndbuf" else None

    def scaled(self, factor: int) -> "SendBuffer":
        """This buffer divided by `factor` ([paper_point] scale), labelled by its bytes."""
        if factor == 1:
            return self
        size = round(self.size / factor)
        return SendBuffer(str(size), size, self.method)


def sweep_buffers(params: dict) -> list[SendBuffer]:
    """The sweep's buffer sizes (method "wmem"), as the experiment file lists them."""
    return [SendBuffer.parse(b) for b in params["sweep"]["buffers"]]


def paper_scale(params: dict) -> int:
    """[paper_point] scale: the paper's point with rates and buffers divided by it, delays kept (a
    place that cannot carry 100 Mbit/s runs it scaled, issue 24). Only for the paper's point alone:
    the sweep is defined at the paths' own rates."""
    pp = params.get("paper_point") or {}
    scale = pp.get("scale", 1)
    if not isinstance(scale, int) or scale < 1:
        raise UsageError(f"paper_point.scale: {scale!r} is not a whole number >= 1")
    if scale != 1 and not pp.get("only"):
        raise UsageError("paper_point.scale needs paper_point.only = true: the sweep runs at the paths' own rates")
    return scale


def topology(params: dict) -> Topology:
    scale = paper_scale(params)
    links = {name: link_with_delay(spec, f"paths.{name}") for name, spec in params["paths"].items()}
    if scale != 1:  # rates divided, delays kept; queue=auto follows the rate (one BDP)
        links = {name: replace(link, rate_bps=link.rate_bps / scale if link.rate_bps else None)
                 for name, link in ((n, LinkSpec.parse(t)) for n, t in links.items())}
    paths = [NetPath(name, "snd", "rcv", link) for name, link in links.items()]
    if [p.name for p in paths] != ["fast", "slow"]:
        raise UsageError("lab1 needs exactly two paths named fast and slow in experiment.toml")
    # SO_SNDBUF is capped at net.core.wmem_max, a limit of the whole kernel (no namespace sets it).
    largest = max(p.values["buffer_bytes"] for p in sweep_points(params) + paper_points(params))
    return Topology("lab1", hosts=HOSTS, paths=paths, sysctls=params.get("sysctls", {}),
                    mptcp_subflows=2, kernel_limits={"net.core.wmem_max": largest}, **switches(params.get("network")))


def sweep_points(params: dict) -> list[Point]:
    sw = params["sweep"]
    for m in sw["methods"]:
        if m not in ("wmem", "sndbuf"):
            raise UsageError(f"sweep.methods: {m!r} is not wmem or sndbuf")
    for c in sw["configs"]:
        if c not in CONFIGS:
            raise UsageError(f"sweep.configs: {c!r} is not one of {', '.join(CONFIGS)}")
    if not sw["buffers"] or not sw["methods"] or not sw["configs"]:
        raise UsageError("sweep.buffers, sweep.methods and sweep.configs each need at least one value")
    duration = float(sw["duration_s"])
    buffers = sweep_buffers(params)
    out = []
    for rep in range(1, int(sw["repetitions"]) + 1):
        for method in sw["methods"]:
            for buf in (replace(b, method=method) for b in buffers):
                for config in sw["configs"]:
                    key = f"{method}-{buf.label}-{config}-r{rep}"
                    point = {"key": key, **buf.values(), "config": config, "rep": rep}
                    out.append(Point(key, {**point, "duration_s": duration}))
    return out


def detail_point(params: dict, size: int | SendBuffer, config: str = "mptcp", control: str | None = None) -> Point:
    """A run repeated with full observation, at send buffer `size` (tcp_wmem; bytes, or as a
    control names it): the degraded MPTCP run, or (with `control`, its spec in [detail] controls)
    one of its controls. The buffer is named as the sweep names it ("64K"), else as the control
    does, else in bytes."""
    buf = size if isinstance(size, SendBuffer) else SendBuffer(str(size), size)
    buf = next((b for b in sweep_buffers(params) if b.size == buf.size), buf)
    point = {**buf.values(), "config": config, "rep": 0}
    values = {**point, "duration_s": float(params["detail"]["duration_s"]), "detail": True}
    if control:
        values["control"] = control
    return Point(f"detail-wmem-{buf.label}-{config}", values)


def controls(params: dict) -> list[tuple[str, str, str | SendBuffer]]:
    """[detail] controls as (spec, config, buffer): "CONFIG" runs at the detailed run's buffer
    (buffer ""), "CONFIG@SIZE" at SIZE (a SendBuffer), "CONFIG@largest" at the sweep's largest
    buffer ("largest")."""
    out = []
    for spec in params["detail"].get("controls", []):
        config, _, buffer = str(spec).partition("@")
        if config not in CONFIGS:
            raise UsageError(f"detail.controls: {spec!r}: the config is one of {', '.join(CONFIGS)}, "
                             "then optionally @SIZE or @largest, e.g. \"tcp-fast\" or \"mptcp@4M\"")
        out.append((str(spec), config, buffer if buffer in ("", "largest") else SendBuffer.parse(buffer)))
    return out


def detail_points(params: dict, size: int) -> list[Point]:
    """The degraded run at `size`, then its controls (each once; none repeats the degraded run)."""
    largest = max(b.size for b in sweep_buffers(params))
    out = [detail_point(params, size)]
    for spec, config, buffer in controls(params):
        at = size if buffer == "" else largest if buffer == "largest" else buffer
        p = detail_point(params, at, config, control=spec)
        if p.key not in {q.key for q in out}:
            out.append(p)
    return out


def paper_points(params: dict) -> list[Point]:
    """[paper_point]: at its buffer (tcp_wmem min = default = max), MPTCP with each scheduler and
    single-path TCP on the fast path, and one fully observed run per scheduler in `detail`; the
    same with the buffer held by SO_SNDBUF `sndbuf` (`sndbuf_repetitions`, `sndbuf_detail`); then
    the tcp_min_tso_segs control (each setting, at each of `tso_buffers`, MPTCP with the default
    scheduler and single-path TCP on each path). Repetitions are the outer loop."""
    pp = params.get("paper_point")
    if not pp:
        return []
    for name in [*pp["schedulers"], *pp["detail"]]:
        if name not in SCHEDULERS:
            raise UsageError(f"paper_point: scheduler {name!r} is not one of {', '.join(SCHEDULERS)}")
    tso = [str(t) for t in pp["tso_settings"]]
    for t in tso:
        if t != "kernel" and not t.isdigit():
            raise UsageError(f"paper_point.tso_settings: {t!r} is neither \"kernel\" nor a number of segments")
    scale = paper_scale(params)
    duration, buf = float(pp["duration_s"]), SendBuffer.parse(pp["buffer"]).scaled(scale).label

    def point(key, buffer, config, rep, method="wmem", **extra):
        values = {**SendBuffer.parse(buffer, method).values(), "config": config, "rep": rep, "part": "paper_point",
                  "duration_s": duration, **extra}
        if scale != 1:
            values["scale"] = scale
        return Point(key, values)

    out = []
    for rep in range(1, int(pp["repetitions"]) + 1):
        for name in pp["schedulers"]:
            out.append(point(f"paper-{buf}-mptcp-{name}-r{rep}", buf, "mptcp", rep, scheduler=name))
        out.append(point(f"paper-{buf}-tcp-fast-r{rep}", buf, "tcp-fast", rep))
    for name in pp["detail"]:
        out.append(point(f"paper-detail-{buf}-mptcp-{name}", buf, "mptcp", 0, scheduler=name, detail=True))
    held = str(pp.get("sndbuf") or "")  # the paper's effective buffer held by SO_SNDBUF ("" skips it)
    held = SendBuffer.parse(held, "sndbuf").scaled(scale).label if held else held
    if held:
        for name in pp.get("sndbuf_detail", []):
            if name not in SCHEDULERS:
                raise UsageError(f"paper_point.sndbuf_detail: scheduler {name!r} is not one of {', '.join(SCHEDULERS)}")
        for rep in range(1, int(pp.get("sndbuf_repetitions", pp["repetitions"])) + 1):
            for name in pp["schedulers"]:
                out.append(point(f"paper-sndbuf-{held}-mptcp-{name}-r{rep}", held, "mptcp", rep, scheduler=name,
                                 method="sndbuf"))
            out.append(point(f"paper-sndbuf-{held}-tcp-fast-r{rep}", held, "tcp-fast", rep, method="sndbuf"))
        for name in pp.get("sndbuf_detail", []):
            out.append(point(f"paper-detail-sndbuf-{held}-mptcp-{name}", held, "mptcp", 0, scheduler=name,
                             method="sndbuf", detail=True))
    for rep in range(1, int(pp["tso_repetitions"]) + 1):
        for t in tso:
            for b in (SendBuffer.parse(b).scaled(scale).label for b in pp["tso_buffers"]):
                for config in ("mptcp", "tcp-fast", "tcp-slow"):
                    out.append(point(f"tso{t}-{b}-{config}-r{rep}", b, config, rep, min_tso_segs=t))
    return out


def points(params: dict, sweep: Sweep | None) -> list[Point]:
    """The sweep and the paper's point; once the sweep is complete, the detailed run at its most
    degraded buffer ("auto") and the control runs."""
    todo = sweep_points(params)
    paper = paper_points(params)
    want = params["detail"]["buffer"]
    want = want if want == "auto" else SendBuffer.parse(want).size
    controls(params)  # checked before anything runs
    if params.get("paper_point", {}).get("only"):
        return paper
    if sweep is None or not all(sweep.done(p.key) for p in todo):
        return todo + paper
    if want == "auto":
        deg = degradation(sweep.summaries())
        deg = deg[deg["method"] == "wmem"].sort_values("mptcp_over_tcp_fast")
        size = int(deg.iloc[0]["buffer_bytes"])
    else:
        size = want
    return todo + paper + detail_points(params, size)


def configure(net, point: Point, params: dict) -> None:
    """This run's send buffer (a wmem_max that does not cap it is the topology's), and the sender's MPTCP
    scheduler and every host's tcp_min_tso_segs, each set back to the network's own ([network]
    min_tso_segs; the kit's scheduler) when a run does not name it (one network carries every run
    of a sweep)."""
    v = point.values
    net.set_sysctl("snd", "net.ipv4.tcp_wmem", SendBuffer.of(v).tcp_wmem)  # its SO_SNDBUF: measure()
    sched, rp = SCHEDULERS[v.get("scheduler", "default")]
    if _scheduler_missing(net, sched):
        return  # measure() records the run as skipped
    # Only the sender schedules data (the receiver sends ACKs), so only its namespace is set.
    _set_if_changed(net, ["snd"], "net.mptcp.scheduler", sched, force="scheduler" in v)
    if rp is not None:
        net.set_sysctl("snd", "net.mptcp.minrtt_rp", rp)
    tso = str(v.get("min_tso_segs", net.topo.base_sysctls()["net.ipv4.tcp_min_tso_segs"]))
    tso = TSO_KERNEL_DEFAULT if tso == "kernel" else tso
    _set_if_changed(net, list(HOSTS), "net.ipv4.tcp_min_tso_segs", tso, force="min_tso_segs" in v)


def _set_if_changed(net, hosts: list[str], key: str, value: str, force: bool) -> None:
    """Set `key` where a run names it, or where the kernel has another value (an earlier run's);
    a kernel without the sysctl is left alone unless the run names it."""
    for h in hosts:
        current = net.sysctl(h, key)
        if force or (current is not None and current != value):
            net.set_sysctl(h, key, value)


def _scheduler_missing(net, name: str) -> str | None:
    """Why this kernel cannot run scheduler `name`, or None."""
    if name == "default":
        return None
    have = (net.sysctl("snd", "net.mptcp.available_schedulers") or "").split()
    if name in have:
        return None
    return (f"this kernel has no MPTCP scheduler {name!r} (available: {' '.join(have) or 'none'}): it comes with "
            "the kit's UML kernel (vagrant/uml/mptcp-minrtt-scheduler.patch; `mptcplab run lab1 --where uml`)")


def part_needs(params: dict) -> dict[str, str]:
    """The paper point's minRTT runs need the paper's scheduler of their place (LAB.part_needs).

    The need is the part's, not the lab's: a run that leaves those runs out (the sweep alone, or the
    paper point with upstream's scheduler) needs only netem. But one sweep runs in one kernel, so a
    run that includes them needs the scheduler of the place that runs all of it, and `auto` then
    prefers the kit's UML kernel to a host kernel without the patch. Routing the part elsewhere
    would put two kernels in one sweep: the paper point is read against the sweep's runs and its own
    single-path TCP at the same buffer, which only compare under the same kernel's send-buffer
    rules and speed. A place without it refuses before any run, never by skipped runs."""
    pp = params.get("paper_point") or {}
    named = [*pp.get("schedulers", []), *pp.get("detail", []), *(pp.get("sndbuf_detail", []) if pp.get("sndbuf") else [])]
    paper = sorted({n for n in named if SCHEDULERS.get(n, ("default",))[0] != "default"})
    if not paper:
        return {}
    return {"minrtt_scheduler": f"lab1's paper point ({', '.join(paper)} runs; the kernel needs "
            "vagrant/uml/mptcp-minrtt-scheduler.patch: `--where uml` where UML builds; without them: "
            "--set 'paper_point.schedulers=[\"default\"]' --set 'paper_point.detail=[\"default\"]' "
            "--set 'paper_point.sndbuf_detail=[]')"}


def measure(net, rd, point: Point, params: dict) -> str:
    v = point.values
    if v.get("part") == "paper_point":
        return _measure_paper_point(net, rd, point, params)
    proto, path = CONFIGS[v["config"]]
    sndbuf = SendBuffer.of(v).so_sndbuf  # set by the sender; tcp_wmem by configure()
    duration = float(v["duration_s"])
    paths = {net.address("snd", p.name): p.name for p in net.topo.paths}
    # bytes in flight are judged after slow start (physics (U)), on the longest path the run uses
    used = [p.rtt_s for p in net.topo.paths if proto == "mptcp" or p.name == path]
    warmup = physics.steady_after_s(duration, max(used))
    if not v.get("detail"):
        with SsSampler(net, "snd", rd, PORT, interval=SWEEP_SS_INTERVAL_S, keep_raw=False) as ss:
            r = bulk(net, "snd", "rcv", path, proto, duration=duration, sndbuf=sndbuf, port=PORT)
            ss.steady_from(r.t0 + warmup)
        _summarise(rd, v, r, kernel_view(ss.table, paths, since=ss.since))
        return f"{r.goodput_transfer_mbps:7.1f} Mbit/s  ({rd.summary['subflows']} subflow(s))"
    what = f"control run ({v['control']})" if v.get("control") else "detailed run"
    _log.info("%s: %s at tcp_wmem %s (%.0f s, capture + tracing)", what, v["config"], v["buffer"], duration)
    with Capture(net, "snd", rd), Counters(net, "snd", rd) as counters, SsSampler(net, "snd", rd, PORT) as ss, \
            Tracing(net, rd, PORT, mptcp=proto == "mptcp", sndbuf_waits=True) as tracing:
        r = bulk(net, "snd", "rcv", path, proto, duration=duration, sndbuf=sndbuf, port=PORT)
        ss.steady_from(r.t0 + warmup)
    _summarise(rd, v, r, kernel_view(ss.table, paths, since=ss.since))
    _summarise_counters(rd, counters.delta)
    rd.summary["detail"] = True
    if v.get("control"):
        rd.summary["control"] = v["control"]
    rd.summary["sndbuf_wait_method"] = getattr(tracing, "wait_method", None)
    line = f"{r.goodput_transfer_mbps:.1f} Mbit/s"
    if proto == "mptcp":
        rd.summary["capture_check"] = verify_capture(rd.file("capture.pcap"), 2)
        line += f" over {rd.summary['capture_check']['subflows_with_data']} subflows"
    return f"{line}; send-buffer waits via {rd.summary['sndbuf_wait_method']}"


def _measure_paper_point(net, rd, point: Point, params: dict) -> str:
    """A [paper_point] run: as a sweep run (or, with detail, as the detailed run), with its nstat
    counters kept in the summary; skipped, and said so, where the kernel lacks its scheduler."""
    v = point.values
    sched = SCHEDULERS[v.get("scheduler", "default")][0]
    missing = _scheduler_missing(net, sched)
    if missing:
        rd.summary.update({k: v.get(k) for k in ("part", "method", "buffer", "buffer_bytes", "config", "rep",
                                                  "scheduler")})
        rd.summary["skipped"] = missing
        _log.warning("%s skipped: %s", point.key, missing)
        return "skipped (no such scheduler in this kernel)"
    if v.get("detail"):
        line = measure(net, rd, Point(point.key, {**v, "part": None}), params)
    else:
        with Counters(net, "snd", rd) as counters:
            line = measure(net, rd, Point(point.key, {**v, "part": None}), params)
        _summarise_counters(rd, counters.delta)
    rd.summary.update({"part": "paper_point", "scheduler": v.get("scheduler"),
                       "min_tso_segs": net.sysctl("snd", "net.ipv4.tcp_min_tso_segs")})
    if v.get("config") == "mptcp":
        rd.summary["scheduler_applied"] = net.sysctl("snd", "net.mptcp.scheduler")
        if rd.summary["scheduler_applied"] == "minrtt":  # RP steers minrtt only; under another scheduler
            # the switch holds what the network's last minrtt run left (one network carries a sweep)
            rd.summary["minrtt_rp_applied"] = net.sysctl("snd", "net.mptcp.minrtt_rp")
        line += f"  [{v.get('scheduler')}: opp. retrans {rd.summary.get('rp_opp_retrans', 0)}, " \
                f"penalised {rd.summary.get('rp_penalised', 0)}]"
    return line


def _summarise_counters(rd, delta: dict) -> None:
    rd.summary.update({name: int(delta.get(counter, 0)) for name, counter in SUMMARY_COUNTERS.items()})


def _summarise(rd, v: dict, r, kernel: dict) -> None:
    rd.summary.update({k: v[k] for k in ("method", "buffer", "buffer_bytes", "config", "rep")})
    rd.summary.update(r.summary())
    rd.summary["sndbuf_effective"] = r.flows[0]["sndbuf"]
    rd.summary.update(kernel)
    r.intervals.to_csv(rd.file("intervals.csv"), index=False)


def finish(ctx: RunContext) -> dict:
    sweep = Sweep(ctx.out)
    paper = lab1_paper_point.load_paper_point(ctx.out)
    if len(paper):
        setting = lab1_paper_point.paper_point_setting(ctx.out, paper)
        (ctx.out / "paper-point.md").write_text(lab1_paper_point.paper_point_markdown(paper, setting))
    if ctx.params.get("paper_point", {}).get("only"):
        return {"paper_point_runs": len(paper)}
    lab1_analysis.compact(ctx.out)
    details = lab1_analysis.find_details(ctx.out)
    return {"runs": len(sweep_points(ctx.params)), "degradation": degradation(sweep.summaries()).to_dict("records"),
            "detail": next((d.name for d, role in details if role is None), None),
            "controls": [d.name for d, role in details if role is not None]}


def degradation(table):
    """Per method and buffer: mean throughput of each config, and whether MPTCP < TCP on the fast path."""
    runs = table[table.get("config").notna()] if "config" in table else table
    if "detail" in runs:
        runs = runs[runs["detail"].isna() | (runs["detail"] == False)]  # noqa: E712  (the sweep only)
    if "part" in runs:
        runs = runs[runs["part"].isna()]  # not the paper's point
    mean = runs.pivot_table(index=["method", "buffer_bytes"], columns="config", values="goodput_transfer_mbps",
                            aggfunc="mean")
    mean = mean.reset_index()
    if {"mptcp", "tcp-fast"} <= set(mean.columns):
        mean["mptcp_over_tcp_fast"] = mean["mptcp"] / mean["tcp-fast"]
        mean["degraded"] = mean["mptcp"] < mean["tcp-fast"]
    return mean


LAB = Lab(id="lab1", slug="01-send-buffer", title="MPTCP send-buffer starvation (Kato et al. 2020)",
          topology=topology, points=points, measure=measure, finish=finish, analysis=lab1_analysis,
          needs=("netem",), part_needs=part_needs,
          running=Running(configure=configure),
          judging=Judging(results_checks={"sweep.csv": check_sweep, "paper-point.csv": check_sweep},
                          claims=lab1_claims, fragments=lab1_fragments.fragments),
          # What grading hides while a submission runs: the kit's answers to the graded questions
          # (unseen.answers and the functions it calls) and the analysis's own that a graded function
          # could call instead (Q1's means, Q2's region, Q6's share: the figures and tables built on
          # them do not run while a notebook is graded, a note in its report). No reference column
          # is an answer: each is an input some question computes from.
          grading=Grading(answer_keys={"unseen": lab1_unseen.ANSWER_KEYS,
                                       "sweep": ("throughput_table", "degradation_region"),
                                       "detail": ("blocked_fraction",)},
                          held_out=lab1_unseen.held_out, unseen_answers=lab1_unseen.answers))
