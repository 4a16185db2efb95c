"""Subcommands of the `mptcplab` CLI: one module per command, each with `register(subparsers)`."""

import argparse


def add_guest_run(actions, place: str, what: str, run):
    """`mptcplab PLACE run [--timeout S] -- CMD [ARGS...]`, for each guest place's own command: the
    parser, to which the place adds its own options (UML's memory, the VM's writable directories)."""
    r = actions.add_parser("run", help=f"boot {what}, run CMD inside as root, return its exit status")
    r.add_argument("--timeout", type=float, default=None, help=f"seconds before the {place} is stopped")
    r.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    r.set_defaults(func=run)
    return r


def guest_command(args, place: str) -> list[str]:
    """CMD of `mptcplab PLACE run -- CMD [ARGS...]` (the `--` is optional); a usage error if empty."""
    from ..core.errors import UsageError

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError(f"{place} run needs a command: mptcplab {place} run -- CMD [ARGS...]")
    return cmd
