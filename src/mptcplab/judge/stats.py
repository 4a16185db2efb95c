"""The kit's statistics, written once: t intervals, paired and Welch comparisons, Holm's correction
for a family of verdicts, and how many runs would resolve a difference.

Every lab's report, its `run` log and its notebook print what these functions return, so one
statistic has one value everywhere.

A *family* is the set of verdicts a report draws from the same runs (Lab 2: the ten paired
throughput comparisons; the four fairness comparisons; the RFC 6356 checks of all goals and
algorithms; Lab 3: n x Padhye against model 1 across groups of runs). Judging each at 95% would call about one
in twenty differences real by chance, so `holm` corrects the family: Holm's step-down procedure
(Holm 1979), which controls the family-wise error rate at `ALPHA` like Bonferroni but rejects more.
The interval printed beside each verdict is the *corrected* one, at the level of the step that
judged it (see `holm`), so "not resolved" is exactly "the corrected interval spans zero".

Quantiles come from scipy (`scipy.stats.t`, `scipy.stats.norm`). Holm's procedure is the few lines
of `holm`: statsmodels has it (`multipletests(method="holm")`), but not the matching intervals,
and it would be a large dependency for a sort and a running maximum.
"""

from __future__ import annotations

import functools
import math
from typing import Iterable

import pandas as pd

ALPHA = 0.05  # family-wise error rate of every family of verdicts
POWER = 0.8  # the power "runs needed" plans for
RUNS_LIMIT = 1000  # "runs needed" above this is reported as more than it


@functools.cache
def _st():
    """scipy.stats, imported when a statistic is first asked for: every lab's package imports this
    module, and a guest place (which only measures; the host analyses) never needs it. Its import
    was 0.43 s of the kit's 1.2 s on the host, and an emulated CPU multiplies what imports cost."""
    from scipy import stats

    return stats


def t_quantile(level: float, dof: float) -> float:
    """Two-sided Student's t quantile: the half-width multiplier of a `level` interval (0.95 ->
    t_0.975). Fractional dof (Welch) are used as they are; dof < 1 gives nan."""
    if not dof == dof or dof < 1:  # nan or too few
        return math.nan
    return float(_st().t.ppf(1 - (1 - level) / 2, dof))


def t975(dof: float) -> float:
    """Student's t 97.5% quantile (the 95% interval's multiplier) for `dof` degrees of freedom."""
    return t_quantile(0.95, dof)


def z_power() -> float:
    """The one-sided normal quantile of the planned power (0.8416 for POWER 0.8)."""
    return float(_st().norm.ppf(POWER))


def _clean(values) -> list[float]:
    return [float(x) for x in values if x == x]


def mean_ci(values, level: float = 0.95) -> tuple[float, float, int]:
    """Mean, half-width of its `level` confidence interval (Student's t, n - 1 dof), n."""
    v = _clean(values)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, 0
    m = sum(v) / n
    if n == 1:
        return m, math.nan, 1
    sd = math.sqrt(sum((x - m) ** 2 for x in v) / (n - 1))
    return m, t_quantile(level, n - 1) * sd / math.sqrt(n), n


def _p_value(diff: float, se: float, dof: float) -> float:
    """Two-sided p of a t statistic diff / se with `dof` degrees of freedom."""
    if not (se == se and dof == dof) or dof < 1:
        return math.nan
    if se == 0:
        return 0.0 if diff != 0 else 1.0
    return float(2 * _st().t.sf(abs(diff / se), dof))


def paired(a, b) -> dict:
    """a - b over the pairs two Series share by index (unpaired or missing entries dropped): mean
    difference, sd of the differences, pairs, standard error, dof and the two-sided p; plus the
    uncorrected 95% interval (`ci95`, `lo`, `hi`). `holm` replaces the interval by the corrected one."""
    a, b = pd.Series(a), pd.Series(b)
    if a.index.has_duplicates or b.index.has_duplicates:
        # pandas would pair every duplicate with every other (a cross product) and count them all
        raise ValueError("paired: the runs' keys repeat; each run must appear once per side")
    d = (a - b).dropna()
    n = len(d)
    m = float(d.mean()) if n else math.nan
    sd = float(d.std(ddof=1)) if n > 1 else math.nan
    se = sd / math.sqrt(n) if n > 1 else math.nan
    return _with_interval({"diff": m, "sd": sd, "pairs": n, "se": se, "dof": n - 1 if n > 1 else math.nan,
                           "p": _p_value(m, se, n - 1), "kind": "paired", "sds": (sd,)}, 0.95)


def welch(a, b) -> dict:
    """mean(a) - mean(b) of two independent samples (Welch's t): difference, standard error,
    Welch-Satterthwaite dof, the two-sided p and the uncorrected 95% interval."""
    b = _clean(b)
    mb = sum(b) / len(b) if b else math.nan
    sb = math.sqrt(sum((x - mb) ** 2 for x in b) / (len(b) - 1)) if len(b) > 1 else math.nan
    return _welch(_clean(a), mb, sb, len(b))


def welch_summary(a, mean: float, sd: float, n: int) -> dict:
    """mean(a) - `mean` of a sample known only by its summary (a paper's mean, sd and n), by Welch's t
    as `welch` (scipy.stats.ttest_ind_from_stats's t and p). The summary's side can get no more runs:
    `fixed` says so, and holm's `runs_needed` plans runs of `a` alone."""
    return {**_welch(_clean(a), mean, sd, n), "kind": "welch_summary", "fixed": (sd, n)}


def _welch(a: list[float], mb: float, sb: float, nb: int) -> dict:
    ma = sum(a) / len(a) if a else math.nan
    out = {"diff": ma - mb, "n": (len(a), nb), "kind": "welch"}
    if len(a) < 2 or nb < 2:
        return _with_interval({**out, "se": math.nan, "dof": math.nan, "p": math.nan, "sds": ()}, 0.95)
    sa2 = sum((x - ma) ** 2 for x in a) / (len(a) - 1)
    va, vb = sa2 / len(a), sb ** 2 / nb
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (nb - 1)) if se > 0 else len(a) + nb - 2
    return _with_interval({**out, "se": se, "dof": dof, "p": _p_value(ma - mb, se, dof),
                           "sds": (math.sqrt(sa2), sb)}, 0.95)


def _with_interval(st: dict, level: float) -> dict:
    """`st` with its `level` interval: level, half, lo, hi (and `ci95`, the 95% half-width, the
    first time)."""
    half = t_quantile(level, st["dof"]) * st["se"] if st["se"] == st["se"] else math.nan
    st.update({"level": level, "half": half, "lo": st["diff"] - half, "hi": st["diff"] + half})
    st.setdefault("ci95", half)
    return st


def runs_needed(diff: float, sd: float, level: float = 0.95, limit: int = RUNS_LIMIT,
                sd_other: float | None = None, fixed: tuple[float, int] | None = None) -> float:
    """Runs (pairs; with `sd_other`, runs per side of a Welch comparison; with `fixed`, the other
    side's (sd, n) that gets no more runs, runs of this side alone) for a `level` interval to
    exclude zero with POWER if the true difference were `diff` and the spread `sd`: the smallest n
    with (t(level, dof) + z_POWER) * se(n) <= |diff|. inf beyond `limit`, nan without a spread."""
    if not (sd == sd and diff == diff) or (sd_other is not None and sd_other != sd_other):
        return math.nan
    for n in range(2, limit + 1):
        if fixed is not None:
            va, vb = sd ** 2 / n, fixed[0] ** 2 / fixed[1]
            se, dof = math.sqrt(va + vb), (va + vb) ** 2 / (va ** 2 / (n - 1) + vb ** 2 / (fixed[1] - 1))
        elif sd_other is None:
            se, dof = sd / math.sqrt(n), n - 1
        else:
            se, dof = math.sqrt((sd ** 2 + sd_other ** 2) / n), 2 * n - 2
        if (t_quantile(level, dof) + z_power()) * se <= abs(diff):
            return float(n)
    return math.inf


def holm(family: Iterable[dict], alpha: float = ALPHA) -> list[dict]:
    """Holm's step-down correction of a family of comparisons (from `paired` / `welch`), returned in
    the family's own order (the k-th result is the k-th comparison given, whatever its p).

    Sorted by p, comparison k (0-based) of m is judged at alpha / (m - k) while every smaller p was
    rejected; the first that is not stops the procedure, and it and everything after it are not
    resolved. Each comparison gets:
      p_holm      the Holm-adjusted p (resolved iff p_holm < alpha),
      level       the confidence level of its corrected interval: 1 - alpha / (m - k) for the
                  steps that ran, the stopping step's level for those after it (a wider interval,
                  which contains zero since their p is at least the stopping one's),
      lo, hi, half  that corrected interval; it excludes zero exactly when `resolved`,
      resolved    True / False (None: too few runs for an interval),
      runs_needed runs for an interval at the same level to exclude zero with 80% power, if the
                  true difference were the observed one,
      m           the family's size.
    The uncorrected 95% half-width stays in `ci95`.
    """
    family = [dict(x) for x in family]
    m = sum(1 for x in family if x["p"] == x["p"])
    order = sorted((i for i, x in enumerate(family) if x["p"] == x["p"]), key=lambda i: family[i]["p"])
    running, stopped_level = 0.0, None
    for k, i in enumerate(order):
        x = family[i]
        running = max(running, min(1.0, (m - k) * x["p"]))
        step_level = 1 - alpha / (m - k)
        if stopped_level is None and not running < alpha:
            stopped_level = step_level
        level = step_level if stopped_level is None else stopped_level
        _with_interval(x, level)
        x.update({"p_holm": running, "resolved": running < alpha, "m": m,
                  "runs_needed": runs_needed(x["diff"], *(x["sds"][:1] or (math.nan,)), level=level,
                                             sd_other=x["sds"][1] if len(x["sds"]) > 1 else None,
                                             fixed=x.get("fixed"))})
        family[i] = x
    for x in family:
        if x["p"] != x["p"]:
            x.update({"p_holm": math.nan, "resolved": None, "m": m, "level": math.nan, "half": math.nan,
                      "lo": math.nan, "hi": math.nan, "runs_needed": math.nan})
    return family


def verdict(st: dict, more: str, less: str, same: str = "not resolved") -> str:
    """Three-way reading of a corrected comparison (from `holm`): above zero, below zero, or not
    resolved (its corrected interval spans zero)."""
    if st.get("resolved") is None:
        return "too few runs"
    if not st["resolved"]:
        return same
    return more if st["diff"] > 0 else less


def fmt_runs(n: float) -> str:
    """'runs needed' in words: a number, '> 1000', or '—' without a spread."""
    if n != n:
        return "—"
    return f"> {RUNS_LIMIT}" if math.isinf(n) else f"{int(n)}"


def log_ratio(a, b) -> dict:
    """ln(mean(a) / mean(b)) of two independent samples of positive values (e.g. MPTCP's goodput
    over single-path TCP's), as `welch` gives a difference: its standard error by the delta method
    (the se of ln(mean) is the se of the mean over the mean), Welch-Satterthwaite dof, the two-sided
    p against a ratio of 1 and the uncorrected 95% interval; exp() of diff, lo and hi is the ratio
    and its interval. `sds` are the coefficients of variation, so `runs_needed` plans runs per side."""
    a, b = _clean(a), _clean(b)
    ma = sum(a) / len(a) if a else math.nan
    mb = sum(b) / len(b) if b else math.nan
    diff = math.log(ma / mb) if ma > 0 and mb > 0 else math.nan
    out = {"diff": diff, "n": (len(a), len(b)), "kind": "log_ratio"}
    if len(a) < 2 or len(b) < 2 or diff != diff:
        return _with_interval({**out, "se": math.nan, "dof": math.nan, "p": math.nan, "sds": ()}, 0.95)
    cva = math.sqrt(sum((x - ma) ** 2 for x in a) / (len(a) - 1)) / ma
    cvb = math.sqrt(sum((x - mb) ** 2 for x in b) / (len(b) - 1)) / mb
    va, vb = cva ** 2 / len(a), cvb ** 2 / len(b)
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else len(a) + len(b) - 2
    return _with_interval({**out, "se": se, "dof": dof, "p": _p_value(diff, se, dof), "sds": (cva, cvb)}, 0.95)


def between(x: dict, y: dict) -> dict:
    """x - y of two independent estimates (from `welch` or `log_ratio`, e.g. one place's MPTCP/TCP
    ratio against another's): se from both, Satterthwaite dof, p and the uncorrected 95% interval.
    `sds` combine each side's spreads, so `runs_needed` plans runs per sample on both sides."""
    out = {"diff": x["diff"] - y["diff"], "kind": "between"}
    if not (x["se"] == x["se"] and y["se"] == y["se"]):
        return _with_interval({**out, "se": math.nan, "dof": math.nan, "p": math.nan, "sds": ()}, 0.95)
    se = math.sqrt(x["se"] ** 2 + y["se"] ** 2)
    terms = [s ** 4 / d for s, d in ((x["se"], x["dof"]), (y["se"], y["dof"])) if s > 0]
    dof = se ** 4 / sum(terms) if terms else x["dof"] + y["dof"]
    sds = tuple(math.sqrt(sum(s ** 2 for s in z["sds"])) for z in (x, y)) if x["sds"] and y["sds"] else ()
    return _with_interval({**out, "se": se, "dof": dof, "p": _p_value(out["diff"], se, dof), "sds": sds}, 0.95)
