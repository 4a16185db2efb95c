"""Benchmark: where a quick Lab 2 in the VM went, phase by phase, from the stamped log of a measurement
script (run.log beside reproduce/, as /work/results-s16/vmspeed3/run.sh writes them) and the runs'
manifests:

    python3 benchmarks/vm_lab_phases.py RESULTS_DIR [RESULTS_DIR...]    # a markdown table, one column each

Results: benchmarks/results/vm_run_overhead.md."""

import datetime as dt
import json
import re
import sys
from pathlib import Path


def phases(here: Path) -> dict:
    log = (here / "run.log").read_text().splitlines()
    day = json.loads((here / "reproduce" / "reproduce.json").read_text())["finished"][:10]

    def at(pattern, last=False):
        hits = [l for l in log if re.search(pattern, l)]
        line = hits[-1] if last else hits[0]
        return dt.datetime.fromisoformat(f"{day}T{line[:8]}+00:00").timestamp()

    sweep = here / "reproduce" / "lab2-quick"
    runs = {}
    for d in sweep.iterdir():
        if (d / "manifest.json").exists():
            m = json.loads((d / "manifest.json").read_text())
            runs[d.name] = (dt.datetime.fromisoformat(m["started"]).timestamp(),
                            dt.datetime.fromisoformat(m["finished"]).timestamp(), m.get("timings", {}))
    rep = json.loads((here / "reproduce" / "reproduce.json").read_text())["labs"][0]
    start = at(r"reproduce: == lab2")
    t_vm, t_first, t_count = at(r"running in a VM"), at(r"^\S+ lab2: CS218"), at(r"runs to measure")
    up = re.search(r"kernel started the kit (\d+) s after booting; the kit took (\d+) s", "\n".join(log))
    v0, v1, vt = runs["verify"]
    main = sorted(v for k, v in runs.items() if k.startswith(("static", "mobility")))
    fair = sorted(v for k, v in runs.items() if k.startswith("fair"))
    net_up = vt.get("network_up", 0)
    out = {
        "host before the boot (bytecode, BPF objects)": t_vm - start,
        "VM start to the lab's first line": t_first - t_vm,
        "  of which: guest kernel+init to the kit's Python / the kit's Python start and imports":
            f"{up.group(1)} / {up.group(2)}" if up else "?",
        "first line to the sweep": t_count - t_first,
        "network up: wall (timings: network_up, of it own latency)":
            f"{v0 - t_count:.0f} ({net_up:.1f}, {vt.get('network_own_latency', '?')})",
        "setup check (verify run)": v1 - v0,
        "  its steps": ", ".join(f"{k} {v:.1f}" for k, v in sorted(vt.items(), key=lambda kv: -kv[1])
                                 if k not in ("network_up", "network_own_latency") and v >= 0.05),
        "  untimed in it": (v1 - v0) - sum(v for k, v in vt.items() if k in
                                            ("record", "ping", "tcp", "mptcp", "mptcp_capture_check", "window",
                                             "extra_check")),
        "20 static/mobility runs": sum(b - a for a, b, _ in main),
        "fairness network": fair[0][0] - main[-1][1],
        "5 fairness runs": sum(b - a for a, b, _ in fair),
        "guest exit, analysis on the host": at(r"lab2: vm: \d+ s of wall", last=True) - fair[-1][1],
        "the lab (reproduce's)": rep["seconds"],
        "transfers": rep["transfer_s"], "ratio": f"{rep['seconds'] / rep['transfer_s']:.3f}",
    }
    return out


dirs = [Path(a) for a in sys.argv[1:]]
tables = [phases(d) for d in dirs]
print("| phase | " + " | ".join(d.name for d in dirs) + " |")
print("|---|" + "---|" * len(dirs))
for k in tables[0]:
    cells = [t.get(k) for t in tables]
    print(f"| {k} | " + " | ".join(f"{c:.1f}" if isinstance(c, float) else str(c) for c in cells) + " |")
