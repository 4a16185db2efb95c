"""Lab 2 analysis: from a sweep's runs to the compact tables the notebook reads (throughput.csv,
subflows.csv, fairness.csv, timeseries.csv, ..., lab2-manifest.json), and reading them back
(`load`) from a sweep or the shipped reference copy (solutions/results/lab2/)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from . import cctrace
from ...judge import check
from ...measure.traffic import current_column
from ...run import results
from ...run.results import run_commit
from .counters import bpf_counters, sum_counters
from .raw import convert_raw
from .stalls import goodput_bins


COMPACT = ("throughput.csv", "subflows.csv", "fairness.csv", "timeseries.csv", "delay-window.csv",
           "goodput-bins.csv", "runs-manifest.csv", "lab2-manifest.json", "paper-vs-this-run.md")
# what a run's parameters share with its sweep's (kept for a sweep without a setup check)
SWEEP_PARAMETERS = ("duration_s", "cross", "fairness", "shared_bottleneck")
BIN_S = 0.1
BINS = ["run", "t", "goodput_bin_mbps"]  # goodput-bins.csv: each run's goodput per stalls.GOODPUT_BIN_S
# The shared path's split: mptcp_on_shared_mbps and tcp_on_shared_mbps from what the emulator's link
# delivered over the span both flows used it (measure.shared_link_rates; runs before it: ss byte shares,
# tcp_on_shared_mbps over the same window or empty), mptcp_on_other_mbps the other path's subflow
# there, shared_wire_mbps both flows' packets on the shared link, headers included
FAIRNESS_COLUMNS = ["algo", "rep", "mptcp_goodput_transfer_mbps", "tcp_goodput_transfer_mbps",
                    "mptcp_share_on_shared", "mptcp_on_shared_mbps",
                    "tcp_on_shared_mbps", "mptcp_on_other_mbps", "shared_wire_mbps", "ss_mptcp_on_shared_mbps",
                    "commit"]


def _timeseries(d: Path, s: dict) -> pd.DataFrame:
    """cwnd and smoothed RTT per subflow from tcp_probe, RTO from ss, in BIN_S bins."""
    frames = []
    t0 = s.get("t0")
    probe = d / "tcp_probe.csv"
    if probe.exists():
        p = pd.read_csv(probe)
        if not p.empty:
            t0 = t0 or p.time.min()
            p["path"] = "p" + p.saddr.str.split(".").str[1]
            p["t"] = ((p.time - t0) / BIN_S).round().astype(int) * BIN_S
            g = p.groupby(["path", "t"]).agg(cwnd=("snd_cwnd", "last"), srtt_ms=("srtt_us", "mean"))
            g["srtt_ms"] /= 1000
            frames.append(g)
    ss = d / "ss.csv"
    if ss.exists():
        q = pd.read_csv(ss)
        q = q[q.mptcp_subflow.astype(bool) & q.rto_ms.notna()]
        if not q.empty:
            t0 = t0 or q.time.min()
            q["path"] = "p" + q.local.str.split(".").str[1]
            q["t"] = ((q.time - t0) / BIN_S).round().astype(int) * BIN_S
            frames.append(q.groupby(["path", "t"]).agg(rto_ms=("rto_ms", "mean")))
    if not frames:
        return pd.DataFrame()
    out = pd.concat(frames, axis=1).reset_index()
    out = out[out.t >= 0]
    out.insert(0, "variant", s["variant"])
    out.insert(0, "algo", s["algo"])
    return out


def ss_on_shared(d: Path, s: dict) -> float | None:
    """A fairness run's MPTCP part on the shared path as the 2026-11 reference measured it: its
    goodput times the shared subflow's share of the bytes acked at the last `ss` sample
    (subflows.json; the shared path is path 1), kept beside the link's count to compare the two."""
    try:
        subs = json.loads((d / "subflows.json").read_text())
    except (OSError, ValueError):
        return None
    total = sum(r.get("bytes_acked", 0) for r in subs)
    shared = sum(r.get("bytes_acked", 0) for r in subs if r.get("path_index") == 1)
    mptcp = s.get("mptcp_goodput_transfer_mbps")
    return round(mptcp * shared / total, 3) if total and mptcp is not None else None


def compact(out: Path) -> dict[str, pd.DataFrame]:
    """Write the compact tables into the sweep directory and return them (the runs' raw records
    converted first: convert_raw)."""
    out = Path(out)
    convert_raw(out)
    tp, subs, fair, series, dwnd, bins = [], [], [], [], [], []
    replays, counters = {}, {}
    verify_manifest = None
    for d, s in results.completed(out):
        commit = run_commit(d)
        if s.get("bpf_counters") and s.get("cc"):  # what the run's program counted (experiment.bpf_counted)
            counters.setdefault(s["cc"], []).append(s["bpf_counters"])
        if d.name == "verify":
            verify_manifest = json.loads((d / "manifest.json").read_text())
            verify_summary = s
        elif "mptcp_share_on_shared" in s:
            fair.append({**{k: s.get(k) for k in FAIRNESS_COLUMNS}, "commit": commit,
                         "ss_mptcp_on_shared_mbps": ss_on_shared(d, s)})
        elif "variant" in s:
            # what all paths together could carry in this run (`mptcp_ceiling_bps`): `mptcplab check` holds
            # goodput_transfer_mbps to it
            ceiling = check.mptcp_ceiling_bps(json.loads((d / "manifest.json").read_text()), s) / 1e6
            tp.append({"run": d.name, "algo": s["algo"], "variant": s["variant"], "rep": s["rep"],
                       "goodput_transfer_mbps": s["goodput_transfer_mbps"], "ceiling_mbps": round(ceiling, 3),
                       "subflows": s["subflows"], "cc": s["cc"],
                       "subflow_ccs": ",".join(s["subflow_ccs"]), "commit": commit})
            for path, pk in sorted(s["packets_per_subflow"].items()):
                subs.append({"algo": s["algo"], "variant": s["variant"], "rep": s["rep"], "path": path,
                             "packets": pk, "bytes_retrans": s["retrans_per_subflow"].get(path, 0)})
            if (d / "intervals.csv").exists():  # the per-interval data behind the stalls the guide counts
                bins.append(goodput_bins(pd.read_csv(d / "intervals.csv"), s.get("t0")).assign(run=d.name))
            if s.get("detail"):
                series.append(_timeseries(d, s))
            if (d / "cc-trace.csv.gz").exists():  # the BPF callbacks of this run, replayed through ccref
                rp = cctrace.replay(cctrace.load(d / "cc-trace.csv.gz"))
                replays[d.name] = {"events": len(rp.rows), "mismatches": len(rp.mismatches),
                                   "near_boundary": rp.near_boundary, **rp.coverage(),
                                   "counted": s.get("bpf_counters")}  # the program's counters, same run
                if s["algo"] == "cs218":
                    dwnd.append(cctrace.delay_window_table(rp.rows).assign(variant=s["variant"], rep=s["rep"]))
    tables = {
        "throughput": pd.DataFrame(tp, columns=["run", "algo", "variant", "rep", "goodput_transfer_mbps",
                                                "ceiling_mbps", "subflows",
                                                "cc", "subflow_ccs", "commit"]),
        "subflows": pd.DataFrame(subs, columns=["algo", "variant", "rep", "path", "packets", "bytes_retrans"]),
        "fairness": pd.DataFrame(fair, columns=FAIRNESS_COLUMNS),
        "timeseries": pd.concat([x for x in series if not x.empty], ignore_index=True) if any(
            not x.empty for x in series) else pd.DataFrame(columns=["algo", "variant", "path", "t", "cwnd",
                                                                    "srtt_ms", "rto_ms"]),
    }
    tables["delay-window"] = (pd.concat(dwnd, ignore_index=True) if dwnd else pd.DataFrame(
        columns=["path", "ca_acks", "with_dwnd", "share", "dwnd_mean", "dwnd_median", "best_rtt_ms", "last_rtt_ms",
                 "variant", "rep"]))
    tables["goodput-bins"] = (pd.concat(bins, ignore_index=True)[BINS] if bins else pd.DataFrame(columns=BINS))
    for name, df in tables.items():
        # %.6g: every figure as its run recorded it (mbps to 1 kbit/s). At %.4g a 10-99 Mbit/s goodput
        # lost its third decimal, which with 2 pairs (quick) moved a paired interval from ± 0.12 to ± 0.06
        df.to_csv(out / f"{name}.csv", index=False, float_format="%.6g")
    pd.DataFrame(results.run_manifests(out), columns=results.RUN_MANIFEST_COLUMNS).to_csv(
        out / "runs-manifest.csv", index=False)  # per-run provenance: commit, kernel, place, sysctls as applied
    manifest = {"lab": "lab2", "what": "compact tables of a `mptcplab run lab2` sweep", "runs": len(tp),
                "fairness_runs": len(fair)}
    if verify_manifest:
        manifest.update({k: verify_manifest.get(k) for k in ("started", "command", "parameters", "platform",
                                                              "tools", "git", "network")})
        manifest["setup_checks"] = verify_summary.get("checks")
        manifest["available_congestion_control"] = verify_summary.get("available_congestion_control")
        first = next((d for d, s in results.completed(out) if s.get("variant")), None)
        if first is not None:
            manifest["experiment_parameters"] = json.loads((first / "manifest.json").read_text()).get("parameters")
    else:  # a sweep without the main network (a controlled run, e.g. variants = ["shared"]): its runs'
        runs = [json.loads((d / "manifest.json").read_text()) for d, s in
                sorted(results.completed(out), key=lambda ds: "variant" not in ds[1])  # transfers' network first
                if (d / "manifest.json").exists()]
        if runs:  # provenance from its first run, the parameters the runs shared from all of them
            manifest.update({k: runs[0].get(k) for k in ("started", "command", "platform", "tools", "git",
                                                         "network")})
            manifest["parameters"] = {k: v for m in runs for k, v in (m.get("parameters") or {}).items()
                                      if k in SWEEP_PARAMETERS}
    manifest["invocations"] = invocations(out)
    if replays:  # every recorded run's BPF windows against the Python reference (mptcplab.cctrace)
        manifest["bpf_vs_reference"] = replays
    if counters:  # summed over the runs that recorded them, per program
        manifest["bpf_counters"] = sum_counters(counters)
        if bpf_counters(manifest) is None:  # kept as evidence, under a name nothing shows
            manifest["bpf_counters_not_counting"] = manifest.pop("bpf_counters")
    (out / "lab2-manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    tables["manifest"] = manifest
    return tables


def invocations(out: Path) -> list[dict]:
    """The commands that made a sweep's runs, in the order they first ran, each with its run
    directories (its setup check included) and commits: a sweep resumed by several commands (e.g. the first repetitions, then the rest) shows
    each, where `command` and `parameters` above are the first's (its setup check)."""
    seen: dict[str, dict] = {}
    for d in results.Sweep(out).runs():
        m = json.loads((d / "manifest.json").read_text())
        cmd = " ".join(m.get("command") or []) or "?"
        e = seen.setdefault(cmd, {"command": cmd, "first_started": m.get("started"), "runs": 0, "commits": []})
        e["runs"] += 1
        e["first_started"] = min(filter(None, [e["first_started"], m.get("started")]), default=None)
        if (c := run_commit(d)) and c not in e["commits"]:
            e["commits"].append(c)
    return sorted(seen.values(), key=lambda e: e["first_started"] or "")


def load(path: Path) -> dict:
    """The compact tables of a sweep (compacting it first if needed) or of a reference copy."""
    path = results.compacted(path, "throughput.csv", compact, "lab2")
    tables = {name: pd.read_csv(path / f"{name}.csv") for name in ("throughput", "subflows", "fairness",
                                                                  "timeseries")}
    dw = path / "delay-window.csv"
    tables["delay-window"] = pd.read_csv(dw) if dw.exists() else pd.DataFrame()
    gb = path / "goodput-bins.csv"
    bins = pd.read_csv(gb) if gb.exists() else pd.DataFrame(columns=BINS)
    # written before the goodput vocabulary (the reference's): its `mbps` by today's name
    tables["goodput-bins"] = bins.rename(columns=lambda c: current_column(c, bins.columns) or c)
    tables["manifest"] = json.loads((path / "lab2-manifest.json").read_text())
    return tables
