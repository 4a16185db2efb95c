"""Regenerate the crafted bad submissions from the fixture lab (tests/grading/fixtures/grading/99-fixture.ipynb).

    python tests/grading/bad_submissions/make_bad_submissions.py

Each starts from a perfect submission (the student notebook with the master's solutions filled in)
and breaks it one way. The expected scores live in tests/grading/test_grading_bad_submissions.py.
"""

import copy
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
    nb.cells.insert(3, nbf.v4.new_code_cell('''import glob, os
found = []
patterns = ["/work/**/tests/*.py", "/work/**/*autograder*.zip", "/work/**/solutions/*.ipynb", "/work/**/build/assign/**",
            "/vagrant/solutions/*.ipynb", "/vagrant/build/**", "/vagrant/tests/**", "/tmp/**", "/root/**", "/home/**",
            "../solutions/*.ipynb", "../build/**", "../tests/**", "../.git/**"]
for pat in patterns:
    found += [p for p in glob.glob(pat, recursive=True) if os.path.isfile(p)][:50]
secret = []
for p in found:
    try:
        if "hidden" in open(p, errors="replace").read().lower():
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


NOTES = {
    syntax_error: "a syntax error in the q1 answer; q2 is right.",
    infinite_loop: "an endless loop in q1: that cell is stopped at the cell time limit, the rest still runs.",
    deleted_checks: "right answers, every check cell deleted: the checks run anyway.",
    edited_checks: "wrong answers; check cells and the notebook's public tests rewritten to always pass.",
    enormous_output: "prints ~55 MB and tries to write a 512 MiB file, then answers correctly.",
    read_hidden_tests: "hunts the filesystem for hidden tests and tries to rewrite them; q1 wrong.",
    network_access: "tries to reach the network, then answers correctly.",
    memory_hog: "allocates 16 GiB, then answers correctly.",
}


def main() -> int:
    base = perfect_submission()
    for make, note in NOTES.items():
        nb = copy.deepcopy(base)
        make(nb)
        nb.cells.insert(1, nbf.v4.new_markdown_cell(f"**Crafted bad submission (grader tests):** {note}"))
        nbf.write(nb, HERE / f"{make.__name__}.ipynb")
    (HERE / "not_a_notebook.ipynb").write_text('{"cells": [ this is not json\n')
    return 0


if __name__ == "__main__":
    sys.exit(main())
