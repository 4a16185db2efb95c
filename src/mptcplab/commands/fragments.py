"""`mptcplab fragments [--check]`: every measured number in the guides and the site, generated from
the committed reference results.

In any Markdown file of the repository (README.md, labs/*/README.md and the other Markdown beside
them, site/**/*.md) a block

    <!-- generated: lab3.claims -->
    ...written by this command, never by hand...
    <!-- end generated -->

holds the fragment `claims` of lab `lab3` (`kit.NAME` for kit-wide ones). A lab's fragments come from
its committed reference (solutions/results/<lab>): `<lab>.claims`, the verdicts of its claims.json,
for every lab with one; the rest from `Lab.judging.fragments(reference dir) -> {name: markdown}`.
The kit's own measurements (timings, setup checks, the box, grading, merging) come from its
benchmarks' committed records (`mptcplab.benchmarks`: the kit.* fragments and each lab's
`<lab>.quick-time`).
`mptcplab fragments` rewrites every block in place; `--check` changes nothing and exits 1 listing
stale or unknown blocks, every measured number stated outside a block that nothing committed
holds (`untraced`), and every mark (below) that starts a line inside a paragraph, where it breaks
the paragraph on the site (`broken_marks`).

A *measured number* is a number with a unit of measurement (Mbit/s, ms, KiB, %, x, packets, ...) or
a decimal fraction, in prose or in a fenced block that is not a command (sh, bash, console and toml
blocks and `code spans` are commands and parameters). Outside the blocks it is
*traced* when a fragment of its lab (or a kit.* one) or the lab's parameter file (experiment.toml:
the configuration) holds its value at the precision printed. A file belongs to the lab whose id or
folder its path names; a file that names none (README.md, the site's setup and instructor pages)
states the kit's figures, held by the kit.* fragments and the labs' parameters only. The committed
tables count through the fragments made from them, not cell by cell: a reference's thousands of cells hold nearly any
number of one or two digits, so matching them would trace almost anything. Values typed by hand
carry a mark that renders as nothing on GitHub and on the site:

    the paper measured <!-- paper -->46.8 Mbit/s at 1 MiB<!-- end paper --> (Fig. 3)
    the check allows <!-- config -->2%<!-- end config --> around the configured RTT

`paper`: the paper's own values and configuration; `config`: the kit's own settings (a tolerance,
a default, a requirement).
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .. import benchmarks
from ..core import paths
from ..judge import claims
from ..run.lab import all_labs

BLOCK = re.compile(r"<!-- generated: (?P<name>[\w-]+\.[\w.-]+) -->\n(?P<body>.*?)<!-- end generated -->", re.S)
BEGIN = re.compile(r"<!-- generated: ([^ ]*) -->")
TYPED = re.compile(r"<!-- (?P<kind>paper|config) -->.*?<!-- end (?P=kind) -->", re.S)
COMMAND_FENCES = ("sh", "bash", "console", "shell", "toml")  # commands and parameters

UNIT = (r"(?:[MGk]bit/s|bit/s|[MGk]bps|[MGK]B/s|[KMG]iB|[KMG]B|kB|ms|µs|us|ns|s|sec|seconds?|min|minutes?|h|hours?"
        r"|%|x|×|packets?|pkts|segments?|bytes?|MSS|RTTs?)")
NUM = r"[-+−]?\d+(?:\.\d+)?"
MEASURED = re.compile(rf"(?<![\w.\-/=])(?P<a>{NUM})(?:\s*(?:-|–|\.\.|to)\s*(?P<b>{NUM}))?\s?(?P<unit>{UNIT})(?![\w/])"
                      rf"|(?<![\w.\-/=:])(?P<d>[-+−]?\d+\.\d+)(?!\w|\.\d|/)")  # not a DOI's 10.1109/
VERSION_WORDS = re.compile(r"(?i)(python|kernel|linux|version|v|debian|ubuntu|release|iproute2|rfc|section|§"
                           r"|virtualbox|vagrant|qemu|macos|lima|format)\s*(?:>=|≥)?\s*$")  # kernel >= 5.15


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    text: str
    why: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.why}: {self.text}"


def documents(root: Path) -> list[Path]:
    """The Markdown files fragments may live in: README.md, the labs' folders, the site."""
    found = [root / "README.md", *sorted((root / "labs").glob("*/*.md")), *sorted((root / "site").rglob("*.md"))]
    return [p for p in found if p.is_file() and "_hooks" not in p.parts]


def reference(root: Path, lab_id: str) -> Path:
    return root / "solutions" / "results" / lab_id


def produce(root: Path) -> dict[str, str]:
    """Every fragment by its full name, from the committed references."""
    out: dict[str, str] = {}
    lines = []
    for lab in all_labs().values():
        ref = reference(root, lab.id)
        doc = claims.load(ref)
        if doc is not None:
            out[f"{lab.id}.claims"] = claims.markdown(doc)
            lines.append(f"| {lab.id} | {lab.title} | {claims.summary_line(doc)} |")
        if lab.judging.fragments is not None and ref.exists():
            out.update({f"{lab.id}.{name}": text for name, text in lab.judging.fragments(ref).items()})
    if lines:
        out["kit.claims"] = "| lab | title | the paper's claims on the reference |\n|---|---|---|\n" + "\n".join(lines) + "\n"
    out.update(benchmarks.fragments(root))
    return out


def _body(text: str) -> str:
    return text.rstrip("\n") + "\n"


STALE = "stale: `mptcplab fragments` rewrites it"


def refresh(root: Path, write: bool, made: dict[str, str] | None = None) -> list[Finding]:
    """Rewrite (write=True) or compare every generated block (`made`: produce(root), if already
    made); the stale (rewritten when writing), unknown and unclosed ones."""
    made = produce(root) if made is None else made
    problems = []
    for path in documents(root):
        text = path.read_text()
        rel = str(path.relative_to(root))
        opened = {m.start() for m in BEGIN.finditer(text)}
        closed = {m.start() for m in BLOCK.finditer(text)}
        for start in sorted(opened - closed):
            problems.append(Finding(rel, _line(text, start), BEGIN.match(text, start).group(0),
                                    "block without `<!-- end generated -->` or with a bad name"))

        def swap(m: re.Match) -> str:
            name = m.group("name")
            if name not in made:
                problems.append(Finding(rel, _line(text, m.start()), name,
                                        f"unknown fragment (known: {', '.join(sorted(made)) or 'none'})"))
                return m.group(0)
            if m.group("body") != _body(made[name]):
                problems.append(Finding(rel, _line(text, m.start()), name, STALE))
            return f"<!-- generated: {name} -->\n{_body(made[name])}<!-- end generated -->"

        new = BLOCK.sub(swap, text)
        if write and new != text:
            path.write_text(new)
    return problems


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


# ------------------------------------------------------------------ numbers outside the blocks

def _blank(match: re.Match) -> str:
    """A span replaced by as many newlines as it had (line numbers stay right)."""
    return "\n" * match.group(0).count("\n")


def prose(text: str) -> str:
    """`text` without what may hold typed numbers: generated blocks, the paper's marked values, code
    spans, fenced command blocks, HTML comments and link targets."""
    text = BLOCK.sub(_blank, text)
    text = TYPED.sub(_blank, text)
    text = re.sub(r"^(?P<f>```|~~~)\s*(?:\{?\.?)(?:" + "|".join(COMMAND_FENCES) + r")\b.*?^(?P=f)\s*$", _blank,
                  text, flags=re.S | re.M)
    text = re.sub(r"^```\s*$.*?^```\s*$", lambda m: m.group(0).replace("```", ""), text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    text = re.sub(r"<!--.*?-->", _blank, text, flags=re.S)
    text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets (file names with digits)
    return text


def measured(text: str) -> list[tuple[int, str, list[str]]]:
    """(line, the quantity as written, its numbers) for every measured number in `text`'s prose."""
    found = []
    for n, line in enumerate(prose(text).splitlines(), 1):
        for m in MEASURED.finditer(line):
            if m.group("d") and VERSION_WORDS.search(line[:m.start()]):
                continue  # Python 3.11, kernel 6.12
            nums = [x for x in (m.group("a"), m.group("b"), m.group("d")) if x]
            found.append((n, m.group(0).strip(), nums))
    return found


class Held:
    """The values a lab's committed tables, fragments and parameters hold, at every precision up to 4
    decimals: a printed 46.8 is held by 46.79 in a table."""

    def __init__(self) -> None:
        self.values: set[tuple[int, float]] = set()

    def add(self, v: float) -> None:
        for d in range(5):
            self.values.add((d, round(abs(v), d)))

    def add_text(self, text: str) -> None:
        for x in re.findall(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text):
            try:
                self.add(float(x))
            except ValueError:
                pass

    def holds(self, printed: str) -> bool:
        printed = printed.replace("−", "-").lstrip("+-")
        d = len(printed.split(".")[1]) if "." in printed else 0
        v = float(printed)
        if (d, round(v, d)) in self.values:
            return True
        d2 = min(d + 2, 4)  # a fraction printed as a percentage: 0.283 in a table, 28.3%
        return (d2, round(v / 100, d2)) in self.values


def held(root: Path, lab_id: str | None, fragments: dict[str, str]) -> Held:
    """What a file of `lab_id` may state outside a block: its lab's fragments and the kit's, and its
    parameters (experiment.toml: configuration). A file of no lab (`None`: the kit's pages) states
    the kit's own figures: the kit.* fragments and any lab's parameters, never a lab's results,
    whose many numbers would trace nearly any figure by chance."""
    h = Held()
    for name, text in fragments.items():
        if name.startswith("kit.") or (lab_id is not None and name.startswith(f"{lab_id}.")):
            h.add_text(text)
    labs = all_labs()
    for lab in labs.values() if lab_id is None else [labs[lab_id]]:
        if lab.params_file.exists():
            h.add_text(json.dumps(tomllib.loads(lab.params_file.read_text())))
    return h


def owner(root: Path, path: Path, labs) -> list[str | None]:
    """The labs a file speaks for: the one its path names (id or folder), else none ([None]: the kit)."""
    rel = str(path.relative_to(root)).lower()
    return [lab.id for lab in labs.values() if lab.id in rel or lab.slug in rel] or [None]


def untraced(root: Path, made: dict[str, str] | None = None) -> list[Finding]:
    """Measured numbers outside generated blocks that nothing committed holds (see the docstring)."""
    labs, made = all_labs(), produce(root) if made is None else made
    holders = {i: held(root, i, made) for i in [None, *labs]}
    out = []
    for path in documents(root):
        rel = str(path.relative_to(root))
        mine = [holders[i] for i in owner(root, path, labs)]
        for line, quantity, nums in measured(path.read_text()):
            if not all(any(h.holds(x) for h in mine) for x in nums):
                out.append(Finding(rel, line, quantity, "untraced number: generate it, or mark the paper's own "
                                   "values with <!-- paper -->, the kit's settings with <!-- config -->"))
    return out


MARK_AT_LINE_START = re.compile(r"^\s*<!-- (?:end )?(?:paper|config) -->")


def broken_marks(root: Path) -> list[Finding]:
    """Marks that start a line inside a paragraph or a list item: Python-Markdown takes such a line
    for the start of an HTML block, so on the site the paragraph breaks in two there (and a list
    ends). A mark belongs mid-line, or on a line of its own after a blank one (around a table)."""
    out = []
    for path in documents(root):
        lines = BLOCK.sub(_blank, path.read_text()).splitlines()
        for n, (before, line) in enumerate(zip(["", *lines], lines), 1):
            if MARK_AT_LINE_START.match(line) and before.strip():
                out.append(Finding(str(path.relative_to(root)), n, line.strip()[:60],
                                   "a mark starting a line inside a paragraph breaks it on the site: move it mid-line"))
    return out


def register(sub) -> None:
    p = sub.add_parser("fragments", help="rewrite the generated blocks of the guides and the site from the "
                       "committed reference results")
    p.add_argument("--check", action="store_true", help="change nothing: exit 1 listing stale blocks, "
                   "measured numbers outside them that nothing committed holds, and marks that break a paragraph")
    p.add_argument("--root", type=Path, default=None, help="the repository (default: this checkout)")
    p.set_defaults(func=_fragments)


def _fragments(args) -> int:
    root = (args.root or paths.REPO_ROOT).resolve()
    made = produce(root)  # Lab 1's fragments read its detailed runs: seconds, made once
    problems = refresh(root, write=not args.check, made=made)
    if args.check:
        problems += untraced(root, made=made) + broken_marks(root)
        for p in problems:
            print(p)
        print(f"{len(problems)} problem(s)" if problems else "fragments: every block current, every measured number traced")
        return 1 if problems else 0
    rewritten = [p for p in problems if p.why == STALE]
    for p in problems:
        print(f"{p.file}:{p.line}: rewrote {p.text}" if p.why == STALE else p)
    print(f"{len(rewritten)} block(s) rewritten")
    return 1 if len(rewritten) < len(problems) else 0
