"""Benchmark: `mptcplab merge` of a synthetic Lab 2 sweep of 1,000, 3,000 and 10,000 runs.

    .venv/bin/python benchmarks/merge_scaling.py [--sizes 1000 3000 10000] [--shards 10]

For each size the benchmark writes (untimed, into a temporary directory it removes) a Lab 2 sweep
split into shards as `mptcplab run lab2 --shard K/N` leaves them: every shard's shard.json and
setup check, and per run the manifest and summary a real run writes (the run keys are Lab 2's own
points for `repetitions` R and `fairness.repetitions` 20: 10 R + 100 runs). Then, in a fresh Python
process so that its peak memory is its own, it times merge.plan (every check: commits, parameters,
places, duplicates, gaps) and merge.write (copying the runs, then Lab 2's tables and report, as
`mptcplab merge` does). Records wall-clock and CPU seconds and peak RSS per size, and the CPU time per
added run (flat when the whole scales linearly). Results: benchmarks/results/merge_scaling.{json,md}.

The runs' numbers are synthetic (seeded), not measurements: this measures the merge, not a network.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAIRNESS_REPS = 20
GIT = {"commit": "0" * 40, "dirty": False}
PLATFORM = {"where": "vm", "kernel_release": "6.12.95+deb12-amd64", "machine": "x86_64", "cpus": 2}


def params_for(runs: int) -> dict:
    from mptcplab.run.lab import get_lab

    reps = (runs - 5 * FAIRNESS_REPS) // 10
    return get_lab("lab2").load_params(False, {"repetitions": reps, "fairness": {"repetitions": FAIRNESS_REPS}})


def network(params: dict) -> dict:
    """The manifest's `network` as topology.Network.record writes it (the part the analysis reads)."""
    from mptcplab.net.links import LinkSpec

    paths = []
    for i, (name, p) in enumerate(params["paths"].items(), start=1):
        delay = LinkSpec.parse(f"delay={p['delay']}").delay_s
        paths.append({"name": name, "link": f"{p['link']},delay={p['delay']}", "rtt_ms_configured": 2e3 * delay,
                      "a_addr": f"10.{i}.1.1"})
    return {"paths": paths}


def generate(root: Path, runs: int, n_shards: int) -> list[Path]:
    from mptcplab.run.lab import get_lab
    from mptcplab.run.shards import Shard, select

    rnd = random.Random(runs)
    params = params_for(runs)
    points = get_lab("lab2").points(params, None)
    assert len(points) == runs, (len(points), runs)
    net = network(params)
    dirs = []
    for k in range(1, n_shards + 1):
        d = root / f"shard-{k}-of-{n_shards}"
        share = select(points, Shard(k, n_shards))
        for point in [None, *share]:
            key = "verify" if point is None else point.key
            v = {} if point is None else point.values
            if point is None:
                summary = {"checks": {"passed": True}}
            elif "fairness" in v:
                m = rnd.uniform(2, 4)
                summary = {"algo": v["algo"], "rep": v["rep"], "mptcp_mbps": m, "tcp_mbps": 9.5 - m,
                           "mptcp_share_on_shared": rnd.uniform(0.3, 0.6), "mptcp_on_shared_mbps": m / 2}
            else:
                subs = {p["name"]: rnd.randint(2000, 4000) for p in net["paths"]}
                summary = {"algo": v["algo"], "variant": v["variant"], "rep": v["rep"], "proto": "mptcp",
                           "mbps": rnd.uniform(10, 18), "duration_s": v["duration_s"], "span_s": v["duration_s"],
                           "subflows": 4, "cc": f"mlab_{v['algo']}", "subflow_ccs": [f"mlab_{v['algo']}"] * 4,
                           "packets_per_subflow": subs, "retrans_per_subflow": {p: rnd.randint(0, 40) for p in subs},
                           "detail": v["detail"]}
            (d / key).mkdir(parents=True)
            (d / key / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
            manifest = {"run": key, "parameters": v, "platform": {**PLATFORM, "hostname": f"node{k:02d}"},
                        "git": GIT, "network": net, "artefacts": ["manifest.json", "summary.json"]}
            (d / key / "manifest.json").write_text(json.dumps(manifest, indent=2, default=str) + "\n")
        (d / "shard.json").write_text(json.dumps({"lab": "lab2", "shard": f"{k}/{n_shards}", "quick": False,
                                                  "parameters": params, "git": GIT,
                                                  "runs": [p.key for p in share], "points": runs}) + "\n")
        dirs.append(d)
    return dirs


def _cpu() -> float:
    """This process's CPU seconds (user + system): what the merge costs, whatever else the shared
    machine runs meanwhile (wall-clock time also counts the waits for a core)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def merge_once(out: Path, dirs: list[str]) -> dict:
    """In this process: plan + write, timed; the process's peak RSS."""
    from mptcplab.core import log
    from mptcplab.run import merge
    from mptcplab.run.lab import all_labs

    log.setup(-1)
    all_labs()  # imported before the clock starts: the merge is timed, not Python's imports
    cpu0 = _cpu()
    t0 = time.perf_counter()
    plan = merge.plan([Path(d) for d in dirs])
    t1 = time.perf_counter()
    merge.write(plan, out)
    t2 = time.perf_counter()
    cpu = _cpu() - cpu0
    rows = len((out / "throughput.csv").read_text().splitlines()) - 1 + len(
        (out / "fairness.csv").read_text().splitlines()) - 1
    assert rows == sum(len(s.runs) for s in plan.sources), rows  # every run is in Lab 2's tables
    return {"plan_s": round(t1 - t0, 2), "write_s": round(t2 - t1, 2), "total_s": round(t2 - t0, 2), "cpu_s": round(cpu, 2),
            "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    ap.add_argument("--shards", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=5, help="merges per size; the median (by CPU time) is recorded")
    ap.add_argument("--dir", default="/dev/shm" if Path("/dev/shm").is_dir() else None,
                    help="where the synthetic sweep is written (default /dev/shm, memory: on a shared disk the "
                    "write-back of each merge's copies slows the next one, which measures the disk, not the merge)")
    ap.add_argument("--one", nargs="+", help=argparse.SUPPRESS)  # OUT SHARD...: the timed child process
    a = ap.parse_args()
    if a.one:
        print(json.dumps(merge_once(Path(a.one[0]), a.one[1:])))
        return
    rows = []
    for size in a.sizes:
        root = Path(tempfile.mkdtemp(prefix=f"merge-bench-{size}-", dir=a.dir))
        try:
            t0 = time.perf_counter()
            dirs = generate(root, size, a.shards)
            gen = time.perf_counter() - t0
            tries = []
            for i in range(a.repeat):
                res = subprocess.run([sys.executable, __file__, "--one", str(root / f"merged-{i}"), *map(str, dirs)],
                                     capture_output=True, text=True, check=True)
                tries.append(json.loads(res.stdout.splitlines()[-1]))
                shutil.rmtree(root / f"merged-{i}")
            # the median merge by CPU time: one quiet moment on a shared machine is not what a user meets
            best = sorted(tries, key=lambda t: t["cpu_s"])[len(tries) // 2]
            row = {"runs": size, "shards": a.shards, "generate_s": round(gen, 1), **best,
                   "total_s_all": [t["total_s"] for t in tries], "cpu_s_all": [t["cpu_s"] for t in tries]}
            row["cpu_s_per_1000_runs"] = round(row["cpu_s"] / size * 1000, 2)
            rows.append(row)
            print(row, flush=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)
    for prev, row in zip(rows, rows[1:]):  # the cost of each further run: flat when linear
        row["cpu_ms_per_added_run"] = round((row["cpu_s"] - prev["cpu_s"]) / (row["runs"] - prev["runs"]) * 1e3, 2)
    load = os.getloadavg()
    result = {"what": "mptcplab merge of a synthetic Lab 2 sweep (benchmarks/merge_scaling.py)",
              "machine": f"{platform.node()}: {os.cpu_count()} cores shared with other jobs (load average "
                         f"{load[0]:.1f} at the end), Python {platform.python_version()}",
              "directory": a.dir, "rows": rows}
    (HERE / "results" / "merge_scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# `mptcplab merge`: seconds and memory against the number of runs", "",
             f"Measured by `benchmarks/merge_scaling.py` on {result['machine']}. A synthetic Lab 2 sweep "
             f"in {a.shards} shards (generated in {a.dir}, then removed); the merge in a fresh process: its checks "
             "(`plan`), then copying the runs and Lab 2's tables and report (`write`).", "",
             f"Of {a.repeat} merges per size, the median by CPU time (all in the JSON). *CPU s* is the "
             "merge process's own user + system time, which the other jobs on the machine do not inflate; "
             "wall-clock seconds also count the waits for a core. *CPU ms per added run*: the extra CPU time "
             "from the previous size, per extra run (the same at every size when the merge is linear; the "
             "smallest size also carries the fixed cost of the report).", "",
             "| runs | plan s | write s | wall s | CPU s | CPU s per 1,000 runs | CPU ms per added run | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['runs']:,} | {r['plan_s']} | {r['write_s']} | {r['total_s']} | {r['cpu_s']} | "
              f"{r['cpu_s_per_1000_runs']} | {r.get('cpu_ms_per_added_run', '')} | {r['peak_rss_mib']} |" for r in rows]
    (HERE / "results" / "merge_scaling.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
