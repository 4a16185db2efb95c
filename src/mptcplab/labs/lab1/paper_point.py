"""Lab 1's paper point (issue 24): the [paper_point] runs as tables.

MPTCP at the paper's buffer with each scheduler (upstream's default, minrtt, minrtt+RP) beside
single-path TCP, the same with the connection held at the paper's 1 MiB by SO_SNDBUF, and the
tcp_min_tso_segs control: one row per transfer (load_paper_point), n, mean and 95% interval per
setting (paper_point_table) beside the paper's 46.8 Mbit/s, with Holm-corrected verdicts per table
(paper_verdicts, paper_point_markdown), and a compact copy: the rows, one row of provenance per
run (runs-manifest.csv), one full manifest and the detailed runs' tables (export_paper_point).
The runs themselves: experiment.paper_points.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ...judge import stats
from ...judge.claims import FAILS, HOLDS, UNRESOLVED
from ...run.results import RUN_MANIFEST_COLUMNS, Sweep, run_manifests
from .detail import copy_run_tables
from .sweep import PAPER, _kib, t95

PAPER_POINT_COLUMNS = ["run", "method", "buffer", "buffer_bytes", "config", "scheduler", "scheduler_applied",
                       "minrtt_rp_applied", "min_tso_segs", "rep", "goodput_transfer_mbps", "subflows",
                       "rp_opp_retrans", "rp_penalised",
                       "mptcp_retrans", "tcp_retrans_segs", "srtt_ms_fast", "srtt_ms_slow", "inflight_max_fast",
                       "inflight_max_slow", "wmem_queued_max", "sndbuf_effective", "sk_sndbuf_fast", "sk_sndbuf_slow",
                       "skipped"]
COMPACT_DIR = "paper-point"  # where a reference (solutions/results/lab1) keeps the compact copy
SCHEDULER_ORDER = {"default": 0, "minrtt": 1, "minrtt+rp": 2}  # the order of every table's rows


def _group(run: str) -> str:
    """The run's group, each its own table and family of verdicts: "tso" (the tcp_min_tso_segs
    control), "held" (the paper's 1 MiB held by SO_SNDBUF) or "schedulers" (the paper's point)."""
    return "tso" if run.startswith("tso") else "held" if run.startswith("paper-sndbuf-") else "schedulers"


def load_paper_point(path: Path | str) -> pd.DataFrame:
    """One row per [paper_point] transfer (not its detailed runs), from the runs or the compact
    copy (paper-point.csv, in `path` or in its paper-point/); `group` is "schedulers", "held"
    (the buffer held by SO_SNDBUF) or "tso" (the tcp_min_tso_segs control)."""
    path = Path(path)
    for compact in (path / "paper-point.csv", path / COMPACT_DIR / "paper-point.csv"):
        if compact.exists():
            return _rp_under_minrtt(pd.read_csv(compact, dtype={"min_tso_segs": str, "minrtt_rp_applied": str}))
    table = Sweep(path).summaries() if path.exists() else pd.DataFrame()
    if table.empty or "part" not in table:
        return pd.DataFrame(columns=["group", *PAPER_POINT_COLUMNS])
    keep = (table["part"] == "paper_point") & (table["detail"].isna() if "detail" in table else True)
    out = table.loc[keep, [c for c in PAPER_POINT_COLUMNS if c in table]].copy()
    out.insert(0, "group", [_group(r) for r in out["run"]])
    return _rp_under_minrtt(out.sort_values("run").reset_index(drop=True))


def _rp_under_minrtt(runs: pd.DataFrame) -> pd.DataFrame:
    """`minrtt_rp_applied` only where the minrtt scheduler ran: RP acts there alone, and runs recorded
    before the kit stopped recording it elsewhere kept, under `default`, whatever the network's last
    minrtt run had left (the reference's `default` runs read 1, the per-namespace default, or 0)."""
    if {"minrtt_rp_applied", "scheduler_applied"} <= set(runs):
        runs["minrtt_rp_applied"] = runs["minrtt_rp_applied"].where(runs["scheduler_applied"] == "minrtt")
    return runs


def paper_point_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per group, buffer, config, scheduler and tcp_min_tso_segs: n, mean goodput, sd, 95% CI
    half-width (Student's t), and the mean RP counters. Skipped runs are not counted."""
    runs = _settings(runs)
    keys = ["group", "buffer_bytes", "config", "scheduler", "min_tso_segs"]
    goodput = "goodput_transfer_mbps"
    g = runs.groupby(keys, sort=False, dropna=False).agg(n=(goodput, "size"), mean=(goodput, "mean"), sd=(goodput, "std"),
                                          opp_retrans=("rp_opp_retrans", "mean"), penalised=("rp_penalised", "mean"),
                                          mptcp_retrans=("mptcp_retrans", "mean"),
                                          sk_sndbuf=("sndbuf_effective", "max")).reset_index()
    g["ci95"] = [t95(n - 1) * sd / np.sqrt(n) if n > 1 else np.nan for sd, n in zip(g["sd"], g["n"])]
    return g


def _settings(runs: pd.DataFrame) -> pd.DataFrame:
    """The completed runs, each with its setting spelt out: the scheduler ("" for single-path TCP)
    and tcp_min_tso_segs as strings, counters NaN where a run has none."""
    runs = runs[runs["goodput_transfer_mbps"].notna()].copy()
    for c in ("scheduler", "min_tso_segs", "rp_opp_retrans", "rp_penalised", "mptcp_retrans", "sndbuf_effective"):
        if c not in runs:
            runs[c] = np.nan
    runs["scheduler"] = runs["scheduler"].where(runs["config"] == "mptcp", "")
    runs["scheduler"] = runs["scheduler"].fillna("default")
    runs["min_tso_segs"] = runs["min_tso_segs"].astype(str)
    return runs


def paper_verdicts(runs: pd.DataFrame) -> pd.DataFrame:
    """Each table's comparisons as one family of verdicts (Welch, Holm-corrected: mptcplab.judge.stats).
    schedulers / held: every MPTCP scheduler against single-path TCP on the fast path, and each
    minrtt variant against upstream's default and against each other; tso: the kernel's
    tcp_min_tso_segs against the kit's 64 for each buffer and configuration."""
    runs = _settings(runs)
    out = []
    for group, g in runs.groupby("group", sort=False):
        family, labels = [], []
        if group == "tso":
            for (buf, config), c in g.groupby(["buffer_bytes", "config"], sort=True):
                by = {t: c[c["min_tso_segs"] == t]["goodput_transfer_mbps"] for t in c["min_tso_segs"].unique()}
                if "64" in by and len(by) > 1:
                    other = next(t for t in by if t != "64")
                    family.append(stats.welch(by[other], by["64"]))
                    labels.append((f"{_kib(buf)} {config}: tcp_min_tso_segs {other} - 64", "higher", "lower"))
        else:
            mptcp = {s: g[(g["config"] == "mptcp") & (g["scheduler"] == s)]["goodput_transfer_mbps"]
                     for s in ("default", "minrtt", "minrtt+rp")}
            mptcp = {s: v for s, v in mptcp.items() if len(v)}
            tcp = g[g["config"] == "tcp-fast"]["goodput_transfer_mbps"]
            for s, v in mptcp.items():
                if len(tcp):
                    family.append(stats.welch(v, tcp))
                    labels.append((f"MPTCP {s} - single-path TCP (fast)", "MPTCP faster", "MPTCP slower"))
            for a, b in (("minrtt", "default"), ("minrtt+rp", "default"), ("minrtt+rp", "minrtt")):
                if a in mptcp and b in mptcp:
                    family.append(stats.welch(mptcp[a], mptcp[b]))
                    labels.append((f"MPTCP {a} - {b}", f"{a} faster", f"{a} slower"))
        for st, (what, more, less) in zip(stats.holm(family), labels):
            out.append({"group": group, "comparison": what, "diff": st["diff"], "lo": st["lo"], "hi": st["hi"],
                        "level": st["level"], "p_holm": st["p_holm"], "m": st["m"],
                        "verdict": stats.verdict(st, more, less), "resolved": st["resolved"],
                        "runs_needed": st["runs_needed"]})
    return pd.DataFrame(out, columns=["group", "comparison", "diff", "lo", "hi", "level", "p_holm", "m", "verdict",
                                      "resolved", "runs_needed"])


def divergence(runs: pd.DataFrame, against_paper: dict | None = None) -> str:
    """The paper-vs-this-run table's reading of the divergence from the paper's 46.8 Mbit/s, from
    the verdicts of the paper's point ("schedulers") and of the same held at the paper's 1 MiB
    ("held"): "cause measured" for the part the held runs reproduce (MPTCP brought down to or below
    single-path TCP where it was above it with upstream's larger buffer), "unexplained, tried"
    for what is left; "" without the paper's point. Held minrtt+rp against the paper's figure is the
    ledger's verdict (`against_paper`: claims.against_paper's record, Holm-corrected with the
    ledger's family), never computed here."""
    t = paper_point_table(runs)
    v = paper_verdicts(runs)
    if t.empty or "schedulers" not in set(t["group"]):
        return ""

    def reading(group):
        g, gv = t[t["group"] == group], v[v["group"] == group].set_index("comparison")
        tcp = g[g["config"] == "tcp-fast"]["mean"]
        mptcp = g[g["config"] == "mptcp"].sort_values("scheduler", key=lambda c: c.map(SCHEDULER_ORDER).fillna(9))
        per = [(r.scheduler, r.mean, r.sk_sndbuf, gv["verdict"].get(f"MPTCP {r.scheduler} - single-path TCP (fast)", "-"))
               for r in mptcp.itertuples()]
        return per, (float(tcp.iloc[0]) if len(tcp) else np.nan)

    sched, tcp = reading("schedulers")
    text = (f"at tcp_wmem 1 MiB upstream gives the MPTCP socket {sched[0][2]:,.0f} B (tcp_wmem[0] + the subflows'), "
            "the paper's kernel 1 MiB: " + ", ".join(f"{s} {m:.1f} ({w})" for s, m, _, w in sched)
            + f" against TCP {tcp:.1f} Mbit/s")
    tried = "minRTT with and without RP at tcp_wmem 1 MiB"
    if "held" not in set(t["group"]):
        return f"unexplained, tried: {tried}; {text}; the paper's 1 MiB held (SO_SNDBUF) not run yet"
    held, htcp = reading("held")
    held_text = (f"held at {held[0][2]:,.0f} B (SO_SNDBUF): " + ", ".join(f"{s} {m:.1f} ({w})" for s, m, _, w in held)
                 + f" against TCP {htcp:.1f} Mbit/s")
    down = [f"{s} {'below' if w == 'MPTCP slower' else 'no longer resolved above'} TCP"
            for s, m, _, w in held if w != "MPTCP faster"]
    if not down:
        return f"unexplained, tried: {tried}, and the paper's 1 MiB held; {text}; {held_text}"
    out = (f"cause measured, in part: the MPTCP socket's buffer together with the scheduler ({text}; {held_text}: "
           f"{', '.join(down)})")
    return out + _paper_left(against_paper, tried)


def _paper_left(record: dict | None, tried: str) -> str:
    """What the ledger's held-1MiB-vs-paper record leaves unexplained, in its own words."""
    paper = f"the paper's {PAPER['mptcp_mbps_mean']} Mbit/s"
    if record is None:
        return f"; held minrtt+rp not judged against {paper} (no ledger record)"
    iv = (f", corrected interval {record['interval'][0]:+.1f}..{record['interval'][1]:+.1f} Mbit/s"
          if record.get("interval") else "")
    if record["status"] == FAILS:
        return f"; unexplained, tried: {tried} and held at 1 MiB: held minrtt+rp stays above {paper}{iv}"
    if record["status"] == UNRESOLVED:
        return f"; held minrtt+rp against {paper}: not resolved{iv}, {record.get('runs_needed') or '?'} held runs needed"
    if record["status"] == HOLDS:
        return f"; held minrtt+rp below {paper}{iv}"
    return f"; held minrtt+rp against {paper}: {record['status']} ({record.get('note', '')})"


def _manifest_of(sweep_dir: Path, runs: pd.DataFrame) -> Path | None:
    """The first run's manifest, or the compact copy's one (manifest.json beside paper-point.csv)."""
    for m in ([sweep_dir / runs["run"].iloc[0] / "manifest.json"] if len(runs) else []) + [
            sweep_dir / "manifest.json", sweep_dir / COMPACT_DIR / "manifest.json"]:
        if m.exists():
            return m
    return None


def paper_point_setting(sweep_dir: Path | str, runs: pd.DataFrame) -> str:
    """Where and at what the [paper_point] runs ran, from the first run's manifest."""
    m = _manifest_of(Path(sweep_dir), runs)
    if runs.empty or m is None:
        return ""
    m = json.loads(m.read_text())
    links = ", ".join(f"{p['name']} {p['link']}" for p in m.get("network", {}).get("paths", []))
    plat = m["platform"]
    return f"Linux {plat['kernel_release']} ({plat['where']}); paths: {links}"


def paper_point_markdown(runs: pd.DataFrame, setting: str = "") -> str:
    """The paper-vs-this-run table at the paper's point, the same with the buffer held at the
    paper's 1 MiB, the tcp_min_tso_segs control table, and each table's corrected verdicts."""
    t = paper_point_table(runs)
    verdicts = paper_verdicts(runs)
    p_ci = t95(PAPER["mptcp_runs"] - 1) * PAPER["mptcp_mbps_sd"] / np.sqrt(PAPER["mptcp_runs"])
    head = ["| what | scheduler | n | mean Mbit/s | 95% CI | sd | MPTCP socket's sk_sndbuf | "
            "opp. retransmissions / run | penalisations / run |", "|---|---|---|---|---|---|---|---|---|"]
    lines = []
    for group, title in (("schedulers", "MPTCP's schedulers at tcp_wmem {buf} (min = default = max)"),
                         ("held", "The paper's 1 MiB held: SO_SNDBUF {buf} (the kernel doubles it)")):
        sched = t[t["group"] == group]
        if sched.empty:
            continue
        buf = _kib(sched["buffer_bytes"].iloc[0])
        lines += [f"## {title.format(buf=buf)}", ""]
        if group == "schedulers":
            lines += ["The paper's point: two 100 Mbit/s paths, 40 ms one way on the slow one, tcp_wmem 1 MiB.",
                      f"This run: {setting}." if setting else "", ""]
        else:
            lines += ["The out-of-tree kernel capped its MPTCP socket's buffer at tcp_wmem[2] (1 MiB); upstream "
                      "gives it tcp_wmem[0] + the subflows' buffers. SO_SNDBUF holds the MPTCP socket and each "
                      "subflow at 1 MiB.", ""]
        lines += head
        if group == "schedulers":
            lines.append(f"| paper: MPTCP (out-of-tree kernel) | minRTT + RP | {PAPER['mptcp_runs']} | {PAPER['mptcp_mbps_mean']} | "
                         f"± {p_ci:.1f} | {PAPER['mptcp_mbps_sd']} | 1 MiB (tcp_wmem[2]) | not stated | "
                         f"{PAPER['penalisations']} (one detailed run) |")
        sched = sched.sort_values(["config", "scheduler"],
                                  key=lambda c: c.map(SCHEDULER_ORDER).fillna(9) if c.name == "scheduler" else c)
        for r in sched.itertuples():
            what = "MPTCP" if r.config == "mptcp" else f"single-path TCP ({r.config.removeprefix('tcp-')} path)"
            sk = f"{r.sk_sndbuf:,.0f} B" if r.config == "mptcp" and r.sk_sndbuf == r.sk_sndbuf else "-"
            lines.append(f"| this run: {what} | {r.scheduler or '-'} | {r.n} | {r.mean:.1f} | {_spread(r)} | {sk} | "
                         + (f"{r.opp_retrans:.0f} | {r.penalised:.0f} |" if r.config == "mptcp" else "- | - |"))
        lines += [""] + _verdict_lines(verdicts[verdicts["group"] == group])
    tso = t[t["group"] == "tso"]
    if not tso.empty:
        lines += ["## The tcp_min_tso_segs control (MPTCP with upstream's default scheduler)", "",
                  "| tcp_wmem | config | tcp_min_tso_segs | n | mean Mbit/s | 95% CI | sd |", "|---|---|---|---|---|---|---|"]
        for r in tso.sort_values(["buffer_bytes", "config", "min_tso_segs"]).itertuples():
            lines.append(f"| {_kib(r.buffer_bytes)} | {r.config} | {r.min_tso_segs} | {r.n} | {r.mean:.1f} | "
                         f"{_spread(r)} |")
        lines += [""] + _verdict_lines(verdicts[verdicts["group"] == "tso"])
    return "\n".join(lines).rstrip("\n") + "\n"


def verdict_lines(v: pd.DataFrame, intro: str, ratio: bool = False) -> list[str]:
    """A family's verdicts as a table under `intro`: each comparison's difference in Mbit/s (with
    `ratio`, its factor), the Holm-corrected interval and its level, the verdict, and the runs per
    side that would resolve it. Lab 1's one renderer of verdicts (the paper point's tables here, the
    second place's ratios in second_place.py)."""
    if v.empty:
        return []
    out = [intro, "", f"| comparison | {'factor' if ratio else 'difference Mbit/s'} | corrected interval | level | "
           "verdict | runs needed |", "|---|---|---|---|---|---|"]
    for r in v.itertuples():
        if ratio:
            value, ci = f"{r.factor:.2f}", f"{r.lo:.2f}-{r.hi:.2f}" if r.lo == r.lo else "-"
        else:
            value, ci = f"{r.diff:+.1f}", f"[{r.lo:+.1f}, {r.hi:+.1f}]" if r.lo == r.lo else "-"
        level = f"{r.level:.1%}" if r.level == r.level else "-"
        out.append(f"| {r.comparison} | {value} | {ci} | {level} | {r.verdict} | "
                   f"{'-' if r.resolved is True else stats.fmt_runs(r.runs_needed)} |")
    return out


def holm_words(v: pd.DataFrame, these: str = "this table's") -> str:
    """Over which of a family's comparisons Holm's correction ran: those with an interval (two runs or
    more per side; the others read "too few runs"), so a quick run's table never says "over 0"."""
    m, n = int(v["m"].iloc[0]), len(v)
    if m == n:
        return f"Holm-corrected over {these} {n} comparisons"
    if m == 0:
        return f"none of {these} {n} comparisons has two runs or more per side, so none has an interval: too few runs"
    return f"Holm-corrected over the {m} of {these} {n} comparisons with two runs or more per side"


def _verdict_lines(v: pd.DataFrame) -> list[str]:
    """A paper-point table's family of verdicts (differences in Mbit/s), then a blank line."""
    if v.empty:
        return []
    return verdict_lines(v, f"Verdicts (Welch, {holm_words(v)}; \"runs needed\": per side, for the corrected "
                            "interval to exclude zero at the observed difference):") + [""]


def _spread(r) -> str:
    """The '95% CI | sd' cells: one run has neither, and says so instead of printing nan."""
    return "none (n = 1) | -" if r.n < 2 else f"± {r.ci95:.1f} | {r.sd:.1f}"


def export_paper_point(sweep_dir: Path | str, dest: Path | str) -> Path:
    """The paper's point compactly: every transfer's row (paper-point.csv), the tables
    (paper-point.md), one row of provenance per run (runs-manifest.csv: commit, kernel, place,
    sysctls as applied, parameters), the first run's full manifest (the network the checks judge
    against) and the detailed runs' tables."""
    sweep_dir, dest = Path(sweep_dir), Path(dest)
    runs = load_paper_point(sweep_dir)
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    runs.to_csv(dest / "paper-point.csv", index=False)
    pd.DataFrame([r for r in run_manifests(sweep_dir) if r["run"] in set(runs["run"]) or r["run"].startswith(
        "paper-detail-")], columns=RUN_MANIFEST_COLUMNS).to_csv(dest / "runs-manifest.csv", index=False)
    shutil.copy2(sweep_dir / runs["run"].iloc[0] / "manifest.json", dest / "manifest.json")
    for s in sorted(sweep_dir.glob("paper-detail-*/summary.json")):
        copy_run_tables(s.parent, dest / s.parent.name)
    (dest / "paper-point.md").write_text(paper_point_markdown(runs, paper_point_setting(sweep_dir, runs)))
    return dest
