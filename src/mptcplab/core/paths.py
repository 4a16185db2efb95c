"""Where things are: the kit's data files, its caches, the kernel's tracefs.

Each location is written once here. The lab parameter files and the UML config fragment are
read from the checkout when the package runs from one (edits there take effect at once), else
from the copies `pip install .` puts under `<prefix>/share/mptcplab/` (pyproject.toml's
data-files), found through the installed distribution's file list, so a --user or venv install
works from any directory.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # core/ -> the mptcplab package
_CHECKOUT = PACKAGE.parents[1]  # src/mptcplab -> the repository, when running from a checkout
# src/ and labs/ side by side: what the grading sandbox shows of a checkout too (no pyproject.toml).
CHECKOUT: Path | None = _CHECKOUT if PACKAGE.parent.name == "src" and (_CHECKOUT / "labs").is_dir() else None
# The repository the user works in (solutions/, notebooks/, results/): the checkout this package
# runs from, else (an installed kit used from a clone) the current directory.
REPO_ROOT = CHECKOUT or Path.cwd()
TRACEFS = Path("/sys/kernel/tracing")
PREFIX = "mlab"  # the name of everything the kit creates (namespaces, tracefs instances, guests, BPF)


def data(relative: str) -> Path:
    """A data file or folder of the repository (`labs`, `vagrant/uml/mptcplab.config`)."""
    if CHECKOUT is not None:
        return CHECKOUT / relative
    return (_installed_share() or PACKAGE / "share") / relative


@functools.cache
def _installed_share() -> Path | None:
    """<prefix>/share/mptcplab of the installed distribution, wherever its prefix is."""
    from importlib import metadata

    try:
        files = metadata.distribution("mptcplab").files or []
    except metadata.PackageNotFoundError:
        return None
    marker = "share/mptcplab/"
    for f in files:
        located = str(f.locate())
        if marker in located.replace(os.sep, "/"):
            return Path(located[:located.replace(os.sep, "/").index(marker) + len(marker)]).resolve()
    return None


@functools.cache
def git_commit() -> dict:
    """The checkout's commit and whether it has uncommitted changes (None for an installed kit:
    its version says what ran); recorded in manifests and in the places' check records."""
    from . import process

    if CHECKOUT is None:
        return {"commit": None, "dirty": None}
    git = ["git", "-C", str(CHECKOUT)]
    commit = process.first_line([*git, "rev-parse", "HEAD"])
    dirty = process.run([*git, "status", "--porcelain", "--untracked-files=no"], check=False, timeout=30).stdout.strip()
    return {"commit": commit, "dirty": bool(dirty)}


def cache_dir(*parts: str) -> Path:
    """~/.cache/mptcplab/<parts> (honours XDG_CACHE_HOME); not created here."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base.joinpath("mptcplab", *parts)
