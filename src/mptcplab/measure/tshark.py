"""Packet captures into pandas: `tshark -T fields` for whole captures, pyshark for a few packets.

    df = fields("capture.pcap", ["frame.time_epoch", "tcp.stream", "tcp.len", "mptcp.reinjection_of"],
                display_filter="tcp.len > 0", prefs=MPTCP_PREFS)

`fields()` streams tshark's tab-separated output into pandas' C parser in chunks, with a dtype per
column chosen from the field's Wireshark type: the only Python work is per column and per chunk,
never per packet, which keeps a 10 s, 100 Mbit/s capture to the time tshark itself needs.
Types matter: 64-bit MPTCP data sequence numbers do not fit a float (1.2e19 has a 2 KiB step
there) nor an int64, so they stay `uint64`.

pyshark (`pyshark_capture`) turns every packet into Python objects: right for looking at a few
packets in a notebook, ~50x slower than `fields()` for a whole capture (benchmarks/).
"""

from __future__ import annotations

import functools
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

from ..core.errors import EnvironmentProblem

# Preferences without which the MPTCP analysis fields stay empty (both default to FALSE in Wireshark 4).
MPTCP_PREFS = {
    "mptcp.analyze_mappings": "TRUE",  # mptcp.dsn, mptcp.related_mapping
    "mptcp.intersubflows_retransmission": "TRUE",  # mptcp.reinjection_of / reinjected_in
    "tcp.relative_sequence_numbers": "TRUE",
}

# Wireshark field types of the fields the kit reads (as `tshark -G fields` prints them); any other
# field is looked up once per process with `tshark -G fields` (about half a second).
KNOWN_TYPES = {
    "frame.number": "FT_FRAMENUM", "frame.time_epoch": "FT_RELATIVE_TIME",
    "frame.time_relative": "FT_RELATIVE_TIME", "frame.len": "FT_UINT32",
    "ip.src": "FT_IPv4", "ip.dst": "FT_IPv4", "ip.len": "FT_UINT16", "ipv6.src": "FT_IPv6", "ipv6.dst": "FT_IPv6",
    "tcp.stream": "FT_UINT32", "tcp.srcport": "FT_UINT16", "tcp.dstport": "FT_UINT16",
    "tcp.seq": "FT_UINT32", "tcp.ack": "FT_UINT32", "tcp.len": "FT_UINT32", "tcp.window_size": "FT_UINT32",
    "tcp.flags.syn": "FT_BOOLEAN", "tcp.flags.fin": "FT_BOOLEAN", "tcp.flags.ack": "FT_BOOLEAN",
    "tcp.analysis.retransmission": "FT_NONE", "tcp.analysis.fast_retransmission": "FT_NONE",
    "tcp.analysis.ack_rtt": "FT_RELATIVE_TIME",
    "mptcp.stream": "FT_UINT32", "mptcp.dsn": "FT_UINT64", "mptcp.rawdsn64": "FT_UINT64",
    "mptcp.ack": "FT_UINT64", "mptcp.reinjection_of": "FT_FRAMENUM", "mptcp.reinjected_in": "FT_FRAMENUM",
    "tcp.options.mptcp.subtype": "FT_UINT8", "tcp.options.mptcp.rawdataseqno": "FT_UINT64",
    "tcp.options.mptcp.subflowseqno": "FT_UINT32", "tcp.options.mptcp.datalvllen": "FT_UINT16",
    "tcp.options.mptcp.rawdataack": "FT_UINT64",
}
# Wireshark type -> how pandas reads it. Integers are read nullable (a field can be absent from a
# packet) and made plain numpy integers afterwards when no packet lacks them.
_INT = {"FT_UINT8": "UInt8", "FT_UINT16": "UInt16", "FT_UINT24": "UInt32", "FT_UINT32": "UInt32",
        "FT_UINT40": "UInt64", "FT_UINT48": "UInt64", "FT_UINT56": "UInt64", "FT_UINT64": "UInt64",
        "FT_INT8": "Int8", "FT_INT16": "Int16", "FT_INT24": "Int32", "FT_INT32": "Int32",
        "FT_INT40": "Int64", "FT_INT48": "Int64", "FT_INT56": "Int64", "FT_INT64": "Int64",
        "FT_FRAMENUM": "UInt32"}
_FLOAT = {"FT_RELATIVE_TIME", "FT_FLOAT", "FT_DOUBLE"}
_PRESENCE = {"FT_NONE", "FT_PROTOCOL"}  # tshark prints something when the field is there at all
_CATEGORY = {"FT_IPv4", "FT_IPv6", "FT_ETHER"}


@functools.cache
def _all_field_types() -> dict[str, tuple[str, str]]:
    """abbrev -> (type, base) for every field this tshark knows."""
    try:
        out = subprocess.run(["tshark", "-G", "fields"], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        raise EnvironmentProblem("tshark is not installed: apt-get install tshark") from None
    types = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "F" and len(parts) > 5:
            types[parts[2]] = (parts[3], parts[5])
    return types


def field_type(name: str) -> tuple[str, str]:
    """(Wireshark type, display base) of a field, e.g. ("FT_UINT16", "BASE_HEX") for tcp.flags."""
    if name in KNOWN_TYPES:
        return KNOWN_TYPES[name], "BASE_DEC"
    types = _all_field_types()
    if name not in types:
        raise EnvironmentProblem(f"tshark has no field {name!r} (see `tshark -G fields`)")
    return types[name]


def _read_plan(names: list[str], typed: bool) -> tuple[dict, list, list]:
    """dtypes for read_csv, plus the columns converted afterwards (presence flags, hex integers)."""
    dtypes, presence, hexints = {}, [], []
    for name in names:
        if not typed:
            continue
        ftype, base = field_type(name)
        if ftype in _PRESENCE or ftype == "FT_BOOLEAN":
            dtypes[name] = "string"
            presence.append((name, ftype))
        elif ftype in _INT and base.startswith("BASE_HEX"):
            dtypes[name] = "string"
            hexints.append((name, _INT[ftype]))
        elif ftype in _INT:
            dtypes[name] = _INT[ftype]
        elif ftype in _FLOAT:
            dtypes[name] = "float64"
        elif ftype in _CATEGORY:
            dtypes[name] = "category"
        else:
            dtypes[name] = "string"
    return dtypes, presence, hexints


def _finish(df: pd.DataFrame, presence: list, hexints: list) -> pd.DataFrame:
    for name, ftype in presence:
        col = df[name]
        # FT_NONE: present or not. FT_BOOLEAN: tshark 4.0 prints 1/0 (newer ones True/False).
        df[name] = col.notna() if ftype != "FT_BOOLEAN" else col.isin(["1", "True", "true"]).fillna(False)
        df[name] = df[name].astype(bool)
    for name, dtype in hexints:
        col = df[name]
        df[name] = pd.array([None if pd.isna(v) else int(v, 0) for v in col], dtype=dtype)
    return df


def _plain_ints(df: pd.DataFrame) -> pd.DataFrame:
    """Nullable integer columns without a missing value become numpy integers (faster, simpler)."""
    for name in df.columns:
        dtype = df[name].dtype
        if isinstance(dtype, pd.core.arrays.integer.IntegerDtype) and not df[name].hasnans:
            df[name] = df[name].to_numpy(dtype=dtype.numpy_dtype)
    return df


def tshark_argv(pcap: Path | str, names: list[str], display_filter: str | None = None,
                prefs: dict[str, str] | None = None, occurrence: str = "f") -> list[str]:
    """The tshark command line `fields()` runs (also what the benchmark times on its own)."""
    argv = ["tshark", "-n", "-r", str(pcap)]
    for key, value in (MPTCP_PREFS if prefs is None else prefs).items():
        argv += ["-o", f"{key}:{value}"]
    if display_filter:
        argv += ["-Y", display_filter]
    argv += ["-T", "fields", "-E", "header=y", "-E", "separator=/t", "-E", f"occurrence={occurrence}"]
    for name in names:
        argv += ["-e", name]
    return argv


def iter_fields(pcap: Path | str, names: list[str], display_filter: str | None = None,
                prefs: dict[str, str] | None = None, occurrence: str = "f", chunksize: int = 250_000,
                typed: bool = True) -> Iterator[pd.DataFrame]:
    """`fields()` a chunk of packets at a time: memory stays bounded by `chunksize` rows.

    `prefs` defaults to MPTCP_PREFS (pass {} for none). `occurrence` is tshark's: "f" first, "l"
    last, "a" all (comma-joined strings, not typed). `typed=False` lets pandas guess the types.
    """
    if not Path(pcap).exists():
        raise FileNotFoundError(f"no capture at {pcap}")
    typed = typed and occurrence != "a"
    dtypes, presence, hexints = _read_plan(list(names), typed)
    argv = tshark_argv(pcap, list(names), display_filter, prefs, occurrence)
    # stderr goes to a file: a pipe nobody reads would block tshark once it filled.
    with tempfile.TemporaryFile() as err:
        try:
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        except FileNotFoundError:
            raise EnvironmentProblem("tshark is not installed: apt-get install tshark") from None
        try:
            # Untyped: one read, so pandas guesses each column's type from all of it, not per chunk.
            reader = pd.read_csv(proc.stdout, sep="\t", dtype=dtypes or None, chunksize=chunksize if typed else None,
                                 quoting=3, keep_default_na=False, na_values=[""], low_memory=False)
            got_any = False
            for chunk in (reader if typed else [reader]):
                got_any = True
                yield _plain_ints(_finish(chunk, presence, hexints))
        except pd.errors.EmptyDataError:
            got_any = False
        finally:
            proc.stdout.close()
            status = proc.wait()
        if status != 0:
            err.seek(0)
            msg = err.read().decode(errors="replace").strip()
            raise EnvironmentProblem(f"tshark failed on {pcap} (exit {status}): {msg[-500:]}")
        if not got_any:  # no packet matched: still give the caller its columns
            yield _plain_ints(_finish(pd.DataFrame({n: pd.Series(dtype=dtypes.get(n, "object")) for n in names}),
                                      presence, hexints))


def fields(pcap: Path | str, names: list[str], display_filter: str | None = None,
           prefs: dict[str, str] | None = None, occurrence: str = "f", chunksize: int = 250_000,
           typed: bool = True) -> pd.DataFrame:
    """One row per packet, one column per tshark field, typed from the field's Wireshark type:
    integers as (nullable when a packet lacks the field) integers of their width, times as float
    seconds, addresses as categories, FT_NONE flags such as tcp.analysis.retransmission as bool."""
    chunks = list(iter_fields(pcap, names, display_filter, prefs, occurrence, chunksize, typed))
    if len(chunks) == 1:
        return chunks[0].reset_index(drop=True)
    df = pd.concat(chunks, ignore_index=True)
    for name in df.columns:  # concat of chunks with different category sets falls back to object
        if chunks[0][name].dtype == "category" and df[name].dtype != "category":
            df[name] = df[name].astype("category")
    return _plain_ints(df)


# ---------------------------------------------------------------- pyshark, for single packets

def pyshark_capture(pcap: Path | str, display_filter: str | None = None, **kw):
    """A pyshark FileCapture with the MPTCP analysis on, that also works inside Jupyter.

    pyshark's synchronous API calls `run_until_complete`, which fails in a notebook whose event
    loop is already running (pyshark issues #360, #542); nest_asyncio makes that loop re-entrant.
    MPTCP fields land in pyshark's tcp layer without their prefix: use `field(pkt, "mptcp.dsn")`.
    """
    import asyncio

    import nest_asyncio
    import pyshark

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None  # a plain script: nothing to patch
    if loop is not None:
        nest_asyncio.apply(loop)
    prefs = {**MPTCP_PREFS, **kw.pop("override_prefs", {})}
    return pyshark.FileCapture(str(pcap), display_filter=display_filter, override_prefs=prefs, **kw)


def field(pkt, name: str, default=None):
    """A field of a pyshark packet by its Wireshark name ("tcp.seq", "mptcp.dsn", ...), as a plain
    str (pyshark's own field objects do not pickle as data), or `default`.

    pyshark files MPTCP's fields under the tcp layer; this looks in the named layer, then in tcp.
    """
    layer = name.split(".", 1)[0]
    for lname in (layer, "tcp"):
        lay = getattr(pkt, lname, None) if lname in {lyr.layer_name for lyr in pkt.layers} else None
        if lay is not None:
            value = lay.get_field_value(name)
            if value is not None:
                return str(value)
    return default
