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

The test inversion (the candidates' nuisance scale, inverting the simulated ranges, the clamp-aware ranges and the
scale intervals) is in :mod:`dpsurv_core.weibull.inversion`; this module re-exports it.
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
from dpsurv_core.weibull.inversion import (  # noqa: F401 (re-exported: the tests read them here)
    _accepts,
    _additive_scale_interval,
    _invert,
    _invert_tails,
    _tll_scale_interval,
    clamp_aware_ranges,
    matching_scale,
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

READER_VERSION = 2
"""The newest rules of the Weibull reader (their history: :data:`dpsurv_core.weibull.readout.VERSION`)."""

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
                      cohorts: int | None = None, draws: int = DRAWS, level: float = LEVEL,
                      reader_version: int = READER_VERSION) -> WeibullInference:
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
    reader_version : int, default 2
        The Weibull reader's rules to follow (:data:`dpsurv_core.weibull.readout.VERSION`): 1 reads a record
        published with version 1 as it was read then.

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
    # reader version 2 runs a baseline's interval past too-large candidates that accepted ones follow (_invert); not
    # LSP + TLL's: its scale union runs over every shape inside the interval, and tiny shapes taken in that way, whose
    # candidate scales TLL clamps, accept every release and take the scale interval to gamma
    span = reader_version >= 2 and additive_noise(mech, n) is not None
    a, b = _invert(coarse, lo1, hi1, p, g, span=span)
    # the fine grid spans the coarse answer and a quarter of it beyond each end (the coarse quantiles are noisy)
    pad = 0.25 * (b - a) + 0.01
    fine = np.linspace(max(a - pad, 0.02), min(b + pad, g), FINE)
    lo2, hi2, rlo, rhi, clo, chi = _quantile_curves(sim, fine, matching_scale(mech, p, lam, fine), n, share, cohorts,
                                                    2 * draws, seed + 1, level, ratio)
    a, b = _invert(fine, lo2, hi2, p, g, empty=(a, b), span=span)
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
                      blocks: int | None = None, block_size: int | None = None, clamped: bool = False,
                      reader_version: int = READER_VERSION) -> dict[str, Any]:
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
    reader_version : int, default 2
        The Weibull reader's rules to follow (as in :func:`weibull_intervals`).

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
    return weibull_intervals(mech, est, n, share, reader_version=reader_version).to_dict()
