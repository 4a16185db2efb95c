"""Where a results tree's runs came from: the commits and kernel builds its runs-manifest.csv files
record, and whether a mixture of them is said.

A reference may hold runs of several commits or kernels (a controlled run made later, a second
place), but its words must say so: every commit and every kernel (release, and build where
recorded) its runs came from is named in the tree's Markdown (its paper-vs-this-run.md, a
reference page's generated fragment kept with it). `mptcplab check` refuses a tree that mixes
them without naming each one, and says which runs came from a checkout with uncommitted changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

MANIFEST = "runs-manifest.csv"
DIRTY = "+dirty"  # a run's commit when the checkout had uncommitted changes (run.results.git_commit)


@dataclass(frozen=True)
class Source:
    what: str  # "commit" or "kernel"
    value: str
    runs: int
    folders: tuple[str, ...]


def build_of(platform: dict) -> str:
    """A kernel build's short name from a manifest's platform: the UML build's hash (its source and
    config: uml_kernel), else "" (a distribution's kernel is named by its release)."""
    uml = platform.get("uml_kernel") or ""
    return f"UML build {uml.rsplit('-', 1)[-1]}" if uml else ""


def _folder_build(folder: Path) -> str:
    """The build a folder's runs ran on, from its own manifest (runs-manifest.csv files written before
    they had a kernel_build column); "" if none says."""
    for f in sorted(folder.glob("*manifest.json")):
        try:
            return build_of(json.loads(f.read_text()).get("platform") or {})
        except (OSError, ValueError):
            continue
    return ""


def sources(root: Path | str) -> list[Source]:
    """Every commit and kernel the runs of `root` (its runs-manifest.csv files, at any depth) came
    from, with how many runs and which folders; the setup check (`verify`) counted like any run."""
    root = Path(root)
    seen: dict[tuple[str, str], tuple[int, set[str]]] = {}
    for f in sorted(root.rglob(MANIFEST)):
        m = pd.read_csv(f, dtype=str)
        folder = str(f.parent.relative_to(root)) or "."
        build = (m["kernel_build"].fillna("").map(lambda b: build_of({"uml_kernel": b})) if "kernel_build" in m
                 else pd.Series(_folder_build(f.parent), index=m.index))
        kernel = m.get("kernel", pd.Series("?", index=m.index)).fillna("?") + build.map(lambda b: f" ({b})" if b else "")
        for what, values in (("commit", m.get("commit", pd.Series("?", index=m.index)).fillna("?")), ("kernel", kernel)):
            for value, n in values.value_counts().items():
                runs, folders = seen.get((what, value), (0, set()))
                seen[(what, value)] = (runs + int(n), folders | {folder})
    return [Source(what, value, runs, tuple(sorted(folders))) for (what, value), (runs, folders) in sorted(seen.items())]


def unsaid(root: Path | str, found: list[Source] | None = None) -> list[Source]:
    """The commits and kernels of a tree that mixes them which its Markdown does not name (none when
    its runs came from one commit and one kernel). A commit is named by its 12 hex digits; a kernel by
    its release, or by its build's hash where another build shares that release."""
    root = Path(root)
    found = sources(root) if found is None else found
    mixed = [s for s in found if sum(1 for t in found if t.what == s.what) > 1]
    if not mixed:
        return []
    text = "\n".join(p.read_text() for p in sorted(root.rglob("*.md")))
    releases = [_release(s) for s in found if s.what == "kernel"]
    return [s for s in mixed if _name(s, releases) not in text]


def _release(s: Source) -> str:
    return s.value.split(" (")[0]


def _name(s: Source, releases: list[str]) -> str:
    if s.what == "commit":
        return s.value.split(DIRTY)[0]
    if releases.count(_release(s)) > 1 and " (" in s.value:
        return s.value.split(" (")[-1].rstrip(")").split()[-1]  # the build's hash
    return _release(s)


def markdown(root: Path | str) -> str:
    """Where a tree's runs came from, in one paragraph: each commit and kernel with its runs (a report
    states its provenance, so a mixture is said)."""
    found = sources(root)
    if not found:
        return ""
    parts = []
    for what in ("commit", "kernel"):
        mine = [s for s in found if s.what == what]
        parts.append(f"{what}{'s' if len(mine) != 1 else ''} " + "; ".join(
            f"{s.value} ({s.runs} run{'s' if s.runs != 1 else ''}: {', '.join('this folder' if f == '.' else f for f in s.folders)})"
            for s in mine))
    return ("Where the runs came from (runs-manifest.csv, where a folder's setup check, `verify`, counts as a run): "
            + "; ".join(parts) + ".\n")


def lines(root: Path | str) -> tuple[list[str], bool]:
    """`mptcplab check`'s provenance lines for `root`, and whether it refuses the tree."""
    found = sources(root)
    if not found:
        return [], False
    missing = unsaid(root, found)
    out = []
    for what in ("commit", "kernel"):
        mine = [s for s in found if s.what == what]
        out.append(f"provenance: {len(mine)} {what}{'s' if len(mine) != 1 else ''}: " + "; ".join(
            f"{s.value} ({s.runs} run{'s' if s.runs != 1 else ''} in {', '.join(s.folders)})" for s in mine))
    dirty = [s for s in found if s.what == "commit" and s.value.endswith(DIRTY)]
    if dirty:  # said, not refused: the runs are what they are, but no commit holds the code that made them
        out.append("provenance: " + "; ".join(f"{s.runs} run{'s' if s.runs != 1 else ''} in {', '.join(s.folders)}"
                                              for s in dirty)
                   + " came from a checkout with uncommitted changes (commit" + DIRTY + "): no commit holds the "
                   "exact code that measured them; re-run from a clean tree for a reference")
    if missing:
        out.append("REFUSED: the runs mix " + ", ".join(f"{s.what} {s.value}" for s in missing)
                   + " with others, and no Markdown of the results names them (say which runs came from "
                   "which in the report)")
    return out, bool(missing)
