"""What the kit's own benchmarks measured, as the `kit.*` fragments (and each lab's `quick-time`)
that the README and the site's setup and instructor pages state their figures in
(`mptcplab fragments`).

Each fragment reads committed records only: benchmarks/results/ (written by the scripts in
benchmarks/ and scripts/) and the box's acceptance run (vagrant/box/acceptance/). A record that is
absent gives no fragment, so a page that still shows it fails `mptcplab fragments --check` as an
unknown block rather than showing an old figure.
"""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path

RESULTS = Path("benchmarks") / "results"
ACCEPTANCE = Path("vagrant") / "box" / "acceptance"


def fragments(root: Path) -> dict[str, str]:
    """Every fragment the kit's records give, by its full name."""
    out = quick_times(root)
    for name, make in (("kit.quick-times", quick_table), ("kit.fresh-clone", fresh_clone),
                       ("kit.uml-build", uml_build), ("kit.uml-soak", uml_soak),
                       ("kit.uml-time-travel", uml_time_travel), ("kit.minrtt-rp-counters", minrtt_rp_counters),
                       ("kit.box", box),
                       ("kit.vm-setup-checks", vm_setup_checks), ("kit.merge", merge),
                       ("kit.grading", grading)):
        text = make(root)
        if text:
            out[name] = text
    return out


# ------------------------------------------------------------------ quick reproductions

def _timed(root: Path) -> list[dict]:
    """benchmarks/results/time_ratio.json (benchmarks/time_ratio.py, from `reproduce`'s records)."""
    f = root / RESULTS / "time_ratio.json"
    return json.loads(f.read_text()) if f.exists() else []


def _newest_ok(root: Path) -> dict[tuple[str, str], dict]:
    """The newest quick run of each (lab, place) that finished."""
    newest: dict[tuple[str, str], dict] = {}
    for r in _timed(root):
        key = (r["lab"], r["where"])
        if r.get("quick") and r.get("status") == "ok" and r["finished"] > newest.get(key, {}).get("finished", ""):
            newest[key] = r
    return newest


def quick_times(root: Path) -> dict[str, str]:
    """`<lab>.quick-time`: the newest quick reproduction of each lab that finished, in any place."""
    newest: dict[str, dict] = {}
    for (lab, _), r in _newest_ok(root).items():
        if r["finished"] > newest.get(lab, {}).get("finished", ""):
            newest[lab] = r
    return {f"{lab}.quick-time": f"The kit's newest timed quick run (`mptcplab reproduce --quick`, {r['where']} place, "
                                 f"a {r['cpus']}-CPU host, {r['finished'][:10]}, commit {r['commit']}) took "
                                 f"{r['seconds'] / 60:.1f} min, {r['ratio']:.2f}x its {r['transfer_s'] / 60:.1f} min of "
                                 "transfers.\n"
            for lab, r in newest.items()}


def quick_table(root: Path) -> str:
    """`kit.quick-times`: per lab and place, the newest quick run that finished."""
    rows = [f"| {lab.replace('lab', 'Lab ')} | {where} | {r['seconds'] / 60:.1f} min | {r['transfer_s'] / 60:.1f} min | "
            f"{r['ratio']:.2f}x | {r['finished'][:10]}, `{r['commit']}`, {r['cpus']} CPUs, load {r['load_avg_15min']} |"
            for (lab, where), r in sorted(_newest_ok(root).items())]
    if not rows:
        return ""
    return ("| lab | place | wall time | transfers | ratio | run (date, commit, host, 15-min load) |\n"
            "|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
            "Newest quick run (`mptcplab reproduce --quick`) of each lab in each place, from "
            "`benchmarks/results/time_ratio.json` (every timed run: `time_ratio.md`).\n")


# ------------------------------------------------------------------ make reproduce from a fresh clone

STAMP = re.compile(r"^(\d\d:\d\d:\d\d) (.*)$")


def _fresh_clone_log(root: Path) -> tuple[Path, list[tuple[str, str]]] | None:
    """The newest log of benchmarks/reproduce_fresh_clone.sh that ran to its end with exit status 0."""
    found = []
    for f in (root / RESULTS / "reproduce_fresh_clone").glob("*.log"):
        lines = [m.groups() for m in map(STAMP.match, f.read_text().splitlines()) if m]
        if lines and lines[0][1].startswith("START ") and any(re.match(r"END .* exit status 0\b", t) for _, t in lines):
            found.append((lines[0][1].split()[1], f, lines))
    if not found:
        return None
    _, f, lines = max(found)
    return f, lines


def _seconds(a: str, b: str) -> float:
    t = [datetime.strptime(x, "%H:%M:%S") for x in (a, b)]
    return (t[1] - t[0]).total_seconds() % 86400


def _minutes(s: float) -> str:
    return f"{int(s // 60)} min {int(s % 60)} s"


def _fresh(root: Path) -> dict | None:
    found = _fresh_clone_log(root)
    if found is None:
        return None
    f, lines = found
    start = lines[0]
    head = start[1].split()
    fact = {"file": f.name, "date": head[1][:10], "commit": head[3][:7],
            "load": head[head.index("load") + 1], "cpus": head[head.index("cpus") + 1]}
    for when, text in lines:
        if text.startswith("install-deps: done"):
            fact["install_s"] = _seconds(start[0], when)
        if m := re.match(r"uml build: done in (\d+) s", text):
            fact["uml_s"] = float(m.group(1))
        if text.startswith("END "):
            fact["total_s"] = _seconds(start[0], when)
    fact["labs"] = [r for r in _timed(root) if r["commit"].startswith(fact["commit"]) and r.get("status") == "ok"]
    return fact


def fresh_clone(root: Path) -> str:
    """`kit.fresh-clone`: the newest whole `make reproduce` from a fresh clone with an empty cache."""
    x = _fresh(root)
    if x is None:
        return ""
    steps = [f"`install-deps` (the venv from PyPI) {x['install_s']:.0f} s" if "install_s" in x else "",
             f"the UML build {x['uml_s']:.0f} s" if "uml_s" in x else "",
             *(f"{r['lab'].replace('lab', 'Lab ')} in {r['where']} {r['seconds'] / 60:.1f} min ({r['ratio']:.2f}x its "
               "transfers)" for r in sorted(x["labs"], key=lambda r: r["lab"]))]
    return (f"Measured from a fresh clone with an empty cache (`benchmarks/reproduce_fresh_clone.sh`, "
            f"{x['date']}, commit {x['commit']}, a {x['cpus']}-CPU host at a load of {x['load']}"
            f"): **{_minutes(x['total_s'])}** in all: {', '.join(s for s in steps if s)} "
            f"(log: `benchmarks/results/reproduce_fresh_clone/{x['file']}`; every step: "
            "`reproduce_fresh_clone.md`).\n")


def uml_build(root: Path) -> str:
    """`kit.uml-build`: the first build of the UML kernel in the newest fresh-clone run."""
    x = _fresh(root)
    if x is None or "uml_s" not in x:
        return ""
    return (f"A first build, from extracting the source to the kernel in the cache, took "
            f"**{x['uml_s']:.0f} s ({x['uml_s'] / 60:.1f} min)** in the kit's newest fresh-clone `make reproduce` "
            f"({x['date']}, commit {x['commit']}, a {x['cpus']}-CPU host at a load of {x['load']} when it started: "
            f"`benchmarks/results/reproduce_fresh_clone/{x['file']}`).\n")


# ------------------------------------------------------------------ the UML place

def uml_soak(root: Path) -> str:
    """`kit.uml-soak`: consecutive `mptcplab example --where uml` runs (scripts/uml-soak.sh)."""
    f = root / RESULTS / "uml_soak.csv"
    if not f.exists():
        return ""
    rows = list(csv.DictReader(f.open()))
    ok = sum(r["status"] == "0" for r in rows)
    panics = sum(int(r["panic"]) for r in rows)
    good = [float(r["window_goodput_mbps"]) for r in rows]
    unacked = max(int(r["unacked_max_B"]) for r in rows)
    load = [float(r["load1"]) for r in rows]
    return (f"{len(rows)} consecutive `mptcplab example --where uml` runs (`benchmarks/results/uml_soak.csv`, "
            f"load {min(load)}-{max(load)}): {ok} passed every check, {panics} kernel panics; the window-limited "
            f"transfer over the {rows[0]['ping_slow_ms']} ms path carried {min(good):.2f}-{max(good):.2f} Mbit/s "
            f"with at most {unacked:,} B in flight.\n")


def uml_time_travel(root: Path) -> str:
    """`kit.uml-time-travel`: boots of the UML kernel under host load, unpatched and with the
    stale-alarm patch (scripts/uml-soak.sh, scripts/uml-clock-stress.sh; one CSV per series)."""
    rows = []
    for f in sorted((root / RESULTS / "uml_time_travel").glob("*.csv")):
        runs = list(csv.DictReader(f.open()))
        if not runs:
            continue
        load = [float(r["load1"]) for r in runs]
        rows.append(f"| `{f.stem}` | {'unpatched' if 'unpatched' in f.stem else 'patched'} | {len(runs)} | "
                    f"{sum(r['status'] == '0' for r in runs)} | {min(load)}-{max(load)} | "
                    f"{max(int(r['hogs']) for r in runs)} | {sum(int(r['panic']) for r in runs)} |")
    if not rows:
        return ""
    return ("| series (`benchmarks/results/uml_time_travel/`) | kernel | boots | exit status 0 | host load (1 min) | "
            "busy loops | kernel panics |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
            "What each series ran (the example or the clock stress) and why some stopped: `uml_time_travel.md`.\n")


def minrtt_rp_counters(root: Path) -> str:
    """`kit.minrtt-rp-counters`: the minrtt patch's RP counters on one transfer per scheduler
    (the run tests/integration/test_minrtt_scheduler.py makes)."""
    f = root / RESULTS / "minrtt_rp_counters" / "paper-point.csv"
    if not f.exists():
        return ""
    rows = []
    for r in csv.DictReader(f.open()):
        goodput = float(r["goodput_transfer_mbps"])
        rows.append(f"| {r['config']} | {r['scheduler'] or '-'} | {goodput:.1f} | {float(r['rp_opp_retrans']):.0f} | "
                    f"{float(r['rp_penalised']):.0f} | {float(r['mptcp_retrans']):.0f} | {float(r['tcp_retrans_segs']):.0f} |")
    return ("| connection | scheduler | Mbit/s | RP's opportunistic retransmissions | RP's penalisations | "
            "MPTCP retransmissions | TCP retransmitted segments |\n|---|---|---|---|---|---|---|\n"
            + "\n".join(rows) + "\n\nOne transfer each (`benchmarks/results/minrtt_rp_counters/`; the command and "
            "the settings: `minrtt_rp_counters.md`).\n")


# ------------------------------------------------------------------ the box

# run.sh's runs, by the name of their *-timings.txt (vagrant/box/acceptance/README.md says more of each)
RUNS = {"kit": "the kit's box (the rebuilt one)", "first-lab": "the kit's box, a student's first lab",
        "plain-attempt1": "the plain box, first `vagrant up` (every package from the archives and PyPI; it stopped at "
                          "its last step on a bug since fixed)",
        "plain": "the plain box, provisioned again with the fix", "attempt3": "the first kit box (host load 21-24)"}


def _timings(f: Path) -> dict[str, float]:
    """vagrant/box/acceptance/*-timings.txt: `step   N s  rc=R`, the steps that succeeded."""
    out = {}
    for line in f.read_text().splitlines() if f.exists() else []:
        if m := re.match(r"(.*?)\s+(\d+) s\s+rc=0$", line):
            out[m.group(1)] = float(m.group(2))
    return out


def _builds(record: str) -> dict[str, dict]:
    """box.txt: per build (its `--out` directory's name), the stages' wall seconds and the boxes' bytes."""
    builds: dict[str, dict] = {}
    cur = None
    for line in record.splitlines():
        if m := re.search(r"build\.sh .*--out \S*?([^/\s]+)\s", line):
            cur = builds.setdefault(m.group(1), {"stages": {}, "files": {}})
        elif cur is not None and (m := re.match(r"(rootfs|image|boxes|total)\s+(?:(\d+) min (\d+)|([\d,]+) s)\b", line)):
            cur["stages"][m.group(1)] = (int(m.group(2)) * 60 + int(m.group(3)) if m.group(2)
                                         else int(m.group(4).replace(",", "")))
        elif cur is not None and (m := re.match(r"(\d+) s in all", line)):
            cur["stages"]["total"] = int(m.group(1))
        elif cur is not None and (m := re.match(r"(mptcplab-\S+\.box)\s+([\d,]+)\s", line)):
            cur["files"][m.group(1)] = int(m.group(2).replace(",", ""))
    return builds


def box(root: Path) -> str:
    """`kit.box`: the box's builds (box.txt) and acceptance runs (run.sh's *-timings.txt)."""
    d = root / ACCEPTANCE
    builds = _builds((d / "box.txt").read_text()) if (d / "box.txt").exists() else {}
    runs = {name: _timings(d / f"{name}-timings.txt") for name in RUNS}
    if not builds:
        return ""

    rows = []
    for out, b in builds.items():
        stages = ", ".join(f"{k} {v / 60:.1f} min" for k, v in b["stages"].items() if k != "total") or "stages not timed"
        total = b["stages"].get("total", sum(b["stages"].values()))
        files = ", ".join(f"`{n}` {size / 1e6:.0f} MB" for n, size in b["files"].items())
        rows.append(f"| box build `{out}` ({stages}; {files}) | "
                    f"{f'{total / 60:.0f} min' if b['stages'] else '-'} |")
    for name, t in runs.items():
        if t:
            rows.append(f"| {RUNS[name]}: " + ", ".join(f"{step} {v:.0f} s" for step, v in t.items() if v)
                        + f" | {sum(t.values()) / 60:.0f} min |")
    return ("| step | wall time |\n|---|---|\n" + "\n".join(rows) + "\n\n"
            "From `vagrant/box/acceptance/`: `box.txt` (each build: its host, load and commit) and `run.sh`'s "
            "`*-timings.txt` (the steps that succeeded; the rest of each run in its log).\n")


# ------------------------------------------------------------------ the VM place

def vm_setup_checks(root: Path) -> str:
    """`kit.vm-setup-checks`: Lab 2's setup check in the VM place, series of attempts
    (scripts/vm-setup-checks.sh; one CSV per series, its load beside it)."""
    d = root / RESULTS / "vm_setup_checks"
    rows = []
    for f in sorted(d.glob("*.csv")):
        if f.name.endswith("-load.csv"):
            continue
        attempts: dict[str, set] = defaultdict(set)
        for r in csv.DictReader(f.open()):
            attempts[r["attempt"]].add(r["passed"] == "True")
        passed = sum(all(v) for v in attempts.values())
        load_f = f.with_name(f.stem + "-load.csv")
        loads = [float(r["load1"]) for r in csv.DictReader(load_f.open())] if load_f.exists() else []
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        rows.append(f"| `{f.stem}` | {passed} of {len(attempts)} | {load} |")
    if not rows:
        return ""
    return ("| series (`benchmarks/results/vm_setup_checks/`) | setup checks passed | host load (1 min) |\n"
            "|---|---|---|\n" + "\n".join(rows) + "\n\nWhat each series changed: `vm_setup_checks.md`.\n")


# ------------------------------------------------------------------ merging shards

def merge(root: Path) -> str:
    """`kit.merge`: `mptcplab merge` of a synthetic Lab 2 sweep (benchmarks/merge_scaling.py)."""
    f = root / RESULTS / "merge_scaling.json"
    if not f.exists():
        return ""
    doc = json.loads(f.read_text())
    rows = doc["rows"]
    big = max(rows, key=lambda r: r["runs"])
    per = [r["cpu_s_per_1000_runs"] for r in rows]
    return (f"A synthetic {big['runs']:,}-run Lab 2 sweep in {big['shards']} shards merges, tables and report "
            f"included, in {big['cpu_s']} s of CPU time ({big['total_s']} s of wall-clock time; {doc['machine']}) "
            f"with a peak of {big['peak_rss_mib']:.0f} MiB of memory; the CPU time grows linearly with the runs "
            f"({min(per)}-{max(per)} s per 1,000 runs at {', '.join(format(r['runs'], ',') for r in rows)}: "
            "`benchmarks/results/merge_scaling.md`).\n")


# ------------------------------------------------------------------ grading

def grading(root: Path) -> str:
    """`kit.grading`: `mptcplab grade` over batches of notebooks (benchmarks/grading_batch.py); one JSON
    per benchmark, a batch or {"runs": [batches]}. A benchmark that compared versions in alternating
    rounds (under the same drifting load) also gets each version's totals."""
    rows, totals = [], []
    for f in sorted((root / RESULTS).glob("grading_batch*.json")):
        doc = json.loads(f.read_text())
        batches = doc.get("runs", [doc])
        for r in batches:
            load = r.get("load_during", {})
            rows.append((r["date"], f"| {r['date']} | `{f.name}`{', ' + r['version'] if r.get('version') else ''} | "
                                    f"{r['count']} | {r['workers']} on {r['cores']} cores | {r['wall_s']:.0f} s | "
                                    f"**{r['notebooks_per_min']}** | {r['cpu_s_per_notebook']} | "
                                    f"{r['cores'] * 60 / r['cpu_s_per_notebook']:.1f} | "
                                    f"{load.get('mean', '-')} / {load.get('max', '-')} |"))
        versions = sorted({r["version"] for r in batches if r.get("version")})
        for v in versions if len(versions) > 1 else []:
            mine = [r for r in batches if r.get("version") == v]
            count = sum(r["count"] for r in mine)
            cpu = sum(r["cpu_s_per_notebook"] * r["count"] for r in mine) / count
            totals.append(f"| `{f.name}`, {v} | {count} | {count / sum(r['wall_s'] for r in mine) * 60:.2f} | {cpu:.1f} |")
    if not rows:
        return ""
    text = ("| date | benchmark | notebooks | workers | wall | notebooks a minute | CPU s per notebook | "
            "at most, CPU-bound on its idle cores | host load (1 min) mean / max |\n|---|---|---|---|---|---|---|---|---|\n"
            + "\n".join(row for _, row in sorted(rows)) + "\n")
    if totals:
        text += ("\nVersions compared in alternating rounds, all rounds together:\n\n"
                 "| benchmark, version | notebooks | notebooks a minute | CPU s per notebook |\n|---|---|---|---|\n"
                 + "\n".join(totals) + "\n")
    return text + ("\nFrom `benchmarks/results/grading_batch*.json` (each batch's mix of notebooks and what it compared: "
                   "the `.md` beside it).\n")
