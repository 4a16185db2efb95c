"""What a student reads (report.md) and what the instructor keeps (report.json).

A student's report says what they can act on: the score per question, each failing *public*
check's message, how many hidden checks failed (never their text), the written answers as handed
in with their points, which the instructor grades, and what went wrong while the notebook ran, in
words, each cell named as JupyterLab shows it (its place from the top, its first line, the check
below it). Machinery paths, tracebacks and runner internals go to report.json only. A question whose answer cells are still the handed-out `...` scores nothing
(even if a check happens to hold on shipped data) and its follow-on errors are folded into
"not answered yet"; an optional one (0 points) left so is a note, not a problem. So is a cell that
read a column the graded tables do not hold (one of the kit's answers, or a goodput renamed since:
the note names its current name).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

from ..measure.traffic import current_column
from ..run.lab import REPO_ROOT, all_labs
from .files import write_text
from .reference import results

WITHHELD = "(message withheld: it quoted a hidden check)"


# ---------------------------------------------------------------- the handed-out notebook

def template_answers(student_nb: Path) -> dict[str, list[str]]:
    """question -> sources of its answer cells in the notebook students were given (Otter tags them
    `otter_answer_cell`; they precede the question's `grader.check("qN")` cell)."""
    import nbformat

    out: dict[str, list[str]] = {}
    pending: list[str] = []
    for c in nbformat.read(student_nb, as_version=4).cells:
        if c.cell_type != "code":
            continue
        if "otter_answer_cell" in c.metadata.get("tags", []):
            pending.append(c.source.strip())
        m = re.search(r"grader\.check\(\s*[\"'](\w+)[\"']", c.source)
        if m:
            out.setdefault(m[1], []).extend(pending)
            pending = []
    return out


class _ModuleNames(ast.NodeVisitor):
    """The names a cell binds in the notebook's namespace: not a function's locals nor a
    comprehension's variables (Lab 1's Q7 cell loops over `name` inside a comprehension, as Q2's
    cell does at the top: answering Q2 once made Q7 read as answered)."""

    def __init__(self):
        self.names: set[str] = set()

    def visit_FunctionDef(self, node):  # its name, not its body
        self.names.add(node.name)
        for d in node.decorator_list:
            self.visit(d)

    visit_AsyncFunctionDef = visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node):
        pass

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store):
            self.names.add(node.id)


def _names(src: str) -> set[str]:
    """Names an answer cell defines in the notebook (module-level assignments, functions, classes);
    for a cell that does not parse, the names its unindented lines start to assign or define (a
    syntax error is still an answer)."""
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return {m[1] or m[2] for m in re.finditer(r"^(?:def\s+(\w+)|(\w+)\s*=[^=])", src, re.M)}
    v = _ModuleNames()
    v.visit(tree)
    return {n for n in v.names if not n.startswith("_")}


def unanswered(template: dict[str, list[str]], sources: list[str]) -> set[str]:
    """Questions nothing of the student's own went into: no cell other than the handed-out answer
    cells defines one of their names (or, for a question whose cells define no name, every one of
    its cells still stands as handed out)."""
    stripped = [s.strip() for s in sources]
    template_cells = {s for cells in template.values() for s in cells}
    own = [s for s in stripped if s not in template_cells]
    defined = set().union(*(_names(s) for s in own)) if own else set()
    out = set()
    for q, cells in template.items():
        names = set().union(*(_names(c) for c in cells)) if cells else set()
        if (names and not names & defined) or (not names and all(c in stripped for c in cells)):
            out.add(q)
    return out


BEGIN_WRITTEN, END_WRITTEN = "<!-- BEGIN QUESTION -->", "<!-- END QUESTION -->"
ANSWER_CAP = 20_000  # characters of one written answer kept (report.md quotes fewer)


def written_blocks(sources: list[str]) -> list[str]:
    """The text between each `<!-- BEGIN QUESTION -->` and the next `<!-- END QUESTION -->`. Otter
    keeps these markers around each written (`manual`) question, in the master's order, in cells a
    student cannot edit or delete; the cell that opens one is the question, not the answer."""
    blocks: list[str] = []
    current: list[str] | None = None
    for src in sources:
        if END_WRITTEN in src and current is not None:
            blocks.append("\n\n".join(current).strip())
            current = None
        if BEGIN_WRITTEN in src:
            current = []
        elif current is not None:
            current.append(src.strip())
    if current is not None:
        blocks.append("\n\n".join(current).strip())
    return blocks


def written_answers(names: list[str], sources: list[str], handed: list[str]) -> dict[str, str | None]:
    """question -> the student's text for each written question (`names`, in the master's order);
    None where it still reads as handed out. {} when the notebook's written questions cannot be
    told apart (their markers gone: the instructor reads the notebook itself)."""
    got, blank = written_blocks(sources), written_blocks(handed)
    if len(got) != len(names):
        return {}
    return {q: None if not text or (k < len(blank) and text == blank[k]) else text[:ANSWER_CAP]
            for k, (q, text) in enumerate(zip(names, got))}


# ---------------------------------------------------------------- words a student can act on

def natural(question: str) -> list:
    """Sort key: q2 before q16, as the notebook asks them."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", question)]


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def cell_name(index: int, sources: list[str]) -> str:
    """A cell as a student finds it in JupyterLab, which shows no numbers: its place from the top
    (`index` counts from 1, as the runner does), its first line, and the question check below it."""
    name = f"the {_ordinal(index)} cell"
    if not 0 < index <= len(sources):
        return name
    first = next((ln.strip() for ln in sources[index - 1].splitlines() if ln.strip()), "")
    first = first.replace("`", "'")
    words = [f"starting `{first[:40]}{'…' if len(first) > 40 else ''}`"] if first else []
    below = next((m[1] for s in sources[index - 1:]  # a check cell's own line, not a markdown cell quoting one
                  for m in [re.search(r"^\s*grader\.check\(\s*[\"'](\w+)[\"']", s, re.M)] if m), None)
    if below:
        words.append(f"above {below}'s check")
    return name + (f" ({', '.join(words)})" if words else "")


def _cells(indices, sources: list[str]) -> str:
    return "; ".join(cell_name(i, sources) for i in indices)


_PATHS = [(re.escape(str(REPO_ROOT)) + r"/", ""), (re.escape(sys.prefix) + r"/\S*?site-packages/", ""),
          (r"/usr/lib/python3[\d.]*/(site-packages/|dist-packages/)?", ""), (r"/tmp/[\w.-]*mlab[\w.-]*/\S*", "…")]


def plain(text: str, limit: int = 400) -> str:
    """One line, no machinery paths or traceback frames."""
    text = str(text)
    if "Traceback (most recent call last)" in text:
        last = [ln for ln in text.splitlines() if re.match(r"^\w[\w.]*(Error|Exception|Exit|Interrupt)\b", ln)]
        text = last[-1] if last else "an error inside the grading machinery"
    for pat, repl in _PATHS:
        text = re.sub(pat, repl, text)
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)  # ANSI colours from IPython
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


def _is_follow_on(err: dict) -> bool:
    return "ellipsis" in (err.get("evalue") or "").lower()


def lab_columns(stem: str) -> tuple[set[str], set[str]]:
    """For the notebook `stem` ("03-parallel-tcp"): the columns grading removes from its lab's
    reference tables (`Lab.grading.answer_columns`) and every column those tables hold."""
    lab = next((lab for lab in all_labs().values() if lab.slug == stem), None)
    if lab is None:
        return set(), set()
    held: set[str] = set()
    for table in results(lab.id).glob("*.csv"):
        with open(table) as f:
            held |= set(f.readline().strip().split(","))
    return {c for cols in lab.grading.answer_columns.values() for c in cols}, held


def _columns_read(err: dict) -> list[str]:
    """The names a missing-column error quotes: pandas' KeyError ('model1', or "['model1'] not in
    index"), an attribute (`runs.model1`) or a name in `query`."""
    if err["ename"] not in ("KeyError", "AttributeError", "UndefinedVariableError"):
        return []
    return re.findall(r"'(\w+)'", err.get("evalue") or "")


def _sources(notebook: bytes | None) -> list[str]:
    """Every cell's source, in order ([] for no notebook or one that is not JSON)."""
    if not notebook:
        return []
    try:
        nb = json.loads(notebook)
    except ValueError:
        return []
    return ["".join(c.get("source", "")) if isinstance(c.get("source"), list) else str(c.get("source", ""))
            for c in nb.get("cells", []) if isinstance(c, dict)]


def apply_template(result: dict, ag, notebook: bytes | None, status: dict, opt) -> None:
    """Turn the runner's status into the problems a student reads, zero the unanswered questions,
    and keep the text of the written answers (`result["written"]`) for the instructor."""
    sources = _sources(notebook)
    handed = ag.student_notebook.read_bytes() if ag.student_notebook.exists() else None
    if result.get("written") and sources:
        result["written_answers"] = written_answers(list(result["written"]), sources, _sources(handed))
    template = template_answers(ag.student_notebook) if handed else {}
    todo = unanswered(template, sources) if (sources or not status.get("executed")) else set(template)
    if not sources:
        todo = set(template)  # nothing ran: nothing was answered
    template_cells = {s for cells in template.values() for s in cells}
    for q in result["questions"]:
        if q["question"] in todo:
            q["unanswered"] = True
            q["score"] = 0.0
    problems = result["problems"]
    for item in status.get("malformed_cells", []):
        problems.append(f"{cell_name(item['cell'], sources)} is malformed ({item['why']}) and was skipped; the other cells ran")
    if status.get("fatal"):
        if status["fatal"] == "DeadKernelError":
            problems.append(f"the Python kernel died (memory limit {opt.limits.memory_mb} MiB per process and "
                            f"{opt.limits.tree_memory_mb} MiB in all, file-size limit {opt.limits.file_mb} MiB, or the "
                            "notebook exited); later cells did not run; values computed before were kept and graded")
        elif status["fatal"].startswith("the file is not a readable notebook"):
            problems.append(plain(status["fatal"]))
        else:
            problems.append("the notebook runner stopped early; values computed before were graded")
            result["internal"].append(f"runner: {status['fatal']}: {status.get('detail', '')}")
    timed = set(status.get("timed_out_cells", []))
    for index in sorted(timed):
        if index == status.get("stuck_cell"):
            problems.append(f"{cell_name(index, sources)} ran longer than {opt.cell_timeout} s and ignored the interrupt: the cells "
                            "after it did not run; values computed before it were kept and graded")
        else:
            problems.append(f"{cell_name(index, sources)} ran longer than {opt.cell_timeout} s and was interrupted (the cells after it still ran)")
    if status.get("deadline"):
        problems.append(f"the notebook reached its {opt.limits.wall_s} s limit at "
                        f"{cell_name(status.get('stopped_at_cell') or 0, sources)}; "
                        "the cells from there on did not run; values computed before were graded")
    if status.get("executed") and not status.get("env_saved"):
        problems.append("the values your notebook computed could not be saved for checking (did it fill /tmp or "
                        "its folder, or replace the grader's helpers?)")
    if status.get("notebook_bytes"):
        problems.append(f"your notebook was {status['notebook_bytes'] / 2**20:.1f} MiB after running, over the "
                        f"{opt.notebook_mb} MiB cap: its outputs were left out of executed.ipynb (your answers were "
                        "graded); print less, or show a sample of large tables")
    if status.get("output_truncated"):
        problems.append(f"output beyond {opt.max_output} bytes was dropped")
    if status.get("rich_truncated"):
        problems.append(f"figures and tables beyond {opt.notebook_mb} MiB were left out of executed.ipynb (your answers "
                        "were graded); show fewer or smaller figures")
    folded, hidden_keys = [], []
    hidden_names: set[str] = set()  # names that cells drawing a hidden answer key would have set
    # A column the notebook read that its tables no longer hold when graded: one of the kit's own
    # answers (removed while grading), or a goodput renamed since (its current name): a note each,
    # where the cell ran on the student's tables as they were. note's words -> cells; name -> note.
    hidden_columns, held = lab_columns(getattr(ag, "stem", ""))
    column_notes: dict[str, list[int]] = {}
    column_names: dict[str, str] = {}
    for err in status.get("cell_errors", []):
        i = err["cell"]
        if i in timed and err["ename"] == "KeyboardInterrupt":
            continue
        src = sources[i - 1].strip() if 0 < i <= len(sources) else ""
        missing = re.match(r"name '(\w+)' is not defined", err.get("evalue") or "")
        read = _columns_read(err)
        hidden_col = next((c for c in read if c in hidden_columns), None)
        renamed = next((c for c in read if current_column(c, held)), None)
        if err["ename"] == "AnswerKeyHidden" or (err["ename"] == "NameError" and missing and missing[1] in hidden_names):
            hidden_keys.append(i)  # the kit's hidden function, or a cell that needed what it would have made
            hidden_names |= _names(src)
        elif hidden_col or renamed or (err["ename"] == "NameError" and missing and missing[1] in column_names):
            words = (f"read `{hidden_col}`, one of the kit's own answers, which grading removes from its tables "
                     "(expected; nothing to fix)" if hidden_col else
                     f"read the column `{renamed}`, which the kit now names `{current_column(renamed, held)}`: "
                     "use that name" if renamed else column_names[missing[1]])
            column_notes.setdefault(words, []).append(i)
            column_names |= dict.fromkeys(_names(src), words)
        elif src in template_cells or _is_follow_on(err):
            folded.append(i)
        else:
            problems.append(f"{cell_name(i, sources)} raised {plain(err['ename'], 80)}: {plain(err['evalue'])}")
    # An optional question (0 points) left unanswered is a note, not a problem: nothing is missing.
    optional = {q["question"] for q in result["questions"] if not q["possible"]}
    of_optional = {s for q in todo & optional for s in template.get(q, [])}
    later = [i for i in folded if 0 < i <= len(sources) and sources[i - 1].strip() in of_optional]
    folded = [i for i in folded if i not in later]
    if todo - optional:
        qs = ", ".join(sorted(todo - optional, key=natural))
        problems.append(f"question(s) {qs} not answered yet" + (f" (stopped at the unanswered `...`: "
                                                                f"{_cells(folded, sources)})" if folded else ""))
    elif folded:
        problems.append(f"still using an unanswered `...`: {_cells(folded, sources)}")
    if todo & optional:
        qs = ", ".join(sorted(todo & optional, key=natural))
        result.setdefault("notes", []).append(
            f"optional question(s) {qs} (0 points) not answered: nothing to fix"
            + (f"; their cells still hold the handed-out `...`: {_cells(later, sources)}" if later else ""))
    for words, cells in column_notes.items():  # the first cell read the column, the others needed what it sets
        result.setdefault("notes", []).append(f"{_cells(cells, sources)}: stopped here because "
                                              f"{'it' if len(cells) == 1 else 'the first'} {words}")
    if hidden_keys:  # a note, not a problem: the student has nothing to fix
        result.setdefault("notes", []).append(
            "the kit's own answers are hidden while grading, so what shows them did not run here (expected; "
            f"nothing to fix): {_cells(hidden_keys, sources)}")


# ---------------------------------------------------------------- the files

def hidden_lines(tests: dict[str, str]) -> set[str]:
    """Lines of hidden test cases long enough to recognise if a message ever quotes one."""
    from .checker import hidden_code  # either of Otter's formats

    out = set()
    for src in tests.values():
        for code in hidden_code(src):
            for line in code.splitlines():
                line = " ".join(re.sub(r"^(>>>|\.\.\.)\s?", "", line.strip()).split())
                if len(line) >= 16:
                    out.add(line)
    return out


def _safe(text: str, secret: set[str]) -> str:
    flat = " ".join(str(text).split())
    return WITHHELD if any(s in flat for s in secret) else text


def _pts(x: float) -> str:
    return f"{round(x, 2):g}"


def _explain(message: str) -> str:
    m = re.match(r"NameError: name '(\w+)' is not defined", message)
    if m:
        return f"`{m[1]}` is not defined: the cell that sets it did not run or failed (see below)"
    return plain(message.removeprefix("AssertionError: "), 500)


def _written_lines(written: dict[str, float], answers: dict[str, str | None] | None, quote: int = 4000) -> list[str]:
    """The written answers as handed in, each with its points, for the instructor to mark and the
    student to see what was read."""
    total = sum(written.values())
    lines = ["", f"## Your written answers (graded by your instructor: {_pts(total)} point{'' if total == 1 else 's'})", ""]
    if not answers:
        why = ("they could not be told apart in your notebook (the cells around them were changed)" if answers == {}
               else "your notebook could not be read here")
        return lines + [f"Not quoted: {why}; your instructor reads them in your notebook."]
    for q in sorted(written, key=natural):
        pts, text = written[q], answers.get(q)
        head = f"**{q}** ({_pts(pts)} point{'' if pts == 1 else 's'})"
        if text is None:
            lines += [f"{head}: not answered", ""]
            continue
        cut = text[:quote] + ("…" if len(text) > quote else "")
        lines += [head, "", *[f"> {ln}".rstrip() for ln in cut.splitlines()], ""]
    return lines[:-1]


def write(r: dict, dest: Path, tests: dict[str, str]) -> None:
    secret = hidden_lines(tests)
    write_text(dest, "report.json", json.dumps(r, indent=1, default=str))
    pct = 100 * r["score"] / r["possible"] if r["possible"] else 0
    written = r.get("written") or {}
    lines = [f"# {r['lab']}: grade for {r['student']}", "",
             f"**Score: {_pts(r['score'])} / {_pts(r['possible'])}{' automatic points' if written else ''} ({pct:.0f}%)**", ""]
    if written:  # the score above is the checks' part only: say so where the percentage is read
        qs, total = sorted(written, key=natural), sum(written.values())
        lines += [f"The score and its percentage are of the automatically checked questions only. Your {len(qs)} written "
                  f"answer{'' if len(qs) == 1 else 's'} ({', '.join(qs)}: {_pts(total)} point{'' if total == 1 else 's'}, "
                  f"quoted below) {'is' if len(qs) == 1 else 'are'} graded by your instructor, not here.", ""]
    lines += ["| question | score | feedback |", "|---|---|---|"]
    for q in sorted(r["questions"], key=lambda q: natural(q["question"])):
        optional = "0 points, feedback only: " if not q["possible"] else ""
        if q.get("not_graded"):
            text = "not graded: see below"
        elif q.get("unanswered"):
            text = f"{optional}not answered" + ("" if optional else " yet")
        else:
            public_fail = list(dict.fromkeys(_explain(c["message"]) for c in q["cases"] if not c["passed"] and not c["hidden"]))
            hidden_fail = sum(1 for c in q["cases"] if not c["passed"] and c["hidden"])
            notes = [_safe(n, secret) for n in public_fail[:3]] + ([f"{hidden_fail} hidden check(s) failed"] if hidden_fail else [])
            text = optional + ("; ".join(notes) or "all checks passed")
        text = text.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {q['question']} | {_pts(q['score'])} / {_pts(q['possible'])} | {text} |")
    if not r["questions"]:
        lines.append("| (none) | 0 | no check could be run |")
    if written and r.get("status") != "not graded":  # a file not run: its reason is all there is to say
        lines += _written_lines(written, r.get("written_answers"))
    lines += ["", "## What happened when your notebook ran", ""]
    lines += [f"- {_safe(plain(p, 600), secret)}" for p in r["problems"]] or ["- it ran to the end without errors"]
    lines += [f"- note: {plain(n, 600)}" for n in r.get("notes", [])]
    if r.get("skipped_values"):
        lines += ["", "Values the checks could not use (store your answers as numbers, strings, lists, dicts, "
                  "numpy arrays or DataFrames):", ""]
        lines += [f"- `{k}`: {_safe(plain(v, 200), secret)}" for k, v in sorted(r["skipped_values"].items())[:20]]
    # No time: how long grading took would tell a notebook that sleeps under a hidden check how
    # that check went (report.json keeps the seconds for the instructor).
    lines += ["", "_Not run: see above._" if r["status"] == "not graded" else
              "_Graded in a sandbox (no network, unprivileged, time- and memory-limited)."
              + (f" Submission SHA-256 {r['submission_sha256'][:16]}… unchanged._" if r.get("submission_sha256") else "_")]
    write_text(dest, "report.md", "\n".join(lines) + "\n")
