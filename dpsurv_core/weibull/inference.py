"""Intervals for private Weibull shape and scale that carry the privacy noise (docs/mechanisms.md, section 8).

Parametric bootstrap of the whole pipeline, inverted (post-processing: it reads the release and public
inputs only, never the data). For a candidate true shape p (a grid over (0, gamma], the scale held at
the released one):

1. simulate cohorts of the public size n in normalised time: T = lambda E^(1/p), E standard exponential,
   independent uniform censoring U(0, c) with c set so that the public censoring share is censored, then
   t <- clip(min(T, C), e^-omega, 1) exactly as the code normalises real data;
2. run the same mechanism on each simulated cohort several times with seeded simulation noise (LSP: the
   ladder of the simulated cohort; SAA: fresh blocks; Laplace: fresh noise), so the simulated releases
   contain sampling error and privacy noise together;
3. the shape interval is every candidate p whose central 95% range of simulated released shapes contains
   the released shape (test inversion: a coarse grid, then a finer one around the accepted range);
   the scale interval is the union, over the accepted shapes, of the pivot intervals of the released
   scale (ratio lambda_sim / lambda for TLL, whose error is multiplicative; difference for the additive
   Laplace baselines).

Inversion instead of the plain bootstrap pivot, because the LSP's error law changes strongly with the
truth (at n = 200 and epsilon 1 the released shape ranges over most of (0, gamma]; the plain pivot
covered the true shape 63% of the time in our runs).

Public inputs: n (printed in every Weibull result), the horizon, omega, gamma, K, the blocks, and the
censoring share (declared; when read off the data it is rounded to 5% and listed as a disclosure).
The simulation's seed is derived from the released numbers, so the interval of a release is reproducible.
Sources: Efron and Tibshirani (1993) for the bootstrap and test inversion; Ferrando, Wang and Sheldon
(2022) for the parametric bootstrap of private estimators.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.mechanisms import (
    LaplaceWeibull,
    LspTll,
    SampleAggregateWeibull,
    WeibullEstimates,
    WeibullMechanism,
)
from dpsurv_core.weibull.model import WeibullSample

COHORTS = 8
# the scale interval simulates (16 candidates x 40 cohorts x n) times at once: 50,000 subjects is ~260 MB per array
MAX_INTERVAL_SUBJECTS = 50_000
DRAWS = 25
COARSE = 12
FINE = 10
Z95 = 1.959963984540054
LEVEL = 0.95
METHOD = ("parametric bootstrap inverted over the true shape ({grid} candidate shapes): cohorts of the public size n "
          "simulated with {share:.0%} uniform censoring, the same mechanism rerun on each with simulated noise ({cohorts} "
          "cohorts x {draws} releases per candidate); {level:.0%} interval = the candidates whose simulated releases "
          "make the released value typical (sampling error and privacy noise together)")


def censoring_share(sample: WeibullSample, step: float = 0.05) -> float:
    """Share of subjects with no event (after normalisation), rounded to ``step`` (the default read off the data)."""
    return round(float(min(0.95, round((1.0 - sample.n_events / sample.n) / step) * step)), 4)


def censoring_disclosure(share: float) -> Disclosure:
    return Disclosure("censoring", f"The censoring share ({share:.0%}) used to simulate the intervals was read off the "
                                   "data (rounded to 5%): declare it from the study design to avoid this disclosure.")


def check_share(share: float) -> float:
    if not (math.isfinite(share) and 0.0 <= share < 1.0):
        raise ParameterError(f"The censoring share must be a number from 0 up to (not including) 1, got {share}.")
    return float(share)


def censoring_limit(shape: float, scale: float, share: float, rng: np.random.Generator, m: int = 20_000) -> float:
    """c such that U(0, c) censoring censors about ``share`` of Weibull(shape, scale) times (bisection, fixed sample)."""
    if share <= 0.0:
        return math.inf
    t = scale * rng.exponential(size=m) ** (1.0 / shape)
    u = rng.random(m)
    lo, hi = 1e-8 * scale, 1e4 * scale
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if np.mean(u * mid < t) > share else (lo, mid)
    return math.sqrt(lo * hi)


def simulate_samples(shape: float, scale_normalised: float, n: int, share: float, cohorts: int, omega: float,
                     horizon: float, rows_per_subject: int, rng: np.random.Generator) -> list[WeibullSample]:
    """``cohorts`` simulated normalised samples of size n (one array draw for all of them)."""
    c = censoring_limit(shape, scale_normalised, share, rng)
    t = scale_normalised * rng.exponential(size=(cohorts, n)) ** (1.0 / shape)
    cens = rng.random((cohorts, n)) * c if math.isfinite(c) else np.full((cohorts, n), np.inf)
    obs = np.clip(np.minimum(t, cens), math.exp(-omega), 1.0)
    d = (t <= cens).astype(np.int8)
    d[d.sum(axis=1) == 0, 0] = 1  # a cohort with no event has no fit; one event keeps the simulation defined
    return [WeibullSample(obs[b], d[b], horizon, omega, rows_per_subject) for b in range(cohorts)]


def seed_of(*values: float) -> int:
    """A deterministic seed from released numbers (the interval of a release is reproducible)."""
    h = hashlib.sha256(np.asarray(values, dtype=float).tobytes()).digest()
    return int.from_bytes(h[:8], "little")


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


def simulate_releases(mech: WeibullMechanism, shape: float, scale_normalised: float, n: int, share: float,
                      cohorts: int, draws: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Released (shape, scale normalised) of the mechanism on ``cohorts`` cohorts simulated from the given truth,
    ``draws`` simulated releases each (arrays of cohorts x draws values)."""
    rng = np.random.default_rng(seed)
    samples = simulate_samples(shape, scale_normalised, n, share, cohorts, mech.omega, mech.horizon,
                               mech.rows_per_subject, rng)
    seqs = np.random.SeedSequence(seed).spawn(cohorts)
    ps, ls = [], []
    for s, sq in zip(samples, seqs):  # one mechanism run (vectorised over the draws) per simulated cohort
        est = mech.release_many(s, SimulationNoise(sq), draws)
        ps.append(est.shape)
        ls.append(est.scale_normalised)
    return np.concatenate(ps), np.concatenate(ls)


def _quantile_curves(mech: WeibullMechanism, grid: np.ndarray, lam0: float | np.ndarray, n: int, share: float,
                     cohorts: int, draws: int, seed: int, level: float, ratio: bool) -> tuple[np.ndarray, ...]:
    """At each candidate shape of ``grid`` (scale lam0): the central ``level`` range of the released shape, and of
    the released scale's pivot (ratio to lam0, or difference), each as arrays over the grid."""
    a = (1.0 - level) / 2.0
    out = np.empty((4, grid.size))
    seeds = np.random.SeedSequence(seed).generate_state(grid.size)
    lams = np.broadcast_to(np.asarray(lam0, dtype=float), grid.shape)
    for g, p in enumerate(grid):
        ps, ls = simulate_releases(mech, float(p), float(lams[g]), n, share, cohorts, draws, int(seeds[g]))
        piv = ls / lams[g] if ratio else ls - lams[g]
        ps, piv = ps[np.isfinite(ps)], piv[np.isfinite(piv)]
        out[:, g] = np.quantile(ps, [a, 1 - a]).tolist() + np.quantile(piv, [a, 1 - a]).tolist()
    return out[0], out[1], out[2], out[3]


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
    crosses the value (so an interval narrower than the grid's step is still found). Candidates before the last
    too-small one are ignored: at tiny shapes the simulated cohorts collapse onto the floor e^-omega and the
    mechanism's output is wild, which would otherwise accept them. With no too-small candidate the interval starts
    at 0 (or the coarse answer ``empty`` on a refined grid), with no too-large one after it, it ends at ``top``.
    When every candidate rejects the value from the same side on the full range, the answer is the whole range
    (the data say nothing); on a refined grid it is the coarse answer."""
    small = value > q_hi
    large = value < q_lo
    lo_default, hi_default = (0.0, top) if empty is None else empty
    if small.all() or large.all():
        return (0.0, top) if empty is None else empty
    i_small = np.flatnonzero(small)
    L = int(i_small[-1]) if i_small.size else -1
    after = np.flatnonzero(large[L + 1:])
    U = L + 1 + int(after[0]) if after.size else grid.size
    if L < 0:
        lower = min(lo_default, float(grid[0]))
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


def _tll_scale_interval(mech: WeibullMechanism, shape: float, scale: float, shapes: np.ndarray, n: int, share: float,
                        level: float, seed: int, cohorts: int = 40) -> tuple[float, float, float]:
    """TLL's scale interval given the released shape: every candidate scale lambda whose simulated TLL releases
    (cohorts drawn from (p, lambda), TLL computed at the released shape with fresh Laplace noise, clamped as the
    mechanism clamps) make the released scale typical, for some accepted true shape p (union over ``shapes``).
    Vectorised over candidates, cohorts and draws. Returns (lower, upper, error sd at the released scale)."""
    a = (1.0 - level) / 2.0
    rng = np.random.default_rng(seed)
    step = max(1, int(math.ceil(shapes.size / 5)))
    ps = np.unique(np.concatenate([shapes[::step], shapes[-1:]]))
    m = float(mech.rows_per_subject)
    b = 2.0 * m / mech.epsilon_scale
    q = float(np.clip(shape, 1e-3, None))
    lows, highs, sds = [], [], []
    coarse: list[tuple[float, float]] = []
    for grid in (np.geomspace(1e-3, mech.gamma, 16), None):
        if grid is None:  # refine around the coarse answer
            coarse = list(zip(lows, highs))
            lo_c, hi_c = min(lows), max(highs)
            grid = np.geomspace(max(lo_c / 1.5, 1e-4), min(max(hi_c * 1.5, 2e-3), mech.gamma), 12)
            lows, highs = [], []
        for k, p in enumerate(ps):
            e = rng.exponential(size=(cohorts, n))
            u = rng.random((cohorts, n))
            c = censoring_limit(float(p), 1.0, share, rng)
            # times for scale 1, then scaled per candidate: T = lambda E^(1/p)
            t1 = e ** (1.0 / p)
            cens1 = u * c if math.isfinite(c) else np.full_like(u, np.inf)  # censoring scales with lambda too
            obs = np.clip(np.minimum(t1, cens1)[None] * grid[:, None, None], math.exp(-mech.omega), 1.0)
            d = (t1 <= cens1).sum(axis=1).astype(float)  # (cohorts,)
            tau = np.sum(obs ** q, axis=2)  # (grid, cohorts)
            z = rng.laplace(0.0, b, size=(2, grid.size, cohorts, DRAWS))
            tau_n = np.maximum(tau[..., None] + z[0], math.exp(-mech.omega * q))
            del_n = np.maximum(d[None, :, None] + z[1], 1.0)
            with np.errstate(over="ignore"):
                lam_sim = (tau_n / del_n) ** (1.0 / q)
            flat = lam_sim.reshape(grid.size, -1)
            q_lo, q_hi = np.quantile(flat, [a, 1 - a], axis=1)
            lo, hi = _invert(grid, q_lo, q_hi, scale, mech.gamma, empty=coarse[k] if coarse else None)
            lows.append(lo)
            highs.append(hi)
            sds.append(float(np.interp(scale, grid, (q_hi - q_lo) / (2 * Z95))))
    return max(min(lows), 0.0), max(highs), max(sds)


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


def weibull_intervals(mech: WeibullMechanism, est: WeibullEstimates, n: int, share: float, trial: int = 0,
                      cohorts: int = COHORTS, draws: int = DRAWS, level: float = LEVEL) -> WeibullInference:
    """Noise-aware intervals for trial ``trial`` of a private release (see the module docstring)."""
    share = check_share(share)
    p, lam = float(est.shape[trial]), float(est.scale_normalised[trial])
    g = mech.gamma
    seed = seed_of(p, lam, n, share, mech.epsilon)
    ratio = isinstance(mech, LspTll)
    sim = _truncated(mech)
    # stage 1: a coarse geometric grid over (0, gamma]; stage 2: a finer grid around the accepted range
    coarse = np.geomspace(0.05, g, COARSE)
    lo1, hi1, _, _ = _quantile_curves(sim, coarse, matching_scale(mech, p, lam, coarse), n, share,
                                      max(2, cohorts // 4), 4 * draws, seed, level, ratio)
    a, b = _invert(coarse, lo1, hi1, p, g)
    # the fine grid spans the coarse answer and a quarter of it beyond each end (the coarse quantiles are noisy)
    pad = 0.25 * (b - a) + 0.01
    fine = np.linspace(max(a - pad, 0.02), min(b + pad, g), FINE)
    lo2, hi2, rlo, rhi = _quantile_curves(sim, fine, matching_scale(mech, p, lam, fine), n, share, cohorts,
                                          2 * draws, seed + 1, level, ratio)
    a, b = _invert(fine, lo2, hi2, p, g, empty=(a, b))
    # no candidate's central range holds the released shape (an atypical draw): the inversion is then empty and the
    # grid's edge is no answer, so the interval is widened to hold the release itself and a warning says so
    atypical = not a <= p <= b
    a, b = min(a, p), max(b, p)
    sh = ParameterInterval(p, a, b, float(np.interp(p, fine, (hi2 - lo2) / (2 * Z95))))
    keep = (fine >= a) & (fine <= b)
    if not keep.any():
        keep = np.abs(fine - np.clip(p, a, b)) == np.abs(fine - np.clip(p, a, b)).min()
    if ratio:
        s_lo, s_hi, sd = _tll_scale_interval(mech, p, lam, fine[keep], n, share, level, seed + 2)
    else:
        s_lo, s_hi = float(np.min(lam - rhi[keep])), float(np.max(lam - rlo[keep]))
        sd = float(np.max((rhi[keep] - rlo[keep]) / (2 * Z95)))
    sn = ParameterInterval(lam, max(s_lo, 0.0), max(s_hi, 0.0), sd)
    h = est.horizon
    sc = ParameterInterval(sn.estimate * h, sn.lower * h, sn.upper * h, sn.error_sd * h)
    method = METHOD.format(cohorts=cohorts, share=share, draws=2 * draws, level=level, grid=COARSE + FINE)
    warnings = weibull_warnings(mech, sh, sn, h)
    if atypical:
        warnings.append(f"The released shape {p:.3g} is unusual for every true shape dpsurv tried, so its interval was "
                        "widened to include it: read both with care, and prefer a larger epsilon or cohort.")
    return WeibullInference(sh, sc, sn, method, share, warnings)


def weibull_warnings(mech: WeibullMechanism, shape: ParameterInterval, scale_normalised: ParameterInterval,
                     horizon: float) -> list[str]:
    """Plain sentences when the release cannot be read, each saying what to do next."""
    out: list[str] = []
    baseline = isinstance(mech, (LaplaceWeibull, SampleAggregateWeibull))
    why = ""
    if isinstance(mech, LaplaceWeibull):
        why = (f" The Laplace baseline adds noise scaled to the global sensitivity gamma / (epsilon/2) = "
               f"{mech.gamma / mech.epsilon_shape:.3g} (a parameter may be anywhere in [0, gamma]), whatever the data; "
               "use lsp-tll, whose noise follows the data's local sensitivity.")
    elif isinstance(mech, SampleAggregateWeibull):
        why = (" Sample-and-aggregate adds noise scaled to gamma / (blocks x epsilon/2), large unless there are many "
               "blocks of about 500 records; use lsp-tll.")
    if shape.estimate <= 0 or scale_normalised.estimate <= 0:
        out.append("The released shape or scale is not positive, so it describes no Weibull curve: the noise swamped "
                   "the estimate." + (why or " Spend more epsilon or use a larger cohort."))
    for label, p, unit in (("shape", shape, 1.0), ("scale", scale_normalised, horizon)):
        if p.error_sd > abs(p.estimate) and p.estimate > 0:
            out.append(f"The {label}'s error (standard deviation about {p.error_sd * unit:.3g}) is larger than the "
                       f"{label} itself ({p.estimate * unit:.3g}): read it as noise, not as an estimate."
                       + (why or " Spend more epsilon or use a larger cohort."))
    if shape.lower < 1.0 < shape.upper and shape.upper - shape.lower > 0.5 and not baseline:
        out.append(f"The shape's interval ({shape.lower:.2f} to {shape.upper:.2f}) includes 1, so this release cannot "
                   "tell whether the hazard rises or falls over time; spend more epsilon or use a larger cohort.")
    return out
