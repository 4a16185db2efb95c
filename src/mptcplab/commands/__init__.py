"""Subcommands of the `mptcplab` CLI: one module per command, each with `register(subparsers)`."""


def guest_command(args, place: str) -> list[str]:
    """CMD of `mptcplab PLACE run -- CMD [ARGS...]` (the `--` is optional); a usage error if empty."""
    from ..errors import UsageError

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        raise UsageError(f"{place} run needs a command: mptcplab {place} run -- CMD [ARGS...]")
    return cmd
