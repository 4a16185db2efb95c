"""Lab 1's checks: public ones that teach (`qN`), graded ones on inputs no student has seen (`graded_qN`).

A public check calls the student's function on a small made-up input whose answer this module
knows, then on the runs the notebook loaded (the student's own while they work, the reference when
graded: `grading.reference.kit`), and on failure says in a few lines what kind of answer was
expected, what came back, and the likely mistake, recognised by recomputing the usual wrong
answers (median for mean, bits for bytes, the other path, ...). It never prints a value the
graded check compares against. The graded checks call the same function on `held_out`'s inputs
(`lab1.unseen`) and compare with the kit's answers, computed outside the student's reach. Q3, Q4, Q7,
Q17 and Q19 are optional (the notebook's *Going further*): public checks only, no points.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from ...grading import reference
from ...grading.feedback import MAX_LINES, CheckFailed
from ...grading.feedback import expect as _expect
from . import analysis
from . import unseen

CONFIGS = ("tcp-fast", "tcp-slow", "mptcp")


# ---------------------------------------------------------------- helpers

def _wrap(message: str) -> str:
    """Lines of at most 100 characters, at most MAX_LINES of them."""
    return "\n".join(textwrap.wrap(message, 100)[:MAX_LINES])


def expect(condition: bool, message: str) -> None:
    """feedback.expect with the message wrapped (_wrap)."""
    _expect(condition, _wrap(message))


def _call(fn, name: str, *args):
    """The student's function on args; its failure in the checker's words."""
    expect(callable(fn), f"{name} should be a function (def {name}(...): ...); it is {type(fn).__name__}. "
                         "Run the cell that defines it.")
    try:
        return fn(*args)
    except CheckFailed:
        raise
    except Exception as exc:  # the student's error, by type only: the check's inputs stay its own
        raise CheckFailed(_wrap(f"{name}() raised {type(exc).__name__} when the check called it (on a small "
                                "made-up input or on the notebook's runs): try it on a few rows of your own "
                                "table")) from None


def _close(a, b, rel: float = 1e-6, abs_: float = 1e-6) -> bool:
    try:
        return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=rel, atol=abs_,
                                equal_nan=True))
    except (TypeError, ValueError):
        return False


def _first_match(got, alternatives: dict, same) -> str | None:
    """The hint of the first wrong answer `got` equals."""
    return next((hint for hint, alt in alternatives.items() if same(got, alt)), None)


def _frame_same(got: pd.DataFrame, want: pd.DataFrame, columns) -> bool:
    try:
        g = got[list(columns)].sort_index()
        w = want[list(columns)].sort_index()
        return list(g.index) == list(w.index) and _close(g.to_numpy(), w.to_numpy())
    except (KeyError, TypeError, ValueError):
        return False


def _own(name: str, own):
    """The notebook's table (the student's runs) while they work; the kit's reference when graded."""
    try:
        return reference.kit("lab1", analysis.load, name, own=own)
    except KeyError:
        return None  # a reference without that table (e.g. no paper's point): the made-up input only


def _graded(q: str) -> tuple[dict, object]:
    return reference.unseen("lab1"), reference.expected("lab1", q)


# ---------------------------------------------------------------- Q1: mean goodput per point

def _toy_sweep() -> pd.DataFrame:
    """Two methods, two buffers, three configs, three repetitions whose mean and median differ."""
    rows = []
    for i, method in enumerate(("wmem", "sndbuf")):
        for j, b in enumerate((65536, 1048576)):
            for k, config in enumerate(CONFIGS):
                for rep, x in enumerate((10.0, 11.0, 30.0)):
                    rows.append({"run": f"{method}-{b}-{config}-r{rep + 1}", "method": method, "buffer_bytes": b,
                                 "config": config, "rep": rep + 1,
                                 "goodput_transfer_mbps": x * (1 + i) + 7 * j + 3 * k})
    return pd.DataFrame(rows).iloc[::-1].reset_index(drop=True)


def _q1_problem(fn, sweep: pd.DataFrame) -> str | None:
    got = _call(fn, "mean_goodput", sweep.copy())
    want = unseen.mean_goodput(sweep)
    if not isinstance(got, pd.DataFrame):
        return f"mean_goodput should return a pandas DataFrame; it returned a {type(got).__name__}"
    if list(got.index.names) != ["method", "buffer_bytes"]:
        return (f"index the table by method and buffer_bytes, in that order (groupby, then unstack the config); "
                f"it is indexed by {list(got.index.names)}")
    if not set(CONFIGS) <= set(got.columns):
        return f"one column per config ({', '.join(CONFIGS)}); the columns are {list(got.columns)[:6]}"
    if _frame_same(got, want, CONFIGS):
        return None
    g = sweep.groupby(["method", "buffer_bytes", "config"])["goodput_transfer_mbps"]
    hint = _first_match(got, {
        "that is the median of the repetitions: the question asks for their mean": g.median().unstack("config"),
        "that is the sum over the repetitions: divide by their number (the mean)": g.sum().unstack("config"),
        "those are MB/s (Mbit/s / 8): keep goodput_transfer_mbps in Mbit/s": g.mean().unstack("config") / 8,
        "that is the first repetition only: average over all of them": g.first().unstack("config"),
        "that is the largest repetition: the question asks for the mean": g.max().unstack("config"),
    }, lambda a, b: _frame_same(a, b, CONFIGS))
    return "the values are not the mean goodput (goodput_transfer_mbps) of each method, buffer and config: " + (
        hint or "group by method, buffer_bytes and config, average goodput_transfer_mbps, then unstack config")


def q1(mean_goodput, sweep=None) -> None:
    """mean_goodput(sweep) -> the mean goodput_transfer_mbps per (method, buffer_bytes), one column per config."""
    problem = _q1_problem(mean_goodput, _toy_sweep())
    expect(problem is None, f"On a made-up sweep of 36 runs: {problem}.")
    problem = _q1_problem(mean_goodput, _own("sweep", sweep))
    expect(problem is None, f"On the sweep this notebook loaded: {problem}.")


def graded_q1(mean_goodput) -> None:
    inputs, want = _graded("q1")
    got = mean_goodput(inputs["sweep"])
    assert isinstance(got, pd.DataFrame) and _frame_same(got, want, CONFIGS), "mean_goodput on unseen runs"


# ---------------------------------------------------------------- Q2: the degraded buffers

def _toy_mean() -> pd.DataFrame:
    """MPTCP below tcp-fast at 32K and 128K but not at 64K, where the two are equal (the region need not
    be contiguous, and "below" is not "at or below"); below tcp-slow nowhere; the sndbuf method degraded
    elsewhere."""
    idx = pd.MultiIndex.from_product([("sndbuf", "wmem"), (32768, 65536, 131072, 1048576)],
                                     names=["method", "buffer_bytes"])
    return pd.DataFrame({"mptcp": [50, 90, 99, 180, 40, 95, 80, 170], "tcp-fast": [95] * 8,
                         "tcp-slow": [5, 9, 12, 60, 5, 9, 12, 60]}, index=idx, dtype=float)


def _q2_problem(fn, table: pd.DataFrame, method: str) -> str | None:
    got = _call(fn, "degraded_buffers", table.copy(), method)
    want = unseen.degraded_buffers(table, method)
    if not isinstance(got, list) or not all(type(b) is int for b in got):
        return ("degraded_buffers should return a list of Python ints (bytes), e.g. [4096, 8192]; "
                f"it returned a {type(got).__name__}" + (f" of {type(got[0]).__name__}" if isinstance(got, list) and got
                                                        else "") + ": convert with int(b)")
    if got == want:
        return None
    if sorted(got) == want:
        return "list the buffer sizes in ascending order"
    w = table.loc[method]
    other = "sndbuf" if method == "wmem" else "wmem"
    hint = _first_match(got, {
        "those are the buffers where MPTCP is at or above tcp-fast: keep the ones where it is below":
            sorted(int(b) for b in w.index[w["mptcp"] >= w["tcp-fast"]]),
        "that includes a buffer where MPTCP's mean equals tcp-fast's: below means strictly less (<, not <=)":
            sorted(int(b) for b in w.index[w["mptcp"] <= w["tcp-fast"]]),
        "you compared MPTCP with tcp-slow: the question compares it with single-path TCP on the fast path":
            sorted(int(b) for b in w.index[w["mptcp"] < w["tcp-slow"]]),
        f"those are the {other} method's buffers: use the method you were given":
            unseen.degraded_buffers(table, other) if other in table.index.get_level_values("method") else None,
        "that is only the smallest such buffer: list every buffer size where MPTCP is below":
            want[:1],
    }, lambda a, b: a == b)
    return hint or "keep each buffer size of that method whose mptcp mean is below its tcp-fast mean"


def q2(degraded_buffers, sweep=None) -> None:
    """degraded_buffers(mean_tput, method) -> ascending buffer sizes where mptcp < tcp-fast."""
    toy = _toy_mean()
    for method in ("wmem", "sndbuf"):
        problem = _q2_problem(degraded_buffers, toy, method)
        expect(problem is None, f"On a made-up table of means (method {method!r}): {problem}.")
    own = unseen.mean_goodput(_own("sweep", sweep))
    problem = _q2_problem(degraded_buffers, own, "wmem")
    expect(problem is None, f"On the means of the sweep this notebook loaded: {problem}.")


def graded_q2(degraded_buffers) -> None:
    inputs, want = _graded("q2")
    for method, buffers in want.items():
        assert degraded_buffers(inputs["mean_tput"], method) == buffers, "degraded_buffers on unseen means"


# ---------------------------------------------------------------- Q3, Q4 (optional): bytes per path, DSN span

def _toy_packets() -> pd.DataFrame:
    """Seven segments: the stream's bytes 1000-5999 and a last short one, segment 1000 sent again on
    the slow path (a reinjection), the slow path's first segment not the stream's first byte."""
    rows = [("fast", 0, 1, 1000, 1000), ("fast", 0, 1001, 1000, 2000), ("slow", 1, 1, 1000, 3000),
            ("fast", 0, 2001, 1000, 4000), ("slow", 1, 1001, 1000, 1000), ("fast", 0, 3001, 1000, 5000),
            ("fast", 0, 4001, 400, 6000)]
    p = pd.DataFrame(rows, columns=["path", "stream", "seq", "len", "dsn"])
    p.insert(0, "time", np.arange(len(p)) * 0.01)
    p["dsn"] = p["dsn"].astype("Int64") + (1 << 32)
    return p


def _series_same(got, want) -> bool:
    try:
        return set(got.index) == set(want.index) and _close(got.reindex(want.index).to_numpy(), want.to_numpy(), 0, 0.5)
    except (AttributeError, TypeError, ValueError):
        return False


def _q3_problem(fn, packets: pd.DataFrame) -> str | None:
    got = _call(fn, "bytes_per_path", packets.copy())
    if not isinstance(got, pd.Series):
        return f"bytes_per_path should return a pandas Series; it returned a {type(got).__name__}"
    want = unseen.bytes_per_path(packets)
    if set(got.index) != set(want.index):
        return (f"index it by path name ({', '.join(map(str, want.index))}): group by the column path; "
                f"its index holds {list(got.index)[:4]}")
    if _series_same(got, want):
        return None
    g = packets.groupby("path")["len"]
    hint = _first_match(got, {
        "that counts segments: add up their payload lengths (len)": g.size(),
        "that is the mean payload per segment: add them up": g.mean(),
        "those are bits: count bytes": g.sum() * 8,
        "that leaves out segments sent twice: count every byte the sender put on the path": (
            packets.drop_duplicates("dsn").groupby("path")["len"].sum()),
        "the paths are swapped": g.sum().rename({"fast": "slow", "slow": "fast"}),
    }, _series_same)
    return hint or "add up len over the segments of each path"


def _detail_table(detail, name: str):
    """A table of the notebook's Detail (while the student works), else the reference's."""
    return _own(name, None if detail is None else getattr(detail, name))


def q3(bytes_per_path, detail=None) -> None:
    """bytes_per_path(packets) -> payload bytes per path."""
    problem = _q3_problem(bytes_per_path, _toy_packets())
    expect(problem is None, f"On a made-up capture of 7 segments: {problem}.")
    problem = _q3_problem(bytes_per_path, _detail_table(detail, "packets"))
    expect(problem is None, f"On the degraded run's packets: {problem}.")


def _q4_problem(fn, packets: pd.DataFrame) -> str | None:
    got = _call(fn, "dsn_span", packets.copy())
    if not isinstance(got, (int, np.integer)) or isinstance(got, bool):
        return f"dsn_span should return an int (bytes); it returned a {type(got).__name__}: convert with int(...)"
    want = unseen.dsn_span(packets)
    if got == want:
        return None
    d, n = packets["dsn"].astype("float"), packets["len"]
    hint = _first_match(int(got), {
        "that adds up every segment's payload, so a byte sent twice counts twice: take the span of the DSNs":
            int(n.sum()),
        "that leaves out the last segment's payload: the span ends at the highest dsn + len":
            int(d.max() - d.min()),
        "that starts at the end of the first segment: the span starts at the lowest dsn itself":
            int((d + n).max() - (d + n).min()),
        "that adds up each path's span: the DSN counts one stream over both paths, take one span":
            int(sum((g["dsn"].astype(float) + g["len"]).max() - g["dsn"].astype(float).min()
                    for _, g in packets.groupby("path"))),
        "those are bits: count bytes": 8 * want,
        "that is off by one: max(dsn + len) - min(dsn) already counts the first and the last byte":
            want + 1,
    }, lambda a, b: a == b)
    return hint or "take max(dsn + len) - min(dsn) over all segments of both paths"


def q4(dsn_span, detail=None) -> None:
    """dsn_span(packets) -> stream bytes from the lowest DSN to the end of the highest segment."""
    problem = _q4_problem(dsn_span, _toy_packets())
    expect(problem is None, f"On a made-up capture of 7 segments, one sent twice: {problem}.")
    problem = _q4_problem(dsn_span, _detail_table(detail, "packets"))
    expect(problem is None, f"On the degraded run's packets: {problem}.")


# ---------------------------------------------------------------- Q6: the blocked share

def _toy_waits() -> tuple[pd.DataFrame, float]:
    start = np.array([0.5, 2.0, 3.0, 6.0])
    end = np.array([1.5, 2.2, 3.6, 6.3])
    return pd.DataFrame({"start": start, "end": end, "duration_s": end - start}), 8.0


def _q6_problem(fn, waits: pd.DataFrame, duration: float) -> str | None:
    got = _call(fn, "blocked_share", waits.copy(), duration)
    if not isinstance(got, (float, np.floating, int, np.integer)) or isinstance(got, bool):
        return f"blocked_share should return a number (a fraction); it returned a {type(got).__name__}"
    want = unseen.blocked_share(waits, duration)
    if _close(got, want, 1e-9, 1e-12):
        return None
    total = waits["duration_s"].sum()
    hint = _first_match(float(got), {
        "that is a percentage: return the fraction, between 0 and 1": 100 * want,
        "that is one typical wait, not the time blocked over the whole transfer": waits["duration_s"].mean(),
        "that counts the waits: a wait's length matters, not only that it happened": len(waits) / duration,
        "did you divide by the right duration? Use the one you are given": total / 10,
        "that is a time in seconds, not a share of the transfer (between 0 and 1)": total,
        "that is the share of time not blocked": 1 - want,
    }, lambda a, b: _close(a, b, 1e-9, 1e-12))
    if hint:
        return hint
    if float(got) > 1:
        return "your share is above 1: did you divide by the right duration?"
    return "your share is not the part of the transfer spent blocked: which column says how long each wait lasted?"


def q6(blocked_share, detail=None) -> None:
    """blocked_share(waits, duration_s) -> the fraction of the transfer spent blocked."""
    toy, duration = _toy_waits()
    problem = _q6_problem(blocked_share, toy, duration)
    expect(problem is None, f"On 4 made-up waits in an {duration:g} s transfer: {problem}.")
    problem = _q6_problem(blocked_share, _detail_table(detail, "waits"), 12.5)
    expect(problem is None, f"On the degraded run's waits (with another transfer length): {problem}.")


def graded_q6(blocked_share) -> None:
    inputs, want = _graded("q6")
    assert _close(blocked_share(inputs["waits"], inputs["duration_s"]), want, 1e-9, 1e-12), "blocked_share on unseen waits"


# ---------------------------------------------------------------- Q7 (optional): one packet's DSS fields

TOY_FIELDS = [{"ip.src": "10.2.0.1", "tcp.stream": "1", "tcp.seq": "7241",
               "tcp.options.mptcp.rawdataseqno": "15811768455215447381"},
              {"ip.src": "10.1.0.1", "tcp.stream": "0", "tcp.seq": "1", "tcp.options.mptcp.rawdataseqno": "9007199254740993"}]


def _q7_problem(fn, fields: list[dict]) -> str | None:
    for f in fields:
        got = _call(fn, "dss_row", dict(f))
        want = unseen.dss_row(f)
        if not isinstance(got, dict) or set(got) != set(want):
            return (f"dss_row should return a dict with the keys {sorted(want)}; it returned "
                    + (f"the keys {sorted(map(str, got))[:6]}" if isinstance(got, dict) else f"a {type(got).__name__}"))
        if isinstance(got["map_dsn"], float):
            return ("map_dsn should be a Python int, not a float: a float keeps only 53 bits of a 64-bit DSN; "
                    "convert the field's text with int(...)")
        for key in ("stream", "seq", "map_dsn"):
            if type(got[key]) is not int:
                return f"{key} should be a Python int; it is a {type(got[key]).__name__}: convert the field's text with int(...)"
        if got["map_dsn"] != want["map_dsn"]:
            return ("map_dsn is not the field's value: it is a 64-bit number and a float keeps only 53 bits; "
                    "convert the text with int(...) directly, never through float(...)")
        if got != want:
            wrong = [k for k in want if got[k] != want[k]]
            return f"{', '.join(wrong)} do(es) not hold the field's value: read ip.src, tcp.stream and tcp.seq"
    return None


def q7(dss_row) -> None:
    """dss_row(fields) -> {"src", "stream", "seq", "map_dsn"} as plain values."""
    problem = _q7_problem(dss_row, TOY_FIELDS)
    expect(problem is None, f"On two made-up packets' fields: {problem}.")


# ---------------------------------------------------------------- Q16 (and the optional Q17): the buffers upstream gives

TOY_BUFFERS = [("wmem", 1 << 20, 2), ("sndbuf", 512 * 1024, 2), ("wmem", 256 * 1024, 3), ("sndbuf", 96 * 1024, 1)]


def _int_answers(fn, name: str, cases) -> list | str:
    out = []
    for case in cases:
        got = _call(fn, name, *case)
        if type(got) is not int and not isinstance(got, np.integer):
            return f"{name} should return an int (bytes); it returned a {type(got).__name__}"
        out.append(int(got))
    return out


def _q16_problem(fn, cases) -> str | None:
    got = _int_answers(fn, "mptcp_sndbuf", cases)
    if isinstance(got, str):
        return got
    for (method, b, n), g in zip(cases, got):
        if g == unseen.mptcp_sndbuf(method, b, n):
            continue
        hints = {("wmem", b): "that is what the paper's out-of-tree kernel gave it (capped at tcp_wmem[2]); "
                              "upstream adds the subflows' buffers to tcp_wmem[0]",
                 ("wmem", n * b): "you added the subflows' buffers; upstream starts from tcp_wmem[0] and adds them",
                 ("wmem", 3 * b): "you assumed two subflows: use the number you are given",
                 ("sndbuf", b): "setsockopt(SO_SNDBUF, B) gives the socket 2B: the kernel doubles B for its bookkeeping",
                 ("sndbuf", 2 * b + n * 2 * b): "SO_SNDBUF locks the MPTCP socket's buffer at twice the value, "
                                                "nothing added",
                 ("sndbuf", (1 + n) * b): "SO_SNDBUF locks the MPTCP socket's buffer: upstream no longer adds "
                                          "the subflows' to it",
                 ("sndbuf", 3 * b): "SO_SNDBUF locks the MPTCP socket's buffer at twice the value"}
        return (f"with {'tcp_wmem = B B B' if method == 'wmem' else 'SO_SNDBUF = B'} (B = {b:,} B, {n} subflow(s)): "
                + hints.get((method, g), "build it from the kernel's rules in the guide's section 2 "
                                         "(what upstream adds up with tcp_wmem; what SO_SNDBUF does)"))
    return None


def q16(mptcp_sndbuf, paper_runs=None) -> None:
    """mptcp_sndbuf(method, buffer_bytes, subflows) -> the MPTCP socket's sk_sndbuf upstream."""
    problem = _q16_problem(mptcp_sndbuf, TOY_BUFFERS)
    expect(problem is None, f"On made-up settings: {problem}.")
    runs = _own("paper_runs", paper_runs)
    mp = runs[(runs["config"] == "mptcp") & runs["group"].isin(["schedulers", "held"])] if runs is not None else []
    for (method, b, n), r in (mp.groupby(["method", "buffer_bytes", "subflows"]) if len(mp) else []):
        got = _call(mptcp_sndbuf, "mptcp_sndbuf", method, int(b), int(n))
        expect(int(got) == int(r["sndbuf_effective"].max()),
               f"At the paper's point ({method}, {int(b):,} B, {int(n)} subflows) your rule disagrees with the buffer "
               "the kernel gave the runs (sndbuf_effective in paper_runs): compare the two, then the rule.")


def graded_q16(mptcp_sndbuf) -> None:
    inputs, want = _graded("q16")
    assert [int(mptcp_sndbuf(*b)) for b in inputs["buffers"]] == want, "mptcp_sndbuf on unseen settings"


def _q17_problem(fn, cases) -> str | None:
    got = _int_answers(fn, "left_for_fast", cases)
    if isinstance(got, str):
        return got
    for (method, b, n), g in zip(cases, got):
        want = unseen.left_for_fast(method, b, n)
        if g == want:
            continue
        total = unseen.mptcp_sndbuf(method, b, n)
        hints = {total: "that is the whole buffer: subtract what the slow subflow may keep unacknowledged",
                 total - b: "the slow subflow's own buffer is not what you set: what does SO_SNDBUF do to it "
                            "(the guide's section 2)?",
                 total - 2 * b: "the slow subflow's own buffer is not what you took: what does it autotune to "
                                "with tcp_wmem = B B B?"}
        return (f"with {'tcp_wmem = B B B' if method == 'wmem' else 'SO_SNDBUF = B'} (B = {b:,} B, {n} subflow(s)): "
                + hints.get(g, "what the slow subflow keeps is not what your answer takes away from the connection's "
                               "buffer: which buffer bounds the slow subflow alone?"))
    return None


def q17(left_for_fast) -> None:
    """left_for_fast(method, buffer_bytes, subflows) -> the buffer left when the slow subflow holds its own."""
    problem = _q17_problem(left_for_fast, TOY_BUFFERS)
    expect(problem is None, f"On made-up settings: {problem}.")


# ---------------------------------------------------------------- Q18 (and the optional Q19): starvation at the paper's point

def _toy_paper_runs() -> pd.DataFrame:
    """Two groups with different TCP baselines, a scheduler that did not run (NaN), a tso control row."""
    rows = []
    def add(group, config, scheduler, mbps, sndbuf, slow, fast, wq):
        rows.append({"group": group, "config": config, "scheduler": scheduler, "goodput_transfer_mbps": mbps,
                     "sndbuf_effective": sndbuf,
                     "inflight_max_slow": slow, "inflight_max_fast": fast, "sk_sndbuf_slow": sndbuf / 3,
                     "wmem_queued_max": wq})
    for x in (90.0, 92.0):
        add("schedulers", "tcp-fast", np.nan, x, 1e6, np.nan, np.nan, np.nan)
        add("held", "tcp-fast", np.nan, x + 4, 1e6, np.nan, np.nan, np.nan)
    for s, (x, sl) in {"default": (170.0, 9e5), "minrtt": (175.0, 1.0e6)}.items():
        for k in range(2):
            add("schedulers", "mptcp", s, x + 2 * k, 3e6, sl + 1e4 * k, 2e6, 2.9e6)
    for s, (x, sl) in {"default": (140.0, 7e5), "minrtt": (85.0, 1.04e6)}.items():
        for k in (0, 1, 5):  # mean and median differ
            add("held", "mptcp", s, x + k, 1.048e6, sl - 1e4 * k, 3e5, 1.03e6)
    add("schedulers", "mptcp", "blest", np.nan, 3e6, np.nan, np.nan, np.nan)
    add("tso", "mptcp", "default", 150.0, 3e6, 1e6, 1e6, 2e6)
    return pd.DataFrame(rows).iloc[::-1].reset_index(drop=True)


STARVATION_COLUMNS = ("goodput_transfer_mbps", "vs_tcp", "left_for_fast")


def _q18_problem(fn, runs: pd.DataFrame) -> str | None:
    got = _call(fn, "starvation", runs.copy())
    want = unseen.starvation(runs)
    if not isinstance(got, pd.DataFrame):
        return f"starvation should return a pandas DataFrame; it returned a {type(got).__name__}"
    if list(got.index.names) != ["group", "scheduler"]:
        return f"index it by group and scheduler, in that order; it is indexed by {list(got.index.names)}"
    missing = [c for c in STARVATION_COLUMNS if c not in got.columns]
    if missing:
        return f"it lacks the column(s) {', '.join(missing)}"
    extra, lacking = set(got.index) - set(want.index), set(want.index) - set(got.index)
    if extra:
        return ("it has rows that are not MPTCP runs of the groups schedulers and held that ran: keep config == "
                "\"mptcp\", those two groups, and runs whose goodput_transfer_mbps is not NaN (a scheduler the "
                "kernel lacks)")
    if lacking:
        return "it lacks rows: one per group and scheduler whose MPTCP runs ran"
    g, w = got.reindex(want.index), want
    mp = runs[(runs["config"] == "mptcp") & runs["group"].isin(["schedulers",
                                                                "held"]) & runs["goodput_transfer_mbps"].notna()]
    by = [mp["group"], mp["scheduler"]]
    if not _close(g["goodput_transfer_mbps"], w["goodput_transfer_mbps"]):
        hint = _first_match(g["goodput_transfer_mbps"],
                            {"that is the median: take the mean": mp.groupby(by)["goodput_transfer_mbps"].median()},
                            lambda a, b: _close(a, b.reindex(w.index)))
        return "goodput_transfer_mbps: " + (hint or "the mean goodput of each group's MPTCP runs with that scheduler")
    if not _close(g["vs_tcp"], w["vs_tcp"]):
        hint = _first_match(g["vs_tcp"], {
            "you subtracted TCP's mean over every group: subtract the tcp-fast runs of the same group":
                w["goodput_transfer_mbps"] - runs.loc[runs["config"] == "tcp-fast", "goodput_transfer_mbps"].mean(),
            "the sign is reversed: MPTCP's mean minus TCP's, so that negative means below TCP": -w["vs_tcp"],
            "that is a ratio: the question asks for the difference in Mbit/s":
                w["goodput_transfer_mbps"] / (w["goodput_transfer_mbps"] - w["vs_tcp"]),
        }, lambda a, b: _close(a, b))
        return "vs_tcp: " + (hint or "goodput_transfer_mbps minus the mean goodput of the tcp-fast runs of the same "
                                     "group")
    if not _close(g["left_for_fast"], w["left_for_fast"], 1e-6, 1):
        hint = _first_match(g["left_for_fast"], {
            "that subtracts the slow subflow's own buffer (your prediction); measure what it held: inflight_max_slow":
                (mp["sndbuf_effective"] - mp["sk_sndbuf_slow"]).groupby(by).mean(),
            "that subtracts the fast subflow's bytes in flight; the slow subflow's (inflight_max_slow) hold the buffer":
                (mp["sndbuf_effective"] - mp["inflight_max_fast"]).groupby(by).mean(),
            "that starts from what the socket held (wmem_queued_max); start from its buffer, sndbuf_effective":
                (mp["wmem_queued_max"] - mp["inflight_max_slow"]).groupby(by).mean(),
        }, lambda a, b: _close(a, b.reindex(w.index), 1e-6, 1))
        return "left_for_fast: " + (hint or "the mean over each group's runs of sndbuf_effective - inflight_max_slow")
    return None


def q18(starvation, paper_runs=None) -> None:
    """starvation(paper_runs) -> per (group, scheduler): goodput_transfer_mbps, vs_tcp, left_for_fast."""
    problem = _q18_problem(starvation, _toy_paper_runs())
    expect(problem is None, f"On made-up runs (two groups, a scheduler that did not run, a tso row): {problem}.")
    runs = _own("paper_runs", paper_runs)
    if runs is not None and len(runs):
        problem = _q18_problem(starvation, runs)
        expect(problem is None, f"On the paper's point this notebook loaded: {problem}.")


def graded_q18(starvation) -> None:
    inputs, want = _graded("q18")
    got = starvation(inputs["paper_runs"])
    assert isinstance(got, pd.DataFrame) and _frame_same(got, want, STARVATION_COLUMNS), "starvation on unseen runs"


def _toy_starvation() -> pd.DataFrame:
    idx = pd.MultiIndex.from_tuples([("held", "minrtt+rp"), ("held", "default"), ("schedulers", "minrtt"),
                                     ("held", "minrtt"), ("schedulers", "default")], names=["group", "scheduler"])
    return pd.DataFrame({"goodput_transfer_mbps": [90.0, 140.0, 80.0, 85.0, 180.0],
                         "vs_tcp": [-5.0, 45.0, -15.0, -10.0, 0.0],
                         "left_for_fast": [1e4, 5e5, 0.0, 0.0, 2e6]}, index=idx)


def _q19_problem(fn, table: pd.DataFrame) -> str | None:
    got = _call(fn, "below_tcp", table.copy())
    want = unseen.below_tcp(table)
    if not isinstance(got, list) or not all(isinstance(x, tuple) and len(x) == 2 for x in got):
        return ("below_tcp should return a list of (group, scheduler) tuples, e.g. [(\"held\", \"minrtt\")]; it returned "
                + (f"a list of {type(got[0]).__name__}" if isinstance(got, list) and got else f"a {type(got).__name__}"))
    got = [tuple(map(str, x)) for x in got]
    if got == want:
        return None
    if sorted(got) == want:
        return "sort the list"
    hint = _first_match(got, {
        "that includes a pair exactly at TCP's goodput: keep vs_tcp below 0": sorted(table.index[table["vs_tcp"] <= 0]),
        "those are the pairs above TCP: keep the ones below (vs_tcp < 0)": sorted(table.index[table["vs_tcp"] > 0]),
        "that compares goodput_transfer_mbps with 0: compare vs_tcp":
            sorted(table.index[table["goodput_transfer_mbps"] < 0]),
    }, lambda a, b: a == [tuple(x) for x in b])
    return hint or "keep the (group, scheduler) pairs of the table whose vs_tcp is negative, sorted"


def q19(below_tcp) -> None:
    """below_tcp(starvation_table) -> sorted (group, scheduler) pairs with vs_tcp < 0."""
    problem = _q19_problem(below_tcp, _toy_starvation())
    expect(problem is None, f"On a made-up starvation table of 5 rows: {problem}.")
