"""Simulated cohorts with a known truth, for coverage, calibration and power studies.

Event times are Weibull with shape k and scale lambda in the reference group; the second group's
hazard is ``hazard_ratio`` times the first (proportional hazards: its scale is lambda HR^(-1/k)).
Censoring is uniform on (0, c), with c chosen so that about ``censoring`` of all subjects are
censored, so the true survival of group g at time t is exp(-HR_g (t / lambda)^k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class WeibullTruth:
    """The law a simulated cohort is drawn from (time unit: days)."""

    shape: float = 1.3
    scale: float = 1000.0
    hazard_ratio: float = 1.0  # group "B" against group "A"
    censoring: float = 0.3  # share of subjects censored, approximately

    def survival(self, t: float | np.ndarray, group: str = "A") -> np.ndarray:
        hr = self.hazard_ratio if group == "B" else 1.0
        return np.exp(-hr * (np.asarray(t, float) / self.scale) ** self.shape)

    def quantile(self, p: float, group: str = "A") -> float:
        """The time at which S(t) = 1 - p (the median for p = 0.5)."""
        hr = self.hazard_ratio if group == "B" else 1.0
        return float(self.scale * (-math.log(1.0 - p) / hr) ** (1.0 / self.shape))

    @property
    def censoring_limit(self) -> float:
        return _censoring_limit(self.shape, self.scale, self.hazard_ratio, self.censoring)


@lru_cache(maxsize=64)
def _censoring_limit(shape: float, scale: float, hr: float, share: float) -> float:
    """c such that uniform(0, c) censoring censors about ``share`` of subjects (bisection on a fixed sample)."""
    rng = np.random.default_rng(20261123)
    m = 40_000
    hrs = np.where(np.arange(m) % 2 == 0, 1.0, hr)
    t = scale * (rng.exponential(size=m) / hrs) ** (1.0 / shape)
    u = rng.random(m)
    lo, hi = 1e-6 * scale, 1e3 * scale
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        censored = float(np.mean(u * mid < t))
        lo, hi = (mid, hi) if censored > share else (lo, mid)
    return math.sqrt(lo * hi)


def weibull_cohort(n: int, truth: WeibullTruth = WeibullTruth(), seed: int = 0,
                   rng: np.random.Generator | None = None) -> pd.DataFrame:
    """``n`` subjects in two equal groups A and B: columns ``time`` (days, at least 1), ``status`` (1 = event),
    ``group`` and ``x`` (1 in group B: the group as a numeric covariate for regression).

    Parameters
    ----------
    n : int
        Number of subjects.
    truth : WeibullTruth
        Shape, scale, hazard ratio of B against A and censoring share.
    seed : int, default 0
        Seed (unused when ``rng`` is given).
    rng : numpy.random.Generator, optional
        The random generator.

    Returns
    -------
    pandas.DataFrame
        The simulated cohort's rows.
    """
    rng = rng if rng is not None else np.random.default_rng(seed)
    b = (np.arange(n) % 2).astype(int)
    hr = np.where(b == 1, truth.hazard_ratio, 1.0)
    t = truth.scale * (rng.exponential(size=n) / hr) ** (1.0 / truth.shape)
    c = rng.random(n) * truth.censoring_limit
    time = np.maximum(np.ceil(np.minimum(t, c)), 1.0)
    return pd.DataFrame({"time": time, "status": (t <= c).astype(int), "group": np.where(b == 1, "B", "A"), "x": b})
