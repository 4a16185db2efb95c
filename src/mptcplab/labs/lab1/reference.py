"""Lab 1 analysis: the compact reference copy shipped in solutions/results/lab1/."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

from ...core.errors import UsageError
from .detail import Detail, copy_run_tables, find_details
from .figures import save_images
from .paper_point import COMPACT_DIR, export_paper_point, load_paper_point
from .report import report
from .second_place import CONTROLLED_DIR
from .sweep import load_sweep

TABLES = (COMPACT_DIR,)  # the parts a run may replace alone in an existing reference (`tables`)


def export_reference(sweep_dir: Path | str, dest: Path | str, tables: tuple[str, ...] | None = None) -> Path:
    """Copy what the notebook and the report need, compactly: tables and manifests, no raw capture.

    The detailed run's packets (from the capture) and tcp_probe become gzipped CSVs; the capture
    is cut to the handshakes plus the busiest 0.6 s (capture-window.pcap), enough for packet-level
    exploration with pyshark with the MPTCP analysis working. The control runs keep their tables
    (waits, tcp_probe, ss samples, counters), not their packets. The paper's point, where the run
    has it, goes to paper-point/ (export_paper_point).

    `tables=("paper-point",)`: replace only the paper's point of an existing reference with a run
    of it alone (`--set paper_point.only=true`); the report is made again from the result, and
    every run keeps its commit in paper-point/runs-manifest.csv.
    """
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    if tables:
        if set(tables) - set(TABLES):
            raise UsageError(f"lab1 reference --tables: {', '.join(sorted(set(tables) - set(TABLES)))}: "
                             f"lab1 replaces only {', '.join(TABLES)}")
        export_paper_point(sweep_dir, dest / COMPACT_DIR)
        (dest / "paper-vs-this-run.md").write_text(report(dest))
        return dest
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
        copy_run_tables(control, dest / control.name)
    out = dest / d.path.name
    copy_run_tables(d.path, out)
    with gzip.open(out / "packets.csv.gz", "wt") as f:
        d.packets.to_csv(f, index=False, float_format="%.6f")
    lo, hi = d.busiest_window()
    t0 = d.summary["t0"]
    keep = (f"tcp.flags.syn == 1 || frame.number <= 30 || "
            f"(frame.time_epoch >= {t0 + lo:.6f} && frame.time_epoch <= {t0 + hi:.6f})")
    subprocess.run(["tshark", "-n", "-r", str(d.path / "capture.pcap"), "-Y", keep, "-w",
                    str(out / "capture-window.pcap")], check=True, capture_output=True)
    if len(load_paper_point(sweep_dir)):
        export_paper_point(sweep_dir, dest / COMPACT_DIR)
    (dest / "paper-vs-this-run.md").write_text(report(sweep_dir))
    save_images(dest, dest / "figures")
    return dest


def export_controlled(sweep_dir: Path | str, dest: Path | str, name: str) -> Path:
    """Keep a paper-point run made elsewhere (another place, a scaled point: `mptcplab notebooks
    reference lab1 RUN --controlled NAME`) beside the reference in `dest`: its compact copy in
    dest/controlled/NAME/, then the reference's report again, whose agreement table reads it."""
    out = export_paper_point(sweep_dir, Path(dest) / CONTROLLED_DIR / name)
    (Path(dest) / "paper-vs-this-run.md").write_text(report(dest))
    return out
