"""Packet captures into pandas, through `tshark -T fields` (bulk) or pyshark (exploration).

`fields()` streams tshark's tab-separated output straight into pandas' C parser: the only Python
work is per column, never per packet, which is what keeps a 10 s, 100 Mbit/s capture to seconds.
pyshark parses every packet into Python objects: fine for looking at a few packets in a notebook,
far too slow for a whole capture (see benchmarks/).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from .errors import EnvironmentProblem

# Preferences without which the MPTCP columns stay empty (both default to FALSE in Wireshark 4).
MPTCP_PREFS = {
    "mptcp.analyze_mappings": "TRUE",  # mptcp.dsn per packet
    "mptcp.intersubflows_retransmission": "TRUE",  # mptcp.reinjection_of / reinjected_in
    "tcp.relative_sequence_numbers": "TRUE",
}


def fields(pcap: Path | str, names: list[str], display_filter: str | None = None,
           prefs: dict[str, str] | None = None):
    """One row per packet, one column per tshark field (empty -> NaN; numbers parsed)."""
    import pandas as pd

    cmd = ["tshark", "-n", "-r", str(pcap)]
    for key, value in (prefs if prefs is not None else MPTCP_PREFS).items():
        cmd += ["-o", f"{key}:{value}"]
    if display_filter:
        cmd += ["-Y", display_filter]
    cmd += ["-T", "fields", "-E", "header=y", "-E", "separator=/t", "-E", "occurrence=f"]
    for name in names:
        cmd += ["-e", name]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except FileNotFoundError:
        raise EnvironmentProblem("tshark is not installed: apt-get install tshark") from None
    df = pd.read_csv(proc.stdout, sep="\t", low_memory=False)
    err = proc.stderr.read().decode(errors="replace")
    if proc.wait() != 0:
        raise EnvironmentProblem(f"tshark failed on {pcap}: {err.strip()[-500:]}")
    return df


def pyshark_capture(pcap: Path | str, display_filter: str | None = None, **kw):
    """A pyshark FileCapture that also works inside Jupyter's running event loop.

    pyshark's synchronous API calls `run_until_complete`, which fails in a notebook whose loop is
    already running (pyshark issues #360, #542); nest_asyncio makes that loop re-entrant.
    MPTCP fields land in the tcp layer without their prefix: `pkt.tcp.get_field_value("mptcp.dsn")`.
    """
    import asyncio

    import nest_asyncio
    import pyshark

    try:
        asyncio.get_running_loop()
        nest_asyncio.apply()
    except RuntimeError:
        pass  # no running loop: plain scripts need nothing
    prefs = {**MPTCP_PREFS, **kw.pop("override_prefs", {})}
    return pyshark.FileCapture(str(pcap), display_filter=display_filter, override_prefs=prefs, **kw)
