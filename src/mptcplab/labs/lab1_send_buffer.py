"""Lab 1 experiment: MPTCP send-buffer starvation (Kato et al. 2020).

The sweep: for each way of setting the send buffer (the `tcp_wmem` sysctl, the application's
SO_SNDBUF), each buffer size, and each configuration (single-path TCP on the fast path, on the slow
path, MPTCP over both), one bulk transfer per repetition. Repetitions are the outer loop, so a
sweep stopped half-way already covers every point once. Then one degraded run is repeated with
full observation for the paper's Figures 4, 5, 6/9 and 10. Analysis lives in lab1_analysis.py.
"""

from __future__ import annotations

import re

from tqdm import tqdm

from ..errors import UsageError
from ..lab import Lab, RunContext
from ..observe import Capture, Counters, SsSampler, Tracing
from ..results import Sweep
from ..topology import Path, Topology
from ..traffic import bulk, verify_capture
from ..verify import check_paths, describe
from . import lab1_analysis

PORT = 5201
CONFIGS = {  # config -> (protocol, path the connection starts on)
    "tcp-fast": ("tcp", "fast"),
    "tcp-slow": ("tcp", "slow"),
    "mptcp": ("mptcp", "fast"),
}
DEFAULT_WMEM = "4096 16384 4194304"  # the kernel's default tcp_wmem, used with the SO_SNDBUF method


def parse_size(text) -> int:
    """'128K' -> 131072, '1M' -> 1048576, or plain bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KkMm]?)i?[Bb]?\s*", str(text))
    if not m:
        raise UsageError(f"buffer size {text!r}: write bytes or a number with K or M, e.g. 128K")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def topology(params: dict) -> Topology:
    paths = [Path(name, "snd", "rcv", spec["link"]) for name, spec in params["paths"].items()]
    if [p.name for p in paths] != ["fast", "slow"]:
        raise UsageError("lab1 needs exactly two paths named fast and slow in experiment.toml")
    return Topology("lab1", hosts=("snd", "rcv"), paths=paths, sysctls=params.get("sysctls", {}),
                    mptcp_subflows=2)


def points(params: dict) -> list[dict]:
    sw = params["sweep"]
    for m in sw["methods"]:
        if m not in ("wmem", "sndbuf"):
            raise UsageError(f"sweep.methods: {m!r} is not wmem or sndbuf")
    for c in sw["configs"]:
        if c not in CONFIGS:
            raise UsageError(f"sweep.configs: {c!r} is not one of {', '.join(CONFIGS)}")
    out = []
    for rep in range(1, int(sw["repetitions"]) + 1):
        for method in sw["methods"]:
            for buf in sw["buffers"]:
                for config in sw["configs"]:
                    out.append({"key": f"{method}-{buf}-{config}-r{rep}", "method": method, "buffer": buf,
                                "buffer_bytes": parse_size(buf), "config": config, "rep": rep})
    return out


def apply_buffer(net, method: str, size: int) -> int | None:
    """Set the sender's buffer the way `method` says; returns the SO_SNDBUF to request, if any."""
    if method == "wmem":
        net.set_sysctl("snd", "net.ipv4.tcp_wmem", f"{size} {size} {size}")
        return None
    net.set_sysctl("snd", "net.ipv4.tcp_wmem", DEFAULT_WMEM)
    return size


def transfer(net, point: dict, duration: float):
    proto, path = CONFIGS[point["config"]]
    sndbuf = apply_buffer(net, point["method"], point["buffer_bytes"])
    return bulk(net, "snd", "rcv", path, proto, duration=duration, sndbuf=sndbuf, port=PORT)


def run(ctx: RunContext) -> dict:
    params = ctx.params
    todo = points(params)
    sweep = Sweep(ctx.out)
    topo = topology(params)
    duration = float(params["sweep"]["duration_s"])
    with topo.up() as net:
        _ensure_wmem_max(net, max(p["buffer_bytes"] for p in todo))
        if not sweep.done("verify"):
            with sweep.run("verify", {"what": "verify the setup"}) as rd:
                net.record(rd)
                print("lab1: verifying the setup before measuring", flush=True)
                check_paths(net, rd, "snd", "rcv")
                print(describe(rd.summary["checks"]), flush=True)
        left = [p for p in todo if not sweep.done(p["key"])]
        if len(left) < len(todo):
            print(f"lab1: resuming: {len(todo) - len(left)} of {len(todo)} runs already done", flush=True)
        bar = tqdm(left, desc="lab1 sweep", unit="run", total=len(left), dynamic_ncols=True, mininterval=1)
        for point in bar:
            bar.set_postfix_str(point["key"])
            with sweep.run(point["key"], {**point, "duration_s": duration}) as rd:
                net.record(rd)
                r = transfer(net, point, duration)
                rd.summary.update({k: point[k] for k in ("method", "buffer", "buffer_bytes", "config", "rep")})
                rd.summary.update(r.summary())
                rd.summary["sndbuf_effective"] = r.flows[0]["sndbuf"]
                r.intervals.to_csv(rd.file("intervals.csv"), index=False)
            bar.write(f"  {point['key']:<28} {r.mbps:7.1f} Mbit/s  ({rd.summary['subflows']} subflow(s))")
        bar.close()
        table = sweep.summaries()
        detail = _detail_run(net, sweep, params, table)
    return {"runs": len(todo), "degradation": degradation(sweep.summaries()).to_dict("records"), "detail": detail}


def degradation(table):
    """Per method and buffer: mean throughput of each config, and whether MPTCP < TCP on the fast path."""
    runs = table[table.get("config").notna()] if "config" in table else table
    mean = runs.pivot_table(index=["method", "buffer_bytes"], columns="config", values="mbps", aggfunc="mean")
    mean = mean.reset_index()
    if {"mptcp", "tcp-fast"} <= set(mean.columns):
        mean["mptcp_over_tcp_fast"] = mean["mptcp"] / mean["tcp-fast"]
        mean["degraded"] = mean["mptcp"] < mean["tcp-fast"]
    return mean


def _detail_run(net, sweep: Sweep, params: dict, table) -> str:
    """Repeat the most degraded MPTCP point with capture and tracing (Figures 4, 5, 6/9, 10)."""
    want = params["detail"]["buffer"]
    if want == "auto":
        deg = degradation(table)
        deg = deg[deg["method"] == "wmem"].sort_values("mptcp_over_tcp_fast")
        size = int(deg.iloc[0]["buffer_bytes"])
    else:
        size = parse_size(want)
    label = next((b for b in params["sweep"]["buffers"] if parse_size(b) == size), str(size))
    key = f"detail-wmem-{label}-mptcp"
    if sweep.done(key):
        return key
    duration = float(params["detail"]["duration_s"])
    point = {"method": "wmem", "buffer": label, "buffer_bytes": size, "config": "mptcp", "rep": 0}
    print(f"lab1: detailed run at tcp_wmem {label} ({duration:.0f} s, capture + tracing)", flush=True)
    with sweep.run(key, {**point, "duration_s": duration, "detail": True}) as rd:
        net.record(rd)
        with Capture(net, "snd", rd), Counters(net, "snd", rd), SsSampler(net, "snd", rd, PORT), \
                Tracing(net, rd, PORT, mptcp=True, sndbuf_waits=True) as tracing:
            r = transfer(net, point, duration)
        rd.summary.update(point)
        rd.summary.update(r.summary())
        rd.summary["detail"] = True
        rd.summary["sndbuf_effective"] = r.flows[0]["sndbuf"]
        rd.summary["sndbuf_wait_method"] = getattr(tracing, "wait_method", None)
        rd.summary["capture_check"] = verify_capture(rd.file("capture.pcap"), 2)
        r.intervals.to_csv(rd.file("intervals.csv"), index=False)
    print(f"lab1: detailed run: {r.mbps:.1f} Mbit/s over {rd.summary['capture_check']['subflows_with_data']} "
          f"subflows; send-buffer waits via {rd.summary['sndbuf_wait_method']}", flush=True)
    return key


def _ensure_wmem_max(net, largest: int) -> None:
    """SO_SNDBUF is capped at net.core.wmem_max, which namespaces inherit from the host: raise it."""
    current = int(net.sysctl("snd", "net.core.wmem_max") or 0)
    if current >= largest:
        return
    import subprocess

    subprocess.run(["sysctl", "-qw", f"net.core.wmem_max={largest}"], capture_output=True)
    now = int(net.sysctl("snd", "net.core.wmem_max") or 0)
    if now >= largest:
        print(f"lab1: raised net.core.wmem_max from {current} to {largest} so SO_SNDBUF is not capped", flush=True)
    else:
        print(f"lab1: warning: net.core.wmem_max is {now}; SO_SNDBUF above it is capped by the kernel", flush=True)


LAB = Lab(id="lab1", slug="01-send-buffer", title="MPTCP send-buffer starvation (Kato et al. 2020)",
          run=run, needs=("netem",), uml_ok=True, report=lab1_analysis.report,
          export=lab1_analysis.export_reference,
          topology=topology)
