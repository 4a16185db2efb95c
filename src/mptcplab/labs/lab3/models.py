"""TCP steady-state throughput equations: Padhye et al. (PFTK), TFRC, and the two parallel-flow
models of Damjanovic, Welzl, Telek and Heiss ("Extending the TCP steady-state throughput
equation for parallel TCP flows").

Every function returns packets per second, accepts numbers or numpy arrays (broadcast against
each other; a float comes back when every input is a scalar) and raises ValueError naming the
argument when an input is outside the model's domain.

    from mptcplab.labs.lab3 import models
    models.pftk(0.01, rtt=0.06, t0=0.26)                          # one Reno flow
    models.parallel_per_flow(4, p=0.01, rtt=0.06, t0=0.26)        # model 1, per-flow loss events
    models.parallel_cumulative(4, p_e=0.008, p_r=0.012, rtt=0.06, t0=0.26)   # model 2

Symbols (the paper's Appendix): n flows; p the loss event rate measured per flow (loss events of
all flows, at most one per flow per RTT, over all packets sent); p_e the loss event rate of the
cumulative flow (at most one loss event per RTT for the whole aggregate); p_r the packet loss
rate; rtt the round-trip time (s); t0 = T the retransmission timeout (s); b the packets
acknowledged per ACK.

How the paper's text was turned into code, and why (the lab guide explains the same):

* Model 1 follows Algorithm 1 except for its `q1` line. Algorithm 1 prints
  `q1 = (1 - (1 - (1-1/w)^3)) * (1 + (1-1/w)^3 * (1 - (1-1/w)^(w-3)))`, while equation (27),
  which the body derives from (26) with A(k) = (1 - p_lr)^k p_lr and p_lr = 1/E[W_f], gives
  `(1 - (1-1/w)^3) * (1 + (1-1/w)^3 * (1 - (1-1/w)^(w-3)))`. Term by term the second factor,
  the cap at 1 and w = E[W_f] = 2 n x / b (equation (25)) agree; the first factor has one
  `1 -` too many: it is (1-1/w)^3, the probability that the first three packets of the loss
  round get through, where (26) needs sum_{k=0}^{2} A(k) = 1 - (1-1/w)^3, the probability that
  one of them is lost. As printed, q1 tends to 1 as w grows (every loss would be a timeout, more
  so the larger the window), the opposite of (26) and of Padhye's Q ~ 3/w. So the code follows
  (26)/(27), and keeps (26)'s first case, Q = 1 for w <= 3, which the algorithm omits (there
  (1-1/w)^(w-3) is not even a real number once w < 1). `algorithm1_as_printed` is the misprint,
  kept for teaching and for the notebook's check that recognises it.
* Model 2 follows Algorithm 2 except for the cap on `q1`: q1 = j n / w is E[nTO'], the number
  of flows that time out in a loss event, which equation (47) caps at n (min(n pLost / E[W],
  n)); the algorithm's cap at 1 would allow at most one flow to time out per loss event.
* Both keep z = T (1 + 32 p^2) / (1 - p) exactly as the algorithms print it (E[Z^TO] of (23)
  with f(p) = 1 + p + 2p^2 + ... + 32p^6 shortened the way TFRC shortens it), and the
  algorithms' cap of E[nTO] at n flows.
* Neither implements the closed forms (29) or (48) directly. (29) as printed has lost the
  operator between its two fractions (it must be a minus: it is (28) expanded with B = 1/(p E[X]
  RTT)), and (28)/(29) and (48) leave E[nTO] = Q E[Z^TO] / (E[X] RTT) uncapped: at high loss
  E[nTO] exceeds n, (1 - E[nTO]/n) turns negative and so can the throughput. (48) also writes p
  where it means p_e. The algorithms cap E[nTO] at n, which gives the saturated floor
  n / (T (1 + 32 p^2)) when every flow is in a timeout.
"""

from __future__ import annotations

import numpy as np

__all__ = ["pftk", "tfrc", "parallel_per_flow", "parallel_cumulative", "algorithm1_as_printed",
           "per_flow_terms", "cumulative_terms", "timeout_probability"]


# ---------------------------------------------------------------- input checks

def _arrays(**named):
    """Broadcast the named inputs to float arrays; say which one is bad when something is."""
    arrays = {}
    for name, value in named.items():
        try:
            a = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
        if np.isnan(a).any():
            raise ValueError(f"{name} contains NaN")
        arrays[name] = a
    try:
        shaped = np.broadcast_arrays(*arrays.values())
    except ValueError:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        raise ValueError(f"input shapes do not broadcast together: {shapes}") from None
    return dict(zip(arrays, shaped))


def _require(name: str, a: np.ndarray, ok: np.ndarray, rule: str) -> None:
    if not np.all(ok):
        bad = float(np.ravel(a[~ok] if a.ndim else a)[0])
        raise ValueError(f"{name} must satisfy {rule}; got {bad!r}")


def _probability(name, a):
    _require(name, a, (a > 0) & (a < 1), "0 < " + name + " < 1")


def _positive(name, a):
    _require(name, a, np.isfinite(a) & (a > 0), f"{name} > 0 (and finite)")


def _common(v: dict) -> None:
    if "n" in v:
        _require("n", v["n"], np.isfinite(v["n"]) & (v["n"] >= 1), "n >= 1 (the number of flows)")
    _positive("rtt", v["rtt"])
    _positive("t0", v["t0"])
    _positive("b", v["b"])


def _out(x, scalar: bool):
    return float(x) if scalar else x


def _is_scalar(*values) -> bool:
    return all(np.ndim(v) == 0 for v in values)


# ---------------------------------------------------------------- single flow

def f_poly(p):
    """f(p) = 1 + p + 2p^2 + 4p^3 + 8p^4 + 16p^5 + 32p^6: Padhye's timeout back-off sum."""
    return 1 + p + 2 * p ** 2 + 4 * p ** 3 + 8 * p ** 4 + 16 * p ** 5 + 32 * p ** 6


def _q_hat_padhye(p, w):
    """Padhye's Q^(w) (his eq. 24 with the w <= 3 case of eq. 23): a loss is a timeout."""
    s = 1 - p
    ws = np.maximum(w, 3.0)
    q = (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (ws - 3))) / (1 - s ** ws)
    return np.where(w <= 3, 1.0, np.minimum(1.0, q))


def pftk(p, rtt, t0, b=1, wmax=np.inf):
    """Padhye, Firoiu, Towsley, Kurose (SIGCOMM 1998), the full model (their eq. 31), packets/s.

    E[W] = (2+b)/(3b) + sqrt(8(1-p)/(3bp) + ((2+b)/(3b))^2) is the unconstrained window; below
    the receiver window limit `wmax`:
        B = ((1-p)/p + E[W] + Q(E[W])/(1-p)) / (rtt (b E[W]/2 + 1) + Q(E[W]) t0 f(p)/(1-p))
    otherwise
        B = ((1-p)/p + wmax + Q(wmax)/(1-p)) / (rtt (b wmax/8 + (1-p)/(p wmax) + 2) + Q(wmax) t0 f(p)/(1-p))
    with Q(w) = min(1, (1-(1-p)^3)(1+(1-p)^3(1-(1-p)^(w-3))) / (1-(1-p)^w)) (1 for w <= 3) and
    f(p) = 1 + p + 2p^2 + 4p^3 + 8p^4 + 16p^5 + 32p^6.
    """
    scalar = _is_scalar(p, rtt, t0, b, wmax)
    v = _arrays(p=p, rtt=rtt, t0=t0, b=b, wmax=wmax)
    _probability("p", v["p"])
    _common(v)
    _require("wmax", v["wmax"], v["wmax"] > 0, "wmax > 0 (packets; inf for no receiver window limit)")
    p, rtt, t0, b, wmax = v["p"], v["rtt"], v["t0"], v["b"], v["wmax"]
    c = (2 + b) / (3 * b)
    ew = c + np.sqrt(8 * (1 - p) / (3 * b * p) + c ** 2)
    fp = f_poly(p)
    q_u = _q_hat_padhye(p, ew)
    free = ((1 - p) / p + ew + q_u / (1 - p)) / (rtt * (b * ew / 2 + 1) + q_u * t0 * fp / (1 - p))
    wm = np.where(np.isfinite(wmax), wmax, 1.0)  # placeholder where unused, keeps the maths finite
    q_m = _q_hat_padhye(p, wm)
    limited = ((1 - p) / p + wm + q_m / (1 - p)) / (
        rtt * (b * wm / 8 + (1 - p) / (p * wm) + 2) + q_m * t0 * fp / (1 - p))
    return _out(np.where(ew < wmax, free, limited), scalar)


def pftk_timeout_probability(p, b=1):
    """Padhye's chance that a loss indication is a timeout, Q^(p, E[W]) at his unconstrained
    window E[W] (the `free` case of `pftk`): Reno without SACK, so fewer than three duplicate
    ACKs after a loss mean a timeout."""
    p, b = np.asarray(p, dtype=float), np.asarray(b, dtype=float)
    c = (2 + b) / (3 * b)
    return _q_hat_padhye(p, c + np.sqrt(8 * (1 - p) / (3 * b * p) + c ** 2))


def tfrc(p, rtt, t0, b=1):
    """The simplified throughput equation of RFC 5348 section 3.1, in packets/s:

        X = 1 / (rtt sqrt(2bp/3) + t0 (3 sqrt(3bp/8)) p (1 + 32 p^2))

    (the RFC writes it in bytes/s with the segment size s in the numerator and t_RTO for t0).
    """
    scalar = _is_scalar(p, rtt, t0, b)
    v = _arrays(p=p, rtt=rtt, t0=t0, b=b)
    _probability("p", v["p"])
    _common(v)
    p, rtt, t0, b = v["p"], v["rtt"], v["t0"], v["b"]
    return _out(1.0 / (rtt * np.sqrt(2 * b * p / 3) + t0 * (3 * np.sqrt(3 * b * p / 8)) * p * (1 + 32 * p ** 2)),
                scalar)


# ---------------------------------------------------------------- model 1 (Algorithm 1)

def timeout_probability(w):
    """Q^_TO(w) of equations (26)/(27) with p_lr = 1/w: the chance that a loss in a window of w
    packets is a timeout. 1 for w <= 3; else min(1, (1-s^3)(1+s^3(1-s^(w-3)))), s = 1 - 1/w."""
    w = np.asarray(w, dtype=float)
    ws = np.maximum(w, 3.0)
    s = 1 - 1 / ws
    q = (1 - s ** 3) * (1 + s ** 3 * (1 - s ** (ws - 3)))
    return np.where(w <= 3, 1.0, np.minimum(1.0, q))


def timeout_probability_as_printed(w):
    """Algorithm 1's printed q1 line (with the extra `1 -`), capped at 1 as printed."""
    w = np.asarray(w, dtype=float)
    with np.errstate(invalid="ignore"):
        s = 1 - 1 / w
        q = (1 - (1 - s ** 3)) * (1 + s ** 3 * (1 - s ** (w - 3)))
    return np.minimum(1.0, q)


def per_flow_terms(n, p, rtt, t0, b=1, q_to=timeout_probability) -> dict:
    """Algorithm 1 step by step: x = E[X] (17), w = E[W_f] (25), z = E[Z^TO], q1 = Q^_TO(w)
    (26/27), q = E[nTO] (24) capped at n, and B. Arrays of the broadcast shape."""
    v = _arrays(n=n, p=p, rtt=rtt, t0=t0, b=b)
    _probability("p", v["p"])
    _common(v)
    n, p, rtt, t0, b = v["n"], v["p"], v["rtt"], v["t0"], v["b"]
    a = np.sqrt(p * b * (24 * n * n + p * b * (n * n - 4 * n + 4)))
    x = (p * b * (2 - n) + a) / (6 * n * n * p)
    w = 2 * n * x / b
    z = t0 * (1 + 32 * p * p) / (1 - p)
    q1 = q_to(w)
    q = np.minimum(n, q1 * z / (x * rtt))
    B = (1 - q / n) / (p * x * rtt) + q / (z * (1 - p))
    return {"x": x, "w": w, "z": z, "q1": q1, "q": q, "B": B}


def parallel_per_flow(n, p, rtt, t0, b=1):
    """Model 1 (Section II-A, Algorithm 1 with q1 from equation (27)): throughput of n parallel
    flows in packets/s from the per-flow loss event rate p.

        a  = sqrt(p b (24 n^2 + p b (n^2 - 4n + 4)))
        x  = (p b (2 - n) + a) / (6 n^2 p)             E[X], rounds per TD period (17)
        w  = 2 n x / b                                 E[W_f], window of the flow that loses (25)
        z  = T (1 + 32 p^2) / (1 - p)                  E[Z^TO] as the algorithm prints it
        q1 = 1 if w <= 3 else min(1, (1 - (1-1/w)^3)(1 + (1-1/w)^3 (1 - (1-1/w)^(w-3))))   (26)/(27)
        q  = min(n, q1 z / (x RTT))                    E[nTO], flows in a timeout (24)
        B  = (1 - q/n) / (p x RTT) + q / (z (1 - p))

    The printed Algorithm 1 has `1 - (1 - (1-1/w)^3)` as q1's first factor; see the module
    docstring for why this follows (26)/(27) instead.
    """
    scalar = _is_scalar(n, p, rtt, t0, b)
    return _out(per_flow_terms(n, p, rtt, t0, b)["B"], scalar)


def parallel_per_flow_consistent(n, p, rtt, t0, b=1):
    """Not the paper's model: model 1 with a self-consistent count of the flows in a timeout, a
    diagnostic the Lab 3 report uses to size what (24)'s count costs at high loss.

    (24) counts E[nTO] = r = Q E[Z^TO] / (E[X] RTT) with E[X] the rounds of a TD period of n
    *active* flows. A flow in a timeout sends nothing and makes no loss events, so with E[nTO]
    flows out the TD period lasts n / (n - E[nTO]) times longer; solving (24) with that period
    gives E[nTO] = n r / (n + r), the share of its time each flow spends in a timeout (Padhye's
    single-flow accounting) times n. Everything else as `parallel_per_flow`."""
    scalar = _is_scalar(n, p, rtt, t0, b)
    t = per_flow_terms(n, p, rtt, t0, b)
    n, p, rtt = (np.asarray(v, dtype=float) for v in (n, p, rtt))
    r = t["q1"] * t["z"] / (t["x"] * rtt)
    q = n * r / (n + r)
    return _out((1 - q / n) / (p * t["x"] * rtt) + q / (t["z"] * (1 - p)), scalar)


def algorithm1_as_printed(n, p, rtt, t0, b=1):
    """Algorithm 1 exactly as printed in the Appendix, misprinted q1 line and all (no w <= 3
    case: NaN where w < 1). For comparison only; `parallel_per_flow` is the model."""
    scalar = _is_scalar(n, p, rtt, t0, b)
    return _out(per_flow_terms(n, p, rtt, t0, b, q_to=timeout_probability_as_printed)["B"], scalar)


# ---------------------------------------------------------------- model 2 (Algorithm 2)

def cumulative_terms(n, p_e, p_r, rtt, t0, b=1, q1_cap: str = "n") -> dict:
    """Algorithm 2 step by step: j = p_r/p_e, j1 = min(j, n), x = E[X] (43), w = E[W] (40),
    z = E[Z^TO], q1 = E[nTO'] (47), q = E[nTO] capped at n, and B.

    `q1_cap="n"` is equation (47); `"1"` is the cap the algorithm prints (for comparison)."""
    v = _arrays(n=n, p_e=p_e, p_r=p_r, rtt=rtt, t0=t0, b=b)
    _probability("p_e", v["p_e"])
    _probability("p_r", v["p_r"])
    _require("p_r", v["p_r"], v["p_r"] >= v["p_e"],
             "p_r >= p_e (a loss event of the aggregate holds at least one lost packet)")
    _common(v)
    if q1_cap not in ("n", "1"):
        raise ValueError(f"q1_cap must be 'n' (equation 47) or '1' (as printed), got {q1_cap!r}")
    n, pe, pr, rtt, t0, b = v["n"], v["p_e"], v["p_r"], v["rtt"], v["t0"], v["b"]
    j = pr / pe
    j1 = np.minimum(j, n)
    a = np.sqrt(pe * b * j1 * (24 * n * n + pe * b * j1 * (n * n - 4 * n * j1 + 4 * j1 * j1)))
    x = (j1 * pe * b * (2 * j1 - n) + a) / (6 * n * n * pe)
    w = n * x / (2 * b) * (1 + 3 * n / j1)
    z = t0 * (1 + 32 * pe * pe) / (1 - pe)
    q1 = np.minimum(n if q1_cap == "n" else 1.0, j * n / w)
    q = np.minimum(n, q1 * z / (x * rtt))
    B = (1 - q / n) / (pe * x * rtt) + q / (z * (1 - pe))
    return {"j": j, "j1": j1, "x": x, "w": w, "z": z, "q1": q1, "q": q, "B": B}


def parallel_cumulative(n, p_e, p_r, rtt, t0, b=1):
    """Model 2 (Section IV-A, Algorithm 2 with the cap on q1 from equation (47)): throughput of n
    parallel flows in packets/s from the aggregate's loss event rate p_e and packet loss rate p_r.

        j  = p_r / p_e;  j1 = min(j, n)                flows hit per loss event
        a  = sqrt(p_e b j1 (24 n^2 + p_e b j1 (n^2 - 4 n j1 + 4 j1^2)))
        x  = (j1 p_e b (2 j1 - n) + a) / (6 n^2 p_e)   E[X] (43)
        w  = n x / (2b) (1 + 3n / j1)                  E[W], the aggregate's window (40)
        z  = T (1 + 32 p_e^2) / (1 - p_e)              E[Z^TO] as the algorithm prints it
        q1 = min(n, j n / w)                           E[nTO'], flows timing out per event (47)
        q  = min(n, q1 z / (x RTT))                    E[nTO]
        B  = (1 - q/n) / (p_e x RTT) + q / (z (1 - p_e))

    The printed Algorithm 2 caps q1 at 1; (47) caps it at n, which is what this does.
    """
    scalar = _is_scalar(n, p_e, p_r, rtt, t0, b)
    return _out(cumulative_terms(n, p_e, p_r, rtt, t0, b)["B"], scalar)
