"""The capture check's reader (mptcplab.measure.pcap) against tshark's reading, and on made-up packets."""

import hashlib
import shutil
import struct
from pathlib import Path

import pytest

from mptcplab.core import process
from mptcplab.core.errors import ExperimentFailed
from mptcplab.measure import pcap
from mptcplab.measure.traffic import verify_capture

ROOT = Path(__file__).resolve().parents[2]
# Real MPTCP captures: a pcapng written by tshark's tools, and a Lab 1 reference capture (tcpdump's pcap)
REAL = [ROOT / "tests/engine/fixtures/tshark/mptcp-dsn-above-2e63.pcap",
        ROOT / "solutions/results/lab1/detail-wmem-32K-mptcp/capture-window.pcap"]


def tshark_reading(path: Path) -> dict:
    """What verify_capture returned when it read the capture with tshark (its code before mptcplab.measure.pcap)."""
    fields = ["tcp.stream", "mptcp.stream", "ip.src", "ip.dst", "tcp.len", "tcp.options.mptcp.subtype",
              "tcp.flags.syn", "tcp.flags.ack"]
    out = process.run(["tshark", "-r", str(path), "-o", "mptcp.analyze_mappings:TRUE", "-Y", "mptcp", "-T", "fields",
                       "-E", "separator=/t", *[a for f in fields for a in ("-e", f)]])
    conns: dict = {}
    capable = join = 0
    for line in out.stdout.splitlines():
        tcp_stream, mptcp_stream, src, dst, tlen, subtypes, syn, ack = (line.split("\t") + [""] * 8)[:8]
        subs = set(subtypes.split(","))
        if syn in ("1", "True") and ack in ("0", "False"):
            capable += "0" in subs
            join += "1" in subs
        if mptcp_stream and tlen and int(tlen) > 0:
            c = conns.setdefault(mptcp_stream, {"bytes": 0, "subflows": {}})
            c["bytes"] += int(tlen)
            sf = c["subflows"].setdefault(tcp_stream, {"src": src, "dst": dst, "bytes": 0})
            sf["bytes"] += int(tlen)
    main = max(conns.values(), key=lambda c: c["bytes"])
    sub = list(main["subflows"].values())
    return {"mp_capable_syns": capable, "mp_join_syns": join, "subflows_with_data": len(sub),
            "subflows": sorted(sub, key=lambda s: s["src"])}


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_the_check_reads_real_captures_as_tshark_did(path):
    want = tshark_reading(path)
    assert want["subflows_with_data"] == 2  # the fixtures are what they claim to be
    assert verify_capture(path, 2) == want


# ---------------------------------------------------------------- made-up captures

KEY_A, KEY_B = bytes.fromhex("1122334455667788"), bytes.fromhex("99aabbccddeeff00")


def token_of(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()[:4]


def capable(*keys: bytes) -> bytes:
    return bytes([30, 4 + 8 * len(keys), 0x01, 0x81]) + b"".join(keys)  # subtype 0, version 1


def join(token: bytes) -> bytes:
    return bytes([30, 12, 0x10, 1]) + token + b"\0\0\0\1"  # subtype 1, address id 1, nonce


DSS = bytes([30, 8, 0x20, 0x01]) + b"\0\0\0\0"  # a 4-byte data ack only


def tcp_packet(src: str, dst: str, sport: int, dport: int, flags: int, options: bytes = b"", payload: int = 0,
               snap: int = 128) -> bytes:
    """An SLL2 frame of an IPv4 TCP packet with `payload` bytes (cut at `snap`, as tcpdump -s does)."""
    options += b"\1" * (-len(options) % 4)  # NOP padding
    tcp = struct.pack(">HHIIBBHHH", sport, dport, 0, 0, (20 + len(options)) // 4 << 4, flags, 65535, 0, 0) + options
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + payload, 0, 0, 64, 6, 0,
                     bytes(map(int, src.split("."))), bytes(map(int, dst.split("."))))
    sll2 = struct.pack(">HHIHBB8s", 0x0800, 0, 2, 1, 4, 6, b"\0" * 8)
    return (sll2 + ip + tcp + b"\0" * payload)[:snap]


def write_pcap(path: Path, frames: list[bytes]) -> Path:
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 128, 276))
        for i, frame in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(frame), len(frame) + 1000) + frame)
    return path


SYN, SYNACK, ACK = 0x02, 0x12, 0x10


def connection(first: int, paths: int, segments: int, keys=(KEY_A, KEY_B), port0: int = 40000) -> list[bytes]:
    """An MPTCP connection from 10.1.0.1 to 10.1.0.2 with subflows joined from 10.i.0.1, i = 2..paths;
    each subflow carries `segments` segments of 1000 bytes; the receiver's ACKs carry none."""
    a, b = keys
    sport = port0
    frames = [tcp_packet("10.1.0.1", "10.1.0.2", sport, 5201, SYN, capable()),
              tcp_packet("10.1.0.2", "10.1.0.1", 5201, sport, SYNACK, capable(b)),
              tcp_packet("10.1.0.1", "10.1.0.2", sport, 5201, ACK, capable(a, b))]
    subflows = [("10.1.0.1", sport)]
    for i in range(2, paths + 1):
        src, port = f"10.{i}.0.1", port0 + i
        frames += [tcp_packet(src, "10.1.0.2", port, 5201, SYN, join(token_of(b))),
                   tcp_packet("10.1.0.2", src, 5201, port, SYNACK, bytes([30, 16, 0x10, 1]) + b"\0" * 12),
                   tcp_packet(src, "10.1.0.2", port, 5201, ACK, bytes([30, 24, 0x10, 0]) + b"\0" * 20)]
        subflows.append((src, port))
    for _ in range(segments):
        for src, port in subflows:
            frames += [tcp_packet(src, "10.1.0.2", port, 5201, ACK, DSS, payload=1000),
                       tcp_packet("10.1.0.2", src, 5201, port, ACK, DSS)]
    return frames


def test_subflows_are_grouped_by_the_tokens_their_joins_carry(tmp_path):
    frames = connection(first=0, paths=4, segments=3)
    # a second, smaller MPTCP connection (other keys) and plain TCP with more data than either
    frames += connection(first=0, paths=2, segments=1, keys=(b"\1" * 8, b"\2" * 8), port0=50000)
    frames += [tcp_packet("10.1.0.1", "10.1.0.2", 33000, 80, ACK, payload=1400) for _ in range(50)]
    path = write_pcap(tmp_path / "c.pcap", frames)
    seen = pcap.read(path)
    assert (seen.mp_capable_syns, seen.mp_join_syns) == (2, 4)
    assert sorted((s.connection, s.src, s.bytes) for s in seen.subflows) == [
        (0, "10.1.0.1", 3000), (0, "10.2.0.1", 3000), (0, "10.3.0.1", 3000), (0, "10.4.0.1", 3000),
        (1, "10.1.0.1", 1000), (1, "10.2.0.1", 1000)]
    got = verify_capture(path, 4)
    if shutil.which("tshark"):
        assert got == tshark_reading(path)
    assert got == {"mp_capable_syns": 2, "mp_join_syns": 4, "subflows_with_data": 4,
                   "subflows": [{"src": f"10.{i}.0.1", "dst": "10.1.0.2", "bytes": 3000} for i in range(1, 5)]}


def test_only_segments_with_an_mptcp_option_count_as_tshark_read_them(tmp_path):
    frames = connection(first=0, paths=2, segments=2)
    frames.append(tcp_packet("10.2.0.1", "10.1.0.2", 40002, 5201, ACK, payload=700))  # no MPTCP option
    # a TCP connection first seen mid-way, with a DSS: an MPTCP connection of its own, from that segment on
    frames += [tcp_packet("10.3.0.1", "10.1.0.2", 40003, 5201, ACK, payload=500),
               tcp_packet("10.3.0.1", "10.1.0.2", 40003, 5201, ACK, DSS, payload=900)]
    path = write_pcap(tmp_path / "c.pcap", frames)
    assert [(s.connection, s.bytes) for s in pcap.read(path).subflows] == [(0, 2000), (0, 2000), (1, 900)]
    assert verify_capture(path, 2)["subflows"] == [{"src": f"10.{i}.0.1", "dst": "10.1.0.2", "bytes": 2000}
                                                   for i in (1, 2)]
    if shutil.which("tshark"):
        assert verify_capture(path, 2) == tshark_reading(path)


def test_a_join_with_an_unknown_token_is_a_connection_of_its_own(tmp_path):
    frames = connection(first=0, paths=1, segments=5)
    frames += [tcp_packet("10.2.0.1", "10.1.0.2", 41000, 5201, SYN, join(b"\xde\xad\xbe\xef")),
               tcp_packet("10.2.0.1", "10.1.0.2", 41000, 5201, ACK, DSS, payload=1000)]
    path = write_pcap(tmp_path / "c.pcap", frames)
    with pytest.raises(ExperimentFailed, match=r"carried data on 1 subflow\(s\), expected 2"):
        verify_capture(path, 2)
    assert verify_capture(path, 1)["subflows"] == [{"src": "10.1.0.1", "dst": "10.1.0.2", "bytes": 5000}]
    if shutil.which("tshark"):
        assert verify_capture(path, 1) == tshark_reading(path)


def test_plain_tcp_is_no_mptcp_and_a_record_cut_short_is_left_out(tmp_path):
    frames = [tcp_packet("10.1.0.1", "10.1.0.2", 33000, 80, SYN)]
    frames += [tcp_packet("10.1.0.1", "10.1.0.2", 33000, 80, ACK, payload=1400) for _ in range(5)]
    path = write_pcap(tmp_path / "c.pcap", frames)
    path.write_bytes(path.read_bytes()[:-10])  # tcpdump stopped mid-record
    assert len(list(pcap.packets(path))) == 5
    with pytest.raises(ExperimentFailed, match="plain TCP"):
        verify_capture(path, 1)


def test_a_file_that_is_no_capture_says_so(tmp_path):
    path = tmp_path / "x.pcap"
    path.write_bytes(b"not a capture at all, longer than a header")
    with pytest.raises(Exception, match="not a pcap or pcapng file"):
        pcap.read(path)
