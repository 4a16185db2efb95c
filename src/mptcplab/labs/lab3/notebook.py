"""Lab 3 notebook support: the input grids the students' functions are evaluated on, and the
diagnoses behind the auto-checks' hints.

The checks only see values the notebook computed (never the students' functions), so the
notebook evaluates each function on a fixed grid with `values_on_grid`, and the checks compare
those values. The diagnoses here recognise the known ways to get the models wrong, the misprints
of the paper's Appendix first, and say what to look at; the exact reference values are only
compared by hidden checks.
"""

from __future__ import annotations

import math

import numpy as np

from . import models

# (n, p, rtt, T, b) for model 1.
GRID1 = [
    (1, 1e-4, 0.06, 0.26, 1),   # one flow, low loss: close to Padhye
    (4, 1e-4, 0.06, 0.26, 1),   # four flows, low loss: close to 4 x one flow
    (2, 0.01, 0.1, 1.0, 1),     # the linear term of (17) vanishes for n = 2: easy by hand
    (5, 0.003, 0.08, 0.3, 2),   # delayed ACKs (b = 2)
    (10, 0.005, 0.06, 0.26, 1),
    (3, 0.02, 0.06, 0.26, 1),
    (6, 0.01, 0.06, 0.26, 1),
    (8, 0.2, 0.06, 0.26, 1),    # every flow in a timeout: the floor n / (T (1 + 32 p^2))
    (3, 0.5, 0.2, 0.01, 2),     # w = E[W_f] < 3: (26) says Q = 1
]
# (n, p_e, p_r, rtt, T, b) for model 2.
GRID2 = [
    (1, 1e-4, 1e-4, 0.06, 0.26, 1),   # one flow, one loss per event: close to Padhye
    (4, 0.01, 0.02, 0.1, 1.0, 1),     # j = n / 2: the linear term of (43) vanishes
    (2, 0.02, 0.2, 0.06, 0.3, 1),     # bursty: j = 10 > n, and j n / w between 1 and n
    (5, 0.01, 0.08, 0.06, 0.1, 1),    # j = 8 > n = 5
    (10, 0.002, 0.003, 0.06, 0.26, 1),
    (6, 0.005, 0.02, 0.06, 0.26, 2),
    (3, 0.03, 0.03, 0.06, 0.26, 1),   # j = 1
    (8, 0.2, 0.25, 0.06, 0.26, 1),    # saturated: every flow in a timeout
]
# (loss times in seconds, rtt) for counting loss events.
LOSS_CASES = [
    ([], 0.06),
    ([1.0], 0.06),
    ([1.0, 1.01, 1.05], 0.06),              # one window: one event
    ([1.0, 1.059, 1.061, 1.2], 0.06),       # the third is more than one RTT after the first
    ([3.0, 1.0, 2.0, 1.02], 0.06),          # unsorted input
    ([0.0, 0.05, 0.1, 0.15, 0.2], 0.06),    # a loss every 50 ms: events at 0, 0.1, 0.2
]


def values_on_grid(func, grid) -> list:
    """func(*point) for every point: a float, or a string saying what went wrong there."""
    out = []
    for point in grid:
        try:
            v = func(*point)
        except Exception as exc:  # the check reports it with the point
            out.append(f"raised {type(exc).__name__}: {exc}")
            continue
        if v is None or v is Ellipsis:
            out.append("returned nothing (None)")
        elif isinstance(v, complex):
            out.append(f"returned a complex number {v}")
        else:
            try:
                out.append(float(v))
            except (TypeError, ValueError):
                out.append(f"returned {type(v).__name__}, not a number")
    return out


def _first_problem(values, grid, name: str) -> str | None:
    if not isinstance(values, list) or len(values) != len(grid):
        return f"{name}_values should hold one value per grid point ({len(grid)}); re-run the cell that defines {name}"
    for point, v in zip(grid, values):
        if isinstance(v, str):
            return f"{name}{point} {v}"
        if not math.isfinite(v):
            return f"{name}{point} returned {v}: every point of the grid has a finite throughput"
    return None


def _complex_problem(values, grid, name: str) -> str | None:
    """A complex number at some point (returned, or met by a comparison): a negative base raised to a
    fractional power. In model 1 the only such power is q1's (1 - 1/w)^(w - 3)."""
    for point, v in zip(grid, values):
        if isinstance(v, str) and "complex" in v:
            return (f"{name}{point} {v}. Python gives a complex number for a negative base raised to a fractional "
                    "power, here q1's (1 - p_lr)^(w - 3): p_lr = 1/w with w = E[W_f], the window of (25), not 1/x "
                    "with x = E[X], the rounds of a TD period, which can be under 1")
    return None


def _unit_problem(values, ref, name: str) -> str | None:
    """Every value the same multiple of the model's (not 1): a unit, not a formula. The factor is not
    shown: with the student's own values it would give the model's."""
    v = np.array([x if isinstance(x, float) else np.nan for x in values])
    ratio = v / np.asarray(ref, dtype=float)
    if np.all(np.isfinite(ratio)) and np.allclose(ratio, ratio[0], rtol=1e-6) and not np.isclose(ratio[0], 1, rtol=1e-6):
        return (f"every value of {name} is the same multiple of the model's, so the formula is right and the unit "
                "is not: the models give packets per second (each term of B is packets over seconds), not "
                "Mbit/s or bytes per second")
    return None


def _close(values, ref, rtol=1e-6) -> np.ndarray:
    v = np.array([x if isinstance(x, float) else np.nan for x in values])
    return np.isclose(v, np.asarray(ref, dtype=float), rtol=rtol, atol=0)


def _b(n, p, rtt, x, q, z) -> float:
    """B = (1 - q/n) / (p x RTT) + q / (z (1 - p)) from a model's terms: how the diagnoses below
    rebuild the value a mistake in one term gives."""
    return (1 - q / n) / (p * x * rtt) + q / (z * (1 - p))


def _with_full_f(terms: dict, n, p, rtt, t0) -> float:
    """B with the full f(p) of (23) in z, not the algorithms' 1 + 32 p^2 (a usual mistake); terms are
    a model's (`per_flow_terms`, `cumulative_terms`, p = p_e for model 2)."""
    x, q1 = float(terms["x"]), float(terms["q1"])
    z = t0 * models.f_poly(p) / (1 - p)
    return _b(n, p, rtt, x, min(n, q1 * z / (x * rtt)), z)


def _full_f_problem(values, ref, full) -> str | None:
    differs = ~np.isclose(full, ref, rtol=1e-3)
    if differs.any() and np.all(_close(values, full)[differs]):
        return ("you used the full f(p) = 1 + p + 2p^2 + ... + 32p^6 of (23) in z: keep z = T (1 + 32 p^2) / (1 - p) "
                "as the algorithms print it (the first decision made for you in Part A)")
    return None


def _b_problem(values, grid, ref, name: str, terms: list[dict], where_b: str) -> str | None:
    """Right wherever b = 1, wrong at a point with b = 2 (and w > 3, so not the w <= 3 case): b misplaced."""
    ok = _close(values, ref)
    b1 = np.array([pt[-1] == 1 for pt in grid])
    wrong_b2 = [i for i, (pt, t) in enumerate(zip(grid, terms)) if pt[-1] != 1 and float(t["w"]) > 3 and not ok[i]]
    if ok[b1].all() and wrong_b2:
        return (f"{name} is right at every point with b = 1 and not at {name}{grid[wrong_b2[0]]}, where b = 2: "
                f"check where b appears ({where_b})")
    return None


def _saturated(value, point, terms: dict, want: float, name: str, p_name: str) -> str | None:
    """At a point where every flow is in a timeout, the mistake its value matches, named; None if it
    is right or matches none (the caller then tries the other diagnoses)."""
    n, p, rtt, t0 = point[0], point[1], point[-3], point[-2]
    x, q1, z = float(terms["x"]), float(terms["q1"]), float(terms["z"])
    if _close([value], [want])[0]:
        return None
    where = f"{name}{point} = {value:.4g}: every flow is in a timeout here"
    if _close([value], [n / z])[0]:
        return (f"{where}, and the timeout term is q E[R] / E[Z^TO] = q / (z (1 - {p_name})): E[R] = 1 / (1 - {p_name}) "
                "of (22) stays in the denominator")
    if _close([value], [_b(n, p, rtt, x, q1 * z / (x * rtt), z)])[0]:
        return f"{where}, so E[nTO] = q must be capped at n, which gives B = n / (T (1 + 32 {p_name}^2))"
    if len(point) == 6:  # model 2: p_r in z, where (23) takes the loss event rate
        p_r = point[2]
        z_r = t0 * (1 + 32 * p_r * p_r) / (1 - p_r)
        if _close([value], [_b(n, p, rtt, x, min(n, q1 * z_r / (x * rtt)), z_r)])[0]:
            return (f"{where}: z = T (1 + 32 p_e^2) / (1 - p_e) takes the loss event rate p_e, as (23) takes p "
                    "(the paper: 'instead of p we have p_e'), not the packet loss rate p_r")
    return None


def _saturated_otherwise(value, point, want, name: str, p_name: str) -> str | None:
    """A wrong value where every flow is in a timeout that matches no known mistake: what decides it."""
    if _close([value], [want])[0]:
        return None
    return (f"{name}{point} = {value:.4g}: every flow is in a timeout here, so B = n / (T (1 + 32 {p_name}^2)); "
            f"check E[nTO] = q = q1 z / (x RTT), its q1 included, its cap at n, and the timeout term "
            f"q / (z (1 - {p_name}))")


def model1_reference():
    return [models.parallel_per_flow(n, p, rtt, T, b) for n, p, rtt, T, b in GRID1]


def model1_problem(values) -> str | None:
    """None when model 1's values look right; otherwise the most likely mistake, as a hint."""
    if (msg := _complex_problem(values, GRID1, "model1") or _first_problem(values, GRID1, "model1")) is not None:
        return msg
    printed = [models.algorithm1_as_printed(*pt) for pt in GRID1]
    ref = model1_reference()
    if (msg := _unit_problem(values, ref, "model1")) is not None:
        return msg
    w = np.array([float(models.per_flow_terms(*pt)["w"]) for pt in GRID1])
    differs = ~np.isclose(printed, ref, rtol=1e-3) & (w > 3)  # the misprint, whatever was done for w <= 3
    if np.all(_close(values, printed)[differs]):
        return ("you copied Algorithm 1's q1 line as printed. Compare its first factor with equation (27): "
                "the Appendix has 1 - (1 - (1-1/w)^3), which is the probability that the first three packets "
                "get through; (26) needs sum_{k=0}^{2} A(k) = 1 - (1-1/w)^3, the probability that one of them is lost. "
                "As printed, almost every loss would be a timeout.")
    terms = [models.per_flow_terms(*pt) for pt in GRID1]  # pt: n, p, rtt, T, b
    full = [_with_full_f(t, *pt[:4]) for t, pt in zip(terms, GRID1)]
    if (msg := _full_f_problem(values, ref, full)) is not None:
        return msg
    if (msg := _b_problem(values, GRID1, ref, "model1", terms, "a and x take p b, and w = 2 n x / b")) is not None:
        return msg
    sat = GRID1.index((8, 0.2, 0.06, 0.26, 1))
    if (msg := _saturated(values[sat], GRID1[sat], terms[sat], ref[sat], "model1", "p")) is not None:
        return msg  # its value is not shown: a hidden reference
    small = GRID1.index((3, 0.5, 0.2, 0.01, 2))
    ok = _close(values, ref)
    if not ok[small] and np.delete(ok, small).all():  # only there: the w <= 3 case, not a mistake everywhere
        return (f"model1{GRID1[small]} = {values[small]:.4g}: here w = E[W_f] is below 3, and (26) says a loss "
                "in such a window is always a timeout (Q = 1); (27) is only the w > 3 case")
    low = models.pftk(1e-4, 0.06, 0.26)
    if abs(values[0] / low - 1) > 0.02:
        return (f"model1{GRID1[0]} = {values[0]:.4g}: one flow at 0.01% loss should be within 2% of Padhye's "
                "equation there (models.pftk(1e-4, 0.06, 0.26)); check a, x (E[X]) and the first term "
                "(1 - q/n) / (p x RTT)")  # not its value: the kit's model is within 2% of it
    if abs(values[1] / (4 * values[0]) - 1) > 0.02:
        return (f"model1 with n = 4 at 0.01% loss is {values[1]:.4g}, not about 4 x one flow ({4 * values[0]:.4g}): "
                "check where n appears in a, x and w = 2 n x / b")
    return _saturated_otherwise(values[sat], GRID1[sat], ref[sat], "model1", "p")


def model2_reference():
    return [models.parallel_cumulative(n, pe, pr, rtt, T, b) for n, pe, pr, rtt, T, b in GRID2]


def model2_problem(values) -> str | None:
    """None when model 2's values look right; otherwise the most likely mistake, as a hint."""
    if (msg := _first_problem(values, GRID2, "model2")) is not None:
        return msg
    ref = model2_reference()
    if (msg := _unit_problem(values, ref, "model2")) is not None:
        return msg
    cap1 = [float(models.cumulative_terms(*pt, q1_cap="1")["B"]) for pt in GRID2]
    differs = ~np.isclose(cap1, ref, rtol=1e-3)
    if np.all(_close(values, cap1)[differs]):
        return ("you capped q1 at 1, as Algorithm 2 prints it. q1 = j n / w is E[nTO'], the number of flows that "
                "time out in one loss event; equation (47) caps it at n (min(n pLost / E[W], n)), not at 1")
    terms = [models.cumulative_terms(*pt) for pt in GRID2]  # pt: n, p_e, p_r, rtt, T, b
    full = [_with_full_f(t, pt[0], pt[1], *pt[3:5]) for t, pt in zip(terms, GRID2)]
    if (msg := _full_f_problem(values, ref, full)) is not None:
        return msg
    if (msg := _b_problem(values, GRID2, ref, "model2", terms, "a and x take p_e b, and w = n x / (2 b) (1 + 3 n / j1)")):
        return msg
    ok = _close(values, ref)
    j_within_n = np.array([pt[2] / pt[1] <= pt[0] for pt in GRID2])  # j1 = j: a j/j1 mix-up cannot show there
    bursty = GRID2.index((2, 0.02, 0.2, 0.06, 0.3, 1))
    if ok[j_within_n].all() and not ok[bursty]:
        return (f"model2{GRID2[bursty]} = {values[bursty]:.4g}: here j = p_r / p_e = 10 is more than n = 2. "
                "Use j1 = min(j, n) in a, x and w (no more than n flows can be hit), but the uncapped j in q1 = j n / w")
    sat = GRID2.index((8, 0.2, 0.25, 0.06, 0.26, 1))
    if (msg := _saturated(values[sat], GRID2[sat], terms[sat], ref[sat], "model2", "p_e")) is not None:
        return msg  # its value is not shown: a hidden reference
    low = models.pftk(1e-4, 0.06, 0.26)
    if abs(values[0] / low - 1) > 0.02:
        return (f"model2{GRID2[0]} = {values[0]:.4g}: one flow at 0.01% loss (j = 1) should be within 2% of Padhye's "
                "equation there (models.pftk(1e-4, 0.06, 0.26)); check a and x against equation (43)")
    return _saturated_otherwise(values[sat], GRID2[sat], ref[sat], "model2", "p_e")


def loss_events_reference():
    from .measure import group_loss_events

    return [len(group_loss_events(t, rtt)) for t, rtt in LOSS_CASES]


def loss_events_problem(values) -> str | None:
    ref = loss_events_reference()
    if not isinstance(values, list) or len(values) != len(LOSS_CASES):
        return f"loss_event_counts should hold one count per case of nb3.LOSS_CASES ({len(LOSS_CASES)})"
    for (times, rtt), got, want in zip(LOSS_CASES, values, ref):
        if got is None or got is Ellipsis:
            return f"count_loss_events({times}, {rtt}) returned nothing (None): implement it and re-run its cell"
        if not isinstance(got, (int, np.integer)):
            return f"count_loss_events({times}, {rtt}) returned {got!r}: return the number of loss events (an int)"
        if got != want:
            hint = ""
            if sorted(times) != list(times):
                hint = " (the loss times are not sorted: sort them first)"
            elif got < want:
                hint = (" (an event lasts one RTT from its *first* loss: a loss more than one RTT after the start "
                        "of the current event opens a new one, however close the previous loss was)")
            else:
                hint = " (losses within one RTT of the first loss of an event belong to that event)"
            return f"count_loss_events({times}, {rtt}) = {got}, expected {want}{hint}"
    return None
