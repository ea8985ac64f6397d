"""Simulated Weibull releases for the noise-aware intervals (Efron and Tibshirani 1993, parametric bootstrap):
cohorts of the public size n drawn from a candidate truth with the declared censoring, the mechanism rerun on each
with seeded simulation noise, and, above 5,000 subjects, the exact law of one clipped, censored record
(:class:`RecordLaw`) with the LSP noise from ladders of 2,000-record cohorts rescaled to n. The baselines' Laplace
noise is integrated out exactly (:func:`laplace_mixture_quantiles`)."""


from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.censoring import censoring_limit, exact_censoring_limit
from dpsurv_core.weibull.mechanisms import (
    LaplaceWeibull,
    LspTll,
    SampleAggregateWeibull,
    WeibullMechanism,
    clipped_mle,
)
from dpsurv_core.weibull.model import WeibullSample

if TYPE_CHECKING:  # a type only: the release reader (dpsurv_core.weibull.readout) imports this module without the data
    pass

COHORTS = 8
# LSP + TLL below DIRECT_SUBJECTS: COHORTS simulated cohorts per candidate while the LSP noise is a large part of the
# release's spread, more (up to MAX_COHORTS) once the sampling error dominates: each simulated cohort gives one value
# of the sampling error, and 8 of them put the release law's 2.5% and 97.5% quantiles too close together (the lowest
# of 8 normal draws is on average 1.4 standard deviations out, not 1.96): at n = 2,000 and epsilon 2 the shape
# interval covered 90% (60 trials) with 8 cohorts. The noise's share falls as epsilon sqrt(n) / m grows (the LSP
# noise scales as m / (epsilon n), the sampling error as 1 / sqrt(n)); COHORTS times that over NOISE_SHARE_SCALE
NOISE_SHARE_SCALE = 30.0
MAX_COHORTS = 32
# up to DIRECT_SUBJECTS the candidate cohorts are simulated at the public size n; above it the sampling part comes
# from the record law (central limit) and the LSP noise from ladders of LADDER_SUBJECTS records rescaled to n, the
# baselines from cohorts of SIM_SUBJECTS (see rescaled_releases): any n, bounded memory and time. The direct route
# would need far more than COHORTS cohorts once the sampling error dominates, and an LSP ladder per cohort costs
# time proportional to n.
DIRECT_SUBJECTS = 5_000
SIM_SUBJECTS = 5_000
LADDER_SUBJECTS = 2_000
TABLE_CELLS = 4_000
DRAWS = 25
COARSE = 12
FINE = 10
Z95 = 1.959963984540054
LEVEL = 0.95
WIDE_LEVEL = 0.995  # the fallback range for a release that no candidate's central 95% range holds


@dataclass(frozen=True)
class RecordLaw:
    """The law of one normalised record of the simulation, as a fine weighted table: time
    x = clip(min(T, C), e^-omega, 1) and event 1{T <= C}, T ~ Weibull(shape, scale), C = min(U(0, c), 1). ``censored`` and
    ``events`` are the probabilities of each time without and with an event (they sum to 1)."""

    x: np.ndarray
    censored: np.ndarray
    events: np.ndarray

    @property
    def event_share(self) -> float:
        return float(self.events.sum())

    def mean_power(self, q: float) -> float:
        """E[x^q] (the mean of one record's term of TLL's sum at shape q)."""
        return float(np.exp(q * np.log(self.x)) @ (self.censored + self.events))

    def mle(self, gamma: float) -> tuple[float, float]:
        """The large-sample limit of the MLE on such records: the root p of E[x^p ln x] / E[x^p] = 1/p + E[d ln x] / E[d]
        (Equation 4 with means for sums; the root in (0, gamma], gamma when there is none), and
        lambda = (E[x^p] / E[d])^(1/p) clipped to gamma."""
        from scipy.optimize import brentq

        lx, w, w1 = np.log(self.x), self.censored + self.events, self.events
        mean_d = float(w1 @ lx) / float(w1.sum())

        def h(p: float) -> float:
            e = np.exp(p * (lx - lx.max())) * w
            return float(e @ lx) / float(e.sum()) - 1.0 / p - mean_d

        p = gamma if h(gamma) < 0 else float(brentq(h, 1e-6, gamma, xtol=1e-13))
        return p, float(min((self.mean_power(p) / w1.sum()) ** (1.0 / p), gamma))

    def sandwich(self, shape: float, scale: float) -> np.ndarray:
        """Per-record asymptotic covariance A^-1 B A^-1 of the MLE (shape, scale) at its limit (shape, scale), for the
        Weibull log-likelihood of a record l = d (ln p - p ln lambda + (p - 1) ln x) - (x / lambda)^p: B = E[score
        score'], A = -E[Hessian], expectations over the record law (the sandwich, because the clipped records are
        not exactly Weibull). The MLE on n records varies as this / n."""
        p, lam = shape, scale
        w0, w1 = self.censored, self.events
        w = w0 + w1
        lr = np.log(self.x / lam)
        z = np.exp(p * lr)
        sp1, sp0 = 1.0 / p + lr - z * lr, -z * lr
        sl1, sl0 = (p / lam) * (z - 1.0), (p / lam) * z
        b = np.array([[w1 @ sp1 ** 2 + w0 @ sp0 ** 2, w1 @ (sp1 * sl1) + w0 @ (sp0 * sl0)],
                      [0.0, w1 @ sl1 ** 2 + w0 @ sl0 ** 2]])
        b[1, 0] = b[0, 1]
        d = w1.sum()
        a_pl = d / lam - (w @ z) / lam - (p / lam) * (w @ (z * lr))
        a = np.array([[d / p ** 2 + w @ (z * lr ** 2), a_pl],
                      [a_pl, -d * p / lam ** 2 + p * (p + 1.0) / lam ** 2 * (w @ z)]])
        ai = np.linalg.inv(a)
        return ai @ b @ ai.T

    def power_moments(self, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(E[x^q], Var[x^q], Cov[x^q, d], E[d]) for an array of q: the per-record moments of TLL's two sums."""
        lx, w, w1 = np.log(self.x), self.censored + self.events, self.events
        xq = np.exp(np.multiply.outer(np.asarray(q, dtype=float), lx))
        m1, m2, md = xq @ w, (xq * xq) @ w, float(w1.sum())
        return m1, m2 - m1 * m1, xq @ w1 - m1 * md, md


def record_law(shape: float, scale: float, limit: float, omega: float, cells: int = TABLE_CELLS) -> RecordLaw:
    """:class:`RecordLaw` for censoring min(U(0, ``limit``), 1) (``limit`` = inf: at the horizon only), from the
    closed-form distribution of Y = min(T, U(0, c)) with the event: P(Y <= y, d = 1) = 1 - exp(-v) - Gamma(1 + 1/p)
    P(1 + 1/p, v) lambda / c and P(Y <= y, d = 0) = Gamma(1 + 1/p) P(1/p, v) lambda / c, v = (min(y, c) / lambda)^p,
    for y < 1; everything left is censored at the horizon (the atom at 1). ``cells`` geometric cells between the
    clipping limits (each represented by its geometric midpoint) plus the two clipped atoms."""
    from scipy.special import gamma as gamma_fn
    from scipy.special import gammainc

    g = float(gamma_fn(1.0 + 1.0 / shape))
    r = scale / limit if math.isfinite(limit) else 0.0

    def cdf(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = (np.minimum(y, limit) / scale) ** shape
        return 1.0 - np.exp(-v) - g * gammainc(1.0 + 1.0 / shape, v) * r, g * gammainc(1.0 / shape, v) * r

    edges = np.geomspace(math.exp(-omega), 1.0, cells + 1)
    e1, e0 = cdf(edges)
    t1, t0 = cdf(np.array([np.inf]))
    x = np.concatenate([[edges[0]], np.sqrt(edges[:-1] * edges[1:]), [1.0]])
    events = np.concatenate([[e1[0]], np.diff(e1), [0.0]])
    censored = np.concatenate([[e0[0]], np.diff(e0), [t1[0] - e1[-1] + t0[0] - e0[-1]]])
    return RecordLaw(x, np.clip(censored, 0.0, None), np.clip(events, 0.0, None))


def fitted_limit(shape: float, scale_normalised: float, share: float, omega: float, gamma: float
                 ) -> tuple[float, float]:
    """(the shape the non-private fit converges to, the share of records at the floor e^-omega) on cohorts of
    Weibull(shape, scale) times with the declared censoring share, normalised as the mechanisms read them: the limit
    of :meth:`RecordLaw.mle`. Below the floor every time is set to it, which raises the fitted shape above the
    Weibull one (by 0.035 at shape 0.64 and scale 0.26 horizons, where 5% of the times lie below it), so a release
    estimates this limit whatever the law of the times, and the Weibull shape only when the times are Weibull down to
    the floor. (nan, nan) where the law is degenerate (a shape so small that its Gamma(1 + 1/p) overflows)."""
    if not (0.01 <= shape and scale_normalised > 0 and math.isfinite(scale_normalised)):
        return math.nan, math.nan
    law = record_law(shape, scale_normalised, exact_censoring_limit(shape, share, scale_normalised), omega)
    if not (np.isfinite(law.events).all() and np.isfinite(law.censored).all()):
        return math.nan, math.nan
    return law.mle(gamma)[0], float(law.events[0] + law.censored[0])


def simulate_samples(shape: float, scale_normalised: float, n: int, share: float, cohorts: int, omega: float,
                     horizon: float, rows_per_subject: int, rng: np.random.Generator,
                     limit: float | None = None) -> list[WeibullSample]:
    """``cohorts`` simulated normalised samples of size n (one array draw for all of them); censoring
    min(U(0, ``limit``), 1) (follow-up ends at the horizon), by default the limit that censors ``share`` (found on a
    fixed simulated sample)."""
    c = censoring_limit(shape, scale_normalised, share, rng) if limit is None else limit
    t = scale_normalised * rng.exponential(size=(cohorts, n)) ** (1.0 / shape)
    cens = rng.random((cohorts, n)) * c if math.isfinite(c) else np.full((cohorts, n), np.inf)
    cens = np.minimum(cens, 1.0)
    obs = np.clip(np.minimum(t, cens), math.exp(-omega), 1.0)
    d = (t <= cens).astype(np.int8)
    d[d.sum(axis=1) == 0, 0] = 1  # a cohort with no event has no fit; one event keeps the simulation defined
    return [WeibullSample(obs[b], d[b], horizon, omega, rows_per_subject) for b in range(cohorts)]


def seed_of(*values: float) -> int:
    """A deterministic seed from released numbers (the interval of a release is reproducible)."""
    h = hashlib.sha256(np.asarray(values, dtype=float).tobytes()).digest()
    return int.from_bytes(h[:8], "little")




def simulate_releases(mech: WeibullMechanism, shape: float, scale_normalised: float, n: int, share: float,
                      cohorts: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Released (shape, scale normalised) of the mechanism on ``cohorts`` cohorts simulated from the given truth,
    ``draws`` simulated releases each (arrays of cohorts x draws values). Above ``DIRECT_SUBJECTS`` subjects the
    cohorts are simulated at ``SIM_SUBJECTS`` and rescaled (:func:`rescaled_releases`)."""
    if n > DIRECT_SUBJECTS:
        return rescaled_releases(mech, shape, scale_normalised, n, share, cohorts, draws, seed)
    rng = np.random.default_rng(seed)
    samples = simulate_samples(shape, scale_normalised, n, share, cohorts, mech.omega, mech.horizon,
                               mech.rows_per_subject, rng)
    seqs = np.random.SeedSequence(seed).spawn(cohorts)
    ps, ls = [], []
    for s, sq in zip(samples, seqs):  # one mechanism run (vectorised over the draws) per simulated cohort
        est = mech.compute_many(s, SimulationNoise(sq), draws)
        ps.append(est.shape)
        ls.append(est.scale_normalised)
    return np.concatenate(ps), np.concatenate(ls)


def _tll_at_n(law: RecordLaw, q: np.ndarray, n: int, mech: WeibullMechanism, noise: SimulationNoise) -> np.ndarray:
    """TLL's released scale at shapes ``q`` on n records drawn from ``law``: its two sums (sum t^q and the number of
    events) are sums of n independent records, so (central limit) bivariate normal with n times the record's mean
    and covariance (:meth:`RecordLaw.power_moments`); then the mechanism's Laplace noise and clamps at n."""
    m1, var, cov, md = law.power_moments(q)
    var_d = md * (1.0 - md)
    z = noise.standard_normal((2, q.size))
    slope = cov / var_d if var_d > 0 else np.zeros_like(cov)
    delta = n * md + math.sqrt(n * var_d) * z[0]
    tau = n * m1 + math.sqrt(n) * (slope * math.sqrt(var_d) * z[0] + np.sqrt(np.clip(var - slope * cov, 0.0, None)) * z[1])
    b = 2.0 * mech.rows_per_subject / mech.epsilon_scale
    e = noise.laplace(b, (2, q.size))
    tau = np.maximum(tau + e[0], np.exp(-mech.omega * q))
    delta = np.maximum(delta + e[1], 1.0)
    with np.errstate(over="ignore"):
        return (tau / delta) ** (1.0 / q)


def rescaled_releases(mech: WeibullMechanism, shape: float, scale_normalised: float, n: int, share: float,
                      cohorts: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`simulate_releases` for a cohort of n records without simulating n records. A release is its noiseless
    statistic plus the mechanism's noise; the statistic's sampling law at n comes from the record law
    (:class:`RecordLaw`, computed exactly) and the noise from the mechanism run on smaller simulated cohorts:

    - LSP + TLL: p* ~ normal around the MLE's large-sample limit with the sandwich variance / n; the LSP offset
      (release - p*) is (m/n) times the offset of the mechanism run on cohorts of m = ``LADDER_SUBJECTS`` records
      (the ladder's rungs are k / size wide to first order, as each rung adds k to sums over the records, and the
      exponential mechanism picks the rung index with the same law at any size), drawn independently of p* (at
      large n the rung widths do not depend on the cohort's fluctuations to first order). TLL at the released
      shape: :func:`_tll_at_n`.
    - Laplace and sample and aggregate: the noiseless statistic of :func:`baseline_statistics` (cohorts of
      m = ``SIM_SUBJECTS`` records, deviations rescaled to n) plus the public Laplace noise of
      :func:`additive_noise` at n (the intervals themselves integrate that noise out exactly instead,
      :func:`laplace_mixture_quantiles`).

    For the baselines the noise (gamma / (epsilon/2) or gamma / (M epsilon/2)) is far larger than the sampling
    error at these sizes, so a few simulated cohorts represent the sampling part well enough."""
    rng = np.random.default_rng(seed)
    limit = exact_censoring_limit(shape, share, scale_normalised)
    law = record_law(shape, scale_normalised, limit, mech.omega)
    seqs = np.random.SeedSequence(seed).spawn(cohorts)
    p_lim, l_lim = law.mle(mech.gamma)
    ps, ls = [], []
    if isinstance(mech, LspTll):
        m = min(LADDER_SUBJECTS, n)
        sd = math.sqrt(law.sandwich(p_lim, l_lim)[0, 0] / n)
        samples = simulate_samples(shape, scale_normalised, m, share, cohorts, mech.omega, mech.horizon,
                                   mech.rows_per_subject, rng, limit=limit)
        for s, sq in zip(samples, seqs):
            noise = SimulationNoise(sq)
            lad = mech.ladder(s)
            est = mech.compute_many(s, noise, draws, ladder=lad)
            q = np.clip(p_lim + sd * noise.standard_normal(draws) + (m / n) * (est.shape - lad.p_star), 1e-6, None)
            ps.append(q)
            ls.append(_tll_at_n(law, q, n, mech, noise))
        return np.concatenate(ps), np.concatenate(ls)
    stat_p, stat_l = baseline_statistics(mech, shape, scale_normalised, n, share, cohorts, draws, seed)
    b_p, b_l = additive_noise(mech, n) or (0.0, 0.0)  # (0, 0): the non-private MLE
    if b_p <= 0 and b_l <= 0:
        return stat_p, stat_l
    z = SimulationNoise(np.random.SeedSequence([seed, 1])).laplace(np.array([[b_p], [b_l]]), (2, stat_p.size))
    return stat_p + z[0], stat_l + z[1]


def additive_noise(mech: WeibullMechanism, n: int) -> tuple[float, float] | None:
    """The Laplace scales (shape, scale) of a baseline's additive noise for a cohort of public size n, or None for a
    mechanism whose noise is not additive (LSP + TLL). Laplace baseline: gamma / (epsilon/2) each; sample and
    aggregate: m gamma / (M epsilon/2) with M the declared blocks or max(1, round(n / block size)), m rows per
    subject (as :class:`SampleAggregateWeibull` draws them). Both are public: they read n and the settings only."""
    if isinstance(mech, SampleAggregateWeibull):
        blocks = mech.blocks if mech.blocks is not None else max(1, int(round(n / mech.block_size)))
        b = mech.rows_per_subject * mech.gamma / blocks
    elif isinstance(mech, LaplaceWeibull):
        b = mech.gamma
    else:
        return None
    if math.isinf(mech.epsilon):
        return 0.0, 0.0
    return b / mech.epsilon_shape, b / mech.epsilon_scale


def baseline_statistics(mech: WeibullMechanism, shape: float, scale_normalised: float, n: int, share: float,
                        cohorts: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The noiseless statistics (shape, scale normalised) of a baseline on cohorts of public size n simulated from the
    given truth: the clipped MLE of each cohort (Laplace baseline: one per cohort) or the average of the block MLEs
    (sample and aggregate: ``draws`` random block assignments per cohort). A release is one of these plus the
    public Laplace noise of :func:`additive_noise`.

    Above ``DIRECT_SUBJECTS`` subjects the cohorts have m = ``SIM_SUBJECTS`` records: the clipped MLE's deviation
    from its large-sample limit (:meth:`RecordLaw.mle`) is rescaled by sqrt(m/n); for sample and aggregate the
    cohort of m records is cut into M_m = m M_n / n blocks of the same size as at n, and the average of the block
    MLEs keeps its centre (the mean over the simulated cohorts, which includes the block MLE's small-sample bias)
    with its deviation rescaled by sqrt(m / n) (the average of M block MLEs of n / M records varies as 1 / n
    whatever M)."""
    rng = np.random.default_rng(seed)
    seqs = np.random.SeedSequence(seed).spawn(cohorts)
    blocks_n = None
    if isinstance(mech, SampleAggregateWeibull):
        blocks_n = mech.blocks if mech.blocks is not None else max(1, int(round(n / mech.block_size)))
    if n <= DIRECT_SUBJECTS:
        samples = simulate_samples(shape, scale_normalised, n, share, cohorts, mech.omega, mech.horizon,
                                   mech.rows_per_subject, rng)
        if blocks_n is None:
            fits = np.array([clipped_mle(s, mech.gamma) for s in samples])
            return fits[:, 0], fits[:, 1]
        free = SampleAggregateWeibull(math.inf, mech.horizon, mech.omega, mech.gamma, min(blocks_n, n // 2 or 1),
                                      rows_per_subject=mech.rows_per_subject)
        avg = [free.block_statistic(s, SimulationNoise(sq), draws) for s, sq in zip(samples, seqs)]
        return np.concatenate([e.shape for e in avg]), np.concatenate([e.scale_normalised for e in avg])
    limit = exact_censoring_limit(shape, share, scale_normalised)
    m = SIM_SUBJECTS
    f = math.sqrt(m / n)
    samples = simulate_samples(shape, scale_normalised, m, share, cohorts, mech.omega, mech.horizon,
                               mech.rows_per_subject, rng, limit=limit)
    if blocks_n is None:
        p_lim, l_lim = record_law(shape, scale_normalised, limit, mech.omega).mle(mech.gamma)
        fits = np.array([clipped_mle(s, mech.gamma) for s in samples])
        return p_lim + f * (fits[:, 0] - p_lim), l_lim + f * (fits[:, 1] - l_lim)
    blocks_m = max(1, int(round(m * blocks_n / n)))
    free = SampleAggregateWeibull(math.inf, mech.horizon, mech.omega, mech.gamma, blocks_m,
                                  rows_per_subject=mech.rows_per_subject)
    avg = [free.block_statistic(s, SimulationNoise(sq), draws) for s, sq in zip(samples, seqs)]
    ps, ls = np.concatenate([e.shape for e in avg]), np.concatenate([e.scale_normalised for e in avg])
    return ps.mean() + f * (ps - ps.mean()), ls.mean() + f * (ls - ls.mean())


def laplace_mixture_quantiles(centres: np.ndarray, b: float, probs: np.ndarray | list[float]) -> np.ndarray:
    """Quantiles of S + Z, Z ~ Laplace(0, b) independent of S, S uniform over ``centres`` (the last axis): the root
    of F(x) = mean_i L((x - s_i) / b) = u, L the standard Laplace CDF, by Newton's method safeguarded by bisection
    inside [min s + b Q(u), max s + b Q(u)] (Q the standard Laplace quantile; the mixture's quantile lies between
    its components'). Exact up to the representation of S by its simulated values (Rao-Blackwellised: the noise is
    integrated out, not sampled). ``centres`` of shape (..., K) give quantiles of shape (len(probs), ...); ``probs``
    is a list of levels, or an array of shape (P, ...) with its own levels for each leading index of ``centres``.
    b = 0: the empirical quantiles of S."""
    s = np.asarray(centres, dtype=float)
    u = np.asarray(probs, dtype=float)
    if b <= 0:
        if u.ndim > 1:
            return np.stack([np.array([np.quantile(s[j], u[i, j]) for j in range(u.shape[1])])
                             for i in range(u.shape[0])])
        return np.quantile(s, u, axis=-1)
    shape = (u.shape[0],) + s.shape[:-1]
    if u.ndim == 1:
        u = u.reshape((-1,) + (1,) * (s.ndim - 1))
    q = -np.sign(u - 0.5) * np.log1p(-2.0 * np.abs(u - 0.5))
    lo = (s.min(axis=-1) + b * q) * np.ones(shape)
    hi = (s.max(axis=-1) + b * q) * np.ones(shape)
    target = u * np.ones(shape)
    x = (s.mean(axis=-1) + b * q) * np.ones(shape)
    for _ in range(60):
        z = (x[..., None] - s) / b
        e = np.exp(-np.abs(z))
        f = np.mean(np.where(z < 0, 0.5 * e, 1.0 - 0.5 * e), axis=-1) - target
        lo, hi = np.where(f < 0, x, lo), np.where(f < 0, hi, x)
        if np.all(np.abs(f) < 1e-13) or np.all(hi - lo < 1e-12 * (1.0 + np.abs(x))):
            break
        dens = np.mean(0.5 * e, axis=-1) / b
        with np.errstate(divide="ignore", invalid="ignore"):
            step = x - f / dens
        x = np.where(np.isfinite(step) & (step > lo) & (step < hi), step, 0.5 * (lo + hi))
    return x


def boundary_tails(shape: float, b: float, gamma: float, alpha: float) -> tuple[float, float]:
    """The lower and upper tail probabilities (summing to ``alpha``) left out of the acceptance region of candidate
    true shape ``shape`` in (0, gamma] when the release is a statistic plus Laplace noise of scale b. A Neyman
    construction covers the truth with probability 1 - alpha for ANY region of that probability, central or not;
    the central one leaves releases far outside (0, gamma] (likely when b is larger than gamma) accepted by no
    candidate, an empty interval (the problem of confidence belts at a physical boundary, Feldman and Cousins 1998).
    Here the lower tail is alpha G and the upper alpha (1 - G) with G = u / (u + v), u = 1 - exp(-shape / b),
    v = 1 - exp(-(gamma - shape) / b): G = 1/2 (the central region) for a candidate farther than a few b from both
    ends, G -> 0 at 0 and -> 1 at gamma, so a release far below 0 is accepted by the small shapes and one far above
    gamma by the large ones (about shape / gamma across the range when b >> gamma). Each candidate's region keeps
    probability 1 - alpha, so the coverage stays 1 - alpha, and no release is typical for no candidate."""
    if not (b > 0 and math.isfinite(b)):
        return alpha / 2.0, alpha / 2.0
    u, v = -math.expm1(-max(shape, 0.0) / b), -math.expm1(-max(gamma - shape, 0.0) / b)
    g = u / (u + v) if u + v > 0 else 0.5
    tiny = 1e-12
    return min(max(alpha * g, tiny), alpha - tiny), min(max(alpha * (1.0 - g), tiny), alpha - tiny)
