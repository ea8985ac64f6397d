"""What every private Weibull mechanism shares: the estimates a release holds (:class:`WeibullEstimates`), the base
class with its public bounds (:class:`WeibullMechanism`), the snapping of released reals and the trials check."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource, snap_to_grid
from dpsurv_core.weibull.model import (
    GAMMA,
    OMEGA,
    WeibullSample,
    check_hyper,
    sample_from_cohort,
)

# types only: the release reader (dpsurv_core.weibull.readout) runs these mechanisms on simulated samples, and imports
# this module without the data layer
if TYPE_CHECKING:
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import Disclosure

BLOCK_SIZE = 500
MECHANISMS = ("mle", "clipped-mle", "lsp-tll", "laplace", "saa")


@dataclass
class WeibullEstimates:
    """R released (shape, scale) pairs; ``scale`` is in the data's time unit, ``scale_normalised`` in units of T_max."""

    mechanism: str
    shape: np.ndarray
    scale_normalised: np.ndarray
    horizon: float
    clamped: np.ndarray | None = None  # TLL: a noisy sum was non-positive and was clamped
    rung: np.ndarray | None = None  # LSP: the rung drawn; internal, never released (see records)
    notes: list[str] = field(default_factory=list)
    snapped: bool = False  # a release: the shape and both scales lie on the 2^-20 grid (:func:`released_by`)

    @property
    def scale(self) -> np.ndarray:
        """The scale in the data's time unit (on a release snapped again: the product leaves the grid)."""
        scale = self.scale_normalised * self.horizon
        return snap_to_grid(scale) if self.snapped else scale

    @property
    def trials(self) -> int:
        return int(self.shape.size)

    def records(self) -> list[dict[str, Any]]:
        """One dict per trial: trial, shape, scale, scale_normalised (+ clamped for TLL). LSP's rung index is left
        out: the guarantee covers the shape alone, and the pair (shape, rung) can occur for one data set and never
        for its neighbour, whose ladder puts that shape in the next rung."""
        out = []
        for i in range(self.trials):
            r: dict[str, Any] = {"trial": i, "shape": float(self.shape[i]), "scale": float(self.scale[i]),
                                 "scale_normalised": float(self.scale_normalised[i])}
            if self.clamped is not None:
                r["clamped"] = bool(self.clamped[i])
            out.append(r)
        return out


class WeibullMechanism(Mechanism):
    """Shared parameters: total epsilon, public horizon T_max, omega, gamma, rows per subject m."""

    analysis = "weibull"
    private = True
    # the MLE, LSP + TLL and the Laplace baseline read only the table of distinct times with their counts and
    # events (an engine's GROUP BY): they run where the data live
    engines: tuple[str, ...] = ("pandas", "duckdb", "spark")

    def __init__(self, epsilon: float, horizon: float, omega: float = OMEGA, gamma: float = GAMMA,
                 rows_per_subject: int = 1) -> None:
        self.epsilon = check_epsilon(epsilon)
        if not (math.isfinite(horizon) and horizon > 0):
            raise ParameterError(f"The horizon must be a positive time, got {horizon}.")
        self.horizon = float(horizon)
        self.omega, self.gamma, _ = check_hyper(omega, gamma, 1)
        if int(rows_per_subject) < 1:
            raise ParameterError(f"Rows per subject must be at least 1, got {rows_per_subject}.")
        self.rows_per_subject = int(rows_per_subject)

    @property
    def epsilon_shape(self) -> float:
        return self.epsilon / 2.0

    @property
    def epsilon_scale(self) -> float:
        return self.epsilon / 2.0

    @property
    def cost(self) -> PrivacyCost:
        """eps/2 for the shape + eps/2 for the scale, composed sequentially: eps."""
        return PrivacyCost(self.epsilon_shape + self.epsilon_scale, neighbouring=ADD_REMOVE, protects=SUBJECT)

    def parameters(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon, "epsilon_shape": self.epsilon_shape, "epsilon_scale": self.epsilon_scale,
                "horizon": self.horizon, "omega": self.omega, "gamma": self.gamma,
                "rows_per_subject": self.rows_per_subject}

    def disclosures(self, sample: WeibullSample | None = None) -> list[Disclosure]:
        return []

    def prepare(self, cohort: Cohort) -> WeibullSample:
        """The cohort's times normalised with this mechanism's public horizon and omega (for a cohort kept in an
        engine: its table of distinct times, computed there)."""
        self._check_rows(cohort)
        return sample_from_cohort(cohort, self.horizon, self.omega)

    def _check_rows(self, cohort: Cohort) -> None:
        if cohort.rows_per_subject > self.rows_per_subject:
            raise ParameterError(f"The data keep up to {cohort.rows_per_subject} rows per subject but the mechanism was "
                                 f"built for {self.rows_per_subject}: build it with rows_per_subject="
                                 f"{cohort.rows_per_subject}.")

    def _check(self, sample: WeibullSample) -> None:
        if not (math.isclose(sample.horizon, self.horizon) and math.isclose(sample.omega, self.omega)):
            raise ParameterError("The sample was normalised with another horizon or omega than the mechanism's: "
                                 "prepare it with mechanism.prepare(cohort).")
        if sample.rows_per_subject > self.rows_per_subject:
            raise ParameterError(f"The data keep up to {sample.rows_per_subject} rows per subject; build the mechanism "
                                 f"with rows_per_subject={sample.rows_per_subject}.")

    def compute(self, sample: WeibullSample, noise: NoiseSource) -> WeibullEstimates:
        """One release (R = 1)."""
        return self.compute_many(sample, noise, 1)

    def compute_many(self, sample: WeibullSample, noise: NoiseSource, trials: int) -> WeibullEstimates:
        raise NotImplementedError


def released_by(est: WeibullEstimates, noise: NoiseSource | None) -> WeibullEstimates:
    """The estimates as a mechanism releases them: shape and scale through ``noise.snap``, so that a release's reals lie
    on the 2^-20 grid (Mironov 2012's snapping of floating-point arithmetic on the draws; post-processing). Simulation
    noise (and none) leaves them as they are."""
    if noise is None:
        return est
    return replace(est, shape=noise.snap(est.shape), scale_normalised=noise.snap(est.scale_normalised),
                   snapped=bool(noise.is_release))


def whole_trials(trials: int) -> int:
    if int(trials) != trials or trials < 1:
        raise ParameterError(f"The number of trials must be a whole number of at least 1, got {trials}.")
    return int(trials)

