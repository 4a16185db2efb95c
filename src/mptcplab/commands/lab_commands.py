"""The subcommands a lab adds to the CLI (`Lab.commands`, e.g. Lab 2's `mptcplab cc`): each is
registered as a module of this package is, so a lab's own tool needs no edit here."""

from __future__ import annotations

from ..run.lab import all_labs


def register(sub) -> None:
    for lab in all_labs().values():
        for add in lab.commands:
            add(sub)
