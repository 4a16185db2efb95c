"""Run the autograder's tests on the values a submission computed (inside the sandbox).

This process never runs student code: it reads the values `execute` sent back (written by the
grader into a root-owned directory, mounted read-only here) with an unpickler that accepts an
explicit allowlist of (module, name) pairs (numbers, strings, containers, numpy arrays, pandas
objects, Plotly figures), rebinds a few module names (np, pd, ...) to the real modules, and runs
Otter's OK-format tests against that environment. It runs as `python -I` from a directory nobody
writes, and nothing on its sys.path is writable in its sandbox: a notebook that leaves a
`mptcplab/grading/checker.py` behind changes nothing (its copy is not even mounted here). The
tests arrive on stdin, never as a file. Results go to stdout as JSON.

Functions the student defined (e.g. "write the CS218 increase rule") are called through an
*oracle* (`serve`), forked in this checker's sandbox into namespaces of its own
(`sandbox.fork_oracle`: mount, PID, network, IPC, UTS), whose view shows the lab's answer keys
redacted, as the notebook's kernel saw them (this checker's view shows the real ones: its tests
may call them). It alone loads the student's code and answers calls over a socket with pickled
data; a call that does not return within CALL_TIMEOUT_S is the last one made. Student code therefore never shares a process,
a PID namespace or a view of the kit with the tests: it sees only the arguments a test passes
(unseen inputs among them), and can return values, not verdicts. The tests, and the grader's
draws of unseen inputs and their answers (`reference.provide`), arrive on stdin.

Test files are Otter's, in either format: OK (doctests) or exception-based (one function per case,
whose parameters are the names it reads; its failures are a few lines: `feedback`).
"""

from __future__ import annotations

import ast
import base64
import builtins
import doctest
import importlib
import inspect
import io
import json
import os
import pickle
import re
import socket
import struct
import sys

# Every class or function a pickle of plain data may name, as exact (module, name) pairs: no
# dotted names (pickle protocol 4 resolves "a.b" by walking attributes, which is how a pickle
# reaches eval through an allowed module), no modules by prefix. Recorded from pickles of numbers,
# strings, containers, numpy arrays and scalars, pandas Series/DataFrames/indexes (datetime,
# categorical, interval, period) and Plotly figures, by tests/grading/test_grading_checker.py.
ALLOWED = frozenset({
    ("builtins", n) for n in ("set", "frozenset", "list", "dict", "tuple", "slice", "range", "complex",
                              "bytearray", "bytes", "int", "float", "str", "bool", "object", "Ellipsis")
} | {
    ("collections", "OrderedDict"), ("collections", "defaultdict"), ("collections", "Counter"), ("collections", "deque"),
    ("copyreg", "_reconstructor"), ("datetime", "datetime"), ("datetime", "date"), ("datetime", "time"),
    ("datetime", "timedelta"), ("datetime", "timezone"), ("decimal", "Decimal"), ("fractions", "Fraction"),
    ("zoneinfo", "ZoneInfo"), ("pathlib", "PosixPath"), ("pathlib", "PurePosixPath"), ("uuid", "UUID"),
    ("_codecs", "encode"),
    ("numpy", "dtype"), ("numpy", "ndarray"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "scalar"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy.ma.core", "_mareconstruct"), ("numpy.ma.core", "MaskedArray"), ("numpy.random._pickle", "__randomstate_ctor"),
    *(("numpy", t) for t in ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32",
                             "uint16", "uint8", "bool_", "complex128", "complex64", "str_", "bytes_", "datetime64",
                             "timedelta64", "object_", "void")),
    *(("numpy.dtypes", t) for t in ("Float64DType", "Float32DType", "Int64DType", "Int32DType", "BoolDType", "ObjectDType",
                                    "StrDType", "DateTime64DType", "TimeDelta64DType", "UInt8DType", "Int8DType")),
    ("pandas.core.frame", "DataFrame"), ("pandas.core.series", "Series"),
    ("pandas.core.internals.managers", "BlockManager"), ("pandas.core.internals.managers", "SingleBlockManager"),
    ("pandas.core.internals.blocks", "new_block"), ("pandas._libs.internals", "_unpickle_block"),
    ("pandas.core.internals.blocks", "Block"), ("pandas.core.internals.blocks", "NumpyBlock"),
    ("pandas.core.internals.blocks", "ObjectBlock"), ("pandas.core.internals.blocks", "DatetimeLikeBlock"),
    ("pandas.core.internals.blocks", "DatetimeTZBlock"), ("pandas.core.internals.blocks", "ExtensionBlock"),
    ("pandas.core.indexes.base", "_new_Index"), ("pandas.core.indexes.base", "Index"),
    ("pandas.core.indexes.range", "RangeIndex"), ("pandas.core.indexes.multi", "MultiIndex"),
    ("pandas.core.indexes.datetimes", "_new_DatetimeIndex"), ("pandas.core.indexes.datetimes", "DatetimeIndex"),
    ("pandas.core.indexes.timedeltas", "TimedeltaIndex"), ("pandas.core.indexes.period", "_new_PeriodIndex"),
    ("pandas.core.indexes.period", "PeriodIndex"), ("pandas.core.indexes.category", "CategoricalIndex"),
    ("pandas.core.indexes.interval", "IntervalIndex"), ("pandas.core.indexes.interval", "_new_IntervalIndex"),
    ("pandas.core.arrays.categorical", "Categorical"), ("pandas.core.arrays.categorical", "_new_Categorical"),
    ("pandas.core.arrays.datetimes", "DatetimeArray"), ("pandas.core.arrays.timedeltas", "TimedeltaArray"),
    ("pandas.core.arrays.period", "PeriodArray"), ("pandas.core.arrays.interval", "IntervalArray"),
    ("pandas.core.arrays.string_", "StringArray"), ("pandas.core.arrays.string_", "StringDtype"),
    ("pandas.core.arrays.boolean", "BooleanArray"), ("pandas.core.arrays.integer", "IntegerArray"),
    ("pandas.core.arrays.floating", "FloatingArray"), ("pandas.core.arrays.masked", "BaseMaskedArray"),
    ("pandas.core.arrays.integer", "Int64Dtype"), ("pandas.core.arrays.floating", "Float64Dtype"),
    ("pandas.core.arrays.boolean", "BooleanDtype"), ("pandas.core.arrays.numpy_", "NumpyExtensionArray"),
    ("pandas._libs.arrays", "__pyx_unpickle_NDArrayBacked"), ("pandas.core.dtypes.dtypes", "CategoricalDtype"),
    ("pandas.core.dtypes.dtypes", "DatetimeTZDtype"), ("pandas.core.dtypes.dtypes", "PeriodDtype"),
    ("pandas.core.dtypes.dtypes", "IntervalDtype"), ("pandas._libs.tslibs.timestamps", "_unpickle_timestamp"),
    ("pandas._libs.tslibs.timestamps", "Timestamp"), ("pandas._libs.tslibs.timedeltas", "_timedelta_unpickle"),
    ("pandas._libs.tslibs.timedeltas", "Timedelta"), ("pandas._libs.tslibs.nattype", "__nat_unpickle"),
    ("pandas._libs.tslibs.offsets", "Day"), ("pandas._libs.tslibs.offsets", "Hour"), ("pandas._libs.tslibs.offsets", "Minute"),
    ("pandas._libs.tslibs.offsets", "Second"), ("pandas._libs.tslibs.offsets", "Milli"), ("pandas._libs.tslibs.offsets", "Micro"),
    ("pandas._libs.tslibs.offsets", "Nano"), ("pandas._libs.tslibs.period", "Period"),
    ("pandas._libs.interval", "Interval"), ("pandas._libs.missing", "NAType"), ("pandas._libs.missing", "NA"),
    ("pytz", "_UTC"), ("pytz", "_p"), ("pytz", "timezone"), ("dateutil.tz.tz", "tzutc"),
    *(("pandas", n) for n in ("DataFrame", "Series", "Index", "RangeIndex", "MultiIndex", "CategoricalIndex",
                              "DatetimeIndex", "TimedeltaIndex", "PeriodIndex", "IntervalIndex", "Categorical",
                              "CategoricalDtype", "DatetimeTZDtype", "PeriodDtype", "IntervalDtype", "StringDtype",
                              "BooleanDtype", "Int64Dtype", "Int32Dtype", "Float64Dtype", "NA", "Timestamp", "Timedelta",
                              "Period", "Interval")),
    *(("pandas.arrays", n) for n in ("BooleanArray", "DatetimeArray", "FloatingArray", "IntegerArray", "IntervalArray",
                                     "PeriodArray", "StringArray", "TimedeltaArray", "NumpyExtensionArray")),
    ("pandas._libs.interval", "__pyx_unpickle_IntervalMixin"), ("pandas._libs.tslibs.nattype", "_nat_unpickle"),
    ("pandas.core.indexes.timedeltas", "_new_TimedeltaIndex"),
    ("plotly._subplots", "SubplotRef"),  # a namedtuple in figures made by make_subplots / plotly.express
})
# The modules of a lab's package a notebook may hold (never the grading, commands or anything that runs
# tools): those a handed-out notebook imports, but its checks, and those defining the classes they hand
# out (Lab 1's Detail, Lab 2's simulation results). tests/grading/test_grading_checker.py derives this
# set from the notebooks, so a module that moves or is no longer imported fails there.
KIT_MODULES = ("analysis", "notebook", "models", "ccref", "detail")
KIT_CLASSES = re.compile(rf"^mptcplab\.labs\.\w+\.({'|'.join(KIT_MODULES)})$")
PLOTLY_MODULES = re.compile(r"^plotly\.graph_objs(\.[a-z_]+)*(\._[a-z_0-9]+)?$")  # figure and trace classes only


def allowed(module: str, name: str) -> bool:
    """Exact pairs only: a name with a dot (an attribute walk) is never allowed."""
    if (module, name) in ALLOWED:
        return True
    if KIT_CLASSES.match(module) and name[:1].isupper() and name.isidentifier():
        return True  # the labs' data classes (Lab 1's Detail, Lab 2's simulation results); checked to be classes below
    # Plotly's figure and trace classes (go.Figure, go.Scatter, go.layout.XAxis, ...): classes of
    # plotly.graph_objs whose names start with a capital; they pickle as (class, dict) and rebuild
    # from data.
    return bool(PLOTLY_MODULES.match(module)) and name[:1].isupper() and name.isidentifier()


class DataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if not allowed(module, name):
            raise pickle.UnpicklingError(f"refusing {module}.{name} (not plain data)")
        obj = getattr(importlib.import_module(module), name)
        if (PLOTLY_MODULES.match(module) or KIT_CLASSES.match(module)) and not isinstance(obj, type):
            raise pickle.UnpicklingError(f"refusing {module}.{name} (not a Plotly class)")
        return obj


MODULES = {"numpy", "pandas", "math", "statistics", "plotly.express", "plotly.graph_objects", "plotly.graph_objs",
           "datetime", "collections", "itertools", "functools", "re", "json"}


def rebuild(dump: dict, load=None, names: set[str] | None = None) -> tuple[dict, dict]:
    """The checking environment, plus a note for each variable that could not be rebuilt; `names`:
    rebuild only these (the checks read nothing else; a notebook's figures cost seconds to unpickle).

    dump: {"values": name -> pickle bytes, "refs": name -> (kind, module, name), "oversized": name -> size,
    "unsaved": name -> type}. A student may have written any of it: values rebuild through the
    allowlist only; a name bound to a module is rebuilt only for MODULES (so `np` can be numpy,
    never something else); nothing else the notebook referred to is carried over."""
    env: dict = {}
    skipped: dict = {}
    for name, blob in dump.get("values", {}).items():
        if names is not None and name not in names:
            continue
        try:
            env[name] = DataUnpickler(io.BytesIO(blob if load is None else load(blob))).load()
        except Exception as exc:
            skipped[name] = f"not plain data ({str(exc)[:120]})"
    for name, ref in dump.get("refs", {}).items():
        if names is not None and name not in names:
            continue
        kind, module = (list(ref) + ["", ""])[:2]
        if kind == "module" and (module in MODULES or KIT_CLASSES.match(module)):
            env[name] = importlib.import_module(module)
        else:
            skipped[name] = "a function or class: checks read data only"
    for name, size in dump.get("oversized", {}).items():
        skipped[name] = f"too large to grade ({int(size) >> 20} MiB pickled)"
    for name, kind in dump.get("unsaved", {}).items():
        skipped[name] = ("its saved value was missing or had been replaced (a link?)" if kind == "missing"
                         else f"a {str(kind)[:60]} object, which cannot be saved for checking")
    return env, skipped


CALL_TIMEOUT_S = 30
_BUILTIN_ERRORS = {n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)}


class StudentCallError(Exception):
    """A call to a function the student wrote failed; the message is the checker's own."""


class Oracle:
    """Calls the student's functions in another process; results come back as plain data only.

    `Oracle(funcs)` forks that process here (for tests of the protocol); grading connects to the
    oracle's own sandbox instead (`Oracle.over`)."""

    def __init__(self, funcs: dict[str, bytes] | None = None, *, sock=None, names=()):
        self.pid = 0
        if sock is None:
            self.names = sorted(funcs or {})
            self.sock, child = socket.socketpair()
            self.pid = os.fork()
            if self.pid == 0:
                self.sock.close()
                _serve(child, funcs or {})
                os._exit(0)
            child.close()
        else:
            self.sock, self.names = sock, sorted(names)
        self.sock.settimeout(CALL_TIMEOUT_S)
        self.stuck = ""  # a function that did not return: the oracle is busy with it for good

    @classmethod
    def over(cls, fd: int, names) -> "Oracle":
        """The oracle at the other end of an inherited socket (the grader made the pair)."""
        return cls(sock=socket.socket(fileno=fd), names=names)

    def proxy(self, name: str):
        def call(*args, **kwargs):
            if self.stuck:  # its late reply would be read as this call's: no call after a runaway
                raise StudentCallError(f"{name}() was not called: {self.stuck}() had not returned within {CALL_TIMEOUT_S} s")
            try:
                _send(self.sock, pickle.dumps((name, args, kwargs), protocol=4))
                kind, *rest = DataUnpickler(io.BytesIO(_recv(self.sock))).load()
            except TimeoutError:
                self.stuck = name
                raise StudentCallError(f"{name}() did not return within {CALL_TIMEOUT_S} s") from None
            except (OSError, EOFError, struct.error, pickle.UnpicklingError):
                raise StudentCallError(f"{name}() stopped or returned something that is not plain data "
                                        "(numbers, strings, lists, dicts, arrays, DataFrames)") from None
            if kind == "ok":
                return rest[0]
            # In the checker's words: the exception's type if Python defines it, never its text
            # (student code chose that text, and saw the call's arguments).
            raise StudentCallError(f"{name}() raised {rest[0]}" if rest[0] in _BUILTIN_ERRORS
                                    else f"{name}() raised an exception of its own")

        call.__name__ = name
        return call

    def close(self):
        self.sock.close()
        if self.pid:
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
            data = pickle.dumps(("err", str(type(exc).__name__)[:60]), protocol=4)
        _send(sock, data)


def _not_dumpable() -> None:
    """PR_SET_DUMPABLE 0: same-uid processes can no longer ptrace us or read /proc/self/mem."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)
    except (OSError, AttributeError):
        pass


# Names the checks may use without importing them: always the real modules, whatever the
# notebook bound to these names (a check's `np.allclose` is numpy's).
CHECKER_MODULES = {"np": "numpy", "pd": "pandas", "math": "math", "px": "plotly.express", "go": "plotly.graph_objects",
                   "itertools": "itertools", "collections": "collections", "re": "re", "json": "json"}


def question_names(spec: dict) -> set[str]:
    """The names a question's checks read that they do not bind themselves: what the question asks
    the student to produce (and the helpers above). Checks bind their own names with a leading `_`."""
    names: set[str] = set()
    for suite in spec.get("suites", []):
        for case in suite.get("cases", []):
            for ex in doctest.DocTestParser().get_examples(case.get("code", "")):
                try:
                    tree = ast.parse(ex.source)
                except SyntaxError:
                    continue
                names |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return {n for n in names if not n.startswith("_") and not hasattr(builtins, n)}


def scope_for(spec: dict | set, env: dict) -> dict:
    """The globals a question's checks run in: Python's own builtins, the checker's modules, and
    the student's values only under the names the question reads. A student's `abs`, `zip` or
    `isinstance` is never bound (those names are builtins), and nothing else the notebook
    defined is there for a check to call by accident."""
    scope: dict = {"__builtins__": builtins}
    for name in (spec if isinstance(spec, set) else question_names(spec)):  # an OK spec, or the names
        if name in CHECKER_MODULES:
            scope[name] = importlib.import_module(CHECKER_MODULES[name])
        elif name in env:
            scope[name] = env[name]
    return scope


def test_file(src: str, qname: str):
    """Otter's TestFile for one autograder test source, of either format (OK_FORMAT decides, as in Otter)."""
    from otter.test_files.exception_test import ExceptionTestFile

    g: dict = {}
    exec(src, g)  # the autograder's own test file: trusted
    if g.get("OK_FORMAT"):
        from otter.test_files.ok_test import OKTestFile  # with Otter's utilities: nbformat, IPython

        return OKTestFile.from_spec(g["test"], path=f"{qname}.py")
    return ExceptionTestFile.from_string(src, path=f"{qname}.py")


def hidden_code(src: str) -> list[str]:
    """The source of each hidden case of a test file, either format (for the report's leak guard)."""
    g: dict = {}
    exec(src, g)  # the autograder's own test file: trusted
    if g.get("OK_FORMAT"):
        return [c.get("code", "") for suite in g["test"].get("suites", []) for c in suite.get("cases", []) if c.get("hidden")]
    out = []
    for node in ast.parse(src).body:
        deco = [d for d in getattr(node, "decorator_list", []) if isinstance(d, ast.Call)]
        if any(k.arg == "hidden" and isinstance(k.value, ast.Constant) and k.value.value for d in deco for k in d.keywords):
            out.append(ast.get_source_segment(src, node) or "")
    return out


def _params(case) -> list[str]:
    """An exception-based case's parameters: the notebook names Otter passes it (`env` is everything)."""
    return [p for p in inspect.signature(case.body.test_func).parameters if p != "env"]


def names_read(tf) -> set[str]:
    """The notebook names a question's checks read: an exception-based case's parameters, or the
    names an OK-format case's code uses without binding them (`question_names`)."""
    from otter.test_files.exception_test import ExceptionTestFile

    if isinstance(tf, ExceptionTestFile):
        return {p for tc in tf.test_cases for p in _params(tc)}
    return question_names({"suites": [{"cases": [{"code": tc.body} for tc in tf.test_cases]}]})


def check(tests: dict[str, str], env: dict) -> list[dict]:
    """Run every test file (name -> source) on the student's values; one dict per question."""
    from . import feedback

    out = []
    for qname in sorted(tests):
        tf = test_file(tests[qname], qname)
        scope = scope_for(names_read(tf), env)
        try:
            tf.run(scope)
            cases = []
            for r in tf.test_case_results:
                missing = [] if r.passed or not callable(getattr(r.test_case.body, "test_func", None)) else \
                    [p for p in _params(r.test_case) if p not in scope]
                message = (f"NameError: name '{missing[0]}' is not defined" if missing  # Otter passed None
                           else "" if r.passed else feedback.summary(r.message))
                cases.append({"name": r.test_case.name, "hidden": r.test_case.hidden, "passed": r.passed,
                              "message": message})
            out.append({"question": tf.name, "score": float(tf.score), "possible": float(tf.possible), "cases": cases})
        except Exception as exc:  # its text may quote anything the check held: the type only
            out.append({"question": tf.name, "score": 0.0, "possible": float(tf.possible),
                        "cases": [{"name": qname, "hidden": False, "passed": False,
                                   "message": f"the check itself could not run ({type(exc).__name__})"}]})
    return out


def load_values(values_dir: str) -> dict:
    """What the grader wrote for this submission (index.json + one file per value), as rebuild() takes it."""
    d = os.path.abspath(values_dir)
    with open(os.path.join(d, "index.json")) as f:
        index = json.load(f)

    def blob(fname: str) -> bytes:
        with open(os.path.join(d, os.path.basename(fname)), "rb") as f:
            return f.read()

    return {"values": {k: blob(v) for k, v in index.get("values", {}).items()},
            "funcs": {k: blob(v) for k, v in index.get("funcs", {}).items()},
            **{k: index.get(k, {}) for k in ("refs", "oversized", "unsaved")}}


def serve(fd: int, values_dir: str) -> int:
    """The oracle, in namespaces of its own (`sandbox.fork_oracle`): the student's functions,
    answering the checker on socket fd."""
    try:
        funcs = load_values(values_dir)["funcs"]
    except Exception:
        funcs = {}
    _serve(socket.socket(fileno=fd), funcs)
    return 0


def _otter_tests_only() -> None:
    """Import Otter's test files without the `otter` package's own __init__, which imports its
    exporters (nbconvert and more: ~1.5 s of CPU in every checker) and nothing a test file uses,
    nor `otter.test_files`' own, which imports nbformat, IPython and YAML for its other formats
    (~0.5 s): an exception-format test file imports only `test_case` from it, and `test_file`
    imports the OK format's module when a test file is one. In the checker's process only:
    elsewhere `import otter` must stay the whole package."""
    import importlib.util
    import types

    spec = importlib.util.find_spec("otter")
    if "otter" in sys.modules or spec is None or not spec.submodule_search_locations:
        return
    for name in ("otter", "otter.test_files"):  # each a package without its __init__
        spec = importlib.util.find_spec(name)
        package = types.ModuleType(name)
        package.__path__, package.__spec__ = list(spec.submodule_search_locations), spec
        sys.modules[name] = package
    from otter.test_files.exception_test import test_case

    sys.modules["otter"].test_files = sys.modules["otter.test_files"]
    sys.modules["otter.test_files"].test_case = test_case


def main(argv: list[str] | None = None) -> int:
    """checker VALUES [--oracle-fd FD] (request JSON on stdin: tests, and the grader's draws); the
    oracle at the other end of FD is `serve`, forked by the sandbox (`sandbox.fork_oracle`)."""
    argv = sys.argv[1:] if argv is None else argv
    _not_dumpable()
    _otter_tests_only()
    try:
        dump, note = load_values(argv[0]), ""
    except Exception as exc:
        dump, note = {}, f"the notebook saved no values ({type(exc).__name__})"
    funcs = [k for k, v in dump.get("funcs", {}).items() if isinstance(v, bytes)]
    fd = int(argv[argv.index("--oracle-fd") + 1]) if "--oracle-fd" in argv else None
    oracle = Oracle.over(fd, funcs) if fd is not None and funcs else None
    request = json.load(sys.stdin)
    tests = request["tests"]
    if request.get("drawn"):  # the grader's own pickle of plain data; read through the allowlist all the same
        from . import reference

        reference.provide(DataUnpickler(io.BytesIO(base64.b64decode(request["drawn"]))).load())
    # Only the values a check reads matter: names in the checks' code, not words in their messages
    # (Lab 1's "take the first N packets of cap" listed the notebook's pyshark `cap`).
    read = set().union(*(names_read(test_file(src, q)) for q, src in tests.items()))
    env, skipped = rebuild(dump, names=read)
    if oracle:
        env.update({name: oracle.proxy(name) for name in oracle.names})
    mentioned = {k: v for k, v in skipped.items() if k in read}
    mentioned.update({k: skipped[k] for k in dump.get("oversized", {})})  # always: only the student can make it smaller
    try:
        result = {"questions": check(tests, env), "skipped": mentioned, "note": note}
    finally:
        if oracle:
            oracle.close()
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
