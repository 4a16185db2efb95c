"""`mptcplab check RESULTS_DIR`: judge recorded results against physics (see physics.py).

Reads what the labs write, without re-running anything; each lab names its results tables and the
judge of each (`Lab.results_checks`):
- a sweep table (`check_sweep`: one row per run; `config` tcp-<path> is single-path TCP over
  that path, `sndbuf_effective` the sk_sndbuf the kernel reported to the sender, and in runs that
  sampled `ss` `inflight_max_<path>`) with a manifest next to it (or in a run directory
  under it) that gives each path's configured RTT and rate;
- a goodput table (`check_runs_table`: `goodput_window_mbps`, the receiver's goodput of all n flows
  together over the steady window, over a bottleneck of `capacity_mbps`; `emulator_wire_mbps`, what the
  bottleneck itself sent; or `goodput_transfer_mbps` of each MPTCP run against `ceiling_mbps`, its paths'
  ceilings);
- run directories whose `summary.json` carries `kernel_tcp` (the `ss` view every sampled run
  records): bytes in flight against the window bound of the buffer the kernel reported; each
  connection's min RTT against the lowest RTT its path was configured with during the run; and
  MPTCP runs' goodput against what all their paths together could carry (mptcp_ceiling_bps).

Single-path TCP above its window bound, or any goodput above its link's ceiling, is a finding. It
stays one whatever explains it; where the run's own `ss -m` samples show why (the kernel queued past
sk_sndbuf: physics.queue_overrun, e.g. Lab 1's tcp_min_tso_segs control), the verdict names that
measured cause, and `mptcplab check` counts such verdicts apart.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from . import physics
from ..measure.traffic import current_keys, read_summary
from ..net import latency
from ..net.links import LinkSpec


def paths_of(manifest: dict) -> dict[str, dict]:
    """Path name -> {name, rtt_s, rate_bps} from a run's manifest (its configured network)."""
    paths = {}
    for p in (manifest.get("network") or {}).get("paths", []):
        spec = LinkSpec.parse(p["link"])
        paths[p["name"]] = {"name": p["name"], "rtt_s": p.get("rtt_ms_configured", 0) / 1e3, "rate_bps": spec.rate_bps}
    return paths


def _paths_from_manifest(folder: Path) -> dict[str, dict]:
    """Path name -> {rtt_s, rate_bps} from the first manifest in or under `folder`."""
    candidates = sorted(folder.glob("*manifest.json")) + sorted(folder.glob("*/manifest.json"))
    for m in candidates:
        try:
            paths = paths_of(json.loads(m.read_text()))
        except (OSError, ValueError):
            continue
        if paths:
            return paths
    return {}


def _number(value) -> float:
    """A table cell as a number: 0 when empty or NaN (csv gives '', pandas NaN)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return 0.0
    return x if x == x else 0.0


def single_path_bounds(row, path: dict) -> dict:
    """The bounds of one single-path TCP run of a sweep table over `path` ({rtt_s, rate_bps}).

    The run's sk_sndbuf is the largest it can have had (the looser bound): the one the kernel
    reported after the transfer (`sndbuf_effective`), and for the tcp_wmem method tcp_wmem[2]
    (`buffer_bytes`), since global TCP memory pressure may have shrunk it before that report
    (sk_stream_moderate_sndbuf, 6.12 include/net/sock.h). Returns sk_sndbuf, rtt_s and
    the bounds: `window_bps` ((sk_sndbuf + 64 KiB) / RTT), `ceiling_bps` (the link) and
    `unacked_bytes` (sk_sndbuf + 64 KiB, for a window-limited run only: physics.window_limited);
    inf where there is nothing to bound with.
    """
    sk = _number(row.get("sndbuf_effective"))
    if row.get("method") == "wmem":
        sk = max(sk, _number(row.get("buffer_bytes")))
    sk = int(sk)
    rtt = path.get("rtt_s") or 0.0
    inf = float("inf")
    limited = bool(sk) and physics.window_limited(sk, rtt, path.get("rate_bps"))
    return {"sk_sndbuf": sk, "rtt_s": rtt,
            "window_bps": physics.window_bound_bps(sk, rtt) if sk and rtt > 0 else inf,
            "ceiling_bps": physics.link_ceiling_bps(path["rate_bps"]) if path.get("rate_bps") else inf,
            "unacked_bytes": physics.unacked_bound_bytes(sk) if limited else inf}


def _ceiling(where: str, mbps: float, rate_bps: float | None, wire_mbps: float | None = None) -> list[physics.Verdict]:
    if not rate_bps:
        return []
    return [physics.judge_ceiling(f"{where}: goodput vs link ceiling", mbps * 1e6, rate_bps,
                                  None if wire_mbps is None else wire_mbps * 1e6)]


def check_sweep(table: Path) -> list[physics.Verdict]:
    """Every single-path row of a sweep table against its link and window bounds; and, where the
    row carries the kernel's view (`inflight_max_<path>`) and its run directory is not beside the
    table (a compact reference copy), its bytes in flight (check_run_dir judges them otherwise)."""
    paths = _paths_from_manifest(table.parent)
    out = []
    with open(table, newline="") as f:
        for row in csv.DictReader(f):
            config, run = row.get("config", ""), row.get("run", "?")
            if not config.startswith("tcp-") or not row.get("goodput_transfer_mbps"):
                continue  # MPTCP rows: several paths, no single-path window bound
            name = config.removeprefix("tcp-")
            path = paths.get(name)
            if path is None:
                out.append(physics.Verdict(f"{table}: {run}: path of {config!r} not in any manifest",
                                           0, 0, "", False, "cannot judge without the path's RTT"))
                continue
            mbps = float(row["goodput_transfer_mbps"])
            b = single_path_bounds(row, path)
            where = f"{table.parent.name}/{run}"
            if row.get("min_tso_segs"):  # Lab 1's control runs it at the kernel's own: said, judged all the same
                where += f" (tcp_min_tso_segs {row['min_tso_segs']})"
            out += _ceiling(where, mbps, path["rate_bps"])
            cause = physics.queue_overrun(b["sk_sndbuf"], _number(row.get("wmem_queued_max")),
                                          row.get("min_tso_segs") or None)
            if b["sk_sndbuf"] and b["rtt_s"] > 0:
                bound, ok = b["window_bps"] / 1e6, mbps <= b["window_bps"] / 1e6
                out.append(physics.Verdict(f"{where}: single-path TCP vs window bound", mbps, bound, "Mbit/s",
                                           ok, f"sk_sndbuf {b['sk_sndbuf']} B, RTT {b['rtt_s'] * 1e3:g} ms",
                                           "" if ok else cause))
            inflight = _number(row.get(f"inflight_max_{name}"))
            if inflight and b["unacked_bytes"] < float("inf") and not (table.parent / run / "summary.json").exists():
                ok = inflight <= b["unacked_bytes"]
                out.append(physics.Verdict(f"{where}: bytes in flight", inflight, b["unacked_bytes"], "B", ok,
                                           f"sk_sndbuf {b['sk_sndbuf']} B + one 64 KiB skb", "" if ok else cause))
    return out


def check_runs_table(table: Path) -> list[physics.Verdict]:
    out = []
    with open(table, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("ceiling_mbps") and row.get("goodput_transfer_mbps"):  # MPTCP over every path
                mbps, bound = float(row["goodput_transfer_mbps"]), physics.allowed(float(row["ceiling_mbps"]))
                out.append(physics.Verdict(f"{table.parent.name}/{row.get('run', '?')}: MPTCP goodput vs its "
                                           "paths' ceilings", mbps, bound, "Mbit/s", mbps <= bound))
            if not row.get("capacity_mbps"):
                continue
            where, rate = f"{table.parent.name}/{row.get('run', '?')}", float(row["capacity_mbps"]) * 1e6
            if row.get("goodput_window_mbps"):
                out += _ceiling(where, float(row["goodput_window_mbps"]), rate)
            # the bottleneck's own count of what it sent, headers included; the lowest rate its
            # samples allow where recorded (observe.qdisc_window)
            key = "emulator_wire_mbps_min" if row.get("emulator_wire_mbps_min") else "emulator_wire_mbps"
            if row.get(key):
                wire, bound = float(row[key]), physics.allowed(rate) / 1e6
                out.append(physics.Verdict(f"{where}: emulator's wire rate vs configured rate", wire, bound,
                                           "Mbit/s", wire <= bound, "tc -s qdisc bytes over the measurement window"))
    return out


def check_fairness_table(table: Path) -> list[physics.Verdict]:
    """Lab 2's fairness runs: the TCP flow and the MPTCP connection's subflow share one link, so
    together they carry at most its ceiling (`tcp_on_shared_mbps` where the run measured both over
    one window, else `tcp_goodput_transfer_mbps`). The link is the `fairness.shared` parameter of the manifest beside
    the table."""
    try:
        man = json.loads((table.parent / "lab2-manifest.json").read_text())
        rate = LinkSpec.parse(((man.get("parameters") or {}).get("fairness") or {})["shared"]).rate_bps
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out = []
    with open(table, newline="") as f:
        for row in csv.DictReader(f):
            tcp = _number(row.get("tcp_on_shared_mbps")) or _number(row.get("tcp_goodput_transfer_mbps"))
            both = tcp + _number(row.get("mptcp_on_shared_mbps"))
            where = f"{table.parent.name}/fair-{row.get('algo')}-r{row.get('rep')}"
            out += [physics.Verdict(f"{where}: TCP + MPTCP on the shared path vs its ceiling", v.measured, v.bound,
                                    v.unit, v.ok) for v in _ceiling("", both, rate)]
            if _number(row.get("shared_wire_mbps")):  # the emulator's own count of what the link delivered
                wire, bound = _number(row["shared_wire_mbps"]), physics.allowed(rate) / 1e6
                out.append(physics.Verdict(f"{where}: the shared link's wire rate vs configured rate", wire, bound,
                                           "Mbit/s", wire <= bound, "both flows' packets captured on its egress"))
    return out


def check_setup_checks(path: Path) -> list[physics.Verdict]:
    """The setup check's single-TCP goodput per path (`tcp_goodput_steady_mbps`) against the path's ceiling,
    from a manifest or summary that carries the checks (`setup_checks` or `checks`)."""
    try:
        doc = current_keys(json.loads(path.read_text()))
    except (OSError, ValueError):
        return []
    checks = doc.get("setup_checks") or doc.get("checks") or {}
    out = []
    for name, row in ((checks.get("paths") or {}) if isinstance(checks, dict) else {}).items():
        if row.get("tcp_goodput_steady_mbps") is None or not row.get("link"):
            continue
        where = f"{path.parent.name}/{path.name}: setup check, path {name}"
        wire = row.get("emulator_wire_mbps_min")  # what the run's own judge had (verify, physics.judge_link)
        out += _ceiling(where, float(row["tcp_goodput_steady_mbps"]), LinkSpec.parse(row["link"]).rate_bps,
                        None if wire is None else float(wire))
    return out


def _path_by_address(run: Path) -> dict[str, dict]:
    """Sender address -> {rtt_s, rate_bps} of its path, from the run's manifest ({} without one)."""
    try:
        manifest = json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    paths = paths_of(manifest)
    return {p["a_addr"]: paths[p["name"]] for p in (manifest.get("network") or {}).get("paths", [])
            if p.get("a_addr") and p["name"] in paths}


def mptcp_ceiling_bps(manifest: dict, summary: dict) -> float:
    """The most an MPTCP transfer over every path of the run's network could carry, averaged over
    its span (physics.paths_ceiling_bps), with the path changes it recorded (`mobility_applied`:
    when each began and ended) or, for runs made before that was recorded, as scheduled; at most
    the ceiling of a bottleneck its paths share (the network's `bottleneck`)."""
    rates = {name: p["rate_bps"] for name, p in paths_of(manifest).items()}
    span = summary.get("span_s") or summary.get("duration_s") or 0.0
    applied = summary.get("mobility_applied")
    if applied is None:
        duration = (manifest.get("parameters") or {}).get("duration_s", span)
        applied = [{**m, "begun_s": float(m["at"]) * duration, "done_s": float(m["at"]) * duration}
                   for m in (manifest.get("parameters") or {}).get("mobility") or []]
    changes = [{"path": m["path"], "rate_bps": rate, "begun_s": m["begun_s"], "done_s": m["done_s"]}
               for m in applied if (rate := LinkSpec.parse(m["link"]).rate_bps)]
    ceiling = physics.paths_ceiling_bps(rates, float(span), changes)
    shared = (manifest.get("network") or {}).get("bottleneck")
    if shared and set(shared["paths"]) >= set(rates) and (rate := LinkSpec.parse(shared["link"]).rate_bps):
        ceiling = min(ceiling, physics.link_ceiling_bps(rate))
    return ceiling


def _mptcp_ceiling(run: Path, summary: dict) -> list[physics.Verdict]:
    if summary.get("proto") != "mptcp" or "goodput_transfer_mbps" not in summary:
        return []
    try:
        manifest = json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return []
    bound = physics.allowed(mptcp_ceiling_bps(manifest, summary)) / 1e6
    if bound == float("inf"):
        return []
    goodput = summary["goodput_transfer_mbps"]
    return [physics.Verdict(f"{run.name}: MPTCP goodput vs its paths' ceilings", goodput, bound, "Mbit/s",
                            goodput <= bound, "every path's link over the transfer, path changes included")]


def check_run_dir(run: Path) -> list[physics.Verdict]:
    """A run's own kernel view (`kernel_tcp` in summary.json) against the window bound, for each
    connection that is window-limited on its path (physics.window_limited)."""
    try:
        summary = read_summary(run)
    except (OSError, ValueError):
        return []
    by_addr = _path_by_address(run)
    out = _mptcp_ceiling(run, summary)
    lowest = _lowest_rtts_ms(run, summary)
    for name, kern in (summary.get("kernel_tcp") or {}).items():
        for conn, k in (kern.get("connections") or {}).items():
            path = by_addr.get(conn.split("->")[0].rsplit(":", 1)[0])  # parse_ss dropped any %device
            # a path without delay has nothing to judge: its bound, less the slack, is below 0
            if path and k.get("min_rtt_ms") is not None and lowest.get(path["name"], 0) > latency.rtt_slack_ms(0):
                out.append(_min_rtt_verdict(f"{run.name} ({name}, {conn})", float(k["min_rtt_ms"]),
                                            lowest[path["name"]]))
            if summary.get("proto") == "mptcp" or not k.get("sk_sndbuf") or "inflight_bytes_max" not in k:
                continue
            if path and not physics.window_limited(int(k["sk_sndbuf"]), path["rtt_s"], path["rate_bps"]):
                continue
            bound = physics.unacked_bound_bytes(int(k["sk_sndbuf"]))
            ok = k["inflight_bytes_max"] <= bound
            cause = "" if ok else physics.queue_overrun(int(k["sk_sndbuf"]), _number(k.get("wmem_queued_max")),
                                                        summary.get("min_tso_segs"))
            out.append(physics.Verdict(f"{run.name} ({name}, {conn}): bytes in flight", k["inflight_bytes_max"],
                                       bound, "B", ok, f"sk_sndbuf {int(k['sk_sndbuf'])} B + one 64 KiB skb", cause))
    return out


def _lowest_rtts_ms(run: Path, summary: dict) -> dict[str, float]:
    """Path name -> the lowest RTT its configuration allowed during the run, in ms: the configured
    one, or less where a path change of the run (`mobility_applied`, else the run's `mobility`
    parameter) set a shorter delay (one way, both directions)."""
    try:
        manifest = json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    lowest = {name: p["rtt_s"] * 1e3 for name, p in paths_of(manifest).items()}
    changes = summary.get("mobility_applied") or (manifest.get("parameters") or {}).get("mobility") or []
    for m in changes:
        if m.get("path") in lowest and m.get("delay"):
            rtt = 2 * LinkSpec.parse(f"delay={m['delay']}").delay_s * 1e3
            lowest[m["path"]] = min(lowest[m["path"]], rtt)
    return lowest


def _min_rtt_verdict(where: str, measured_ms: float, lowest_ms: float) -> physics.Verdict:
    """No packet crosses a path faster than its configured RTT: the kernel's min RTT of a
    connection (`ss` minrtt, over every sample of the run) at least that, less the RTT check's slack
    (latency.rtt_slack_ms: ping's resolution, 2% of the RTT)."""
    bound = lowest_ms - latency.rtt_slack_ms(lowest_ms)
    return physics.Verdict(f"{where}: the kernel's min RTT", measured_ms, round(bound, 3), "ms", measured_ms >= bound,
                           f"the lowest RTT the path was configured with in the run, {lowest_ms:g} ms, less the RTT check's slack")
