"""Benchmark: `mptcplab grade` on a class-sized batch of one lab's notebooks, or of every lab's, on this machine.

    sudo .venv/bin/python benchmarks/grading_batch.py [--lab 3|all] [--count 200] [--workers 0] [--name NAME]

The batch mixes what a class hands in: half full solutions (the master's answers in the student
notebook), a quarter unfilled (the notebook as handed out), a quarter broken (a syntax error, a
runaway cell, a 16 GiB allocation, a 5-child memory bomb, a truncated upload, in turn). `--lab all`
hands in every lab's notebooks in one batch (notebook i is lab i mod 3's), graded as `mptcplab grade`
grades a mixed batch: sorted by lab, each lab's gradebook in turn.
Records wall time, notebooks per minute, per-notebook seconds, the grader's own peak RSS, the
largest cgroup memory peak, the CPU seconds of every sandbox per notebook (what load changes
least), and the machine's load average sampled every 10 s (the machine is shared: the load says how
much of it the batch really had). Results: benchmarks/results/NAME.{json,md} (default grading_batch).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

from mptcplab.grading import autograder, batch, intake

HERE = Path(__file__).resolve().parent
BROKEN = {
    "syntax": "this is not python (",
    "runaway": "while True:\n    pass",
    "memory": "hog = bytearray(16 * 1024 ** 3)",
    "bomb": ("import subprocess, sys\nkids = [subprocess.Popen([sys.executable, '-c', "
             "'b = bytearray(900 << 20); b[::4096] = b\"x\" * len(b[::4096]); import time; time.sleep(30)']) "
             "for _ in range(5)]\n[k.wait() for k in kids]"),
}


def make_batch(ag: autograder.Autograder, dest: Path, numbers: range | list[int]) -> dict[str, str]:
    """Notebooks student<i> for i in numbers, in dest; returns name -> kind."""
    solution = autograder.filled_student_notebook(ag.student_notebook, ag.zip_path.parent / ag.master.name)
    unfilled = nbformat.read(ag.student_notebook, 4)
    kinds = {}
    for j, i in enumerate(numbers):
        name = f"student{i:03d}"
        if j % 4 in (0, 1):
            nb, kind = solution, "solution"
        elif j % 4 == 2:
            nb, kind = unfilled, "unfilled"
        else:
            which = ["syntax", "runaway", "memory", "bomb", "not-a-notebook"][(j // 4) % 5]
            kind = f"broken:{which}"
            if which == "not-a-notebook":  # an upload cut short: the notebook's first 2 KiB, not JSON
                (dest / f"{name}.ipynb").write_text(nbformat.writes(unfilled)[:2048])
                kinds[name] = kind
                continue
            nb = copy.deepcopy(solution)
            answers = [c for c in nb.cells if "otter_answer_cell" in c.metadata.get("tags", [])]
            answers[0].source = BROKEN[which] + "\n" + answers[0].source
        nbformat.write(nb, dest / f"{name}.ipynb")
        kinds[name] = kind
    return kinds


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lab", default="3", help="a lab (1, 01, lab1 or 01-name), or all: every lab's in one batch")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--workers", type=int, default=0)
    ap.add_argument("--out", type=Path, default=HERE / "results")
    ap.add_argument("--name", default="grading_batch", help="results file name, without .json/.md")
    a = ap.parse_args()
    masters = autograder.masters() if a.lab == "all" else [autograder.find_master(a.lab)]
    loads: list[tuple[float, float]] = []
    stop = threading.Event()

    def sample():
        t0 = time.monotonic()
        while not stop.is_set():
            loads.append((round(time.monotonic() - t0), float(Path("/proc/loadavg").read_text().split()[0])))
            stop.wait(10)

    with tempfile.TemporaryDirectory(prefix="mlab-bench-") as tmp:
        subs = Path(tmp) / "subs"
        subs.mkdir()
        kinds: dict[str, str] = {}
        for k, master in enumerate(masters):
            ag = autograder.autograder_for(master, Path(tmp) / "assign")
            made = make_batch(ag, subs, range(k, a.count, len(masters)))
            kinds.update({name: kind if len(masters) == 1 else f"{master.stem[:2]}:{kind}" for name, kind in made.items()})
        opt = batch.Options(workers=a.workers)
        threading.Thread(target=sample, daemon=True).start()
        load_before = os.getloadavg()
        cpu_before = _children_cpu()
        start = time.monotonic()
        done: list[dict] = []
        todo = sorted(subs.glob("*.ipynb"))
        lab = "+".join(m.stem for m in masters)

        def progress(r):  # every 10 notebooks, so a run cut short still leaves its numbers
            done.append(r)
            if len(done) % 10 == 0 and len(done) < len(todo):
                write(a, lab, done, kinds, opt, time.monotonic() - start, _children_cpu() - cpu_before, loads,
                      load_before, len(todo))

        intake.grade_all(todo, Path(tmp) / "grades", opt, lab=None if a.lab == "all" else a.lab,
                         build=Path(tmp) / "assign", on_result=progress)
        write(a, lab, done, kinds, opt, time.monotonic() - start, _children_cpu() - cpu_before, loads, load_before,
              len(todo))
        stop.set()
    return 0


def _children_cpu() -> float:
    """CPU seconds of every finished sandbox (runner, kernel, checker, oracle and what they started)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def write(a, lab, results, kinds, opt, wall, cpu, loads, load_before, planned) -> None:
    by_kind: dict[str, list[dict]] = {}
    for r in results:
        by_kind.setdefault(kinds[Path(r["submission"]).stem], []).append(r)
    summary = {
        "lab": lab, "count": len(results), "planned": planned, "workers": opt.workers or os.cpu_count(), "cores": os.cpu_count(),
        "wall_s": round(wall, 1), "notebooks_per_min": round(60 * len(results) / wall, 2),
        "per_notebook_s": {"median": round(statistics.median(r["seconds"] for r in results), 1),
                           "max": max(r["seconds"] for r in results)},
        "grader_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10,
        # What a notebook costs whatever the load; 2 cores x 60 / this = notebooks/min on an idle machine.
        "cpu_s_per_notebook": round(cpu / max(1, len(results)), 1),
        "largest_cgroup_peak_mb": max((r.get("execution") or {}).get("memory_peak_mb") or 0 for r in results),
        "load_before": [round(x, 2) for x in load_before],
        "load_during": {"mean": round(statistics.mean(x for _, x in loads), 2), "max": max(x for _, x in loads)},
        "load_samples": loads,
        "by_kind": {k: {"n": len(v), "score_mean": round(statistics.mean(r["score"] for r in v), 2),
                        "possible": v[0]["possible"], "grader_errors": sum(r["status"] == "grader-error" for r in v),
                        "seconds_median": round(statistics.median(r["seconds"] for r in v), 1)} for k, v in sorted(by_kind.items())},
        "limits": opt.limits.__dict__, "python": sys.version.split()[0],
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    a.out.mkdir(parents=True, exist_ok=True)
    (a.out / f"{a.name}.json").write_text(json.dumps(summary, indent=1) + "\n")
    lines = [f"# Grading benchmark: {summary['count']} of {planned} {summary['lab']} notebooks graded", "",
             f"{summary['date']}, {summary['cores']} cores shared with other work, {summary['workers']} workers.", "",
             "| wall | notebooks/min | median s/notebook | CPU s/notebook | grader peak RSS | largest submission cgroup peak | load (1 min) before / mean / max |",
             "|---|---|---|---|---|---|---|",
             f"| {summary['wall_s']:.0f} s | {summary['notebooks_per_min']} | {summary['per_notebook_s']['median']} | "
             f"{summary['cpu_s_per_notebook']} | "
             f"{summary['grader_max_rss_mb']} MiB | {summary['largest_cgroup_peak_mb']} MiB | "
             f"{summary['load_before'][0]} / {summary['load_during']['mean']} / {summary['load_during']['max']} |", "",
             "| kind | n | mean score | possible | grader errors | median s |", "|---|---|---|---|---|---|"]
    for k, v in summary["by_kind"].items():
        lines.append(f"| {k} | {v['n']} | {v['score_mean']} | {v['possible']:g} | {v['grader_errors']} | {v['seconds_median']} |")
    (a.out / f"{a.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


if __name__ == "__main__":
    sys.exit(main())
