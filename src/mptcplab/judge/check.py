"""`mptcplab check RESULTS_DIR`: judge recorded results against physics (see physics.py).

Reads what the labs write, without re-running anything. Each lab names its results tables and the
judge of each (`Lab.judging.results_checks`): a table only one lab writes is judged in that lab's
package, with the pieces here (`ceiling`, `wire_rate`, `paths_of`, `number`). Judged here:
- a goodput table (`check_runs_table`: `goodput_window_mbps`, the receiver's goodput of all n flows
  together over the steady window, over a bottleneck of `capacity_mbps`; `emulator_wire_mbps`, what the
  bottleneck itself sent; or `goodput_transfer_mbps` of each MPTCP run against `ceiling_mbps`, its paths'
  ceilings);
- the setup checks a manifest or summary records (`check_setup_checks`): each path's single TCP
  against its link's ceiling;
- run directories whose `summary.json` carries `kernel_tcp` (the `ss` view every sampled run
  records): bytes in flight against the window bound of the buffer the kernel reported; each
  connection's min RTT against the lowest RTT its path was configured with during the run; and
  MPTCP runs' goodput against what all their paths together could carry (mptcp_ceiling_bps).

Single-path TCP above its window bound, or any goodput above its link's ceiling, is a finding. It
stays one whatever explains it; where the run's own `ss -m` samples show why (the kernel queued past
sk_sndbuf: physics.queue_overrun, e.g. a run at the kernel's own tcp_min_tso_segs), the verdict names that
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


def number(value) -> float:
    """A table cell as a number: 0 when empty or NaN (csv gives '', pandas NaN)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        return 0.0
    return x if x == x else 0.0


def ceiling(where: str, mbps: float, rate_bps: float | None, wire_mbps: float | None = None,
            what: str = "goodput vs link ceiling") -> list[physics.Verdict]:
    """A goodput against the ceiling of a link of `rate_bps` (physics.judge_ceiling, with the
    emulator's own count `wire_mbps` where known); nothing to judge without a rate."""
    if not rate_bps:
        return []
    return [physics.judge_ceiling(f"{where}: {what}", mbps * 1e6, rate_bps,
                                  None if wire_mbps is None else wire_mbps * 1e6)]


def wire_rate(where: str, wire_mbps: float, rate_bps: float, how: str) -> physics.Verdict:
    """What an emulator itself sent over a link (`wire_mbps`, headers included) against the link's
    configured rate, `how` it was counted."""
    bound = physics.allowed(rate_bps) / 1e6
    return physics.Verdict(f"{where} vs configured rate", wire_mbps, bound, "Mbit/s", wire_mbps <= bound, how)


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
                out += ceiling(where, float(row["goodput_window_mbps"]), rate)
            # the bottleneck's own count of what it sent, headers included; the lowest rate its
            # samples allow where recorded (observe.qdisc_window)
            key = "emulator_wire_mbps_min" if row.get("emulator_wire_mbps_min") else "emulator_wire_mbps"
            if row.get(key):
                out.append(wire_rate(f"{where}: emulator's wire rate", float(row[key]), rate,
                                     "tc -s qdisc bytes over the measurement window"))
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
        out += ceiling(where, float(row["tcp_goodput_steady_mbps"]), LinkSpec.parse(row["link"]).rate_bps,
                        None if wire is None else float(wire))
    return out


def _manifest(run: Path) -> dict:
    """A run directory's manifest.json ({} without a readable one)."""
    try:
        return json.loads((run / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def _path_by_address(run: Path) -> dict[str, dict]:
    """Sender address -> {rtt_s, rate_bps} of its path, from the run's manifest ({} without one)."""
    manifest = _manifest(run)
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
    manifest = _manifest(run)
    if not manifest:
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
            cause = "" if ok else physics.queue_overrun(int(k["sk_sndbuf"]), number(k.get("wmem_queued_max")),
                                                        summary.get("min_tso_segs"))
            out.append(physics.Verdict(f"{run.name} ({name}, {conn}): bytes in flight", k["inflight_bytes_max"],
                                       bound, "B", ok, f"sk_sndbuf {int(k['sk_sndbuf'])} B + one 64 KiB skb", cause))
    return out


def _lowest_rtts_ms(run: Path, summary: dict) -> dict[str, float]:
    """Path name -> the lowest RTT its configuration allowed during the run, in ms: the configured
    one, or less where a path change of the run (`mobility_applied`, else the run's `mobility`
    parameter) set a shorter delay (one way, both directions)."""
    manifest = _manifest(run)
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
