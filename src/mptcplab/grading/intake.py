"""A batch as handed in: which lab each submission belongs to, graded lab by lab, and every file a row.

The lab is read from the file's bytes (`files.read_submission`: never through a link): Otter's
first cell names it (`otter.Notebook("01-send-buffer.ipynb")`). A file the grader refuses to read
(a link, a FIFO, a directory named `*.ipynb`, a hard link) is sorted by its name's `NN-` prefix if
it has one. What cannot be placed never stops the batch: in a batch of one lab it joins that lab
(garbage is then graded as unreadable, a refused file as refused) and a file naming a lab the kit
does not have is a 0 row there with the reason; in a batch of several labs (each in a folder of
its own) every file of unknown lab is a 0 row with its reason in `unknown-lab/gradebook.csv`.
Every gradebook is written.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..core.errors import UsageError
from . import autograder, batch
from .files import Oversized, Refused, read_submission

UNKNOWN = "unknown-lab"  # the folder of a mixed batch's rows whose lab cannot be told
OTTER_INIT = re.compile(rb'otter\.Notebook\(\\?"(\d\d-[\w-]+)\.ipynb')


def lab_of(path: Path, cap: int) -> tuple[str | None, str | None]:
    """(the lab a submission names, why it cannot be read as a notebook or None)."""
    try:
        m = OTTER_INIT.search(read_submission(path, cap))
        if m:
            return m[1].decode(), None
        why = None
    except (Refused, Oversized) as exc:  # not read: its name is all there is
        why = exc.args[0] if isinstance(exc, Refused) else None
    m = re.match(r"(\d\d)-", path.name)
    return (m[1] if m else None), why


def sort_by_lab(subs: list[Path], lab: str | None, cap: int, solutions: Path = autograder.SOLUTIONS
                ) -> tuple[dict[Path, list[Path]], dict[Path, str]]:
    """(master -> its submissions, file -> why no lab takes it). See the module's docstring."""
    if lab:
        return {autograder.find_master(lab, solutions): list(subs)}, {}
    groups: dict[Path, list[Path]] = {}
    named_no_lab: list[Path] = []
    unknown: dict[Path, str] = {}
    for s in subs:
        name, why = lab_of(s, cap)
        if name is None:
            named_no_lab.append(s)
            unknown[s] = why or "its lab cannot be told (it is not a notebook of this kit, or Otter's first cell is gone)"
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
              solutions: Path = autograder.SOLUTIONS, build: Path = autograder.ASSIGN_DIR) -> list[dict]:
    """Grade a batch of any labs; one summary per gradebook written (lab, gradebook, graded, errors)."""
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
        results = batch.grade_batch(group + extra, ag, dest, opt, refuse={s: unknown[s] for s in extra})
        summary.append({"lab": m.stem, "gradebook": str(dest / batch.GRADEBOOK), "graded": len(results),
                        "grader_errors": sum(r["status"] == "grader-error" for r in results)})
    if unknown and (spread or not groups):
        dest = out / UNKNOWN if groups else out
        results = batch.not_graded_batch(list(unknown), unknown, UNKNOWN, dest)
        summary.append({"lab": UNKNOWN, "gradebook": str(dest / batch.GRADEBOOK), "graded": len(results),
                        "grader_errors": 0})
    return summary
