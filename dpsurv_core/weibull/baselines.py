"""The Laplace and sample-and-aggregate baselines of Nguyen & Hui (2017) for private Weibull parameters: Laplace noise
of a public scale on the clipped MLE, and on the average of block MLEs over random blocks. Each spends eps/2 on the
shape and eps/2 on the scale."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import NoiseSource
from dpsurv_core.weibull.mechanism_base import BLOCK_SIZE, WeibullEstimates, WeibullMechanism, released_by, whole_trials
from dpsurv_core.weibull.model import (
    GAMMA,
    OMEGA,
    WeibullSample,
    scale_at,
    shape_root,
    subject_sample,
)

# types only: the release reader (dpsurv_core.weibull.readout) runs these mechanisms on simulated samples, and imports
# this module without the data layer
if TYPE_CHECKING:
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import Disclosure


def clipped_mle(sample: WeibullSample, gamma: float) -> tuple[float, float]:
    """(p*, lambda*) with the shape root searched in (0, gamma] and the scale clipped to [0, gamma]."""
    p = shape_root(sample, upper=gamma)
    return p, min(scale_at(sample, p), gamma)


class LaplaceWeibull(WeibullMechanism):
    """Baseline: p* + Lap(gamma / (eps/2)) and lambda* + Lap(gamma / (eps/2)), both clipped to [0, gamma] first.

    Parameters
    ----------
    epsilon : float
        The privacy budget, half on the shape, half on the scale; positive (``math.inf``: no noise).
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        The public bound on the shape and the scale (in horizons); positive.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).

    Privacy
    -------
    Cost: epsilon, split evenly and composed sequentially: epsilon/2 on the shape, epsilon/2 on the scale.
    Neighbours: add/remove one subject.
    Protects: one subject's rows (the noise covers each parameter's whole range [0, gamma]).
    Source: Nguyen T. T. & Hui S. C. (2017), the paper's Laplace baseline.
    """

    name = "laplace"
    interval_includes_noise = True  # dpsurv_core.weibull.inference: parametric bootstrap, inverted

    def caveat(self, time_unit: str = "") -> str:
        """Why its error is large whatever the data: noise sized to the global sensitivity gamma on each parameter,
        Laplace scale b = gamma / (epsilon/2), median absolute error b ln 2 (the scale's in horizons: the scale is
        fitted on times divided by the horizon)."""
        if math.isinf(self.epsilon):
            return ""
        b = self.gamma / self.epsilon_shape
        typical = b * math.log(2)
        unit = f" {time_unit}" if time_unit else ""
        return (f"**Why the Laplace baseline is so far off.** It adds noise sized for the worst case over every "
                f"possible data set (its *global sensitivity*): one patient could, in some cohort, move the fitted shape "
                f"or the scale (in horizons: times divided by the horizon) anywhere in [0, gamma = {self.gamma:g}], so "
                f"the noise must cover that whole range. Its spread is gamma / (epsilon/2) = {b:.3g} at epsilon "
                f"{self.epsilon:g}, so the typical (median) error is {b:.3g} x ln 2 = {typical:.3g} on the shape and "
                f"{typical:.3g} horizons ({typical * self.horizon:,.0f}{unit}) on the scale, however many patients there "
                "are. A shape "
                "near 1 with an error of that size says nothing. LSP + TLL and sample and aggregate size their noise "
                "from this cohort (how far its own fit can move), which is why they are far closer. What to do: use "
                "LSP + TLL; the Laplace row is there only as the textbook comparison.")

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        self._check(sample)
        r = whole_trials(trials)
        p, lam = clipped_mle(sample, self.gamma)
        shape = np.full(r, p)
        scale = np.full(r, lam)
        if not math.isinf(self.epsilon):
            z = noise.laplace(np.array([[self.gamma / self.epsilon_shape], [self.gamma / self.epsilon_scale]]), (2, r))
            shape, scale = shape + z[0], scale + z[1]
        return released_by(WeibullEstimates(self.name, shape, scale, self.horizon), noise)


def block_mle(lt: np.ndarray, d: np.ndarray, blocks: np.ndarray, n_blocks: int, gamma: float,
              iterations: int = 100, start: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """MLE (p, lambda) of every block, vectorised: ``blocks`` is (R, n) block labels 0..M-1 per trial.

    Safeguarded Newton on the increasing h = f - g in (0, gamma] for all R*M blocks at once. A block
    with no events, or whose root lies beyond gamma (e.g. all its times equal), gets the bound gamma;
    scales are clipped to [0, gamma]. ``start`` is only the solver's first guess (the roots do not
    depend on it). Returns two (R, M) arrays.
    """
    R, n = blocks.shape
    idx = (blocks + n_blocks * np.arange(R)[:, None]).ravel()
    size = R * n_blocks
    lt_rep = np.broadcast_to(lt, (R, n)).ravel()
    d_rep = np.broadcast_to(d.astype(float), (R, n)).ravel()
    D = np.bincount(idx, weights=d_rep, minlength=size)
    sd = np.bincount(idx, weights=d_rep * lt_rep, minlength=size)
    has = D > 0
    mean_d = np.where(has, sd / np.where(has, D, 1.0), 0.0)

    def sums(p: np.ndarray, at: np.ndarray = idx, x: np.ndarray = lt_rep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        # ``at``, ``x``: the block and log time of some of the records, in their order (a block's sums then add the
        # same records in the same order as over all records, so they are the same to the last bit)
        w = np.exp(p[at] * x)
        wl = w * x
        return (np.bincount(at, weights=w, minlength=size), np.bincount(at, weights=wl, minlength=size),
                np.bincount(at, weights=wl * x, minlength=size))

    def h(p: np.ndarray, at: np.ndarray = idx, x: np.ndarray = lt_rep) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s0, s1, s2 = sums(p, at, x)
        s0 = np.where(s0 > 0, s0, 1.0)
        return s1 / s0 - 1.0 / p - mean_d, (s2 * s0 - s1 * s1) / (s0 * s0) + 1.0 / (p * p), s0

    top = np.full(size, gamma)
    h_top, _, _ = h(top)
    done = ~has | (h_top < 0)
    p = np.where(done, gamma, min(start, gamma))
    lo, hi = np.zeros(size), np.full(size, gamma)
    at, x = idx, lt_rep  # the records of the blocks still being solved: a solved block keeps its p whatever h gives
    for _ in range(iterations):
        keep = ~done[at]
        if not keep.all():
            at, x = at[keep], x[keep]
        val, der, _ = h(p, at, x)
        lo = np.where(val < 0, p, lo)
        hi = np.where(val >= 0, p, hi)
        new = p - val / der
        bad = ~np.isfinite(new) | (new <= lo) | (new >= hi)
        new = np.where(bad, 0.5 * (lo + hi), new)
        new = np.where(done, p, new)
        conv = np.abs(new - p) <= 1e-12 * np.maximum(p, 1e-3)
        p = new
        done = done | conv
        if done.all():
            break
    s0, _, _ = sums(p)
    with np.errstate(divide="ignore", over="ignore"):
        lam = np.where(has, (s0 / np.where(has, D, 1.0)) ** (1.0 / p), np.inf)
    return np.clip(p, 0.0, gamma).reshape(R, n_blocks), np.clip(lam, 0.0, gamma).reshape(R, n_blocks)


class SampleAggregateWeibull(WeibullMechanism):
    """Baseline (Smith 2008): M disjoint random blocks, MLE per block clipped to [0, gamma], average,
    + Lap(gamma / (M eps/2)) per parameter (times m rows per subject).

    Each record is assigned to a block uniformly at random and independently, so adding or removing one
    subject changes one block. M is public; it may be at most n / 2, n the declared ``n_public`` when there is
    one: a refusal decided by the observed number would itself depend on the data.

    Parameters
    ----------
    epsilon : float
        The privacy budget, half on the shape, half on the scale; positive (``math.inf``: no noise).
    horizon : float
        T_max, the public horizon (the data's time unit): follow-up ends there; positive.
    omega : float, default 6.0
        Normalised times are raised to at least e^-omega; positive.
    gamma : float, default 10.0
        The public bound on the shape and the scale (in horizons); positive.
    blocks : int or None, default None
        M, the declared number of blocks, at least 1; None: max(1, round(n / block_size)), which discloses the
        cohort size roughly (listed as a disclosure).
    block_size : int, default 500
        Subjects per block when ``blocks`` is None; at least 1.
    rows_per_subject : int, default 1
        m, the most rows one subject has; at least 1 (data with more are refused).
    n_public : int or None, default None
        The declared (public) number of subjects, at least 1, that bounds M.

    Privacy
    -------
    Cost: epsilon, split evenly and composed sequentially: epsilon/2 on the averaged shape, epsilon/2 on the scale.
    Neighbours: add/remove one subject (it changes one block).
    Protects: one subject's rows (the noise is times m rows per subject).
    Source: Nguyen T. T. & Hui S. C. (2017), after Smith's sample and aggregate (2008).
    """

    name = "saa"
    interval_includes_noise = True  # dpsurv_core.weibull.inference: parametric bootstrap, inverted
    engines = ("pandas",)  # each record is put in a random block: its rows are read in bounded chunks (or refused)

    def prepare(self, cohort: Cohort) -> WeibullSample:
        """Each subject's normalised time and event (an engine cohort's rows through its bounded chunked path)."""
        self._check_rows(cohort)
        return subject_sample(cohort, self.horizon, self.omega)

    def __init__(self, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                 blocks: int | None = None, block_size: int = BLOCK_SIZE, rows_per_subject: int = 1,
                 n_public: int | None = None) -> None:
        super().__init__(epsilon, horizon, omega, gamma, rows_per_subject)
        if n_public is not None and (int(n_public) != n_public or n_public < 1):
            raise ParameterError(f"The declared number of subjects must be a whole number of at least 1, got "
                                 f"{n_public}.")
        self.n_public = None if n_public is None else int(n_public)
        if blocks is not None and (int(blocks) != blocks or blocks < 1):
            raise ParameterError(f"The number of blocks must be a whole number of at least 1, got {blocks}.")
        if int(block_size) != block_size or block_size < 1:
            raise ParameterError(f"The block size must be a whole number of at least 1, got {block_size}.")
        self.blocks = None if blocks is None else int(blocks)
        self.block_size = int(block_size)

    def n_blocks(self, sample: WeibullSample) -> int:
        return self.blocks if self.blocks is not None else max(1, int(round(sample.n / self.block_size)))

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "blocks": self.blocks, "block_size": self.block_size}

    def disclosures(self, sample: WeibullSample | None = None) -> list[Disclosure]:
        if self.blocks is not None:
            return []
        from dpsurv_core.data.public import Disclosure

        m = "" if sample is None else f" ({self.n_blocks(sample)})"
        return [Disclosure("blocks", f"not DP: the number of blocks{m} was derived from the number of records "
                                     f"(n / {self.block_size}, rounded), and it sets the noise scale, so neighbouring "
                                     "cohorts across a rounding step get different noise; declare the number of blocks.",
                           dp=False)]

    def block_statistic(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        """The noiseless statistic: the average of the block MLEs over ``trials`` random block assignments."""
        self._check(sample)
        if not sample.per_subject:
            raise ParameterError("Sample-and-aggregate puts each record in a random block, so it needs each subject's "
                                 "time and event: prepare the sample with mechanism.prepare(cohort).")
        r = whole_trials(trials)
        M = self.n_blocks(sample)
        n, what = (sample.n, "records") if self.n_public is None else (self.n_public, "declared subjects")
        if M > n // 2:
            raise ParameterError(f"{M} blocks for {n} {what} leaves fewer than two per block: choose at most "
                                 f"{max(n // 2, 1)} blocks (the paper uses blocks of about 500 records).")
        labels = noise.integers(M, (r, sample.n))  # each record's block, uniform on 0..M-1 (exact on a release)
        start = shape_root(sample, upper=self.gamma)  # first guess of the solver only
        assert sample.t is not None and sample.d is not None  # per_subject, checked above
        pb, lb = block_mle(np.log(sample.t), sample.d, labels, M, self.gamma, start=start)
        return WeibullEstimates(self.name, pb.mean(axis=1), lb.mean(axis=1), self.horizon,
                                notes=[f"{M} block(s) of about {sample.n / M:.0f} records."])

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        if math.isinf(self.epsilon):  # no noise: the blocks only bound one record's influence, so one is enough
            self._check(sample)
            p, lam = clipped_mle(sample, self.gamma)
            r = whole_trials(trials)
            return WeibullEstimates(self.name, np.full(r, p), np.full(r, lam), self.horizon,
                                    notes=["Epsilon inf: no noise, so no blocks either: the fit on every record (the "
                                           "maximum-likelihood estimate)."])
        est = self.block_statistic(sample, noise, trials)
        M, m = self.n_blocks(sample), float(self.rows_per_subject)
        z = noise.laplace(np.array([[m * self.gamma / (M * self.epsilon_shape)],
                                    [m * self.gamma / (M * self.epsilon_scale)]]), (2, est.trials))
        return released_by(replace(est, shape=est.shape + z[0], scale_normalised=est.scale_normalised + z[1]), noise)


