"""Lab 3 analysis: from a sweep to the compact tables the notebook reads (runs.csv, flows.csv,
losses.csv, lab3-manifest.json), and back from them."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from ...net.links import LinkSpec
from ...run import results
from .predictions import predict


COMPACT = ("runs.csv", "flows.csv", "losses.csv", "runs-manifest.csv", "lab3-manifest.json", "paper-vs-this-run.md")


RUN_COLUMNS = ["run", "scenario", "n", "rep", "loss_cfg", "capacity_mbps", "base_rtt", "window_s", "packets", "mss",
               "retransmissions", "loss_events_per_flow", "loss_events_cumulative", "timeouts", "timeouts_nstat",
               "recoveries_nstat", "loss_probes_nstat", "cpu_busy", "cpu_softirq", "softnet_squeezed",
               "softnet_dropped",
               "p", "p_e",
               "p_r", "p_r_emulator", "rtt", "rtt_source", "srtt", "min_rtt", "ack_rtt", "T", "b", "model_b",
               "pps", "goodput_pps", "goodput_window_mbps", "goodput_transfer_mbps", "emulator_wire_mbps",
               "emulator_wire_mbps_min", "emulator_qlen",
               "capture_dropped", "rcv_in_segs", "rcv_out_segs", "rcv_delayed_acks", "rcv_backlog_coalesce",
               "rcv_ofo_queue", "commit"]


def one_way_delay(params: dict, default: str = "?") -> str:
    """The path's one-way delay from a run's parameters: `[paths.p1] delay` (runs recorded before
    Lab 3's file had [paths], like the reference results, gave it as `delay`)."""
    return ((params.get("paths") or {}).get("p1") or {}).get("delay") or params.get("delay", default)


def compact(out: Path) -> dict:
    out = Path(out)
    runs, flows, losses, manifest = [], [], [], {}
    for d, s in results.completed(out):
        if d.name == "verify":
            manifest = json.loads((d / "manifest.json").read_text())
            manifest["verify"] = s
            continue
        if "scenario" not in s:
            continue
        runs.append({"run": d.name, **{k: s.get(k) for k in RUN_COLUMNS if k not in ("run", "commit")},
                     "commit": results.run_commit(d)})
        if runs[-1]["base_rtt"] is None:  # the configured round trip: twice the one-way delay
            delay = one_way_delay(json.loads((d / "manifest.json").read_text()).get("parameters") or {}, "0ms")
            runs[-1]["base_rtt"] = 2 * LinkSpec.parse(f"delay={delay}").delay_s
        if (d / "flows.csv").exists():
            flows.append(pd.read_csv(d / "flows.csv").assign(run=d.name, scenario=s["scenario"], n=s["n"]))
        if (d / "losses.csv").exists():
            losses.append(pd.read_csv(d / "losses.csv").assign(run=d.name)[["run", "flow", "t"]])
    if not runs:
        raise FileNotFoundError(f"{out}: no lab3 runs (run `sudo mptcplab run lab3 --quick`)")
    table = predict(pd.DataFrame(runs, columns=RUN_COLUMNS))
    pd.DataFrame(results.run_manifests(out), columns=results.RUN_MANIFEST_COLUMNS).to_csv(
        out / "runs-manifest.csv", index=False)  # per-run provenance: commit, kernel, place, sysctls as applied
    table.to_csv(out / "runs.csv", index=False)
    ftable = pd.concat(flows, ignore_index=True) if flows else pd.DataFrame()
    ftable.to_csv(out / "flows.csv", index=False)
    ltable = pd.concat(losses, ignore_index=True) if losses else pd.DataFrame(columns=["run", "flow", "t"])
    ltable.to_csv(out / "losses.csv", index=False)
    if not manifest:  # no verify run (e.g. resumed elsewhere): take the first run's manifest
        first = next(d for d, s in results.completed(out) if "scenario" in s)
        manifest = json.loads((first / "manifest.json").read_text())
    manifest.pop("artefacts", None)
    manifest["runs"] = len(table)
    (out / "lab3-manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
    return {"runs": table, "flows": ftable, "losses": ltable, "manifest": manifest}


def load(path: Path) -> dict:
    """The compact tables of a sweep (compacting it first if needed) or of a reference copy."""
    path = results.compacted(path, "runs.csv", compact, "lab3")
    return {"runs": pd.read_csv(path / "runs.csv"), "flows": pd.read_csv(path / "flows.csv"),
            "losses": pd.read_csv(path / "losses.csv"),
            "manifest": json.loads((path / "lab3-manifest.json").read_text())}
