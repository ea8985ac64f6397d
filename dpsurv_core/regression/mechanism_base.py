"""What the private discrete-time regression mechanisms share (Nguyen & Hui 2017; the bounds are derived in
:mod:`dpsurv_core.regression.mechanisms`): the public design bounds (:class:`DesignBounds`), the information
matrix and its bound, symmetric matrices as vectors, the release (:class:`RegressionResult`) and the base class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import special

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import EXACT, PrivacyCost
from dpsurv_core.privacy.mechanism import Mechanism, check_epsilon
from dpsurv_core.privacy.noise import NoiseSource
from dpsurv_core.regression.design import gradient_bound, hessian_trace_bound, interval_basis, row_bound
from dpsurv_core.regression.model import mean_relative_error

if TYPE_CHECKING:  # types only: a record's reader builds these mechanisms from public values, with no data module
    from dpsurv_core.regression.person_period import PersonPeriod


ANALYSIS = "discrete-time regression"


def symmetric_size(dim: int) -> int:
    """d (d + 1) / 2: the number of distinct entries of a symmetric d x d matrix."""
    return dim * (dim + 1) // 2


def symmetric_from_vector(v: np.ndarray, dim: int) -> np.ndarray:
    """(..., d(d+1)/2) -> (..., d, d): the inverse of the isometry that keeps the diagonal and multiplies each
    off-diagonal entry (upper triangle) by sqrt(2), so that ||v|| is the Frobenius norm of the matrix."""
    iu = np.triu_indices(dim)
    scale = np.where(iu[0] == iu[1], 1.0, 1.0 / math.sqrt(2.0))
    M = np.zeros(v.shape[:-1] + (dim, dim))
    M[..., iu[0], iu[1]] = v * scale
    M[..., iu[1], iu[0]] = v * scale
    return M


def information_bound(intervals: int, knots: int) -> float:
    """h1 = (1/4) max_{t in {0, 1}} sqrt(sum_{j,l <= T} (t + s(j).s(l))^2): a bound on the Frobenius norm of one
    record's information matrix sum_j p_j (1 - p_j) z_j z_j^T at any w (module docstring); at most c2 = T R^2 / 4."""
    S = interval_basis(intervals, knots)
    U = S @ S.T
    return 0.25 * math.sqrt(max(float(np.sum(U ** 2)), float(np.sum((1.0 + U) ** 2))))


def information_many(pp: PersonPeriod, W: np.ndarray) -> np.ndarray:
    """H(w_r) = sum_rows sigma (1 - sigma) z z^T for every row w_r of W: shape (trials, d, d)."""
    Z, _, c = pp.compressed
    P = special.expit(Z @ np.atleast_2d(W).T)  # (rows, trials)
    return np.einsum("ur,ui,uj->rij", c[:, None] * P * (1 - P), Z, Z)


@dataclass(frozen=True)
class DesignBounds:
    """The public constants of a person-period design the mechanisms calibrate with."""

    intervals: int
    knots: int
    horizon: float
    dim: int
    R: float
    n_public: int
    rows_per_subject: int = 1

    @classmethod
    def of(cls, pp: PersonPeriod) -> DesignBounds:
        return cls(pp.intervals, pp.knots, pp.horizon, pp.dim, pp.R, pp.n_public, pp.rows_per_subject)

    @classmethod
    def declared(cls, intervals: int, knots: int, horizon: float, columns: int, n_public: int,
                 rows_per_subject: int = 1) -> DesignBounds:
        """The bounds of a design from its declared values alone (what a release record keeps): ``columns`` encoded
        covariate columns plus ``knots`` spline columns, R from the spline basis; equal to :meth:`of` the design."""
        return cls(int(intervals), int(knots), float(horizon), int(columns) + int(knots),
                   row_bound(interval_basis(int(intervals), int(knots))), int(n_public), int(rows_per_subject))

    @property
    def c1(self) -> float:
        return gradient_bound(self.rows_per_subject, self.intervals, self.R)

    @property
    def c2(self) -> float:
        return hessian_trace_bound(self.rows_per_subject, self.intervals, self.R)

    @property
    def information_sensitivity(self) -> float:
        """Delta_H = sqrt(2) m h1: the Frobenius sensitivity of the summed information matrix (add, remove or
        replace one subject of m records; module docstring)."""
        return math.sqrt(2.0) * self.rows_per_subject * information_bound(self.intervals, self.knots)

    def to_dict(self) -> dict[str, Any]:
        return {"intervals": self.intervals, "knots": self.knots, "horizon": self.horizon, "dimension": self.dim,
                "R": self.R, "n_public": self.n_public, "rows_per_subject": self.rows_per_subject,
                "c1": self.c1, "c2": self.c2}


@dataclass
class RegressionResult:
    """Draws W (trials, dim) of one mechanism, what it charged, and (pSGLD) chain diagnostics."""

    mechanism: str
    W: np.ndarray
    pp: PersonPeriod = field(repr=False)
    cost: PrivacyCost
    parameters: dict[str, Any]
    diagnostics: dict[str, Any] = field(default_factory=dict)

    @property
    def betas(self) -> np.ndarray:
        """Covariate coefficients per trial on the normalised scale, (trials, p)."""
        return self.W[:, : self.pp.p]

    @property
    def coefficients(self) -> list[dict[str, float]]:
        """Covariate coefficients per trial in original units."""
        B = self.betas * self.pp.encoding.to_original
        return [dict(zip(self.pp.encoding.names, row.tolist())) for row in B]

    def mre(self, beta_star: np.ndarray) -> float:
        return mean_relative_error(self.betas, beta_star)


class _RegressionMechanism(Mechanism):
    analysis = ANALYSIS
    guarantee = EXACT

    def __init__(self, epsilon: float, bounds: DesignBounds) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.bounds = bounds

    @property
    def cost(self) -> PrivacyCost:
        return PrivacyCost(self.epsilon, guarantee=self.guarantee)

    @property
    def ridge_without_noise(self) -> float:
        """The ridge Lambda of the fit a release without noise (epsilon = inf) gives: 0 for every mechanism. The ridge
        only bounds one subject's influence for the noise, so without noise the release is the non-private
        maximum-likelihood fit (module docstring)."""
        return 0.0

    def _check(self, pp: PersonPeriod) -> None:
        if DesignBounds.of(pp) != self.bounds:
            raise ParameterError("The mechanism was calibrated for another design: rebuild it for these data.")

    def compute(self, pp: PersonPeriod, noise: NoiseSource, trials: int = 1) -> RegressionResult:
        raise NotImplementedError
