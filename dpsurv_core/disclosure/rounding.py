"""Rounding every released count to a base b (5 by default), and unbiased random rounding.

``round``: each cell x becomes b * floor(x / b + 1/2) (halves round up), deterministic.
``random-round``: each cell x = b q + r (0 <= r < b) becomes b q + b with probability r / b and b q otherwise, so
E[released] = x (unbiased random rounding, as Statistics New Zealand practises with base 3). A whole-number count rounds
up exactly when an integer k uniform on 0..b-1 is below r: probability r / b exactly. k comes from the release noise
source (os.urandom by rejection for a release, seeded simulation noise for previews and audits). Neither has a formal
guarantee: deterministic rounding reveals a subject whose removal moves a cell across a rounding boundary.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.disclosure.base import DisclosureControl
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import NoiseSource


def _check_base(base: int) -> int:
    if int(base) != base or base < 2:
        raise ParameterError(f"The rounding base must be a whole number of at least 2, got {base}.")
    return int(base)


def round_to_base(x: np.ndarray, base: int) -> np.ndarray:
    """b * floor(x / b + 1/2): nearest multiple of b, halves up."""
    return base * np.floor(np.asarray(x, float) / base + 0.5)


def random_round(x: np.ndarray, base: int, u: np.ndarray) -> np.ndarray:
    """Unbiased random rounding with uniforms ``u`` in [0, 1): up with probability remainder / base."""
    x = np.asarray(x, float)
    low = base * np.floor(x / base)
    return low + base * (u < (x - low) / base)


def random_round_exact(x: np.ndarray, base: int, k: np.ndarray) -> np.ndarray:
    """Unbiased random rounding of whole-number counts with ``k`` uniform on 0..base-1: x = b q + r (r a whole number
    from 0 to b - 1) rounds up to b (q + 1) exactly when k < r, which has probability r / b exactly."""
    x = np.asarray(x, float)
    low = base * np.floor(x / base)
    return low + base * (np.asarray(k) < x - low)


def random_round_with(x: np.ndarray, base: int, noise: NoiseSource) -> np.ndarray:
    """Random rounding of ``x`` with draws from ``noise``: integers below ``base`` when every count is a whole
    number (the exact rule; released counts always are), else uniforms (simulated counts that are not whole)."""
    x = np.asarray(x, float)
    if np.all(x == np.floor(x)):
        return random_round_exact(x, base, noise.integers(base, x.shape))
    return random_round(x, base, np.asarray(noise.uniform(0.0, 1.0, x.shape), float))


class Round(DisclosureControl):
    """Round every count to the nearest multiple of ``base``.

    Parameters
    ----------
    base : int, default 5
        b: every count becomes b floor(x / b + 1/2), the nearest multiple (halves up); a whole number, at least 2.
    rows_per_subject : int, default 1
        m, the most rows one subject has; recorded with the release (the rule acts on the cells alone).

    Privacy
    -------
    Cost: no epsilon: statistical disclosure control, not differential privacy.
    Neighbours: none: no formal guarantee.
    Protects: no formal guarantee (a deterministic rule on the exact counts).
    Source: statistical disclosure control practice (rounding to base 5 or 10).
    """

    name = "round"
    what = "rounding to base {base}"

    def __init__(self, base: int = 5, rows_per_subject: int = 1) -> None:
        super().__init__(rows_per_subject)
        self.base = _check_base(base)
        self.what = f"rounding to base {self.base}"

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "base": self.base}

    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        return exact.from_cells(round_to_base(exact.cells(), self.base)), {}


class RandomRound(DisclosureControl):
    """Unbiased random rounding to ``base``; its randomness comes from the release's noise source.

    Parameters
    ----------
    base : int, default 5
        b: every count goes to one of the two multiples of b around it, with mean the count; a whole number, at least 2.
    rows_per_subject : int, default 1
        m, the most rows one subject has; recorded with the release (the rule acts on the cells alone).

    Privacy
    -------
    Cost: no epsilon: statistical disclosure control, not differential privacy.
    Neighbours: none: no formal guarantee.
    Protects: no formal guarantee (random rounding of the exact counts).
    Source: statistical disclosure control practice (unbiased random rounding, as Statistics New Zealand's base 3).
    """

    name = "random-round"
    deterministic = False
    interval_includes_noise = True

    def __init__(self, base: int = 5, rows_per_subject: int = 1) -> None:
        super().__init__(rows_per_subject)
        self.base = _check_base(base)
        self.what = f"unbiased random rounding to base {self.base}"

    def parameters(self) -> dict[str, Any]:
        return {**super().parameters(), "base": self.base}

    def alter(self, exact: BinnedCounts, cohort: Cohort, public: PublicParameters, noise: NoiseSource | None,
              trials: int) -> tuple[BinnedCounts, dict[str, Any]]:
        if noise is None:
            raise ParameterError("Random rounding needs a noise source (a release or a seeded simulation).")
        return replace(exact.from_cells(random_round_with(exact.cells(), self.base, noise))), {}

    def plugin_draws(self, released: BinnedCounts, draws: int, rng: np.random.Generator) -> BinnedCounts:
        """``draws`` plausible true tables per released one (rows R * draws, trial-major) for the bootstrap's
        plug-in law. A released 0 hides x in 0..b-1 events, released as 0 with probability 1 - x / b; a bootstrap
        world built from the 0 itself never has an event there, and a group whose released events are all 0 would
        get a band of width 0. Each 0 event cell where the released table still has subjects at risk is drawn from
        its posterior under a flat prior, P(x | 0) proportional to b - x (mean (b - 1) / 3); other cells are kept
        (their rounding is symmetric, and the bootstrap re-rounds the redrawn counts)."""
        b = self.base
        cdf = np.cumsum(np.arange(b, 0, -1, dtype=float))
        rep = lambda a: np.repeat(np.asarray(a, float), draws, axis=0)  # noqa: E731
        events = rep(released.events)
        open_ = (rep(released.at_risk()) > 0)[..., None, :]
        hidden = np.searchsorted(cdf, rng.random(events.shape) * cdf[-1], side="right").astype(float)
        events = np.where((events <= 0) & open_, hidden, events)
        return replace(released, n=rep(released.n), events=events, censored=rep(released.censored))
