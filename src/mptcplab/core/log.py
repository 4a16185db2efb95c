"""The one way the kit speaks to the user: stdlib logging, one logger per topic.

    log = logging.getLogger("mptcplab.lab1")   # or log.get("lab1")
    log.info("verifying the setup")             # -> "lab1: verifying the setup" on stderr

`setup(verbosity)` is called once by the command line: -q shows warnings and errors only, -v adds
debug messages (e.g. every command a topology runs). Messages carry their topic as a prefix, so a
line in a long log (CI, a UML console) says which part of the kit wrote it.
"""

from __future__ import annotations

import logging
import sys

ROOT = "mptcplab"


def get(topic: str = "") -> logging.Logger:
    return logging.getLogger(f"{ROOT}.{topic}" if topic else ROOT)


class _Format(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        topic = record.name.removeprefix(f"{ROOT}.") if record.name != ROOT else ROOT
        level = "warning: " if record.levelno == logging.WARNING else ""
        return f"{topic}: {level}{record.getMessage()}"


class _Stderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is at the time (`reproduce` tees it to keep each lab's log)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def setup(verbosity: int = 0) -> None:
    """verbosity -1 (-q): warnings only; 0: what happens; 1 (-v): also debug detail."""
    level = {-1: logging.WARNING, 0: logging.INFO}.get(verbosity, logging.DEBUG if verbosity > 0 else logging.WARNING)
    root = logging.getLogger(ROOT)
    for h in list(root.handlers):
        root.removeHandler(h)
    handler = _Stderr()
    handler.setFormatter(_Format())
    root.addHandler(handler)
    root.setLevel(level)
    root.propagate = False
