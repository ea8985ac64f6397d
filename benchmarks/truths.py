"""Known survival laws beyond the Weibull, for validation studies: piecewise-constant hazards (a bathtub, a steep early
fall), the log-normal, and several groups of their own size and censoring.

A :class:`HazardTruth` has per group a size, a law (its survival S_g(t) and quantiles) and a uniform censoring on
(0, c_g) with c_g chosen so that about the stated share of the group is censored; ``sample`` draws one cohort (times
rounded up to whole days, as :func:`dpsurv_core.data.simulate.weibull_cohort` does). The interface is the one the
validation benchmarks read from :class:`~dpsurv_core.data.simulate.WeibullTruth`: ``survival(t, group)``,
``quantile(p, group)``, ``censoring`` and ``censoring_limit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.special import ndtr, ndtri

from dpsurv_core.data.cohort import Cohort


@dataclass(frozen=True)
class Law:
    """One group's event-time law: piecewise-constant hazard (``breaks`` t_1 < ... < t_{K-1}, ``rates`` K values) or
    log-normal (``lognormal`` = (mu, sigma) of log T)."""

    breaks: tuple[float, ...] = ()
    rates: tuple[float, ...] = (1.0 / 1000.0,)
    lognormal: tuple[float, float] | None = None

    def cumulative_hazard(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, float)
        edges = np.concatenate([[0.0], self.breaks, [np.inf]])
        exposure = np.clip(t[..., None] - edges[:-1], 0.0, np.diff(edges))
        return exposure @ np.asarray(self.rates, float)

    def survival(self, t: np.ndarray) -> np.ndarray:
        t = np.asarray(t, float)
        if self.lognormal is not None:
            mu, sigma = self.lognormal
            with np.errstate(divide="ignore"):
                return 1.0 - ndtr((np.log(np.maximum(t, 1e-300)) - mu) / sigma)
        return np.exp(-self.cumulative_hazard(t))

    def quantile(self, p: float) -> float:
        """The time at which S(t) = 1 - p."""
        if self.lognormal is not None:
            mu, sigma = self.lognormal
            return float(math.exp(mu + sigma * ndtri(p)))
        target = -math.log1p(-p)
        edges = np.concatenate([[0.0], self.breaks])
        h_at = self.cumulative_hazard(edges)
        k = int(np.searchsorted(h_at, target, side="right") - 1)
        return float(edges[k] + (target - h_at[k]) / self.rates[k])

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        if self.lognormal is not None:
            mu, sigma = self.lognormal
            return np.exp(mu + sigma * rng.standard_normal(n))
        return np.array([self.quantile(1.0 - math.exp(-e)) for e in rng.exponential(size=n)])


@dataclass(frozen=True)
class HazardTruth:
    """Groups ``names`` of ``sizes`` with laws ``laws`` and censoring shares ``shares`` (one each)."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]
    laws: tuple[Law, ...]
    shares: tuple[float, ...]
    _cache: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def _law(self, group: str) -> Law:
        return self.laws[self.names.index(group)]

    def survival(self, t: float | np.ndarray, group: str | None = None) -> np.ndarray:
        return self._law(group or self.names[0]).survival(np.asarray(t, float))

    def quantile(self, p: float, group: str | None = None) -> float:
        return self._law(group or self.names[0]).quantile(p)

    @property
    def censoring(self) -> float:
        return float(np.dot(self.sizes, self.shares) / sum(self.sizes))

    @cached_property
    def limits(self) -> tuple[float, ...]:
        """c_g: uniform (0, c_g) censoring censors about share_g of group g, P(C < T) = (1 / c) int_0^c S(u) du."""
        out = []
        for law, share in zip(self.laws, self.shares, strict=True):
            if share <= 0:
                out.append(math.inf)
                continue
            lo, hi = 1e-3, 1e7
            for _ in range(100):
                mid = math.sqrt(lo * hi)
                u = np.linspace(0.0, mid, 4001)
                censored = float(np.trapezoid(law.survival(u), u) / mid)
                lo, hi = (mid, hi) if censored > share else (lo, mid)
            out.append(math.sqrt(lo * hi))
        return tuple(out)

    @property
    def censoring_limit(self) -> float:
        return max(c for c in self.limits if math.isfinite(c)) if any(math.isfinite(c) for c in self.limits) else math.inf

    def sample(self, rng: np.random.Generator) -> Cohort:
        times, status, groups = [], [], []
        for name, size, law, limit in zip(self.names, self.sizes, self.laws, self.limits, strict=True):
            t = law.sample(size, rng)
            c = rng.random(size) * limit if math.isfinite(limit) else np.full(size, np.inf)
            times.append(np.maximum(np.ceil(np.minimum(t, c)), 1.0))
            status.append((t <= c).astype(np.int64))
            groups.append(np.full(size, name))
        return Cohort(np.concatenate(times), np.concatenate(status), np.concatenate(groups))


def bathtub(scale: float = 1000.0) -> Law:
    """High early hazard (the first 5% of ``scale``), low in the middle, rising late: S about 0.81 at 0.05 scale, 0.5
    near 0.8 scale."""
    return Law(breaks=(0.05 * scale, 0.6 * scale), rates=(4.0 / scale, 0.3 / scale, 1.6 / scale))


def steep(scale: float = 1000.0) -> Law:
    """An exponential curve that reaches S = 0.1 at 0.15 ``scale`` (three of 20 bins of a grid to ``scale``)."""
    return Law(rates=(math.log(10.0) / (0.15 * scale),))


def lognormal(median: float = 700.0, sigma: float = 1.5) -> Law:
    """Log-normal with the given median: its hazard rises, then falls (not a Weibull, not proportional)."""
    return Law(lognormal=(math.log(median), sigma))
