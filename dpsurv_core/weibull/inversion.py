"""Test inversion for the private Weibull intervals (Efron and Tibshirani 1993; the parametric bootstrap of
Ferrando, Wang and Sheldon 2022; the method is described in :mod:`dpsurv_core.weibull.inference`): the nuisance
scale of each candidate shape, the candidates whose simulated 95% range holds the release (a coarse grid, then a
finer one; the tails of the baselines left out), the clamp-aware ranges, and the scale intervals of TLL and of the
additive baselines.
"""

from __future__ import annotations

import math

import numpy as np

from dpsurv_core.weibull.censoring import exact_censoring_limit
from dpsurv_core.weibull.mechanisms import LspTll, WeibullMechanism
from dpsurv_core.weibull.simulation import (
    DIRECT_SUBJECTS,
    DRAWS,
    Z95,
    additive_noise,
    baseline_statistics,
    boundary_tails,
    laplace_mixture_quantiles,
    record_law,
)


def matching_scale(mech: WeibullMechanism, shape: float, scale: float, candidates: np.ndarray) -> np.ndarray:
    """The nuisance scale of each candidate true shape p. TLL computes lambda~ = (sum t^p~ / sum d)^(1/p~) at the
    released shape p~, a power mean of the times, whose value for Weibull(p, lambda) times is about
    lambda Gamma(1 + p~/p)^(1/p~) (no censoring); so a candidate p goes with lambda~ / Gamma(1 + p~/p)^(1/p~).
    The additive baselines' released scale is mostly noise (Laplace of scale gamma/(epsilon/2)), and their shape's
    law hardly depends on the scale, so their candidates use the released scale clipped to [0.1, 1] (times mostly
    inside the horizon, as a study's horizon is chosen)."""
    lam = float(np.clip(scale if math.isfinite(scale) else mech.gamma, 1e-3, mech.gamma))
    if not isinstance(mech, LspTll):
        return np.full(candidates.shape, float(np.clip(lam, 0.1, 1.0)))
    if not (math.isfinite(shape) and shape > 0):
        return np.full(candidates.shape, lam)
    q = float(shape)
    from scipy.special import gammaln

    return np.clip(lam / np.exp(gammaln(1.0 + q / candidates) / q), 1e-3, mech.gamma)


def _invert(grid: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray, value: float, top: float,
            empty: tuple[float, float] | None = None, span: bool = False) -> tuple[float, float]:
    """{p : q_lo(p) <= value <= q_hi(p)} on an increasing grid, each candidate's central range [q_lo, q_hi].

    A candidate is too small when value > q_hi and too large when value < q_lo. The interval runs from the last
    too-small candidate to the first too-large one after it, with both ends interpolated where the quantile curve
    crosses the value (so an interval narrower than the grid's step is still found). The curves rise with the
    candidate except at tiny shapes, where the simulated cohorts collapse onto the floor e^-omega and the
    mechanism's output is wild: with heavy censoring (pbc, flchain: 60-70%) the U(0, c) censoring that censors the
    public share of a tiny shape's times lies below the floor, every record sits there and the clipped MLE is gamma.
    Two rules keep that region from deciding the interval. Candidates before the last too-small one are ignored
    (the wild region may accept a release). With no too-small candidate, the too-large candidates below the first
    accepted one are ignored too (where the curves rise, a candidate below an accepting one cannot be too large):
    without this rule a release that every shape from 0.13 to 2.4 accepted got [0, 0.05], from a first candidate
    that the floor made reject it as too large, and an interval that held no accepted shape. Ignored candidates say
    nothing: with no too-small candidate the interval starts at 0 (or at the coarse answer ``empty`` on a refined
    grid, if lower than the first candidate kept), with no too-large one after it, it ends at ``top``. When every
    candidate rejects the value from the same side on the full range, the answer is the whole range (the data say
    nothing); on a refined grid it is the coarse answer. When a too-small candidate is followed by a too-large one
    (no candidate between accepts: an empty inversion), the answer is the narrow range where the curves cross the
    value, which holds no accepted candidate (:func:`_accepts` lets the caller tell).

    With ``span`` the interval also runs past too-large candidates that accepted ones follow: it ends at the first
    too-large candidate after the last accepted one kept. Where the curves rise a too-large candidate is never
    followed by an accepting one, so this changes nothing there; in the wild region it does. With 70% censoring at
    epsilon 2, sample and aggregate's release of -4.5 was accepted by the first candidate (0.05), rejected as too
    large by 0.08-0.13 (their cohorts on the floor, their clipped fit at gamma) and accepted by every candidate from
    0.21 to 2.4: without ``span`` the coarse grid gave [0, 0.08] (for a release of -2.7 the final interval was
    [0, 0.17]); with it, the interval runs to the crossing above 2.4. Without ``span``: the rule of Weibull reader
    version 1, kept so that records published with it read the same."""
    small = value > q_hi
    large = value < q_lo
    lo_default, hi_default = (0.0, top) if empty is None else empty
    if small.all() or large.all():
        return (0.0, top) if empty is None else empty
    i_small = np.flatnonzero(small)
    L = int(i_small[-1]) if i_small.size else -1
    ok = np.flatnonzero(~small & ~large)
    # F: the first candidate kept. With no too-small candidate, the too-large ones below the first accepted candidate
    # are ignored (F = that candidate); otherwise F = L + 1 (a too-large candidate there, an empty inversion). U: the
    # first too-large candidate from F on
    F = int(ok[0]) if L < 0 and ok.size else L + 1
    # with span, U is sought from the last accepted candidate kept (a too-large run between accepted ones is passed)
    start = int(ok[-1]) if span and ok.size and ok[-1] >= F else F
    after = np.flatnonzero(large[start:])
    U = start + int(after[0]) if after.size else grid.size
    if L < 0:
        lower = min(lo_default, float(grid[F]))
    else:
        x0, x1 = q_hi[L], q_hi[min(L + 1, grid.size - 1)]
        lower = float(np.interp(value, [x0, x1], [grid[L], grid[min(L + 1, grid.size - 1)]])) if x1 > x0 \
            else float(grid[L])
    if U >= grid.size:
        upper = max(hi_default, float(grid[-1]))
    else:
        x0, x1 = q_lo[max(U - 1, 0)], q_lo[U]
        upper = float(np.interp(value, [x0, x1], [grid[max(U - 1, 0)], grid[U]])) if x1 > x0 else float(grid[U])
    return lower, max(upper, lower)


def _accepts(grid: np.ndarray, q_lo: np.ndarray, q_hi: np.ndarray, value: float, lower: float,
             upper: float) -> np.ndarray:
    """The candidates of ``grid`` inside [lower, upper] whose range [q_lo, q_hi] holds ``value``."""
    inside = (grid >= lower - 1e-12) & (grid <= upper + 1e-12)
    return grid[inside & (q_lo <= value) & (value <= q_hi)]


def _invert_tails(grid: np.ndarray, sims: np.ndarray, value: float, a: float, top: float,
                  empty: tuple[float, float] | None = None) -> tuple[float, float]:
    """:func:`_invert` on tail probabilities: ``sims`` holds each candidate's simulated releases (one row per
    candidate); a candidate is too small when P(release >= value) < a and too large when P(release <= value) < a,
    and the ends are interpolated where those probabilities cross a (written as quantile-like curves for
    :func:`_invert`: value + P(>=) - a rises with the candidate, value - P(<=) + a too)."""
    p_le = np.mean(sims <= value, axis=1)
    p_ge = np.mean(sims >= value, axis=1)
    return _invert(grid, value - (p_le - a), value + (p_ge - a), value, top, empty)


def clamp_aware_ranges(sims: np.ndarray, clamps: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Each candidate scale's acceptance range for an unclamped TLL release, from its simulated releases ``sims``
    (one row per candidate) and the share ``clamps`` of them that TLL clamped to its floor. A candidate that clamps at
    least (1 - level) / 2 of its releases accepts a clamped release (:func:`_invert_tails`), so its range keeps the
    whole clump near the floor and cuts 1 - level from the upper tail: it holds ``level`` of the releases in all, where
    a central range would hold (1 + level) / 2 (the rule of the time-indexed bands' acceptance ranges). Other
    candidates get the central ``level`` range."""
    a = (1.0 - level) / 2.0
    q_lo, q_hi, q_top = np.quantile(sims, [a, 1.0 - a, level], axis=1)
    atom = np.asarray(clamps) >= a
    return np.where(atom, 0.0, q_lo), np.where(atom, q_top, q_hi)


def _tll_scale_interval(mech: WeibullMechanism, shape: float, scale: float, shapes: np.ndarray, n: int, share: float,
                        level: float, seed: int, cohorts: int = 40, clamped: bool = False) -> tuple[float, float, float]:
    """TLL's scale interval given the released shape: every candidate scale lambda whose simulated TLL releases
    (cohorts drawn from (p, lambda), TLL computed at the released shape with fresh Laplace noise, clamped as the
    mechanism clamps) make the released scale typical, for some accepted true shape p (union over ``shapes``).
    Typical = inside the central ``level`` range, the ends interpolated on the quantile curves; for a release that
    TLL ``clamped`` to its floor, the simulated releases have a point mass there and the quantiles cannot be
    interpolated, so the ends are interpolated on the tail probabilities instead (the release is typical for every
    scale whose chance of clamping is at least (1 - level) / 2; :func:`_invert_tails`). A coarse geometric grid over
    (0, gamma], then a finer one from the coarse lower end / 1.5 to 1.5 times the coarse upper end. Above ``DIRECT_SUBJECTS`` no cohort is simulated: TLL's two sums at n are drawn from their
    central-limit law under the record law (as in :func:`_tll_at_n`). Vectorised over cohorts, records and draws. Returns (lower, upper, error sd at the released scale)."""
    a = (1.0 - level) / 2.0
    rng = np.random.default_rng(seed)
    step = max(1, int(math.ceil(shapes.size / 5)))
    ps = np.unique(np.concatenate([shapes[::step], shapes[-1:]]))
    b = 2.0 * mech.rows_per_subject / mech.epsilon_scale
    q = float(np.clip(shape, 1e-3, None))
    rescale = n > DIRECT_SUBJECTS
    floor = math.exp(-mech.omega)
    lows: list[float] = []
    highs: list[float] = []
    sds: list[float] = []
    coarse: list[tuple[float, float]] = []
    for grid in (np.geomspace(1e-3, mech.gamma, 16), None):
        if grid is None:  # refine around the coarse answer
            coarse = list(zip(lows, highs))
            lo_c, hi_c = min(lows), max(highs)
            # (twice as fine for a clamped release, whose ends are read off the tail probabilities)
            grid = np.geomspace(max(lo_c / 1.5, 1e-4), min(max(hi_c * 1.5, 2e-3), mech.gamma), 24 if clamped else 12)
            lows, highs = [], []
        for j, p in enumerate(ps):
            if rescale:  # the two sums at n from the record law (central limit), as in _tll_at_n
                mom = [record_law(float(p), float(lam), exact_censoring_limit(float(p), share, float(lam)),
                                  mech.omega).power_moments(np.array([q])) for lam in grid]
                m1, var, cov = (np.array([float(np.asarray(x[i])[0]) for x in mom])[:, None, None] for i in range(3))
                md = np.array([x[3] for x in mom])[:, None, None]  # the event share (the horizon censors more at
                var_d = md * (1.0 - md)                              # larger lambda)
                zn = rng.standard_normal((2, grid.size, cohorts, DRAWS))
                slope = np.divide(cov, var_d, out=np.zeros_like(cov), where=var_d > 0)
                dd = n * md + np.sqrt(n * var_d) * zn[0]
                tau = n * m1 + math.sqrt(n) * (slope * np.sqrt(var_d) * zn[0]
                                               + np.sqrt(np.clip(var - slope * cov, 0.0, None)) * zn[1])
            else:
                e = rng.exponential(size=(cohorts, n))
                u = rng.random((cohorts, n))
                # per candidate lambda: times lambda E^(1/p), censoring min(U(0, c), 1) that censors the public share
                t1 = e ** (1.0 / p)
                taus, ds = [], []
                for lam in grid:
                    c = exact_censoring_limit(float(p), share, float(lam))
                    cens = np.minimum(u * c, 1.0) if math.isfinite(c) else np.ones_like(u)
                    t = t1 * lam
                    taus.append(np.sum(np.clip(np.minimum(t, cens), floor, 1.0) ** q, axis=1))
                    ds.append((t <= cens).sum(axis=1).astype(float))
                tau, dd = np.stack(taus)[..., None], np.stack(ds)[..., None]  # (grid, cohorts, 1)
            z = rng.laplace(0.0, b, size=(2, grid.size, cohorts, DRAWS))
            tau_z, del_z = tau + z[0], dd + z[1]
            clamps = ((tau_z < math.exp(-mech.omega * q)) | (del_z < 1.0)).reshape(grid.size, -1).mean(axis=1)
            tau_n = np.maximum(tau_z, math.exp(-mech.omega * q))
            del_n = np.maximum(del_z, 1.0)
            with np.errstate(over="ignore"):
                flat = ((tau_n / del_n) ** (1.0 / q)).reshape(grid.size, -1)
            q_lo, q_hi = np.quantile(flat, [a, 1 - a], axis=1)
            if clamped:  # a release at TLL's floor: typical for every scale that clamps at least (1 - level) / 2
                lo, hi = _invert_tails(grid, flat, scale, a, mech.gamma, empty=coarse[j] if coarse else None)
            else:
                lo, hi = _invert(grid, *clamp_aware_ranges(flat, clamps, level), scale, mech.gamma,
                                 empty=coarse[j] if coarse else None)
            lows.append(lo)
            highs.append(hi)
            sds.append(float(np.interp(scale, grid, (q_hi - q_lo) / (2 * Z95))))
    return max(min(lows), 0.0), max(highs), max(sds)


def _additive_scale_interval(mech: WeibullMechanism, shapes: np.ndarray, scale: float, n: int, share: float,
                             cohorts: int, draws: int, seed: int, level: float, points: int = 400
                             ) -> tuple[float, float]:
    """A baseline's scale interval: every candidate scale lambda in (0, gamma] whose release law makes the released
    scale typical, for some accepted shape (union over ``shapes``). The release is the clipped MLE's scale plus
    Laplace noise of the public scale b; its error (release - lambda) is taken to have the same law for every
    lambda (the noise dominates it): the noiseless errors are simulated once per shape at the scale of
    :func:`matching_scale`, and the noise is integrated out exactly (:func:`laplace_mixture_quantiles`). Each
    candidate's region leaves out the tails of :func:`boundary_tails` (central away from 0 and gamma), so the
    interval stays inside [0, gamma] and no release gets an empty one; the ends are interpolated on a grid of
    ``points`` scales."""
    noise = additive_noise(mech, n)
    assert noise is not None  # called for a baseline with additive noise only
    b = noise[1]
    g = mech.gamma
    grid = np.linspace(g / points, g, points)
    tails = np.array([boundary_tails(float(x), b, g, 1.0 - level) for x in grid])
    probs = np.stack([tails[:, 0], 1.0 - tails[:, 1]])
    lam0 = float(matching_scale(mech, float(shapes[0]), scale, shapes[:1])[0])
    seeds = np.random.SeedSequence(seed).generate_state(max(shapes.size, 1))
    lows, highs = [], []
    for j, p in enumerate(shapes):
        _, ls = baseline_statistics(mech, float(p), lam0, n, share, cohorts, draws, int(seeds[j]))
        err = ls[np.isfinite(ls)] - lam0
        q = laplace_mixture_quantiles(np.broadcast_to(err, (points, err.size)), b, probs)
        lo, hi = _invert(grid, grid + q[0], grid + q[1], scale, g)
        lows.append(lo)
        highs.append(hi)
    return max(min(lows), 0.0), min(max(highs), g)
