"""The band of a time-indexed release (Veeraragavan et al. 2024), which publishes a noisy curve and no counts.

Its band inverts the mechanism's own pipeline (noise, clipping, smoothing, running minimum; Neyman 1937): for a family
of Weibull-shaped true curves S_l(t) = exp(-(t / lam)^k), k in :data:`BAND_SHAPES`, B pipeline outputs give each
point's 95% range of outputs (2.5% cut from each tail, or 5% from one where clipping piles the outputs up at the other
end: :func:`acceptance_ranges`), and the band at t_i holds every S_l(t_i) whose range contains the released value (the
union over shapes). With a declared (public) group size n each simulated output starts from the Kaplan-Meier curve of
a cohort of n subjects drawn from S_l, censored uniformly at a declared (public) share (none: uncensored), so the band
carries the sampling error too; without a size it carries the noise only. The band is pointwise and stays as inverted:
cut back to a non-increasing band, a late point's miss would spread to the earlier ones.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from dpsurv_core.curves.bootstrap import seed_from
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import SimulationNoise

# ------------------------------------------------------------------------------------------ time-indexed
BAND_SHAPES = (0.75, 1.0, 1.5, 2.0)  # Weibull shapes of the candidate true curves (1: exponential)
FAMILY_SIZE = 41  # candidate curves per shape (between them the band interpolates)
CENSORING_STEPS = 1  # steps per grid bin in the censored cohorts' chain (2 changed no coverage; twice the cost)
CHUNK_DRAWS = 25  # pipeline draws run at once: the outputs are written into one (B, L, J) array, sorted in place


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
        out = np.empty((draws, *family.shape))  # (B, L, J)
        for lo in range(0, draws, CHUNK_DRAWS):  # the noise is drawn in the same order as in one call
            out[lo:lo + CHUNK_DRAWS] = mechanism.post_process(mechanism.noisy(family, noise,
                                                                              min(CHUNK_DRAWS, draws - lo)))
    else:
        out = _cohort_curves(points, shapes, scales, size, share, draws, noise.rng)  # overwritten by its outputs
        for lo in range(0, draws, CHUNK_DRAWS):
            out[lo:lo + CHUNK_DRAWS] = mechanism.post_process(mechanism.noisy(out[lo:lo + CHUNK_DRAWS], noise, 1)[0])
    lo_q, hi_q = acceptance_ranges(out, alpha, overwrite=True)
    return family, _monotone_in_s(lo_q), _monotone_in_s(hi_q)


def acceptance_ranges(out: np.ndarray, alpha: float, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Limits [a, b] (along every axis but the first) of ranges that hold at least 1 - alpha of the simulated outputs
    ``out`` (B, ...), alpha / 2 cut from each tail where the law is continuous. Clipping piles the outputs up at 0
    (and at the thresholds): where an atom swallows one tail's alpha / 2 (no draw lies below a), the unused share is
    cut from the other tail instead, so the range holds 1 - alpha and not up to 1 - alpha / 2 (the central range's
    over-coverage on uninformative releases; the boundary-aware tails of Weibull inference). Cuts are counted in
    draws and never exceed alpha B in all. ``overwrite``: ``out`` (a float array) is sorted in place, with no copy."""
    if overwrite:
        out.sort(axis=0)
        s = out
    else:
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
    from dpsurv_core.curves.memory import check_curves

    check_curves(mechanism, len(points), groups, obs.shape[0] if obs.ndim > 2 else 1)  # before the pipeline runs
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
