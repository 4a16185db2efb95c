"""Execute one student notebook (inside the sandbox) and hand back what it computed.

    python -I -m mptcplab.grading.execute NOTEBOOK --cell-timeout S --deadline S --max-output BYTES

No test is present while student code runs: the sandbox holds no autograder, and the checks run
later in a separate sandbox (`mptcplab.grading.checker`); `import otter` gives the notebook a
stand-in whose `grader.check` only says so (SETUP_SOURCE). Here the cells run one by one (errors do
not stop the run, as in Otter); then each global value is pickled into its own file on a tmpfs of
its own (not the student's /tmp), with a size cap per value, and this runner sends everything back to the
grader over its own stdout, which nothing else in the sandbox holds:

- before the kernel starts, stdout is moved to a private close-on-exec descriptor and fds 1/2
  point at /dev/null, so the kernel and anything it spawns inherit /dev/null; the runner makes
  itself non-dumpable, so same-user processes cannot open its descriptors through /proc;
- the grader therefore never reads a file from the student-writable copy (no link to follow);
- SIGINT is ignored here (a notebook that signals its parent loses nothing); a cell that ignores
  its own interrupt at the cell time limit stops the run, and a thread started in the kernel
  before any student code saves the values computed so far.

Frames on the result channel: one type byte, an 8-byte big-endian length, the payload.
`S` status JSON, `N` the executed notebook (JSON), `V` one value (2-byte name length, name, pickle),
`F` one student function (dill), `I` the value index JSON (names that could not be saved and why).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import struct
import sys
import time
from pathlib import Path

VALUES = "/var/mlab-values"  # a tmpfs of its own (sandbox.VALUES): a notebook that fills /tmp loses no value
FIFO = VALUES + "/.snapshot"
DROPPED = "[mptcplab grade: output beyond %d bytes dropped]"
DROPPED_RICH = "[mptcplab grade: figures and tables beyond %d MiB dropped]"

# Run in a namespace of its own (exec with fresh globals), so the names a notebook binds (a
# student's `isinstance` or `len`) never replace what the runner's code calls.
SETUP_CELL = '''exec(%r, {"__name__": "mlab_setup"})'''
SETUP_SOURCE = r'''
def _mlab_setup(_dir, _fifo, _cap, _out_cap):
    import os as _os, pickle as _pickle, sys as _sys, threading as _threading, types as _types, json as _json

    class _Capped:
        def __init__(self, f):
            self.f, self.n = f, 0
        def write(self, b):
            self.n += len(b)
            if self.n > _cap:
                raise OverflowError(self.n)
            return self.f.write(b)

    saved = {}  # name -> (id of the value saved, its index kind, its index entry)

    def _write(name, data_or_value, as_pickle):
        path = _os.path.join(_dir, name + ".pkl")
        with open(path + ".part", "wb") as f:
            if as_pickle:
                _pickle.dump(data_or_value, _Capped(f), protocol=4)
            else:
                f.write(data_or_value)
        _os.rename(path + ".part", path)
        return path

    def dump(incremental=False):
        # Per cell (incremental): only names bound to a new object since the last snapshot, so a
        # kernel that dies later (memory, os._exit) still leaves what earlier cells computed.
        # At the end: everything again (values changed in place are caught there).
        import __main__
        index = {"values": {}, "funcs": {}, "refs": {}, "oversized": {}, "unsaved": {}}
        for name, value in list(vars(__main__).items()):
            if name.startswith("_") or name in ("In", "Out", "exit", "quit", "get_ipython", "grader"):
                continue
            if incremental and name in saved and saved[name][0] == id(value):
                kind, entry = saved[name][1:]
                index[kind][name] = entry
                continue
            kind, entry = None, None
            if isinstance(value, _types.ModuleType):
                kind, entry = "refs", ["module", value.__name__, ""]
            elif isinstance(value, _types.FunctionType) and value.__module__ == "__main__":
                try:  # the student's own function, by value: the checker calls it in a separate process
                    import dill
                    data = dill.dumps(value, recurse=True)
                    if len(data) > _cap:
                        raise OverflowError(len(data))
                    kind, entry = "funcs", _write(name, data, False)
                except OverflowError as exc:
                    kind, entry = "oversized", exc.args[0]
                except Exception as exc:
                    kind, entry = "unsaved", type(exc).__name__
            elif isinstance(value, (type, _types.FunctionType, _types.BuiltinFunctionType)):
                kind, entry = "refs", ["object", getattr(value, "__module__", "") or "", getattr(value, "__qualname__", "")]
            else:
                try:
                    kind, entry = "values", _write(name, value, True)
                except OverflowError as exc:
                    kind, entry = "oversized", exc.args[0]
                except Exception:
                    kind, entry = "unsaved", type(value).__name__
                for leftover in (name + ".pkl.part",) + (() if kind == "values" else (name + ".pkl",)):
                    if _os.path.exists(_os.path.join(_dir, leftover)):
                        _os.unlink(_os.path.join(_dir, leftover))
            saved[name] = (id(value), kind, entry)
            index[kind][name] = entry
        with open(_os.path.join(_dir, "index.json.part"), "w") as f:
            _json.dump(index, f)
        _os.rename(_os.path.join(_dir, "index.json.part"), _os.path.join(_dir, "index.json"))

    def after_cell(result=None):
        try:
            dump(incremental=True)
        except BaseException:  # a full disk or memory: the previous snapshot stands
            pass

    def wait_for_request():  # the runner opens the FIFO when a cell ignores its interrupt
        with open(_fifo, "rb") as f:
            f.read(1)
        dump()

    # The output budget at its source: print() and friends stop sending once the notebook has
    # written _out_cap characters, so a flood is never queued between the kernel and the runner
    # (the runner caps again what arrives: a notebook may replace these streams).
    left = [_out_cap]

    def capped(stream):
        write = stream.write

        def capped_write(text):
            if left[0] <= 0:
                return len(text)
            left[0] -= len(text)
            if left[0] < 0:
                return write(text[:len(text) + left[0]] + "\n%s\n" %% _out_cap)
            return write(text)
        stream.write = capped_write

    for stream in (_sys.stdout, _sys.stderr):
        try:
            capped(stream)
        except (AttributeError, TypeError):
            pass
    from IPython import get_ipython
    get_ipython().events.register("post_run_cell", after_cell)
    _threading.Thread(target=wait_for_request, daemon=True, name="mlab-snapshot").start()
    _sys.modules["otter"] = _otter_stand_in()
    return dump


def _otter_stand_in():
    # What `import otter` gives the notebook while it is graded. The checker runs every check
    # afterwards in a sandbox of its own, so here `grader.check` would only repeat the public checks
    # (they call the student's functions on the shipped data: seconds of CPU per notebook), and
    # importing Otter itself costs ~2 s. It opens any file name: a renamed copy's first cell too.
    import types

    class Checked:
        def __init__(self, question):
            self.question = question

        def __repr__(self):
            return str(self.question) + ": checked by the grader after the notebook has run (see report.md)"

    class Notebook:
        def __init__(self, *args, **kwargs):
            pass

        def check(self, question=None, *args, **kwargs):
            return Checked(question)

        def __getattr__(self, name):  # check_all, export, ...: nothing to do while grading
            return lambda *args, **kwargs: None

    otter = types.ModuleType("otter", "Otter's stand-in while `mptcplab grade` runs the notebook")
    otter.Notebook = Notebook
    return otter

import __main__
__main__._mlab_dump = _mlab_setup(%r, %r, %d, %d)
'''


def _private_stdout() -> int:
    """Keep stdout for the result frames only; the kernel inherits /dev/null as fds 1 and 2."""
    out = os.dup(1)
    os.set_inheritable(out, False)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)
    return out


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0: same-uid processes can no longer ptrace us or open /proc/<pid>/fd."""
    import ctypes

    if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def frame(out, kind: bytes, payload: bytes) -> None:
    data = kind + struct.pack("!Q", len(payload)) + payload
    view = memoryview(data)
    while view:
        n = os.write(out, view)
        view = view[n:]


def sanitize(nb) -> list[dict]:
    """Cells a notebook runner cannot take (source not text, unknown type) become empty markdown
    cells, reported by their number (counted from 1) instead of stopping every cell."""
    import nbformat

    bad = []
    for i, cell in enumerate(nb.cells):
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        src = cell.get("source") if isinstance(cell, dict) else None
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            cell["source"] = src = "".join(src)
        if kind not in ("code", "markdown", "raw") or not isinstance(src, str):
            why = f"cell type {kind!r}" if kind not in ("code", "markdown", "raw") else f"its source is {type(src).__name__}, not text"
            bad.append({"cell": i + 1, "why": why})
            nb.cells[i] = nbformat.v4.new_markdown_cell("")
            continue
        if kind == "code":
            cell.setdefault("outputs", [])
            cell.setdefault("execution_count", None)
            if not isinstance(cell.get("outputs"), list):
                cell["outputs"] = []
        if not isinstance(cell.get("metadata"), dict):
            cell["metadata"] = {}
    return bad


def _client_class():
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        """Two output budgets, so a runaway print cannot exhaust the runner's memory and a notebook's
        figures are not taken for a flood: text (streams; errors past it if short) up to
        max_output_bytes, rich outputs (figures, tables) up to max_rich_bytes, the most the grader
        takes back as the executed notebook anyway. Lab 1's correct notebook shows ~1.2 MB of
        figures: with one budget for both, its last figures and tables were dropped and its row
        said `problems`."""

        max_output_bytes = 1_000_000
        max_rich_bytes = 32 << 20
        timed_out = False

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.used = {"text": 0, "rich": 0}
            self.dropped = {"text": False, "rich": False}

        async def _async_handle_timeout(self, timeout, cell=None):
            self.timed_out = True
            return await super()._async_handle_timeout(timeout, cell)

        def output(self, outs, msg, display_id, cell_index):
            kind = "text" if msg["msg_type"] in ("stream", "error") else "rich"
            cap = self.max_output_bytes if kind == "text" else self.max_rich_bytes
            size = len(json.dumps(msg.get("content", {}), default=str))
            self.used[kind] += size
            if self.used[kind] <= cap or (msg["msg_type"] == "error" and size < 20_000):
                return super().output(outs, msg, display_id, cell_index)
            if not self.dropped[kind]:
                self.dropped[kind] = True
                from nbformat.v4 import new_output

                what = DROPPED % cap if kind == "text" else DROPPED_RICH % (cap >> 20)
                outs.append(new_output("stream", name="stderr", text=f"{what}\n"))
            return None

    return CappedClient


TIMED_OUT = {"ename": "CellTimeout", "evalue": "the cell reached its time limit and was interrupted"}


def _extra(client, source: str, timeout: int):
    """Run a cell of the runner's own (setup, probe, dump) at the end of the notebook, then drop it
    (nbclient stores a cell at its index)."""
    import nbformat

    cell = nbformat.v4.new_code_cell(source)
    client.nb.cells.append(cell)
    client.timeout = timeout
    try:
        client.execute_cell(cell, len(client.nb.cells) - 1)
    finally:
        client.nb.cells.pop()
    return cell


def _run_cell(client, cell, index, timeout: float) -> str:
    """'ok', or 'timeout' (interrupted; the kernel answered), or 'stuck' (it ignored the interrupt)."""
    from nbclient.exceptions import CellTimeoutError

    client.timeout = max(1, int(timeout))
    client.timed_out = False
    try:
        client.execute_cell(cell, index)
    except CellTimeoutError:
        return "timeout"
    if not client.timed_out:
        return "ok"
    client.timed_out = False
    _extra(client, "pass", 10)  # answered only once the interrupted cell has really stopped
    return "stuck" if client.timed_out else "timeout"


def run(notebook: Path, cell_timeout: int, deadline_s: float, max_output: int, value_cap: int,
        rich_cap: int = 32 << 20) -> dict:
    import nbformat

    started = time.monotonic()
    status: dict = {"executed": False, "cell_errors": [], "timed_out_cells": [], "malformed_cells": [],
                    "output_truncated": False, "rich_truncated": False, "seconds": None}
    try:
        nb = nbformat.reads(notebook.read_text(errors="replace"), as_version=4)
        status["malformed_cells"] = sanitize(nb)
    except Exception as exc:  # not JSON, not a notebook: the submission itself is broken
        status["fatal"] = f"the file is not a readable notebook ({type(exc).__name__}: {str(exc)[:200]})"
        return status
    os.makedirs(VALUES, exist_ok=True)
    os.mkfifo(FIFO, 0o600)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    # capture_fd_output=False: what the kernel writes to fds 1/2 stays on /dev/null (see above)
    # instead of being forwarded as output messages, so an os.write() flood never queues up
    # inside the submission's memory limit; print() output still arrives, capped below.
    # shutdown_kernel="immediate": the kernel is killed once its values are saved, not asked to
    # exit (its exit tore down pandas, Plotly and the notebook's objects: ~0.6 s of CPU per notebook).
    client = _client_class()(nb, timeout=cell_timeout, allow_errors=True, kernel_name="python3",
                             resources={"metadata": {"path": str(notebook.parent)}}, record_timing=False,
                             interrupt_on_timeout=True, error_on_timeout=TIMED_OUT, shutdown_kernel="immediate",
                             extra_arguments=["--IPKernelApp.capture_fd_output=False"])
    client.max_output_bytes, client.max_rich_bytes = max_output, rich_cap
    from nbclient.exceptions import DeadKernelError

    def request_snapshot():
        fd = os.open(FIFO, os.O_WRONLY | os.O_NONBLOCK)  # fails if the thread is gone: nothing to save
        os.write(fd, b"x")
        os.close(fd)
        for _ in range(600):
            if os.path.exists(os.path.join(VALUES, "index.json")):
                return
            time.sleep(0.1)

    try:
        with client.setup_kernel():
            _extra(client, SETUP_CELL % (SETUP_SOURCE % (DROPPED, VALUES, FIFO, value_cap, max_output)), 60)
            stuck = False
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                left = deadline_s - (time.monotonic() - started)
                if left < 5:
                    status["stopped_at_cell"] = index + 1
                    status["deadline"] = True
                    break
                state = _run_cell(client, cell, index, min(cell_timeout, left))
                if state != "ok":
                    status["timed_out_cells"].append(index + 1)  # counted from 1, as a student reads them
                if state == "stuck":
                    status["stuck_cell"] = index + 1
                    stuck = True
                    break
            try:
                request_snapshot() if stuck else _extra(client, "_mlab_dump()", max(30, int(deadline_s - (time.monotonic() - started))))
            except OSError:
                pass
        status["executed"] = True
    except DeadKernelError as exc:  # memory limit, file-size limit, os._exit, ...
        status["fatal"] = "DeadKernelError"
        status["detail"] = str(exc).strip()[-300:]
    except Exception as exc:
        status["fatal"] = type(exc).__name__
        status["detail"] = str(exc).strip()[-300:]
    status["output_truncated"], status["rich_truncated"] = client.dropped["text"], client.dropped["rich"]
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "stream" and DROPPED % max_output in str(out.get("text", ""))[-200:]:
                status["output_truncated"] = True  # the kernel's own cap (SETUP_SOURCE) dropped the rest
            if out.get("output_type") == "error":
                status["cell_errors"].append({"cell": i + 1, "ename": str(out.get("ename"))[:100],
                                              "evalue": str(out.get("evalue"))[:300]})
    status["seconds"] = round(time.monotonic() - started, 1)
    status["_nb"] = nb
    return status


def send(out: int, status: dict, value_cap: int, total_cap: int, notebook_cap: int = 32 << 20) -> None:
    """Everything back to the grader: status, executed notebook, then each saved value."""
    import nbformat

    nb = status.pop("_nb", None)
    index_path = Path(VALUES) / "index.json"
    index: dict = {}
    try:
        index = json.loads(index_path.read_text()) if index_path.exists() else {}
    except ValueError:
        index = {}
    status["env_saved"] = bool(index)
    text = nbformat.writes(nb).encode() if nb is not None else None
    if text is not None and len(text) > notebook_cap:  # sent without outputs; the answers still count
        status["notebook_bytes"] = len(text)
        for cell in nb.cells:
            if cell.cell_type == "code":
                cell.outputs = []
            cell.pop("attachments", None)
        text = nbformat.writes(nb).encode()
        if len(text) > notebook_cap:  # the sources alone are over the cap
            text = None
    frame(out, b"S", json.dumps(status).encode())
    if text is not None:
        frame(out, b"N", text)
    sent = 0
    for kind, key in ((b"V", "values"), (b"F", "funcs")):
        for name, path in (index.get(key) or {}).items():
            try:  # O_NOFOLLOW: inside the sandbox anyway, but a link is never a value
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
                with os.fdopen(fd, "rb") as f:
                    blob = f.read(value_cap + 1)
            except (OSError, TypeError):
                index.setdefault("unsaved", {})[name] = "missing"
                continue
            if len(blob) > value_cap or sent + len(blob) > total_cap:
                index.setdefault("oversized", {})[name] = len(blob)
                continue
            sent += len(blob)
            frame(out, kind, struct.pack("!H", len(name.encode())) + name.encode() + blob)
    frame(out, b"I", json.dumps({k: index.get(k, {}) for k in ("refs", "oversized", "unsaved")}).encode())


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook", type=Path)
    ap.add_argument("--cell-timeout", type=int, default=120)
    ap.add_argument("--deadline", type=float, default=570, help="seconds for all cells, then save and stop")
    ap.add_argument("--max-output", type=int, default=1_000_000)
    ap.add_argument("--value-cap", type=int, default=64 << 20, help="largest pickled value, bytes")
    ap.add_argument("--total-cap", type=int, default=512 << 20, help="all values together, bytes")
    ap.add_argument("--notebook-cap", type=int, default=32 << 20, help="largest executed notebook sent back, bytes")
    a = ap.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    out = _private_stdout()
    _not_dumpable()
    status = run(a.notebook, a.cell_timeout, a.deadline, a.max_output, a.value_cap, a.notebook_cap)
    send(out, status, a.value_cap, a.total_cap, a.notebook_cap)
    return 0


if __name__ == "__main__":
    sys.exit(main())
