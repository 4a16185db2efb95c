"""Run the autograder's tests on the values a submission computed (inside the sandbox).

This process never runs student code: it reads `env.pkl` (written by `execute`) with an unpickler
that only rebuilds plain data (numbers, strings, containers, numpy arrays, pandas objects, Plotly
figures), re-imports modules and kit functions by name from an allow-list, and runs Otter's
OK-format tests against that environment. The tests arrive on stdin, never as a file, so nothing
the submission could have left behind can read or rewrite them. Results go to stdout as JSON.

Functions the student defined (e.g. "write the CS218 increase rule") are called through an
*oracle*: a child process forked before the tests are read, which alone loads the student's code
and answers calls with pickled data. Student code therefore never shares a process with the
tests: it sees only the arguments a test passes, and can return values, not verdicts. The
checking process makes itself non-dumpable first, so the child cannot read its memory.
"""

from __future__ import annotations

import importlib
import io
import json
import pickle
import os
import re
import struct
import sys

ALLOWED_ROOTS = {"numpy", "pandas", "plotly", "collections", "datetime", "decimal", "fractions", "copyreg",
                 "_codecs", "zoneinfo", "pytz", "dateutil", "uuid", "math", "statistics", "builtins",
                 "mptcplab", "scipy", "json", "re", "itertools", "functools", "pathlib", "textwrap", "otter"}
DENIED_MODULES = re.compile(r"^(pandas\.io|pandas\.core\.computation|numpy\.lib\.npyio|numpy\.(f2py|distutils|testing|ctypeslib)"
                            r"|plotly\.io|mptcplab\.(grading|cli|commands|topology|traffic|uml|observe|bulk|cc)"
                            r"|otter\.(cli|run|assign|grade|generate|export|execute|plugins))(\.|$)")
DENIED_NAMES = re.compile(r"(read|load|eval|exec|system|popen|spawn|open|file|memmap|import|compile|attr|globals"
                          r"|locals|vars|input|breakpoint|subprocess|write|save|dump|remove|unlink|^run|^call)", re.I)
SAFE_BUILTINS = {"set", "frozenset", "list", "dict", "tuple", "slice", "range", "complex", "bytearray", "bytes",
                 "int", "float", "str", "bool", "object", "Ellipsis"}


def allowed(module: str, name: str) -> bool:
    root = module.split(".")[0]
    if root not in ALLOWED_ROOTS or DENIED_MODULES.match(module):
        return False
    if root == "builtins":
        return name in SAFE_BUILTINS
    return not DENIED_NAMES.search(name)


class DataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if not allowed(module, name):
            raise pickle.UnpicklingError(f"refusing {module}.{name} (not plain data)")
        return super().find_class(module, name)


def rebuild(dump: dict) -> tuple[dict, dict]:
    """The checking environment, plus a note for each variable that could not be rebuilt."""
    env: dict = {}
    skipped: dict = {}
    for name, blob in dump.get("values", {}).items():
        try:
            env[name] = DataUnpickler(io.BytesIO(blob)).load()
        except Exception as exc:
            skipped[name] = str(exc)[:200]
    for name, (kind, module, qualname) in dump.get("refs", {}).items():
        if kind == "unpicklable":
            skipped[name] = f"{module}: {qualname}"
            continue
        root = module.split(".")[0]
        # Importing an installed module by name runs no student code; only the roots are limited.
        if root not in ALLOWED_ROOTS or (kind == "object" and DENIED_MODULES.match(module)):
            skipped[name] = f"{kind} from {module or 'the notebook'} is not rebuilt for checking"
            continue
        try:
            obj = importlib.import_module(module)
            for part in qualname.split(".") if kind == "object" else ():
                obj = getattr(obj, part)
            env[name] = obj
        except Exception as exc:
            skipped[name] = str(exc)[:200]
    return env, skipped


CALL_TIMEOUT_S = 30


class Oracle:
    """Runs the student's functions in a forked child; results come back as plain data only."""

    def __init__(self, funcs: dict[str, bytes]):
        self.names = sorted(funcs)
        self.sock, child = __import__("socket").socketpair()
        self.pid = os.fork()
        if self.pid == 0:  # the child: the only process that ever runs student code here
            self.sock.close()
            _serve(child, funcs)
            os._exit(0)
        child.close()
        self.sock.settimeout(CALL_TIMEOUT_S)

    def proxy(self, name: str):
        def call(*args, **kwargs):
            try:
                _send(self.sock, pickle.dumps((name, args, kwargs), protocol=4))
                kind, *rest = DataUnpickler(io.BytesIO(_recv(self.sock))).load()
            except TimeoutError:
                raise TimeoutError(f"{name}() did not return within {CALL_TIMEOUT_S} s") from None
            except (OSError, EOFError, struct.error, pickle.UnpicklingError) as exc:
                raise RuntimeError(f"{name}() could not be called or returned something that is not plain data: {exc}") from None
            if kind == "ok":
                return rest[0]
            raise RuntimeError(f"{name}() raised {rest[0]}: {rest[1]}")

        call.__name__ = name
        return call

    def close(self):
        self.sock.close()
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except OSError:
            pass


def _send(sock, data: bytes) -> None:
    sock.sendall(struct.pack("!Q", len(data)) + data)


def _recv(sock) -> bytes:
    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise EOFError("the function's process ended")
            buf += chunk
        return buf

    (n,) = struct.unpack("!Q", exactly(8))
    if n > 256 << 20:
        raise pickle.UnpicklingError("reply too large")
    return exactly(n)


def _serve(sock, funcs: dict[str, bytes]) -> None:
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1):  # student code must not write the checker's JSON on stdout
        os.dup2(devnull, fd)
    import dill

    loaded = {}
    while True:
        try:
            name, args, kwargs = pickle.loads(_recv(sock))  # from our own parent: trusted
        except (EOFError, OSError):
            return
        try:
            if name not in loaded:
                loaded[name] = dill.loads(funcs[name])
            reply = ("ok", loaded[name](*args, **kwargs))
            data = pickle.dumps(reply, protocol=4)
        except BaseException as exc:  # noqa: BLE001 - any failure is the student's answer
            data = pickle.dumps(("err", type(exc).__name__, str(exc)[:300]), protocol=4)
        _send(sock, data)


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0: same-uid processes can no longer ptrace us or read /proc/self/mem."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def check(tests: dict[str, str], env: dict) -> list[dict]:
    """Run every OK-format test file (name -> source) against a copy of env; one dict per question."""
    from otter.test_files import OKTestFile

    out = []
    for qname in sorted(tests):
        spec_globals: dict = {}
        exec(tests[qname], spec_globals)  # the autograder's own test file: trusted
        tf = OKTestFile.from_spec(spec_globals["test"], path=f"{qname}.py")
        scope = dict(env)
        try:
            tf.run(scope)
            cases = [{"name": r.test_case.name, "hidden": r.test_case.hidden, "passed": r.passed,
                      "message": "" if r.passed else _failure(r.message)} for r in tf.test_case_results]
            out.append({"question": tf.name, "score": float(tf.score), "possible": float(tf.possible), "cases": cases})
        except Exception as exc:
            out.append({"question": tf.name, "score": 0.0, "possible": float(tf.possible),
                        "cases": [{"name": qname, "hidden": False, "passed": False,
                                   "message": f"the check itself crashed: {type(exc).__name__}: {exc}"}]})
    return out


def _failure(doctest_report: str) -> str:
    """The useful line of a failed doctest: the first failing example's assertion message or exception
    (doctest carries on after a failure, so later lines are usually consequences of the first)."""
    lines = [ln.strip() for ln in doctest_report.splitlines() if ln.strip()]
    for ln in lines:
        if re.match(r"^[A-Za-z_.]*(Error|Exception)(:|$)", ln):
            return ln[:500]
    return "\n".join(lines[-3:])[:500]


def main() -> int:
    _not_dumpable()
    env_path = sys.argv[1]
    try:
        dump, note = _load_outer(env_path), ""
    except Exception as exc:
        dump, note = {}, f"the notebook saved no values ({type(exc).__name__}: {exc})"
    funcs = {k: v for k, v in dump.get("funcs", {}).items() if isinstance(v, bytes)}
    oracle = Oracle(funcs) if funcs else None  # forked before the tests exist in this process
    tests = json.load(sys.stdin)
    env, skipped = rebuild(dump)
    if oracle:
        env.update({name: oracle.proxy(name) for name in oracle.names})
    # Only the values a test mentions matter to the student (the Otter `grader`, `open`, ... do not).
    mentioned = {k: v for k, v in skipped.items() if any(re.search(rf"(?<![\w.]){re.escape(k)}(?![\w'\"])", t) for t in tests.values())}
    try:
        result = {"questions": check(tests, env), "skipped": mentioned, "note": note}
    finally:
        if oracle:
            oracle.close()
    json.dump(result, sys.stdout)
    return 0


def _load_outer(path: str) -> dict:
    """The container is a dict of str -> bytes/tuples: no class may appear in it."""

    class Outer(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"unexpected {module}.{name} in env.pkl")

    with open(path, "rb") as f:
        dump = Outer(f).load()
    if not isinstance(dump, dict):
        raise ValueError("env.pkl is not a dict")
    return dump


if __name__ == "__main__":
    sys.exit(main())
