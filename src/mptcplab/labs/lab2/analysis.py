"""Lab 2 analysis: compact tables from a sweep, throughput with 95% confidence intervals, the
fairness result, Plotly figures and the "paper vs this run" table.

The design decides the statistics. Cross traffic is seeded by the run number, so run r meets the
same pattern under every algorithm: throughput is compared as *paired* differences to uncoupled
(and CS218 to LIA) per run, with a t interval of the mean difference and the number of runs a
difference of that size would need. The fairness runs have nothing seeded in common, so each
algorithm's TCP share is compared with uncoupled's by Welch's two-sample interval. RFC 6356's
three goals are checked on the fairness runs with the same intervals (`rfc6356_checks`).

`compact(sweep_dir)` writes the tables the notebook reads (throughput.csv, subflows.csv,
fairness.csv, timeseries.csv, lab2-manifest.json) next to the runs; `load(dir)` reads them from
a sweep or from the shipped reference copy (solutions/results/lab2/).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from . import cctrace
from ...core.errors import ExperimentFailed
from ...core.files import replace_file
from ...judge import check, physics, stats
from ...judge import claims as judge
from ...measure import observe
from ...net.links import LinkSpec
from ...run import results
from ...run.results import run_commit
from .cc.loader import events_frame, load_raw
from .measure import link_packets, shared_link_rates

# The report's tables (Mbit/s, mean of 10 runs; ns-3, 5 Mbit/s links, UDP cross traffic).
# "Mobility": the Wi-Fi MANET with random mobility (first table); "static": no mobility (second).
PAPER = pd.DataFrame([
    {"algo": "cs218", "paper_mobility": 25.04, "paper_static": 25.05},
    {"algo": "coupled", "paper_mobility": 24.06, "paper_static": 22.3104},
    {"algo": "uncoupled", "paper_mobility": 24.89, "paper_static": 22.3328},
    {"algo": "lia", "paper_mobility": 24.52, "paper_static": 24.74},
    {"algo": "ewtcp", "paper_mobility": math.nan, "paper_static": math.nan},
])
TITLES = {"uncoupled": "Uncoupled", "ewtcp": "EWTCP", "coupled": "Fully Coupled",
          "lia": "RTT Compensator / LIA", "cs218": "CS218 ALGO"}
ORDER = ["uncoupled", "ewtcp", "coupled", "lia", "cs218"]
COMPACT = ("throughput.csv", "subflows.csv", "fairness.csv", "timeseries.csv", "delay-window.csv",
           "goodput-bins.csv", "runs-manifest.csv", "lab2-manifest.json", "paper-vs-this-run.md")
# what a run's parameters share with its sweep's (kept for a sweep without a setup check)
SWEEP_PARAMETERS = ("duration_s", "cross", "fairness", "shared_bottleneck")
GOODPUT_BIN_S = 0.5  # the receiver's goodput per run in bins of this width (goodput-bins.csv)
STALL_MBPS, STALL_S = 2.0, 2.0  # a stall: under 2 Mbit/s for 2 s or more
BIN_S = 0.1
# The shared path's split: mptcp_on_shared_mbps and tcp_on_shared_mbps from what the emulator's link
# delivered over the span both flows used it (measure.shared_link_rates; runs before it: ss byte shares,
# tcp_on_shared_mbps over the same window or empty), mptcp_on_other_mbps the other path's subflow
# there, shared_wire_mbps both flows' packets on the shared link, headers included
FAIRNESS_COLUMNS = ["algo", "rep", "mptcp_mbps", "tcp_mbps", "mptcp_share_on_shared", "mptcp_on_shared_mbps",
                    "tcp_on_shared_mbps", "mptcp_on_other_mbps", "shared_wire_mbps", "ss_mptcp_on_shared_mbps",
                    "commit"]

# The statistics are mptcplab.judge.stats' (one computation for the log, the report and the notebook);
# t975 and mean_ci are named here too because the notebook calls them as la.t975 and la.mean_ci.
t975, mean_ci = stats.t975, stats.mean_ci


# ---------------------------------------------------------------- from a sweep to compact tables

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
    return round(s["mptcp_mbps"] * shared / total, 3) if total and s.get("mptcp_mbps") is not None else None


def goodput_bins(intervals: pd.DataFrame, t0: float | None = None) -> pd.DataFrame:
    """The receiver's goodput of a run (all flows) in GOODPUT_BIN_S bins, t in s from its first bin."""
    if intervals.empty:
        return pd.DataFrame(columns=["t", "mbps"])
    import numpy as np

    t = intervals.time - (t0 if t0 else intervals.time.min())
    k = (t // GOODPUT_BIN_S).astype(int)
    per_bin = intervals.assign(k=k).groupby("k")["bytes"].sum()
    # intervals.csv leaves out the bins in which nothing arrived: a stall is those missing bins
    per_bin = per_bin.reindex(np.arange(max(0, int(k.min())), int(k.max()) + 1), fill_value=0.0)
    return pd.DataFrame({"t": per_bin.index * GOODPUT_BIN_S, "mbps": per_bin.to_numpy() * 8 / GOODPUT_BIN_S / 1e6})


def stalls(bins: pd.DataFrame) -> pd.DataFrame:
    """Per run, its longest stretch of consecutive bins under STALL_MBPS (start, seconds); the
    runs with one of STALL_S or more are the stalls the guide counts."""
    rows = []
    for run, g in bins.groupby("run"):
        g = g.sort_values("t")
        best, start, cur_start, cur = 0.0, None, None, 0.0
        for t, mbps in zip(g.t, g.mbps):
            if mbps < STALL_MBPS:
                cur_start = t if cur == 0 else cur_start
                cur += GOODPUT_BIN_S
                if cur > best:
                    best, start = cur, cur_start
            else:
                cur = 0.0
        rows.append({"run": run, "longest_low_s": best, "from_s": start, "stall": best >= STALL_S})
    return pd.DataFrame(rows, columns=["run", "longest_low_s", "from_s", "stall"])


CC_EVENTS_RAW = "cc-events.npy"  # a recorded run's BPF callbacks as the map held them (cc.save_raw)


def write_json(path: Path, obj) -> None:
    """Replaced whole (files.replace_file): convert_raw runs on the host while a guest may still
    read the sweep."""
    replace_file(path, json.dumps(obj, indent=2, default=str) + "\n")


def convert_raw(out: Path) -> list[str]:
    """The runs' raw records made into their tables, once: the kernel's trace into tcp_probe.csv
    (observe.parse_saved_trace) and the recorded BPF callbacks into cc-trace.csv.gz. The runs keep
    them raw because parsing them in an emulated CPU took 20-50 s per run (the VM place, 2026-11),
    in the host's Python a second or two; each manifest's `artefacts` then lists the tables.
    Returns the runs converted."""
    done = []
    for d, s in results.completed(out):
        converted = observe.parse_saved_trace(d) is not None
        raw = d / CC_EVENTS_RAW
        if raw.exists():
            cctrace.save(cctrace.compact(events_frame(load_raw(raw)), s["algo"]), d / "cc-trace.csv.gz")
            raw.unlink()
            converted = True
        if (d / (s.get("link_capture") or {}).get("file", "-")).exists():
            shared_split(d, s)
            converted = True
        if converted:
            manifest = json.loads((d / "manifest.json").read_text())
            manifest["artefacts"] = sorted(p.name for p in d.iterdir())
            write_json(d / "manifest.json", manifest)
            done.append(d.name)
    return done


def shared_split(d: Path, s: dict) -> None:
    """A fairness run's split of the shared link, from the emulator's capture of what the links
    delivered (its `link_capture`): every data segment into links.csv.gz, the split
    (measure.shared_link_rates) into the run's summary, the capture removed."""
    cap = s["link_capture"]
    pkts = link_packets(d / cap["file"])
    split = shared_link_rates(pkts, cap["shared_prefix"], cap["ports"])
    if not split:
        raise ExperimentFailed(f"fairness run {d.name}: the emulator saw no span in which both flows crossed the "
                               f"shared link ({len(pkts)} segments captured; kept: {d / cap['file']})")
    pkts.to_csv(d / "links.csv.gz", index=False)  # every data segment the links delivered, compactly
    s.update({**split, "shared_split_from": "the emulator's capture of its egress (measure.shared_link_rates)"})
    write_json(d / "summary.json", s)
    (d / cap["file"]).unlink()


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
            # what all paths together could carry in this run (`mptcp_ceiling_bps`): `mptcplab check` holds mbps to it
            ceiling = check.mptcp_ceiling_bps(json.loads((d / "manifest.json").read_text()), s) / 1e6
            tp.append({"run": d.name, "algo": s["algo"], "variant": s["variant"], "rep": s["rep"],
                       "mbps": s["mbps"], "ceiling_mbps": round(ceiling, 3), "subflows": s["subflows"], "cc": s["cc"],
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
        "throughput": pd.DataFrame(tp, columns=["run", "algo", "variant", "rep", "mbps", "ceiling_mbps", "subflows",
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
    tables["goodput-bins"] = (pd.concat(bins, ignore_index=True)[["run", "t", "mbps"]] if bins
                              else pd.DataFrame(columns=["run", "t", "mbps"]))
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


def sum_counters(per_run: dict[str, list[dict]]) -> dict[str, dict]:
    """Per program, its runs' counters summed, with how many runs they are (`runs`)."""
    return {name: {**{k: sum(r.get(k, 0) for r in rows) for k in sorted({k for r in rows for k in r})},
                   "runs": len(rows)} for name, rows in per_run.items()}


def bpf_counters(man: dict) -> pd.DataFrame | None:
    """The BPF programs' own counters summed over the runs that used them (ACKs in congestion
    avoidance, of them with sibling subflows and with the delay window, losses, sockets; `runs`),
    one row per program, or None when there are none or they did not count what ran (all zero
    while the runs used the programs). Each run reads its program's counters before and after
    itself (experiment.bpf_counted). The 2026-11 reference, made before that, read them once per
    `run` command and shows zero for all five: see experiment.bpf_counted."""
    counters = man.get("bpf_counters") or {}
    if not counters:
        return None
    ran = sum(v.get("events", 0) for v in (man.get("bpf_vs_reference") or {}).values())
    ran = ran or (man.get("runs") or 0) + (man.get("fairness_runs") or 0)  # every run used the programs
    if ran and not any(v for c in counters.values() for k, v in c.items() if k != "runs"):
        return None
    return pd.DataFrame(counters).T


def counted_vs_recorded(checked: dict) -> str:
    """The programs' own counters beside the callbacks recorded in the same runs (runs since each
    run reads its counters, experiment.bpf_counted): two independent counts of what ran."""
    both = [v for v in checked.values() if v.get("counted")]
    if not both:
        return ""
    total = {k: sum(v["counted"].get(k, 0) for v in both) for k in ("acks", "losses", "sockets")}
    seen = {k: sum(v.get(k, 0) for v in both) for k in ("acks_congestion_avoidance", "losses", "subflows")}
    return (f" In those {len(both)} runs the programs' own counters read {total['acks']} congestion-avoidance "
            f"ACKs, {total['losses']} losses and {total['sockets']} sockets; the recorded callbacks "
            f"{seen['acks_congestion_avoidance']}, {seen['losses']} and {seen['subflows']}.")


def load(path: Path) -> dict:
    """The compact tables of a sweep (compacting it first if needed) or of a reference copy."""
    path = results.compacted(path, "throughput.csv", compact, "lab2")
    tables = {name: pd.read_csv(path / f"{name}.csv") for name in ("throughput", "subflows", "fairness",
                                                                  "timeseries")}
    dw = path / "delay-window.csv"
    tables["delay-window"] = pd.read_csv(dw) if dw.exists() else pd.DataFrame()
    gb = path / "goodput-bins.csv"
    tables["goodput-bins"] = pd.read_csv(gb) if gb.exists() else pd.DataFrame(columns=["run", "t", "mbps"])
    tables["manifest"] = json.loads((path / "lab2-manifest.json").read_text())
    return tables


def export_reference(sweep: Path, dest: Path, tables: tuple[str, ...] | None = None) -> list[Path]:
    """The compact tables and the paper-vs-this-run report, copied to e.g. solutions/results/lab2/.

    `tables=("fairness",)`: replace only those tables of an existing reference with a sweep that
    re-measured them (e.g. the fairness runs after a measurement fix). The reference's manifest
    then names that sweep (`replaced_by`: table -> its started, commit, kernel, place and runs),
    every row keeps the commit that made it, and the report is made again from the result."""
    compact(sweep)
    dest = Path(dest)
    if not tables:  # the report is made in dest: it reads the controlled runs kept there (controlled/)
        copied = results.copy_compact(sweep, dest, [n for n in COMPACT if not n.endswith(".md")])
        (dest / "paper-vs-this-run.md").write_text(report(dest))
        return [*copied, dest / "paper-vs-this-run.md"]
    man = json.loads((dest / "lab2-manifest.json").read_text())
    new = json.loads((Path(sweep) / "lab2-manifest.json").read_text())
    copied = results.copy_compact(sweep, dest, [f"{t}.csv" for t in tables])
    for t in tables:
        rows = pd.read_csv(dest / f"{t}.csv")
        man.setdefault("replaced_by", {})[t] = {
            "sweep": str(sweep), "started": new.get("started"), "git": new.get("git"), "runs": len(rows),
            "kernel": (new.get("platform") or {}).get("kernel_release"),
            "where": (new.get("platform") or {}).get("where"), "parameters": (new.get("parameters") or {}).get(t)}
    (dest / "lab2-manifest.json").write_text(json.dumps(man, indent=2, default=str) + "\n")
    (dest / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, dest / "lab2-manifest.json", dest / "paper-vs-this-run.md"]


CONTROLLED_DIR = "controlled"  # beside a reference: one folder per controlled run, its compact tables


def export_controlled(sweep: Path, dest: Path, name: str) -> list[Path]:
    """Keep a controlled run (a sweep that switches one mechanism, e.g. the shared-bottleneck
    variant) beside the reference in `dest`: its compact tables in dest/controlled/<name>/, then
    the reference's report again, which reads them (`controlled_runs`)."""
    compact(sweep)
    copied = results.copy_compact(sweep, Path(dest) / CONTROLLED_DIR / name,
                                  [f for f in COMPACT if f != "paper-vs-this-run.md"])
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return [*copied, Path(dest) / "paper-vs-this-run.md"]


def controlled_runs(out: Path) -> dict[str, dict]:
    """The controlled runs kept beside a reference (export_controlled): name -> its tables."""
    found = {}
    for d in sorted((Path(out) / CONTROLLED_DIR).glob("*/lab2-manifest.json")):
        found[d.parent.name] = {"throughput": pd.read_csv(d.parent / "throughput.csv"),
                                "fairness": pd.read_csv(d.parent / "fairness.csv"),
                                "manifest": json.loads(d.read_text())}
    return found


# ---------------------------------------------------------------- tables

def throughput_table(tp: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm and variant: mean throughput, 95% CI half-width, runs; plus ratio to uncoupled."""
    rows = []
    for (algo, variant), g in tp.groupby(["algo", "variant"]):
        m, ci, n = mean_ci(g.mbps)
        rows.append({"algo": algo, "variant": variant, "mean_mbps": m, "ci95_mbps": ci, "runs": n})
    t = pd.DataFrame(rows, columns=["algo", "variant", "mean_mbps", "ci95_mbps", "runs"])
    if t.empty:  # a fairness-only run (variants = []): the same columns, no rows
        return t.assign(vs_uncoupled=pd.Series(dtype=float))
    base = t[t.algo == "uncoupled"].set_index("variant").mean_mbps
    t["vs_uncoupled"] = t.apply(lambda r: r.mean_mbps / base.get(r.variant, math.nan), axis=1)
    t["order"] = t.algo.map({a: i for i, a in enumerate(ORDER)})
    return t.sort_values(["variant", "order"]).drop(columns="order").reset_index(drop=True)


def paired_table(tp: pd.DataFrame, base: str = "uncoupled") -> pd.DataFrame:
    """Per variant and algorithm: throughput minus `base`'s in the same run (same seeded cross
    traffic); plus CS218 − LIA. All comparisons of the table are one family, corrected by Holm
    (`stats.holm`): `lo`/`hi`/`half` are the corrected interval at `level`, `ci95` the uncorrected
    95% half-width, `verdict` "not resolved" when the corrected interval spans zero, and
    `runs_needed` the pairs that would resolve the observed difference at that level."""
    keys, family = [], []
    for variant, g in tp.groupby("variant"):
        by = {a: x.set_index("rep").mbps for a, x in g.groupby("algo")}
        pairs = [(a, base) for a in ORDER if a in by and a != base and base in by]
        if "cs218" in by and "lia" in by:
            pairs.append(("cs218", "lia"))
        for a, b in pairs:
            keys.append({"variant": variant, "algo": a, "vs": b})
            family.append(stats.paired(by[a], by[b]))
    rows = []
    for k, st in zip(keys, stats.holm(family)):
        rows.append({**k, **st, "resolvable": st["half"],
                     "verdict": stats.verdict(st, f"more than {k['vs']}", f"less than {k['vs']}")})
    cols = ["variant", "algo", "vs", "diff", "ci95", "level", "half", "lo", "hi", "p", "p_holm", "sd", "pairs",
            "resolvable", "runs_needed", "verdict"]
    return pd.DataFrame(rows, columns=cols)


def tcp_on_shared(g: pd.DataFrame) -> pd.Series:
    """The TCP flow's goodput on the shared path over the same window as MPTCP's there (runs that
    measured it, `tcp_on_shared_mbps`), else its own (older runs: its own span)."""
    own = g.tcp_on_shared_mbps if "tcp_on_shared_mbps" in g else pd.Series(math.nan, index=g.index)
    return own.fillna(g.tcp_mbps)


def _share(g: pd.DataFrame) -> pd.Series:
    """The TCP flow's share of what crossed the shared path, per run (with MPTCP's, 100%)."""
    return tcp_on_shared(g) / (tcp_on_shared(g) + g.mptcp_on_shared_mbps)


def fairness_table(fair: pd.DataFrame) -> pd.DataFrame:
    """Per algorithm: the MPTCP connection, its part on the shared path, the TCP flow there, the
    TCP flow's share of the shared path (mean, 95% CI), and that share against uncoupled's
    (Welch interval of the difference; the verdict says whether the algorithm leaves the TCP
    flow more than uncoupled does)."""
    rows, family = [], []
    base = _share(fair[fair.algo == "uncoupled"]) if (fair.algo == "uncoupled").any() else pd.Series(dtype=float)
    for algo, g in fair.groupby("algo"):
        row = {"algo": algo, "runs": len(g)}
        for col in ("mptcp_mbps", "mptcp_on_shared_mbps", "tcp_mbps"):
            row[col], row[col.replace("mbps", "ci95")], _ = mean_ci(tcp_on_shared(g) if col == "tcp_mbps" else g[col])
        row["tcp_share_of_shared"], row["tcp_share_ci95"], _ = mean_ci(_share(g))
        if algo != "uncoupled" and len(base):
            family.append((len(rows), stats.welch(_share(g), base)))
        row.update({"share_vs_uncoupled": math.nan, "share_vs_uncoupled_ci95": math.nan,
                    "share_vs_uncoupled_level": math.nan, "runs_needed": math.nan,
                    "verdict": "the baseline" if algo == "uncoupled" else "no uncoupled runs"})
        rows.append(row)
    # the comparisons with uncoupled are one family (Holm): the interval shown is the corrected one
    for (i, _), w in zip(family, stats.holm(w for _, w in family)):
        rows[i].update({"share_vs_uncoupled": w["diff"], "share_vs_uncoupled_ci95": w["half"],
                        "share_vs_uncoupled_level": w["level"], "runs_needed": w["runs_needed"],
                        "verdict": stats.verdict(w, "leaves TCP more than uncoupled",
                                                 "leaves TCP less than uncoupled")})
    t = pd.DataFrame(rows)
    if t.empty:
        return t
    t["order"] = t.algo.map({a: i for i, a in enumerate(ORDER)})
    return t.sort_values("order").drop(columns="order").reset_index(drop=True)


RFC6356_GOALS = {
    1: ("Improve throughput: do at least as well as a single-path TCP flow on the best of its paths",
        "MPTCP total − the goodput ceiling of its best path (the most a single-path TCP flow could carry "
        "there) > 0"),
    2: ("Do no harm: take no more from a shared bottleneck than a single TCP flow on it would",
        "MPTCP's traffic on the shared path − the TCP flow's there ≤ 0 (paired per run)"),
    3: ("Balance congestion: move traffic off the most congested path",
        "share of MPTCP's bytes on the shared path − uncoupled's < 0 (Welch)"),
}


def rfc6356_checks(fair: pd.DataFrame, best_path_mbps: float | None = None) -> pd.DataFrame:
    """RFC 6356's three goals as checks on the fairness runs, per algorithm: the difference in
    RFC6356_GOALS, its Holm-corrected interval (all goals and algorithms of the table are one
    family) and "met" (interval entirely on the right side), "violated" (entirely on the wrong
    side) or "not resolved" (across zero), with the runs that would resolve it.

    Goal 1's yardstick is the best a single-path TCP flow could carry on the best of the
    connection's paths: that path's goodput ceiling (`best_path_mbps`, physics.link_ceiling_bps);
    without it, the TCP flow measured beside it on the shared path (a lower bound)."""
    keys, family = [], []
    base = fair[fair.algo == "uncoupled"]
    for algo, g in fair.groupby("algo"):
        g = g.set_index("rep")
        best = g.tcp_mbps if best_path_mbps is None else pd.Series(best_path_mbps, index=g.index)
        checks = {1: stats.paired(g.mptcp_mbps, best), 2: stats.paired(g.mptcp_on_shared_mbps, tcp_on_shared(g))}
        if algo != "uncoupled" and len(base):
            checks[3] = stats.welch(g.mptcp_share_on_shared, base.mptcp_share_on_shared)
        for goal, st in checks.items():
            keys.append({"algo": algo, "goal": goal, "what": RFC6356_GOALS[goal][1]})
            family.append(st)
    rows = []
    for k, st in zip(keys, stats.holm(family)):
        good_if_positive = k["goal"] == 1
        v = stats.verdict(st, "met" if good_if_positive else "violated", "violated" if good_if_positive else "met")
        rows.append({**k, "diff": st["diff"], "ci95": st["ci95"], "half": st["half"], "level": st["level"],
                     "p_holm": st["p_holm"], "runs_needed": st["runs_needed"], "verdict": v})
    t = pd.DataFrame(rows, columns=["algo", "goal", "what", "diff", "ci95", "half", "level", "p_holm", "runs_needed",
                                    "verdict"])
    t["order"] = t.algo.map({a: i for i, a in enumerate(ORDER)})
    return t.sort_values(["goal", "order"]).drop(columns="order").reset_index(drop=True)


def paper_vs_run(tp: pd.DataFrame) -> pd.DataFrame:
    t = throughput_table(tp)
    out = PAPER.copy()
    for variant in ("mobility", "static"):
        part = t[t.variant == variant].set_index("algo")
        out[f"run_{variant}"] = out.algo.map(part.mean_mbps)
        out[f"run_{variant}_ci95"] = out.algo.map(part.ci95_mbps)
        out[f"run_{variant}_vs_uncoupled"] = out.algo.map(part.vs_uncoupled)
        base = out.loc[out.algo == "uncoupled", f"paper_{variant}"].iloc[0]
        out[f"paper_{variant}_vs_uncoupled"] = out[f"paper_{variant}"] / base
    out["order"] = out.algo.map({a: i for i, a in enumerate(ORDER)})
    return out.sort_values("order").drop(columns="order").reset_index(drop=True)


def _fmt(m, ci=None, digits=2) -> str:
    if m is None or m != m:
        return "—"
    if ci is None:
        return f"{m:.{digits}f}"
    return f"{m:.{digits}f} ± {ci:.{digits}f}" if ci == ci else f"{m:.{digits}f} (1 run)"


def best_path_ceiling_mbps(man: dict) -> float | None:
    """Goal 1's yardstick: the goodput ceiling of the best path the fairness runs' MPTCP connection
    had (physics.link_ceiling_bps of the shared and the private link's rate), from the parameters."""
    fair = (man.get("parameters") or {}).get("fairness") or {}
    rates = []
    for key in ("shared", "other"):
        try:
            rates.append(LinkSpec.parse(fair[key]).rate_bps)
        except Exception:  # noqa: BLE001 - a run without that link: no yardstick from it
            continue
    rates = [r for r in rates if r]
    return physics.link_ceiling_bps(max(rates)) / 1e6 if rates else None


def _corrected(diff: float, half: float, level: float) -> str:
    """"d ± h (99.5%)": a difference with its corrected interval and that interval's level."""
    if half != half:
        return _fmt(diff, half)
    lv = (f"{level * 100:.2f}".rstrip("0").rstrip(".") + "%") if level == level else "?"
    return f"{_fmt(diff, half)} ({lv})"


# A divergence's cause where no controlled run kept beside the reference bears on it (`evidence`
# says what one does).
RUNNABLE = ("unexplained, tried: nothing controlled yet. Runnable: the cross-traffic sweep and the "
            "shared-bottleneck variant (experiment.toml)")
# Why a mechanism that holds the report's ratio would explain it, per kind of controlled run.
WHY = {"shared": "on a path of its own each uncoupled subflow can take a link's worth, through one shared link all "
                 "of them take one link's worth (the report's subflows shared one node's wireless medium)",
       "cross": "the report's 15 UDP clients congested its links at another level than this lab's two on/off "
                "sources"}


def controlled_ratio(tp: pd.DataFrame, algo: str, variant: str) -> dict | None:
    """`algo` ÷ uncoupled in one variant of a controlled run's throughput table: the paired
    difference's Holm-corrected interval (paired_table over that run's comparisons: one family per
    controlled run) as a ratio to uncoupled's mean there, with the spread and level behind it."""
    part = tp[tp.variant == variant]
    pt = paired_table(tp)
    row = pt[(pt.variant == variant) & (pt.algo == algo) & (pt.vs == "uncoupled")]
    base = part[part.algo == "uncoupled"].mbps.mean()
    if row.empty or not base == base or not row.iloc[0].half == row.iloc[0].half:
        return None
    r = row.iloc[0]
    return {"ratio": 1 + r["diff"] / base, "lo": 1 + r.lo / base, "hi": 1 + r.hi / base, "pairs": int(r.pairs),
            "level": r.level, "sd": r.sd, "uncoupled_mbps": base, "algo_mbps": part[part.algo == algo].mbps.mean(),
            "verdict": r.verdict, "runs_needed": r.runs_needed}


def _rate_bps(rate: str) -> float:
    return LinkSpec.parse(f"rate={rate}").rate_bps


def cross_change(ref_cross: dict | None, cross: dict | None) -> str | None:
    """A controlled run's cross traffic in words against the reference's ("the cross traffic at
    1.5 times its rate (p2 4.5mbit, p3 6mbit)"), or None when it is the same (no controlled change)."""
    ref_cross, cross = ref_cross or {}, cross or {}
    if not ref_cross or set(cross) != set(ref_cross) or all(
            _rate_bps(cross[p]["rate"]) == _rate_bps(ref_cross[p]["rate"]) for p in cross):
        return None
    factors = {round(_rate_bps(cross[p]["rate"]) / _rate_bps(ref_cross[p]["rate"]), 3) for p in cross}
    rates = ", ".join(f"{p} {cross[p]['rate']}" for p in sorted(cross))
    level = f"{factors.pop():g} times its rate" if len(factors) == 1 else "other rates"
    return f"the cross traffic at {level} ({rates}; this reference: " + \
        ", ".join(f"{p} {ref_cross[p]['rate']}" for p in sorted(ref_cross)) + ")"


def mechanisms(c: dict, ref_params: dict) -> dict[str, tuple[str, str]]:
    """What a controlled run changed, per variant it ran: variant -> (kind, words). The shared
    variant is the shared bottleneck; a static or mobility variant counts only when its cross
    traffic differs from the reference's (the cross-traffic sweep)."""
    found = {}
    variants = set(c["throughput"].variant) if not c["throughput"].empty else set()
    if "shared" in variants:
        link = ((c["manifest"].get("network") or {}).get("bottleneck") or {}).get("link")
        mbps = LinkSpec.parse(link).rate_bps / 1e6 if link else None
        found["shared"] = ("shared", "all subflows and the cross traffic through "
                                     + (f"one {mbps:g} Mbit/s link" if mbps else "one link"))
    change = cross_change(ref_params.get("cross"), (c["manifest"].get("parameters") or {}).get("cross"))
    if change:
        found.update({v: ("cross", change) for v in variants - {"shared"}})
    return found


def evidence(div: dict, ratio: dict, name: str, variant: str, words: str, kind: str) -> dict:
    """One controlled run's bearing on the divergence `div` (algo, variant, paper, run_lo, run_hi:
    this reference's corrected ratio to uncoupled): `outcome` "cause" when its corrected interval
    holds the report's ratio and lies clear of the reference's on the report's side, "excluded"
    when it excludes the report's ratio, "unresolved" in between (with the pairs that would
    resolve it: to clear the reference's interval if its estimate lies beyond it, else to exclude
    the report's ratio); `text` says so with the run's own numbers."""
    lv = f"{ratio['level'] * 100:.2f}".rstrip("0").rstrip(".")
    p, a, b = div["paper"], div["run_lo"], div["run_hi"]
    above = p > b  # the report's ratio lies above this reference's interval (else below)
    text = (f"{words} (controlled run `{CONTROLLED_DIR}/{name}`, {variant} variant, {ratio['pairs']} pairs): "
            f"{TITLES.get(div['algo'], div['algo'])} {ratio['algo_mbps']:.2f} against uncoupled "
            f"{ratio['uncoupled_mbps']:.2f} Mbit/s, {ratio['lo']:.2f}–{ratio['hi']:.2f} of uncoupled ({lv}%)")
    if not ratio["lo"] <= p <= ratio["hi"]:
        return {"outcome": "excluded", "text": f"{text}, which excludes the report's {p:.3f}"}
    clear = ratio["lo"] > b if above else ratio["hi"] < a
    if clear:
        return {"outcome": "cause", "text": f"{text}, which holds the report's {p:.3f} and lies "
                                            f"{'above' if above else 'below'} this reference's {a:.2f}–{b:.2f}: "
                                            f"{WHY[kind]}"}
    bound = b if above else a
    beyond = ratio["ratio"] > bound if above else ratio["ratio"] < bound
    gap = (ratio["ratio"] - bound) if beyond else (p - ratio["ratio"])
    need = stats.runs_needed(gap * ratio["uncoupled_mbps"], ratio["sd"], ratio["level"])
    return {"outcome": "unresolved",
            "text": f"{text}, which holds the report's {p:.3f} but overlaps this reference's {a:.2f}–{b:.2f}: "
                    f"not resolved; {stats.fmt_runs(need)} pairs would "
                    f"{'clear the reference' if beyond else 'exclude the report'} at this spread"}


def divergence_status(found: list[dict]) -> str:
    """A divergence's cause in the report: "cause measured: ..." when a controlled run measured it
    (the others tried named after it), else "unexplained, tried: ..." with each controlled run's
    result, or what is runnable when none bears on it."""
    if not found:
        return RUNNABLE
    causes = [e["text"] for e in found if e["outcome"] == "cause"]
    others = [e["text"] for e in found if e["outcome"] != "cause"]
    if causes:
        return "cause measured: " + "; ".join(causes) + (". Also tried: " + "; ".join(others) if others else "")
    return "unexplained, tried: " + "; ".join(others)


def divergences(tp: pd.DataFrame, controlled: dict[str, dict] | None = None,
                ref_params: dict | None = None) -> pd.DataFrame:
    """Each algorithm and variant whose ratio to uncoupled in the report lies outside this run's
    Holm-corrected interval of that ratio (the paired difference over uncoupled's mean, + 1), with
    what the controlled runs (`controlled`: controlled_runs; `ref_params`: the reference's
    parameters, to tell what each changed) measured of its cause. The shared bottleneck bears on
    the static rows (it has no mobility events: against a mobility row it would change two causes
    at once), a cross-traffic level on the rows of the variant it ran."""
    pv = paper_vs_run(tp).set_index("algo")
    pt = paired_table(tp)
    rows = []
    for r in pt[pt.vs == "uncoupled"].itertuples():
        col = f"paper_{r.variant}_vs_uncoupled"  # the report has no shared-bottleneck variant
        paper = pv.loc[r.algo, col] if r.algo in pv.index and col in pv.columns else math.nan
        base = pv.loc["uncoupled", f"run_{r.variant}"] if "uncoupled" in pv.index else math.nan
        if not (paper == paper and base == base and r.half == r.half):
            continue
        lo, hi = 1 + r.lo / base, 1 + r.hi / base
        if lo <= paper <= hi:
            continue
        row = {"algo": r.algo, "variant": r.variant, "paper": paper, "run_lo": lo, "run_hi": hi}
        found = []
        for name, c in (controlled or {}).items():
            for variant, (kind, words) in mechanisms(c, ref_params or {}).items():
                if (kind == "cross" and variant != r.variant) or (kind == "shared" and r.variant == "mobility"):
                    continue
                ratio = controlled_ratio(c["throughput"], r.algo, variant)
                if ratio is not None:
                    found.append(evidence(row, ratio, name, variant, words, kind))
        rows.append({**row, "status": divergence_status(found)})
    return pd.DataFrame(rows, columns=["algo", "variant", "paper", "run_lo", "run_hi", "status"])


def controlled_section(controlled: dict[str, dict], ref_params: dict | None = None) -> list[str]:
    """The report's lines on each controlled run kept beside the reference: per variant it ran,
    what it changed and its throughput with each algorithm's corrected ratio to uncoupled, and
    fairness runs measured on the link."""
    lines = []
    for name, c in controlled.items():
        tp, fair, man = c["throughput"], c["fairness"], c["manifest"]
        plat = man.get("platform") or {}
        lines += [f"## Controlled run `{CONTROLLED_DIR}/{name}`", "",
                  f"Kernel {plat.get('kernel_release', '?')} ({plat.get('where', '?')}), "
                  f"commit {((man.get('git') or {}).get('commit') or '?')[:12]}; per-run provenance in its "
                  "`runs-manifest.csv`. Its paired comparisons with uncoupled are one family (Holm), apart from the "
                  "reference's.", ""]
        changed = mechanisms(c, ref_params or {})
        for variant in sorted(set(tp.variant)) if not tp.empty else []:
            kind, words = changed.get(variant, (None, "the reference's setup"))
            link = ((man.get("network") or {}).get("bottleneck") or {}).get("link", "?")
            what = (f"**Shared bottleneck** (`variants = [\"shared\"]`): every subflow and the cross traffic through "
                    f"one link ({link}), each path keeping its delay" if kind == "shared"
                    else f"**{words[0].upper() + words[1:]}**, {variant} variant")
            lines += [f"{what}. Throughput, mean ± 95% CI:", "",
                      "| algorithm | Mbit/s | runs | ÷ uncoupled (corrected interval) |", "|---|---|---|---|"]
            part = tp[tp.variant == variant]
            for r in throughput_table(part).itertuples():
                ratio = controlled_ratio(tp, r.algo, variant) if r.algo != "uncoupled" else None
                cell = (f"{ratio['ratio']:.3f} ({ratio['lo']:.3f}–{ratio['hi']:.3f}, {ratio['verdict']})" if ratio
                        else "—")
                lines.append(f"| {TITLES.get(r.algo, r.algo)} | {_fmt(r.mean_mbps, r.ci95_mbps)} | {r.runs} | {cell} |")
            lines += [""]
        if not fair.empty and fair.get("shared_wire_mbps") is not None and fair.shared_wire_mbps.notna().any():
            try:
                rate = LinkSpec.parse(((man.get("parameters") or {}).get("fairness") or {})["shared"]).rate_bps
            except (KeyError, TypeError, ValueError):
                rate = None
            both = fair.tcp_on_shared_mbps + fair.mptcp_on_shared_mbps
            ceiling = f" (its ceiling {physics.link_ceiling_bps(rate) / 1e6:.2f})" if rate else ""
            old = (fair.tcp_mbps + fair.ss_mptcp_on_shared_mbps) if "ss_mptcp_on_shared_mbps" in fair else None
            lines += [f"**Fairness measured on the link**: {len(fair)} runs, the split of the shared path counted in "
                      "the emulator's capture of what the link delivered, over the span both flows used it "
                      f"(`measure.shared_link_rates`). TCP + MPTCP there: {both.min():.2f}–{both.max():.2f} Mbit/s"
                      f"{ceiling}; the link's wire rate {fair.shared_wire_mbps.min():.2f}–"
                      f"{fair.shared_wire_mbps.max():.2f} Mbit/s"
                      + (f" of {rate / 1e6:g}" if rate else "") + "."
                      + (f" The same runs as the reference measured them (TCP over its own span, MPTCP's part by "
                         f"`ss` byte shares): {old.min():.2f}–{old.max():.2f}." if old is not None and old.notna().any()
                         else ""), "",
                      "| algorithm | run | TCP | MPTCP on the shared path | together | MPTCP on the other path "
                      "| together, as the reference measured |",
                      "|---|---|---|---|---|---|---|"]
            for r in fair.sort_values(["algo", "rep"]).itertuples():
                was = old.loc[r.Index] if old is not None else float("nan")
                lines.append(f"| {TITLES.get(r.algo, r.algo)} | {r.rep} | {r.tcp_on_shared_mbps:.3f} | "
                             f"{r.mptcp_on_shared_mbps:.3f} | {r.tcp_on_shared_mbps + r.mptcp_on_shared_mbps:.3f} | "
                             f"{r.mptcp_on_other_mbps:.3f} | {was:.3f} |")
            lines += [""]
    return lines


def report(out: Path) -> str:
    """Markdown: the report's throughput tables beside this run's, the paired comparison, the
    fairness result and RFC 6356's goals."""
    tables = load(out)
    tp, fair, man = tables["throughput"], tables["fairness"], tables["manifest"]
    pv = paper_vs_run(tp)
    net = (man.get("network") or {})
    paths = ", ".join(f"{p['name']} {p['link']}" for p in net.get("paths", []))
    lines = [
        "# Lab 2 — paper vs this run",
        "",
        f"Kernel {(man.get('platform') or {}).get('kernel_release', '?')}, emulation: {net.get('emulation', '?')}; "
        f"paths: {paths}. Throughput = MPTCP goodput at the receiver, mean ± 95% CI (Student's t) over runs.",
        "The report's numbers come from ns-3 (Wi-Fi MANET, up to 8 logical 5 Mbit/s channels); compare the "
        "*ratios to uncoupled* and the ranking, not the absolute Mbit/s.",
        "",
    ]
    doc = judge.load(out)  # the ledger (claims.py) judged on these tables: written before the report
    lines += ["## The report's claims, judged on this run", "",
              judge.markdown(doc) if doc else f"Not judged: this folder has no {judge.FILE}.\n"]
    lines += [
        "| algorithm | paper, mobility | this run, mobility | paper, static | this run, static | "
        "÷ uncoupled: paper mob. / run mob. | ÷ uncoupled: paper static / run static |",
        "|---|---|---|---|---|---|---|",
    ]
    for _, r in pv.iterrows():
        lines.append(
            f"| {TITLES.get(r.algo, r.algo)} | {_fmt(r.paper_mobility)} | "
            f"{_fmt(r.run_mobility, r.run_mobility_ci95)} | {_fmt(r.paper_static)} | "
            f"{_fmt(r.run_static, r.run_static_ci95)} | "
            f"{_fmt(r.paper_mobility_vs_uncoupled, digits=3)} / {_fmt(r.run_mobility_vs_uncoupled, digits=3)} | "
            f"{_fmt(r.paper_static_vs_uncoupled, digits=3)} / {_fmt(r.run_static_vs_uncoupled, digits=3)} |")
    runs = tp.groupby(["algo", "variant"]).size()
    lines += ["", f"Runs per algorithm and variant: {int(runs.min()) if len(runs) else 0}"
              f"{'' if len(runs) == 0 or runs.min() == runs.max() else f' to {int(runs.max())}'}.", ""]
    inv = man.get("invocations") or []
    if len(inv) > 1:  # a sweep resumed by several commands: each, with its runs and commits
        lines += [f"The runs were made by {len(inv)} commands resuming one sweep (`invocations` in "
                  "lab2-manifest.json; per run: runs-manifest.csv): "
                  + "; ".join(f"`{e['command']}` ({e['runs']} runs, commit {', '.join(e['commits']) or '?'})"
                              for e in inv) + ".", ""]
    gb = tables.get("goodput-bins", pd.DataFrame())
    if not gb.empty:
        st = stalls(gb)
        long = st[st.stall].sort_values("longest_low_s", ascending=False)
        lines += [f"Stalls (`goodput-bins.csv`): {len(long)} of {len(st)} runs had the receiver's goodput under "
                  f"{STALL_MBPS:g} Mbit/s for {STALL_S:g} s or more"
                  + (": " + ", ".join(f"{r.run} ({r.longest_low_s:g} s from {r.from_s:g} s)" for r in long.itertuples())
                     if len(long) else "") + ".", ""]
    else:
        lines += ["Stalls: this run kept no per-interval goodput (`goodput-bins.csv`, written by runs since "
                  "the analysis keeps it), so none are counted here.", ""]
    controlled = controlled_runs(out)
    ref_params = man.get("parameters") or {}
    dv = divergences(tp[tp.variant != "shared"], controlled, ref_params)
    if not dv.empty:
        lines += ["## Divergences from the report, and what was done to explain them",
                  "",
                  "Each ratio to uncoupled the report gives that lies outside this run's Holm-corrected interval of "
                  "the same ratio (the paired difference below, over uncoupled's mean). The report ran ns-3: "
                  "logical subflows over one node's interfaces, 15 UDP clients congesting 5 Mbit/s wireless "
                  "links; whether a shared bottleneck, the cross-traffic level or the coupled rule's definition "
                  "explains a divergence is what a controlled run on this kernel can show. A controlled run "
                  "measures the cause when its interval of the same ratio (Holm-corrected over its own comparisons) "
                  "holds the report's and lies clear of this run's; one that excludes the report's is tried, not the "
                  "cause.",
                  "",
                  "| algorithm | variant | ÷ uncoupled, paper | ÷ uncoupled, this run (corrected) | cause |",
                  "|---|---|---|---|---|"]
        for r in dv.itertuples():
            lines.append(f"| {TITLES.get(r.algo, r.algo)} | {r.variant} | {r.paper:.3f} | {r.run_lo:.3f}–{r.run_hi:.3f} "
                         f"| {r.status} |")
        lines += [""]
    lines += controlled_section(controlled, ref_params)
    dw = tables.get("delay-window", pd.DataFrame())
    if not dw.empty:
        lines += ["## What CS218's delay window did (run 1, from the recorded BPF callbacks)",
                  "",
                  "Per path: congestion-avoidance ACKs, the share that added the delay window, its mean size "
                  "relative to the LIA increase (1 = the increase doubled), and the mean best / last RTT sample "
                  "on those ACKs.",
                  "",
                  "| variant | path | CA ACKs | with DWND | DWND / LIA increase | best RTT ms | last RTT ms |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in dw.sort_values(["variant", "path"]).iterrows():
            lines.append(f"| {r.variant} | p{int(r.path)} | {int(r.ca_acks)} | {r.share:.1%} | {r.dwnd_mean:.4f} | "
                         f"{r.best_rtt_ms:.2f} | {r.last_rtt_ms:.2f} |")
        lines += [""]
    checked = man.get("bpf_vs_reference") or {}
    if checked:
        bad = {k: v["mismatches"] for k, v in checked.items() if v.get("mismatches")}
        events = sum(v.get("events", 0) for v in checked.values())
        lines += [f"BPF programs against the Python reference (`mptcplab.cctrace.replay`): {events} recorded "
                  f"callbacks in {len(checked)} runs, "
                  + (f"**mismatches in {bad}**." if bad else "every window the same.")
                  + counted_vs_recorded(checked), ""]
    pt = paired_table(tp)
    if not pt.empty:
        resolved = int((pt.verdict != "not resolved").sum())
        lines += ["## Paired: each run against uncoupled in the same run",
                  "",
                  "Run r meets the same seeded cross traffic under every algorithm, so the differences are taken "
                  f"per run (Mbit/s, t with pairs − 1 dof). The {len(pt)} comparisons below are one family: each "
                  "interval is Holm-corrected (`mptcplab.judge.stats.holm`, family-wise error 5%) at the level in brackets, "
                  "and a verdict is drawn only where that interval excludes zero; *not resolved* otherwise. "
                  "*Runs needed*: pairs for an interval at the same level to exclude zero with 80% power if the "
                  "true difference were the observed one. The uncorrected 95% half-width is beside it: "
                  f"{resolved} of {len(pt)} comparisons are resolved.",
                  "",
                  "| variant | algorithm | − | difference ± corrected interval (level) | uncorrected 95% | verdict "
                  "| runs needed |",
                  "|---|---|---|---|---|---|---|"]
        for _, r in pt.iterrows():
            lines.append(f"| {r.variant} | {TITLES.get(r.algo, r.algo)} | {TITLES.get(r.vs, r.vs)} | "
                         f"{_corrected(r['diff'], r.half, r.level)} | ± {_fmt(r.ci95)} | {r.verdict} | "
                         f"{stats.fmt_runs(r.runs_needed)} |")
        lines += [""]
    ft = fairness_table(fair)
    if not ft.empty:
        lines += ["## Fairness: the MPTCP connection and one Reno flow share a 5 Mbit/s path",
                  "",
                  "The MPTCP connection has a second, private path. RFC 6356 asks it to take no more from the "
                  "shared path than a single TCP flow would — with a free path next door, ideally much less. "
                  "The report did not measure this. One uncoupled Reno subflow against one Reno flow is expected "
                  "to leave it about half, so the yardstick is uncoupled, not 50%: *vs uncoupled* is the TCP "
                  "share minus uncoupled's (Welch; fairness runs share no seeded traffic, so they are not "
                  "paired), Holm-corrected over the comparisons of this table at the level in brackets; "
                  "*not resolved* when that interval spans zero, with the runs per algorithm that would resolve "
                  "it. The TCP flow's and MPTCP's shares of the shared path add up to 100%.",
                  "",
                  "| algorithm | MPTCP total | MPTCP on the shared path | TCP flow | TCP's share of the shared path "
                  "| vs uncoupled (level) | verdict | runs needed |",
                  "|---|---|---|---|---|---|---|---|"]
        for _, r in ft.iterrows():
            share = (f"{r.tcp_share_of_shared:.0%} ± {r.tcp_share_ci95:.0%}" if r.tcp_share_ci95 == r.tcp_share_ci95
                     else f"{r.tcp_share_of_shared:.0%} (1 run)")
            vs = (f"{r.share_vs_uncoupled:+.0%} ± {r.share_vs_uncoupled_ci95:.0%} "
                  f"({r.share_vs_uncoupled_level * 100:.2f}".rstrip("0").rstrip(".") + "%)"
                  if r.share_vs_uncoupled_ci95 == r.share_vs_uncoupled_ci95 else "—")
            lines.append(f"| {TITLES.get(r.algo, r.algo)} | {_fmt(r.mptcp_mbps, r.mptcp_ci95)} | "
                         f"{_fmt(r.mptcp_on_shared_mbps, r.mptcp_on_shared_ci95)} | {_fmt(r.tcp_mbps, r.tcp_ci95)} | "
                         f"{share} | {vs} | {r.verdict} | "
                         f"{stats.fmt_runs(r.runs_needed) if r.verdict == 'not resolved' else '—'} |")
        lines += ["", f"Runs per algorithm: {int(ft.runs.min())}.", ""]
        best = best_path_ceiling_mbps(man)
        rc = rfc6356_checks(fair, best)
        lines += ["## RFC 6356's goals as checks (fairness runs)",
                  "",
                  "Each goal as a difference with its interval, Holm-corrected over all the checks of this table "
                  "(one family) at the level in brackets: *met* or *violated* when the corrected interval lies "
                  "entirely on one side of zero, *not resolved* when it spans zero, with the runs that would "
                  "resolve it."
                  + (f" Goal 1's yardstick is the goodput ceiling of the best path ({best:.2f} Mbit/s on a "
                     "5 Mbit/s link: the most a single-path TCP flow can carry there)." if best else
                     " Goal 1's yardstick: the TCP flow on the shared path (this run names no link rate: a lower "
                     "bound)."),
                  ""]
        for goal, (title, what) in RFC6356_GOALS.items():
            lines += [f"{goal}. **{title}.** Check: {what}."]
        lines += ["", "| algorithm | goal 1 | goal 2 | goal 3 |", "|---|---|---|---|"]
        for algo in [a for a in ORDER if a in set(rc.algo)]:
            cells = []
            for goal in (1, 2, 3):
                x = rc[(rc.algo == algo) & (rc.goal == goal)]
                if x.empty:
                    cells.append("—")
                else:
                    x = x.iloc[0]
                    need = (f", {stats.fmt_runs(x.runs_needed)} runs to resolve" if x.verdict == "not resolved"
                            else "")
                    cells.append(f"{x.verdict} ({_corrected(x['diff'], x.half, x.level)}{need})")
            lines.append(f"| {TITLES.get(algo, algo)} | {' | '.join(cells)} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- figures (Plotly)

def _px():
    import plotly.express as px

    return px


def fig_throughput(tp: pd.DataFrame):
    t = throughput_table(tp)
    t["title"] = t.algo.map(TITLES)
    fig = _px().bar(t, x="title", y="mean_mbps", error_y="ci95_mbps", color="variant", barmode="group",
                    labels={"title": "", "mean_mbps": "throughput (Mbit/s), mean ± 95% CI"},
                    title="MPTCP throughput per congestion control")
    return fig


def fig_cwnd(ts: pd.DataFrame, variant: str = "static"):
    d = ts[ts.variant == variant].dropna(subset=["cwnd"])
    d = d.assign(title=d.algo.map(TITLES))
    fig = _px().line(d, x="t", y="cwnd", color="path", facet_col="title", facet_col_wrap=3,
                     labels={"t": "time (s)", "cwnd": "cwnd (packets)"},
                     title=f"Congestion window per subflow ({variant}, run 1)")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def fig_rtt_rto(ts: pd.DataFrame, variant: str = "static"):
    d = ts[ts.variant == variant]
    d = d.melt(id_vars=["algo", "path", "t"], value_vars=["srtt_ms", "rto_ms"], var_name="what",
               value_name="ms").dropna()
    d["title"] = d.algo.map(TITLES)
    fig = _px().line(d, x="t", y="ms", color="path", line_dash="what", facet_col="title", facet_col_wrap=3,
                     labels={"t": "time (s)", "ms": "ms"},
                     title=f"Smoothed RTT (tcp_probe) and RTO (ss) per subflow ({variant}, run 1)")
    fig.for_each_annotation(lambda a: a.update(text=a.text.split("=")[-1]))
    return fig


def fig_packets(subs: pd.DataFrame, variant: str = "static"):
    d = subs[subs.variant == variant].groupby(["algo", "path"], as_index=False).packets.mean()
    d["title"] = d.algo.map(TITLES)
    return _px().bar(d, x="title", y="packets", color="path",
                     labels={"title": "", "packets": "data packets sent (mean over runs)"},
                     title=f"Packets sent per subflow ({variant})")


def fig_fairness(fair: pd.DataFrame):
    t = fairness_table(fair)
    d = t.melt(id_vars=["algo"], value_vars=["mptcp_on_shared_mbps", "tcp_mbps"], var_name="flow",
               value_name="mbps")
    d["flow"] = d.flow.map({"mptcp_on_shared_mbps": "MPTCP subflow on the shared path",
                            "tcp_mbps": "single-path TCP (Reno)"})
    d["title"] = d.algo.map(TITLES)
    return _px().bar(d, x="title", y="mbps", color="flow", barmode="group",
                     labels={"title": "", "mbps": "Mbit/s on the shared 5 Mbit/s path"},
                     title="Sharing a bottleneck with one TCP flow")


def figures(out: Path) -> list:
    """Every Lab 2 figure of a sweep or reference copy (used by `mptcplab reproduce`)."""
    t = load(out)
    return [fig_throughput(t["throughput"]), fig_cwnd(t["timeseries"]), fig_rtt_rto(t["timeseries"]),
            fig_packets(t["subflows"]), fig_fairness(t["fairness"])]
