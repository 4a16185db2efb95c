"""Benchmark: Lab 1's analysis against bare tshark and a naive pyshark loop, on one capture.

    # 1. record a 10 s MPTCP capture with both paths busy (in UML where the host has no netem):
    sudo mptcplab uml run -- .venv/bin/python benchmarks/lab1_analysis.py --record results/bench-lab1
    # 2. measure, on the host, with nothing else running:
    sudo .venv/bin/python benchmarks/lab1_analysis.py results/bench-lab1

Three ways to get from the capture to the numbers behind the figures, each in a fresh process,
timed (wall clock) with the peak memory of its whole process tree (tshark included):
  1. ours:    mptcplab.labs.lab1.analysis -> Detail.load + Figures 4, 5, 6/9, 10 (objects built)
  2. tshark:  `tshark -T fields` of the same fields with the same preferences, to /dev/null
  3. pyshark: a naive loop over pyshark.FileCapture reading the same fields per packet
Targets (issue #3): ours <= 1.5x bare tshark, >= 10x faster than naive pyshark, < 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

from mptcplab.labs.lab1.analysis import PACKET_FIELDS  # noqa: E402
from mptcplab.measure.tshark import MPTCP_PREFS  # noqa: E402

FILTER = "tcp.len > 0 && tcp.dstport == 5201"

OURS = """
import sys
from mptcplab.labs.lab1 import analysis as la
d = la.Detail.load(sys.argv[1])
w = d.busiest_window()
figs = [la.fig4(d), la.fig5(d, w), la.fig6(d, w), la.fig10(d, w)]
print(len(d.packets))
"""

PYSHARK = """
import sys
from mptcplab.measure.tshark import pyshark_capture
cap = pyshark_capture(sys.argv[1], display_filter=sys.argv[2])
rows = []
limit = int(sys.argv[3])
for pkt in cap:
    if len(rows) == limit:
        break
    rows.append((pkt.sniff_timestamp, pkt.tcp.stream, pkt.ip.src, pkt.tcp.srcport, pkt.tcp.seq, pkt.tcp.len,
                 pkt.tcp.get_field_value("mptcp.dsn"), pkt.tcp.get_field_value("mptcp.reinjection_of"),
                 pkt.tcp.get_field_value("tcp.analysis.retransmission")))
cap.close()
print(len(rows))
"""


def tree_rss_kib(pid: int) -> int:
    """Resident memory of a process and all its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            status = (p / "status").read_text()
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(p.name))
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss[int(p.name)] = int(line.split()[1])
    total, todo = 0, [pid]
    while todo:
        q = todo.pop()
        total += rss.get(q, 0)
        todo += children.get(q, [])
    return total


def measure(argv: list[str]) -> dict:
    import tempfile

    with tempfile.TemporaryFile("w+") as sink:  # a file, not a pipe: tshark's output must not block it
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.DEVNULL, text=True)
        peak = 0
        while proc.poll() is None:
            peak = max(peak, tree_rss_kib(proc.pid))
            time.sleep(0.05)
        wall = time.perf_counter() - t0
        sink.seek(0)
        lines = sink.read().strip().splitlines()
    out = lines[-1] if lines and not argv[0] == "tshark" else str(max(len(lines) - 1, 0))
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed ({proc.returncode})")
    return {"seconds": round(wall, 2), "peak_mib": round(peak / 1024, 1), "output": out[-80:]}  # packets


def tshark_argv(pcap: Path) -> list[str]:
    argv = ["tshark", "-n", "-r", str(pcap)]
    for k, v in MPTCP_PREFS.items():
        argv += ["-o", f"{k}:{v}"]
    argv += ["-Y", FILTER, "-T", "fields", "-E", "header=y", "-E", "separator=/t", "-E", "occurrence=f"]
    for f in PACKET_FIELDS:
        argv += ["-e", f]
    return argv


def record(out: Path) -> Path:
    """A 10 s MPTCP transfer with a large buffer (both paths busy), observed as in Lab 1's detailed run."""
    from mptcplab.core.state import signals_unwind
    from mptcplab.labs.lab1.experiment import _detail_run, topology
    from mptcplab.run.lab import get_lab
    from mptcplab.run.results import Sweep, experiment_lock

    params = get_lab("lab1").load_params(False, {"detail": {"buffer": "4M", "duration_s": 10}})
    params["sweep"]["buffers"] = ["4M"]
    with experiment_lock(), signals_unwind(), topology(params).up() as net:
        _detail_run(net, Sweep(out), params, table=None)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir", nargs="?", type=Path, help="a sweep dir with a detail-* run (capture.pcap)")
    ap.add_argument("--record", action="store_true", help="only record a capture into RUN_DIR (root; netem)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "lab1_analysis.md")
    ap.add_argument("--render-only", action="store_true", help="rewrite the .md from the recorded .json")
    ap.add_argument("--pyshark-packets", type=int, default=10000,
                    help="packets the pyshark loop reads (it takes minutes per 100k); its time is scaled up "
                         "to the whole capture, and the table says so (0: the whole capture)")
    a = ap.parse_args()
    if a.record:
        record(a.run_dir or Path("results/bench-lab1"))
        return 0
    (detail,) = sorted(a.run_dir.glob("detail-*/capture.pcap"))[-1:]
    run = detail.parent
    summary = json.loads((run / "summary.json").read_text())
    manifest = json.loads((run / "manifest.json").read_text())
    py = sys.executable
    env_path = str(HERE.parent / "src")
    os.environ["PYTHONPATH"] = env_path + os.pathsep + os.environ.get("PYTHONPATH", "")
    if a.render_only:
        results = json.loads(a.out.with_suffix(".json").read_text())["results"]
    else:
        results = run_all(a, detail, py)
    render(a, results, run, detail, summary, manifest)
    return 0


def run_all(a, detail: Path, py: str) -> dict:
    from mptcplab.run.results import experiment_lock

    # Timings and experiments disturb each other on a small machine: take the experiment lock.
    with experiment_lock("benchmark: waiting for the running experiment to finish"):
        results = {
            "ours (capture -> all figures)": measure([py, "-c", OURS, str(a.run_dir)]),
            "bare tshark -T fields": measure(tshark_argv(detail)),
            "naive pyshark loop": measure([py, "-c", PYSHARK, str(detail), FILTER,
                                           str(a.pyshark_packets or 10**9)]),
        }
    n_all = int(results["bare tshark -T fields"]["output"])
    n_py = int(results["naive pyshark loop"]["output"])
    if n_py < n_all:  # scale the per-packet cost of the loop up to the whole capture
        r = results["naive pyshark loop"]
        r["measured_packets"], r["measured_seconds"] = n_py, r["seconds"]
        r["seconds"] = round(r["seconds"] * n_all / n_py, 1)
        r["output"] = f"{n_all} (extrapolated from {n_py} packets in {r['measured_seconds']} s)"
    return results


def render(a, results: dict, run: Path, detail: Path, summary: dict, manifest: dict) -> None:
    ours, bare, naive = (results[k]["seconds"] for k in results)
    size = detail.stat().st_size
    lines = [
        "# Lab 1 analysis benchmark", "",
        f"Capture: `{run.name}` — {summary['duration_s']:g} s MPTCP transfer at {summary['mbps']:.1f} Mbit/s over "
        f"{summary['subflows']} subflows, {size / 1e6:.1f} MB pcap (headers only), recorded on kernel "
        f"{manifest['platform']['kernel_release']} ({manifest['platform']['where']}).",
        f"Measured on {platform.node()} ({os.cpu_count()} CPUs), {time.strftime('%Y-%m-%d')}; wall-clock seconds and "
        "peak resident memory of the whole process tree (tshark included), one run each.", "",
        "| method | seconds | peak memory (MiB) | packets |", "|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {r['seconds']} | {r['peak_mib']} | {r['output']} |")
    lines += ["", f"- ours / bare tshark = **{ours / bare:.2f}x** (target <= 1.5x)",
              f"- naive pyshark / ours = **{naive / ours:.1f}x** (target >= 10x)",
              f"- peak memory of ours: **{results['ours (capture -> all figures)']['peak_mib']} MiB** (target < 1024)", ""]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines))
    a.out.with_suffix(".json").write_text(json.dumps({"capture": str(run), "results": results}, indent=2) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
