"""The checker's unpickler rebuilds data only: student code can never run in the checking process."""

import pickle

import numpy as np
import pandas as pd
import pytest

from mptcplab.grading import checker


class Evil:
    def __reduce__(self):
        import os

        return (os.system, ("echo pwned",))


class EvilPandas:
    def __reduce__(self):
        return (pd.read_pickle, ("/tmp/x.pkl",))


def test_plain_data_round_trips():
    df = pd.DataFrame({"a": [1, 2], "b": [0.5, 1.5]})
    dump = {"values": {k: pickle.dumps(v, protocol=4) for k, v in
                       {"df": df, "arr": np.arange(3), "x": 1.5, "d": {"k": [1, 2]}, "e": ...}.items()},
            "refs": {"np": ("module", "numpy", ""), "os": ("module", "os", "")}}
    env, skipped = checker.rebuild(dump)
    assert env["df"].equals(df) and list(env["arr"]) == [0, 1, 2] and env["e"] is Ellipsis
    assert env["np"] is np and "os" in skipped


@pytest.mark.parametrize("obj", [Evil(), EvilPandas()])
def test_code_in_a_pickle_is_refused(obj):
    env, skipped = checker.rebuild({"values": {"v": pickle.dumps(obj)}, "refs": {}})
    assert "v" not in env and "refusing" in skipped["v"]


def test_failing_check_reports_its_message():
    test = ("OK_FORMAT = True\ntest = {'name': 'q1', 'points': 1, 'suites': [{'cases': [{'code': "
            "\">>> assert x > 2, 'x must exceed 2: widen the sweep'\\n\", 'hidden': False, 'locked': False}], "
            "'scored': True, 'setup': '', 'teardown': '', 'type': 'doctest'}]}\n")
    (q,) = checker.check({"q1": test}, {"x": 1})
    assert q["score"] == 0 and "x must exceed 2: widen the sweep" in q["cases"][0]["message"]
    (q,) = checker.check({"q1": test}, {"x": 3})
    assert q["score"] == 1


def _student_funcs(src: str) -> dict:
    import dill

    ns = {"__name__": "__main__"}
    exec(src, ns)
    return {k: dill.dumps(v, recurse=True) for k, v in ns.items() if callable(v) and not k.startswith("__")}


def test_student_functions_run_in_a_separate_process():
    import os

    funcs = _student_funcs("import os\ndef double(x):\n    print('noise on stdout')\n    return x * 2\n"
                           "def whoami():\n    return os.getpid()\n"
                           "def boom(x):\n    raise ValueError('bad input ' + str(x))\n")
    oracle = checker.Oracle(funcs)
    try:
        assert oracle.proxy("double")(21) == 42
        assert oracle.proxy("whoami")() != os.getpid()
        # In the checker's words: the call and the exception's type, never the student's text.
        with pytest.raises(checker.StudentCallError, match=r"^boom\(\) raised ValueError$"):
            oracle.proxy("boom")(3)
    finally:
        oracle.close()


def test_a_call_that_does_not_return_is_the_last(monkeypatch):
    """A runaway function costs one call's time limit, not one per call left: its late reply would
    otherwise be read as the next call's."""
    import time

    monkeypatch.setattr(checker, "CALL_TIMEOUT_S", 1)
    oracle = checker.Oracle(_student_funcs("def slow(x):\n    import time\n    time.sleep(3)\n    return x\n"
                                           "def fast(x):\n    return x + 1\n"))
    try:
        with pytest.raises(checker.StudentCallError, match=r"^slow\(\) did not return within 1 s$"):
            oracle.proxy("slow")(1)
        started = time.monotonic()
        time.sleep(2.5)  # the late reply has arrived: never taken for fast()'s
        with pytest.raises(checker.StudentCallError, match=r"^fast\(\) was not called: slow\(\) had not returned"):
            oracle.proxy("fast")(1)
        assert time.monotonic() - started < 3
    finally:
        oracle.close()


def test_a_student_function_cannot_smuggle_code_back():
    funcs = _student_funcs("import os\nclass E:\n    def __reduce__(self):\n        return (os.system, ('echo pwned',))\n"
                           "def evil():\n    return E()\n")
    oracle = checker.Oracle({"evil": funcs["evil"]})
    try:
        with pytest.raises(checker.StudentCallError, match="not plain data"):
            oracle.proxy("evil")()
    finally:
        oracle.close()


def _test_file(code: str, hidden: bool = False) -> str:
    return ("OK_FORMAT = True\ntest = {'name': 'q1', 'points': 1, 'suites': [{'cases': [{'code': "
            + repr(code) + f", 'hidden': {hidden}, 'locked': False}}], 'scored': True, 'setup': '', 'teardown': '', "
            "'type': 'doctest'}]}\n")


def test_checks_use_their_own_builtins_and_modules():
    """A notebook's `abs`, `isinstance` or `np` never stands in for the checker's (issue 26)."""
    import dill

    ns = {"__name__": "__main__"}
    exec("def abs(x): return 0\ndef isinstance(*a): return True\ndef zip(*a): raise ValueError(repr(a))\n", ns)
    funcs = {k: dill.dumps(ns[k], recurse=True) for k in ("abs", "isinstance", "zip")}
    oracle = checker.Oracle(funcs)
    try:
        env = {"x": 5.0, "np": __import__("math"), **{k: oracle.proxy(k) for k in funcs}}
        code = (">>> assert isinstance(x, float) and abs(x - 1) < 1e-9, 'x should be 1'\n"
                ">>> assert np.allclose([x], [1]), 'x should be 1'\n"
                ">>> assert list(zip([_s for _s in 'ab'], [1, 2]))\n")
        (q,) = checker.check({"q1": _test_file(code)}, env)
        assert q["score"] == 0 and q["cases"][0]["message"] == "AssertionError: x should be 1", q
        assert checker.question_names({"suites": [{"cases": [{"code": code}]}]}) == {"x", "np"}
        scope = checker.scope_for({"suites": [{"cases": [{"code": code}]}]}, env)
        assert scope["np"] is np and "abs" not in scope and "zip" not in scope and scope["__builtins__"].abs is abs
    finally:
        oracle.close()


def test_only_the_questions_names_are_bound():
    env = {"answer": 1, "helper": 2, "runs": 3}
    scope = checker.scope_for({"suites": [{"cases": [{"code": ">>> _r = answer + 1\n"}]}]}, env)
    assert set(scope) == {"__builtins__", "answer"}



def test_the_lab_modules_a_notebook_holds_rebuild_and_no_others_are_named():
    """What a handed-out notebook imports from a lab's package (but its checks) rebuilds as a module,
    and the kit's classes those modules hand out rebuild from a pickle; the allowlist names no other
    lab module (so it follows the labs' modules as they move)."""
    import importlib
    import json
    import re
    from pathlib import Path

    needed: set[str] = set()
    for nb in sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]-*.ipynb")):
        source = "\n".join("".join(c["source"]) for c in json.loads(nb.read_text())["cells"])
        for lab, names in re.findall(r"from (mptcplab\.labs\.\w+) import ([\w ,]+)", source):
            for name in {n.split(" as ")[0].strip() for n in names.split(",")} - {"checks"}:
                module = importlib.import_module(f"{lab}.{name}")
                env, skipped = checker.rebuild({"refs": {"m": ["module", module.__name__, ""]}})
                assert env == {"m": module}, (nb.name, module.__name__, skipped)
                needed.add(name)
                for cls in vars(module).values():
                    if isinstance(cls, type) and cls.__module__.startswith("mptcplab.labs.") \
                            and cls.__name__[0].isupper():
                        assert checker.allowed(cls.__module__, cls.__name__), (nb.name, cls)
                        needed.add(cls.__module__.rsplit(".", 1)[1])
    assert sorted(checker.KIT_MODULES) == sorted(needed)
