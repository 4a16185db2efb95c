"""Older name of mptcplab.tshark (Lab 3 reads its captures through it): columns typed by pandas' guess."""

from __future__ import annotations

from pathlib import Path

from .tshark import MPTCP_PREFS, pyshark_capture  # noqa: F401
from .tshark import fields as _fields


def fields(pcap: Path | str, names: list[str], display_filter: str | None = None,
           prefs: dict[str, str] | None = None):
    """One row per packet, one column per tshark field (empty -> NaN; numbers parsed by pandas)."""
    return _fields(pcap, names, display_filter, prefs, typed=False)
