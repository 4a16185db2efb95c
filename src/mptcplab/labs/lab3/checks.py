"""Lab 3's checks: `qN` the public ones (feedback, no points), `graded_qN` the hidden ones (the points).

A public check calls the student's function on the notebook's own tables and on a public draw of
the same kind of inputs the grader draws from its secret (`unseen.held_out` with PUBLIC_SEED), and
compares with the kit. On a failure it says what was expected in kind, what was found and the
likely mistake, in a few lines, never an expected value. So a function that passes the public
check passes the hidden one, unless it special-cases the inputs it was shown.

A hidden check (`graded_qN`) calls the student's function on `reference.unseen("lab3")` and
compares with `reference.expected("lab3", "qN")`, both computed out of the student's reach.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd

from ...grading.feedback import expect
from . import analysis, measure, models, notebook as nb3, unseen

PUBLIC_SEED = 3  # the public draw; the grader's draws come from its secret
RTOL = 1e-6


def _say(*parts: str) -> str:
    """A message of at most six lines of ~100 characters."""
    lines = textwrap.wrap(" ".join(p for p in parts if p), 100)
    return "\n".join(lines[:6])


def _sentence(text: str) -> str:
    """text ending in one full stop (a diagnosis may end in its own)."""
    return text.rstrip().rstrip(".") + "."


def _count(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def _public() -> np.random.Generator:
    return np.random.default_rng(PUBLIC_SEED)


def _floats(values) -> np.ndarray:
    return np.array([v if isinstance(v, float) else np.nan for v in values])


def _call(func, name: str, where: str, *args, zero_p: int = 0):
    """The student's function on a check's inputs; what it raises, as a finding (its type only).
    zero_p: how many of the inputs' runs have no loss (p = 0), the likely cause of a division by zero."""
    try:
        return func(*args)
    except Exception as exc:
        if zero_p and isinstance(exc, (ZeroDivisionError, FloatingPointError)):
            cause = (f"{zero_p} of these runs {'has' if zero_p == 1 else 'have'} no loss (p = 0): the models divide "
                     "by p, so keep only the runs with p > 0.")
        elif isinstance(exc, KeyError):  # an answer column read from the student's own tables
            cause = ("The check's own tables have the columns of the question's inputs and none of the answers: "
                     "compute, do not copy.")
        else:  # only its type: the message could quote the check's hidden inputs
            cause = "Call it on a few rows of your own table to see the error and its line."
        expect(False, _say(f"On {where}, {name} raised {type(exc).__name__}.", cause))


def _grid_mismatch(values, want) -> int | None:
    """Index of the first value not within RTOL of the kit's, or None."""
    bad = ~np.isclose(_floats(values), np.asarray(want, dtype=float), rtol=RTOL, atol=0)
    return int(np.argmax(bad)) if bad.any() else None


# ---------------------------------------------------------------- Q1, Q2: the models

def _model_check(func, name: str, grid, problem, reference_of, draw, terms: str) -> None:
    values = nb3.values_on_grid(func, grid)
    msg = problem(values)
    expect(msg is None, _say(_sentence(msg) if msg else "", "Implement it and re-run its cell."
                             if msg and "returned nothing" in msg else ""))
    for points in (grid, draw(_public())):
        values = nb3.values_on_grid(func, points)
        msg = nb3._first_problem(values, points, name)
        expect(msg is None, _say(_sentence(msg) if msg else ""))
        at = _grid_mismatch(values, reference_of(points))
        expect(at is None, _say(f"{name}{points[at] if at is not None else ''} is not the model's value there",
                                f"(more than {RTOL:g} relative from the kit's). Compare each line with {terms},",
                                "term by term: a misplaced n or b, E[W_f] vs E[W], or a cap that differs."))


def q1(model1) -> None:
    """model1(n, p, rtt, T, b) against model 1 on nb3.GRID1 and a public draw."""
    _model_check(model1, "model1", nb3.GRID1, nb3.model1_problem,
                 lambda pts: [models.parallel_per_flow(*pt) for pt in pts], unseen.grid1,
                 "E[X] (the notebook gives (17)), equations (24), (25) and (26)/(27)")


def q2(model2) -> None:
    """model2(n, p_e, p_r, rtt, T, b) against model 2 on nb3.GRID2 and a public draw."""
    _model_check(model2, "model2", nb3.GRID2, nb3.model2_problem,
                 lambda pts: [models.parallel_cumulative(*pt) for pt in pts], unseen.grid2,
                 "equations (40), (43) and (47)")


# ---------------------------------------------------------------- Q3: loss events

def _in_given_order(times, rtt: float) -> int:
    """Loss events counted without sorting the times first (a usual mistake)."""
    events, start = 0, -np.inf
    for t in times:
        if t > start + rtt:
            events, start = events + 1, t
    return events


def _events_from(times, rtt: float, inclusive: bool) -> int:
    """Loss events counted with `>=` for `>` when inclusive (a usual mistake)."""
    events, start = 0, -np.inf
    for t in sorted(times):
        if t >= start + rtt if inclusive else t > start + rtt:
            events, start = events + 1, t
    return events


def q3(count_loss_events) -> None:
    """count_loss_events(times, rtt) on nb3.LOSS_CASES and a public draw."""
    for cases in (nb3.LOSS_CASES, unseen.loss_cases(_public())):
        for times, rtt in cases:
            case = (f"count_loss_events({times}, {rtt})" if len(times) <= 6
                    else f"count_loss_events on the check's case of {len(times)} losses, rtt {rtt},")
            try:
                got = count_loss_events(list(times), rtt)
            except Exception as exc:  # the student's error, named by type only
                expect(False, _say(f"{case} raised {type(exc).__name__}."))
            want = len(measure.group_loss_events(times, rtt))
            expect(got is not None and got is not Ellipsis,
                   _say(f"{case} returned nothing (None): implement it and re-run its cell."))
            expect(isinstance(got, (int, np.integer)),
                   _say(f"{case} returned {type(got).__name__}: return the number of loss events, an int."))
            hint = ("the losses are not in time order: sort them first"
                    if list(times) != sorted(times) and got == _in_given_order(times, rtt)
                    else "a loss exactly rtt after the loss that opened the event still belongs to it: only one *more* "
                         "than rtt after opens the next (>, not >=)" if got > want and got == _events_from(times, rtt, True)
                    else "an event lasts one RTT from its *first* loss: a loss more than rtt after the loss that opened "
                         "the event opens the next one, however close the previous loss was" if got < want
                    else "losses within rtt of the loss that opened an event belong to that event")
            expect(got == want, _say(f"{case} = {got} is not the number of loss events",
                                     f"({'too few' if got < want else 'too many'}). Hint: {hint}."))


# ---------------------------------------------------------------- Q4, Q5: loss rates

def _times(losses: pd.DataFrame, by) -> dict:
    """Loss times grouped once (run, or (run, flow)) -> array: the checks' loops stay fast."""
    return {k: g.to_numpy() for k, g in losses.groupby(by)["t"]}


def _events(times, rtt: float) -> int:
    return len(measure.group_loss_events(times if times is not None else [], rtt))


def cumulative_rates_of(runs: pd.DataFrame, losses: pd.DataFrame) -> pd.DataFrame:
    """The kit's p_e and p_r per run (what Q4 asks), and p_e counted flow by flow (a usual mistake)."""
    by_run, by_flow = _times(losses, "run"), _times(losses, ["run", "flow"])
    rows = {}
    for r in runs.itertuples():
        lost = by_run.get(r.run, [])
        rows[r.run] = {"p_e": _events(lost, r.rtt) / r.packets, "p_r": len(lost) / r.packets,
                       "by_flow": sum(_events(v, r.rtt) for (run, _), v in by_flow.items() if run == r.run) / r.packets}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["p_e", "p_r", "by_flow"])


def per_flow_rate_of(runs: pd.DataFrame, flows: pd.DataFrame, losses: pd.DataFrame) -> pd.DataFrame:
    """The kit's p per run (what Q5 asks), and the usual wrong ones beside it."""
    by_run, by_flow, by_port = _times(losses, "run"), _times(losses, ["run", "flow"]), _times(losses, "flow")
    flows_of: dict = {}
    for f in flows.itertuples():  # one pass: itertuples per groupby group cost ~0.4 s a check
        flows_of.setdefault(f.run, []).append(f)
    rows = {}
    for r in runs.itertuples():
        fl = flows_of.get(r.run, [])
        ev = [_events(by_flow.get((r.run, f.flow)), f.rtt) for f in fl]
        rows[r.run] = {"p": sum(ev) / r.packets,
                       "run_rtt": sum(_events(by_flow.get((r.run, f.flow)), r.rtt) for f in fl) / r.packets,
                       "flow_packets": sum(e / f.packets for e, f in zip(ev, fl) if f.packets > 0),
                       "cumulative": _events(by_run.get(r.run), r.rtt) / r.packets,
                       "port_only": sum(_events(by_port.get(f.flow), f.rtt) for f in fl) / r.packets}
    return pd.DataFrame.from_dict(rows, orient="index", columns=["p", "run_rtt", "flow_packets", "cumulative", "port_only"])


def _table(got, name: str, runs: pd.DataFrame, columns: tuple[str, ...], losses: pd.DataFrame) -> pd.DataFrame:
    """The student's answer as a frame indexed by run, after the checks of its kind."""
    if isinstance(got, pd.Series) and columns == ("p",):
        got = got.rename("p").to_frame()
    kind = "a Series named p" if columns == ("p",) else f"a DataFrame with the columns {', '.join(columns)}"
    expect(isinstance(got, pd.DataFrame) and set(columns) <= set(got.columns),
           _say(f"{name} should return {kind}, indexed by run; it returned {type(got).__name__}"
                + (f" with the columns {list(got.columns)[:6]}." if isinstance(got, pd.DataFrame) else ".")))
    missing, extra = set(runs.run) - set(got.index), set(got.index) - set(runs.run)
    expect(not missing and not extra,
           _say(f"{name} should have one row per run of the runs it is given, indexed by run;",
                f"{_count(len(missing), 'run')} {'is' if len(missing) == 1 else 'are'} missing,",
                f"{_count(len(extra), 'row')} {'is not a run' if len(extra) == 1 else 'are not runs'}"
                + (" (set the index to the run names: .set_index('run'))." if "run" in got.columns
                   else " (the missing runs have no loss: a run without a single loss has a rate of 0)."
                   if missing and not extra and not missing & set(losses.run) else ".")))
    for col in columns:
        v = pd.to_numeric(got[col], errors="coerce")
        expect(v.notna().all() and np.isfinite(v).all(),
               _say(f"{name}: column {col} has empty (NaN) or infinite values; runs without a single loss",
                    "have a rate of 0."))
    return got


def _close(a, b) -> np.ndarray:
    return np.isclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=RTOL, atol=1e-12)


def q4(cumulative_rates, runs, losses) -> None:
    """cumulative_rates(runs, losses) -> p_e, p_r per run: on the notebook's tables and a public draw."""
    drawn = unseen.rate_tables({"runs": runs, "flows": pd.DataFrame(columns=["run", "flow", "rtt"]), "losses": losses},
                               _public())
    for r, lost, where in ((runs, losses, "your tables"), (drawn["runs"], drawn["losses"], "the check's own tables")):
        got = _table(_call(cumulative_rates, "cumulative_rates", where, r, lost), "cumulative_rates", r,
                     ("p_e", "p_r"), lost)
        want = cumulative_rates_of(r, lost).loc[list(got.index)]
        expect(_close(got.p_r, want.p_r).all(),
               _say(f"On {where}, p_r is not the packet loss rate of every run: lost packets (the run's rows of",
                    "losses) / the run's packets (`packets` in runs). Check the grouping by run."))
        bad = ~_close(got.p_e, want.p_e)
        hint = ("p_e equals p_r: count loss events (at most one per RTT), not lost packets" if _close(got.p_e, want.p_r)[bad].all()
                else "you counted each flow's events apart: p_e counts the events of all the run's losses together"
                if _close(got.p_e, want.by_flow)[bad].all()
                else "count the events of all the run's losses together, with the run's rtt from runs, over its packets")
        expect(not bad.any(), _say(f"On {where}, p_e is not the cumulative loss event rate for {int(bad.sum())} of",
                                   f"{_count(len(got), 'run')}. Hint: {hint}."))


def q5(per_flow_rate, runs, flows, losses) -> None:
    """per_flow_rate(runs, flows, losses) -> p per run: on the notebook's tables and a public draw."""
    drawn = unseen.rate_tables({"runs": runs, "flows": flows, "losses": losses}, _public())
    for r, fl, lost, where in ((runs, flows, losses, "your tables"),
                               (drawn["runs"], drawn["flows"], drawn["losses"], "the check's own tables")):
        got = _table(_call(per_flow_rate, "per_flow_rate", where, r, fl, lost), "per_flow_rate", r, ("p",), lost)
        want = per_flow_rate_of(r, fl, lost).loc[list(got.index)]
        bad = ~_close(got.p, want.p)
        hint = next((h for col, h in (
            ("port_only", "losses matched to flows of another run: a port is unique only within a run (match each "
                          "loss on run and flow)"),
            ("cumulative", "you counted the run's losses together: count each flow's loss events separately"),
            ("run_rtt", "each flow's events are counted with that flow's rtt (from flows), not the run's"),
            ("flow_packets", "add the flows' events first, then divide by the run's packets (not each flow's)"))
            if _close(got.p, want[col])[bad].all()), "count each flow's events with that flow's rtt, add them, "
                                                     "divide by the run's packets")
        expect(not bad.any(), _say(f"On {where}, p is not the per-flow loss event rate for {int(bad.sum())} of",
                                   f"{_count(len(got), 'run')}. Hint: {hint}."))


# ---------------------------------------------------------------- Q6: the models on every run

COMPARE_COLUMNS = ("measured", "model1", "model2", "err1", "err2")


def comparison_of(runs: pd.DataFrame, b: str = "model_b", measured: str = "pps") -> pd.DataFrame:
    """The kit's Q6 table (b="model_b", measured="pps"), or a wrong variant for the hints."""
    r = runs[runs.p > 0]
    bb = r[b].astype(float)
    out = pd.DataFrame({"measured": r[measured].to_numpy(),
                        "model1": np.asarray(models.parallel_per_flow(r.n, r.p, r.rtt, r["T"], bb), dtype=float),
                        "model2": np.asarray(models.parallel_cumulative(r.n, r.p_e, r.p_r, r.rtt, r["T"], bb), dtype=float),
                        "swapped": np.asarray(models.parallel_per_flow(r.n, r.p_e, r.rtt, r["T"], bb), dtype=float)},
                       index=pd.Index(r.run, name="run"))
    out["err1"] = out.model1 / out.measured - 1
    out["err2"] = out.model2 / out.measured - 1
    return out


def q6(compare, runs) -> None:
    """compare(runs): measured, model1, model2, err1, err2 per run with p > 0, on the notebook's runs and
    a public draw. Builds on Q1 and Q2 (it calls the student's models)."""
    for r, where in ((runs, "your runs"), (unseen.compare_runs(runs, _public()), "the check's own runs")):
        got = _call(compare, "compare", where, r, zero_p=int((r.p <= 0).sum()))
        expect(isinstance(got, pd.DataFrame) and set(COMPARE_COLUMNS) <= set(got.columns),
               _say(f"compare should return a DataFrame with the columns {', '.join(COMPARE_COLUMNS)};",
                    f"it returned {type(got).__name__}."))
        want = comparison_of(r)
        expect(set(got.index) == set(want.index),
               _say(f"On {where}, compare should have one row per run with p > 0, indexed by run; it has",
                    f"{_count(len(got), 'row')} for {_count(len(want), 'such run')}"
                    + (" (make the run names its index: set_index('run'))." if "run" in got.columns
                       else " (runs without a loss have no prediction).")))
        got, w, on_b = got.loc[list(want.index)], want, comparison_of(r, b="b")
        expect(_close(got.measured, w.measured).all(),
               _say(f"On {where}, measured is not the run's pps (the packets the flows sent per second,",
                    "retransmissions included: what the models' B counts)."))
        for col, other, inputs in (("model1", "Q1", "n, p (per flow), rtt, T"), ("model2", "Q2", "n, p_e, p_r, rtt, T")):
            bad = ~_close(got[col], w[col])
            hint = ("you fed b, the measured ACK ratio: the models take model_b" if _close(got[col], on_b[col])[bad].all()
                    else "model 1 takes the per-flow p, not p_e" if col == "model1" and _close(got[col], w.swapped)[bad].all()
                    else f"if {other} passes, feed it this run's {inputs} and b = model_b")
            expect(not bad.any(), _say(f"On {where}, {col} is not model {col[-1]} of the run's inputs for",
                                       f"{int(bad.sum())} of {_count(len(got), 'run')}. Hint: {hint}."))
        for col in ("err1", "err2"):
            m = got[f"model{col[-1]}"]
            hint = ("that is measured / model - 1" if _close(got[col], got.measured / m - 1).all()
                    else "a fraction, not a percentage" if _close(got[col], 100 * w[col]).all() else "")
            expect(_close(got[col], w[col]).all(),
                   _say(f"On {where}, {col} should be model / measured - 1 of its row" + (f"; {hint}." if hint else ".")))


# ---------------------------------------------------------------- Q7: which runs the bands apply to

def q7(in_scope, runs) -> None:
    """in_scope(runs): a boolean Series indexed by run, True where the bands apply; on the notebook's
    runs and a public draw (queued runs and runs at exactly 2 % among them)."""
    full = analysis.predict(runs) if "queued" not in runs else runs
    for r, where in ((full, "your runs"), (unseen.scope_runs(full, _public()), "the check's own runs")):
        got = _call(in_scope, "in_scope", where, r)
        expect(isinstance(got, pd.Series) and got.dtype == bool,
               _say("in_scope should return a boolean Series indexed by run (True where the bands apply);",
                    f"it returned {type(got).__name__}" + (f" of {got.dtype}." if isinstance(got, pd.Series) else ".")))
        expect(set(got.index) == set(r.run) and len(got) == len(r),
               _say(f"On {where}, in_scope should have one entry per run, indexed by run; it has {len(got)} for",
                    f"{_count(len(r), 'run')}."))
        want = set(analysis.graded_runs(r).run)
        chosen = set(got[got].index)
        extra, missing = chosen - want, want - chosen
        if extra or missing:  # the hint's diagnoses only for a wrong selection
            expect(False, _say(f"On {where}, in_scope",
                               " and ".join(([f"selects {_count(len(extra), 'run')} too many"] if extra else [])
                                            + ([f"misses {_count(len(missing), 'run')}"] if missing else [])) + ".",
                               f"Hint: {_q7_hint(r, chosen, want, extra, missing)}."))


def _q7_hint(r: pd.DataFrame, chosen: set, want: set, extra: set, missing: set) -> str:
    """What a wrong in_scope selection (`chosen`, `want` the right one) most likely did."""
    rows = r.set_index("run")

    def selects(runs: pd.DataFrame) -> bool:  # the rule applied to other runs gives exactly this selection
        return chosen == set(analysis.graded_runs(runs).run) != want

    p_r_hint = ("the limit is on `loss` as given: for random-loss runs that is the configured netem loss, not the "
                "measured p_r (only DropTail's `loss` is its p_r)")
    # `loss` replaced by p_r, and `<` for `<=`: on the shipped runs both can leave out the same runs
    if selects(r.assign(loss=r.p_r)):
        return (f"either {p_r_hint}; or a run at exactly 2 % loss is in (loss <= 0.02)"
                if selects(r[~np.isclose(r["loss"], 0.02)]) else p_r_hint)
    if extra and rows.loc[list(extra)].queued.astype(bool).any():
        return ("leave out the runs the `queued` column marks, using the column as given (the check's own runs "
                "mark some whatever their RTT)")
    if extra and (rows.loc[list(extra)].p <= 0).any():
        return "runs without a loss (p = 0) have nothing to compare"
    if missing and np.isclose(rows.loc[list(missing)]["loss"], 0.02).any():
        return "a run at exactly 2 % loss is in (loss <= 0.02)"
    # DropTail runs left out, or `queued` recomputed from the RTT: on runs whose DropTail queues all
    # raised the RTT above the rule's limit both leave out the same runs
    high_rtt = bool(missing) and bool((rows.loc[list(missing)].rtt
                                       > analysis.QUEUE_LIMIT * rows.loc[list(missing)].base_rtt).any())
    droptail_hint = "DropTail runs are in too: their `loss` is their measured p_r, held to the same 0.02"
    queued_hint = "a run the `queued` column does not mark is in, whatever its RTT: use the column as given"
    if selects(r[r.scenario == "random"]):
        return (f"either {droptail_hint}; or {queued_hint} (a DropTail queue raises the RTT by design)"
                if high_rtt else droptail_hint)
    if high_rtt:
        return queued_hint
    return "the limit is on `loss` (configured netem loss, or p_r under DropTail), up to 0.02 inclusive"


# ---------------------------------------------------------------- the hidden checks: the points

def _unseen(question: str, inputs, want):
    if inputs is None:  # in the checker: the grader's secret draw and the kit's answers on it
        from ...grading import reference

        inputs, want = reference.unseen("lab3"), reference.expected("lab3", question)
    return inputs, want


def graded_q1(model1, inputs=None, want=None) -> None:
    inputs, want = _unseen("q1", inputs, want)
    expect(_grid_mismatch(nb3.values_on_grid(model1, inputs["grid1"]), want) is None, "model1 differs on unseen points")


def graded_q2(model2, inputs=None, want=None) -> None:
    inputs, want = _unseen("q2", inputs, want)
    expect(_grid_mismatch(nb3.values_on_grid(model2, inputs["grid2"]), want) is None, "model2 differs on unseen points")


def graded_q3(count_loss_events, inputs=None, want=None) -> None:
    inputs, want = _unseen("q3", inputs, want)
    got = [count_loss_events(list(times), rtt) for times, rtt in inputs["loss_cases"]]
    expect(all(isinstance(g, (int, np.integer)) for g in got) and list(got) == list(want),
           "count_loss_events differs on unseen cases")


def _same_frame(got, want: pd.DataFrame, columns) -> bool:
    if isinstance(got, pd.Series):
        got = got.rename(columns[0]).to_frame()
    if not isinstance(got, pd.DataFrame) or not set(columns) <= set(got.columns) or set(got.index) != set(want.index) \
            or len(got) != len(want):
        return False
    got = got.loc[list(want.index)]
    return all(_close(pd.to_numeric(got[c], errors="coerce"), want[c]).all() for c in columns)


def graded_q4(cumulative_rates, inputs=None, want=None) -> None:
    inputs, want = _unseen("q4", inputs, want)
    expect(_same_frame(cumulative_rates(inputs["runs"], inputs["losses"]), want, ("p_e", "p_r")),
           "cumulative_rates differs on unseen tables")


def graded_q5(per_flow_rate, inputs=None, want=None) -> None:
    inputs, want = _unseen("q5", inputs, want)
    expect(_same_frame(per_flow_rate(inputs["runs"], inputs["flows"], inputs["losses"]), want.to_frame("p"), ("p",)),
           "per_flow_rate differs on unseen tables")


def graded_q6(compare, inputs=None, want=None) -> None:
    inputs, want = _unseen("q6", inputs, want)
    expect(_same_frame(compare(inputs["compare_runs"]), want, COMPARE_COLUMNS), "compare differs on unseen runs")


def graded_q7(in_scope, inputs=None, want=None) -> None:
    inputs, want = _unseen("q7", inputs, want)
    got = in_scope(inputs["scope_runs"])
    expect(isinstance(got, pd.Series) and got.dtype == bool and len(got) == len(inputs["scope_runs"])
           and sorted(got[got].index) == list(want), "in_scope differs on unseen runs")


__all__ = ["q1", "q2", "q3", "q4", "q5", "q6", "q7", "graded_q1", "graded_q2", "graded_q3", "graded_q4", "graded_q5",
           "graded_q6", "graded_q7"]
