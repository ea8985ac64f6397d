"""The censoring share behind a Weibull release's intervals: declared, or read off the data and then disclosed, and
the uniform censoring limit c that censors that share of simulated cohorts (with follow-up ending at the horizon)."""


from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.weibull.model import WeibullSample

if TYPE_CHECKING:  # a type only: the release reader (dpsurv_core.weibull.readout) imports this module without the data
    from dpsurv_core.data.public import Disclosure

def censoring_share(sample: WeibullSample, step: float = 0.05) -> float:
    """Share of subjects with no event (after normalisation), rounded to ``step`` (the default read off the data)."""
    return round(float(min(0.95, round((1.0 - sample.n_events / sample.n) / step) * step)), 4)


def censoring_disclosure(share: float) -> Disclosure:
    """The censoring share used to simulate the intervals was read off the data (rounded to 5%): outside epsilon, so a
    release with it is refused unless a person accepts it, and is then not DP as run
    (:func:`dpsurv_core.publication.declared.enforce`)."""
    from dpsurv_core.data.public import Disclosure

    return Disclosure("censoring", f"The censoring share ({share:.0%}) used to simulate the intervals was read off the "
                                   "data (rounded to 5%): declare it from the study design to avoid this disclosure.")


def n_disclosure(n: int) -> Disclosure:
    """The number of subjects whose cohorts the intervals simulate was counted in the data: the intervals of a release
    would reveal it (they reproduce only at that n), so a release with it is refused unless a person accepts it, and is
    then not DP as run (:func:`dpsurv_core.publication.declared.enforce`)."""
    from dpsurv_core.data.public import Disclosure

    return Disclosure("n", f"The number of subjects ({n}) whose cohorts the intervals simulate was counted in the "
                           "data: declare it from the study design to avoid this disclosure.")


def check_share(share: float) -> float:
    if not (math.isfinite(share) and 0.0 <= share < 1.0):
        raise ParameterError(f"The censoring share must be a number from 0 up to (not including) 1, got {share}.")
    return float(share)


def censoring_limit(shape: float, scale: float, share: float, rng: np.random.Generator, m: int = 20_000) -> float:
    """c such that censoring at min(U(0, c), 1) (follow-up ends at the horizon) censors about ``share`` of
    Weibull(shape, scale) times in normalised units (bisection, fixed sample); inf when the horizon alone censors at
    least ``share``."""
    if share <= 0.0:
        return math.inf
    t = scale * rng.exponential(size=m) ** (1.0 / shape)
    u = rng.random(m)
    if np.mean(t > 1.0) >= share:
        return math.inf
    censored = _censored_count(t, u)
    lo, hi = 1e-8 * scale, 1e4 * max(scale, 1.0)
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if censored(mid) / m > share else (lo, mid)
    return math.sqrt(lo * hi)


def _censored_count(t: np.ndarray, u: np.ndarray) -> Callable[[float], int]:
    """count(c) = the number of i with min(u_i c, 1) < t_i, exactly as that comparison counts them in floating point,
    in O(log m) per c: every t_i > 1 counts (c finite and positive); a t_i <= 1 counts when u_i c < t_i, i.e. when c
    lies below t_i / u_i (the product rounds monotonically in c), so the sorted ratios decide every i whose ratio is
    more than 1e-12 (relative) away from c, and the comparison itself the few others, every i whose t_i or u_i is
    below 1e-290 (where a ratio or a product may lose its relative precision) and every c that is not a finite
    positive number."""
    above = int(np.count_nonzero(t > 1.0))
    keep = t <= 1.0
    tk, uk = t[keep], u[keep]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        ratio = tk / uk
    sure = np.isfinite(ratio) & (tk >= 1e-290) & (uk >= 1e-290)
    order = np.argsort(ratio[sure], kind="stable")
    r, ts, us = ratio[sure][order], tk[sure][order], uk[sure][order]
    t_odd, u_odd = tk[~sure], uk[~sure]

    def count(c: float) -> int:
        if not (math.isfinite(c) and c > 0.0):
            with np.errstate(invalid="ignore", over="ignore"):
                return int(np.count_nonzero(np.minimum(u * c, 1.0) < t))
        a = int(np.searchsorted(r, c * (1.0 - 1e-12), side="left"))
        b = int(np.searchsorted(r, c * (1.0 + 1e-12), side="right"))
        near = int(np.count_nonzero(us[a:b] * c < ts[a:b]))
        with np.errstate(over="ignore"):
            return above + (r.size - b) + near + int(np.count_nonzero(u_odd * c < t_odd))

    return count


def uniform_censoring_limit(shape: float, share: float) -> float:
    """c such that U(0, c) censoring alone (no end of follow-up) censors exactly ``share`` of Weibull(shape, 1)
    times: the share censored is (1/c) int_0^c exp(-u^p) du = Gamma(1 + 1/p) P(1/p, c^p) / c (P the regularised
    lower incomplete gamma), which falls from 1 to 0 as c grows (bisection on log c). For scale lambda the limit is
    lambda c. (The time-indexed bands' cohorts, on the data's own time scale.)"""
    if share <= 0.0:
        return math.inf
    from scipy.special import gamma as gamma_fn
    from scipy.special import gammainc

    g = float(gamma_fn(1.0 + 1.0 / shape))
    lo, hi = -40.0, 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        c = math.exp(mid)
        lo, hi = (mid, hi) if g * float(gammainc(1.0 / shape, c ** shape)) / c > share else (lo, mid)
    return math.exp(0.5 * (lo + hi))


def censored_share(shape: float, scale: float, limit: float) -> float:
    """The share of Weibull(shape, scale) times censored by C = min(U(0, c), 1) (normalised units: follow-up ends at
    the horizon): (1/c) int_0^min(c, 1) S(u) du + max(0, 1 - 1/c) S(1), S(u) = exp(-(u / lambda)^p) and
    int_0^y S = lambda Gamma(1 + 1/p) P(1/p, (y / lambda)^p) (P the regularised lower incomplete gamma)."""
    return _censored_share_at(shape, scale)(limit)


def _censored_share_at(shape: float, scale: float) -> Callable[[float], float]:
    """:func:`censored_share` of Weibull(shape, scale) as a function of the limit, its constants computed once."""
    from scipy.special import gamma as gamma_fn
    from scipy.special import gammainc

    s1 = math.exp(-(1.0 / scale) ** shape)
    g = float(gamma_fn(1.0 + 1.0 / shape))

    def share_at(limit: float) -> float:
        if not math.isfinite(limit):
            return s1
        y = min(limit, 1.0)
        area = scale * g * float(gammainc(1.0 / shape, (y / scale) ** shape))
        return area / limit + max(0.0, 1.0 - 1.0 / limit) * s1

    return share_at


def exact_censoring_limit(shape: float, share: float, scale: float = 1.0) -> float:
    """c (normalised units) such that C = min(U(0, c), 1) censors exactly ``share`` of Weibull(shape, scale) times
    (:func:`censored_share` falls from 1 towards S(1) as c grows; bisection on log c); inf when the horizon alone
    censors at least ``share``."""
    if share <= 0.0:
        return math.inf
    share_at = _censored_share_at(shape, scale)
    if share_at(math.inf) >= share:
        return math.inf
    lo, hi = math.log(scale) - 40.0, math.log(scale) + 40.0
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if share_at(math.exp(mid)) > share else (lo, mid)
    return math.exp(0.5 * (lo + hi))
