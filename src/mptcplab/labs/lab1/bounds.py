"""Lab 1 analysis: physics: what a send buffer allows each run, and `check_sweep`, the judge
`mptcplab check` applies to Lab 1's sweep tables (LAB.judging.results_checks) with the same bounds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pandas as pd

from ...judge import physics
from ...judge.check import ceiling, number, paths_of
from .sweep import GOODPUT_LIMIT, LINK_MBPS, _kib


def sweep_manifest(path: Path | str) -> dict:
    """A manifest of the sweep (any run's, or the compact copy's verify-manifest.json): the network."""
    path = Path(path)
    for m in sorted(path.glob("*manifest.json")) + sorted(path.glob("*/manifest.json")):
        try:
            manifest = json.loads(m.read_text())
        except (OSError, ValueError):
            continue
        if paths_of(manifest):
            return manifest
    raise FileNotFoundError(f"no manifest with the network in {path}")


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
    sk = number(row.get("sndbuf_effective"))
    if row.get("method") == "wmem":
        sk = max(sk, number(row.get("buffer_bytes")))
    sk = int(sk)
    rtt = path.get("rtt_s") or 0.0
    inf = float("inf")
    limited = bool(sk) and physics.window_limited(sk, rtt, path.get("rate_bps"))
    return {"sk_sndbuf": sk, "rtt_s": rtt,
            "window_bps": physics.window_bound_bps(sk, rtt) if sk and rtt > 0 else inf,
            "ceiling_bps": physics.link_ceiling_bps(path["rate_bps"]) if path.get("rate_bps") else inf,
            "unacked_bytes": physics.unacked_bound_bytes(sk) if limited else inf}


def check_sweep(table: Path) -> list[physics.Verdict]:
    """Every single-path row of a sweep table against its link and window bounds; and, where the
    row carries the kernel's view (`inflight_max_<path>`) and its run directory is not beside the
    table (a compact reference copy), its bytes in flight (check_run_dir judges them otherwise)."""
    try:
        paths = paths_of(sweep_manifest(table.parent))
    except FileNotFoundError:
        paths = {}
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
            out += ceiling(where, mbps, path["rate_bps"])
            cause = physics.queue_overrun(b["sk_sndbuf"], number(row.get("wmem_queued_max")),
                                          row.get("min_tso_segs") or None)
            if b["sk_sndbuf"] and b["rtt_s"] > 0:
                bound, ok = b["window_bps"] / 1e6, mbps <= b["window_bps"] / 1e6
                out.append(physics.Verdict(f"{where}: single-path TCP vs window bound", mbps, bound, "Mbit/s",
                                           ok, f"sk_sndbuf {b['sk_sndbuf']} B, RTT {b['rtt_s'] * 1e3:g} ms",
                                           "" if ok else cause))
            inflight = number(row.get(f"inflight_max_{name}"))
            if inflight and b["unacked_bytes"] < float("inf") and not (table.parent / run / "summary.json").exists():
                ok = inflight <= b["unacked_bytes"]
                out.append(physics.Verdict(f"{where}: bytes in flight", inflight, b["unacked_bytes"], "B", ok,
                                           f"sk_sndbuf {b['sk_sndbuf']} B + one 64 KiB skb", "" if ok else cause))
    return out


def window_bounds(sweep: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """Every single-path run of the sweep against the bounds physics sets (mptcplab.judge.physics, the
    same bounds `mptcplab check` applies): one row per run with its sk_sndbuf (the largest it can
    have had), the path's RTT, `window_mbps` = (sk_sndbuf + 64 KiB) x 8 / RTT, `ceiling_mbps` (the
    link), and where the run carries the kernel's view, its most bytes in flight against
    sk_sndbuf + 64 KiB. `above` is True for a run that broke any of them: such a run did not happen
    on a network that honours its send buffer, whatever else it shows."""
    paths = paths_of(manifest)
    rows = []
    for r in sweep[sweep["config"].astype(str).str.startswith("tcp-")].to_dict("records"):
        name = r["config"].removeprefix("tcp-")
        if name not in paths:
            continue
        b = single_path_bounds(r, paths[name])
        window = b["window_bps"] / 1e6
        ceiling = physics.allowed(b["ceiling_bps"]) / 1e6
        inflight = r.get(f"inflight_max_{name}")
        inflight = float(inflight) if inflight is not None and inflight == inflight else np.nan
        rows.append({
            "run": r.get("run"), "method": r["method"], "buffer_bytes": r["buffer_bytes"], "config": r["config"],
            "path": name, "goodput_transfer_mbps": r["goodput_transfer_mbps"], "sk_sndbuf": b["sk_sndbuf"],
                     "rtt_ms": b["rtt_s"] * 1e3,
            "window_mbps": window, "ceiling_mbps": ceiling, "bound_mbps": min(window, ceiling),
            "inflight_max": inflight, "unacked_bound": b["unacked_bytes"],
            "above_window": r["goodput_transfer_mbps"] > window, "above_link": r["goodput_transfer_mbps"] > ceiling,
            "above_inflight": bool(inflight > b["unacked_bytes"]) if inflight == inflight else False})
    cols = ["run", "method", "buffer_bytes", "config", "path", "goodput_transfer_mbps", "sk_sndbuf", "rtt_ms",
            "window_mbps",
            "ceiling_mbps", "bound_mbps", "inflight_max", "unacked_bound", "above_window", "above_link",
            "above_inflight"]
    out = pd.DataFrame(rows, columns=cols)
    out["above"] = out["above_window"] | out["above_link"] | out["above_inflight"]
    return out


def describe_bounds(bounds: pd.DataFrame, limit: int = 8) -> str:
    """What a student reads about their single-path runs: all within physics, or each run that is
    not, with its number, its bound and where the bound comes from, and what to do."""
    if bounds.empty:
        return "No single-path TCP runs to judge against their window bound."
    bad = bounds[bounds["above"]]
    judged = bounds[np.isfinite(bounds["window_mbps"])]
    if bad.empty:
        worst = (judged["goodput_transfer_mbps"] / judged["window_mbps"]).max() if len(judged) else np.nan
        tail = (f"; the closest to its window bound reached {worst:.0%} of it" if worst == worst else "")
        ceilings = sorted({round(c, 1) for c in bounds["ceiling_mbps"] if c == c})
        link = " / ".join(f"{c:.1f}" for c in ceilings) or f"{GOODPUT_LIMIT:.1f}"
        return (f"Physics check: all {len(bounds)} single-path runs are within their bounds (window: "
                f"(sk_sndbuf + 64 KiB) / RTT; link: {link} Mbit/s of payload){tail}.")
    lines = [f"Physics check: {len(bad)} of {len(bounds)} single-path runs carried more than physics allows:"]
    for r in bad.head(limit).itertuples():
        if r.above_window:
            lines.append(f"  {r.run}: {r.goodput_transfer_mbps:.1f} Mbit/s over the {r.path} path "
                         f"(RTT {r.rtt_ms:g} ms) with sk_sndbuf {r.sk_sndbuf:,} B: at most ({r.sk_sndbuf:,} + 65,536) B x 8 / {r.rtt_ms:g} ms "
                         f"= {r.window_mbps:.1f} Mbit/s")
        if r.above_inflight:
            lines.append(f"  {r.run}: {r.inflight_max:,.0f} bytes in flight at once, at most "
                         f"{r.unacked_bound:,} (sk_sndbuf {r.sk_sndbuf:,} B + one 64 KiB skb)")
        if r.above_link:
            lines.append(f"  {r.run}: {r.goodput_transfer_mbps:.1f} Mbit/s, above what the {r.path} link carries "
                         f"({r.ceiling_mbps:.1f} Mbit/s)")
    if len(bad) > limit:
        lines.append(f"  ... and {len(bad) - limit} more ({', '.join(map(str, bad['run'].iloc[limit:]))})")
    lines += [
        "A TCP connection cannot keep more unacknowledged bytes than its send buffer holds, so these",
        "numbers did not come from a kernel that honoured its send buffer: the curves built on them are",
        "an artefact of the place they ran in, not TCP. Your answers below are still graded on your",
        "computations, not on these numbers; but do not draw conclusions from them. Re-run the lab where",
        "the physics check passes (`sudo mptcplab doctor` shows it; `mptcplab check RESULTS_DIR` judges",
        "a results directory), and tell your instructor."]
    return "\n".join(lines)


def _nominal_sk_sndbuf(method: str, buffer_bytes: int) -> int:
    """The sk_sndbuf a single TCP socket gets: tcp_wmem = B B B gives B; SO_SNDBUF = B gives 2B."""
    return int(buffer_bytes) if method == "wmem" else physics.sk_sndbuf_for(int(buffer_bytes), wmem_max=1 << 62)


def slow_path_bound_curve(sweep: pd.DataFrame, manifest: dict, method: str) -> pd.DataFrame:
    """Single-path TCP's bound on the slow path at each buffer of the sweep (nominal sk_sndbuf):
    buffer_bytes, sk_sndbuf, bound_mbps = min(link ceiling, (sk_sndbuf + 64 KiB) x 8 / RTT_slow)."""
    paths = paths_of(manifest)
    rtt = max((p["rtt_s"] for p in paths.values()), default=0.0)
    rate = max((p["rate_bps"] or 0 for p in paths.values()), default=0.0)
    sizes = sorted(sweep.loc[sweep["method"] == method, "buffer_bytes"].unique()) if rtt > 0 else []
    rows = []
    for b in sizes:
        sk = _nominal_sk_sndbuf(method, b)
        window = physics.window_bound_bps(sk, rtt) / 1e6 if rtt > 0 else np.inf
        ceiling = physics.link_ceiling_bps(rate) / 1e6 if rate else np.inf
        rows.append({"buffer_bytes": int(b), "sk_sndbuf": sk, "bound_mbps": min(window, ceiling)})
    return pd.DataFrame(rows, columns=["buffer_bytes", "sk_sndbuf", "bound_mbps"])


def mptcp_bounds(sweep: pd.DataFrame, manifest: dict) -> pd.DataFrame:
    """MPTCP at each method and buffer against what its send buffers allow (the notebook's Q14).

    S is the MPTCP socket's send buffer (`sndbuf_effective`). Every byte stays in it until the
    connection-level DATA_ACK covers it, and that is cumulative: a byte sent on the fast subflow
    after a chunk on the slow one is released only when that chunk has arrived and its DATA_ACK
    is back. If the slow subflow always holds the oldest data, the buffer turns over once per
    `T` = one slow one-way delay plus the DATA_ACK's way back: RTT_slow when it returns on the slow
    subflow, about RTT_slow / 2 when it returns on the fast one. So `s_per_rtt_mbps` = S / RTT_slow and
    `s_per_half_rtt_mbps` = 2 S / RTT_slow bracket what that pattern delivers; neither is a bound (bytes
    sent while the slow subflow holds nothing are released at once). The hard bound is each
    subflow's own window: `subflow_bound_mbps` = sum over paths of min(link, (subflow sk_sndbuf + 64 KiB)
    / RTT_path), with the subflows' sk_sndbuf from ss when the run recorded it (else B for tcp_wmem,
    2B for SO_SNDBUF, which the MPTCP socket copies to its subflows). S and the buffers are in bytes,
    the rates in Mbit/s (`_mbps`)."""
    paths = paths_of(manifest)
    rtt_slow = max((p["rtt_s"] for p in paths.values()), default=0.0)
    m = sweep[sweep["config"] == "mptcp"]
    rows = []
    for (method, b), g in m.groupby(["method", "buffer_bytes"]):
        S = float(g["sndbuf_effective"].median()) if "sndbuf_effective" in g else np.nan
        total = 0.0
        for name, p in paths.items():
            col = f"sk_sndbuf_{name}"
            sub = g[col].median() if col in g and g[col].notna().any() else _nominal_sk_sndbuf(method, b)
            window = physics.window_bound_bps(int(sub), p["rtt_s"]) if p["rtt_s"] > 0 else np.inf
            total += min(window, physics.link_ceiling_bps(p["rate_bps"]) if p["rate_bps"] else np.inf)
        rows.append({"method": method, "buffer_bytes": int(b), "S": S,
                     "goodput_transfer_mbps": g["goodput_transfer_mbps"].mean(),
                     "goodput_transfer_mbps_max": g["goodput_transfer_mbps"].max(), "n": len(g),
                     "s_per_rtt_mbps": S * 8 / rtt_slow / 1e6 if rtt_slow else np.nan,
                     "s_per_half_rtt_mbps": 2 * S * 8 / rtt_slow / 1e6 if rtt_slow else np.nan,
                     "subflow_bound_mbps": physics.allowed(total) / 1e6 if paths else np.nan})
    out = pd.DataFrame(rows, columns=["method", "buffer_bytes", "S", "goodput_transfer_mbps",
                                      "goodput_transfer_mbps_max", "n", "s_per_rtt_mbps",
                                      "s_per_half_rtt_mbps", "subflow_bound_mbps"])
    out["above_subflow_bound"] = out["goodput_transfer_mbps_max"] > out["subflow_bound_mbps"]
    out["where"] = np.select([out["goodput_transfer_mbps"] < out["s_per_rtt_mbps"],
                              out["goodput_transfer_mbps"] <= out["s_per_half_rtt_mbps"]],
                             ["below S/RTT_slow", "between S/RTT_slow and 2S/RTT_slow"], "above 2S/RTT_slow")
    return out


def buffer_needed(manifest: dict) -> tuple[float, float]:
    """The MPTCP socket's buffer S (bytes) at which S / T reaches the fast path alone, for
    T = RTT_slow / 2 and T = RTT_slow: the range in which MPTCP should start to beat one path."""
    paths = paths_of(manifest)
    rtt_slow = max((p["rtt_s"] for p in paths.values()), default=0.0)
    fast = min(paths.values(), key=lambda p: p["rtt_s"])
    c = physics.link_ceiling_bps(fast["rate_bps"]) / 8
    return c * rtt_slow / 2, c * rtt_slow


def crossing(sweep: pd.DataFrame) -> dict[str, float | None]:
    """Per method: the smallest MPTCP socket buffer S (sndbuf_effective) from which MPTCP's mean
    goodput stays above single-path TCP's on the fast path, or None if it never does."""
    fast = sweep[sweep["config"] == "tcp-fast"].groupby("method")["goodput_transfer_mbps"].mean()
    out = {}
    for method, g in sweep[sweep["config"] == "mptcp"].groupby("method"):
        per = g.groupby("sndbuf_effective")["goodput_transfer_mbps"].mean().sort_index()
        above = per > fast.get(method, np.inf)
        ok = [s for i, s in enumerate(per.index) if above.iloc[i:].all()]
        out[method] = float(ok[0]) if ok else None
    return out


def describe_mptcp_bounds(sweep: pd.DataFrame, manifest: dict) -> str:
    """The numbers Q14 needs, from this run: where MPTCP falls against S/RTT_slow and 2S/RTT_slow,
    whether any run broke the subflows' bound, the buffer S needed and where MPTCP crossed TCP,
    between which two of the sweep's S (in bytes, as the table's S)."""
    t = mptcp_bounds(sweep, manifest)
    if t.empty:
        return "No MPTCP runs in this sweep."
    lo, hi = buffer_needed(manifest)
    lines = [f"MPTCP against its send buffer S (the MPTCP socket's sk_sndbuf), {len(t)} method/buffer points:"]
    for where, g in t.groupby("where", sort=False):
        pts = ", ".join(f"{m} {_kib(b)}" for m, b in zip(g["method"], g["buffer_bytes"]))
        lines.append(f"  {where}: {len(g)} ({pts})")
    bad = t[t["above_subflow_bound"]]
    lines.append("  above the sum of the subflows' window bounds (physics): "
                 + (", ".join(f"{m} {_kib(b)}" for m, b in zip(bad["method"], bad["buffer_bytes"])) or "none"))
    lines.append(f"S for which S / T equals the fast path alone: {lo:,.0f} bytes (T = RTT_slow / 2) to "
                 f"{hi:,.0f} bytes (T = RTT_slow)")
    for method, s in crossing(sweep).items():
        below = t.loc[(t["method"] == method) & (t["S"] < (s or 0)), "S"]
        lines.append(f"  measured, {method}: MPTCP stays above single-path TCP on the fast path from S = "
                     + (f"{s:,.0f} bytes" if s else "(never in this sweep)")
                     + (f", not at {below.max():,.0f} bytes (this sweep's next smaller S): it crossed in between"
                        if len(below) else ""))
    return "\n".join(lines)


def slow_path_bdp(manifest: dict | None = None, rtt_ms: float = 80.0) -> float:
    """Bytes in flight that keep the slow path full: its goodput limit x its RTT (from the manifest)."""
    if manifest:
        rtt_ms = max(p.get("rtt_ms_configured", 0) for p in manifest["network"]["paths"])
    return full_path_mbps(manifest, "slow")[0] * 1e6 / 8 * rtt_ms / 1000


def full_path_mbps(manifest: dict | None, path: str | None = None) -> tuple[float, str]:
    """Payload one full path carries, and its rate as text: `path`'s link in the run's manifest
    (None: the fastest path), else the lab's 100 Mbit/s."""
    rates = {name: p["rate_bps"] for name, p in paths_of(manifest).items() if p.get("rate_bps")} if manifest else {}
    rate = rates.get(path) if path else max(rates.values(), default=None)
    if not rate:
        return GOODPUT_LIMIT, f"{LINK_MBPS:g} Mbit/s"
    return physics.link_ceiling_bps(rate) / 1e6, f"{rate / 1e6:g} Mbit/s"


def _paths_full_mbps(manifest: dict, config: str | None) -> float:
    """The payload the paths a run used carry when full, from the run's own links (MPTCP: all of
    them; tcp-fast / tcp-slow: that path); the lab's 100 Mbit/s where the manifest has no rate."""
    used = list(paths_of(manifest)) if config == "mptcp" else [str(config).removeprefix("tcp-")]
    return sum(full_path_mbps(manifest, n)[0] for n in used) if used else GOODPUT_LIMIT
