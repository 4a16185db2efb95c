"""Lab 1's checks: each public check passes the right function and fails every plausible wrong one
with a short message in its own words (no source, no graded value); each graded check passes the
right function on the unseen draw and fails the wrong ones there too. Q3, Q4, Q7, Q17 and Q19 are
optional (Going further): a public check each, no graded one."""

import inspect
import re

import numpy as np
import pytest

from mptcplab.grading import reference
from mptcplab.grading.feedback import MAX_LINES, CheckFailed
from mptcplab.labs.lab1 import analysis as la
from mptcplab.labs.lab1 import checks, unseen

REF = reference.results("lab1")
SOURCE_LINES = {ln.strip() for ln in inspect.getsource(checks).splitlines() if len(ln.strip()) > 25}


@pytest.fixture(scope="module")
def tables():
    return la.load(REF)


@pytest.fixture(scope="module")
def detail():
    return la.Detail.load(REF)


def _ref_constant(value):
    """A 'function' that returns the reference's answer whatever it is given (the reference instead of the run)."""
    return lambda *args: value


def _g(s):
    return s.groupby(["method", "buffer_bytes", "config"])["goodput_transfer_mbps"]


def _mean_sweep(tables):
    return unseen.mean_goodput(tables["sweep"])


# question -> (the right function, {wrong answer: function}, the public check's extra argument)
def cases(tables, detail):
    sweep, runs = tables["sweep"], tables["paper_runs"]
    ref_mean = _mean_sweep(tables)
    mp = lambda r: r[(r["config"] == "mptcp") & r["group"].isin(["schedulers",
                                                                 "held"]) & r["goodput_transfer_mbps"].notna()]

    def starv(left, tcp_pooled=False, sign=1, agg="mean", keep=mp):
        def f(r):
            m = keep(r)
            tcp = r[r["config"] == "tcp-fast"]
            out = m.assign(left_for_fast=left(m)).groupby(["group", "scheduler"])[["goodput_transfer_mbps", "left_for_fast"]].agg(agg)
            base = (tcp["goodput_transfer_mbps"].mean() if tcp_pooled else
                    tcp.groupby("group")["goodput_transfer_mbps"].mean().reindex(out.index.get_level_values("group")).to_numpy())
            out.insert(1, "vs_tcp", sign * (out["goodput_transfer_mbps"] - base))
            return out
        return f

    right_left = lambda m: m["sndbuf_effective"] - m["inflight_max_slow"]
    return {
        "q1": (unseen.mean_goodput, {
            "median": lambda s: _g(s).median().unstack("config"),
            "sum": lambda s: _g(s).sum().unstack("config"),
            "MB/s instead of Mbit/s": lambda s: _g(s).mean().unstack("config") / 8,
            "first repetition": lambda s: _g(s).first().unstack("config"),
            "index in the wrong order": lambda s: s.groupby(["buffer_bytes", "method",
                                                             "config"])["goodput_transfer_mbps"].mean()
            .unstack("config"),
            "wrong grouping (methods pooled)": lambda s: s.groupby(["buffer_bytes",
                                                                    "config"])["goodput_transfer_mbps"].mean()
            .unstack("config"),
            "unstacked the method": lambda s: _g(s).mean().unstack("method"),
            "the reference instead of the run": _ref_constant(ref_mean),
        }, sweep),
        "q2": (unseen.degraded_buffers, {
            "at or above": lambda t, m: sorted(int(b) for b in t.loc[m].index[t.loc[m]["mptcp"] >= t.loc[m]["tcp-fast"]]),
            "at or below (<= for below)":
                lambda t, m: sorted(int(b) for b in t.loc[m].index[t.loc[m]["mptcp"] <= t.loc[m]["tcp-fast"]]),
            "against tcp-slow": lambda t, m: sorted(int(b) for b in t.loc[m].index[t.loc[m]["mptcp"] < t.loc[m]["tcp-slow"]]),
            "always wmem": lambda t, m: unseen.degraded_buffers(t, "wmem"),
            "descending": lambda t, m: sorted(unseen.degraded_buffers(t, m), reverse=True),
            "numpy ints": lambda t, m: list(np.array(unseen.degraded_buffers(t, m), dtype=np.int64)),
            "only the first": lambda t, m: unseen.degraded_buffers(t, m)[:1],
            "the reference instead of the run": _ref_constant(unseen.degraded_buffers(ref_mean, "wmem")),
        }, sweep),
        "q3": (unseen.bytes_per_path, {
            "segments counted": lambda p: p.groupby("path")["len"].size(),
            "mean": lambda p: p.groupby("path")["len"].mean(),
            "bits": lambda p: p.groupby("path")["len"].sum() * 8,
            "grouped by stream": lambda p: p.groupby("stream")["len"].sum(),
            "paths swapped": lambda p: p.groupby("path")["len"].sum().rename({"fast": "slow", "slow": "fast"}),
            "each DSN once": lambda p: p.drop_duplicates("dsn").groupby("path")["len"].sum(),
            "a dict": lambda p: p.groupby("path")["len"].sum().to_dict(),
            "the reference instead of the run": _ref_constant(unseen.bytes_per_path(detail.packets)),
        }, detail),
        "q4": (unseen.dsn_span, {
            "sum of payloads": lambda p: int(p["len"].sum()),
            "last segment left out": lambda p: int(p["dsn"].max() - p["dsn"].min()),
            "from the first segment's end": lambda p: int((p["dsn"] + p["len"]).max() - (p["dsn"] + p["len"]).min()),
            "span per path added": lambda p: int(sum((g["dsn"] + g["len"]).max() - g["dsn"].min() for _, g in p.groupby("path"))),
            "bits": lambda p: 8 * unseen.dsn_span(p),
            "off by one": lambda p: unseen.dsn_span(p) + 1,
            "a float": lambda p: float(unseen.dsn_span(p)),
            "the reference instead of the run": _ref_constant(unseen.dsn_span(detail.packets)),
        }, detail),
        "q6": (unseen.blocked_share, {
            "percent": lambda w, d: 100 * w["duration_s"].sum() / d,
            "mean wait": lambda w, d: w["duration_s"].mean(),
            "count over duration": lambda w, d: len(w) / d,
            "10 s assumed": lambda w, d: w["duration_s"].sum() / 10,
            "seconds": lambda w, d: w["duration_s"].sum(),
            "share not blocked": lambda w, d: 1 - w["duration_s"].sum() / d,
            "the reference instead of the run": _ref_constant(detail.blocked_share),
        }, detail),
        "q7": (unseen.dss_row, {
            "map_dsn as a float": lambda f: {**unseen.dss_row(f), "map_dsn": float(f["tcp.options.mptcp.rawdataseqno"])},
            "through float then int": lambda f: {**unseen.dss_row(f), "map_dsn": int(float(f["tcp.options.mptcp.rawdataseqno"]))},
            "text kept": lambda f: {"src": f["ip.src"], "stream": f["tcp.stream"], "seq": f["tcp.seq"],
                                    "map_dsn": f["tcp.options.mptcp.rawdataseqno"]},
            "wrong keys": lambda f: {"ip.src": f["ip.src"], "tcp.stream": int(f["tcp.stream"])},
            "stream and seq swapped": lambda f: {**unseen.dss_row(f), "seq": int(f["tcp.stream"]), "stream": int(f["tcp.seq"])},
        }, None),
        "q16": (unseen.mptcp_sndbuf, {
            "the paper's kernel": lambda m, b, n: b if m == "wmem" else 2 * b,
            "subflows only": lambda m, b, n: n * b if m == "wmem" else 2 * b,
            "two subflows assumed": lambda m, b, n: 3 * b if m == "wmem" else 2 * b,
            "SO_SNDBUF not doubled": lambda m, b, n: (1 + n) * b if m == "wmem" else b,
            "SO_SNDBUF added up": lambda m, b, n: (1 + n) * b,
            "SO_SNDBUF plus doubled subflows": lambda m, b, n: (1 + n) * b if m == "wmem" else 2 * b + 2 * n * b,
            "a float": lambda m, b, n: float(unseen.mptcp_sndbuf(m, b, n)),
        }, runs),
        "q17": (unseen.left_for_fast, {
            "whole buffer": unseen.mptcp_sndbuf,
            "SO_SNDBUF's slow subflow at B": lambda m, b, n: unseen.mptcp_sndbuf(m, b, n) - b,
            "tcp_wmem's slow subflow at 2B": lambda m, b, n: unseen.mptcp_sndbuf(m, b, n) - 2 * b,
            "the paper's kernel": lambda m, b, n: 0,
        }, None),
        "q18": (unseen.starvation, {
            "median": starv(right_left, agg="median"),
            "TCP pooled over groups": starv(right_left, tcp_pooled=True),
            "sign reversed": starv(right_left, sign=-1),
            "the slow subflow's buffer": starv(lambda m: m["sndbuf_effective"] - m["sk_sndbuf_slow"]),
            "the fast subflow's bytes in flight": starv(lambda m: m["sndbuf_effective"] - m["inflight_max_fast"]),
            "from wmem_queued_max": starv(lambda m: m["wmem_queued_max"] - m["inflight_max_slow"]),
            "every group kept": starv(right_left,
                                      keep=lambda r: r[(r["config"] == "mptcp") & r["goodput_transfer_mbps"].notna()]),
            "schedulers that did not run kept": starv(right_left, keep=lambda r: r[(r["config"] == "mptcp")
                                                                                   & r["group"].isin(["schedulers", "held"])]),
            "index in the wrong order": lambda r: unseen.starvation(r).swaplevel().sort_index(),
            "the reference instead of the run": _ref_constant(unseen.starvation(runs)),
        }, runs),
        "q19": (unseen.below_tcp, {
            "unsorted": lambda t: list(t.index[t["vs_tcp"] < 0]),
            "at or below": lambda t: sorted(t.index[t["vs_tcp"] <= 0]),
            "above": lambda t: sorted(t.index[t["vs_tcp"] > 0]),
            "lists": lambda t: [list(k) for k in unseen.below_tcp(t)],
            "the index itself": lambda t: t.index[t["vs_tcp"] < 0],
            "mbps below zero": lambda t: sorted(t.index[t["goodput_transfer_mbps"] < 0]),
            "the reference instead of the run": _ref_constant(unseen.below_tcp(unseen.starvation(runs))),
        }, None),
    }


def public(q: str, fn, extra):
    check = getattr(checks, q)
    return check(fn) if extra is None else check(fn, extra)


def _short_and_own_words(message: str) -> None:
    lines = message.splitlines()
    assert 0 < len(lines) <= MAX_LINES and all(len(ln) <= 100 for ln in lines), message
    assert not [ln for ln in SOURCE_LINES if ln in message], message  # no line of the checks' code
    assert "Traceback" not in message and "def " not in message, message


QUESTIONS = ("q1", "q2", "q3", "q4", "q6", "q7", "q16", "q17", "q18", "q19")
GRADED = ("q1", "q2", "q6", "q16", "q18")  # the required path's functions; Q3, Q4, Q7, Q17, Q19 are optional


@pytest.mark.parametrize("q", QUESTIONS)
def test_public_check_passes_the_right_function(q, tables, detail):
    right, _, extra = cases(tables, detail)[q]
    public(q, right, extra)


@pytest.mark.parametrize("q", QUESTIONS)
def test_public_check_fails_every_plausible_wrong_answer_in_a_few_lines(q, tables, detail):
    _, wrong, extra = cases(tables, detail)[q]
    for name, fn in wrong.items():
        with pytest.raises(CheckFailed) as failed:
            public(q, fn, extra)
        _short_and_own_words(str(failed.value))


def test_public_checks_name_the_likely_mistake(tables, detail):
    c = cases(tables, detail)
    said = {}
    for q, wrong in (("q1", "median"), ("q2", "at or below (<= for below)"), ("q3", "segments counted"), ("q4", "sum of payloads"), ("q6", "percent"),
                     ("q7", "map_dsn as a float"), ("q16", "SO_SNDBUF not doubled"), ("q18", "TCP pooled over groups"),
                     ("q19", "unsorted")):
        with pytest.raises(CheckFailed) as failed:
            public(q, c[q][1][wrong], c[q][2])
        said[q] = str(failed.value).replace("\n", " ")
    assert "median" in said["q1"] and "strictly" in said["q2"] and "counts segments" in said["q3"] and "twice" in said["q4"]
    assert "percentage" in said["q6"] and "53 bits" in said["q7"] and "doubles" in said["q16"]
    assert "same group" in said["q18"] and "sort" in said["q19"]


def test_q6_and_q17_messages_name_the_mistake_not_the_formula(tables, detail):
    """A hint says what kind of mistake it is; it never spells out the rule to type in."""
    c = cases(tables, detail)
    wrong = {**c["q6"][1], "a quarter of the duration": lambda w, d: w["duration_s"].sum() / (d / 4)}
    said = {}
    for q, name, fn in [("q6", n, f) for n, f in wrong.items()] + [("q17", n, f) for n, f in c["q17"][1].items()]:
        with pytest.raises(CheckFailed) as failed:
            public(q, fn, c[q][2])
        said[q, name] = str(failed.value).replace("\n", " ")
    for message in said.values():
        assert not re.search(r"add up|divide (it )?by the transfer|\(2B\)|\] = B\b", message), message
    assert "above 1" in said["q6", "a quarter of the duration"] and "seconds" in said["q6", "seconds"]
    assert "SO_SNDBUF" in said["q17", "SO_SNDBUF's slow subflow at B"]


def test_the_control_runs_table_takes_the_students_blocked_share(tables):
    """Q12's table is built with the student's Q6 (the kit's blocked share is hidden when graded):
    the right function gives the kit's column, an unanswered one (None) or a broken one leaves it NaN."""
    details = la.load_details(REF)
    kit = la.wait_table(details, tables["sweep"])
    assert la.wait_table(details, tables["sweep"], share=unseen.blocked_share)["blocked_share"].tolist() == \
        kit["blocked_share"].tolist()
    for unanswered in (lambda w, d: None, lambda w, d: 1 / 0):
        t = la.wait_table(details, tables["sweep"], share=unanswered)
        assert t["blocked_share"].isna().all() and t["utilisation"].notna().all()
        la.fig_waits_compare(details, tables["sweep"], share=unanswered)


def test_public_messages_hold_no_graded_value(tables, detail):
    """Q3/Q4/Q6's answers on the reference run (what a student could paste back) appear in no message."""
    graded = {str(v) for v in (*unseen.bytes_per_path(detail.packets).astype(int), unseen.dsn_span(detail.packets))}
    graded |= {f"{int(v):,}" for v in (*unseen.bytes_per_path(detail.packets), unseen.dsn_span(detail.packets))}
    graded |= {f"{detail.blocked_share:.{d}f}" for d in (2, 3, 4)} | {f"{100 * detail.blocked_share:.1f}"}
    c = cases(tables, detail)
    for q in ("q3", "q4", "q6"):
        for fn in c[q][1].values():
            with pytest.raises(CheckFailed) as failed:
                public(q, fn, c[q][2])
            assert not set(re.findall(r"[\d,.]+", str(failed.value))) & graded, str(failed.value)


def test_a_function_that_raises_is_named_without_a_traceback(tables):
    def broken(sweep):
        raise KeyError("goodput_transfer_mbps")

    with pytest.raises(CheckFailed) as failed:
        checks.q1(broken, tables["sweep"])
    assert "mean_goodput() raised KeyError" in str(failed.value)
    _short_and_own_words(str(failed.value))


@pytest.fixture()
def drawn():
    reference.provide({"lab1": reference.draw("lab1", b"a test secret, never a real one")})
    yield reference.unseen("lab1")
    reference.provide({})


# Wrong only in form: the public check asks for the form the question names, the graded one compares values.
FORM_ONLY = {("q2", "numpy ints"), ("q16", "a float")}


def test_only_the_required_functions_have_a_graded_check_and_an_unseen_answer(drawn):
    assert {q for q in QUESTIONS if hasattr(checks, f"graded_{q}")} == set(GRADED)
    assert set(unseen.answers(drawn)) == set(GRADED)


@pytest.mark.parametrize("q", GRADED)
def test_graded_check_passes_the_right_function_and_fails_the_wrong_ones_on_unseen_inputs(q, tables, detail, drawn):
    right, wrong, _ = cases(tables, detail)[q]
    graded = getattr(checks, f"graded_{q}")
    graded(right)
    for name, fn in wrong.items():
        if (q, name) in FORM_ONLY:
            graded(fn)
            continue
        with pytest.raises(Exception):
            graded(fn)


def test_unseen_inputs_differ_from_the_shipped_ones(tables, detail, drawn):
    """Values computed on the shipped tables do not answer the unseen draw."""
    a = unseen.answers(drawn)
    assert not a["q1"].equals(_mean_sweep(tables))
    assert a["q6"] != detail.blocked_share
    assert not a["q18"][list(checks.STARVATION_COLUMNS)].equals(unseen.starvation(tables["paper_runs"]))
    for method in ("wmem", "sndbuf"):  # a tie, so that <= for "below" lists one buffer too many
        m = drawn["mean_tput"].loc[method]
        assert (m["mptcp"] == m["tcp-fast"]).any() and a["q2"][method] != sorted(m.index[m["mptcp"] <= m["tcp-fast"]])


def test_held_out_is_the_same_for_the_same_secret_and_differs_for_another(tables):
    one = unseen.held_out(tables, reference.rng(b"secret one", "lab1"))
    again = unseen.held_out(tables, reference.rng(b"secret one", "lab1"))
    other = unseen.held_out(tables, reference.rng(b"secret two", "lab1"))
    assert one["sweep"].equals(again["sweep"]) and one["buffers"] == again["buffers"]
    assert not one["sweep"].equals(other["sweep"])


def test_the_answer_keys_are_declared(tables):
    from mptcplab.grading import answer_keys

    keys = answer_keys.functions()
    assert set(unseen.ANSWER_KEYS) <= set(keys["mptcplab.labs.lab1.unseen"])
    assert "degradation_region" in keys["mptcplab.labs.lab1.sweep"]
    redacted = answer_keys.redact_source(inspect.getsource(unseen), unseen.ANSWER_KEYS, "mptcplab.labs.lab1.unseen")
    namespace: dict = {}
    exec(compile(redacted, "unseen_redacted", "exec"), namespace)
    with pytest.raises(namespace["AnswerKeyHidden"]):
        namespace["mean_goodput"](tables["sweep"])
