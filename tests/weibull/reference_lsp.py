"""Today's (before the vectorised solver) LSP ladder, kept verbatim as the reference the vectorised
:func:`dpsurv_core.weibull.lsp.compute_ladder` is checked against: one scalar safeguarded Newton solve per
rung, warm-started from the previous rungs, each root bracketed by the previous rung's."""

from __future__ import annotations

import math

import numpy as np

from dpsurv_core.errors import DataError
from dpsurv_core.weibull.lsp import Ladder
from dpsurv_core.weibull.model import GAMMA, RUNGS, WeibullSample, check_hyper, shape_root

_E = math.e


class _Sums:
    """Power sums of one sample at one p, with the n-k prefix sums over the sorted times."""

    def __init__(self, s: WeibullSample, rungs: int) -> None:
        self.lt = s.lt_u
        self.c = s.c_u
        cum = np.cumsum(s.c_u)
        keep = s.n - np.arange(rungs + 1)  # n - k records kept, k = 0..K
        # records 1..n-k: distinct times 0..j-1 in full plus r copies of distinct time j
        j = np.searchsorted(cum, keep, side="left")
        prev = np.concatenate([[0.0], cum])[j]
        self.j = j
        self.r = keep - prev


def _quad_guess(xs: list[float]) -> float:
    if len(xs) >= 3:
        return 3.0 * xs[-1] - 3.0 * xs[-2] + xs[-3]
    if len(xs) == 2:
        return 2.0 * xs[-1] - xs[-2]
    return xs[-1]


def reference_ladder(s: WeibullSample, rungs: int = RUNGS, gamma: float = GAMMA, tol: float = 1e-9) -> Ladder:
    """Algorithm 1 with dpsurv's clamping, floor rung and nesting: the sequential reference."""
    _, gamma, rungs = check_hyper(s.omega, gamma, rungs)
    D = s.n_events
    if D == 0:
        raise DataError("There are no events in the data: LSP needs at least one observed event.")
    omega, sd = s.omega, s.sum_d_lnt
    p_star = shape_root(s, upper=gamma)
    K = rungs
    raw_l = np.zeros(K + 2)
    raw_u = np.full(K + 2, gamma)
    raw_l[0] = raw_u[0] = p_star
    sums = _Sums(s, min(K, D))
    lt, c = sums.lt, sums.c
    kmax = min(K, D - 1)

    def F(k: int, p: float) -> tuple[float, float]:
        wc = np.exp(p * lt) * c
        s1v = wc * lt
        s0, s1, s2 = wc.sum(), s1v.sum(), s1v @ lt
        a = k / (_E * p)
        den = s0 + k
        val = (s1 + a) / den - 1.0 / p - (sd - k * omega) / (D - k)
        der = (s2 - a / p) / den - (s1 + a) * s1 / (den * den) + 1.0 / (p * p)
        return val, der

    def G(k: int, p: float) -> tuple[float, float]:
        w = np.exp(p * lt)
        wc = w * c
        s1v = wc * lt
        j, r = sums.j[k], sums.r[k]
        s1, s2 = s1v.sum(), s1v @ lt
        P = wc[:j].sum() + r * w[j]
        P1 = s1v[:j].sum() + r * w[j] * lt[j]
        a = k / (_E * p)
        val = (s1 - a) / P - 1.0 / p - (sd + k * omega) / (D + k)
        der = (s2 + a / p) / P - (s1 - a) * P1 / (P * P) + 1.0 / (p * p)
        return float(val), float(der)

    def newton(fun, k: int, x0: float, lo: float, hi: float, hi_known: bool) -> float:
        """Root of fun(k, .) in (lo, hi]; fun < 0 at lo+ and (if hi_known) >= 0 at hi.

        For G (hi_known False) the value at hi = gamma is checked only when Newton wants to go there.
        Returns hi when fun(hi) < 0 (F) or <= 0 (G): the missing root clamps to the end of the range.
        """
        x = min(max(x0, lo + 0.5 * (hi - lo) * 1e-3), hi)
        if not (lo < x <= hi):
            x = 0.5 * (lo + hi)
        checked_hi = hi_known
        for _ in range(100):
            v, dv = fun(k, x)
            if v < 0:
                lo = x
            else:
                hi, checked_hi = x, True
                if v == 0:
                    return x
            step = v / dv if dv > 0 else math.nan
            new = x - step
            if not math.isfinite(new) or new <= lo or new >= hi:
                if not checked_hi and (not math.isfinite(new) or new >= hi):
                    vh, _ = fun(k, hi)
                    checked_hi = True
                    if vh <= 0:
                        return hi
                    new = 0.5 * (lo + hi) if not (lo < new < hi) else new
                else:
                    new = 0.5 * (lo + hi)
            if abs(new - x) <= tol * max(x, 1e-3) or hi - lo <= 1e-15 * max(hi, 1.0):
                return new
            x = new
        return x

    hist_l: list[float] = [p_star]
    hist_u: list[float] = [p_star]
    for k in range(1, kmax + 1):
        prev = hist_l[-1]
        raw_l[k] = newton(F, k, _quad_guess(hist_l), 0.0, prev, True)
        hist_l.append(raw_l[k])
    for k in range(1, kmax + 1):
        prev = hist_u[-1]
        if prev >= gamma:
            raw_u[k:kmax + 1] = gamma
            break
        raw_u[k] = newton(G, k, _quad_guess(hist_u), prev, gamma, False)
        hist_u.append(raw_u[k])
    # floor rungs (k >= sum d) and the floor rung K+1
    raw_l[kmax + 1:] = 0.0
    raw_u[kmax + 1:] = gamma
    lower = np.minimum.accumulate(np.clip(raw_l, 0.0, gamma))
    upper = np.maximum.accumulate(np.clip(raw_u, 0.0, gamma))
    return Ladder(lower, upper, raw_l, raw_u, gamma, K, D)
