"""Where things are: the kit's data files, its caches, the kernel's tracefs.

Each location is written once here. The lab parameter files and the UML config fragment are
read from the checkout when the package runs from one (edits there take effect at once), else
from the copies shipped inside the installed package (`pip install .`, see pyproject.toml).
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
_CHECKOUT = PACKAGE.parents[1]  # src/mptcplab -> the repository, when running from a checkout
REPO_ROOT: Path | None = _CHECKOUT if (_CHECKOUT / "pyproject.toml").exists() and (_CHECKOUT / "labs").is_dir() \
    else None
TRACEFS = Path("/sys/kernel/tracing")


def data(relative: str) -> Path:
    """A data file or folder of the repository (`labs`, `vagrant/uml/mptcplab.config`)."""
    if REPO_ROOT is not None:
        return REPO_ROOT / relative
    return PACKAGE / "data" / relative


def cache_dir(*parts: str) -> Path:
    """~/.cache/mptcplab/<parts> (honours XDG_CACHE_HOME); not created here."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base.joinpath("mptcplab", *parts)
