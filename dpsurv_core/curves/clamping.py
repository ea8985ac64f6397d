"""What clamping noisy counts at 0 does: the bias it adds to each event and censoring cell, for the sentence that
says how far a curve read from clamped counts can be off (laplace-counts' Laplace noise, rrr's de-biased counts).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


def clamping_bias(counts: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """E[max(0, d + N)] - d, what clamping a noisy count at 0 adds on average to a true count d: p^(d+1) / (1 - p^2)
    for discrete Laplace noise of ``scale`` (P(N = k) proportional to p^|k|, p = exp(-1/scale)), (scale / 2)
    exp(-d / scale) for continuous Laplace."""
    d = np.maximum(np.asarray(counts, float), 0.0)
    if scale <= 0:
        return np.zeros_like(d)
    if not discrete:
        return scale / 2.0 * np.exp(-d / scale)
    p = math.exp(-1.0 / scale)
    return p ** (d + 1.0) / (1.0 - p * p)


@dataclass(frozen=True)
class ClampingBias:
    """What setting negative released event counts to 0 adds on average to each (..., G, J) event cell of the curves
    a band stands behind (:func:`laplace_clamping`, :func:`rrr_clamping`), with the sentence's words: what was
    clamped and the size of the noise on one cell."""

    events: np.ndarray
    what: str
    noise_sd: np.ndarray  # (..., G, J): the standard deviation of the noise on one event cell there
    # (..., G, J): what clamping adds to each censoring cell; the number at risk falls by the events' and censorings'
    # biases of the bins before, which on a fine grid inflates the hazard more than the events' own bias
    censored: np.ndarray | None = None


def declamped(released: np.ndarray, scale: float, discrete: bool = True) -> np.ndarray:
    """The true count d >= 0 whose clamped noisy count has mean ``released``: d + clamping_bias(d) = y (0 where y is
    at most the bias of an empty cell), by bisection; the clamping bias at the released counts themselves, which
    clamping has already pulled up, understates it most in the sparse cells where it matters."""
    y = np.maximum(np.asarray(released, float), 0.0)
    if scale <= 0:
        return y
    lo, hi = np.zeros_like(y), y.copy()
    for _ in range(40):  # the mean d + bias(d) rises with d: bisection to about 1e-12 of a count
        mid = (lo + hi) / 2.0
        above = mid + clamping_bias(mid, scale, discrete) > y
        lo, hi = np.where(above, lo, mid), np.where(above, mid, hi)
    return lo


def laplace_clamping(events: np.ndarray, scale: float, discrete: bool = True, censored: np.ndarray | None = None
                     ) -> ClampingBias:
    """laplace-counts: every event type's cell (..., G, K, J) and censoring cell (..., G, J) clamped on its own; the
    bias of each (:func:`clamping_bias`) is read at the count that clamping would have pulled up to the released one
    (:func:`declamped`)."""
    p = math.exp(-1.0 / scale) if scale > 0 else 0.0
    sd = (math.sqrt(2.0 * p) / (1.0 - p) if discrete else math.sqrt(2.0) * scale) if scale > 0 else 0.0
    bias = clamping_bias(declamped(events, scale, discrete), scale, discrete).sum(-2)
    cens = None if censored is None else clamping_bias(declamped(censored, scale, discrete), scale, discrete)
    return ClampingBias(bias, "clamping the noisy counts at 0", np.full(bias.shape, sd), cens)


def rrr_clamping(debiased_events: np.ndarray, matrix: np.ndarray, debiased_censored: np.ndarray | None = None
                 ) -> ClampingBias:
    """rrr: de-biasing solves P^T x = reported, x = A r with A = (P^T)^-1, and sets negative cells to 0. With x_h
    true subjects of group h in a cell reporting by row h of P (a multinomial), Var(x_g) = (A S A^T)_gg, S = sum_h x_h
    (diag(p_h) - p_h p_h^T); x_g is about normal, so clamping adds sd (phi(z) - z Phi(-z)), z = x_g / sd (Johnson,
    Kotz and Balakrishnan 1994), evaluated at the released (clamped) cells: an underestimate (more so with several
    rows per subject, whose rows report one label together)."""
    bias, var = _rrr_cell_bias(debiased_events, matrix)
    cens = None if debiased_censored is None else _rrr_cell_bias(np.asarray(debiased_censored)[..., None, :],
                                                                 matrix)[0][..., 0, :]
    return ClampingBias(bias.sum(-2), "de-biasing the randomized labels and setting negative counts to 0",
                        np.sqrt(var.sum(-2)), cens)


def _rrr_cell_bias(debiased: np.ndarray, matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(bias, variance) (..., G, K, J) of rrr's clamped de-biased cells (:func:`rrr_clamping`)."""
    from scipy.stats import norm

    x = np.maximum(np.asarray(debiased, float), 0.0)  # (..., G, K, J)
    a = np.linalg.inv(matrix.T)
    p = np.asarray(matrix, float)
    outer = np.einsum("ha,hb->hab", p, p)
    diag = np.einsum("ha,ab->hab", p, np.eye(p.shape[0]))
    cov = np.einsum("...hkj,hab->...kjab", x, diag - outer)  # (..., K, J, G, G) of the reported counts
    var = np.einsum("ga,...kjab,gb->...gkj", a, cov, a)
    sd = np.sqrt(np.maximum(var, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(sd > 0, x / sd, np.inf)
        bias = np.where(sd > 0, sd * (norm.pdf(z) - z * norm.sf(z)), 0.0)
    return bias, var
