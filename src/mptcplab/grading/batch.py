"""Grade a batch of submissions: copy, execute sandboxed, check sandboxed, report.

Each submission is read once (copied into a private directory); the original file is never opened
for writing, and its SHA-256 is compared before and after to prove it. A submission that crashes,
hangs, eats memory or floods output gets the score its values earn (often 0) and a report saying
what happened; the batch always moves on to the next one.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import sandbox
from .autograder import Autograder

OUT_DIR = "mptcplab.grading"


@dataclass
class Options:
    user: str = "nobody"
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    cell_timeout: int = 120
    max_output: int = 1_000_000
    check_timeout: int = 120


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def student_id(path: Path, lab_stem: str) -> str:
    """alice.ipynb -> alice; alice/01-send-buffer.ipynb -> alice (the notebook kept its lab name)."""
    name = path.parent.name if path.stem == lab_stem else path.stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "submission"


def read_untrusted(path: Path, limit: int = 8 << 20) -> bytes | None:
    """Read a file the sandbox wrote, refusing symlinks, non-regular files and oversize content."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _tail(path: Path, n: int = 4000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, path.stat().st_size - n))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def grade_one(submission: Path, ag: Autograder, tests: dict[str, str], out: Path, opt: Options) -> dict:
    sid = student_id(submission, ag.stem)
    result: dict = {"student": sid, "submission": str(submission), "lab": ag.stem, "questions": [],
                    "score": 0.0, "possible": sum(ag.points().values()), "problems": []}
    before = sha256(submission)
    tmp = Path(tempfile.mkdtemp(prefix="mlab-grade-"))  # root-owned 0700: the sandbox reaches it only by fd
    user = pwd.getpwnam(opt.user)
    started = time.monotonic()
    try:
        work = tmp / "work"
        work.mkdir()
        shutil.copyfile(submission, work / f"{ag.stem}.ipynb")
        (work / ".mlab-out").mkdir()
        for p in (work, work / ".mlab-out", work / f"{ag.stem}.ipynb"):
            os.chown(p, user.pw_uid, user.pw_gid)
        spec = sandbox.Spec(workdir=str(work), user=opt.user, limits=opt.limits)
        inside = Path(spec.repo) / "notebooks"
        log = tmp / "execute.log"
        with open(log, "wb") as logf:
            proc = subprocess.run(sandbox.command(spec, [sys.executable, "-m", "mptcplab.grading.execute",
                                                         str(inside / f"{ag.stem}.ipynb"), str(inside / ".mlab-out"),
                                                         "--cell-timeout", str(opt.cell_timeout),
                                                         "--max-output", str(opt.max_output)]),
                                  stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT)
        raw = read_untrusted(work / ".mlab-out" / "status.json", 1 << 20)
        status = {}
        if raw:
            try:
                status = json.loads(raw)
            except ValueError:
                status = {}
        if proc.returncode in (137, -9, 124):
            result["problems"].append(f"killed at the {opt.limits.wall_s} s time limit for the whole notebook")
        elif not status:
            result["problems"].append(f"the notebook runner stopped without a status (exit {proc.returncode}): "
                                      + _tail(log, 600).strip()[-600:])
        for index in status.get("timed_out_cells", []):
            result["problems"].append(f"cell {index} ran longer than {opt.cell_timeout} s and was stopped "
                                      "(the cells after it still ran)")
        if status.get("fatal"):
            result["problems"].append(_explain_fatal(status["fatal"], opt))
        if status.get("output_truncated"):
            result["problems"].append(f"output beyond {opt.max_output} bytes was dropped")
        for err in status.get("cell_errors", []):
            if err["ename"] == "KeyboardInterrupt":  # what nbclient's interrupt at the cell time limit raises
                result["problems"].append(f"cell {err['cell']} ran longer than {opt.cell_timeout} s and was "
                                          "interrupted (the cells after it still ran)")
                continue
            result["problems"].append(f"cell {err['cell']} raised {err['ename']}: {err['evalue']}")
        result["execution"] = {k: status.get(k) for k in ("executed", "seconds", "env_saved")}

        check_spec = sandbox.Spec(workdir=str(work), user=opt.user,
                                  limits=sandbox.Limits(**{**opt.limits.__dict__, "wall_s": opt.check_timeout}))
        chk = subprocess.run(sandbox.command(check_spec, [sys.executable, "-m", "mptcplab.grading.checker",
                                                          str(inside / ".mlab-out" / "env.pkl")]),
                             input=json.dumps(tests).encode(), capture_output=True)
        try:
            checked = json.loads(chk.stdout)
        except ValueError:
            raise RuntimeError(f"the checker failed (exit {chk.returncode}): {chk.stderr.decode(errors='replace')[-800:]}")
        result["questions"] = checked["questions"]
        result["skipped_values"] = checked.get("skipped", {})
        if checked.get("note"):
            result["problems"].append(checked["note"])
        result["score"] = sum(q["score"] for q in result["questions"])
        result["possible"] = sum(q["possible"] for q in result["questions"]) or result["possible"]
        executed = read_untrusted(work / ".mlab-out" / "executed.ipynb", 32 << 20)
        dest = out / sid
        dest.mkdir(parents=True, exist_ok=True)
        if executed:
            (dest / "executed.ipynb").write_bytes(executed)
        result["status"] = "ok" if not result["problems"] else "problems"
    except Exception as exc:  # the grader's own trouble with this submission: report it, keep going
        result["status"] = "grader-error"
        result["problems"].append(f"grading failed: {type(exc).__name__}: {exc}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - started, 1)
    after = sha256(submission)
    result["submission_sha256"] = before
    if after != before:  # cannot happen by design; checked so the claim is tested, not assumed
        result["status"] = "grader-error"
        result["problems"].append("THE SUBMISSION FILE CHANGED DURING GRADING")
    write_report(result, out / sid)
    return result


def _explain_fatal(fatal: str, opt: Options) -> str:
    if "DeadKernelError" in fatal:
        return (f"the Python kernel died (memory limit {opt.limits.memory_mb} MiB, file-size limit "
                f"{opt.limits.file_mb} MiB, or the notebook exited); later cells did not run")
    return f"the notebook could not be run: {fatal}"


def _pts(x: float) -> str:
    return f"{round(x, 2):g}"


def _explain(message: str) -> str:
    m = re.match(r"NameError: name '(\w+)' is not defined", message)
    if m:
        return f"`{m[1]}` is not defined: the cell that sets it did not run or failed (see below)"
    return message.removeprefix("AssertionError: ")


def write_report(r: dict, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    (dest / "report.json").write_text(json.dumps(r, indent=1))
    pct = 100 * r["score"] / r["possible"] if r["possible"] else 0
    lines = [f"# {r['lab']}: grade for {r['student']}", "",
             f"**Score: {_pts(r['score'])} / {_pts(r['possible'])} ({pct:.0f}%)**", "",
             "| question | score | feedback |", "|---|---|---|"]
    for q in r["questions"]:
        public_fail = list(dict.fromkeys(_explain(c["message"]) for c in q["cases"] if not c["passed"] and not c["hidden"]))
        hidden_fail = sum(1 for c in q["cases"] if not c["passed"] and c["hidden"])
        notes = public_fail[:3] + ([f"{hidden_fail} hidden check(s) failed"] if hidden_fail else [])
        text = "; ".join(n.replace("|", "\\|").replace("\n", " ") for n in notes) or "all checks passed"
        lines.append(f"| {q['question']} | {_pts(q['score'])} / {_pts(q['possible'])} | {text} |")
    if not r["questions"]:
        lines.append("| (none) | 0 | no check could be run |")
    lines += ["", "## What happened when your notebook ran", ""]
    lines += [f"- {p}" for p in r["problems"]] or ["- it ran to the end without errors"]
    if r.get("skipped_values"):
        lines += ["", "Values the checks could not use (functions and objects the notebook defined are not "
                  "carried over; checks read data only):", ""]
        lines += [f"- `{k}`: {v}" for k, v in sorted(r["skipped_values"].items())[:20]]
    lines += ["", f"_Graded in {r.get('seconds', 0)} s in a sandbox (no network, unprivileged, time- and "
              f"memory-limited). Submission SHA-256 {r['submission_sha256'][:16]}… unchanged._"]
    (dest / "report.md").write_text("\n".join(lines) + "\n")


def write_gradebook(results: list[dict], questions: list[str], path: Path) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "lab", *questions, "total", "possible", "percent", "status", "problems", "submission"])
        for r in results:
            per = {q["question"]: q["score"] for q in r["questions"]}
            pct = round(100 * r["score"] / r["possible"], 1) if r["possible"] else 0
            w.writerow([r["student"], r["lab"], *[f"{per.get(q, 0):g}" for q in questions], f"{r['score']:g}",
                        f"{r['possible']:g}", pct, r["status"], len(r["problems"]), r["submission"]])


def grade_batch(submissions: list[Path], ag: Autograder, out: Path, opt: Options | None = None) -> list[dict]:
    opt = opt or Options()
    out.mkdir(parents=True, exist_ok=True)
    tests = ag.tests()
    results = []
    used: set[str] = set()
    for i, sub in enumerate(submissions, 1):
        sid = student_id(sub, ag.stem)
        print(f"[{i}/{len(submissions)}] {sid}: {sub}", file=sys.stderr, flush=True)
        if sid in used:
            print(f"  two submissions map to {sid!r}; grading the first only", file=sys.stderr)
            continue
        used.add(sid)
        r = grade_one(sub, ag, tests, out, opt)
        print(f"  {r['score']:g}/{r['possible']:g} {r['status']} ({r['seconds']} s)", file=sys.stderr, flush=True)
        results.append(r)
    write_gradebook(results, sorted(ag.points()), out / "gradebook.csv")
    return results
