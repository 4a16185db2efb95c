"""Subcommands of the `mptcplab` CLI: one module per command, each with `register(subparsers)`."""
