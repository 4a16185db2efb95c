"""Execute one student notebook (inside the sandbox) and save the values it computed.

No test is present while student code runs: the sandbox's root holds no autograder, and the checks run
later in a separate process (`mptcplab.grading.checker`) that never executes student code. Here we
only run the cells (errors do not stop the run, as in Otter), cap what the notebook may print, and
append one cell that pickles each global value separately into `env.pkl` for the checker.

    python -m mptcplab.grading.execute NOTEBOOK OUTDIR --cell-timeout S --max-output BYTES
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

DUMP_CELL = r'''
import pickle as _mlab_pickle, types as _mlab_types
def _mlab_dump(_path):
    values, refs, funcs = {}, {}, {}
    for name, value in list(globals().items()):
        if name.startswith("_") or name in ("In", "Out", "exit", "quit", "get_ipython"):
            continue
        if isinstance(value, _mlab_types.ModuleType):
            refs[name] = ("module", value.__name__, "")
            continue
        if isinstance(value, _mlab_types.FunctionType) and value.__module__ == "__main__":
            try:  # the student's own function, by value: the checker calls it in a separate process
                import dill
                funcs[name] = dill.dumps(value, recurse=True)
            except Exception as exc:
                refs[name] = ("unpicklable", type(exc).__name__, str(exc)[:200])
            continue
        if isinstance(value, (type, _mlab_types.FunctionType, _mlab_types.BuiltinFunctionType)):
            refs[name] = ("object", getattr(value, "__module__", "") or "", getattr(value, "__qualname__", ""))
            continue
        try:
            values[name] = _mlab_pickle.dumps(value, protocol=4)
        except Exception as exc:
            refs[name] = ("unpicklable", type(exc).__name__, str(exc)[:200])
    with open(_path, "wb") as f:
        _mlab_pickle.dump({"values": values, "refs": refs, "funcs": funcs}, f, protocol=4)
_mlab_dump(%r)
'''


def _client_class():
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
        """Drops outputs past a byte budget so a runaway print cannot exhaust the grader's memory."""

        max_output_bytes = 1_000_000
        _used = 0
        _notified = False

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {}), default=str))
            self._used += size
            if self._used <= self.max_output_bytes or (msg["msg_type"] == "error" and size < 20_000):
                return super().output(outs, msg, display_id, cell_index)
            if not self._notified:
                self._notified = True
                from nbformat.v4 import new_output

                outs.append(new_output("stream", name="stderr",
                                       text=f"[mptcplab grade: output beyond {self.max_output_bytes} bytes dropped]\n"))
            return None

    return CappedClient


def run(notebook: Path, outdir: Path, cell_timeout: int, max_output: int) -> dict:
    import nbformat

    status: dict = {"executed": False, "cell_errors": [], "output_truncated": False, "seconds": None}
    started = time.monotonic()
    try:
        nb = nbformat.read(notebook, as_version=4)
    except Exception as exc:  # not JSON, not a notebook: the submission itself is broken
        status["fatal"] = f"the file is not a readable notebook: {type(exc).__name__}: {str(exc)[:300]}"
        return status
    env_path = outdir / "env.pkl"
    user_cells = len(nb.cells)
    nb.cells.append(nbformat.v4.new_code_cell(DUMP_CELL % str(env_path)))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = _client_class()(nb, timeout=cell_timeout, allow_errors=True, kernel_name="python3",
                             resources={"metadata": {"path": str(notebook.parent)}}, record_timing=False)
    client.max_output_bytes = max_output
    client.interrupt_on_timeout = True  # SIGINT the runaway cell, keep the kernel and run the next cells
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    status["timed_out_cells"] = []
    try:
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                try:  # one cell at a time, so a cell stopped at its time limit does not stop the rest
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    status["timed_out_cells"].append(index + 1)  # counted from 1, as a student reads them
        status["executed"] = True
    except DeadKernelError as exc:  # memory limit, file-size limit, os._exit, ...
        status["fatal"] = f"DeadKernelError: {str(exc).strip()[-600:]}"
    except Exception as exc:
        status["fatal"] = f"{type(exc).__name__}: {str(exc).strip()[-600:]}"
    status["output_truncated"] = client._notified
    for i, cell in enumerate(nb.cells[:user_cells]):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                status["cell_errors"].append({"cell": i + 1, "ename": out.get("ename"), "evalue": str(out.get("evalue"))[:300]})
    nb.cells = nb.cells[:user_cells]
    try:
        nbformat.write(nb, outdir / "executed.ipynb")
    except Exception as exc:
        status["executed_notebook_error"] = str(exc)[:300]
    status["env_saved"] = env_path.exists()
    status["seconds"] = round(time.monotonic() - started, 1)
    return status


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook", type=Path)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--cell-timeout", type=int, default=120)
    ap.add_argument("--max-output", type=int, default=1_000_000)
    a = ap.parse_args()
    status = run(a.notebook, a.outdir, a.cell_timeout, a.max_output)
    (a.outdir / "status.json").write_text(json.dumps(status, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
