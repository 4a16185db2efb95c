"""A batch as handed in: which lab each submission belongs to, graded lab by lab, and every file a row.

The lab is read from the file's bytes (`files.read_submission`: never through a link), whatever the
file is called: first the notebook metadata the kit writes into every notebook it hands out
(`autograder.KIT_METADATA`, kept by Jupyter through saves, renames and copies); for a notebook
handed out before that field existed, Otter's first cell (`otter.Notebook("01-send-buffer.ipynb")`,
which a student who renames the copy edits); failing both, its text: the lab whose master shares
most of its markdown cells (the questions' wording, which students do not edit), when that lab
shares at least `MATCH_MIN` of them and over twice as many as any other. A file the grader refuses
to read (a link, a FIFO, a directory named `*.ipynb`, a hard link) is sorted by its name's `NN-`
prefix if it has one. What cannot be placed never stops the batch: in a batch of one lab it joins
that lab (garbage is then graded as unreadable, a refused file as refused) and a file naming a lab
the kit does not have is a 0 row there with the reason; in a batch of several labs (each in a
folder of its own) every file of unknown lab is a 0 row with its reason in `unknown-lab/gradebook.csv`.
Every gradebook is written.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from ..core.errors import UsageError
from . import autograder, batch
from .files import Oversized, Refused, read_submission

UNKNOWN = "unknown-lab"  # the folder of a mixed batch's rows whose lab cannot be told
OTTER_INIT = re.compile(rb'otter\.Notebook\(\\?"(\d\d-[\w-]+)\.ipynb')
MATCH_MIN = 5  # markdown cells a notebook must share with a master to be placed by its text


def _markdown(nb: object) -> set[str]:
    cells = nb.get("cells") if isinstance(nb, dict) else None
    out = set()
    for c in cells if isinstance(cells, list) else []:
        if isinstance(c, dict) and c.get("cell_type") == "markdown":
            src = c.get("source", "")
            text = "".join(src) if isinstance(src, list) and all(isinstance(x, str) for x in src) else src
            if isinstance(text, str) and text.strip():
                out.add(text.strip())
    return out


@functools.lru_cache(maxsize=16)
def _master_markdown(master: Path, mtime_ns: int) -> frozenset[str]:  # read once per batch, again if edited
    return frozenset(_markdown(json.loads(master.read_bytes())))


def lab_by_text(nb: object, solutions: Path = autograder.SOLUTIONS) -> str | None:
    """The master a notebook's markdown cells come from (see the module's docstring), or None."""
    mine = _markdown(nb)
    shared = sorted(((len(mine & _master_markdown(m, m.stat().st_mtime_ns)), m.stem) for m in autograder.masters(solutions)),
                    reverse=True)
    if not shared or shared[0][0] < MATCH_MIN or (len(shared) > 1 and shared[1][0] * 2 >= shared[0][0]):
        return None
    return shared[0][1]


def lab_named(nb: object) -> str | None:
    """The lab the kit's notebook metadata names (`autograder.KIT_METADATA`), or None."""
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    kit = meta.get(autograder.KIT_METADATA) if isinstance(meta, dict) else None
    name = kit.get("notebook") if isinstance(kit, dict) else None
    return name if isinstance(name, str) and re.fullmatch(r"\d\d-[\w-]+", name) else None


def lab_of(path: Path, cap: int, solutions: Path = autograder.SOLUTIONS) -> tuple[str | None, str | None]:
    """(the lab a submission names, or whose text it is; why it cannot be read as a notebook or None)."""
    try:
        data = read_submission(path, cap)
        try:
            nb = json.loads(data)
        except (ValueError, UnicodeDecodeError, RecursionError):
            nb = None
        otter = OTTER_INIT.search(data)
        name = lab_named(nb) or (otter[1].decode() if otter else None) or lab_by_text(nb, solutions)
        if name:
            return name, None
        why = None
    except (Refused, Oversized) as exc:  # not read: its name is all there is
        why = exc.args[0] if isinstance(exc, Refused) else None
    m = re.match(r"(\d\d)-", path.name)
    return (m[1] if m else None), why


def cannot_tell(solutions: Path = autograder.SOLUTIONS) -> str:
    """Why a readable file has no lab, and how to grade it all the same."""
    names = " or ".join(m.stem for m in autograder.masters(solutions))
    return ("its lab cannot be told: it is no notebook the kit handed out (no `mptcplab` notebook metadata, no first "
            f"cell opening {names}, no lab's text); grade it with --lab if it is one")


def sort_by_lab(subs: list[Path], lab: str | None, cap: int, solutions: Path = autograder.SOLUTIONS
                ) -> tuple[dict[Path, list[Path]], dict[Path, str]]:
    """(master -> its submissions, file -> why no lab takes it). See the module's docstring."""
    if lab:
        return {autograder.find_master(lab, solutions): list(subs)}, {}
    groups: dict[Path, list[Path]] = {}
    named_no_lab: list[Path] = []
    unknown: dict[Path, str] = {}
    for s in subs:
        name, why = lab_of(s, cap, solutions)
        if name is None:
            named_no_lab.append(s)
            unknown[s] = why or cannot_tell(solutions)
            continue
        try:
            groups.setdefault(autograder.find_master(name, solutions), []).append(s)
        except UsageError:
            unknown[s] = f"it names lab {name}, which this kit does not have"
    if len(groups) == 1:  # one lab: what names none joins it (graded there, as unreadable if it is)
        only = next(iter(groups.values()))
        only += named_no_lab
        for s in named_no_lab:
            del unknown[s]
    return groups, unknown


def grade_all(subs: list[Path], out: Path, opt: batch.Options, lab: str | None = None, master: Path | None = None,
              solutions: Path = autograder.SOLUTIONS, build: Path = autograder.ASSIGN_DIR, on_result=None) -> list[dict]:
    """Grade a batch of any labs; one summary per gradebook written (lab, gradebook, graded, errors).
    on_result(result): as `batch.grade_batch`, for every submission a lab's autograder runs."""
    if master:
        groups, unknown = {master.resolve(): list(subs)}, {}
    else:
        groups, unknown = sort_by_lab(subs, lab, opt.notebook_mb << 20, solutions)
    summary = []
    spread = len(groups) > 1  # each lab in a folder of its own
    for m, group in groups.items():
        ag = autograder.autograder_for(m, build)
        dest = out / m.stem if spread else out
        extra = [] if spread else list(unknown)  # one lab: a file naming another is its own row there
        results = batch.grade_batch(group + extra, ag, dest, opt, on_result, refuse={s: unknown[s] for s in extra})
        summary.append({"lab": m.stem, "gradebook": str(dest / batch.GRADEBOOK), "graded": len(results),
                        "grader_errors": sum(r["status"] == "grader-error" for r in results)})
    if unknown and (spread or not groups):
        dest = out / UNKNOWN if groups else out
        results = batch.not_graded_batch(list(unknown), unknown, UNKNOWN, dest)
        summary.append({"lab": UNKNOWN, "gradebook": str(dest / batch.GRADEBOOK), "graded": len(results),
                        "grader_errors": 0})
    return summary
