"""mptcplab.measure.tshark on a real MPTCP capture (the 0.6 s slice shipped with Lab 1's reference results)."""

import asyncio
import gc
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from mptcplab.core.errors import EnvironmentProblem
from mptcplab.measure import tshark
from mptcplab.run.lab import REPO_ROOT

# A slice of a real Lab 1 capture (UML, MPTCP over two paths) whose data sequence numbers are above
# 2**63: kept here, not read from the reference, because a new reference run draws its own random
# initial DSN (half of them below 2**63, which would leave the 64-bit test without teeth).
PCAP = REPO_ROOT / "tests/engine/fixtures/tshark/mptcp-dsn-above-2e63.pcap"
NAMES = ["frame.time_epoch", "tcp.stream", "ip.src", "tcp.seq", "tcp.len", "tcp.flags", "tcp.flags.syn",
         "tcp.analysis.retransmission", "tcp.options.mptcp.rawdataseqno", "tcp.options.mptcp.subflowseqno",
         "mptcp.reinjection_of"]

pytestmark = pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")


def raw_column(name, display_filter=None):
    """The same field as tshark prints it, as text, for comparing values exactly."""
    argv = ["tshark", "-n", "-r", str(PCAP), "-T", "fields", "-e", name]
    if display_filter:
        argv[4:4] = ["-Y", display_filter]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()


@pytest.fixture(scope="module")
def df():
    return tshark.fields(PCAP, NAMES)


def test_columns_are_typed_from_wireshark_types(df):
    assert len(df) == len(raw_column("frame.number")) > 1000
    assert df["frame.time_epoch"].dtype == np.float64
    assert df["tcp.stream"].dtype == np.uint32 and df["tcp.len"].dtype == np.uint32
    assert df["ip.src"].dtype == "category" and set(df["ip.src"].cat.categories) >= {"10.1.0.1", "10.2.0.1"}
    assert df["tcp.flags.syn"].dtype == bool and df["tcp.flags.syn"].sum() == 4  # two handshakes kept
    assert df["tcp.analysis.retransmission"].dtype == bool
    # absent in some packets: nullable, not float
    assert str(df["tcp.options.mptcp.rawdataseqno"].dtype) == "UInt64"
    assert df["tcp.options.mptcp.rawdataseqno"].isna().any() and df["tcp.options.mptcp.rawdataseqno"].notna().any()


def test_64bit_sequence_numbers_are_exact(df):
    """DSNs near 1.25e19 exceed int64 and lose 2 KiB steps as floats: they must come back exact."""
    text = [v for v in raw_column("tcp.options.mptcp.rawdataseqno") if v]
    got = df["tcp.options.mptcp.rawdataseqno"].dropna()
    assert [int(v) for v in text[:200]] == [int(v) for v in got.iloc[:200]]
    assert max(int(v) for v in text) > 2**63  # the test would be toothless on small numbers


def test_hex_fields_become_integers(df):
    text = raw_column("tcp.flags")
    assert text[0].startswith("0x")
    assert df["tcp.flags"].dtype == np.uint16
    assert list(df["tcp.flags"].iloc[:50]) == [int(v, 16) for v in text[:50]]


def test_chunks_give_the_same_table(df):
    chunked = tshark.fields(PCAP, NAMES, chunksize=300)
    pd.testing.assert_frame_equal(chunked, df)
    sizes = [len(c) for c in tshark.iter_fields(PCAP, ["tcp.len"], chunksize=1000)]
    assert sizes[:2] == [1000, 1000] and sum(sizes) == len(df)


def test_display_filter_and_empty_result_keep_columns():
    data = tshark.fields(PCAP, ["tcp.len", "ip.src"], display_filter="tcp.len > 0 && ip.src == 10.2.0.1")
    assert len(data) == len(raw_column("tcp.len", "tcp.len > 0 && ip.src == 10.2.0.1")) > 0
    assert (data["tcp.len"] > 0).all() and set(data["ip.src"].astype(str)) == {"10.2.0.1"}
    none = tshark.fields(PCAP, ["tcp.len", "ip.src"], display_filter="tcp.len > 100000")
    assert list(none.columns) == ["tcp.len", "ip.src"] and none.empty


def test_mptcp_preferences_fill_the_analysis_fields():
    on = tshark.fields(PCAP, ["mptcp.dsn"], display_filter="tcp.len > 0")
    off = tshark.fields(PCAP, ["mptcp.dsn"], display_filter="tcp.len > 0", prefs={})
    assert on["mptcp.dsn"].notna().mean() > 0.9 and off["mptcp.dsn"].isna().all()


def test_untyped_mode_lets_pandas_guess():
    data = tshark.fields(PCAP, ["tcp.flags", "tcp.analysis.retransmission"], typed=False)
    assert data["tcp.flags"].iloc[0].startswith("0x")


def test_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError):
        tshark.fields(tmp_path / "nope.pcap", ["tcp.len"])
    with pytest.raises(EnvironmentProblem, match="no field"):
        tshark.fields(PCAP, ["tcp.no_such_field_here"])
    with pytest.raises(EnvironmentProblem, match="tshark failed"):
        tshark.fields(PCAP, ["tcp.len"], display_filter="tcp.len >>> 3")


def test_pyshark_inside_a_running_event_loop():
    """As in a Jupyter cell: the loop is already running when pyshark's synchronous API is used."""

    async def cell():
        assert asyncio.get_running_loop().is_running()
        cap = tshark.pyshark_capture(PCAP, display_filter="tcp.len > 0 && tcp.options.mptcp.rawdataseqno")
        try:
            rows = [(tshark.field(p, "tcp.stream"), tshark.field(p, "tcp.options.mptcp.rawdataseqno"),
                     tshark.field(p, "mptcp.stream"), tshark.field(p, "nosuch.field", "-"))
                    for _, p in zip(range(5), cap)]
        finally:
            cap.close()
            del cap
            gc.collect()  # pyshark's subprocess transports must go while their loop still runs
        return rows

    rows = asyncio.run(cell())
    assert len(rows) == 5
    assert all(int(dsn) > 2**32 and stream is not None and missing == "-" for stream, dsn, _, missing in rows)
    assert all(type(v) is str for row in rows for v in row[:2])  # plain values: they pickle as data
