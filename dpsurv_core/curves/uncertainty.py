"""Intervals that carry the privacy noise: a parametric bootstrap over sampling and the public noise law.

Everything here reads only a release and the mechanism's public noise law, so it is post-processing (no
budget). Simulation noise is a :class:`~dpsurv_core.privacy.noise.SimulationNoise` seeded from the released
values: the same release always gets the same interval.

Count mechanisms (laplace-counts, adaptive-km, rrr de-biased; Efron & Tibshirani 1993, parametric bootstrap):

1. Plug-in law from the released counts per group g and public bin j: n_g (rounded), censoring share
   q_gj = c_gj / (r_gj + c_gj), hazard h_gj = d_gj / (r_gj + a c_gj) (a = the actuarial share the estimator
   uses) and each event type's share of d_gj.
2. B cohorts drawn bin by bin (:func:`simulate_counts`): c ~ Bin(m, q), then d ~ Bin(m - c + a c, h) split over
   the event types, m <- m - c - d. This redraws the sampling error.
3. Each cohort goes through the mechanism's own noise and post-processing (the noise laws of
   :mod:`dpsurv_core.curves.logrank_test`): fresh noise. :func:`redraw_counts` returns these B releases.
4. The same estimator on each gives S*_b; var(log S) = var_b(S*) / S^2 (delta method) replaces Greenwood's in
   R's conf.type formulas (:func:`dpsurv_core.curves.kaplan_meier.confidence_limits`), so every band type,
   the median's and quartiles' limits (read off the band as R does) and the landmarks carry the noise.
   Cumulative incidence: var_b(I*) in R's conf.type formulas on 1 - I; RMST: a normal interval on the log scale
   with the draws' root mean squared error about the released RMST (:func:`rmst_interval`).

time-indexed releases a noisy curve and no counts. Its band inverts the mechanism's own pipeline (noise,
clipping, smoothing, running minimum; Neyman 1937): for a family of Weibull-shaped true curves S_l(t) =
exp(-(t / lam)^k), k in :data:`BAND_SHAPES`, B pipeline outputs give each point's 95% range of outputs (2.5% cut from
each tail, or 5% from one where clipping piles the outputs up at the other end: :func:`acceptance_ranges`), and the band at
t_i holds every S_l(t_i) whose range contains the released value (the union over shapes). With a declared (public)
group size n each simulated output starts from the Kaplan-Meier curve of a cohort of n subjects drawn from S_l,
censored uniformly at a declared (public) share (none: uncensored), so the band carries the sampling error too;
without a size it carries the noise only. At a total epsilon of a few units or less the noise (scale
1 / (e (1 + alpha i)) with e = total / 125 on 20 points) swamps [0, 1] and the honest band is close to [0, 1].

Reading a noisy band: a bootstrap band is made non-increasing (:func:`monotone_band`; time-indexed's inversion band is
pointwise and stays as inverted: cut back to a non-increasing band, a late point's miss would spread to the earlier
ones, and at the fixed totals it covered 90-91% at q50 and q75), keeps an upper limit where the curve
dropped to 0 (:func:`carry_upper`), spans adaptive-km's merged bins end to start (:func:`widen_between`), and a
quantile's limits on a public grid are where the bands, read linearly between the grid points, cross
(:func:`quantile_limits`).
:func:`curve_warnings` words what cannot be read. Measured coverage: docs/coverage-curves.md.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

import numpy as np
from scipy.special import ndtri

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.kaplan_meier import (
    SurvivalCurves,
    confidence_limits,
    estimate,
    greenwood_bands,
    quantile_r,
    restricted_mean,
)
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

DEFAULT_DRAWS = 200
MIN_DRAWS = 10
# cells (release trials x draws x groups x event types x bins) simulated at most per call
DRAW_BUDGET = 100_000

BOOTSTRAP_METHOD = ("parametric bootstrap: {draws} cohorts redrawn from the released counts, each passed through "
                    "the mechanism's public noise law; var(log S) from the draws on R's conf.type scale")
NOISE_ONLY = "covers the privacy noise, not the sampling error"
INVERSION_METHOD = ("inversion of the time-indexed pipeline (noise, clipping, smoothing, running minimum) over "
                    "Weibull-shaped curves (shapes 0.75 to 2), {draws} draws each: " + NOISE_ONLY
                    + " (time-indexed releases no counts)")
SAMPLING_INVERSION_METHOD = ("inversion of the time-indexed pipeline (a cohort of the declared size {sizes} drawn from "
                             "each Weibull-shaped curve (shapes 0.75 to 2), {censoring}, then noise, clipping, "
                             "smoothing, running minimum), {draws} draws each: covers the sampling error and the "
                             "privacy noise")


def draws_for(trials: int, cells: int, draws: int = DEFAULT_DRAWS) -> int:
    """Bootstrap draws per release trial: ``draws``, fewer (at least MIN_DRAWS) when many trials are simulated (a
    simulation of thousands of releases gets rougher per-trial bands rather than minutes of work)."""
    fit = DRAW_BUDGET // max(1, int(trials) * int(cells))
    return int(max(MIN_DRAWS, min(draws, fit)))


def seed_from(*arrays: np.ndarray) -> np.random.SeedSequence:
    """A seed derived from released values only (same release -> same draws -> same interval)."""
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(np.round(np.asarray(a, float), 9)).tobytes())
    digest = h.digest()
    return np.random.SeedSequence([int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4)])


# ------------------------------------------------------------------------------------------ count releases
def plugin_parameters(counts: BinnedCounts, actuarial: float = 0.0
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(n (R, G) integers, hazard h (R, G, J), type shares (R, G, K, J), censoring share q (R, G, J)) read from
    released counts (R, G, K, J): the plug-in law the bootstrap draws cohorts from."""
    r = np.maximum(counts.at_risk().astype(float), 0.0)
    c = np.maximum(counts.censored.astype(float), 0.0)
    dk = np.maximum(counts.events.astype(float), 0.0)
    d = dk.sum(-2)
    start = r + c
    q = np.clip(np.divide(c, start, out=np.zeros_like(c), where=start > 0), 0.0, 1.0)
    r_star = r + actuarial * c
    h = np.clip(np.divide(d, r_star, out=np.zeros_like(d), where=r_star > 0), 0.0, 1.0)
    share = np.divide(dk, d[..., None, :], out=np.zeros_like(dk), where=d[..., None, :] > 0)
    share[..., 0, :] += np.where(d > 0, 0.0, 1.0)  # bins without events: any share (no events are drawn)
    n = np.rint(np.maximum(counts.n.astype(float), 0.0)).astype(np.int64)
    return n, h, share, q


def simulate_counts(template: BinnedCounts, n: np.ndarray, h: np.ndarray, share: np.ndarray, q: np.ndarray,
                    draws: int, rng: np.random.Generator, actuarial: float = 0.0) -> BinnedCounts:
    """``draws`` cohorts per release trial from the plug-in law (rows R * draws, trial-major), on the public grid:
    per bin c ~ Bin(m, q) leave first, then d ~ Bin(m - c + round(a c), h) (at most m - c), split over the types."""
    rows, g = n.shape
    k_count, j_count = share.shape[-2], h.shape[-1]
    left = np.repeat(n, draws, axis=0)
    hh, qq = np.repeat(h, draws, axis=0), np.repeat(q, draws, axis=0)
    ev = np.zeros((rows * draws, g, k_count, j_count), np.int64)
    ce = np.zeros((rows * draws, g, j_count), np.int64)
    ss = np.repeat(share, draws, axis=0) if k_count > 1 else None
    for j in range(j_count):  # a loop over public bins only, vectorised over trials, draws and groups
        c = rng.binomial(left, qq[..., j])
        left = left - c
        exposed = np.minimum(left + np.rint(actuarial * c).astype(np.int64), left + c)
        d = np.minimum(rng.binomial(exposed, hh[..., j]), left)
        left = left - d
        ce[..., j] = c
        if ss is None:
            ev[..., 0, j] = d
        else:
            p = ss[..., j]
            p = p / p.sum(-1, keepdims=True)
            ev[..., j] = rng.multinomial(d, p)
    return BinnedCounts(template.grid, template.groups, np.repeat(n, draws, axis=0), ev, ce, template.event_types)


def redraw_counts(mechanism: Any, released: BinnedCounts, trials: int, seed: int | np.random.SeedSequence | None = None,
                  extra: dict[str, Any] | None = None, actuarial: float = 0.0, sampling: bool = True) -> BinnedCounts:
    """``trials`` bootstrap releases per released trial: rows (R * trials), trial-major.

    From the released counts (R, G, K, J) alone: redraw the sampling error from the plug-in law
    (:func:`plugin_parameters`, :func:`simulate_counts`; ``sampling=False`` keeps the released counts as the
    truth) and pass each cohort through ``mechanism``'s public noise law with fresh simulation noise
    (``extra``: the release's extra, which holds adaptive-km's merged bins; rrr: ``released`` are the de-biased
    counts, and the law re-randomizes the labels and de-biases). ``seed`` None: seeded from the released values.
    """
    from dpsurv_core.curves.logrank_test import noise_law  # the public noise laws, shared with the calibrated tests

    law = noise_law(mechanism, extra, debiased=True)
    apply = _rrr_by_type(mechanism) if getattr(mechanism, "name", "") == "rrr" else law.apply
    rows = released.n.shape[0]
    noise = SimulationNoise(seed_from(released.cells()) if seed is None else seed)
    plausible = getattr(mechanism, "plugin_draws", None)  # a rule whose released values hide small true ones
    if sampling and plausible is not None:
        tables = plausible(released, trials, noise.rng)
        n, h, share, q = plugin_parameters(tables, actuarial)
        cohorts = simulate_counts(released, n, h, share, q, 1, noise.rng, actuarial)
    elif sampling:
        n, h, share, q = plugin_parameters(released, actuarial)
        cohorts = simulate_counts(released, n, h, share, q, trials, noise.rng, actuarial)
    else:
        rep = lambda a: np.repeat(a, trials, axis=0)  # noqa: E731
        cohorts = replace(released, n=rep(released.n), events=rep(released.events), censored=rep(released.censored))
    trial_of = np.repeat(np.arange(rows), trials)
    return apply(cohorts, trial_of, noise)


def _rrr_by_type(mechanism: Any) -> Any:
    """Randomized response's law keeping the event types (cumulative incidence): every cell's subjects report their
    labels independently (a multinomial split of each true group's cell over the reported groups), then the
    mechanism's own de-biasing."""
    p_matrix = mechanism.matrix

    def apply(exact: BinnedCounts, rows: np.ndarray, noise: SimulationNoise) -> BinnedCounts:
        g = p_matrix.shape[0]
        rng = noise.rng

        def split(x: np.ndarray) -> np.ndarray:  # (N, G true, ...) -> (N, G reported, ...)
            x = np.asarray(np.rint(np.maximum(x, 0)), np.int64)
            probs = p_matrix.reshape((1, g) + (1,) * (x.ndim - 2) + (g,)) * np.ones(x.shape + (1,))
            return np.moveaxis(rng.multinomial(x, probs).sum(1), -1, 1)

        if mechanism.p >= 1.0:
            return exact
        ev, ce = split(exact.events), split(exact.censored)
        s = split((exact.n - exact.events_total.sum(-1) - exact.censored.sum(-1))[..., None])[..., 0]
        n = s + ev.sum((-2, -1)) + ce.sum(-1)
        return mechanism.debias(replace(exact, n=n, events=ev, censored=ce))

    return apply


@dataclass(frozen=True)
class Bootstrap:
    """Bootstrap curves (R, B, G, J) beside the released ones, and the draws' estimator settings."""

    survival: np.ndarray
    cumulative_incidence: np.ndarray  # (R, B, G, K, J)
    draws: int


def bootstrap_curves(mechanism: Any, released: BinnedCounts, estimator_actuarial: float, draws: int | None = None,
                     extra: dict[str, Any] | None = None, seed: int | np.random.SeedSequence | None = None,
                     sampling_actuarial: float | None = None) -> Bootstrap:
    """Redraw ``draws`` releases per trial (:func:`redraw_counts`) and estimate their curves as the release did."""
    rows = released.n.shape[0]
    g, k, j = released.events.shape[-3:]
    b = draws if draws is not None else draws_for(rows, g * k * j)
    a_sim = estimator_actuarial if sampling_actuarial is None else sampling_actuarial
    redrawn = redraw_counts(mechanism, released, b, seed, extra, a_sim)
    cur = estimate(redrawn, actuarial=estimator_actuarial, noisy=True)
    s = cur.survival.reshape(rows, b, *cur.survival.shape[1:])
    cif = cur.cumulative_incidence.reshape(rows, b, *cur.cumulative_incidence.shape[1:])
    return Bootstrap(s, cif, b)


def log_variance_from(survival: np.ndarray, draws: np.ndarray, offset: bool = False) -> np.ndarray:
    """var(log S) (R, G, J) by the delta method from the draws: var_b(S*) / S^2, or their mean squared error about the
    released curve, (var_b(S*) + (mean_b(S*) - S)^2) / S^2, with ``offset`` (inf where S = 0)."""
    var = draws.var(axis=1, ddof=1)
    if offset:
        var = var + (draws.mean(axis=1) - survival) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        out = var / survival ** 2
    return np.where(survival > 0, out, np.inf)


def with_bootstrap_bands(curves: SurvivalCurves, boot: Bootstrap, method: str | None = None, offset: bool = False
                         ) -> SurvivalCurves:
    """The release's curves with bands from the bootstrap variance (log-log and plain, as ``estimate`` names them);
    where nobody is left at risk the band runs from 0 to the last upper limit before. ``offset``: from the draws'
    mean squared error about the released curve instead (random rounding, whose plug-in world offsets the draws by
    about the release's own bias late in follow-up)."""
    v = log_variance_from(curves.survival, boot.survival, offset)
    v = np.where(np.isfinite(v), v, curves.greenwood)
    lo, up, lo_lin, up_lin = greenwood_bands(curves.survival, v, curves.alpha)
    stopped = (curves.lower == 0) & (curves.upper == 1) & (curves.at_risk <= 0)
    lo, lo_lin = np.where(curves.survival <= 0, 0.0, lo), np.where(curves.survival <= 0, 0.0, lo_lin)
    up, up_lin = carry_upper(curves.survival, up), carry_upper(curves.survival, up_lin)
    lo, up = monotone_band(lo, up)
    lo_lin, up_lin = monotone_band(lo_lin, up_lin)
    cif_var = boot.cumulative_incidence.var(axis=1, ddof=1)
    # once nobody is left at risk nothing more is known, but a survival curve never rises: [0, the last upper limit]
    cap = lambda u: np.minimum.accumulate(np.where(stopped, 1.0, u), axis=-1)  # noqa: E731
    return replace(curves, lower=np.where(stopped, 0.0, lo), upper=cap(up),
                   lower_linear=np.where(stopped, 0.0, lo_lin), upper_linear=cap(up_lin),
                   interval_variance=v, incidence_variance=cif_var, rmst_draws=boot.survival,
                   interval_method=method or BOOTSTRAP_METHOD.format(draws=boot.draws)
                   + ("; their mean squared error about the released curve (the draws' offset included)" if offset
                      else ""))


def carry_upper(survival: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Where a noisy curve has dropped to 0 its upper limit is the last upper limit before (S never rises, so the
    truth there is at most the earlier truth), not a zero-width [0, 0]."""
    ok = (survival > 0) & np.isfinite(upper)
    idx = np.where(ok, np.arange(survival.shape[-1]), -1)
    idx = np.maximum.accumulate(idx, axis=-1)
    prev = np.take_along_axis(upper, np.maximum(idx, 0), -1)
    return np.where(ok, upper, np.where(idx >= 0, prev, 1.0))


def monotone_band(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A survival curve never rises, so a noisy band that rises again (its variance grows where few are at risk)
    is cut back: the upper limit at t is the smallest upper limit at or before t, the lower limit the largest at or
    after t. NaN limits (R's NA) are left as they are."""
    up = np.where(np.isnan(upper), np.inf, upper)
    lo = np.where(np.isnan(lower), -np.inf, lower)
    up = np.minimum.accumulate(up, axis=-1)
    lo = np.maximum.accumulate(lo[..., ::-1], axis=-1)[..., ::-1]
    return np.where(np.isnan(lower), np.nan, lo), np.where(np.isnan(upper), np.nan, up)


def widen_between(lower: np.ndarray, upper: np.ndarray, known: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Between points where the curve is estimated directly (``known``, e.g. the ends of adaptive-km's merged bins)
    the curve is an interpolation and the truth may bend anywhere: at such a point the band runs from the lower
    limit at the next known point to the upper limit at the previous one (1 before the first); a survival curve
    never rises, so this holds the truth whenever the two known points' bands do."""
    known = np.broadcast_to(np.asarray(known, bool), np.shape(lower))
    j = np.arange(known.shape[-1])
    nxt = np.where(known, j, known.shape[-1] - 1)
    nxt = np.minimum.accumulate(nxt[..., ::-1], axis=-1)[..., ::-1]
    prv = np.maximum.accumulate(np.where(known, j, -1), axis=-1)
    prev_known = np.concatenate([np.full(known.shape[:-1] + (1,), -1), prv[..., :-1]], axis=-1)
    lo = np.where(known, lower, np.take_along_axis(lower, nxt, -1))
    up_prev = np.take_along_axis(upper, np.maximum(prev_known, 0), -1)
    up = np.where(known, upper, np.where(prev_known >= 0, up_prev, 1.0))
    return np.minimum(lo, lower), np.maximum(up, upper)


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
    z = ndtri(1 - curves.alpha / 2)
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


# ------------------------------------------------------------------------------------------ time-indexed
BAND_SHAPES = (0.75, 1.0, 1.5, 2.0)  # Weibull shapes of the candidate true curves (1: exponential)
FAMILY_SIZE = 41  # candidate curves per shape (between them the band interpolates)
CENSORING_STEPS = 1  # steps per grid bin in the censored cohorts' chain (2 changed no coverage; twice the cost)


def _family(points: np.ndarray, shapes: tuple[float, ...] = BAND_SHAPES, size: int = FAMILY_SIZE
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Candidate true curves S(t) = exp(-(t / lam)^k) = S(t_J)^((t / t_J)^k) for each shape k, with S(t_J) from
    0.9999 down to 1e-4, plus S = 1 and S = 0: (curves (L, J) at the grid points, shapes (L,), scales lam (L,);
    lam = inf for S = 1 and 0 for S = 0)."""
    end = 1.0 / (1.0 + np.exp(-np.linspace(9.2, -9.2, size)))
    t_end = max(float(points[-1]), 1e-12)
    ks = np.repeat(np.asarray(shapes, float), size)
    ends = np.tile(end, len(shapes))
    curves = ends[:, None] ** ((np.asarray(points, float) / t_end)[None, :] ** ks[:, None])
    scales = t_end / (-np.log(ends)) ** (1.0 / ks)
    return (np.vstack([np.ones(points.size), curves, np.zeros(points.size)]), np.concatenate([[1.0], ks, [1.0]]),
            np.concatenate([[np.inf], scales, [0.0]]))


def sampled_curves(family: np.ndarray, size: int, draws: int, rng: np.random.Generator,
                   kept: np.ndarray | None = None) -> np.ndarray:
    """(B, L, K) Kaplan-Meier curves of ``size`` subjects drawn from each true curve (L, K), read at its K times.
    Without censoring (``kept`` None) the survivors form a binomial chain, m_k ~ Bin(m_{k-1}, S(t_k) / S(t_{k-1})),
    and S^(t_k) = m_k / size, of variance S (1 - S) / size. ``kept`` (L, K): the censoring survival G(t_k); on each
    step of r at risk, with p = 1 - S(t_k)/S(t_{k-1}) and q = 1 - G(t_k)/G(t_{k-1}), d ~ Bin(r, p (1 - q/2)) events and
    c ~ Bin(r - d, q (1 - p/2) / (1 - p (1 - q/2))) censorings (each first half the time), and the curve steps by
    1 - d / (r - c/2) (the actuarial step; finer steps bring it to the Kaplan-Meier estimator and its variance
    S^2 int dLambda / (n S G); on a 20-point grid one step per bin already gives the Kaplan-Meier estimator's mean
    and standard deviation within 1-2%: tests/curves/test_time_indexed.py)."""
    def ratio(x: np.ndarray) -> np.ndarray:
        prev = np.concatenate([np.ones((x.shape[0], 1)), x[:, :-1]], axis=1)
        return np.divide(x, prev, out=np.zeros_like(x), where=prev > 0).clip(0.0, 1.0)

    p = 1.0 - ratio(np.asarray(family, float))
    q = np.zeros_like(p) if kept is None else 1.0 - ratio(np.asarray(kept, float))
    p_event, p_censor = p * (1.0 - q / 2.0), q * (1.0 - p / 2.0)
    p_censor = np.divide(p_censor, 1.0 - p_event, out=np.ones_like(p), where=p_event < 1.0).clip(0.0, 1.0)
    risk = np.full((draws, family.shape[0]), int(size), np.int64)
    curve = np.ones((draws, family.shape[0]))
    out = np.empty((draws, *family.shape))
    for k in range(family.shape[1]):  # a loop over the public times only, vectorised over draws and curves
        d = rng.binomial(risk, p_event[:, k])
        c = rng.binomial(risk - d, p_censor[:, k]) if kept is not None else np.zeros_like(d)
        at_risk = risk - c / 2.0
        curve = curve * (1.0 - np.divide(d, at_risk, out=np.zeros_like(curve), where=at_risk > 0))
        risk = risk - d - c
        out[..., k] = curve
    return out


def _cohort_curves(points: np.ndarray, shapes: np.ndarray, scales: np.ndarray, size: int, share: float, draws: int,
                   rng: np.random.Generator) -> np.ndarray:
    """(B, L, J) Kaplan-Meier curves at the grid points of cohorts of ``size`` drawn from each candidate (shape,
    scale), censored U(0, c) with c = lam c_k(share) so that the declared share is censored (as in
    :mod:`dpsurv_core.weibull.inference`); S = 1 and S = 0 uncensored. ``share`` 0: the binomial chain."""
    from dpsurv_core.weibull.inference import uniform_censoring_limit

    steps = CENSORING_STEPS if share > 0 else 1
    edges = np.concatenate([[0.0], np.asarray(points, float)])
    t = (edges[:-1, None] + np.diff(edges)[:, None] * (np.arange(1, steps + 1) / steps)[None, :]).ravel()
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        surv = np.exp(-(t[None, :] / scales[:, None]) ** shapes[:, None])
    surv[np.isinf(scales)], surv[scales == 0] = 1.0, 0.0
    kept = None
    if share > 0:
        limit = {k: uniform_censoring_limit(float(k), share) for k in np.unique(shapes)}
        c = np.array([limit[k] for k in shapes]) * scales
        c[(scales == 0) | np.isinf(scales)] = np.inf  # the flat curves: nothing to censor before
        kept = np.clip(1.0 - t[None, :] / c[:, None], 0.0, 1.0)
    return sampled_curves(surv, size, draws, rng, kept)[..., steps - 1::steps]


@lru_cache(maxsize=32)
def _pipeline_ranges(key: tuple, draws: int, alpha: float, size: int | None = None, share: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(family (L, J), alpha/2 and 1 - alpha/2 points (L, J) of the pipeline's output): a function of the mechanism's
    public parameters, the grid and the declared group size and censoring share only, so it is computed once per
    setting (seeded from them). ``size``: each draw first samples a cohort of that many subjects from the candidate
    curve, censored at the declared ``share`` (:func:`_cohort_curves`: the sampling error); None: the candidate curve
    itself goes through the pipeline (the noise only)."""
    mechanism, points = key[0].mechanism, np.asarray(key[1], float)
    family, shapes, scales = _family(points)
    public = [np.asarray(mechanism.scales), points, np.asarray(mechanism.thresholds)]
    noise = SimulationNoise(seed_from(*public, *([] if size is None else [np.asarray([size, share])])))
    if size is None:
        out = mechanism.post_process(mechanism.noisy(family, noise, draws))  # (B, L, J)
    else:
        exact = _cohort_curves(points, shapes, scales, size, share, draws, noise.rng)
        out = mechanism.post_process(mechanism.noisy(exact, noise, 1)[0])
    lo, hi = acceptance_ranges(out, alpha)
    return family, _monotone_in_s(lo), _monotone_in_s(hi)


def acceptance_ranges(out: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Limits [a, b] (along every axis but the first) of ranges that hold at least 1 - alpha of the simulated outputs
    ``out`` (B, ...), alpha / 2 cut from each tail where the law is continuous. Clipping piles the outputs up at 0
    (and at the thresholds): where an atom swallows one tail's alpha / 2 (no draw lies below a), the unused share is
    cut from the other tail instead, so the range holds 1 - alpha and not up to 1 - alpha / 2 (the central range's
    over-coverage on uninformative releases; the boundary-aware tails of Weibull inference). Cuts are counted in
    draws and never exceed alpha B in all."""
    s = np.sort(np.asarray(out, float), axis=0)
    draws = s.shape[0]
    budget = int(np.floor(alpha * draws + 1e-9))
    a = s[budget // 2]
    cut_below = (s < a[None]).sum(0)  # draws strictly below a (0 where an atom holds the lower tail)
    b = np.take_along_axis(s, (draws - 1 - (budget - cut_below))[None], 0)[0]
    cut_above = (s > b[None]).sum(0)
    a = np.take_along_axis(s, (budget - cut_above)[None], 0)[0]  # the upper tail's unused share back to the lower
    return a, b


def _monotone_in_s(limit: np.ndarray, per_shape: int = FAMILY_SIZE) -> np.ndarray:
    """The simulated range limits (L, J) of each shape's candidates (S falling with the row), made non-decreasing in S
    at every point by isotonic regression (pool adjacent violators): the Monte Carlo error of 400 draws would
    otherwise make the band's envelopes pick the most extreme of many noisy neighbours."""
    from scipy.optimize import isotonic_regression

    out = limit.copy()
    for start in range(1, limit.shape[0] - 1, per_shape):  # row 0 is S = 1, the last row S = 0
        for j in range(limit.shape[1]):  # loops over the shapes and public points only
            out[start:start + per_shape, j] = isotonic_regression(limit[start:start + per_shape, j],
                                                                  increasing=False).x
    return out


class _Key:
    """Hashable view of a time-indexed mechanism's public parameters (for the cache)."""

    def __init__(self, mechanism: Any) -> None:
        self.mechanism = mechanism
        self.key = (tuple(np.round(mechanism.scales, 12)), tuple(np.round(mechanism.thresholds, 12)),
                    mechanism.window, mechanism.edge_mode)

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.key == other.key


def time_indexed_bands(mechanism: Any, released: np.ndarray, points: np.ndarray, draws: int = 400,
                       alpha: float = 0.05, sizes: int | np.ndarray | None = None,
                       censoring: float | np.ndarray = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise (1 - alpha) band (R, G, J) for a time-indexed release by inverting its pipeline (module docstring):
    at t_i every S(t_i) of a candidate curve (Weibull-shaped, shapes :data:`BAND_SHAPES`) whose simulated 95%
    range at t_i contains the released value, between candidates by linear interpolation, widened to hold the
    released value itself. The upper limit is the largest candidate S whose range starts at or below the value, the
    lower limit the smallest whose range reaches it (the union over shapes: a candidate of another shape with the
    same S(t_i) smooths differently). ``sizes``: the declared (public) number of subjects in each group (one number
    for every group, or one per group); the simulated outputs then include the sampling error of a cohort of that
    size, censored at the declared (public) share ``censoring`` (uniform censoring; one share for every group or one
    per group; 0: none). None: the band covers the noise only."""
    obs = np.asarray(released, float)
    groups = obs.shape[-2]
    size_of = [None] * groups if sizes is None else [int(x) for x in np.broadcast_to(np.asarray(sizes), (groups,))]
    if any(x is not None and x < 1 for x in size_of):
        raise ParameterError(f"The declared group sizes must be whole numbers of at least 1, got {sizes}.")
    share_of = [float(x) for x in np.broadcast_to(np.asarray(censoring, float), (groups,))]
    if not all(0.0 <= x < 1.0 for x in share_of):
        raise ParameterError(f"The declared censoring share must be from 0 up to (not including) 1, got {censoring}.")
    key = (_Key(mechanism), tuple(np.asarray(points, float)))
    lower, upper = np.empty_like(obs), np.empty_like(obs)
    for g, size in enumerate(size_of):  # a loop over the groups and public points only
        family, lo_q, hi_q = _pipeline_ranges(key, int(draws), alpha, size, 0.0 if size is None else share_of[g])
        order = np.argsort(family, axis=0, kind="stable")  # ascending S at each point
        for j in range(family.shape[1]):
            f = family[order[:, j], j]
            # sup {S : range starts at or below o} and inf {S : range reaches o}, read off non-decreasing envelopes
            # (the ranges need not grow with S across shapes, or where a censored cohort's curve stops early)
            lo_s = np.minimum.accumulate(lo_q[order[:, j], j][::-1])[::-1]
            hi_s = np.maximum.accumulate(hi_q[order[:, j], j])
            o = obs[..., g, j]
            upper[..., g, j] = np.interp(o, lo_s, f, left=f[0], right=1.0)  # largest S whose range starts below
            lower[..., g, j] = np.interp(o, hi_s, f, left=0.0, right=f[-1])  # smallest S whose range reaches it
    return np.minimum(lower, obs), np.maximum(upper, obs)


# ------------------------------------------------------------------------------------------ reading the intervals
def quantile_limits(time: np.ndarray, lower: np.ndarray, upper: np.ndarray, q: float = 0.5, coarse: bool = False,
                    curve: np.ndarray | None = None, last: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Limits of the time where S falls to ``q`` by inverting the band, as R's quantile.survfit: (where the lower
    band reaches q, where the upper band does); inf = not reached.

    ``coarse``: the curve is known at the public grid's points only, and the true curve crosses q somewhere between
    two of them. Each limit is then where its band crosses q with the band read linearly between the grid points (the
    life-table convention; Collett 2015), the lower band starting from S(0) = 1; a band equal to q over an interval
    keeps R's midpoint. The upper limit is at least ``curve``'s own quantile by R's rule (the grid point where the
    curve reaches q), so the interval holds the estimate printed beside it. ``last``: each curve's last time under
    observation (:func:`quantile_r`; non-private curves only)."""
    time = np.asarray(time, float)
    lo_t, up_t = quantile_r(time, lower, q, last=last), quantile_r(time, upper, q, last=last)
    if coarse:
        lo_t = np.where(np.isfinite(lo_t), linear_crossing(time, lower, q), lo_t)
        up_t = np.where(np.isfinite(up_t), np.minimum(linear_crossing(time, upper, q), up_t), up_t)
        if curve is not None:
            up_t = np.maximum(up_t, quantile_r(time, curve, q))
    return lo_t, up_t


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


def _fmt(t: float, unit: str) -> str:
    return f"{t:.4g} {unit}".strip()


def _asked_and_used(time: np.ndarray, when: float, unit: str) -> str:
    """A landmark as the tables name it: the time asked, and the grid point it is read at when that differs."""
    k = _index_at(time, when)
    if k < 0 or np.isclose(time[k], when, rtol=0, atol=1e-9):
        return _fmt(when, unit)
    return f"{_fmt(when, unit)} (read at {_fmt(float(time[k]), unit)})"


def _index_at(time: np.ndarray, when: float) -> int:
    """The grid point a value at ``when`` is read at (the last point at or before it; -1 before the first)."""
    on = np.flatnonzero(np.isclose(time, when, rtol=0, atol=1e-9))
    return int(on[0]) if on.size else int(np.searchsorted(time, when, side="right")) - 1


def curve_warnings(curves: SurvivalCurves, lower: np.ndarray, upper: np.ndarray, mechanism: str,
                   landmarks: list[float] | None = None, coarse: bool = False, time_unit: str = "",
                   private: bool = True, raw_label_curves: bool = False, trial: int = 0,
                   clamping: ClampingBias | None = None) -> list[str]:
    """Plain sentences for results that cannot be read (first trial), each saying what to do next: a band from near
    0 to near 1, a median that is not identifiable or has no upper limit, an error bar larger than the difference between groups, a
    time-indexed median where the truth may not be reached, a time-indexed band without the sampling error (no group
    size declared), rrr's reported-label curves, a curve that clamping its released counts at 0 pulls below its band
    (``clamping``: what clamping adds to each event cell). With competing events (several event types) the curve counts every
    event type, and the sentences say so (its median is the event-free median, not the median survival)."""
    if not private:
        return []
    out: list[str] = []
    time = np.asarray(curves.time, float)
    s = curves.survival[trial]
    lo, up = np.asarray(lower, float)[trial], np.asarray(upper, float)[trial]
    has_band = not np.all(np.isnan(lo))
    groups = curves.groups
    informative = False  # some point's band is narrower than almost [0, 1]
    event_free = len(curves.event_types) > 1
    median = "event-free median (time to the first event of any type)" if event_free else "median"
    for g, name in enumerate(groups):
        label = f"group {name}" if len(groups) > 1 or name != "all" else "the curve"
        curve = (f"the event-free curve of {label}" if label != "the curve" else "the event-free curve") if event_free \
            else label
        if has_band:
            # where S = 0 a band of exact counts is R's NA (or [0, 1] once nobody is left): no interval, not a wide
            # one; a noise-aware band there runs from 0 to the last upper limit and still says something
            no_interval = (((s[g] <= 0) & (np.isnan(up[g]) | (curves.interval_method is None)))
                           | (np.isnan(lo[g]) & np.isnan(up[g])))  # R's NA (S = 0, or S = 1 on some types)
            wide = (np.nan_to_num(lo[g], nan=0.0) <= 0.05) & (np.nan_to_num(up[g], nan=1.0) >= 0.95) & ~no_interval
            informative = informative or not wide.all()
            tail = np.logical_and.accumulate(wide[::-1])[::-1]  # wide from there to the end
            if tail.any():
                k = int(np.argmax(tail))
                where = "at every time" if k == 0 else f"from {_fmt(time[k], time_unit)} on"
                out.append(f"The 95% band of {curve} spans almost 0 to 1 {where}: the private curve says little "
                           "there; raise epsilon, widen the bins or pool groups.")
        side = np.sign(s[g] - 0.5)
        side = side[side != 0]  # a curve that rests on 0.5 and goes on down crosses once (R's midpoint median)
        crossings = int(np.count_nonzero(np.diff(side) != 0))
        med = quantile_r(time, s[g])
        if crossings > 1:
            whose = "The curve" if label == "the curve" else f"The curve of {label}"
            out.append(f"{whose} crosses 0.5 {crossings} times, so its {median} is not identifiable; "
                       "raise epsilon or widen the bins.")
        elif mechanism == "time-indexed" and np.isfinite(med) and has_band and up[g][-1] >= 0.5:
            out.append(f"The time-indexed median of {label} ({_fmt(med, time_unit)}) may be an artefact of the "
                       "clipping and noise: the band still allows a survival above 0.5 at the end of the grid, so the "
                       "true median may not be reached; use a counts mechanism or raise epsilon.")
        elif has_band and not np.isfinite(med) and np.any(np.nan_to_num(lo[g], nan=1.0) < 0.5):
            med_lo, _ = quantile_limits(time, lo[g], up[g], 0.5, coarse, s[g])
            out.append(f"The {median} of {label} is not reached on the noisy curve, but its band falls below 0.5 from "
                       f"{_fmt(float(med_lo), time_unit)} on: the true {median} may well be reached; report it as "
                       f"'not reached' only with that lower limit, or raise epsilon.")
        elif has_band and np.isfinite(med):
            _, med_up = quantile_limits(time, lo[g], up[g], 0.5, coarse, s[g])
            if not np.isfinite(med_up):
                out.append(f"The {median} of {label} ({_fmt(med, time_unit)}) has no upper limit: the band's upper "
                           "limit never falls to 0.5 on the grid, so the true median may lie beyond the grid or not be "
                           "reached at all; report its interval as open above (from its lower limit to 'not "
                           "reached', as printed), or raise epsilon.")
    if mechanism == "time-indexed" and informative and NOISE_ONLY in (curves.interval_method or ""):
        out.append("The time-indexed band covers the privacy noise only, not the sampling error (the mechanism releases "
                   "no counts), so where the curve says something the band holds the truth far less often than 95% "
                   "(about 52-64% at the median and later for 100 subjects per group at base epsilon 5); declare each "
                   "group's size and censoring share (public numbers such as the study design's: --sample-size and "
                   "--censoring, or the two boxes on the Survival curves page) for a band that covers both.")
    if has_band and len(groups) > 1:
        times = list(landmarks) if landmarks else [float(time[time.size // 2])]
        for a in range(len(groups)):
            for b in range(a + 1, len(groups)):
                for when in times:
                    k = _index_at(time, when)
                    if k < 0:
                        continue
                    diff = abs(s[a, k] - s[b, k])
                    half = np.nanmax([(up[a, k] - lo[a, k]) / 2, (up[b, k] - lo[b, k]) / 2])
                    if np.isfinite(half) and half > diff:
                        out.append(f"At {_fmt(time[k], time_unit)} the difference in {'event-free ' if event_free else ''}"
                                   f"survival between {groups[a]} and "
                                   f"{groups[b]} ({100 * diff:.1f} points) is smaller than the error bar "
                                   f"(+/- {100 * half:.1f} points): the private curves cannot tell these groups apart "
                                   "there; raise epsilon or use fewer, wider bins.")
                        break
    if clamping is not None and has_band:
        out += _clamping_warnings(curves, np.asarray(upper, float), clamping, time_unit, trial, event_free)
    out += _empty_risk_set_warnings(curves, landmarks, time_unit, trial, mechanism, event_free)
    if raw_label_curves:
        out.append("The curves of the randomized (reported) group labels estimate a mixture of the groups, not each "
                   "group: read the de-biased curves, whose bands carry the label noise.")
    out += _disclosure_control_warnings(curves, mechanism, time_unit, trial)
    return out


def clamping_bias(counts: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """E[max(0, d + N)] - d, what clamping a noisy count at 0 adds on average to a true count d: p^(d+1) / (1 - p^2)
    for discrete Laplace noise of ``scale`` (P(N = k) proportional to p^|k|, p = exp(-1/scale)), (scale / 2)
    exp(-d / scale) for continuous Laplace."""
    d = np.maximum(np.asarray(counts, float), 0.0)
    if scale <= 0:
        return np.zeros_like(d)
    if not discrete:
        return scale / 2.0 * np.exp(-d / scale)
    p = math.exp(-1.0 / scale)
    return p ** (d + 1.0) / (1.0 - p * p)


@dataclass(frozen=True)
class ClampingBias:
    """What setting negative released event counts to 0 adds on average to each (..., G, J) event cell of the curves
    a band stands behind (:func:`laplace_clamping`, :func:`rrr_clamping`), with the sentence's words: what was
    clamped and the size of the noise on one cell."""

    events: np.ndarray
    what: str
    noise_sd: np.ndarray  # (..., G, J): the standard deviation of the noise on one event cell there
    # (..., G, J): what clamping adds to each censoring cell; the number at risk falls by the events' and censorings'
    # biases of the bins before, which on a fine grid inflates the hazard more than the events' own bias
    censored: np.ndarray | None = None


def declamped(released: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """The true count d >= 0 whose clamped noisy count has mean ``released``: d + clamping_bias(d) = y (0 where y is
    at most the bias of an empty cell), by bisection; the clamping bias at the released counts themselves, which
    clamping has already pulled up, understates it most in the sparse cells where it matters."""
    y = np.maximum(np.asarray(released, float), 0.0)
    if scale <= 0:
        return y
    lo, hi = np.zeros_like(y), y.copy()
    for _ in range(40):  # the mean d + bias(d) rises with d: bisection to about 1e-12 of a count
        mid = (lo + hi) / 2.0
        above = mid + clamping_bias(mid, scale, discrete) > y
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return lo


def laplace_clamping(events: np.ndarray, scale: float, discrete: bool = True, censored: np.ndarray | None = None
                     ) -> ClampingBias:
    """laplace-counts: every event type's cell (..., G, K, J) and censoring cell (..., G, J) clamped on its own; the
    bias of each (:func:`clamping_bias`) is read at the count that clamping would have pulled up to the released one
    (:func:`declamped`)."""
    p = math.exp(-1.0 / scale) if scale > 0 else 0.0
    sd = (math.sqrt(2.0 * p) / (1.0 - p) if discrete else math.sqrt(2.0) * scale) if scale > 0 else 0.0
    bias = clamping_bias(declamped(events, scale, discrete), scale, discrete).sum(-2)
    cens = None if censored is None else clamping_bias(declamped(censored, scale, discrete), scale, discrete)
    return ClampingBias(bias, "clamping the noisy counts at 0", np.full(bias.shape, sd), cens)


def rrr_clamping(debiased_events: np.ndarray, matrix: np.ndarray, debiased_censored: np.ndarray | None = None
                 ) -> ClampingBias:
    """rrr: de-biasing solves P^T x = reported, x = A r with A = (P^T)^-1, and sets negative cells to 0. With x_h
    true subjects of group h in a cell reporting by row h of P (a multinomial), Var(x_g) = (A S A^T)_gg, S = sum_h x_h
    (diag(p_h) - p_h p_h^T); x_g is about normal, so clamping adds sd (phi(z) - z Phi(-z)), z = x_g / sd (Johnson,
    Kotz and Balakrishnan 1994), evaluated at the released (clamped) cells: an underestimate (more so with several
    rows per subject, whose rows report one label together)."""
    bias, var = _rrr_cell_bias(debiased_events, matrix)
    cens = None if debiased_censored is None else _rrr_cell_bias(np.asarray(debiased_censored)[..., None, :],
                                                                 matrix)[0][..., 0, :]
    return ClampingBias(bias.sum(-2), "de-biasing the randomized labels and setting negative counts to 0",
                        np.sqrt(var.sum(-2)), cens)


def _rrr_cell_bias(debiased: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bias, variance) (..., G, K, J) of rrr's clamped de-biased cells (:func:`rrr_clamping`)."""
    from scipy.stats import norm

    x = np.maximum(np.asarray(debiased, float), 0.0)  # (..., G, K, J)
    a = np.linalg.inv(matrix.T)
    p = np.asarray(matrix, float)
    outer = np.einsum("ha,hb->hab", p, p)
    diag = np.einsum("ha,ab->hab", p, np.eye(p.shape[0]))
    cov = np.einsum("...hkj,hab->...kjab", x, diag - outer)  # (..., K, J, G, G) of the reported counts
    var = np.einsum("ga,...kjab,gb->...gkj", a, cov, a)
    sd = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, x / sd, np.inf)
        bias = np.where(sd > 0, sd * (norm.pdf(z) - z * norm.sf(z)), 0.0)
    return bias, var


def _clamping_warnings(curves: SurvivalCurves, upper: np.ndarray, clamp: ClampingBias, time_unit: str,
                       trial: int, event_free: bool) -> list[str]:
    """Where clamping released counts at 0 alone biases a curve below its band. Each event cell gains about b_j
    (``clamp.events``) and each censoring cell c_j (``clamp.censored``), read at the counts clamping would have pulled
    up to the released ones (laplace-counts; rrr's at its released de-biased counts); so the hazard d_j / r_j is too
    high twice over: d_j by b_j, and r_j too low by the sum of b_i + c_i over the bins before. The curve corrected for both, prod (1 - (d_j - b_j) / (r_j + sum_{i<j}
    (b_i + c_i))), is an estimate of where the curve would be without that bias; the sentence fires at the first point
    (survival at least 25%: later the few left at risk make the estimate too rough) where it lies above the band's
    upper limit."""
    r = np.asarray(curves.at_risk, float)[trial]
    s = curves.survival[trial]
    b = np.asarray(clamp.events, float)[trial]
    lost = b + (0.0 if clamp.censored is None else np.asarray(clamp.censored, float)[trial])
    r_true = r + np.cumsum(lost, axis=-1) - lost  # the biases of the bins before took subjects out of the risk set
    d = np.asarray(curves.events, float)[trial]
    with np.errstate(divide="ignore", invalid="ignore"):
        hazard = np.where(r >= 1, np.clip(np.maximum(d - b, 0.0) / np.maximum(r_true, 1.0), 0.0, 1.0),
                          np.nan_to_num(1.0 - s / np.concatenate([np.ones(s.shape[:-1] + (1,)), s[..., :-1]], -1)))
    corrected = np.maximum(np.cumprod(1.0 - hazard, axis=-1), s)
    time = np.asarray(curves.time, float)
    out = []
    for g, name in enumerate(curves.groups):
        off = (s[g] >= 0.25) & (corrected[g] > np.nan_to_num(upper[trial, g], nan=1.0) + 1e-9)
        if not off.any():
            continue
        k = int(np.argmax(off))
        whose = "the curve" if (len(curves.groups) == 1 and name == "all") else f"the curve of group {name}"
        if event_free:
            whose = whose.replace("the curve", "the event-free curve")
        out.append(f"At {_fmt(time[k], time_unit)} {clamp.what} alone pulls {whose} down: "
                   f"{100 * s[g, k]:.1f}% here, against about {100 * corrected[g, k]:.1f}% or more without that bias, "
                   f"above the band's upper limit ({100 * float(upper[trial, g, k]):.1f}%). The band does not carry "
                   "this bias, so neither it nor the median and landmarks read from it can be trusted from there on. "
                   "Choose fewer, wider bins (each holding several times the noise's +/- "
                   f"{float(np.asarray(clamp.noise_sd)[trial, g, k]):.1f} events there), or adaptive-km, which merges "
                   "sparse bins, or raise epsilon.")
    return out


def _empty_risk_set_warnings(curves: SurvivalCurves, landmarks: list[float] | None, time_unit: str,
                             trial: int, mechanism: str = "", event_free: bool = False) -> list[str]:
    """Where the released counts leave nobody at risk before the grid's last bin, one sentence per group: for the
    landmarks read there (as asked, up to the grid's end: later ones have their own sentence), or else for the curve
    itself. The curve there is where the released counts stopped it, carried on, not an estimate at that time (a noisy
    release's band runs from 0 to the last upper limit)."""
    risk = np.asarray(curves.at_risk, float)[trial] if curves.at_risk is not None else None
    if risk is None or np.all(np.isnan(risk)):
        return []
    landmarks = landmarks or []
    time = np.asarray(curves.time, float)
    rule = mechanism in catalogue.disclosure_ids(catalogue.CURVES)  # no epsilon: a rule changed the counts
    curve, fix = (("released curve", "widen the bins or choose a milder rule") if rule
                  else ("noisy curve", "raise epsilon or widen the bins"))
    out = []
    for g, name in enumerate(curves.groups):
        empty = np.logical_and.accumulate((np.nan_to_num(risk[g], nan=1.0) <= 0)[::-1])[::-1]  # empty to the end
        if not empty.any():
            continue
        k0 = int(np.argmax(empty))
        # a rule's curve that fell to 0 is exact there (everyone had the event); a noisy 0 is where the noise ended it
        late = [t for t in landmarks if _index_at(time, t) >= k0 and t <= time[-1] + 1e-9
                and not (rule and curves.survival[trial, g, _index_at(time, t)] <= 0)]
        start = float(time[k0 - 1]) if k0 > 0 else 0.0  # the empty bin's start: time >= t, R's number at risk
        named = len(curves.groups) > 1 or name != "all"
        where, whose = (f" in group {name}", f" of group {name}") if named else ("", "")
        if late:
            out.append(f"From {_fmt(start, time_unit)} on the released counts leave nobody at risk{where}, so the "
                       f"survival{whose} at {', '.join(_asked_and_used(time, t, time_unit) for t in late)} is the "
                       f"value the "
                       f"{curve} stopped at, carried on, not an estimate at that time; choose an earlier landmark, or "
                       f"{fix}.")
        elif k0 < time.size - 1 and not (rule and curves.survival[trial, g, k0] <= 0):
            # more than the last bin: the curve drawn to the grid's end holds there a value nothing estimates
            value = 100.0 * float(curves.survival[trial, g, k0])
            kind = "event-free curve" if event_free else "curve"  # with competing events: survival from all of them
            out.append(f"From {_fmt(start, time_unit)} on the released counts leave nobody at risk{where}, so the "
                       f"{kind}{whose} from there to the end of the grid is the value the {curve} stopped at "
                       f"({value:.0f}%), carried on, not an estimate (nor is any curve read from its counts); read it "
                       f"only up to {_fmt(start, time_unit)}, or {fix}.")
    return out


# disclosure control's deterministic rules (their bands are Greenwood's) and what each does to the counts
RULES = {"round": "rounding", "suppress-small-cells": "small-cell suppression", "smooth-steps": "step smoothing"}
FEW_AT_RISK = 50


def _disclosure_control_warnings(curves: SurvivalCurves, mechanism: str, time_unit: str, trial: int) -> list[str]:
    """Disclosure control moves small counts by about as much as they are, which no band here carries in full
    (measured in docs/coverage-curves.md): a deterministic rule's Greenwood band treats the altered counts as exact,
    and random rounding's bootstrap band misses the bias of bins with a handful of events."""
    if mechanism in RULES:
        which = ("These bands (Greenwood's for survival, the infinitesimal jackknife's for the cumulative incidence) "
                 "treat" if len(curves.event_types) > 1 else "This band is Greenwood's: it treats")
        out = [f"{which} the published counts as exact, but {RULES[mechanism]} changed "
               "them, so it is too narrow, most where few subjects remain (with 100 subjects per group it held the "
               "truth 60-87% of the time, not 95%); read it as the least uncertainty there is."]
        events = np.asarray(curves.events, float)[trial]
        events = events.reshape(events.shape[0], -1).sum(-1)  # per group, over bins (and event types)
        gone = [str(name) for g, name in enumerate(curves.groups) if events[g] <= 0]
        if gone:
            pooled = list(curves.groups) == ["all"]
            whose = ("the curve" if pooled else f"group {gone[0]}" if len(gone) == 1
                     else "groups " + ", ".join(gone))
            out.append(f"The released counts of {whose} hold no events at all, so its curve stays at 100% and its band "
                       f"and RMST interval have no width. {RULES[mechanism].capitalize()} takes a bin's few events to "
                       "0, so this says 'no events released', not 'nobody had the event'; widen the bins"
                       + ("." if pooled else " or pool groups."))
        return out + at_risk_notes(mechanism)
    if mechanism != "random-round":
        return []
    return _random_rounding_warnings(curves, time_unit, trial)


def at_risk_notes(mechanism: str) -> list[str]:
    """What a deterministic disclosure-control rule does to the number at risk read from its released counts (the
    Survival curves and Group comparison pages show them under that table; ``km`` among its warnings)."""
    if mechanism == "suppress-small-cells":
        return ["Suppressed cells (shown as '<k') count as 0 here, so from the first of them on the curve misses "
                "their events and the number at risk misses their events and censorings: both stay too high late in "
                "follow-up (subjects can seem at risk after the last of them has died); do not read the late curve or "
                "landmarks as estimates."]
    if mechanism == "round":
        return ["The number at risk is rebuilt from rounded counts, so its rounding errors add up over time and it can "
                "be off by several times the base late in follow-up; the late curve inherits them."]
    return []


def _random_rounding_warnings(curves: SurvivalCurves, time_unit: str, trial: int) -> list[str]:
    risk = np.asarray(curves.at_risk, float)[trial]
    few = (risk < FEW_AT_RISK) & (np.asarray(curves.survival, float)[trial] > 0)
    if not few.any():
        return []
    first = float(np.asarray(curves.time, float)[int(np.argmax(few.any(axis=0)))])
    return [f"From {_fmt(first, time_unit)} on fewer than {FEW_AT_RISK} subjects remain at risk in a group, and "
            "random rounding moves a bin's handful of events to 0 or the base: the curve there can be off by more than "
            "its band (with 100 subjects per group the late band held the truth 86% of the time); widen the bins."]
