"""Lab 1's inputs no student has seen, and the kit's answers on them (what the graded checks compare).

`held_out(tables, rng)` (`LAB.grading.held_out`) draws, from the reference tables and a generator seeded
from the instructor's secret, one input for every graded question: the reference sweep with each
point's goodput rescaled (so the degraded buffers move; one buffer per method ties MPTCP with
tcp-fast), made-up send-buffer waits over a transfer of another length, buffer settings the lab
never ran, and the paper's point with its goodputs and bytes in flight rescaled. `answers(inputs)`
computes what each question asks on them; it is an answer key (hidden while a submission runs), as
are the helpers it calls. The optional questions (Q3, Q4, Q7, Q17, Q19: bytes_per_path, dsn_span, dss_row,
left_for_fast, below_tcp) earn no points and have no draw; their functions here are the public checks'
answers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

SWEEP_COLUMNS = ["run", "method", "buffer", "buffer_bytes", "config", "rep", "goodput_transfer_mbps", "subflows",
                 "sndbuf_effective"]
PAPER_COLUMNS = ["group", "run", "method", "buffer_bytes", "config", "scheduler", "rep", "goodput_transfer_mbps",
                 "subflows",
                 "sndbuf_effective", "sk_sndbuf_slow", "inflight_max_fast", "inflight_max_slow", "wmem_queued_max"]


def held_out(tables: dict, rng: np.random.Generator) -> dict:
    """{"sweep", "mean_tput", "waits", "duration_s", "buffers", "paper_runs"}: one input per graded
    question (the kit's `load` gives `tables`)."""
    sweep = _sweep(tables["sweep"], rng)
    paper_runs = _paper_runs(tables["paper_runs"], rng)
    waits, duration = _waits(rng)
    return {"sweep": sweep, "mean_tput": _tied(mean_goodput(sweep), rng), "waits": waits, "duration_s": duration,
            "buffers": _buffers(rng), "paper_runs": paper_runs}


def _sweep(sweep: pd.DataFrame, rng) -> pd.DataFrame:
    """Each (method, buffer, config) point's goodput times its own factor (0.6-1.4), each run's
    times 0.97-1.03; one to two repetitions of each point dropped; rows shuffled."""
    s = sweep[[c for c in SWEEP_COLUMNS if c in sweep]].copy()
    keys = ["method", "buffer_bytes", "config"]
    factor = s.groupby(keys)["goodput_transfer_mbps"].transform(lambda g: rng.uniform(0.6, 1.4))
    s["goodput_transfer_mbps"] = s["goodput_transfer_mbps"] * factor * rng.uniform(0.97, 1.03, len(s))
    drop = s.groupby(keys, group_keys=False).apply(
        lambda g: g.sample(n=min(len(g) - 1, int(rng.integers(1, 3))), random_state=rng).index if len(g) > 1 else g.index[:0])
    s = s.drop(index=[i for idx in drop for i in idx])
    return s.sample(frac=1, random_state=rng).reset_index(drop=True)


def _tied(mean_tput: pd.DataFrame, rng) -> pd.DataFrame:
    """Q2's input: the means with, for each method, one buffer's MPTCP mean set exactly to its tcp-fast
    mean. MPTCP is not below TCP there, so `<=` for "below" lists a buffer too many."""
    t = mean_tput.copy()
    for method in t.index.get_level_values("method").unique():
        buffer = rng.choice(t.loc[method].index.to_numpy())
        t.loc[(method, buffer), "mptcp"] = t.loc[(method, buffer), "tcp-fast"]
    return t


def _waits(rng) -> tuple[pd.DataFrame, float]:
    """Made-up waits over a transfer of 5-30 s: 20-400 non-overlapping intervals."""
    duration = round(float(rng.uniform(5, 30)), 3)
    n = int(rng.integers(20, 401))
    edges = np.sort(rng.uniform(0, duration, 2 * n))
    start, end = edges[0::2], edges[1::2]
    return pd.DataFrame({"start": start, "end": end, "duration_s": end - start}), duration


def _buffers(rng) -> list[tuple[str, int, int]]:
    """(method, buffer_bytes, subflows) settings: each method, buffers of 16 KiB-8 MiB, 1-4 subflows."""
    out = []
    for method in ("wmem", "sndbuf", *rng.choice(["wmem", "sndbuf"], 4)):
        out.append((str(method), int(rng.integers(4, 2049)) * 4096, int(rng.integers(1, 5))))
    return out


def _paper_runs(runs: pd.DataFrame, rng) -> pd.DataFrame:
    """The paper's point: each (group, config, scheduler)'s goodput times 0.5-1.5, the slow subflow's
    bytes in flight times 0.5-1.0 per run, one repetition of each dropped; a scheduler that did not
    run (`blest`: goodput_transfer_mbps NaN) added to the schedulers group; rows shuffled. The tso control stays, its MPTCP runs
    named by the scheduler they ran with (upstream's default), so a function must keep only the two groups."""
    r = runs[[c for c in PAPER_COLUMNS if c in runs]].copy()
    keys = ["group", "config", "scheduler"]
    factor = r.groupby(keys, dropna=False)["goodput_transfer_mbps"].transform(lambda g: rng.uniform(0.5, 1.5))
    r["goodput_transfer_mbps"] = r["goodput_transfer_mbps"] * factor
    r["inflight_max_slow"] = (r["inflight_max_slow"] * rng.uniform(0.5, 1.0, len(r))).round()
    first = r.groupby(keys, dropna=False).head(1).index
    r = r.drop(index=first[rng.random(len(first)) < 0.5])
    r.loc[(r["group"] == "tso") & (r["config"] == "mptcp"), "scheduler"] = "default"  # upstream's, as it ran
    ghost = r[(r["group"] == "schedulers") & (r["config"] == "mptcp")].head(2).copy()
    ghost["scheduler"], ghost["goodput_transfer_mbps"] = "blest", np.nan
    return pd.concat([r, ghost]).sample(frac=1, random_state=rng).reset_index(drop=True)


# ---------------------------------------------------------------- the answers (answer keys)

def mean_goodput(sweep: pd.DataFrame) -> pd.DataFrame:
    return sweep.groupby(["method", "buffer_bytes", "config"])["goodput_transfer_mbps"].mean().unstack("config")


def degraded_buffers(mean_tput: pd.DataFrame, method: str) -> list[int]:
    w = mean_tput.loc[method]
    return sorted(int(b) for b in w.index[w["mptcp"] < w["tcp-fast"]])


def bytes_per_path(packets: pd.DataFrame) -> pd.Series:
    return packets.groupby("path")["len"].sum()


def dsn_span(packets: pd.DataFrame) -> int:
    return int((packets["dsn"] + packets["len"]).max() - packets["dsn"].min())


def blocked_share(waits: pd.DataFrame, duration_s: float) -> float:
    return float(waits["duration_s"].sum() / duration_s)


def dss_row(fields: dict) -> dict:
    return {"src": fields["ip.src"], "stream": int(fields["tcp.stream"]), "seq": int(fields["tcp.seq"]),
            "map_dsn": int(fields["tcp.options.mptcp.rawdataseqno"])}


def mptcp_sndbuf(method: str, buffer_bytes: int, subflows: int) -> int:
    """tcp_wmem = B B B: tcp_wmem[0] plus each subflow's B (__mptcp_sync_sndbuf); SO_SNDBUF B: 2B, locked."""
    return buffer_bytes * (1 + subflows) if method == "wmem" else 2 * buffer_bytes


def left_for_fast(method: str, buffer_bytes: int, subflows: int) -> int:
    """The connection's buffer less what the slow subflow may hold (its own sk_sndbuf: B or 2B)."""
    return mptcp_sndbuf(method, buffer_bytes, subflows) - (buffer_bytes if method == "wmem" else 2 * buffer_bytes)


def starvation(paper_runs: pd.DataFrame) -> pd.DataFrame:
    r = paper_runs
    mp = r[(r["config"] == "mptcp") & r["group"].isin(["schedulers", "held"]) & r["goodput_transfer_mbps"].notna()]
    tcp = r[r["config"] == "tcp-fast"].groupby("group")["goodput_transfer_mbps"].mean()
    out = (mp.assign(left_for_fast=mp["sndbuf_effective"] - mp["inflight_max_slow"])
           .groupby(["group", "scheduler"])[["goodput_transfer_mbps", "left_for_fast"]].mean())
    out.insert(1, "vs_tcp", out["goodput_transfer_mbps"] - tcp.reindex(out.index.get_level_values("group")).to_numpy())
    return out


def below_tcp(table: pd.DataFrame) -> list[tuple[str, str]]:
    return sorted(tuple(k) for k in table.index[table["vs_tcp"] < 0])


def answers(inputs: dict) -> dict:
    """What each graded question's function should return on `held_out`'s inputs."""
    return {
        "q1": mean_goodput(inputs["sweep"]),
        "q2": {m: degraded_buffers(inputs["mean_tput"], m) for m in ("wmem", "sndbuf")},
        "q6": blocked_share(inputs["waits"], inputs["duration_s"]),
        "q16": [mptcp_sndbuf(*b) for b in inputs["buffers"]],
        "q18": starvation(inputs["paper_runs"]),
    }


# The answer keys a submission must not call (LAB.grading.answer_keys["unseen"]).
ANSWER_KEYS = ("mean_goodput", "degraded_buffers", "bytes_per_path", "dsn_span", "blocked_share", "dss_row",
               "mptcp_sndbuf", "left_for_fast", "starvation", "below_tcp", "answers")
