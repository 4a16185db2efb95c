"""Grade a batch of submissions: execute sandboxed, check sandboxed, report; in parallel.

Each submission is read once as data (`files.read_submission`: no link, FIFO, device, directory
or second name of another file is read; each of those is its own 0 row with the reason), into the
batch's work directory, from which its sandbox makes the notebook's copy; the original file is
never opened for writing, and its SHA-256 is compared before and after to prove it.
Everything the grader keeps (values, executed notebook, reports) it writes itself into
directories it created, opened without following links: the student's copy is never read back.
A submission that crashes, hangs, eats memory or floods output gets the score its values earn
(often 0) and a report saying what happened; the batch always moves on.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import answer_keys, cgroup, identity, leftovers, reference, report, sandbox
from .files import Oversized, Refused, open_dir, read_submission, write_in
from .autograder import Autograder

VALUES_INSIDE = "/grading/values"


@dataclass
class Options:
    limits: sandbox.Limits = field(default_factory=sandbox.Limits)
    cell_timeout: int = 120
    max_output: int = 1_000_000
    check_timeout: int = 120
    workers: int = 0  # 0: one per core
    values_mb: int = 512  # all values of one submission together
    notebook_mb: int = 32  # largest notebook file graded, and largest executed notebook sent back
    secret: bytes | None = None  # the instructor's (--secret-file): seeds the unseen inputs; None: a one-off
    drawn: str = ""  # the lab's unseen inputs and answers for the checkers (grade_batch: reference.request)


def student_id(path: Path, lab_stem: str) -> str:
    """alice.ipynb -> alice; alice/01-send-buffer.ipynb -> alice (the notebook kept its lab name)."""
    name = path.parent.name if path.stem == lab_stem else path.stem
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._") or "submission"


GRADEBOOK = "gradebook.csv"
# Names of the files the grader writes beside or inside a student's folder: no student id is one
# of them (`gradebook.csv.ipynb` once wrote its report where the gradebook goes and crashed the batch).
RESERVED = frozenset({GRADEBOOK, "report.json", "report.md", "executed.ipynb"})


def unique_ids(paths: list[Path], lab_stem: str) -> list[str]:
    """One id per submission; when two map to the same id (`q_dup a`, `q_dup_a`) the later ones get
    `-2`, `-3`... and grade_batch says so in both reports and the gradebook. An id that is one of
    the grader's own file names gets `-2` as well (grade_batch does not run it)."""
    seen: dict[str, int] = {name: 1 for name in RESERVED}
    out = []
    for p in paths:
        sid = student_id(p, lab_stem)
        n = seen.get(sid.lower(), 0) + 1
        seen[sid.lower()] = n
        while n > 1 and f"{sid}-{n}".lower() in seen:
            n += 1
        out.append(sid if n == 1 else f"{sid}-{n}")
        if n > 1:
            seen[f"{sid}-{n}".lower()] = 1
    return out


# ---------------------------------------------------------------- capped reading of the sandboxes

class Tail:
    """Drains a pipe in a thread and keeps only its last `keep` bytes: a flood costs nothing."""

    def __init__(self, stream, keep: int = 8192):
        self.keep, self.data, self.total = keep, b"", 0
        self.thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self.thread.start()

    def _drain(self, stream):
        for chunk in iter(lambda: stream.read(65536), b""):
            self.total += len(chunk)
            self.data = (self.data + chunk)[-self.keep:]

    def text(self) -> str:
        self.thread.join(timeout=30)
        return self.data.decode(errors="replace")


def read_exactly(stream, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = stream.read(min(n - len(buf), 1 << 20))
        if not chunk:
            raise EOFError
        buf += chunk
    return bytes(buf)


FRAME_CAPS = {b"S": 4 << 20, b"I": 4 << 20}


def read_frames(stream, values_fd: int, value_cap: int, total_cap: int, notebook_cap: int = 32 << 20) -> dict:
    """The runner's frames (see execute.py): status, notebook and index kept in memory (capped),
    values streamed into files of the grader's values directory. Anything malformed ends reading."""
    got: dict = {"values": {}, "funcs": {}, "problems": []}
    total = 0
    n = 0
    try:
        while True:
            head = stream.read(9)
            if not head:
                break
            if len(head) < 9:
                head += read_exactly(stream, 9 - len(head))
            kind, size = head[:1], struct.unpack("!Q", head[1:])[0]
            cap = {**FRAME_CAPS, b"N": notebook_cap}.get(kind, value_cap + 4096 if kind in (b"V", b"F") else 0)
            if size > cap or (kind in (b"V", b"F") and total + size > total_cap):
                got["problems"].append(f"runner frame {kind!r} of {size} bytes over its cap")
                break
            data = read_exactly(stream, size)
            if kind == b"S":
                got["status"] = json.loads(data)
            elif kind == b"N":
                got["notebook"] = data
            elif kind == b"I":
                got["index"] = json.loads(data)
            elif kind in (b"V", b"F"):
                (ln,) = struct.unpack("!H", data[:2])
                name = data[2:2 + ln].decode()
                if not name.isidentifier():
                    continue
                n += 1
                fname = f"{n}.pkl"
                write_in(values_fd, fname, data[2 + ln:])
                got["values" if kind == b"V" else "funcs"][name] = fname
                total += size
    except (EOFError, ValueError, struct.error, UnicodeDecodeError) as exc:
        got["problems"].append(f"runner output cut short ({type(exc).__name__})")
    for _ in iter(lambda: stream.read(65536), b""):  # drain whatever is left, unread
        pass
    return got


def run_sandboxed(cmd: list[str], stdin: bytes | None, on_stdout, wall_s: int, pass_fds=(), started=None) -> tuple[int, str]:
    """Run a sandbox command; stdout goes to on_stdout(stream), stderr keeps its last 8 KiB.
    started(), if given, once the sandbox holds pass_fds (e.g. to close the grader's copies)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=pass_fds)
    if started:
        started()
    err = Tail(proc.stderr)
    if stdin is not None:
        def feed():
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except OSError:
                pass
        threading.Thread(target=feed, daemon=True).start()
    try:
        on_stdout(proc.stdout)
        rc = proc.wait(timeout=wall_s + 30)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
    return rc, err.text()


def _read_capped(stream, cap: int) -> bytes:
    data = stream.read(cap + 1)
    if len(data) > cap:
        for _ in iter(lambda: stream.read(65536), b""):
            pass
        return b""
    return data


# ---------------------------------------------------------------- one submission

def _not_graded(result: dict, points: dict[str, float], why: str) -> dict:
    """A row of zeros for a submission that was not run, with the reason its report gives."""
    result["status"] = "not graded"
    result["questions"] = [{"question": q, "score": 0.0, "possible": p, "cases": [], "not_graded": True}
                           for q, p in sorted(points.items())]
    result["possible"] = sum(points.values())
    result["problems"].append(why)
    return result


def grade_one(submission: Path, sid: str, ag: Autograder, tests: dict[str, str], out: Path, opt: Options,
              hidden_keys: dict[str, str], skipped: dict[str, str], work: Path, batch_token: str,
              refuse: str | None = None) -> dict:
    """Grade one submission; `refuse`: a reason not to run it at all (its row says so)."""
    result: dict = {"student": sid, "submission": str(submission), "lab": ag.stem, "questions": [],
                    "score": 0.0, "possible": sum(ag.points().values()), "problems": [], "internal": [],
                    "written": ag.written()}
    started = time.monotonic()
    try:
        if refuse:
            raise Refused(refuse)
        data = read_submission(submission, opt.notebook_mb << 20)  # as data: no link, FIFO or second name
    except (Refused, Oversized) as exc:  # not run at all: its own row says why
        why = (f"{submission.name}: {exc.args[0]}: not graded" + ("" if refuse else "; hand in the notebook file itself")
               if isinstance(exc, Refused)
               else f"your notebook file is {exc.args[0] / 2**20:.1f} MiB; the grader takes notebooks up to "
                    f"{opt.notebook_mb} MiB: clear its outputs (Edit > Clear Outputs of All Cells), save and hand it in again")
        _not_graded(result, ag.points(), why)
        result["seconds"] = round(time.monotonic() - started, 1)
        report.write(result, out / sid, tests)
        return result
    before = hashlib.sha256(data).hexdigest()
    tmp = Path(tempfile.mkdtemp(prefix="submission-", dir=work))  # root-owned 0700; the sandboxes see only what is bound
    copy = tmp / "submission.ipynb"
    copy.write_bytes(data)  # the sandbox copies the grader's copy, never the original's path
    del data
    cg = None
    lease = contextlib.ExitStack()
    try:
        uid = lease.enter_context(identity.lease())  # this submission's own, for its kernel, checker and oracle
        values = tmp / "values"
        values.mkdir(mode=0o755)
        vfd = open_dir(values)
        cg = cgroup.create(opt.limits.tree_memory_mb, opt.limits.nproc, opt.limits.socket_mb, batch_token)
        notebooks = Path(sandbox.REPO_ROOT) / "notebooks"
        spec = sandbox.Spec(submission=str(copy), notebook_name=f"{ag.stem}.ipynb",
                            readonly=hidden_keys, cwd=str(notebooks), cgroup_procs=cg.procs,
                            uid=uid, limits=opt.limits)
        got: dict = {}
        rc, err = run_sandboxed(
            sandbox.command(spec, [sys.executable, "-I", "-m", "mptcplab.grading.execute", str(notebooks / spec.notebook_name),
                                   "--cell-timeout", str(opt.cell_timeout), "--deadline", str(max(30, opt.limits.wall_s - 30)),
                                   "--max-output", str(opt.max_output), "--value-cap", str(opt.limits.file_mb << 20),
                                   "--total-cap", str(opt.values_mb << 20), "--notebook-cap", str(opt.notebook_mb << 20)]),
            None, lambda s: got.update(read_frames(s, vfd, opt.limits.file_mb << 20, opt.values_mb << 20, opt.notebook_mb << 20)),
            opt.limits.wall_s)
        cg.kill()  # nothing the notebook started outlives its run
        t_exec = time.monotonic() - started
        result["execution"] = {"memory_peak_mb": (cg.memory_peak() or 0) >> 20, "oom_killed": cg.oom_killed(),
                               "socket_peak_mb": None if cg.socket_peak() is None else cg.socket_peak() >> 20,
                               "exit": rc, "cgroup": [str(d) for d in cg.dirs], "uid": uid}
        status = got.get("status") or {}
        if got.get("problems"):
            result["internal"] += got["problems"]
        if rc in (137, -9, 124) and not status:
            result["problems"].append(f"stopped at the {opt.limits.wall_s} s limit for the whole notebook")
        elif not status:
            result["problems"].append("the notebook could not be run to the end (the runner stopped); "
                                      "try running it top to bottom yourself")
            result["internal"].append(f"runner exit {rc}: {err[-1500:]}")
        index = got.get("index") or {}
        write_in(vfd, "index.json", json.dumps({"values": got.get("values", {}), "funcs": got.get("funcs", {}),
                                                **{k: index.get(k, {}) for k in ("refs", "oversized", "unsaved")}}).encode())
        os.close(vfd)
        result["execution"].update({k: status.get(k) for k in ("executed", "seconds", "env_saved")})
        result["status_raw"] = {k: v for k, v in status.items() if k != "cell_errors"}
        if cg.oom_killed():
            result["problems"].append(f"the notebook's processes together went over {opt.limits.tree_memory_mb} MiB "
                                      "of memory; the biggest was stopped")

        qfile = json.dumps({"tests": tests, "drawn": opt.drawn}).encode()
        check_spec = sandbox.Spec(readonly={VALUES_INSIDE: str(values), **skipped}, cwd="/", cgroup_procs=cg.procs, uid=uid,
                                  limits=sandbox.Limits(**{**opt.limits.__dict__, "wall_s": opt.check_timeout}))
        argv = [sys.executable, "-I", "-m", "mptcplab.grading.checker", VALUES_INSIDE]
        box: dict = {}
        ours = theirs = None

        def close_ends():  # the grader's copies: the checker sees EOF when the oracle ends
            for end in (ours, theirs):
                if end is not None:
                    end.close()

        if got.get("funcs"):
            # The student's functions answer the checker from the oracle, forked in the checker's
            # sandbox into namespaces of its own, where the answer keys are redacted as the kernel
            # saw them (the checker's view shows the real ones): `sandbox.fork_oracle`.
            ours, theirs = socket.socketpair()
            check_spec = replace(check_spec, oracle_fd=theirs.fileno(), oracle_values=VALUES_INSIDE,
                                 oracle_readonly={k: v for k, v in hidden_keys.items() if check_spec.readonly.get(k) != v})
            argv += ["--oracle-fd", str(ours.fileno())]
        try:
            crc, cerr = run_sandboxed(sandbox.command(check_spec, argv), qfile, lambda s: box.update(raw=_read_capped(s, 16 << 20)),
                                      opt.check_timeout, pass_fds=(ours.fileno(), theirs.fileno()) if ours else (),
                                      started=close_ends)
        finally:
            close_ends()
            cg.kill()
        result["execution"]["seconds_execute"] = round(t_exec, 1)
        result["execution"]["seconds_check"] = round(time.monotonic() - started - t_exec, 1)
        try:
            checked = json.loads(box.get("raw") or b"")
        except ValueError:
            raise RuntimeError(f"the checker failed (exit {crc}): {cerr[-800:]}") from None
        result["questions"] = checked["questions"]
        result["skipped_values"] = checked.get("skipped", {})
        if checked.get("note"):
            result["problems"].append(checked["note"])
        report.apply_template(result, ag, got.get("notebook"), status, opt)
        result["score"] = sum(q["score"] for q in result["questions"])
        result["possible"] = sum(q["possible"] for q in result["questions"]) or result["possible"]
        if got.get("notebook"):
            dfd = open_dir(out / sid)
            try:
                write_in(dfd, "executed.ipynb", got["notebook"])
            finally:
                os.close(dfd)
        result["status"] = "ok" if not result["problems"] else "problems"
    except Exception as exc:  # the grader's own trouble with this submission: report it, keep going
        result["status"] = "grader-error"
        result["problems"].append("grading failed on the grader's side; your instructor has the details")
        result["internal"].append(f"{type(exc).__name__}: {exc}")
    finally:
        if cg is not None:
            cg.remove()  # every process of the UID was in the cgroup: none is left when the lease ends
        lease.close()  # and its keyrings are cleared
        shutil.rmtree(tmp, ignore_errors=True)
    result["seconds"] = round(time.monotonic() - started, 1)
    result["submission_sha256"] = before
    try:
        after = hashlib.sha256(read_submission(submission, opt.notebook_mb << 20)).hexdigest()
    except (Refused, Oversized):
        after = None
    if after != before:  # cannot happen by design; checked so the claim is tested, not assumed
        result["status"] = "grader-error"
        result["problems"].append("THE SUBMISSION FILE CHANGED DURING GRADING")
    report.write(result, out / sid, tests)
    return result


def write_gradebook(results: list[dict], questions: list[str], path: Path) -> None:
    """One row per submission: the checked questions' scores and their automatic total, possible and
    percent; then one empty column per written question (`manual: true`, each student's text in their
    report.md) for the instructor's marks, and the points they carry; `not_graded`: why a submission
    was not run (its own row, 0 points)."""
    questions = sorted(questions, key=report.natural)
    written = sorted({q: p for r in results for q, p in (r.get("written") or {}).items()}.items(),
                     key=lambda qp: report.natural(qp[0]))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "lab", *questions, "automatic_total", "automatic_possible", "automatic_percent",
                    *[q for q, _ in written], "written_possible", "status", "problems", "submission", "not_graded"])
        for r in results:
            per = {q["question"]: q["score"] for q in r["questions"]}
            pct = round(100 * r["score"] / r["possible"], 1) if r["possible"] else 0
            why = r["problems"][0] if r["status"] == "not graded" else ""
            w.writerow([r["student"], r["lab"], *[f"{per.get(q, 0):g}" for q in questions], f"{r['score']:g}",
                        f"{r['possible']:g}", pct, *[""] * len(written), f"{sum(p for _, p in written):g}",
                        r["status"], len(r["problems"]), r["submission"], why])


def grade_batch(submissions: list[Path], ag: Autograder, out: Path, opt: Options | None = None,
                on_result=None, refuse: dict[Path, str] | None = None) -> list[dict]:
    """Grade every submission, `opt.workers` at a time (default: one per core); results in input order.
    on_result(result), if given, is called as each one finishes (progress, benchmarks). `refuse`:
    submissions not to run, each with the reason its 0 row gives (e.g. it names another lab).
    Whatever a file is (a link, a FIFO, garbage, a name the grader uses), it gets its own row and the
    gradebook is written."""
    opt = opt or Options()
    out.mkdir(parents=True, exist_ok=True)
    tests = ag.tests()
    ids = unique_ids(submissions, ag.stem)
    refuse = dict(refuse or {})
    for path, sid in zip(submissions, ids):
        base = student_id(path, ag.stem)
        if base.lower() in RESERVED:
            refuse.setdefault(path, f"its name gives the student id {base}, the name of a file the grader writes")
    workers = opt.workers or os.cpu_count() or 1
    done = [0]
    lock = threading.Lock()
    with leftovers.workdir() as (work, token):
        keys_dir = work / "keys"
        keys_dir.mkdir(mode=0o755)
        hidden = answer_keys.redacted_files(keys_dir)
        skipped = answer_keys.skipped(keys_dir)
        if not opt.drawn:  # once per batch, here: the real answer keys, before any submission runs
            opt = replace(opt, drawn=reference.request(ag.stem, opt.secret or os.urandom(32)))

        def one(i: int) -> dict:
            r = grade_one(submissions[i], ids[i], ag, tests, out, opt, hidden, skipped, work, token,
                          refuse.get(submissions[i]))
            with lock:
                done[0] += 1
                print(f"[{done[0]}/{len(submissions)}] {ids[i]}: {r['score']:g}/{r['possible']:g} automatic points, "
                      f"{r['status']} ({r['seconds']} s)", file=sys.stderr, flush=True)
                if on_result:
                    on_result(r)
            return r

        with ThreadPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(one, range(len(submissions))))
    for i, sid in enumerate(ids):
        base = student_id(submissions[i], ag.stem)
        if sid != base and base.lower() not in RESERVED:  # say it where the instructor and both students look
            twin = next(r for r in results if r["student"] == base)
            print(f"  two submissions map to the id {base!r}: {twin['submission']} ({base}) and {submissions[i]} ({sid})",
                  file=sys.stderr)
            for r in (results[i], twin):
                r["problems"].append(f"another submission has the same student id ({base}); this one is listed as "
                                     f"{r['student']} in the gradebook: tell your instructor if that is not you")
                r["internal"].append(f"id collision: {twin['submission']} -> {base}, {submissions[i]} -> {sid}")
                report.write(r, out / r["student"], tests)
    write_gradebook(results, sorted(ag.points()), out / GRADEBOOK)
    return results


def not_graded_batch(submissions: list[Path], reasons: dict[Path, str], lab: str, out: Path) -> list[dict]:
    """Rows (0 points, each with its reason) and reports for submissions no lab's autograder takes,
    e.g. files of a mixed batch whose lab cannot be told; the gradebook is written as for a lab."""
    out.mkdir(parents=True, exist_ok=True)
    results = []
    for path, sid in zip(submissions, unique_ids(submissions, "")):
        r = _not_graded({"student": sid, "submission": str(path), "lab": lab, "questions": [], "score": 0.0,
                         "possible": 0.0, "problems": [], "internal": []}, {}, f"{path.name}: {reasons[path]}: not graded")
        report.write(r, out / sid, {})
        results.append(r)
    write_gradebook(results, [], out / GRADEBOOK)
    return results
