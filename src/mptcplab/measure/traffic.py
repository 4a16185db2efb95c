"""Traffic between the hosts of a running topology, and proof that MPTCP really ran.

    r = bulk(net, src="snd", dst="rcv", path="fast", proto="mptcp", duration=10)
    r.goodput_transfer_mbps, r.flows, r.intervals, r.summary()

The transfers use the kit's blocking sender/receiver (`mptcplab.measure.bulk`, see there for why not
iperf3): it sets SO_SNDBUF on the sender alone and TCP_CONGESTION per connection, and reports
subflows from MPTCP_INFO.

An MPTCP transfer that fell back to plain TCP, or ran with a different number of subflows than
the topology was built for, raises `ExperimentFailed`: a silent fallback would look like a result.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import pcap as pcap_reader
from ..core.errors import EnvironmentProblem, ExperimentFailed, UsageError
from .bulk import PORT, STARTED

TCP_RTO_MIN_S = 0.2  # the kernel's TCP_RTO_MIN: no timeout repairs a loss sooner


@dataclass
class BulkResult:
    tool: str
    proto: str
    duration: float
    t0: float  # epoch seconds when the first byte arrived
    t_end: float  # epoch seconds when the last byte arrived
    flows: list[dict]
    intervals: "object"  # pandas DataFrame: time, flow, bytes, goodput_bin_mbps (bins labelled by their start)
    extra: dict = field(default_factory=dict)
    interval: float = 0.1  # seconds per bin of `intervals`
    # per flow: [[epoch s, bytes the kernel had received by then, bytes the reader had read, epoch s after
    #   the count was read (bulk.timed_count)], ...]
    samples: list = field(default_factory=list)
    # per flow (plain TCP): [[epoch s, segments the sender knew the receiver held out of order], ...]
    sacked: list = field(default_factory=list)
    # CPU seconds each end's process used ({"sender": s, "receiver": s}; bulk.main's cpu_s)
    cpu_s: dict = field(default_factory=dict)

    @property
    def goodput_transfer_mbps(self) -> float:
        """Goodput of all flows together over the whole transfer: the bytes that arrived between
        the first byte of any flow and the last byte of any flow, over that span, by the kernel's
        count (`goodput_window_mbps` from t0 to t_end).

        Not the bytes read over that span: a reader that wakes late (a guest under software
        emulation) finds bytes the kernel received before its first read, and counting them read
        above the link (Lab 1's scaled point in the VM: single TCP 4.86 Mbit/s on a 5 Mbit/s link,
        ceiling 4.78). Not the sum of the flows' own rates either: each of those is taken over that
        flow's own span, and while one flow has not started or has already drained, the others
        carry its share of the link (Lab 3's 8 flows over a 4 Mbit/s DropTail link summed to 3.998
        Mbit/s against a ceiling of 3.826). Without the kernel's samples (a result built by hand),
        the bytes over the span."""
        span = self.t_end - self.t0
        if not self.samples:
            return sum(f["bytes"] for f in self.flows) * 8 / span / 1e6 if span > 0 else 0.0
        return self.goodput_window_mbps(self.t0, self.t_end)

    def received_by(self, t):
        """Bytes all flows had received by epoch time(s) t, by the kernel's count (see
        bulk.kernel_bytes_received), interpolated between the receiver's samples."""
        import numpy as np

        return sum(np.interp(t, [s[0] for s in fs], [s[1] for s in fs], left=0.0) for fs in self.samples if fs)

    def reader_backlog_max(self) -> int:
        """The most bytes received but not yet read at any sample (a late reader's backlog)."""
        return int(max((s[1] - s[2] for fs in self.samples for s in fs if len(s) > 2), default=0))

    def goodput_window_mbps(self, start: float, end: float) -> float:
        """Goodput of all flows together over [start, end] (epoch s), counting only bytes that
        crossed the link inside the window.

        The kernel's count is of bytes delivered *in order*: while a loss is repaired it stands
        still, and when the retransmission fills the hole, every byte held out of order behind it
        is counted at once, though those crossed the link earlier. A window starting during such a
        stall counts bytes sent before it and reads above the link (Lab 2's 80 ms path: 5.20 Mbit/s
        against a ceiling of 4.78 while its emulator sent 5.0). So the window starts where the
        count last moved before `start`: the stall's bytes are counted over the time they
        crossed."""
        if not end > start or not self.samples:
            return 0.0
        start = self.stall_start(start)
        return float((self.received_by(end) - self.received_by(start)) * 8 / (end - start) / 1e6)

    def stall_start(self, t: float) -> float:
        """Where a loss repair around `t` began (t itself if the count was moving at its usual pace
        then): going back from `t`, through the stretch where the in-order count moved at less
        than half its typical rate (the median over the transfer's sample intervals), and through
        a release above one and a half times it only where such a stall came before the release. A repair holds the count nearly still (not always exactly:
        a few segments may still be delivered in order), then releases every byte held behind
        the hole at once, faster than the link: a window starting in either phase counts bytes
        that crossed the link before it. Seen: Lab 2's 80 ms path in the VM, 0.59 Mbit/s for
        0.37 s and then 9.9 Mbit/s (5.2 Mbit/s read on a 5 Mbit/s link); Lab 1's slow path in
        UML, a window starting in the 156-193 Mbit/s release (98.2 read on 100 Mbit/s); both in
        tests/engine/fixtures/goodput. The pace is the transfer's own, not the link's: moving the
        start back only adds time and the bytes of that time, so a reading is never capped by it."""
        import numpy as np

        pace = self._pace
        if pace is None:
            return t
        times, counts, typical = pace
        # A gap in the samples (the sampler itself not scheduled) has no pace to judge: a repair
        # inside it is averaged away, and the count at a `t` inside it is only interpolated. Seen:
        # Lab 2's 80 ms path in the VM under load, no sample from 0.66 to 1.34 s and a stall from
        # about 1.0 s: judged from 1.0 s, 4.88 Mbit/s of a 5 Mbit/s link (ceiling 4.78). Such a
        # gap is walked back through like a stall.
        gap = 3 * float(np.median(np.concatenate([np.diff([x[0] for x in fs]) for fs in self.samples if len(fs) > 1]
                                                 or [np.diff(times)])))  # each flow's own sampling interval
        # Back from t: through a release (faster than usual) only if a stall (slower) came before
        # it; a flow that simply got more of a shared link is no repair.
        begin, count, stalled = t, float(self.received_by(t)), None
        after = times[times >= t]
        for u, before in zip(times[times < t][::-1], counts[:int(np.sum(times < t))][::-1]):
            rate = (count - before) / (begin - u)
            unseen = (float(after[0]) if begin == t and len(after) else begin) - u > gap
            if rate < typical / 2 or unseen:
                stalled = float(u)
            elif not (rate > typical * 1.5 and stalled is None):
                break
            begin, count = float(u), before
        return stalled if stalled is not None else t

    @functools.cached_property
    def _pace(self):
        """(sample times, the in-order count at each, the transfer's typical pace: the median of
        its moving sample intervals), or None with fewer than two samples. Computed once: the steady
        window reads it at both ends (stall_start, tail_start)."""
        import numpy as np

        times = np.unique(np.concatenate([[s[0] for s in fs] for fs in self.samples if fs] or [np.array([])]))
        if len(times) < 2:
            return None
        counts = [float(self.received_by(float(u))) for u in times]
        rates = np.diff(counts) / np.diff(times)
        moving = rates[rates > 0]
        return times, counts, float(np.median(moving)) if len(moving) else 0.0

    def tail_start(self, t: float) -> float:
        """Where a last stall before `t` began, if it lasted at least TCP's least retransmission
        timeout (t itself otherwise): going back from `t` through the sample intervals that moved
        at less than half the transfer's typical pace. The last segments lost have no later ones
        to signal it, so TCP repairs them by timeout: the setup check's single TCP on Lab 2's 40 ms
        path in the VM (2026-11-28) carried 4.78 Mbit/s to 4.87 s, then its last 6.5 KB came at
        5.36 s, and the window to the last byte read 4.28 (89.5%: refused). Ending the window there
        leaves out that time and the bytes counted in it. A shorter slow end is only the last
        sample interval, which the last byte ends early: cut, it left a release of held bytes at
        the window's end (8.4 Mbit/s for 0.09 s, then 11 KB in 0.13 s) and read 4.87 of 4.78."""
        pace = self._pace
        if pace is None:
            return t
        times, counts, typical = pace
        end, count = t, float(self.received_by(t))
        for u, before in zip(times[times < t][::-1], counts[:int(sum(times < t))][::-1]):
            if not (count - before) / (end - u) < typical / 2:
                break
            end, count = float(u), before
        return end if t - end >= TCP_RTO_MIN_S else t

    def clean_start(self, t: float) -> float:
        """The first moment from `t` on at which every flow's receiver held no out-of-order data,
        by its sender's kernel (tcpi_sacked 0, bulk.tcp_sacked); `t` itself without such samples,
        or if no such moment came.

        From such a moment the in-order count is every byte that crossed the link (up to the
        segments of a new loss in the ACK's last half round trip), so a window starting there
        counts no byte that crossed before it. Seen: Lab 2's setup check in the VM (CI, 2026-11-28),
        the 60 ms path dropped 113 segments at the end of slow start; its repair released held
        bytes at up to 6.9 Mbit/s until about 2 s in, and a window from 1.0 s read 4.97 Mbit/s on a
        5 Mbit/s link (ceiling 4.78), where stall_start found no stall to go back to."""
        import numpy as np

        flows = [(np.array([u for u, _ in fs]), [n for _, n in fs]) for fs in self.sacked if fs]
        if not flows:
            return t
        times = np.unique(np.concatenate([at for at, _ in flows]))
        for u in [t, *times[times > t]]:  # t itself first: a flow clean at t keeps its window
            # Each flow's latest reading at or before u and the one after it both 0: the sender learns
            # of a hole only an ACK's way later, so its reading at u alone can miss one the receiver
            # already had (Lab 1's setup check in UML: 0 at 1.0 s, 74 at 1.1 s, and a window from
            # 1.0 s read 19.33 Mbit/s on a 20 Mbit/s link, ceiling 19.13). Before a flow's first
            # reading, or at its last: not known to be clean.
            if all(0 < (i := int(np.searchsorted(at, u, side="right"))) < len(n) and n[i - 1] == 0 and n[i] == 0
                   for at, n in flows):
                return float(u)
        return t

    def goodput_steady_mbps(self, warmup_s: float) -> float:
        """Goodput after the first `warmup_s` seconds (slow start excluded) from the first moment
        the receiver held no out-of-order data (clean_start) to the last byte, or to where a last
        stall began (tail_start: a tail repaired by timeout is not the link's pace)."""
        start = self.clean_start(self.t0 + warmup_s)
        end = self.tail_start(self.t_end)
        return self.goodput_window_mbps(start, end if end > start else self.t_end)

    def summary(self) -> dict:
        return {"tool": self.tool, "proto": self.proto, "duration_s": self.duration, "t0": self.t0,
                "goodput_transfer_mbps": round(self.goodput_transfer_mbps, 3), "span_s": round(self.t_end - self.t0, 3),
                "flows": len(self.flows),
                "reader_backlog_max": self.reader_backlog_max(),
                "subflows": max((f.get("subflows") or 1) for f in self.flows),
                "per_flow_mbps": [round(f["goodput_transfer_mbps"], 3) for f in self.flows], **self.extra}



# A sweep resumes over the runs it already has, and `mptcplab check` reads any sweep: summaries
# written before the goodput vocabulary (one `goodput_<what>_mbps` per quantity) name them as
# below. Lab 3's `mbps` was its steady window's goodput (it also wrote `mbps_transfer`); in a table of
# time bins (BINS_COLUMNS: intervals.csv, Lab 2's goodput-bins.csv) one bin's, `goodput_bin_mbps`.
PREVIOUS_KEYS = {"mbps": "goodput_transfer_mbps", "mbps_transfer": "goodput_transfer_mbps",
                 "tcp_mbps": "tcp_goodput_transfer_mbps", "tcp_steady_mbps": "tcp_goodput_steady_mbps",
                 "mptcp_mbps": "mptcp_goodput_transfer_mbps", "goodput_mbps": "goodput_steady_mbps"}
BINS_COLUMNS = {"time", "t", "run", "flow", "bytes", "mbps"}


def current_column(previous: str, columns) -> str | None:
    """A previous goodput column's name now, in a table with these `columns` (None: not a previous
    name). Lab 3's runs table had `mbps`, its window's goodput, beside `mbps_transfer`; a table of
    nothing but time bins had `mbps`, each bin's goodput."""
    if previous == "mbps" and "goodput_window_mbps" in columns:
        return "goodput_window_mbps"
    if previous == "mbps" and set(columns) <= BINS_COLUMNS:
        return "goodput_bin_mbps"
    return PREVIOUS_KEYS.get(previous)


def current_keys(summary):
    """A run's summary (or any part of it) with the previous goodput names replaced, at any depth."""
    if isinstance(summary, list):
        return [current_keys(v) for v in summary]
    if not isinstance(summary, dict):
        return summary
    rename = dict(PREVIOUS_KEYS, mbps="goodput_window_mbps") if "mbps_transfer" in summary else PREVIOUS_KEYS
    return {rename.get(k, k): current_keys(v) for k, v in summary.items()}


def read_summary(run_dir: Path | str) -> dict:
    """A run's summary.json, by the current goodput names (whichever commit wrote it)."""
    return current_keys(json.loads((Path(run_dir) / "summary.json").read_text()))

def bulk(net, src: str, dst: str, path: str, proto: str = "tcp", duration: float = 10.0, flows: int = 1,
         sndbuf: int | None = None, cc: str | None = None, interval: float = 0.1,
         port: int = PORT, expect_subflows: int | None = None,
         on_start: Callable[[float], None] | None = None,
         start_at: Callable[[], float] | None = None) -> BulkResult:
    """Bulk transfer src -> dst, to dst's address on `path` (MPTCP adds the other subflows).

    `start_at()` is called once the receiver listens and returns the epoch time the sender is to
    connect at (start_time() gives one far enough ahead); `on_start(t)` is called with the
    sender's clock once every flow is connected."""
    if proto not in ("tcp", "mptcp"):
        raise UsageError(f"proto {proto!r}: choose tcp or mptcp")
    if flows < 1 or duration <= 0:
        raise UsageError("flows must be >= 1 and duration > 0")
    if proto == "mptcp" and expect_subflows is None:
        expect_subflows = net.topo.mptcp_subflows or 1
    addr = net.address(dst, path)
    result = _run_bulk(net, src, dst, addr, proto, duration, flows, sndbuf, cc, interval, port, on_start, start_at)
    if proto == "mptcp":
        verify_mptcp_flows(result, expect_subflows)
    return result


def verify_mptcp_flows(result: BulkResult, expect_subflows: int) -> None:
    for f in result.flows:
        if f.get("subflows") is None:
            raise ExperimentFailed(f"flow {f['flow']} fell back to plain TCP (no MPTCP_INFO on the socket); "
                                   "is net.mptcp.enabled=1 on both hosts?")
        if f["subflows"] != expect_subflows:
            raise ExperimentFailed(f"flow {f['flow']} used {f['subflows']} subflow(s), expected {expect_subflows}: "
                                   "check the MPTCP endpoints and limits (`ip mptcp endpoint show`)")


# ---------------------------------------------------------------- the kit's bulk tool

def _py(role: str, *args) -> list[str]:
    return [sys.executable, "-m", "mptcplab.measure.bulk", role, *[str(a) for a in args]]


SPAWNERS = Path("/run/mptcplab")  # their sockets; /run is the guest's own tmpfs in UML and the VM


class Spawned:
    """A role of the kit's tool forked by a host's spawner (bulk.spawner): the part of
    subprocess.Popen the kit uses (pid, its own process group, stdout/stderr, poll, wait,
    communicate), so Network.stop and teardown treat it as any process they started."""

    def __init__(self, args: list[str], pid: int, status: socket.socket, stdout, stderr) -> None:
        self.args, self.pid, self._status = args, pid, status
        self.stdout, self.stderr = stdout, stderr
        self.returncode: int | None = None
        self._readers: dict[str, tuple[threading.Thread, list]] = {}

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._status], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout)
            said = self._status.recv(64)
            self.returncode = int(said) if said else -signal.SIGKILL  # no answer: its spawner was killed
            self._status.close()
        return self.returncode

    def poll(self) -> int | None:
        try:
            return self.wait(0)
        except subprocess.TimeoutExpired:
            return None

    def communicate(self, timeout: float | None = None) -> tuple[str | None, str | None]:
        """Read stdout and stderr to their end (whatever a readline() left buffered included), then
        wait; subprocess.TimeoutExpired when `timeout` passes first (call again to go on)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for name in ("stdout", "stderr"):
            f = getattr(self, name)
            if f is not None and name not in self._readers:
                got: list = []
                reader = threading.Thread(target=lambda f=f, got=got: got.append(f.read()), daemon=True)
                reader.start()
                self._readers[name] = (reader, got)
        left = lambda: None if deadline is None else max(0.0, deadline - time.monotonic())  # noqa: E731
        for reader, _ in self._readers.values():
            reader.join(left())
            if reader.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(left())
        out = {name: got[0] if got else None for name, (_, got) in self._readers.items()}
        return out.get("stdout"), out.get("stderr")


def spawn(net, host: str, role: str, *args, what: str = "", stdout=subprocess.PIPE,
          stderr=subprocess.PIPE) -> Spawned:
    """Run a role of the kit's tool in `host`, forked by the host's spawner (started on first use,
    once per network) rather than started afresh: in an emulated CPU an interpreter with its imports
    takes seconds (3.1 s in the VM place under TCG, 2026-11), a fork a fraction of one. stdout and
    stderr: subprocess.PIPE (text) or subprocess.DEVNULL."""
    path = _spawner(net, host)
    argv = [role, *[str(a) for a in args]]
    with open(os.devnull, "r+b") as null:
        pipes = {name: os.pipe() if want == subprocess.PIPE else None
                 for name, want in (("stdout", stdout), ("stderr", stderr))}
        fds = [null.fileno(), *[p[1] if p else null.fileno() for p in pipes.values()]]
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            conn.connect(str(path))
            socket.send_fds(conn, [json.dumps(argv).encode()], fds)
        except OSError as exc:
            conn.close()
            raise EnvironmentProblem(f"the kit's spawner in {host} did not take {role}: {exc}") from None
        finally:
            for p in pipes.values():
                if p:
                    os.close(p[1])  # the child holds the write ends: EOF when it exits
    said = conn.recv(64)
    if not said:
        raise EnvironmentProblem(f"the kit's spawner in {host} did not fork {role}")
    streams = {name: os.fdopen(p[0], "r") if p else None for name, p in pipes.items()}
    proc = Spawned(_py(*argv), int(said), conn, streams["stdout"], streams["stderr"])
    net.track(proc, what or role)
    return proc


def _spawner(net, host: str) -> Path:
    """The socket of `host`'s spawner in this network, started and ready."""
    path = net.spawners.get(host)
    if path is None:
        SPAWNERS.mkdir(parents=True, exist_ok=True)
        path = SPAWNERS / f"spawn-{net.ns(host)}.sock"
        proc = net.popen(host, _py("spawner", "--socket", path), what="spawner", stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
        ready = proc.stderr.readline()
        if "ready" not in ready:
            raise EnvironmentProblem(f"the kit's spawner in {host} failed: {ready}{proc.stderr.read()[-1000:]}")
        net.spawners[host] = path
    return path


def start_time(net, host: str, senders: int) -> float:
    """An epoch time far enough ahead for `senders` of the kit's senders, started now in `host`, to
    be waiting for it: each takes what one fork of the host's spawner, with the sender's command
    line parsed, took in this place (measured once per network, `net.sender_start_s`; more in an
    emulated CPU, where processes started together also start one after another), plus 0.2 s."""
    cost = net.sender_start_s
    if cost is None:
        _spawner(net, host)
        t = time.monotonic()
        probe = spawn(net, host, "--help", what="start-up probe", stdout=subprocess.DEVNULL)
        probe.communicate(timeout=120)
        net.stop(probe)
        cost = net.sender_start_s = time.monotonic() - t
    return time.time() + senders * cost + 0.2


@dataclass
class Transfer:
    """One of several transfers started at the same instant (concurrent)."""
    src: str
    dst: str
    path: str  # the receiver's address on this path is the one connected to
    proto: str = "tcp"
    cc: str | None = None
    port: int = PORT
    flows: int = 1
    sndbuf: int | None = None


def concurrent(net, transfers: list[Transfer], duration: float, interval: float = 0.1) -> list[BulkResult]:
    """Several transfers whose senders all connect at one agreed instant (start_time), however
    slowly each process starts: e.g. an MPTCP connection and a TCP flow competing from the start."""
    addrs = [net.address(t.dst, t.path) for t in transfers]
    servers = [_receiver(net, t.dst, a, t.proto, duration, t.flows, interval, t.port)
               for t, a in zip(transfers, addrs)]
    at = start_time(net, transfers[0].src, len(transfers))
    clients = [_sender(net, t.src, a, t.proto, duration, t.flows, t.sndbuf, t.cc, t.port, at)
               for t, a in zip(transfers, addrs)]
    return [_collect(net, t.src, t.dst, c, s, a, t.port, t.proto, duration, interval)
            for t, a, c, s in zip(transfers, addrs, clients, servers)]


def _run_bulk(net, src, dst, addr, proto, duration, flows, sndbuf, cc, interval, port,
              on_start: Callable[[float], None] | None = None,
              start_at: Callable[[], float] | None = None) -> BulkResult:
    server = _receiver(net, dst, addr, proto, duration, flows, interval, port)
    client = _sender(net, src, addr, proto, duration, flows, sndbuf, cc, port,
                     start_at() if start_at is not None else None)
    return _collect(net, src, dst, client, server, addr, port, proto, duration, interval, on_start)


def _receiver(net, dst, addr, proto, duration, flows, interval, port) -> Spawned:
    """The receiver, once it listens."""
    server = spawn(net, dst, "server", "--bind", addr, "--port", port, "--proto", proto, "--flows", flows,
                   "--interval", interval, "--timeout", duration + 60, what="bulk server")
    ready = server.stderr.readline()
    if "ready" not in ready:
        raise EnvironmentProblem(f"bulk server in {dst} failed: {ready}{server.stderr.read()[-1000:]}")
    return server


def _sender(net, src, addr, proto, duration, flows, sndbuf, cc, port, at: float | None) -> Spawned:
    """The sender, connecting at epoch time `at` (at once if None)."""
    args = ["--connect", addr, "--port", port, "--proto", proto, "--flows", flows, "--duration", duration]
    if sndbuf:
        args += ["--sndbuf", sndbuf]
    if cc:
        args += ["--cc", cc]
    if at is not None:
        args += ["--start-at", f"{at:.6f}"]
    return spawn(net, src, "client", *args, what="bulk client")


def _collect(net, src, dst, client, server, addr, port, proto, duration, interval,
             on_start: Callable[[float], None] | None = None) -> BulkResult:
    """Wait for a sender and its receiver to finish; their result."""
    said = client.stderr.readline()  # STARTED once connected, or why it could not connect
    if said.startswith(STARTED) and on_start is not None:
        on_start(float(said.split()[1]))
    try:
        c_out, c_err = client.communicate(timeout=duration + 90)
    except subprocess.TimeoutExpired:
        net.stop(client)
        raise EnvironmentProblem(f"bulk client in {src} did not finish within {duration + 90:.0f} s") from None
    if client.returncode != 0 or not said.startswith(STARTED):
        raise EnvironmentProblem(f"bulk client in {src} failed ({client.returncode}): {(said + c_err)[-1500:]}")
    net.stop(client)
    # the receiver may wait out a starving flow's last retransmissions, up to its own --timeout
    srv_out, srv_err = server.communicate(timeout=duration + 90)
    net.stop(server)
    if server.returncode not in (0, None) or not srv_out.strip():
        raise EnvironmentProblem(f"bulk server in {dst} failed: {srv_err[-1500:]}")
    return bulk_result(json.loads(c_out), json.loads(srv_out), addr, port, proto, duration, interval)


def bulk_result(client: dict, srv: dict, addr: str, port: int, proto: str, duration: float,
                interval: float) -> BulkResult:
    """The result of one transfer from what the sender and the receiver printed (their JSON)."""
    import pandas as pd

    import numpy as np

    by_local = {c["local"]: c for c in client["flows"]}
    flows_out, rows = [], []
    t0 = min(f["first"] for f in srv["flows"] if f["first"])
    t_end = max(f["last"] for f in srv["flows"] if f["last"])
    edges = np.arange(np.floor(t0 / interval), np.ceil(t_end / interval) + 1) * interval  # bin edges
    for f in srv["flows"]:
        c = by_local.get(f["peer"], {})
        span = (f["last"] - f["first"]) if f["first"] else 0
        # The flow's own goodput_transfer_mbps: as the transfer's, the bytes that arrived inside its span
        inside = (float(np.diff(np.interp([f["first"], f["last"]], [s[0] for s in f["samples"]],
                                          [s[1] for s in f["samples"]], left=0.0))[0])
                  if f["samples"] and span > 0 else f["bytes"])
        mptcp = c.get("mptcp")
        flows_out.append({
            "flow": f["flow"], "local": c.get("local"), "peer": f"{addr}:{port}", "bytes": f["bytes"],
            "goodput_transfer_mbps": inside * 8 / span / 1e6 if span > 0 else 0.0,
            "sndbuf": c.get("sndbuf"), "cc": c.get("cc"), "protocol": c.get("protocol"),
            "subflows": mptcp["subflows"] if mptcp else (None if proto == "mptcp" else 1),
            "mptcp_info": mptcp,
        })
        if f["samples"]:  # bytes per bin: the kernel's count interpolated at the bin's edges
            got = np.diff(np.interp(edges, [s[0] for s in f["samples"]], [s[1] for s in f["samples"]], left=0.0))
            rows += [{"time": round(t, 6), "flow": f["flow"], "bytes": float(b),
                      "goodput_bin_mbps": b * 8 / interval / 1e6}
                     for t, b in zip(edges[:-1], got) if b > 0]
    intervals = pd.DataFrame(rows, columns=["time", "flow", "bytes", "goodput_bin_mbps"])
    extra = {"counted": sorted({f.get("counted", "reads") for f in srv["flows"]})}
    # A flow the receiver or the sender gave up (reset, or silent past the timeout: a flow starved
    # by retransmission timeouts at heavy loss) still counts with what it delivered; said here.
    errors = [f"flow {f['flow']}: {e}" for f in srv["flows"]
              if (e := f.get("error") or by_local.get(f["peer"], {}).get("error"))]
    if errors:
        extra["flow_errors"] = errors
    if client.get("start_at"):  # how late the sender started after the agreed instant (start_time)
        extra["start_late_s"] = round(client["start"] - client["start_at"], 3)
        # of that, how late its process was ready to wait: the host started it more slowly than
        # start_time allowed (a busy host), not a sender that missed its instant
        extra["ready_late_s"] = round(max(0.0, client["ready"] - client["start_at"]), 3)
    return BulkResult("mptcplab.measure.bulk", proto, duration, t0, t_end, flows_out, intervals, interval=interval,
                      samples=[f["samples"] for f in srv["flows"]],
                      sacked=[by_local.get(f["peer"], {}).get("sacked") or [] for f in srv["flows"]], extra=extra,
                      cpu_s={"sender": client.get("cpu_s"), "receiver": srv.get("cpu_s")})


def verify_capture(pcap: Path, expect_subflows: int) -> dict:
    """Prove from a capture that MPTCP ran with `expect_subflows` subflows carrying data.

    Counts MP_CAPABLE and MP_JOIN SYNs and the TCP streams that carry data of the largest MPTCP
    connection (read by mptcplab.measure.pcap, which says why not tshark). Raises ExperimentFailed otherwise.
    """
    seen = pcap_reader.read(pcap)
    conns: dict[int, list] = {}
    for s in seen.subflows:
        if s.bytes > 0:
            conns.setdefault(s.connection, []).append(s)
    if not conns:
        raise ExperimentFailed(f"{pcap.name}: no MPTCP data in the capture: the transfer was plain TCP")
    sub = max(conns.values(), key=lambda c: sum(s.bytes for s in c))
    result = {"mp_capable_syns": seen.mp_capable_syns, "mp_join_syns": seen.mp_join_syns,
              "subflows_with_data": len(sub),
              "subflows": sorted(({"src": s.src, "dst": s.dst, "bytes": s.bytes} for s in sub),
                                 key=lambda s: s["src"])}
    if len(sub) != expect_subflows:
        raise ExperimentFailed(f"{pcap.name}: MPTCP carried data on {len(sub)} subflow(s), expected "
                               f"{expect_subflows}: {result['subflows']}")
    return result


# ---------------------------------------------------------------- UDP cross traffic

def udp_onoff(net, src: str, dst: str, path: str, rate: str, on_s: float = 1.0, off_s: float = 1.0,
              duration: float = 10.0, seed: int = 1, port: int = 5301, start_at: float | None = None):
    """Start UDP on/off cross traffic src -> dst over `path`; returns (sender, sink), the two
    processes, for the caller to stop together (net.stop): a sink left running holds its port, and
    the next run's sink on it could not bind (Lab 2 started new ones every run, which failed from
    the second run on).

    Rate while on is `rate` (e.g. "2mbit"); on and off periods are exponential with the given means,
    from `start_at` (epoch s; see start_time) or as soon as the sender runs.
    """
    from ..net.links import LinkSpec

    bps = LinkSpec.parse(f"rate={rate}").rate_bps
    addr = net.address(dst, path)
    sink = spawn(net, dst, "udp-sink", "--bind", addr, "--port", port, what="udp sink",
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sender = spawn(net, src, "udp", "--connect", addr, "--port", port, "--rate", bps, "--on", on_s,
                   "--off", off_s, "--duration", duration, "--seed", seed,
                   *(["--start-at", f"{start_at:.6f}"] if start_at is not None else []),
                   what="udp on/off", stderr=subprocess.DEVNULL)
    return sender, sink
