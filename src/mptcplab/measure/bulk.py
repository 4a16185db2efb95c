"""The kit's own traffic tool: bulk TCP/MPTCP transfers and UDP on/off cross traffic.

    python -m mptcplab.measure.bulk server --bind ADDR --port P --flows N          (prints JSON when done)
    python -m mptcplab.measure.bulk client --connect ADDR --port P --proto mptcp --duration 10 [--sndbuf B] [--cc reno]
    python -m mptcplab.measure.bulk udp --connect ADDR --port P --rate 2mbit --on 1 --off 1 --duration 30 --seed 1
    python -m mptcplab.measure.bulk udp-sink --bind ADDR --port P
    python -m mptcplab.measure.bulk ss --out FILE --port P --interval 0.05 --stop FLAG   (ss -tinmHM samples: sockdiag)
    python -m mptcplab.measure.bulk qdisc --out FILE --interval 0.1 --stop FLAG [--dev D] [--netns NS]   (tcstats)
    python -m mptcplab.measure.bulk spawner --socket PATH   (forks any of the above on request: traffic.spawn)

Why not only iperf3: iperf3's `-w` sets SO_SNDBUF *and* SO_RCVBUF on both ends, so it cannot
change the sender's buffer alone; it writes through non-blocking sockets, so a sender short of
buffer waits in select() instead of `sk_stream_wait_memory()` (the paper's iperf 2 blocked there);
and Debian 12 ships no `mptcpize`. This sender writes with blocking `send()` like iperf 2, sets
only the options asked for, opens MPTCP sockets directly (IPPROTO_MPTCP) and reports whether
each connection really stayed MPTCP (MPTCP_INFO) and how many subflows it had.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import resource
import socket
import struct
import sys
import threading
import time

IPPROTO_MPTCP = 262
SOL_MPTCP = 284
MPTCP_INFO = 1
CHUNK = 128 * 1024
PORT = 5201  # where a transfer's receiver listens unless told otherwise (iperf3's port)


def _proto(name: str) -> int:
    return IPPROTO_MPTCP if name == "mptcp" else socket.IPPROTO_TCP


def mptcp_info(sock: socket.socket) -> dict | None:
    """MPTCP-level state of a connected MPTCP socket; None when it fell back to plain TCP."""
    try:
        raw = sock.getsockopt(SOL_MPTCP, MPTCP_INFO, 256)
    except OSError:
        return None
    if len(raw) < 8:
        return None
    info = {"subflows": raw[0] + 1, "add_addr_signal": raw[1], "add_addr_accepted": raw[2]}
    if len(raw) >= 48:
        info["write_seq"], info["snd_una"] = struct.unpack_from("=QQ", raw, 16)
        info["retransmits"] = struct.unpack_from("=I", raw, 44)[0]
    if len(raw) >= 80:
        info["bytes_retrans"], info["bytes_sent"], _, info["bytes_acked"] = struct.unpack_from("=QQQQ", raw, 48)
    return info


# Offsets of the kernel's count of bytes received in order (read by the application or not):
# tcpi_bytes_received in struct tcp_info (Linux >= 4.1) and mptcpi_bytes_received in struct
# mptcp_info (Linux >= 6.5), both __u64.
TCPI_BYTES_RECEIVED = 128
MPTCPI_BYTES_RECEIVED = 64
# tcpi_sacked (__u32): segments the receiver reported holding out of order (SACKed, beyond a hole).
TCPI_SACKED = 28
SACKED_EVERY_S = 0.05  # how often the sender samples it


def tcp_sacked(sock: socket.socket) -> int | None:
    """Segments this TCP sender knows the receiver holds out of order, by the kernel's count; None
    if it cannot say. Zero means the receiver's in-order count is every byte that crossed the link
    (as of the last ACK): see measure.traffic.BulkResult.clean_start."""
    try:
        raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    except OSError:
        return None
    return struct.unpack_from("=I", raw, TCPI_SACKED)[0] if len(raw) >= TCPI_SACKED + 4 else None


def kernel_bytes_received(sock: socket.socket) -> int | None:
    """Bytes this connection has received so far by the kernel's count; None if it cannot say.

    The receiver's goodput is counted from these, not from when recv() returned: a receiver that
    was not scheduled for a while reads a backlog at once, and counting the backlog at read time
    put up to ~60 ms of a 5 Mbit/s link's bytes into the wrong window (a 2 s check measured 102.7%
    of the link's payload ceiling)."""
    for level, opt, off in ((SOL_MPTCP, MPTCP_INFO, MPTCPI_BYTES_RECEIVED),
                            (socket.IPPROTO_TCP, socket.TCP_INFO, TCPI_BYTES_RECEIVED)):
        try:
            raw = sock.getsockopt(level, opt, 256)
        except OSError:
            continue
        if len(raw) >= off + 8:
            return struct.unpack_from("=Q", raw, off)[0]
    return None


COUNT_TIMED_WITHIN_S = 0.002  # a count whose reading took longer is read again (timed_count)


def timed_count(sock: socket.socket, tries: int = 5) -> tuple[float, int | None, float]:
    """(time before, kernel_bytes_received, time after): the count was taken in between. A reading
    that took longer than COUNT_TIMED_WITHIN_S (the reader was descheduled around it) is taken
    again, up to `tries` times; the last one is kept with its two times. In the VM under TCG the
    count came up to 296 ms after the time taken before it (2026-11-28, the setup check's four
    transfers side by side), which put a 5 Mbit/s link's bytes of that long into the wrong window:
    1.3 s windows read 4.0 to 5.3 Mbit/s on a link whose ceiling is 4.78."""
    for _ in range(tries):
        before = time.time()
        count = kernel_bytes_received(sock)
        after = time.time()
        if after - before <= COUNT_TIMED_WITHIN_S:
            break
    return before, count, after


# ---------------------------------------------------------------- receiver

def serve(bind: str, port: int, proto: str, flows: int, interval: float, timeout: float) -> dict:
    """Accept `flows` connections, count bytes per interval per flow, return when all closed."""
    lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _proto(proto))
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind((bind, port))
    lsock.listen(flows)
    print("ready", file=sys.stderr, flush=True)  # the client waits for this line
    lsock.settimeout(timeout)
    results: list[dict] = [None] * flows  # type: ignore[list-item]
    threads = []

    def receive(i: int, conn: socket.socket, peer) -> None:
        buf = bytearray(1 << 20)
        view = memoryview(buf)
        total, first, last, samples, key = 0, None, None, [], None
        counted = "kernel" if kernel_bytes_received(conn) is not None else "reads"
        conn.settimeout(timeout)
        error = None
        try:
            while True:
                n = conn.recv_into(view)
                if not n:
                    break
                now = time.time()
                first = first or now
                last = now
                total += n
                if int(now / interval) != key:  # one sample per interval (timed_count): [time, kernel's count, bytes read, time after]
                    key = int(now / interval)
                    if counted == "kernel":
                        before, count, after = timed_count(conn)
                        samples.append([before, count, total, after])
                    else:
                        samples.append([now, total, total, now])
        except OSError as exc:  # reset or silent too long: a flow starved by timeouts at heavy loss
            error = f"{type(exc).__name__}: {exc}"
        if last is not None:
            samples.append([last, total, total])  # every byte had arrived by the last read
        results[i] = {"flow": i, "peer": f"{peer[0]}:{peer[1]}", "bytes": total, "first": first, "last": last,
                      "protocol": conn.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL),
                      "counted": counted, "samples": samples, "error": error}
        conn.close()

    for i in range(flows):
        conn, peer = lsock.accept()
        t = threading.Thread(target=receive, args=(i, conn, peer), daemon=True)
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    lsock.close()
    return {"role": "server", "interval": interval, "flows": results}


# ---------------------------------------------------------------- sender

SENDER_COMM = "mlab-send"  # tracing selects the sender's threads by this name (see observe.py)
STARTED = "mlab-bulk-started"  # the sender's line on stderr once every flow is connected


def sleep_until(epoch: float | None) -> None:
    """Wait for an agreed start (several senders started one after another in a slow, emulated CPU
    still begin together); at once when it has passed or none was given."""
    if epoch is not None:
        time.sleep(max(0.0, epoch - time.time()))


def send(connect: str, port: int, proto: str, flows: int, duration: float, sndbuf: int | None,
         cc: str | None, bind: str | None, start_at: float | None = None) -> dict:
    try:  # threads started below inherit the name
        with open("/proc/self/comm", "w") as f:
            f.write(SENDER_COMM)
    except OSError:
        pass
    socks = []
    for _ in range(flows):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM, _proto(proto))
        if sndbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, sndbuf)
        if cc:
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
        if bind:
            s.bind((bind, 0))
        socks.append(s)
    ready = time.time()  # started and set up: after start_at if this host started it too slowly
    sleep_until(start_at)
    for s in socks:
        s.connect((connect, port))
    payload = memoryview(bytes(CHUNK))
    results: list[dict] = [None] * flows  # type: ignore[list-item]
    start = time.time()
    stop_at = start + duration
    # Connected: the transfer starts now. The caller may time events to it (Lab 2's mobility), since
    # starting this interpreter can take seconds in an emulated CPU.
    print(f"{STARTED} {start:.6f}", file=sys.stderr, flush=True)

    def pump(i: int, s: socket.socket) -> None:
        sent, info_mid, error = 0, None, None
        # [epoch s, tcpi_sacked] every SACKED_EVERY_S: where the receiver held no out-of-order data
        # (plain TCP only: an MPTCP socket's TCP_INFO is not one connection's).
        sacked, next_sample = [], 0.0
        try:
            while (now := time.time()) < stop_at:
                if proto == "tcp" and now >= next_sample and (n := tcp_sacked(s)) is not None:
                    sacked.append([now, n])
                    next_sample = now + SACKED_EVERY_S
                sent += s.send(payload)  # blocking: waits in sk_stream_wait_memory() when the buffer is full
                if info_mid is None and time.time() > start + duration / 2:
                    info_mid = mptcp_info(s)  # mid-transfer: all subflows are up
        except OSError as exc:  # the receiver gave the flow up (see serve): keep what it wrote
            error = f"{type(exc).__name__}: {exc}"
        info_end = mptcp_info(s)
        cc_now = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 32).split(b"\0")[0].decode()
        results[i] = {"flow": i, "local": "%s:%d" % s.getsockname(), "bytes_written": sent,
                      "sndbuf": s.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF), "cc": cc_now,
                      "protocol": s.getsockopt(socket.SOL_SOCKET, socket.SO_PROTOCOL),
                      "mptcp": info_end or info_mid, "mptcp_mid": info_mid, "sacked": sacked, "error": error}
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_WR)
        s.close()

    threads = [threading.Thread(target=pump, args=(i, s), daemon=True) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"role": "client", "ready": ready, "start": start, "start_at": start_at, "duration": duration,
            "flows": results}


# ---------------------------------------------------------------- UDP cross traffic

def udp_onoff(connect: str, port: int, rate_bps: float, on_s: float, off_s: float, duration: float,
              seed: int, size: int = 1200, start_at: float | None = None) -> dict:
    """Send UDP at `rate_bps` during exponentially distributed on periods (mean on_s), silent for
    exponentially distributed off periods (mean off_s). Seeded, so runs are repeatable."""
    rng = random.Random(seed)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    payload = bytes(size)
    gap = size * 8 / rate_bps
    sleep_until(start_at)
    start = time.time()
    end = start + duration
    periods, sent = [], 0
    while time.time() < end:
        on_end = min(end, time.time() + rng.expovariate(1 / on_s))
        periods.append([time.time(), on_end])
        nxt = time.time()
        while time.time() < on_end:
            try:
                s.sendto(payload, (connect, port))
                sent += 1
            except OSError:
                pass  # a full local queue drops the datagram, as a real source would
            nxt += gap
            time.sleep(max(0.0, nxt - time.time()))
        time.sleep(max(0.0, min(end, time.time() + rng.expovariate(1 / off_s)) - time.time()))
    return {"role": "udp", "packets": sent, "bytes": sent * size, "on_periods": periods}


def udp_sink(bind: str, port: int) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((bind, port))
    buf = bytearray(65536)
    while True:
        s.recv_into(buf)


# ---------------------------------------------------------------- spawner

def spawner(path: str) -> None:
    """Fork this interpreter, its imports done, for each role asked of it on the unix socket `path`
    (one datagram: the role's argv as JSON, with its stdin, stdout and stderr as SCM_RIGHTS fds;
    the answer: the child's pid, then its exit status as subprocess.Popen gives it). One per host
    of a network (traffic.spawn): in an emulated CPU a fork costs a tenth of a second, an
    interpreter with these imports three seconds, six times per Lab 2 run."""
    import os
    import selectors
    import signal

    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    srv.bind(path)
    srv.listen(16)
    wake_r, wake_w = os.pipe()  # SIGCHLD wakes the loop to reap and report (no polling)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel = selectors.DefaultSelector()
    sel.register(srv, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    print("ready", file=sys.stderr, flush=True)
    while True:
        for key, _ in sel.select():
            if key.fileobj is srv:
                conn, _ = srv.accept()
                msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
                pid = os.fork()
                if pid == 0:  # the role: its own process group (killed as one), the caller's stdio
                    signal.set_wakeup_fd(-1)
                    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                    for sock in (srv, conn, *children.values()):
                        sock.close()
                    sel.close()
                    os.close(wake_r)
                    os.close(wake_w)
                    os.setpgid(0, 0)
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    rc = 1
                    try:
                        rc = main(json.loads(msg))
                    except SystemExit as exc:
                        rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                    except BaseException:
                        import traceback

                        traceback.print_exc()
                    finally:
                        for f in (sys.stdout, sys.stderr):
                            with contextlib.suppress(Exception):
                                f.flush()
                        os._exit(rc)
                with contextlib.suppress(OSError):  # here too, so the group exists when the caller hears the pid
                    os.setpgid(pid, pid)
                for fd in fds:
                    os.close(fd)
                conn.send(str(pid).encode())
                children[pid] = conn
            else:
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_r, 512)
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                with contextlib.suppress(OSError):
                    conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                conn.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m mptcplab.measure.bulk", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="role", required=True)
    w = sub.add_parser("spawner", help="fork the roles below on request (traffic.spawn)")
    w.add_argument("--socket", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", required=True)
    c = sub.add_parser("client")
    c.add_argument("--connect", required=True)
    for q in (s, c):  # the two ends of a transfer agree on these
        q.add_argument("--port", type=int, default=PORT)
        q.add_argument("--proto", choices=("tcp", "mptcp"), default="tcp")
        q.add_argument("--flows", type=int, default=1)
    s.add_argument("--interval", type=float, default=0.1)
    s.add_argument("--timeout", type=float, default=120)
    c.add_argument("--duration", type=float, default=10)
    c.add_argument("--sndbuf", type=int, default=None, help="setsockopt(SO_SNDBUF) before connect")
    c.add_argument("--cc", default=None, help="setsockopt(TCP_CONGESTION) before connect")
    c.add_argument("--bind", default=None)
    c.add_argument("--start-at", type=float, default=None, help="epoch s to connect at (sleep until then)")
    u = sub.add_parser("udp")
    u.add_argument("--connect", required=True)
    u.add_argument("--port", type=int, default=5301)
    u.add_argument("--rate", type=float, required=True, help="bits per second while on")
    u.add_argument("--on", type=float, default=1.0)
    u.add_argument("--off", type=float, default=1.0)
    u.add_argument("--duration", type=float, default=10)
    u.add_argument("--seed", type=int, default=1)
    u.add_argument("--start-at", type=float, default=None, help="epoch s to start at (sleep until then)")
    k = sub.add_parser("udp-sink")
    k.add_argument("--bind", required=True)
    k.add_argument("--port", type=int, default=5301)
    q = sub.add_parser("ss", help="sample the sockets towards a port as `ss -tinmHM` prints them until FLAG exists")
    q.add_argument("--out", required=True)
    q.add_argument("--port", type=int, required=True)
    q.add_argument("--interval", type=float, required=True)
    q.add_argument("--stop", required=True)
    d = sub.add_parser("qdisc", help="sample the qdiscs as `tc -s -j qdisc show` prints them until FLAG exists")
    d.add_argument("--out", required=True)
    d.add_argument("--interval", type=float, required=True)
    d.add_argument("--stop", required=True)
    d.add_argument("--dev", default=None)
    d.add_argument("--netns", default=None, help="the network namespace to read (by default this one)")
    a = p.parse_args(argv)
    if a.role == "server":
        out = serve(a.bind, a.port, a.proto, a.flows, a.interval, a.timeout)
    elif a.role == "client":
        out = send(a.connect, a.port, a.proto, a.flows, a.duration, a.sndbuf, a.cc, a.bind, a.start_at)
    elif a.role == "udp":
        out = udp_onoff(a.connect, a.port, a.rate, a.on, a.off, a.duration, a.seed, start_at=a.start_at)
    elif a.role == "ss":
        from .sockdiag import sample_ss  # imported by this role alone

        out = sample_ss(a.out, a.port, a.interval, a.stop)
    elif a.role == "qdisc":
        from ..core.netns import join
        from .tcstats import sample_qdiscs

        if a.netns:
            join(a.netns)  # this role's one thread: its socket and device names are the namespace's
        out = sample_qdiscs(a.out, a.interval, a.stop, a.dev)
    elif a.role == "spawner":
        spawner(a.socket)
        return 0
    else:
        udp_sink(a.bind, a.port)
        return 0
    # what this role cost the CPU (all its threads, since the spawner forked it): runs' manifests
    # record it (process_cpu_s), where a guest's CPU is what a run costs the host
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
