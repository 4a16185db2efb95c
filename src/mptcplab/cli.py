"""The `mptcplab` command line.

Each subcommand lives in its own module under `mptcplab.commands` and exposes
`register(subparsers)`; the module's parser sets `func`. Adding a command means
adding a module there, nothing here.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from . import __version__, commands
from .core import log
from .core.errors import EnvironmentProblem, ExperimentFailed, UsageError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mptcplab",
        description="Reproduce published MPTCP/TCP research on a real Linux kernel.",
    )
    parser.add_argument("--version", action="version", version=f"mptcplab {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="say more (every command the kit runs); before the COMMAND")
    parser.add_argument("-q", "--quiet", action="count", default=0, help="warnings and errors only")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    log.setup(args.verbose - args.quiet)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    say = log.get()
    try:
        return int(args.func(args) or 0)
    except (UsageError, EnvironmentProblem, ExperimentFailed) as exc:
        # isinstance, not type(exc): subclasses (uml.TimedOut, a place's refusals) say the same
        kind = next(text for cls, text in ((UsageError, "error"), (EnvironmentProblem, "cannot run here"),
                                           (ExperimentFailed, "experiment failed")) if isinstance(exc, cls))
        say.error("%s: %s", kind, exc)
        return exc.exit_status
    except KeyboardInterrupt:
        say.error("interrupted; everything the run created was removed")
        return 130


if __name__ == "__main__":
    sys.exit(main())
