"""Reading intervals off a curve release: the cumulative incidence's band, the RMST with its interval, and a
quantile's limits where the band crosses it.

Cumulative incidence: R's conf.type formulas on 1 - I with the release's variance (the bootstrap's where it carries
the noise, the infinitesimal jackknife's otherwise). RMST: a normal interval on the log scale with the draws' root mean
squared error about the released RMST. A quantile's limits on a public grid are where the bands, read linearly between
the grid points, cross (:func:`quantile_limits`), as R reads them off its band.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from dpsurv_core.curves.kaplan_meier import (
    SurvivalCurves,
    band_quantile,
    confidence_limits,
    quantile_r,
    restricted_mean,
)
from dpsurv_core.curves.normal import two_sided_z


def incidence_limits(incidence: np.ndarray, variance: np.ndarray, conf_type: str = "log", alpha: float = 0.05,
                     complement: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Limits of a cumulative incidence I from var(I), NaN where R gives NA.

    By default R's conf.type formulas on I itself, as survfit does for a multi-state curve's pstate
    (survfit_confint with logse = FALSE: the standard error of log I is sd(I) / I; at I = 0 with no variance [0, 0]
    for plain and NA for the others, and NA at I = 1 for log-log, logit and arcsin).

    ``complement``: the same formulas on 1 - I, flipped back. A noisy release's incidence is biased up where clamped
    counts add events, and the band on 1 - I, whose long arm points down, keeps its coverage there (laplace-counts at
    n = 200: 93.7-96.3% against 89.0% on I at epsilon 0.5; benchmarks/coverage_incidence.py)."""
    p = np.asarray(incidence, float)
    var = np.asarray(variance, float)
    base = 1.0 - p if complement else p
    with np.errstate(divide="ignore", invalid="ignore"):
        v = var / base ** 2
    lo, up = confidence_limits(np.clip(base, 0.0, 1.0), np.where(base > 0, v, np.inf), conf_type, alpha)
    if complement:
        # where I = 0 but the noise leaves it uncertain, log-log, logit and arcsin are undefined on 1 - I = 1: the
        # log formula's limits, 0 to 1 - exp(-z sd), rather than no interval
        at_zero = (base >= 1.0) & (var > 0) & np.isfinite(var)
        if np.any(at_zero) and conf_type in ("log-log", "logit", "arcsin"):
            lo_log, _ = confidence_limits(np.ones_like(base), var, "log", alpha)
            lo, up = np.where(at_zero, lo_log, lo), np.where(at_zero, 1.0, up)
        return 1.0 - up, 1.0 - lo
    # R's plain interval where I = 0 with no variance (nobody has had the event yet) is [0, 0], not NA
    exact_zero = (p == 0) & (var == 0)
    if conf_type == "plain" and np.any(exact_zero):
        lo, up = np.where(exact_zero, 0.0, lo), np.where(exact_zero, 0.0, up)
    return lo, up


def nobody_left(at_risk: np.ndarray) -> np.ndarray:
    """Bool, same shape: from the first point where a (noisy, released) number at risk is 0 or below to the end; a
    curve without counts (NaN) never stops."""
    a = np.asarray(at_risk, float)
    return np.minimum.accumulate(np.where(np.isnan(a), np.inf, a), axis=-1) <= 0


def incidence_band(curves: SurvivalCurves, conf_type: str = "log") -> tuple[np.ndarray, np.ndarray] | None:
    """The cumulative incidence's band (..., G, K, J) the curves carry, None without a variance: R's formulas on I
    for exact counts (the infinitesimal jackknife's variance), on 1 - I for a noise-carrying bootstrap variance."""
    if curves.incidence_variance is None:
        return None
    noisy = curves.interval_method is not None
    lo, up = incidence_limits(curves.cumulative_incidence, curves.incidence_variance, conf_type, curves.alpha,
                              complement=noisy)
    if noisy:  # once a noisy release leaves nobody at risk, the incidence may still rise to anything up to 1
        stopped = nobody_left(curves.at_risk)[..., None, :]
        stopped = np.broadcast_to(stopped, lo.shape)
        # an incidence never falls: the last lower limit before the cut still holds (0 when there was none)
        floor = np.nan_to_num(np.fmax.accumulate(np.where(stopped, np.nan, lo), axis=-1), nan=0.0)
        lo, up = np.where(stopped, floor, lo), np.where(stopped, 1.0, up)
    return lo, up


def rmst_interval(curves: SurvivalCurves, horizon: float, coarse: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(RMST, lower, upper) (R, G) to ``horizon``. With bootstrap draws: a normal interval on the log scale,
    RMST exp(-/+ z e / RMST), e the draws' root mean squared error about the released RMST,
    e^2 = var_b(RMST*) + (mean_b(RMST*) - RMST)^2 (the spread alone, sd_b, where ``draws_offset_is_error`` is
    False). A private curve at n = 200 is biased low by clamping, its RMST skewed down and its draws lower still:
    the log scale and the offset carry that bias, which the spread alone missed (docs/coverage-curves.md). With
    the curve's noise covariance (adaptive-km), e is at least the delta method's, e^2 = R's sampling variance +
    w' Cov w (:func:`rmst_weights`), as its curve bands take the larger of the two variances;
    without noise (exact counts): R's print.survfit rule (:func:`rmst_sampling_variance`); time-indexed (a band, no
    draws): the areas under its band. ``coarse``: the curve is known at public grid points only, and every area
    reads it linearly between them (:meth:`SurvivalCurves.rmst`)."""
    z = two_sided_z(curves.alpha)
    value = curves.rmst(horizon, coarse)
    if curves.rmst_draws is not None or curves.noise_covariance is not None:
        sd = np.zeros_like(value)
        if curves.rmst_draws is not None:
            draws = replace(curves, survival=curves.rmst_draws).rmst(horizon, coarse)
            sd = draws.std(axis=1, ddof=1)
            if curves.draws_offset_is_error:
                sd = np.sqrt(sd ** 2 + (draws.mean(axis=1) - value) ** 2)
        if curves.noise_covariance is not None:
            w = rmst_weights(curves.time, horizon, coarse)
            noise = np.einsum("i,...ij,j->...", w, np.asarray(curves.noise_covariance), w)
            sd = np.maximum(sd, np.sqrt(rmst_sampling_variance(curves, horizon, coarse, value) + noise))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            spread = np.where(value > 0, np.exp(z * sd / value), np.inf)
        return value, np.where(value > 0, value / spread, 0.0), np.minimum(value * spread, horizon)
    if np.all(np.isnan(curves.greenwood)):
        if np.all(np.isnan(curves.lower)):
            nan = np.full(value.shape, np.nan)
            return value, nan, nan
        lo = replace(curves, survival=np.nan_to_num(curves.lower, nan=0.0)).rmst(horizon, coarse)
        up = replace(curves, survival=np.nan_to_num(curves.upper, nan=1.0)).rmst(horizon, coarse)
        return value, lo, up
    sd = np.sqrt(rmst_sampling_variance(curves, horizon, coarse, value))
    return value, np.maximum(value - z * sd, 0.0), np.minimum(value + z * sd, horizon)


def rmst_sampling_variance(curves: SurvivalCurves, horizon: float, coarse: bool, value: np.ndarray) -> np.ndarray:
    """R's print.survfit variance of the RMST to ``horizon``, sum_j A_j^2 d_j / (r_j (r_j - d_j)), A_j the area under
    the curve from t_j to the horizon (``value``: the RMST itself). ``coarse``: the curve is read linearly between
    public grid points and a bin's events fall inside it, so A_j runs from the bin's middle (on lung to 500 days,
    20 bins: se 11.26 against R's 11.25 on the exact times; from the bin's end, 9.8)."""
    t = np.clip(np.asarray(curves.time, float), 0.0, horizon)
    if coarse:  # a loop over the public grid's points
        mid = (np.concatenate([[0.0], t[:-1]]) + t) / 2.0
        area_after = value[..., None] - np.stack([curves.rmst(float(m), True) for m in mid], axis=-1)
    else:
        widths = np.diff(np.concatenate([t, [horizon]]))  # from t_j to the next point (or the horizon)
        area_after = np.cumsum((curves.survival * widths)[..., ::-1], axis=-1)[..., ::-1]  # A_j = int_{t_j}^h S
    r, d = curves.at_risk, curves.events
    term = np.zeros_like(r, dtype=float)
    # no term where everyone at risk has the event (R's rule; derived counts meet it to rounding, r - d ~ 1e-15)
    np.divide(d, r * (r - d), out=term, where=(r - d > 1e-9 * np.maximum(r, 1.0)) & (r > 0))
    inside = curves.time <= horizon
    return (np.where(inside, area_after, 0.0) ** 2 * term).sum(-1)


def rmst_weights(time: np.ndarray, horizon: float, coarse: bool) -> np.ndarray:
    """w (J,) with RMST = const + w . S for a curve known at ``time`` (the RMST is linear in the curve)."""
    j = len(time)
    vals = restricted_mean(np.asarray(time, float), np.vstack([np.zeros(j), np.eye(j)]), horizon, coarse)
    return vals[1:] - vals[0]



# ------------------------------------------------------------------------------------------ reading the intervals
def quantile_limits(time: np.ndarray, lower: np.ndarray, upper: np.ndarray, q: float = 0.5, coarse: bool = False,
                    curve: np.ndarray | None = None, last: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Limits of the time where S falls to ``q`` by inverting the band, as R's quantile.survfit: (where the lower
    band reaches q, where the upper band does); inf = not reached. On a grid of every time the curve steps at, each
    limit curve is read as R reads it (:func:`~dpsurv_core.curves.kaplan_meier.band_quantile`: survival's findq, its
    sorted distinct values, which differs from the first crossing where the band is not monotone).

    ``coarse``: the curve is known at the public grid's points only, and the true curve crosses q somewhere between
    two of them. Each limit is then where its band crosses q with the band read linearly between the grid points (the
    life-table convention; Collett 2015); a band equal to q over an interval keeps R's midpoint. The upper limit is at
    least ``curve``'s own quantile by R's rule (the grid point where the curve reaches q), so the interval holds the
    estimate printed beside it. In the first bin nothing is known between S(0) = 1 and the first grid point, and a
    curve that falls early is far from a straight line there (an exponential curve with its median 60% of the way into
    the first bin is at 0.31 at the bin's end, and the straight line from 1 crosses 0.5 at 73%, after the truth): where
    the lower band is at or below q at the first point (:func:`first_bin_crossing`) the lower limit is the grid's
    start (0), and where the upper band is, the upper limit is the first point, a one-sided interval as R gives
    where its band does not cross q inside the data. ``last``: each curve's last time under observation
    (:func:`quantile_r`; non-private curves only)."""
    time = np.asarray(time, float)
    if not coarse:  # every time the curve steps at: R's reading of the limit curves, monotone or not
        return band_quantile(time, lower, q, last=last), band_quantile(time, upper, q, last=last)
    lo_t, up_t = quantile_r(time, lower, q, last=last), quantile_r(time, upper, q, last=last)
    lo_t = np.where(np.isfinite(lo_t), linear_crossing(time, lower, q), lo_t)
    up_t = np.where(np.isfinite(up_t), np.minimum(linear_crossing(time, upper, q), up_t), up_t)
    lo_t = np.where(first_bin_crossing(lower, q), min(0.0, float(time[0])), lo_t)
    up_t = np.where(first_bin_crossing(upper, q), float(time[0]), up_t)
    if curve is not None:
        up_t = np.maximum(up_t, quantile_r(time, curve, q))
    return lo_t, up_t


def first_bin_crossing(band: np.ndarray, q: float, tol: float = float(np.sqrt(np.finfo(float).eps))) -> np.ndarray:
    """Bool (...): ``band`` (..., J) is at or below ``q`` at the grid's first point, so it crosses q inside the first
    bin, where the curve is not known (NaN: no)."""
    first = np.asarray(band, float)[..., 0]
    return np.nan_to_num(first, nan=np.inf) <= q + tol


def linear_crossing(time: np.ndarray, band: np.ndarray, q: float,
                    tol: float = float(np.sqrt(np.finfo(float).eps))) -> np.ndarray:
    """Along the last axis: the time where ``band``, read linearly between its grid points (from (0, 1) before the
    first; NaN points skipped), first falls to ``q``; R's midpoint rule where it equals q over an interval; inf where
    it never reaches q."""
    time = np.asarray(time, float)
    band = np.asarray(band, float)
    out = np.full(band.shape[:-1], np.inf)
    for idx in np.ndindex(band.shape[:-1]):
        ok = ~np.isnan(band[idx])
        t, y = time[ok], band[idx][ok]
        hits = np.flatnonzero(y <= q + tol)
        if hits.size == 0:
            continue
        k = int(hits[0])
        if y[k] >= q - tol:  # the band reaches q exactly: R's rule (the midpoint on a flat q)
            out[idx] = quantile_r(t, y, q)
            continue
        t0, y0 = (t[k - 1], y[k - 1]) if k > 0 else (min(0.0, t[0]), 1.0)
        out[idx] = t0 + (y0 - q) / (y0 - y[k]) * (t[k] - t0) if y0 > y[k] else t[k]
    return out
