"""Intervals for private Weibull shape and scale that carry the privacy noise (docs/mechanisms.md, section 8).

Parametric bootstrap of the whole pipeline, inverted (post-processing: it reads the release and public
inputs only, never the data). For a candidate true shape p (a grid over (0, gamma], the scale held at
the released one):

1. simulate cohorts of the public size n in normalised time: T = lambda E^(1/p), E standard exponential,
   independent uniform censoring U(0, c), and follow-up ends at the horizon (normalised time 1: a time beyond it
   is censored there), C = min(U(0, c), 1), with c set so that the public censoring share is censored (c = inf
   when the horizon alone censors that much), then t <- clip(min(T, C), e^-omega, 1) as the code normalises real
   data. Without the end of follow-up, a truth whose scale is beyond the horizon (flchain: 2.7 horizons) put
   events at time 1 that real data never have, and the intervals missed the release and the MLE;
2. run the same mechanism on each simulated cohort several times with seeded simulation noise (LSP: the
   ladder of the simulated cohort), so the simulated releases contain sampling error and privacy noise
   together. The baselines (Laplace, sample and aggregate) add Laplace noise of a public scale to a noiseless
   statistic, so for them only the statistic is simulated (the clipped MLE; the average of block MLEs over
   fresh blocks) and the noise is integrated out exactly: the release's law is the mixture of Laplace laws
   centred on the simulated statistics (Rao-Blackwellised), whose quantiles are computed, not sampled;
3. the shape interval is every candidate p whose central 95% range of simulated released shapes contains
   the released shape (test inversion: a coarse grid, then a finer one around the accepted range; for the
   baselines the 95% region leaves out the tails of :func:`boundary_tails`, central away from 0 and gamma, so
   no release is typical for no candidate; a baseline interval that holds no accepting candidate is the whole
   range, with a warning); the tiny shapes whose cohorts collapse onto the floor e^-omega (heavy censoring) do
   not decide the interval (:func:`_invert`); the scale interval of TLL inverts TLL recomputed at the released
   shape on cohorts from each accepted shape (union over them); the baselines' scale is inverted over
   (0, gamma] the same way as their shape, for the accepted shapes (:func:`_additive_scale_interval`).

Above 5,000 subjects (``DIRECT_SUBJECTS``) no cohort of n records is simulated: the sampling part of a
release at n comes from the exact law of one clipped, censored record (:class:`RecordLaw`: the MLE's
large-sample limit and sandwich variance, TLL's sums by the central limit theorem) and the LSP noise from
ladders of 2,000-record cohorts, rescaled to n (:func:`rescaled_releases`), so intervals exist at any n.

Inversion instead of the plain bootstrap pivot, because the LSP's error law changes strongly with the
truth (at n = 200 and epsilon 1 the released shape ranges over most of (0, gamma]; the plain pivot
covered the true shape 63% of the time in our runs).

Public inputs: the declared number of subjects n, the horizon, omega, gamma, K, the blocks, and the declared
censoring share. A release reads none of them off the data unless a person accepted it (n counted, the share rounded
to 5%: :func:`n_disclosure`, :func:`censoring_disclosure`), and is then not DP as run: the intervals of a release at
the cohort's exact n reproduce only at that n, so they would publish it. A release's intervals are computed by its
reader from the record alone (:mod:`dpsurv_core.weibull.readout`).
The simulation's seed is derived from the released numbers, so the interval of a release is reproducible.
Sources: Efron and Tibshirani (1993) for the bootstrap and test inversion; Ferrando, Wang and Sheldon
(2022) for the parametric bootstrap of private estimators.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.weibull.censoring import (  # noqa: F401 (re-exported for the pages and the command line)
    censored_share,
    censoring_disclosure,
    censoring_share,
    check_share,
    exact_censoring_limit,
    n_disclosure,
    uniform_censoring_limit,
)
from dpsurv_core.weibull.mechanisms import (
    LspTll,
    SampleAggregateWeibull,
    WeibullEstimates,
    WeibullMechanism,
)
from dpsurv_core.weibull.simulation import (  # noqa: F401 (re-exported)
    COARSE,
    COHORTS,
    DIRECT_SUBJECTS,
    DRAWS,
    FINE,
    LEVEL,
    MAX_COHORTS,
    NOISE_SHARE_SCALE,
    WIDE_LEVEL,
    Z95,
    additive_noise,
    baseline_statistics,
    boundary_tails,
    fitted_limit,
    laplace_mixture_quantiles,
    record_law,
    rescaled_releases,
    seed_of,
    simulate_releases,
    simulate_samples,
)
from dpsurv_core.weibull.weibull_warnings import floor_warning, weibull_warnings

if TYPE_CHECKING:  # a type only: the release reader (dpsurv_core.weibull.readout) imports this module without the data
    pass

METHOD = ("parametric bootstrap inverted over the true shape ({grid} candidate shapes): cohorts of the public size n "
          "simulated with {share:.0%} uniform censoring, the same mechanism rerun on each with simulated noise ({cohorts} "
          "cohorts x {draws} releases per candidate); {level:.0%} interval = the candidates whose simulated releases "
          "make the released value typical (sampling error and privacy noise together)")
METHOD_ADDITIVE = ("parametric bootstrap inverted over the true shape ({grid} candidate shapes): cohorts of the public "
                   "size n simulated with {share:.0%} uniform censoring, the mechanism's noiseless statistic computed on "
                   "each ({stats} per candidate), and its public Laplace noise integrated out exactly (the release's "
                   "law is the mixture of Laplace laws centred on those statistics); {level:.0%} interval = the "
                   "candidates whose release law puts the released value inside its central {level:.0%}")


@dataclass
class ParameterInterval:
    """One parameter's release with its noise-aware interval and the simulated error's spread."""

    estimate: float
    lower: float
    upper: float
    error_sd: float  # standard deviation of the simulated error (sampling + noise)


@dataclass
class WeibullInference:
    """Noise-aware intervals of one release (shape, scale in the data's unit, scale normalised) and warnings."""

    shape: ParameterInterval
    scale: ParameterInterval
    scale_normalised: ParameterInterval
    method: str
    censoring: float
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        def one(p: ParameterInterval) -> dict[str, float]:
            return {"estimate": p.estimate, "lower": p.lower, "upper": p.upper, "error_sd": p.error_sd}

        return {"shape": one(self.shape), "scale": one(self.scale), "scale_normalised": one(self.scale_normalised),
                "level": LEVEL, "method": self.method, "censoring_share": self.censoring, "warnings": self.warnings}


WALD_METHOD = ("Wald 95% interval on the log scale from the observed information of the Weibull likelihood (the "
               "normalised times, as the fit reads them): the sampling error only, no noise; R's survreg intervals for "
               "log(scale) and the intercept")


def wald_intervals(sample: Any, shape: float, scale_normalised: float, horizon: float,
                   level: float = LEVEL) -> WeibullInference | None:
    """The non-private fit's Wald intervals: with a = log p, b = log lambda and u = log x - b over the distinct
    normalised times (counts c, events e), w = c exp(p u), z = p u, the log-likelihood is
    E a + p sum(e u) - sum(e log x) - sum(w), whose observed information is
    I_aa = sum(w z (1 + z)) - p sum(e u), I_ab = p E - p sum(w (1 + z)), I_bb = p^2 sum(w); the limits are
    p exp(-/+ z_q se(a)) and lambda exp(-/+ z_q se(b)). None where the fit sits on a bound (no information there)."""
    from statistics import NormalDist  # scipy.special would cost this otherwise light command a fifth of a second

    if not (shape > 0 and scale_normalised > 0 and math.isfinite(shape) and math.isfinite(scale_normalised)):
        return None
    p, b = float(shape), math.log(float(scale_normalised))
    u = np.asarray(sample.lt_u, float) - b
    c, e = np.asarray(sample.c_u, float), np.asarray(sample.e_u, float)
    z = p * u
    w = c * np.exp(z)
    events = float(e.sum())
    info = np.array([[float(np.sum(w * z * (1 + z)) - p * np.sum(e * u)), float(p * events - p * np.sum(w * (1 + z)))],
                     [0.0, float(p * p * np.sum(w))]])
    info[1, 0] = info[0, 1]
    try:
        cov = np.linalg.inv(info)
    except np.linalg.LinAlgError:
        return None
    if not (cov[0, 0] > 0 and cov[1, 1] > 0):
        return None
    q = NormalDist().inv_cdf(0.5 + level / 2)
    se_a, se_b = math.sqrt(cov[0, 0]), math.sqrt(cov[1, 1])
    sh = ParameterInterval(p, p * math.exp(-q * se_a), p * math.exp(q * se_a), p * se_a)
    lam = float(scale_normalised)
    sn = ParameterInterval(lam, lam * math.exp(-q * se_b), lam * math.exp(q * se_b), lam * se_b)
    sc = ParameterInterval(lam * horizon, sn.lower * horizon, sn.upper * horizon, sn.error_sd * horizon)
    return WeibullInference(sh, sc, sn, WALD_METHOD, float("nan"), [])


def _quantile_curves(mech: WeibullMechanism, grid: np.ndarray, lam0: float | np.ndarray, n: int, share: float,
                     cohorts: int, draws: int, seed: int, level: float, ratio: bool) -> tuple[np.ndarray, ...]:
    """At each candidate shape of ``grid`` (scale lam0), as arrays over the grid: the acceptance region of the released
    shape (its central ``level`` range; for a baseline the ``level`` range with the tails of
    :func:`boundary_tails`), the central ``level`` range of the released scale's pivot (ratio to lam0, or
    difference), and the central ``level`` range of the released shape (for its error's spread)."""
    a = (1.0 - level) / 2.0
    out = np.empty((6, grid.size))
    seeds = np.random.SeedSequence(seed).generate_state(grid.size)
    lams = np.broadcast_to(np.asarray(lam0, dtype=float), grid.shape)
    noise = additive_noise(mech, n)
    for g, p in enumerate(grid):
        if noise is not None:  # a baseline: noiseless statistics, the public Laplace noise integrated out exactly
            ps, ls = baseline_statistics(mech, float(p), float(lams[g]), n, share, cohorts, draws, int(seeds[g]))
            piv = ls / lams[g] if ratio else ls - lams[g]
            ok_p, ok_l = np.isfinite(ps), np.isfinite(piv)
            lo_t, hi_t = boundary_tails(float(p), noise[0], mech.gamma, 1.0 - level)
            qs = laplace_mixture_quantiles(ps[ok_p], noise[0], [lo_t, 1.0 - hi_t, a, 1.0 - a])
            qr = laplace_mixture_quantiles(piv[ok_l], noise[1] / (lams[g] if ratio else 1.0), [a, 1.0 - a])
            out[:, g] = [qs[0], qs[1], qr[0], qr[1], qs[2], qs[3]]
            continue
        ps, ls = simulate_releases(mech, float(p), float(lams[g]), n, share, cohorts, draws, int(seeds[g]))
        piv = ls / lams[g] if ratio else ls - lams[g]
        ps, piv = ps[np.isfinite(ps)], piv[np.isfinite(piv)]
        qp = np.quantile(ps, [a, 1 - a]).tolist()
        out[:, g] = qp + np.quantile(piv, [a, 1 - a]).tolist() + qp
    return tuple(out)


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
            empty: tuple[float, float] | None = None) -> tuple[float, float]:
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
    value, which holds no accepted candidate (:func:`_accepts` lets the caller tell)."""
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
    after = np.flatnonzero(large[F:])
    U = F + int(after[0]) if after.size else grid.size
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


def _truncated(mech: WeibullMechanism) -> WeibullMechanism:
    """For simulation only: LSP with the ladder cut at the rung K' whose weight exp(-K' eps / (4 m)) is below e^-40
    relative to the first (the rungs beyond it are never drawn in practice; this makes the simulation 3-6 times
    faster and changes the simulated law by less than 1e-17)."""
    if not isinstance(mech, LspTll):
        return mech
    k = int(math.ceil(40.0 * 4.0 * mech.rows_per_subject / mech.epsilon))
    if k >= mech.rungs:
        return mech
    return LspTll(mech.epsilon, mech.horizon, mech.omega, mech.gamma, k, mech.rows_per_subject)


def cohorts_for(mech: WeibullMechanism, n: int) -> int:
    """Simulated cohorts per candidate shape: ``COHORTS``, and for LSP + TLL on the direct route (n up to
    ``DIRECT_SUBJECTS``) ``COHORTS`` x epsilon sqrt(n) / (m ``NOISE_SHARE_SCALE``) when that is larger (m rows per
    subject; at most ``MAX_COHORTS``): 8 at n = 200 for every epsilon up to 2 and at n = 2,000 and epsilon 0.5, 12 at
    epsilon 1, 24 at epsilon 2. The baselines' noise is integrated out exactly and dwarfs their sampling error;
    above ``DIRECT_SUBJECTS`` the sampling part is drawn afresh for every simulated release
    (:func:`rescaled_releases`)."""
    if not isinstance(mech, LspTll) or n > DIRECT_SUBJECTS:
        return COHORTS
    share = mech.epsilon * math.sqrt(n) / (mech.rows_per_subject * NOISE_SHARE_SCALE)
    return int(min(MAX_COHORTS, max(COHORTS, round(COHORTS * share))))


def _fitted_upper(mech: WeibullMechanism, shape: float, scale: float, share: float, x: float) -> tuple[float, float]:
    """(the larger of the candidate shape x and the shape the non-private fit converges to on Weibull(x) cohorts with
    the scale :func:`matching_scale` gives it, the share of those cohorts' records at the floor e^-omega).

    A release estimates that fitted shape, which lies above the Weibull one where the floor holds many records
    (:func:`~dpsurv_core.weibull.simulation.fitted_limit`), while the inversion returns the Weibull shapes that make
    the release typical. The shape interval [a, b] is therefore widened to [a, fitted(b)] (fitted(p) >= p, rising
    with p): it holds the Weibull shape if the times are Weibull down to the floor, and in any case the shape of the
    best Weibull fit to the times as the fit reads them, the pseudo-true value of a misspecified fit (Huber 1967;
    White 1982). Without it, under log-normal times with sigma 2 (n = 2,000, epsilon 1; docs/coverage-models.md)
    the interval held that best fit's shape in about 80% of releases, missing it from below. x is kept where the
    fitted law is degenerate (half the records or more at the floor)."""
    fitted, floor_share = fitted_limit(max(x, 1e-3), float(matching_scale(mech, shape, scale, np.array([max(x, 1e-3)]))[0]),
                                       share, mech.omega, mech.gamma)
    if not (math.isfinite(fitted) and floor_share < 0.5):
        return x, floor_share
    return max(x, fitted), floor_share


def weibull_intervals(mech: WeibullMechanism, est: WeibullEstimates, n: int, share: float, trial: int = 0,
                      cohorts: int | None = None, draws: int = DRAWS, level: float = LEVEL) -> WeibullInference:
    """Noise-aware intervals for trial ``trial`` of a private release (see the module docstring); ``cohorts``
    simulated cohorts per candidate shape (default :func:`cohorts_for`).

    Parameters
    ----------
    mech : WeibullMechanism
        The mechanism that released.
    est : WeibullEstimates
        Its release.
    n : int
        The number of subjects (declared).
    share : float
        The censoring share (declared).
    trial : int, default 0
        The draw read.
    cohorts : int, optional
        Simulated cohorts per candidate shape.
    draws : int, default 25
        Noise draws per simulated cohort.
    level : float, default 0.95
        Confidence level.

    Returns
    -------
    WeibullInference
        The shape and scale intervals.
    """
    share = check_share(share)
    cohorts = cohorts_for(mech, n) if cohorts is None else int(cohorts)
    p, lam = float(est.shape[trial]), float(est.scale_normalised[trial])
    g = mech.gamma
    seed = seed_of(p, lam, n, share, mech.epsilon)
    ratio = isinstance(mech, LspTll)
    sim = _truncated(mech)
    # stage 1: a coarse geometric grid over (0, gamma]; stage 2: a finer grid around the accepted range
    coarse = np.geomspace(0.05, g, COARSE)
    lo1, hi1, *_ = _quantile_curves(sim, coarse, matching_scale(mech, p, lam, coarse), n, share,
                                      max(2, cohorts // 4), 4 * draws, seed, level, ratio)
    a, b = _invert(coarse, lo1, hi1, p, g)
    # the fine grid spans the coarse answer and a quarter of it beyond each end (the coarse quantiles are noisy)
    pad = 0.25 * (b - a) + 0.01
    fine = np.linspace(max(a - pad, 0.02), min(b + pad, g), FINE)
    lo2, hi2, rlo, rhi, clo, chi = _quantile_curves(sim, fine, matching_scale(mech, p, lam, fine), n, share, cohorts,
                                                    2 * draws, seed + 1, level, ratio)
    a, b = _invert(fine, lo2, hi2, p, g, empty=(a, b))
    if additive_noise(mech, n) is None:
        # no candidate's central range holds the released shape (an atypical draw): the inversion is then empty and
        # the grid's edge is no answer. The interval becomes the candidates whose central WIDE_LEVEL range of the same
        # simulated releases holds it (on both grids), then widened to hold the release itself, and a warning says so
        atypical = not a <= p <= _fitted_upper(mech, p, lam, share, b)[0]
        if atypical:
            for grid, lam_g, k, d, s in ((coarse, matching_scale(mech, p, lam, coarse), max(2, cohorts // 4),
                                          4 * draws, seed), (fine, matching_scale(mech, p, lam, fine), cohorts,
                                                             2 * draws, seed + 1)):
                w_lo, w_hi, *_ = _quantile_curves(sim, grid, lam_g, n, share, k, d, s, WIDE_LEVEL, ratio)
                held = (w_lo <= p) & (p <= w_hi)
                if held.any():
                    a, b = min(a, float(grid[held].min())), max(b, float(grid[held].max()))
        a, b = min(a, p), max(b, p)
    else:
        # a baseline's release is noise-dominated and may lie anywhere (its interval, a set of shapes in (0, gamma],
        # need not hold it), but the interval must hold some candidate that accepts it: thanks to boundary_tails some
        # candidate accepts every release where the curves rise, and an interval holding no accepting candidate (an
        # empty inversion, or acceptances only among the tiny shapes _invert ignores) is no answer. The interval is
        # then the whole range, and the warning says the release is unusual for every shape
        atypical = not (_accepts(fine, lo2, hi2, p, a, b).size or _accepts(coarse, lo1, hi1, p, a, b).size)
        if atypical:
            a, b = 0.0, g
    sh = ParameterInterval(p, a, b, float(np.interp(p, fine, (chi - clo) / (2 * Z95))))
    keep = (fine >= a) & (fine <= b)
    if additive_noise(mech, n) is not None and not atypical:
        # the scale's union runs over the accepted shapes only (not over tiny shapes inside the interval that reject
        # the release: their cohorts sit on the floor e^-omega and their scale statistic is meaningless)
        accepted = keep & (lo2 <= p) & (p <= hi2)
        keep = accepted if accepted.any() else keep
    if not keep.any():
        keep = np.abs(fine - np.clip(p, a, b)) == np.abs(fine - np.clip(p, a, b)).min()
    if ratio:
        clamped = bool(est.clamped[trial]) if est.clamped is not None else False
        # the accepted candidates, or (at large n, where the shape interval is narrower than the fine grid's step)
        # points across the accepted range itself
        shapes = fine[keep] if keep.sum() >= 2 else np.linspace(a, b, 6)
        shapes = shapes[shapes > 0]
        s_lo, s_hi, sd = _tll_scale_interval(mech, p, lam, shapes if shapes.size else np.array([max(p, 1e-3)]), n,
                                             share, level, seed + 2, clamped=clamped)
    elif additive_noise(mech, n) is not None:
        kept = fine[keep]
        kept = kept[np.unique(np.linspace(0, kept.size - 1, min(kept.size, 4)).round().astype(int))]
        s_lo, s_hi = _additive_scale_interval(mech, kept, lam, n, share, cohorts, draws, seed + 2, level)
        sd = float(np.max((rhi[keep] - rlo[keep]) / (2 * Z95)))
    else:
        s_lo, s_hi = float(np.min(lam - rhi[keep])), float(np.max(lam - rlo[keep]))
        sd = float(np.max((rhi[keep] - rlo[keep]) / (2 * Z95)))
    sn = ParameterInterval(lam, max(s_lo, 0.0), max(s_hi, 0.0), sd)
    h = est.horizon
    sc = ParameterInterval(sn.estimate * h, sn.lower * h, sn.upper * h, sn.error_sd * h)
    if additive_noise(mech, n) is None:
        method = METHOD.format(cohorts=cohorts, share=share, draws=2 * draws, level=level, grid=COARSE + FINE)
    else:
        stats = cohorts * (2 * draws if isinstance(mech, SampleAggregateWeibull) else 1)
        method = METHOD_ADDITIVE.format(share=share, stats=stats, level=level, grid=COARSE + FINE)
    sh.upper, floor_share = _fitted_upper(mech, p, lam, share, b)
    warnings = weibull_warnings(mech, sh, sn, h)
    if sh.upper - b > 0.25 * (b - a):
        warnings.append(floor_warning(a, b, _fitted_upper(mech, p, lam, share, a)[0], sh.upper, floor_share,
                                      mech.omega, h))
    if atypical and additive_noise(mech, n) is None:
        warnings.append(f"The released shape {p:.3g} is unusual for every true shape dpsurv tried, so its interval was "
                        "widened to include it: read both with care, and prefer a larger epsilon or cohort.")
    elif atypical:
        warnings.append(f"The released shape {p:.3g} is unusual for every true shape dpsurv tried, so its interval is "
                        "the whole range: read both with care, and prefer a larger epsilon or cohort.")
    return WeibullInference(sh, sc, sn, method, share, warnings)


def release_intervals(name: str, epsilon: float, shape: float, scale_normalised: float, n: int, share: float,
                      horizon: float, omega: float, gamma: float, rungs: int, rows_per_subject: int = 1,
                      blocks: int | None = None, block_size: int | None = None, clamped: bool = False
                      ) -> dict[str, Any]:
    """:func:`weibull_intervals` of one released (shape, scale / horizon) of catalogue mechanism ``name``, from plain
    numbers only (the release, whether TLL ``clamped`` it, and its public inputs), as a dict: what a page or a
    background process computes and caches under these arguments (post-processing; the same arguments give the
    same intervals).

    Parameters
    ----------
    name : str
        The catalogue mechanism's name.
    epsilon : float
        Its epsilon.
    shape, scale_normalised : float
        The released shape and scale / horizon.
    n : int
        The number of subjects (declared).
    share : float
        The censoring share (declared).
    horizon, omega, gamma : float
        The public horizon and bounds.
    rungs : int
        LSP's rungs.
    rows_per_subject : int, default 1
        Rows each subject may have.
    blocks, block_size : int, optional
        Sample and aggregate's blocks.
    clamped : bool, default False
        Whether TLL clamped the release.

    Returns
    -------
    dict
        The intervals of shape and scale, with their method and warnings.
    """
    from dpsurv_core.privacy import catalogue

    extra = {} if block_size is None else {"block_size": block_size}
    mech = catalogue.get(catalogue.WEIBULL, name).build(epsilon, horizon=horizon, omega=omega, gamma=gamma,
                                                        rungs=rungs, rows_per_subject=rows_per_subject, blocks=blocks,
                                                        **extra)
    est = WeibullEstimates(name, np.array([shape]), np.array([scale_normalised]), horizon,
                           clamped=np.array([bool(clamped)]))
    assert isinstance(mech, WeibullMechanism)  # the Weibull family's factory makes one
    return weibull_intervals(mech, est, n, share).to_dict()
