"""Lab 1 analysis: the compact reference copy shipped in solutions/results/lab1/."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pandas as pd

from .detail import Detail, find_details, path_names
from .figures import save_images
from .report import report
from .sweep import load_sweep


def _copy_run_tables(run: Path, out: Path) -> None:
    """A detailed run's small files and its tcp_probe and ss samples (gzipped) into `out`."""
    out.mkdir(parents=True)
    for name in ("summary.json", "manifest.json", "counters.json", "sndbuf_waits.csv", "intervals.csv",
                 "topology.sh"):
        if (run / name).exists():
            shutil.copy2(run / name, out / name)
    manifest = json.loads((run / "manifest.json").read_text())
    if (run / "tcp_probe.csv").exists():
        probe = pd.read_csv(run / "tcp_probe.csv")
        with gzip.open(out / "tcp_probe.csv.gz", "wt") as f:
            probe[probe["saddr"].isin(path_names(manifest))].to_csv(f, index=False)
    if (run / "ss.csv").exists():
        with gzip.open(out / "ss.csv.gz", "wt") as f:
            pd.read_csv(run / "ss.csv").to_csv(f, index=False)


def export_reference(sweep_dir: Path | str, dest: Path | str) -> Path:
    """Copy what the notebook and the report need, compactly: tables and manifests, no raw capture.

    The detailed run's packets (from the capture) and tcp_probe become gzipped CSVs; the capture
    is cut to the handshakes plus the busiest 0.6 s (capture-window.pcap), enough for packet-level
    exploration with pyshark with the MPTCP analysis working. The control runs keep their tables
    (waits, tcp_probe, ss samples, counters), not their packets.
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    d = Detail.load(sweep_dir)
    sweep = load_sweep(sweep_dir)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    sweep.to_csv(dest / "sweep.csv", index=False)
    for name in ("summary.json", "manifest.json"):
        if (sweep_dir / "verify" / name).exists():
            shutil.copy2(sweep_dir / "verify" / name, dest / f"verify-{name}")
    for control, _ in find_details(sweep_dir)[1:]:  # the control runs: their tables, no packets
        _copy_run_tables(control, dest / control.name)
    out = dest / d.path.name
    _copy_run_tables(d.path, out)
    with gzip.open(out / "packets.csv.gz", "wt") as f:
        d.packets.to_csv(f, index=False, float_format="%.6f")
    lo, hi = d.busiest_window()
    t0 = d.summary["t0"]
    keep = (f"tcp.flags.syn == 1 || frame.number <= 30 || "
            f"(frame.time_epoch >= {t0 + lo:.6f} && frame.time_epoch <= {t0 + hi:.6f})")
    subprocess.run(["tshark", "-n", "-r", str(d.path / "capture.pcap"), "-Y", keep, "-w",
                    str(out / "capture-window.pcap")], check=True, capture_output=True)
    (dest / "paper-vs-this-run.md").write_text(report(sweep_dir))
    save_images(dest, dest / "figures")
    return dest
