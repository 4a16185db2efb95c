"""The kit code and data that compute graded answers, hidden from a submission while it runs.

The kit is open (students have it in their VM), but a notebook that only calls
`models.parallel_per_flow` must not earn the marks for implementing it. Each lab names its answer
keys (`Lab.grading.answer_keys`, `.answer_columns`). While a submission executes, the sandbox shows a
copy of each such module with these functions' bodies (and docstrings) replaced by
`raise AnswerKeyHidden(...)`, bound over the real file, with the module's `__pycache__` covered by
an empty directory (its .pyc would hold the original); and a copy of each such reference table
without the answer columns. The checker's sandbox shows the real ones: the tests call them.
Redacting fails when a listed name no longer exists, so a rename cannot silently re-expose an
answer.
"""

from __future__ import annotations

import ast
import importlib.util
import os
from pathlib import Path

from ..run.lab import all_labs
from .reference import results


def functions() -> dict[str, tuple[str, ...]]:
    """Every lab's answer keys: module -> functions whose result a graded question asks for."""
    out: dict[str, tuple[str, ...]] = {}
    for lab in all_labs().values():
        for module, names in lab.grading.answer_keys.items():
            key = f"{lab.analysis.__package__}.{module}"
            out[key] = tuple(dict.fromkeys(out.get(key, ()) + tuple(names)))
        if lab.grading.unseen_answers is not None:  # computes every graded answer: always a key
            fn = lab.grading.unseen_answers
            out[fn.__module__] = tuple(dict.fromkeys(out.get(fn.__module__, ()) + (fn.__name__,)))
    return out


def columns() -> dict[Path, tuple[str, ...]]:
    """Every lab's reference tables with answer columns: path -> those columns."""
    return {results(lab.id) / table: cols for lab in all_labs().values() for table, cols in lab.grading.answer_columns.items()}


# Optional imports nothing in grading needs, covered in the sandboxes by a module whose import
# raises ImportError (their importers carry on without them). jsonschema's format checkers:
# nbformat imports jsonschema in the runner and (through Plotly's renderers) in the kernel, and
# validating a notebook checks no format; rfc3987_syntax builds its grammar for ~3 s of CPU in every
# such process, the others (isoduration with arrow, rfc3986_validator, ...) ~0.15 s together.
# ipykernel imports debugpy for its debugger, ~0.25 s of each kernel's start (nobody attaches a
# debugger to a graded kernel).
SKIPPED = ("rfc3987_syntax", "isoduration", "rfc3986_validator", "rfc3339_validator", "webcolors", "jsonpointer",
           "uri_template", "fqdn", "debugpy")
ABSENT = 'raise ImportError("not available while a notebook is graded (mptcplab.grading.answer_keys.SKIPPED)")\n'

PRELUDE = '''class AnswerKeyHidden(RuntimeError):
    """Raised by kit functions that compute graded answers, while a submission is graded."""
'''


def module_file(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin:
        raise ModuleNotFoundError(f"a lab's answer_keys name {module}, which does not exist")
    return Path(spec.origin)


def redact_source(source: str, names: tuple[str, ...], module: str) -> str:
    """The module with each named top-level function reduced to `raise AnswerKeyHidden`."""
    tree = ast.parse(source)
    found = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            found.add(node.name)
            msg = (f"{module}.{node.name} computes a graded answer; it is not available while your notebook "
                   "is graded: compute it yourself")
            node.body = ast.parse(f"raise AnswerKeyHidden({msg!r})").body
    missing = set(names) - found
    if missing:
        raise LookupError(f"a lab's answer_keys: {module} has no top-level function {sorted(missing)}")
    at = next((i for i, n in enumerate(tree.body) if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")
               and not (i == 0 and isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant))), 0)
    tree.body[at:at] = ast.parse(PRELUDE).body
    return ast.unparse(tree) + "\n"


def redact_table(path: Path, columns: tuple[str, ...]) -> str:
    import pandas as pd

    return pd.read_csv(path).drop(columns=list(columns), errors="ignore").to_csv(index=False)


def redacted_files(dest: Path) -> dict[str, str]:
    """Write the redacted copies under dest; {path inside the sandbox: copy} to bind read-only."""
    binds: dict[str, str] = {}
    empty = dest / "empty"
    empty.mkdir(mode=0o755, exist_ok=True)
    for i, (module, names) in enumerate(sorted(functions().items())):
        origin = module_file(module)
        copy = dest / f"{i}-{origin.name}"
        copy.write_text(redact_source(origin.read_text(), names, module))
        os.chmod(copy, 0o644)
        binds[str(origin)] = str(copy)
        cache = origin.parent / "__pycache__"
        if cache.is_dir():
            binds[str(cache)] = str(empty)
    for i, (table, cols) in enumerate(sorted(columns().items())):
        if table.exists():
            copy = dest / f"table{i}-{table.name}"
            copy.write_text(redact_table(table, cols))
            os.chmod(copy, 0o644)
            binds[str(table)] = str(copy)
    return {**binds, **skipped(dest)}


def skipped(dest: Path) -> dict[str, str]:
    """Binds that cover the SKIPPED modules (both sandboxes): a package by a folder, a module by a
    file, whose import raises ImportError."""
    folder = dest / "absent"
    folder.mkdir(mode=0o755, exist_ok=True)
    for stand_in in (folder / "__init__.py", dest / "absent.py"):
        stand_in.write_text(ABSENT)
        os.chmod(stand_in, 0o644)
    binds = {}
    for module in SKIPPED:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.submodule_search_locations:
            binds[list(spec.submodule_search_locations)[0]] = str(folder)
        elif spec is not None and spec.origin and spec.origin.endswith(".py"):
            binds[spec.origin] = str(dest / "absent.py")
    return binds
