"""Estimators on (noisy, post-processed) counts: free post-processing (docs/mechanisms.md).

With the distinct event times as the grid and exact counts, each equals lifelines:
- Kaplan-Meier  S(b_j) = prod_{i<=j} (1 - d_i / r_i)        (KaplanMeierFitter.survival_function_)
- Greenwood     G_j = sum_{i<=j} d_i / (r_i (r_i - d_i)), var S = S^2 G
  log-log 95% band exp(-exp(log(-log S) -/+ z sqrt(G) / log S))   (KaplanMeierFitter's default)
  linear band  S -/+ z S sqrt(G), clipped to [0, 1]                  (R's conf.type = "plain")
- Nelson-Aalen  A(b_j) = sum_{i<=j} d_i / r_i      (NelsonAalenFitter(nelson_aalen_smoothing=False))
- Aalen-Johansen cumulative incidence of type k: I_k(b_j) = sum_{i<=j} S(b_{i-1}) d_ik / r_i, its variance R's
  infinitesimal jackknife (survfit on multi-state data: the sum over subjects of dI / dw_i squared,
  :func:`incidence_variance`) and its band R's conf.type formulas on I itself (survfit_confint on pstate)
- median: first grid point with S <= 0.5 (inf: "not reached"), its 95% CI from the log-log band, by
  R survival's rule (:func:`quantile_r`; quantile.survfit, Therneau 2024): where S equals the
  quantile exactly over an interval, the midpoint of that interval.
- :func:`confidence_limits`: the five ``conf.type`` of R's survfit (plain, log, log-log, logit,
  arcsin) from the variance of log S, as R's survfit_confint computes them (Therneau 2024;
  Klein & Moeschberger 2003, section 4.3; Borgan & Liestol 1990 for arcsin).
Bins where nobody is left at risk (r <= 0) add nothing: the curve stays at its last value there.
Arrays keep the counts' leading trial axes: (..., G, J).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.normal import two_sided_z


class DeferredArray:
    """An array computed when first read, then kept: adaptive-km's noise covariance (R, G, J, J), which an RMST
    interval needs and a band does not. ``compute`` must be picklable (a ``functools.partial`` of a module-level
    function) so that a release stays cacheable; ``size`` keeps the first grid points on the last two axes."""

    def __init__(self, compute: Callable[[], np.ndarray], size: int | None = None) -> None:
        self._compute, self._size = compute, size
        self._value: np.ndarray | None = None

    def __array__(self, dtype: Any = None, copy: object = None) -> np.ndarray:
        if self._value is None:
            full = np.asarray(self._compute())
            self._value = full if self._size is None else full[..., :self._size, :self._size]
        return self._value if dtype is None else self._value.astype(dtype)

    def __getitem__(self, key: Any) -> np.ndarray:
        return np.asarray(self)[key]

    def first(self, size: int) -> DeferredArray:
        """The covariance at the first ``size`` grid points (still computed only when read)."""
        cut = DeferredArray(self._compute, size if self._size is None else min(size, self._size))
        if self._value is not None:
            cut._value = self._value[..., :size, :size]
        return cut


@dataclass(frozen=True)
class SurvivalCurves:
    """Curves on the grid's right edges ``time``; arrays are (..., G, J) (CIF: (..., G, K, J))."""

    time: np.ndarray
    groups: tuple[str, ...]
    survival: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    lower_linear: np.ndarray
    upper_linear: np.ndarray
    greenwood: np.ndarray
    at_risk: np.ndarray
    events: np.ndarray
    censored: np.ndarray
    cumulative_hazard: np.ndarray
    cumulative_incidence: np.ndarray
    event_types: tuple[str, ...]
    alpha: float = 0.05
    # set when the bands carry the privacy noise (dpsurv_core.curves.uncertainty): the var(log S) behind lower/upper,
    # the bootstrap survival draws (R, B, G, J) for RMST, and the method in a short phrase; var(I) of the cumulative
    # incidence (..., G, K, J) is the bootstrap's then, and R's infinitesimal jackknife on exact counts
    interval_variance: np.ndarray | None = None
    incidence_variance: np.ndarray | None = None
    rmst_draws: np.ndarray | None = None
    interval_method: str | None = None
    known_at: np.ndarray | None = None  # (..., G, J): points estimated directly (adaptive-km: ends of merged bins)
    # the draws' mean offset from the released curve is part of the RMST's error (clamped noisy counts bias the release
    # and its draws alike); False where the plug-in world itself offsets the draws (adaptive-km)
    draws_offset_is_error: bool = True
    # (..., G, J, J) the delta method's covariance of S due to the noise (adaptive-km): the RMST's error is then at
    # least R's sampling error plus w' Cov w (dpsurv_core.curves.uncertainty.rmst_interval)
    noise_covariance: np.ndarray | DeferredArray | None = None
    # (..., G) each curve's last time under observation (event or censoring), for R's quantile at the end of a curve
    # that stays at q; known to the non-private curves only (a private release does not publish it)
    follow_up_end: np.ndarray | None = None
    # (..., G) each curve's first time under observation (event or censoring): before it R's summary.survfit gives
    # S = 1 with limits [1, 1] for every conf.type; known to the non-private curves only
    follow_up_start: np.ndarray | None = None
    # (..., G, J) var of the Nelson-Aalen cumulative hazard, sum d / r^2 (R's std.chaz squared); exact counts only
    cumhaz_variance: np.ndarray | None = None

    def median(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Median survival and its CI by R's rule (:func:`quantile_r`): (median, lower, upper), each (..., G);
        inf = not reached. The CI comes from ``lower``/``upper`` (log-log; ``km --conf-type`` picks another)."""
        end = self.follow_up_end
        return (quantile_r(self.time, self.survival, last=end), quantile_r(self.time, self.lower, last=end),
                quantile_r(self.time, self.upper, last=end))

    def up_to(self, horizon: float) -> SurvivalCurves:
        """The curves at their times no later than ``horizon`` (follow-up ending there): a quantile the curve reaches
        only later is then 'not reached', as on a private curve restricted to the public horizon."""
        keep = np.asarray(self.time, float) <= horizon
        if keep.all():
            return self
        j = int(keep.sum())
        cut = {f.name: getattr(self, f.name)[..., :j] for f in fields(self)
               if f.name not in ("time", "groups", "event_types", "alpha", "follow_up_end", "follow_up_start",
                             "noise_covariance")
               and isinstance(getattr(self, f.name), np.ndarray) and getattr(self, f.name).shape[-1:] == keep.shape}
        if isinstance(self.noise_covariance, DeferredArray):  # (..., G, J, J): both time axes
            cut["noise_covariance"] = self.noise_covariance.first(j)
        elif self.noise_covariance is not None:
            cut["noise_covariance"] = self.noise_covariance[..., :j, :j]
        end = None if self.follow_up_end is None else np.minimum(self.follow_up_end, horizon)
        return replace(self, time=np.asarray(self.time, float)[:j], follow_up_end=end, **cut)

    def at_times(self, times: np.ndarray, what: str = "survival") -> np.ndarray:
        """Step-function values at arbitrary times (e.g. landmarks): value at the last grid point <= t."""
        arr = getattr(self, what)
        idx = np.searchsorted(self.time, np.asarray(times, float), side="right") - 1
        start = 1.0 if what in ("survival", "lower", "upper", "lower_linear", "upper_linear") else 0.0
        padded = np.concatenate([np.full(arr.shape[:-1] + (1,), start), arr], axis=-1)
        return padded[..., idx + 1]

    def rmst(self, horizon: float, linear: bool = False) -> np.ndarray:
        """Restricted mean survival time: area under the curve from time 0 to ``horizon`` (..., G).

        The curve is 1 before its first point. By default the area under the step curve, which equals
        lifelines' ``restricted_mean_survival_time`` (and R's) on the exact event-time curve. ``linear``: the
        curve is known at the points of a coarse public grid only, so it is read linearly between them from
        S(0) = 1 (the life-table convention; Collett 2015) and held after the last point; the step curve would
        overstate the area by about half a bin times the drop in each bin.
        """
        return restricted_mean(self.time, self.survival, horizon, linear)


def restricted_mean(time: np.ndarray, survival: np.ndarray, horizon: float, linear: bool = False) -> np.ndarray:
    """Area under the curve ``survival`` (..., J) known at ``time`` (J,) from 0 to ``horizon``, 1 before the first
    point: the step curve's, or read linearly between the points from S(0) = 1 (``linear``); see
    :meth:`SurvivalCurves.rmst`."""
    if not linear:
        t = np.clip(np.asarray(time, float), 0.0, horizon)
        widths = np.diff(np.concatenate([[0.0], t, [horizon]]))
        values = np.concatenate([np.ones(survival.shape[:-1] + (1,)), survival], axis=-1)
        return (values * widths).sum(-1)
    x = np.concatenate([[0.0], np.maximum(np.asarray(time, float), 0.0)])
    y = np.concatenate([np.ones(survival.shape[:-1] + (1,)), survival], axis=-1)
    a, b = x[:-1], x[1:]
    a_h, b_h = np.minimum(a, horizon), np.minimum(b, horizon)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(b > a, (b_h - a) / (b - a), 0.0)
    y_end = y[..., :-1] + (y[..., 1:] - y[..., :-1]) * np.clip(frac, 0.0, 1.0)
    inside = ((b_h - a_h) * (y[..., :-1] + y_end) / 2.0).sum(-1)
    return inside + max(horizon - x[-1], 0.0) * y[..., -1]


def first_crossing(time: np.ndarray, curve: np.ndarray, q: float = 0.5) -> np.ndarray:
    """First time where ``curve <= q`` along the last axis; inf when it never gets there."""
    below = curve <= q
    hit = below.any(-1)
    idx = below.argmax(-1)
    return np.where(hit, time[idx], np.inf)


def greenwood_bands(survival: np.ndarray, variance: np.ndarray, alpha: float = 0.05) -> tuple[np.ndarray, ...]:
    """(log-log lower, log-log upper, linear lower, linear upper) from G = var(log S), as lifelines computes them:
    exp(-exp(log(-log S) -/+ z sqrt(G) / log S)) (1 where undefined) and S -/+ z S sqrt(G) clipped to [0, 1]."""
    z = two_sided_z(alpha)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        v = np.log(survival)
        spread = z * np.sqrt(variance) / v
        lower = np.exp(-np.exp(np.log(-v) - spread))
        upper = np.exp(-np.exp(np.log(-v) + spread))
    lower = np.where(np.isnan(lower), 1.0, lower)
    upper = np.where(np.isnan(upper), 1.0, upper)
    half = z * survival * np.sqrt(variance)
    return lower, upper, np.clip(survival - half, 0.0, 1.0), np.clip(survival + half, 0.0, 1.0)


CONF_TYPES = ("plain", "log", "log-log", "logit", "arcsin")


def confidence_limits(survival: np.ndarray, variance: np.ndarray, conf_type: str = "log",
                      alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise (1 - alpha) limits of S from ``variance`` = var(log S) (Greenwood's G), as R's survfit_confint.

    With se = sqrt(G) (the standard error of log S, R's ``std.err``) and z the normal quantile:

    - plain:   S -/+ z S se, lower clipped at 0 and upper at 1
    - log:     exp(log S -/+ z se), upper clipped at 1 (R's default)
    - log-log: exp(-exp(log(-log S) -/+ z se / log S)); R's lower is the '-' branch (log S < 0)
    - logit:   on log(S/(1-S)) with standard error se / (1 - S) (= se(S) / (S (1 - S)))
    - arcsin:  on asin(sqrt S) with standard error (se / 2) sqrt(S / (1 - S)) (= se(S) / (2 sqrt(S (1 - S)))),
      kept inside [0, pi/2]

    No interval (NaN; R's NA) where S = 0 for every type, and also where S = 1 for log-log, logit and arcsin
    (R sets log-log to NA there; logit and arcsin come out 0 * inf = NaN). Plain and log give [1, 1] at S = 1.
    """
    if conf_type not in CONF_TYPES:
        raise ValueError(f"Unknown confidence interval type {conf_type!r}: choose one of {', '.join(CONF_TYPES)}.")
    z = two_sided_z(alpha)
    s = np.asarray(survival, float)
    se = np.sqrt(np.asarray(variance, float))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if conf_type == "plain":
            half = z * se * s
            lower, upper = np.maximum(s - half, 0.0), np.minimum(s + half, 1.0)
            undefined = s <= 0
        elif conf_type == "log":
            lower, upper = np.exp(np.log(s) - z * se), np.minimum(np.exp(np.log(s) + z * se), 1.0)
            undefined = s <= 0
        elif conf_type == "log-log":
            v = np.log(s)
            spread = z * se / v
            lower, upper = np.exp(-np.exp(np.log(-v) - spread)), np.exp(-np.exp(np.log(-v) + spread))
            undefined = (s <= 0) | (s >= 1)
        elif conf_type == "logit":
            centre, spread = np.log(s / (1 - s)), z * se / (1 - s)
            from scipy.special import expit  # imported where used: SciPy is heavy and most callers never need it

            lower, upper = expit(centre - spread), expit(centre + spread)  # R's 1 - 1 / (1 + exp(.)), more accurate
            undefined = (s <= 0) | (s >= 1)
        else:
            centre, spread = np.arcsin(np.sqrt(s)), 0.5 * z * se * np.sqrt(s / (1 - s))
            lower = np.sin(np.maximum(centre - spread, 0.0)) ** 2
            upper = np.sin(np.minimum(centre + spread, np.pi / 2)) ** 2
            undefined = (s <= 0) | (s >= 1)
    undefined = undefined | ~np.isfinite(se)
    return np.where(undefined, np.nan, lower), np.where(undefined, np.nan, upper)


def quantile_r(time: np.ndarray, curve: np.ndarray, q: float = 0.5,
               tol: float = float(np.sqrt(np.finfo(float).eps)), last: np.ndarray | None = None) -> np.ndarray:
    """R's quantile.survfit rule along the last axis: the first time where ``curve <= q``, except where the curve
    equals q (within ``tol``) over an interval: then the midpoint between that time and the next time the curve
    drops; when it never drops again, the midpoint with the curve's last time under observation ``last`` (..., an
    event or a censoring; R's xmax), or the last time on the axis without it. NaN values (no interval) are skipped;
    inf = not reached.

    E.g. times 1, 2, 3, 4, all events: S = 0.75, 0.5, 0.25, 0, median (2 + 3) / 2 = 2.5, as R prints; events at 1
    and 2, censorings at 5 and 9: S ends at 0.5, median (2 + 9) / 2 = 5.5 (R's special case for the curve's end).
    """
    time = np.asarray(time, float)
    curve = np.asarray(curve, float)
    out = np.full(curve.shape[:-1], np.inf)
    for idx in np.ndindex(curve.shape[:-1]):
        y = curve[idx]
        ok = ~np.isnan(y)
        hits = np.flatnonzero(ok & (y <= q + tol))
        if hits.size == 0:
            continue
        i = hits[0]
        if abs(y[i] - q) < tol:
            drops = np.flatnonzero(ok & (y < y[i] - tol) & (np.arange(y.size) > i))
            end = time[-1] if last is None or np.isnan(np.asarray(last)[idx]) else \
                max(float(np.asarray(last)[idx]), float(time[i]))
            nxt = time[drops[0]] if drops.size else end
            out[idx] = 0.5 * (time[i] + nxt)
        else:
            out[idx] = time[i]
    return out


def band_quantile(time: np.ndarray, band: np.ndarray, q: float = 0.5,
                  tol: float = float(np.sqrt(np.finfo(float).eps)), last: np.ndarray | None = None) -> np.ndarray:
    """Where a confidence limit curve ``band`` (..., J) at ``time`` (J,) reaches ``q``, as R's quantile.survfit reads
    its lower and upper curves (survival's findq, the same rule as for the estimate): the points (0, 1) and
    (t_j, band_j) are kept at their first occurrence of each value and without NaN; with y = 1 - band and p = 1 - q,
    i1 is the point with the smallest y such that y + tol >= p and i2 the point with the smallest y such that
    y - tol >= p, and the quantile is the midpoint of their times; where the last kept value equals p (within ``tol``)
    it is the midpoint of t_i1 and the curve's last time ``last`` (R's xmax; the axis's last time without it).
    inf = not reached (R's NA).

    On a non-increasing curve this is :func:`quantile_r`. A band need not be monotone (the log band's upper limit is
    clipped at 1, the plain band's lower limit at 0, and Greenwood's variance can grow faster than S falls): then the
    sorted values decide, not the first crossing in time. E.g. upper limits 0.49 at t = 45 and 0.495 at t = 48 for
    q = 0.5: R reads 48, the time of the value closest to q from below, not 45, the first time below it."""
    time = np.asarray(time, float)
    band = np.asarray(band, float)
    p = 1.0 - q
    out = np.full(band.shape[:-1], np.inf)
    for idx in np.ndindex(band.shape[:-1]):
        x = np.concatenate([[0.0], time])
        y = np.concatenate([[0.0], 1.0 - band[idx]])
        ok = ~np.isnan(y)
        if not ok.any() or y[ok].max() < p:
            continue
        xmax = float(time[-1]) if last is None or np.isnan(np.asarray(last)[idx]) else float(np.asarray(last)[idx])
        _, first = np.unique(y, return_index=True)  # NaN values sort last and each is its own
        keep = np.sort(first)
        x, y = x[keep], y[keep]
        ok = ~np.isnan(y)
        xs, ys = x[ok], y[ok]
        order = np.argsort(ys, kind="stable")
        xs, ys = xs[order], ys[order]

        def reach(shift: float, xs: np.ndarray = xs, ys: np.ndarray = ys) -> float:
            at = np.flatnonzero(ys + shift >= p)  # approx(..., method = "constant", f = 1): the next value up
            return float(xs[at[0]]) if at.size and p >= ys[0] + shift else np.nan

        t1, t2 = reach(tol), reach(-tol)
        value = 0.5 * (t1 + t2)
        if not np.isnan(y[-1]) and abs(p - y[-1]) < tol:
            value = 0.5 * (t1 + xmax)
        if np.isfinite(value):
            out[idx] = value
    return out


def actuarial_share(grid) -> float:
    """Share of a bin's censorings counted at risk for its events: 0 on the event-time grid (exact Kaplan-Meier),
    0.5 on a public grid (the actuarial life-table rule; removing them all first biases the curve down)."""
    return 0.0 if grid.kind == "event-times" else 0.5


def estimate(counts: BinnedCounts, alpha: float = 0.05, actuarial: float = 0.0,
             noisy: bool = False, exact_incidence_variance: bool = True) -> SurvivalCurves:
    """All curve estimators from one set of counts (exact or post-processed noisy).

    ``actuarial`` = a puts a share a of each bin's censorings back at risk for the bin's events
    (r_j + a c_j); a = 0.5 is the life-table rule for coarse public bins (see :func:`actuarial_share`).
    ``noisy``: the counts are a private release, so where nobody is left at risk the curve carries no
    information and its band is [0, 1], or R's no interval where the curve is already 0 (exact counts keep lifelines'
    convention: the last value and band).
    Exact counts also get the incidence's variance (:func:`incidence_variance`) unless ``exact_incidence_variance``
    is False (counts derived from a noisy release, or a caller that reads the survival curve only).

    Parameters
    ----------
    counts : BinnedCounts
        Exact or released counts.
    alpha : float, default 0.05
        One minus the bands' confidence level.
    actuarial : float, default 0.0
        Share of each bin's censorings put back at risk for its events.
    noisy : bool, default False
        The counts are a private release.
    exact_incidence_variance : bool, default True
        Give exact counts the incidence's exact variance.

    Returns
    -------
    SurvivalCurves
        Kaplan-Meier survival, Nelson-Aalen cumulative hazard, cumulative incidence, and their bands.

    References
    ----------
    .. [1] Kaplan E. L. & Meier P. (1958), Nonparametric estimation from incomplete observations, JASA 53, 457-481.
    """
    r = counts.at_risk().astype(float) + actuarial * counts.censored.astype(float)
    d = counts.events_total.astype(float)
    live = r > 0
    safe_r = np.where(live, r, 1.0)
    hazard = np.where(live, np.minimum(d, np.where(live, r, 0)) / safe_r, 0.0)
    survival = np.cumprod(1.0 - hazard, axis=-1)
    gw_term = np.zeros_like(r)
    ok = live & (r > d)
    np.divide(d, r * (r - d), out=gw_term, where=ok)
    greenwood = np.cumsum(gw_term, axis=-1)
    lower, upper, lower_lin, upper_lin = greenwood_bands(survival, greenwood, alpha)
    # a noisy release that leaves nobody at risk carries no information from there on: its band is [0, 1],
    # not a zero-width interval that would look certain; where the curve has already reached 0 R's rule stands (no
    # interval), and a noise-aware band replaces it (uncertainty.with_bootstrap_bands: 0 to the last upper limit)
    stopped = np.logical_or.accumulate(~live, axis=-1) & noisy & (survival > 0)
    lower, lower_lin = np.where(stopped, 0.0, lower), np.where(stopped, 0.0, lower_lin)
    upper, upper_lin = np.where(stopped, 1.0, upper), np.where(stopped, 1.0, upper_lin)
    cumhaz = np.cumsum(hazard, axis=-1)
    s_prev = np.concatenate([np.ones(survival.shape[:-1] + (1,)), survival[..., :-1]], axis=-1)
    dk = counts.events.astype(float)
    cif_terms = np.where(live[..., None, :], s_prev[..., None, :] * dk / safe_r[..., None, :], 0.0)
    cif = np.cumsum(cif_terms, axis=-1)
    cif_var = incidence_variance(counts, actuarial) if exact_incidence_variance and not noisy else None
    chaz_var = None if noisy else np.cumsum(np.where(live, d / safe_r ** 2, 0.0), axis=-1)
    return SurvivalCurves(counts.grid.points, counts.groups, survival, lower, upper, lower_lin, upper_lin, greenwood,
                          np.maximum(r, 0.0), d, counts.censored.astype(float), cumhaz, cif, counts.event_types, alpha,
                          incidence_variance=cif_var, cumhaz_variance=chaz_var)


def cumhaz_limits(cumhaz: np.ndarray, variance: np.ndarray, conf_type: str = "log", alpha: float = 0.05
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise (1 - alpha) limits of the cumulative hazard H from var(H) (sum d / r^2), as R draws them
    (plot.survfit with cumhaz = TRUE: survfit_confint(cumhaz, std.chaz, logse = FALSE, ulimit = FALSE)): with
    se = sd(H) / H the standard error of log H, each conf.type formula of :func:`confidence_limits` applied to H
    itself, with no upper clip at 1 (plain: H -/+ z sd(H), lower at least 0; log: H exp(-/+ z se)). log-log, logit
    and arcsin are defined for H < 1 only (R's NA above); no interval where H = 0 except plain ([0, 0])."""
    h = np.asarray(cumhaz, float)
    sd = np.sqrt(np.asarray(variance, float))
    with np.errstate(divide="ignore", invalid="ignore"):
        se_log = np.where(sd == 0, 0.0, sd / h)
    lower, upper = confidence_limits(h, se_log ** 2, conf_type, alpha)
    z = two_sided_z(alpha)
    if conf_type == "plain":
        lower, upper = np.maximum(h - z * sd, 0.0), h + z * sd
    elif conf_type == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            upper = np.where(h > 0, np.exp(np.log(h) + z * se_log), np.nan)
    elif conf_type in ("logit", "arcsin"):
        # at H = 1 exactly R's formulas meet an infinite spread: logit's upper limit is 1 - 1 / (1 + exp(Inf)) = 1 and
        # its lower limit NaN; arcsin's limits are sin(max(0, pi/2 - Inf))^2 = 0 and sin(min(pi/2, Inf))^2 = 1
        at_one = (h == 1.0) & (sd > 0)
        upper = np.where(at_one, 1.0, upper)
        if conf_type == "arcsin":
            lower = np.where(at_one, 0.0, lower)
    return lower, upper


def incidence_variance(counts: BinnedCounts, actuarial: float = 0.0) -> np.ndarray:
    """var I_k(b_j) (..., G, K, J) of the Aalen-Johansen cumulative incidence by the infinitesimal jackknife, as R's
    survfit computes the standard error of a multi-state curve: sum over subjects of U_i^2, U_i = dI / dw_i (the
    derivative with respect to subject i's case weight).

    A subject leaving in bin m (an event of type e, or censored, then counted ``actuarial`` at risk there) moves the
    hazards l_j = d_j / r_j and l_kj = d_kj / r_j, and so S and I. With f_kj = S_{j-1} l_kj, B_j = sum_{i<=j} l_i /
    (r_i (1 - l_i)) and P_k(j) = sum_{i<=j} f_ki (B_{i-1} - 1 / r_i):
    - a subject still at risk after b_j has U = P_k(j);
    - one that left in bin m <= j has U = a + Q I_k(b_j), with Q = B_{m-1} - dl_m / (1 - l_m) and
      a = P_k(m-1) + f_km B_{m-1} + S_{m-1} dl_km - Q I_k(b_m), where dl_m = (1[event] - l_m rho) / r_m,
      dl_km = (1[e = k] - l_km rho) / r_m and rho its weight in r_m (1 for an event, ``actuarial`` if censored).
    Every subject of a cell (bin, type) has the same U, so the sum runs over cells with cumulative sums: O(K^2 J).
    """
    dk = counts.events.astype(float)  # (..., G, K, J)
    c = counts.censored.astype(float)
    d = dk.sum(-2)
    r = counts.at_risk().astype(float) + actuarial * c
    live = r > 0
    safe_r = np.where(live, r, 1.0)
    lam = np.where(live, np.minimum(d, r) / safe_r, 0.0)
    lam_k = np.where(live[..., None, :], dk / safe_r[..., None, :], 0.0)
    surv = np.cumprod(1.0 - lam, axis=-1)
    s_prev = np.concatenate([np.ones(surv.shape[:-1] + (1,)), surv[..., :-1]], axis=-1)
    f = s_prev[..., None, :] * lam_k
    cif = np.cumsum(f, axis=-1)
    open_ = live & (lam < 1.0)  # once everybody at risk has had the event nothing after moves
    gap = np.where(open_, 1.0 - lam, 1.0)
    b_term = np.where(open_, lam / (safe_r * gap), 0.0)
    b_prev = np.cumsum(b_term, axis=-1) - b_term
    p_terms = f * (b_prev - np.where(live, 1.0 / safe_r, 0.0))[..., None, :]
    p_now = np.cumsum(p_terms, axis=-1)
    p_prev = p_now - p_terms
    beyond = counts.n.astype(float)[..., None] - np.cumsum(d + c, axis=-1)  # still at risk after b_j
    k_count = dk.shape[-2]
    # cells e = 0 (censored) and e = 1..K (an event of type e): weights (..., G, E, J)
    cells = np.concatenate([c[..., None, :], dk], axis=-2)
    rho = np.concatenate([[actuarial], np.ones(k_count)])[:, None]
    is_event = np.concatenate([[0.0], np.ones(k_count)])[:, None]
    inv_r = np.where(live, 1.0 / safe_r, 0.0)[..., None, :]
    dl = (is_event - lam[..., None, :] * rho) * inv_r  # (..., G, E, J)
    q = np.where(open_[..., None, :], b_prev[..., None, :] - dl / gap[..., None, :], 0.0)
    var = np.empty_like(cif)
    for k in range(k_count):
        same = np.concatenate([[0.0], np.arange(k_count) == k])[:, None]
        dl_k = (same - lam_k[..., k:k + 1, :] * rho) * inv_r  # (..., G, E, J)
        a = (p_prev[..., k:k + 1, :] + (f[..., k, :] * b_prev)[..., None, :] + s_prev[..., None, :] * dl_k
             - q * cif[..., k:k + 1, :])
        sum_aa = np.cumsum((cells * a * a).sum(-2), axis=-1)
        sum_aq = np.cumsum((cells * a * q).sum(-2), axis=-1)
        sum_qq = np.cumsum((cells * q * q).sum(-2), axis=-1)
        ck = cif[..., k, :]
        var[..., k, :] = beyond * p_now[..., k, :] ** 2 + sum_aa + 2.0 * ck * sum_aq + ck ** 2 * sum_qq
    return np.maximum(var, 0.0)
