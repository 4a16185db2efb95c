"""Observation of a running experiment: capture, kernel tracepoints, `ss` samples, counters, qdiscs.

Every source writes into the run directory and says in `rundir.manifest["observation"]` what it
recorded, or why it could not (a kernel without kprobes, a missing tracepoint), instead of
silently producing nothing. All tables use epoch seconds in a column named `time`.

    with Capture(net, "snd", rd), Tracing(net, rd, port=PORT, sndbuf_waits=True), \\
         SsSampler(net, "snd", rd, port=PORT), Counters(net, "snd", rd), \\
         QdiscSampler(net, EMULATOR, rd, port_facing("p1")):
        bulk(...)

(PORT: bulk.PORT, the transfers' port; EMULATOR and port_facing: net.topology.)
"""

from __future__ import annotations

import contextlib
import json
import re
import statistics
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from ..core import kernel, process
from ..core.errors import EnvironmentProblem, ExperimentFailed
from ..core.paths import PREFIX, TRACEFS
from ..core.state import TRACKER, kill_process_group, remove_trace_instance
from ..net.links import TCP_PAYLOAD
from . import traffic
from .bulk import SENDER_COMM


def _note(rd, what: str, **info) -> None:
    rd.manifest.setdefault("observation", {})[what] = info


# ---------------------------------------------------------------- capture

CAPTURES = Path("/run/mptcplab/captures")  # /run: a tmpfs natively and in UML and the VM (traffic.SPAWNERS)


class _Memory:
    """A directory in memory (under `root`, CAPTURES by default) for what an observer writes while
    a run measures, each file moved into the run directory in one piece when done: in the VM the
    run directory is 9p, where every write costs the emulated CPU during the transfer observed.
    Recorded before it exists, so `mptcplab clean` removes it if the kit is stopped."""

    def __init__(self, root: Path | None = None) -> None:
        self.path, self._item = (root or CAPTURES) / uuid.uuid4().hex[:8], None

    def make(self) -> Path:
        self._item = TRACKER.add("dir", path=str(self.path))
        self.path.mkdir(parents=True)
        return self.path

    def keep(self, name: str, dest: Path) -> None:
        """Move its file `name`, if written, to `dest`."""
        if (self.path / name).exists():
            shutil.move(self.path / name, dest)

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        if self._item is not None:
            TRACKER.discard(self._item)


class Capture:
    """Headers-only packet capture on every interface of one host (tcpdump -i any), or on one.

    `direction="out"` (tcpdump -Q out) keeps only packets the host sends, which on an egress
    device are taken when the device transmits them, after its qdisc: in the emulator that is
    what a link delivered, each packet once (drops in its queue are never seen)."""

    def __init__(self, net, host: str, rd, name: str = "capture.pcap", snaplen: int = 128,
                 bpf_filter: str = "tcp or udp", interface: str = "any", direction: str | None = None) -> None:
        self.net, self.host, self.rd = net, host, rd
        self.path = rd.file(name)
        # tcpdump writes each packet (-U) into memory (CAPTURES, a tmpfs), and the file is moved into
        # the run directory once it stops: in the VM the run directory is 9p, where a per-packet write
        # cost the emulated CPU enough that the setup check's 3 s capture took 6.2 s to drain.
        self.memory = _Memory()
        self.writing = self.memory.path / name
        self.argv = ["tcpdump", "-i", interface, *(["-Q", direction] if direction else []), "-s", str(snaplen),
                     "-B", "32768", "-U", "-n", "-Z", "root", "-w", str(self.writing), *bpf_filter.split()]

    def __enter__(self):
        self.memory.make()
        with self.rd.timed("capture_start"):  # tcpdump's start, until it listens (timings: where a run's time went)
            self.proc = self.net.popen(self.host, self.argv, what="tcpdump", stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True)
            # tcpdump prints "listening on any" once the socket is open; packets before that are lost.
            seen = ""
            for _ in range(5):
                line = self.proc.stderr.readline()
                seen += line
                if "listening" in line or not line:
                    break
        if "listening" not in seen:
            raise EnvironmentProblem(f"tcpdump in {self.host} did not start: {seen.strip()}")
        return self

    def __exit__(self, *exc):
        with self.rd.timed("capture_stop"):
            time.sleep(0.2)  # let the last ACKs arrive
            drained = self.drain()
            self.proc.send_signal(2)  # SIGINT: tcpdump flushes and prints its drop counts
            try:
                _, err = self.proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                err = ""
            self.net.stop(self.proc)
            self.memory.keep(self.writing.name, self.path)
            self.memory.remove()
        stats = dict((k, int(v)) for v, k in re.findall(r"(\d+) packets? (captured|received by filter|dropped by kernel)",
                                                       err or ""))
        _note(self.rd, "capture", file=self.path.name, host=self.host, command=" ".join(self.argv),
              drained_s=round(drained, 2), **stats)
        return False

    def drain(self, settle_s: float = 0.5, limit_s: float = 30.0) -> float:
        """Wait until tcpdump has written what its socket holds (-U: the file grows per packet) and
        return how long that took. SIGINT stops it at once and what it had not read is lost: a
        fairness run in the VM under load wrote 4,481 data segments covering 5.4 s of its 8 s
        transfer, its socket having received 16,482 (runs captured whole: about twice what they
        wrote, e.g. 15,755 for 7,304, since `-i any` sees each forwarded packet in and out)."""
        t0, size, still = time.monotonic(), -1, time.monotonic()
        while time.monotonic() - t0 < limit_s:
            now = self.writing.stat().st_size if self.writing.exists() else 0
            if now != size:
                size, still = now, time.monotonic()
            elif time.monotonic() - still >= settle_s:
                break
            time.sleep(0.1)
        return time.monotonic() - t0


# ---------------------------------------------------------------- counters

def read_counters(net, host: str) -> dict:
    out = net.run(host, ["nstat", "-asz", "-j"])
    return json.loads(out.stdout)["kernel"]


class Counters:
    """nstat counters (TcpExt, MPTcpExt, ...) before and after, and their difference."""

    def __init__(self, net, host: str, rd, name: str = "counters.json") -> None:
        self.net, self.host, self.rd, self.name = net, host, rd, name

    def __enter__(self):
        with self.rd.timed("counters"):
            self.before = read_counters(self.net, self.host)
        return self

    def __exit__(self, *exc):
        with self.rd.timed("counters"):
            after = read_counters(self.net, self.host)
        delta = {k: after[k] - self.before.get(k, 0) for k in after if after[k] != self.before.get(k, 0)}
        self.delta = delta
        self.rd.write_json(self.name, {"host": self.host, "before": self.before, "after": after, "delta": delta})
        # One note per file: a run may count on several hosts (e.g. the sender and the receiver).
        _note(self.rd, "counters" if self.name == "counters.json" else Path(self.name).stem,
              file=self.name, host=self.host, source="nstat -asz -j")
        return False


# ---------------------------------------------------------------- CPU time

CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def parse_proc_stat(text: str) -> dict:
    """The machine's CPU time by kind (ticks), from /proc/stat's first line."""
    line = next(l for l in text.splitlines() if l.startswith("cpu "))
    return dict(zip(CPU_FIELDS, map(int, line.split()[1:1 + len(CPU_FIELDS)])))


def parse_softnet(text: str) -> dict:
    """Packets the receive softirq processed, dropped (backlog full) and the times it stopped with
    work left (time_squeeze: its budget or its 2 ms ran out), summed over CPUs (/proc/net/softnet_stat)."""
    cols = [[int(v, 16) for v in line.split()] for line in text.splitlines() if line.strip()]
    return {"processed": sum(c[0] for c in cols), "dropped": sum(c[1] for c in cols),
            "time_squeeze": sum(c[2] for c in cols)}


class CpuTimes:
    """The kernel's CPU time by kind (user, system, softirq, idle, ...) and its receive softirq's
    counters over a block, machine-wide: how busy the kernel that forwards the packets was. In a
    guest (UML, VM) this is the guest kernel's own account, on its own clock."""

    def __init__(self, rd) -> None:
        self.rd = rd

    @staticmethod
    def _read() -> tuple[dict, dict]:
        return (parse_proc_stat(Path("/proc/stat").read_text()),
                parse_softnet(Path("/proc/net/softnet_stat").read_text()))

    def __enter__(self):
        self.before = self._read()
        return self

    def __exit__(self, *exc):
        after = self._read()
        ticks = {k: after[0][k] - self.before[0][k] for k in CPU_FIELDS}
        total = sum(ticks.values())
        self.share = {k: round(v / total, 4) if total else None for k, v in ticks.items()}
        self.softnet = {k: after[1][k] - self.before[1][k] for k in after[1]}
        _note(self.rd, "cpu", source="/proc/stat, /proc/net/softnet_stat", ticks=ticks)
        return False


# ---------------------------------------------------------------- samplers (ss, qdiscs)

SAMPLES = CAPTURES.with_name("samples")  # the samplers' files while they run (_Loop), in the same tmpfs


class _Loop:
    """A sampler of the kit's tool (`bulk ss`, `bulk qdisc`: measure.sockdiag, measure.tcstats),
    forked by `host`'s spawner: every `interval` seconds `@ <epoch>` and a sample, read through
    netlink, written into memory (/run) and moved to `path` when it stops. Each sample was once a
    program started by a shell loop, which in the VM place under software emulation cost its one
    CPU ~16-20 M instructions (s22's vm-guest-cost: ~30% of a Lab 2 transfer at 0.05 s).

    `stop()` lets it finish its sample and leave by itself; a signal is only the fallback. A
    signal landing while a process forks made the UML kernel fault undoing the half-made child
    (seen once in 26 Lab 3 runs of 2 shell samplers: "Kernel panic - not syncing: Kernel mode
    fault" in sh, clone -> copy_process -> mmput -> exit_mmap -> tlb_finish_mmu)."""

    def __init__(self, net, host: str, path, role: str, interval: float, what: str, *args) -> None:
        self.net, self.path, self.role, self.interval = net, Path(path), role, interval
        self.memory = _Memory(SAMPLES)
        self.writing = self.memory.make()  # its file and its stop flag while it runs
        try:
            self.proc = traffic.spawn(net, host, role, "--out", self.writing / self.path.name, "--interval", interval,
                                      "--stop", self.writing / "stop", *args, what=what)
        except BaseException:
            self.memory.remove()
            raise

    def stop(self, wait_s: float = 10.0) -> dict:
        """Stop it, its file in place; what it said (its JSON: samples, cpu_s)."""
        (self.writing / "stop").touch()  # it leaves after the sample it is taking
        out = err = ""
        with contextlib.suppress(subprocess.TimeoutExpired):
            out, err = self.proc.communicate(timeout=self.interval + wait_s)
        self.net.stop(self.proc)  # nothing left to signal unless it did not leave in time
        self.memory.keep(self.path.name, self.path)
        self.memory.remove()
        if self.proc.returncode != 0 or not self.path.exists():
            raise EnvironmentProblem(f"the {self.role} sampler failed ({self.proc.returncode}): "
                                     f"{(err or '').strip()[-1000:]}")
        return json.loads(out)


class SsSampler:
    """What `ss -tinmHM dport = :PORT` prints, every `interval` seconds inside the host (the
    fallback when tracepoints are missing), each sample stamped `@ <epoch>`: the sampler reads
    the sockets through SOCK_DIAG and prints them as ss does (`bulk ss`, measure.sockdiag; _Loop).

    `-m` adds the send buffer's accounting (skmem w = sk_wmem_queued, tb = sk_sndbuf) that
    `ss_summary` records for every run. After the block, `table` holds the parsed samples
    and the parsed CSV stays in the run directory; with keep_raw=False the raw text does not (runs
    where only derived numbers are wanted).

    Call `steady_from(t)` inside the block once the transfer is over: the summary then judges the
    samples from epoch time t on (after slow start, see physics (U)) and keeps the whole
    transfer's peak beside them as `inflight_bytes_max_whole`."""

    def __init__(self, net, host: str, rd, port: int, interval: float = 0.05, name: str = "ss.txt",
                 keep_raw: bool = True) -> None:
        self.net, self.host, self.rd, self.port, self.interval = net, host, rd, port, interval
        self.path = rd.file(name)
        self.keep_raw = keep_raw
        self.table = None
        self.since = None

    def __enter__(self):
        self.loop = _Loop(self.net, self.host, self.path, "ss", self.interval, "ss sampler", "--port", self.port)
        return self

    def steady_from(self, t: float) -> None:
        self.since = t

    def __exit__(self, *exc):
        with self.rd.timed("ss_stop"):
            said = self.loop.stop()
        # what sampling cost the CPU (bulk.main's cpu_s), beside the run's other processes
        self.rd.processes_cpu({f"ss sampler {self.path.stem}": said["cpu_s"]})
        with self.rd.timed("ss_parse"):
            table = self.table = parse_ss(self.path.read_text())
        csv = self.path.with_suffix(".csv")
        table.to_csv(csv, index=False)
        if not self.keep_raw:
            self.path.unlink()
        _note(self.rd, "ss", file=csv.name, raw=self.path.name if self.keep_raw else None,
              interval_s=self.interval, samples=len(table), steady_from=self.since)
        # The kernel's own view of the run (srtt, min RTT, bytes in flight, send buffer): every
        # summary that sampled carries it, and `mptcplab check` judges it against physics.
        self.rd.summary.setdefault("kernel_tcp", {})[self.path.stem] = ss_summary(table, since=self.since)
        return False


_SS_FIELDS = {"cwnd": r"\bcwnd:(\d+)", "rtt_ms": r"\brtt:([\d.]+)/", "rto_ms": r"\brto:([\d.]+)",
              "unacked": r"\bunacked:(\d+)", "notsent": r"\bnotsent:(\d+)", "bytes_acked": r"\bbytes_acked:(\d+)",
              "retrans_total": r"\bretrans:\d+/(\d+)", "ssthresh": r"\bssthresh:(\d+)",
              "mss": r"\bmss:(\d+)", "minrtt_ms": r"\bminrtt:([\d.]+)",
              "skmem_w": r"skmem:\([^)]*\bw(\d+)", "skmem_tb": r"skmem:\([^)]*\btb(\d+)"}


def ss_sockets(text: str):
    """Every socket in `ss -ti[mM]` output, as (time, socket, info line): the one reader of ss's
    socket lines. `time` is the epoch of the sample (the sampler writes `@ <epoch>` before each;
    None before the first or in a single `ss` run); `socket` is {netid, state, local, peer}, with
    the device ss appends to a bound address (10.2.1.1%slow:5201) dropped."""
    now, sock = None, None
    for line in text.splitlines():
        if line.startswith("@ "):
            now = float(line[2:])
            continue
        if not line.strip() or line.startswith("State"):
            continue
        if not line[0].isspace():  # socket line: [Netid] State Recv-Q Send-Q Local Peer
            parts = line.split()
            netid = "tcp"
            if parts and parts[0] in ("tcp", "mptcp"):
                netid, parts = parts[0], parts[1:]
            sock = ({"netid": netid, "state": parts[0], "local": re.sub(r"%[^:]+", "", parts[3]),
                     "peer": re.sub(r"%[^:]+", "", parts[4])} if len(parts) >= 5 else None)
            continue
        if sock is not None:  # the info line that follows
            yield now, sock, line
            sock = None


def parse_ss(text: str):
    """Parse the sampler's output into one row per (sample, socket)."""
    import pandas as pd

    rows = []
    for now, sock, line in ss_sockets(text):
        if now is None:
            continue
        row = {"time": now, "state": sock["state"], "local": sock["local"], "peer": sock["peer"]}
        for key, pattern in _SS_FIELDS.items():
            m = re.search(pattern, line)
            row[key] = float(m.group(1)) if m else None
        row["mptcp_subflow"] = "tcp-ulp-mptcp" in line
        row["netid"] = sock["netid"]  # "mptcp": the MPTCP socket, listed with its first subflow's addresses
        rows.append(row)
    return pd.DataFrame(rows, columns=["time", "state", "local", "peer", *_SS_FIELDS, "mptcp_subflow", "netid"])


# ---------------------------------------------------------------- qdisc counters

def inflight_bytes(unacked, mss):
    """Bytes in flight, from `ss`: unacknowledged segments x mss, a full-size segment's payload
    (TCP_PAYLOAD) where ss printed no mss. Numbers or pandas columns alike."""
    if hasattr(mss, "fillna"):
        return unacked * mss.fillna(TCP_PAYLOAD)
    return unacked * (mss if mss and mss == mss else TCP_PAYLOAD)


def ss_stats(rows) -> dict:
    """What the kernel said about the sockets of `rows` (`observe.parse_ss` rows: a list of dicts or
    a table), the one statistic of ss samples every summary uses: `samples`, srtt (median) and min
    RTT in ms, the send buffer's accounting (`skmem` tb = sk_sndbuf and w = sk_wmem_queued, their
    largest) and bytes in flight (`unacked` segments x mss: median and largest); a figure no row
    has is left out."""
    rows = rows.to_dict("records") if hasattr(rows, "to_dict") else list(rows)

    def vals(key):
        return [r[key] for r in rows if r.get(key) is not None and r[key] == r[key]]  # drop None/NaN

    inflight = [inflight_bytes(r["unacked"], r.get("mss"))
                for r in rows if r.get("unacked") is not None and r["unacked"] == r["unacked"]]
    out = {"samples": len(rows)}
    for name, key, fn in (("srtt_ms_median", "rtt_ms", statistics.median),
                          ("min_rtt_ms", "minrtt_ms", min),
                          ("sk_sndbuf", "skmem_tb", max),
                          ("wmem_queued_max", "skmem_w", max)):
        v = vals(key)
        if v:
            out[name] = round(fn(v), 3)
    if inflight:
        out["inflight_bytes_median"] = round(statistics.median(inflight))
        out["inflight_bytes_max"] = round(max(inflight))
    return out


def ss_summary(table, since: float | None = None) -> dict:
    """What the kernel said about a run's connections, from `observe.parse_ss` rows: `ss_stats`
    per sampled connection and overall.

    With `since` (epoch s), from the samples taken then or later (after slow start: (U) above),
    and the whole transfer's peak kept as `inflight_bytes_max_whole`.
    """
    rows = table.to_dict("records") if hasattr(table, "to_dict") else list(table)
    if since is not None:
        whole = ss_summary(rows)
        out = ss_summary([r for r in rows if r["time"] >= since])
        if "inflight_bytes_max" in whole:
            out["inflight_bytes_max_whole"] = whole["inflight_bytes_max"]
        return {**out, "steady_from": since}
    if not rows:
        return {}
    by_conn: dict = {}
    for r in rows:  # an MPTCP socket apart from its first subflow, whose addresses ss gives it
        mptcp = " (mptcp socket)" if r.get("netid") == "mptcp" else ""
        by_conn.setdefault(f"{r.get('local')}->{r.get('peer')}{mptcp}", []).append(r)
    return {"connections": {k: ss_stats(v) for k, v in by_conn.items()}, **ss_stats(rows)}


class QdiscSampler:
    """What `tc -s -j qdisc show dev DEV` prints, every `interval` seconds inside the host (`bulk
    qdisc`, measure.tcstats; _Loop): the root qdisc's counters (packets and bytes sent, drops) as
    a table, so a rate or a loss rate can be taken over any part of a run (e.g. its measurement
    window) rather than only over all of it.

    `dev` a list: one read of the whole host per sample serves them all, `tables[dev]` and one
    CSV each."""

    def __init__(self, net, host: str, rd, dev: str | list[str], interval: float = 0.2,
                 name: str = "qdisc.txt") -> None:
        self.net, self.host, self.rd, self.dev, self.interval = net, host, rd, dev, interval
        self.one = isinstance(dev, str)  # one device: `tc ... dev DEV`, its table as `table`, NAME.csv
        self.devs = [dev] if self.one else list(dev)
        self.path = rd.file(name)
        self.tables: dict = {}

    def __enter__(self):
        # Forked by a spawner that runs already (a transfer's) and reading this host's namespace: a
        # spawner of its own in the emulator would cost an interpreter's start, seconds in an
        # emulated CPU. Each sample keeps the time after its read too (qdisc_window's bounds).
        forker = self.host if self.host in self.net.spawners else next(iter(self.net.spawners), self.net.topo.hosts[0])
        self.loop = _Loop(self.net, forker, self.path, "qdisc", self.interval, "qdisc sampler",
                          "--netns", self.net.ns(self.host), *(["--dev", self.dev] if self.one else []))
        return self

    def __exit__(self, *exc):
        said = self.loop.stop()
        self.rd.processes_cpu({f"qdisc sampler {self.path.stem}": said["cpu_s"]})
        text = self.path.read_text()
        for dev in self.devs:
            table = self.tables[dev] = parse_qdisc(text, None if self.one else dev)
            csv = self.path.with_suffix(".csv") if self.one else self.path.with_name(f"{self.path.stem}-{dev}.csv")
            table.to_csv(csv, index=False)
            _note(self.rd, "qdisc", file=csv.name, host=self.host, dev=dev, interval_s=self.interval,
                  samples=len(table))
        self.table = self.tables[self.dev] if self.one else None
        self.path.unlink()  # the CSVs keep every counter of every sample
        return False


def qdisc_window(qdisc, window: tuple[float, float], bracket: bool = False) -> dict:
    """An emulator qdisc over a measurement window (Lab 3's bottleneck, the setup check's paths),
    from its sampled counters (QdiscSampler: time, packets, bytes, drops): the first and the last
    sample inside the window, so warm-up and the drain after it are left out. p_r_emulator = dropped / (sent + dropped);
    wire_mbps = the bytes it sent per second (headers included: what its rate limit counts).
    Empty values when fewer than two samples fall inside the window, unless `bracket`: then the
    last sample before it and the first after it (`bracketed`: True), a longer span whose rate is
    still what the link sent, for a "not above the link's rate" judgement. The setup check's
    sampler, under a load of 2 in the VM, read each sample 1-2.4 s apart: one fell inside a 3.9 s
    window, and the check judged on the receiver's count alone (2026-11-28)."""
    out = {"sent": None, "dropped": None, "span_s": None, "p_r_emulator": None, "wire_mbps": None,
           "wire_mbps_min": None}
    if qdisc is None or qdisc.empty:
        return out
    q = qdisc[(qdisc["time"] >= window[0]) & (qdisc["time"] <= window[1])].sort_values("time")
    if len(q) < 2 and bracket:
        before = qdisc[qdisc["time"] < window[0]].sort_values("time")
        after = qdisc[qdisc["time"] > window[1]].sort_values("time")
        if len(before) and len(after):
            out = qdisc_window(qdisc, (before.iloc[-1]["time"], after.iloc[0]["time"]))
            return {**out, "bracketed": True}
    if len(q) < 2:
        return out
    first, last = q.iloc[0], q.iloc[-1]
    sent, dropped = int(last["packets"] - first["packets"]), int(last["drops"] - first["drops"])
    span = float(last["time"] - first["time"])
    return {"sent": sent, "dropped": dropped, "span_s": round(span, 3),
            "p_r_emulator": dropped / (sent + dropped) if sent + dropped else None,
            "wire_mbps": float(last["bytes"] - first["bytes"]) * 8 / span / 1e6 if span > 0 else None,
            "wire_mbps_min": _rate_min(first, last)}


def _rate_min(first, last) -> float | None:
    """The lowest rate the two samples allow: their bytes over the longest span between the reads
    (each read happened between its `time` and its `time_after`). What a 'not above the link's
    rate' check judges, so a slow `tc` start cannot pass for a fast link."""
    span = float(last.get("time_after", last["time"]) - first["time"])
    return float(last["bytes"] - first["bytes"]) * 8 / span / 1e6 if span > 0 else None


QDISC_COUNTERS = ("packets", "bytes", "drops", "backlog", "qlen")


def parse_qdisc(text: str, dev: str | None = None):
    """The sampler's output -> one row per sample: time, kind and the root qdisc's counters (of
    device `dev` when the samples list every device's)."""
    import pandas as pd

    rows, now = [], None
    for line in text.splitlines():
        if line.startswith("@ "):
            now = float(line[2:])
            continue
        if line.startswith("= ") and rows and "time_after" not in rows[-1]:
            rows[-1]["time_after"] = float(line[2:])  # when the read had certainly happened
            continue
        if not line.strip().startswith("[") or now is None:
            continue
        try:
            qdiscs = json.loads(line)
        except ValueError:  # cut short when the sampler was stopped
            continue
        root = next((q for q in qdiscs if (q.get("root") or q.get("parent") in (None, "root"))
                     and (dev is None or q.get("dev") == dev)), None)
        if root is not None:
            rows.append({"time": now, "kind": root.get("kind"), **{k: int(root.get(k, 0)) for k in QDISC_COUNTERS}})
        now = None
    table = pd.DataFrame(rows, columns=["time", "time_after", "kind", *QDISC_COUNTERS])
    table["time_after"] = table["time_after"].fillna(table["time"])
    return table


# ---------------------------------------------------------------- tracefs

class Tracing:
    """Kernel tracepoints through a private tracefs instance (so nobody else's tracing is touched).

    - `tcp:tcp_probe` for connections to `port` (cwnd, srtt, snd_una/snd_nxt per subflow)
      -> tcp_probe.csv
    - the sender's MPTCP events (scheduler decisions `mptcp_subflow_get_send`, data-ACK updates
      `ack_update_msk`) -> mptcp_events.csv (with mptcp=True); the receive-side events are left
      off, they are tens of MB per second and say nothing about the sender
    - send-buffer waits of the kit's sender (with sndbuf_waits=True) -> sndbuf_waits.csv:
      kprobe + kretprobe on sk_stream_wait_memory where the kernel has kprobes; otherwise the
      off-CPU intervals of the sender whose kernel stack (sched:sched_switch + stacktrace trigger)
      passes through sk_stream_wait_memory.

    With parse=True a reader (`cat trace_pipe`) empties the ring buffer into trace.txt during the
    block, so a run may write more than the buffer holds (Lab 1 at 100 Mbit/s: 100+ MB). With
    parse=False (the raw trace kept for parse_saved_trace) nothing reads during the block: the
    buffer (`buffer_kb` per CPU) holds the whole run, and its `trace` file is read once after it.
    A reader woken per event and writing into the run directory (9p in the VM) cost the guest's
    CPU during the transfer it observed. A buffer that overflows loses its oldest events: such a
    run is refused (the counts in `per_cpu/cpu*/stats`, `lost` below), never kept with a trace
    missing its start.
    """

    def __init__(self, net, rd, port: int, mptcp: bool = False, sndbuf_waits: bool = False,
                 buffer_kb: int = 65536, parse: bool = True) -> None:
        self.net, self.rd, self.port = net, rd, port
        self.want_mptcp, self.want_waits, self.buffer_kb = mptcp, sndbuf_waits, buffer_kb
        self.parse = parse  # False: keep the raw trace for parse_saved_trace (after the run, on the host)
        self.name = f"{PREFIX}-{net.topo.run_id}"
        self.inst = TRACEFS / "instances" / self.name
        self.raw = rd.file("trace.txt")
        self.enabled: list[Path] = []
        self.kprobes: list[str] = []

    def _events(self) -> Path:
        return self.inst / "events"

    def _enable(self, event: str, filt: str | None = None, trigger: str | None = None) -> bool:
        d = self._events() / event
        if not (d / "enable").exists():
            return False
        if filt:
            (d / "filter").write_text(filt)
        if trigger:
            (d / "trigger").write_text(trigger)
        (d / "enable").write_text("1")
        self.enabled.append(d)
        return True

    def __enter__(self):
        self.notes: dict = {}
        if not kernel.tracefs_usable():
            _note(self.rd, "tracing", available=False, why="no tracefs in this kernel")
            self.ok = False
            return self
        self.ok = True
        TRACKER.add("trace_instance", name=self.name)
        self.inst.mkdir()
        (self.inst / "buffer_size_kb").write_text(str(self.buffer_kb))
        (self.inst / "trace_clock").write_text("mono")  # = Python's time.monotonic(), converted to epoch
        self.notes["tcp_probe"] = self._enable("tcp/tcp_probe", f"dport == {self.port}")
        if self.want_mptcp:
            self.notes["mptcp"] = [e for e in MPTCP_EVENTS if self._enable(f"mptcp/{e}")]
        if self.want_waits:
            self.wait_method = self._enable_waits()
            self.notes["sndbuf_waits"] = self.wait_method or "unavailable (no kprobes, no sched_switch)"
        self.clock_offset = time.time() - time.monotonic()
        if self.parse:
            self.out = open(self.raw, "w")
            # Not inside a namespace: `ip netns exec` mounts a fresh /sys, which hides tracefs.
            self.reader = subprocess.Popen(["cat", str(self.inst / "trace_pipe")], stdout=self.out,
                                           start_new_session=True)
            self.reader_item = TRACKER.add("process", pgid=self.reader.pid, what="trace reader")
        (self.inst / "tracing_on").write_text("1")
        return self

    def _enable_waits(self) -> str | None:
        comm = f'comm == "{SENDER_COMM}"'
        if kernel.kprobes_usable():
            kname = f"{PREFIX}_{self.net.topo.run_id}"
            kernel.write_kprobe_events(f"p:{kname}_in sk_stream_wait_memory", f"r:{kname}_out sk_stream_wait_memory")
            self.kprobes = [f"{kname}_in", f"{kname}_out"]
            for k in self.kprobes:
                self._enable(f"kprobes/{k}", comm)
            return "kprobe:sk_stream_wait_memory"
        ok = self._enable("sched/sched_switch", f'prev_comm == "{SENDER_COMM}" || next_comm == "{SENDER_COMM}"',
                          f'stacktrace if prev_comm == "{SENDER_COMM}"')
        return "sched_switch:kstack" if ok else None

    def __exit__(self, *exc):
        if not self.ok:
            return False
        (self.inst / "tracing_on").write_text("0")
        if self.parse:
            time.sleep(0.3)  # let the reader drain trace_pipe
            # what the reader cost the CPU (woken per event): where a guest's CPU is the run's cost
            self.rd.processes_cpu({"trace reader": process.cpu_s(self.reader.pid)})
            kill_process_group(self.reader.pid, grace=0.5)
            self.reader.wait()
            TRACKER.discard(self.reader_item)
            self.out.close()
        else:
            with self.rd.timed("trace_read"):
                self._save_buffer()
        for d in self.enabled:
            with contextlib.suppress(OSError):
                (d / "enable").write_text("0")
            if (d / "trigger").exists():
                for line in (d / "trigger").read_text().splitlines():
                    if line and not line.startswith("#"):
                        with contextlib.suppress(OSError):
                            (d / "trigger").write_text("!" + line.split(" [")[0].strip())
        buffer = self.lost([f.read_text() for f in sorted(self.inst.glob("per_cpu/cpu*/stats"))])
        remove_trace_instance(self.name)
        for item in [i for i in TRACKER.items if i == {"kind": "trace_instance", "name": self.name}]:
            TRACKER.discard(item)
        if self.kprobes:
            kernel.write_kprobe_events(*(f"-:{k}" for k in self.kprobes))
        how = {"clock_offset": self.clock_offset, "mptcp": self.want_mptcp, "waits": self.want_waits,
               "wait_method": getattr(self, "wait_method", None)}
        if self.parse:
            with self.rd.timed("trace_parse"):
                self.notes.update(parse_trace_file(self.raw, self.rd.path, **how))
        else:
            self.rd.write_json(TRACE_PENDING, how)
        _note(self.rd, "tracing", available=True, instance=self.name, clock="mono -> epoch",
              events=self.notes, buffer_kb=self.buffer_kb, **buffer,
              **({"read": "live (trace_pipe)"} if self.parse else {
                  "read": "after the block (trace)",
                  "parsed": "after the run, from the raw trace (observe.parse_saved_trace)"}))
        if not self.parse and buffer["lost_events"]:
            raise ExperimentFailed(
                f"the kernel's trace lost {buffer['lost_events']} events (kept {buffer['entries']}): its ring "
                f"buffer ({self.buffer_kb} KiB per CPU) did not hold the run, and what it lost first was the "
                f"run's start; raise Tracing's buffer_kb (what was read: {self.raw})")
        return False

    def _save_buffer(self) -> None:
        """The instance's ring buffer as text (its `trace` file: read without consuming it, the
        lines trace_pipe gives after a few `#` header lines, which the parsers skip) into memory
        (CAPTURES' tmpfs), then moved into the run directory in one piece, as Capture does."""
        memory = _Memory()
        try:
            with open(self.inst / "trace", "rb") as src, open(memory.make() / self.raw.name, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
            memory.keep(self.raw.name, self.raw)
        finally:
            memory.remove()

    LOST = {"overrun": "overrun", "commit overrun": "commit_overrun", "dropped events": "dropped"}

    @classmethod
    def lost(cls, stats: list[str]) -> dict:
        """What a ring buffer kept and lost, summed over its CPUs' `per_cpu/cpuN/stats`: `entries`
        (events in it), `overrun` (overwritten when it was full, oldest first), `commit_overrun`
        (lost to nested writes), `dropped` (not written: full, without overwrite), `lost_events`
        (the three together)."""
        out = dict.fromkeys(["entries", *cls.LOST.values()], 0)
        for text in stats:
            for line in text.splitlines():
                key, _, value = line.partition(":")
                name = "entries" if key.strip() == "entries" else cls.LOST.get(key.strip())
                if name:
                    out[name] += int(value.split()[0])
        out["lost_events"] = sum(out[k] for k in cls.LOST.values())
        return out


TRACE_PENDING = "trace-pending.json"  # a raw trace.txt kept for parse_saved_trace, and how to read it


def parse_saved_trace(run_dir: Path) -> dict | None:
    """The tables of a run whose Tracing kept its raw trace (parse=False), made now: a guest under
    software emulation spends tens of seconds per run in this parse, the host a few. None when
    there is nothing to parse."""
    pending = Path(run_dir) / TRACE_PENDING
    if not pending.exists():
        return None
    notes = parse_trace_file(Path(run_dir) / "trace.txt", Path(run_dir), **json.loads(pending.read_text()))
    pending.unlink()
    return notes


def parse_trace_file(raw: Path, out_dir: Path, clock_offset: float, mptcp: bool = False, waits: bool = False,
                     wait_method: str | None = None) -> dict:
    """A raw trace into tcp_probe.csv (and mptcp_events.csv with mptcp, sndbuf_waits.csv with
    waits, found by `wait_method`) in `out_dir`, in one streaming pass (it reaches 100+ MB at high rates; UML has
    2 GB); the raw trace is removed: the CSVs carry what the analysis needs."""
    import csv

    probe_lines, wait_lines = [], []
    notes: dict = {}
    with open(raw) as f, open(out_dir / "mptcp_events.csv", "w", newline="") as mout:
        writer = csv.DictWriter(mout, fieldnames=MPTCP_EVENT_FIELDS, extrasaction="ignore")
        writer.writeheader()
        for line in f:
            m = _LINE.match(line)
            event = m["event"] if m else None
            if event == "tcp_probe":
                probe_lines.append(line)
            elif event in MPTCP_EVENTS:
                writer.writerow({"time": float(m["ts"]) + clock_offset, "pid": m["pid"],
                                 "comm": m["comm"].strip(), "event": event, **dict(_KV.findall(m["rest"]))})
            else:  # sched_switch, kprobes and the stack traces that follow them
                wait_lines.append(line)
    probe = parse_trace("".join(probe_lines), clock_offset).get("tcp_probe")
    if probe is not None:
        probe = probe.rename(columns={"srtt": "srtt_us"})
        for col in ("snd_nxt", "snd_una"):
            probe[col] = probe[col].map(lambda v: int(v, 16))
        addr = probe["src"].str.rsplit(":", n=1, expand=True)
        probe["saddr"], probe["sport"] = addr[0], addr[1].astype(int)
        addr = probe["dest"].str.rsplit(":", n=1, expand=True)
        probe["daddr"], probe["dport"] = addr[0], addr[1].astype(int)
        cols = ["time", "saddr", "sport", "daddr", "dport", "data_len", "snd_nxt", "snd_una", "snd_cwnd",
                "ssthresh", "snd_wnd", "srtt_us", "rcv_wnd"]
        probe[cols].to_csv(out_dir / "tcp_probe.csv", index=False)
    if not mptcp:
        (out_dir / "mptcp_events.csv").unlink()
    if waits:
        table = sndbuf_waits("".join(wait_lines), clock_offset, wait_method)
        table.to_csv(out_dir / "sndbuf_waits.csv", index=False)
        notes["sndbuf_wait_count"] = len(table)
    raw.unlink()
    return notes


MPTCP_EVENTS = ("mptcp_subflow_get_send", "ack_update_msk")
MPTCP_EVENT_FIELDS = ["time", "pid", "comm", "event",
                      "active", "free", "snd_wnd", "pace", "backup", "ratio",  # mptcp_subflow_get_send
                      "data_ack", "old_snd_una", "new_snd_una", "new_wnd_end", "msk_wnd_end"]  # ack_update_msk


_LINE = re.compile(r"^\s*(?P<comm>.+?)-(?P<pid>\d+)\s+\[\d+\]\s+\S+\s+(?P<ts>[\d.]+):\s+(?P<event>\w+):\s?(?P<rest>.*)$")
_KV = re.compile(r"(\w+)=(\S+)")


def parse_trace(text: str, clock_offset: float) -> dict:
    """Group trace lines by event into DataFrames of their key=value fields (plus time, pid, comm)."""
    import pandas as pd

    rows: dict[str, list[dict]] = {}
    for line in text.splitlines():
        m = _LINE.match(line)
        if not m:
            continue
        row = {"time": float(m["ts"]) + clock_offset, "pid": int(m["pid"]), "comm": m["comm"].strip()}
        row.update(_numeric(k, v) for k, v in _KV.findall(m["rest"]))
        rows.setdefault(m["event"], []).append(row)
    return {event: pd.DataFrame(r) for event, r in rows.items()}


def _numeric(k: str, v: str):
    try:
        return k, int(v)
    except ValueError:
        try:
            return k, float(v)
        except ValueError:
            return k, v


def sndbuf_waits(text: str, clock_offset: float, method: str | None):
    """Intervals in which the sender was blocked waiting for send-buffer memory."""
    import pandas as pd

    rows = []
    if method == "kprobe:sk_stream_wait_memory":
        start: dict[int, float] = {}
        for line in text.splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            t, pid = float(m["ts"]) + clock_offset, int(m["pid"])
            if m["event"].endswith("_in"):
                start[pid] = t
            elif m["event"].endswith("_out") and pid in start:
                rows.append((start.pop(pid), t, pid))
    elif method == "sched_switch:kstack":
        # A sched_switch away from the sender is followed by its stack (" => func" lines);
        # the wait ends when the same thread is switched back in.
        lines = text.splitlines()
        blocked: dict[int, float] = {}
        i = 0
        while i < len(lines):
            m = _LINE.match(lines[i])
            i += 1
            if not m or m["event"] != "sched_switch":
                continue
            t = float(m["ts"]) + clock_offset
            f = dict(_KV.findall(m["rest"]))
            stack = []
            while i < len(lines) and (lines[i].lstrip().startswith("=>") or "<stack trace>" in lines[i]):
                stack.append(lines[i])
                i += 1
            prev_pid, next_pid = int(f.get("prev_pid", -1)), int(f.get("next_pid", -1))
            if f.get("next_comm") == SENDER_COMM and next_pid in blocked:
                rows.append((blocked.pop(next_pid), t, next_pid))
            if f.get("prev_comm") == SENDER_COMM and f.get("prev_state") in ("S", "D") and \
                    any("sk_stream_wait_memory" in s for s in stack):
                blocked[prev_pid] = t
    df = pd.DataFrame(rows, columns=["start", "end", "tid"])
    df["duration_s"] = df["end"] - df["start"]
    df["method"] = method
    return df[["start", "end", "duration_s", "tid", "method"]]
