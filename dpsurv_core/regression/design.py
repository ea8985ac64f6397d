"""The public constants of a person-period design, computed from declared values alone (no data, no data module).

The spline basis of the baseline hazard (:func:`interval_basis`), the bound R on a row's norm, the per-subject bounds
c1 and c2 the mechanisms are calibrated with, and the factors that turn a coefficient on the unit-ball scale into the
covariate's own units are functions of T, q, the covariates' declared ranges and the number of covariates only. They
live here, apart from :mod:`dpsurv_core.regression.person_period` (which builds the rows from a cohort), so that the
reader of a release record (:mod:`dpsurv_core.regression.readout`) recomputes them bit for bit with no data in reach.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from dpsurv_core.errors import ParameterError

DEFAULT_INTERVALS = 20
DEFAULT_KNOTS = 5


def knots(q: int) -> np.ndarray:
    """The q knots k / (q + 1), k = 1..q, evenly spread over (0, 1)."""
    return np.arange(1, q + 1) / (q + 1.0)


def natural_spline_basis(x: np.ndarray, q: int) -> np.ndarray:
    """ESL natural cubic spline basis with knots :func:`knots`: N_1 = 1, N_2 = x, N_{k+2} = d_k - d_{q-1},
    d_k(x) = ((x - xi_k)_+^3 - (x - xi_q)_+^3) / (xi_q - xi_k). Shape (len(x), q)."""
    if q < 2:
        raise ParameterError(f"The spline needs at least 2 knots, got {q}.")
    x = np.asarray(x, dtype=float)
    xi = knots(q)
    cube = np.clip(x[:, None] - xi[None, :], 0, None) ** 3
    d = (cube[:, :-1] - cube[:, -1:]) / (xi[-1] - xi[:-1])  # d_1..d_{q-1}
    cols = [np.ones_like(x), x] + [d[:, k] - d[:, q - 2] for k in range(q - 2)]
    return np.column_stack(cols)


def interval_basis(intervals: int, q: int) -> np.ndarray:
    """s(j), j = 1..T: the spline basis at the midpoints, orthonormalised over the T midpoints (a public
    invertible linear map: same spline space, better conditioned coefficients) and scaled by the public
    constant that makes max_j ||s(j)|| = 1. The first column stays proportional to the constant."""
    mid = (np.arange(1, intervals + 1) - 0.5) / intervals
    q_, r_ = np.linalg.qr(natural_spline_basis(mid, q))
    s = q_ * np.sign(np.diag(r_))[None, :]
    return s / np.linalg.norm(s, axis=1).max()


def gradient_bound(rows_per_subject: int, intervals: int, R: float) -> float:
    """c1 = m T R bounds ||grad L_i|| for a subject with at most m records (docs/mechanisms.md)."""
    return rows_per_subject * intervals * R


def hessian_trace_bound(rows_per_subject: int, intervals: int, R: float) -> float:
    """c2 = m T R^2 / 4 bounds tr(grad^2 L_i) (docs/mechanisms.md)."""
    return rows_per_subject * intervals * R ** 2 / 4.0


def row_bound(spline: np.ndarray) -> float:
    """R = sqrt(1 + max_j ||s(j)||^2): the public bound on ||z_ij|| when the covariates lie in the unit ball (sqrt(2)
    for :func:`interval_basis`)."""
    return math.sqrt(1.0 + float(np.max(np.sum(np.asarray(spline) ** 2, axis=1))))


def original_factors(half_ranges: Sequence[float], blocks: int) -> np.ndarray:
    """Factor f with beta_original = f * beta_normalised, per encoded column: 1 / (h sqrt(P)) for a numeric column of
    half-range h, 1 / sqrt(P) for an indicator (h = 1), P the number of covariates (numeric columns plus categorical
    blocks)."""
    root = math.sqrt(blocks) if blocks else 1.0
    return np.array([1.0 / (h * root) for h in half_ranges])
