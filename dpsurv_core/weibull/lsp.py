"""The LSP ladder of docs/mechanisms.md (Nguyen & Hui 2017, Weibull, section IV-A, Algorithms 1 and 2).

For k = 1..K the boundary functions bound Equation 4 on any data set at distance k:

    f_L^k(p) = (sum t^p ln t - k/(e p)) / sum_{i=1}^{n-k} (t*_i)^p      f_U^k(p) = (sum t^p ln t + k/(e p)) / (sum t^p + k)
    g_L^k(p) = 1/p + (sum d ln t - k omega) / (sum d - k)            g_U^k(p) = 1/p + (sum d ln t + k omega) / (sum d + k)

l(k) is the root of F_k = f_U^k - g_L^k and u(k) the root of G_k = f_L^k - g_U^k, searched in (0, gamma].
F_k is strictly increasing in p (its derivative is a weighted variance plus a positive 1/p^2 term), so
l(k) is the unique root; F_k increases with k, so the roots move left as k grows. G_k decreases with k,
so u(k) moves right; when G_k(gamma) <= 0 the root is missing and u(k) clamps to gamma. Where k >= sum d
the rung is the floor [0, gamma]; l(K+1) = 0 and u(K+1) = gamma. Nesting is enforced with a running min
of l and a running max of u.

Speed: each root is a safeguarded Newton iteration warm-started from a quadratic extrapolation of the
previous rungs' roots, and every evaluation is one pass of exponentials over the distinct times, with
the n-k partial sums taken as prefix sums of the sorted t^p. The ladder depends only on the data and
(omega, gamma, K), never on epsilon, so repeated releases reuse it.

Rung i = 1..K+1 is [l(i), l(i-1)) U (u(i-1), u(i)] with weight length_i * exp(-i eps / 4), eps the total
budget of LSP + TLL (LSP spends eps/2 with utility sensitivity 1). A release draws a rung by weight
(Gumbel-max over log-weights) and then p uniformly inside the rung.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dpsurv_core.errors import DataError
from dpsurv_core.privacy.noise import NoiseSource
from dpsurv_core.weibull.model import GAMMA, RUNGS, WeibullSample, check_hyper, shape_root

_E = math.e


@dataclass(frozen=True)
class Ladder:
    """Nested LSIs S^(k) = [lower[k], upper[k]] for k = 0..K+1 (lower[0] = upper[0] = p*, clamped to gamma)."""

    lower: np.ndarray
    upper: np.ndarray
    raw_lower: np.ndarray
    raw_upper: np.ndarray
    gamma: float
    rungs: int
    n_events: int

    @property
    def p_star(self) -> float:
        return float(self.lower[0])

    @property
    def lengths(self) -> np.ndarray:
        """Length of rung i = 1..K+1: u(i) - u(i-1) + l(i-1) - l(i)."""
        return (self.upper[1:] - self.upper[:-1]) + (self.lower[:-1] - self.lower[1:])

    def log_weights(self, epsilon_shape: float, sensitivity: float = 1.0) -> np.ndarray:
        """log(length_i) - i * epsilon_shape / (2 * sensitivity): the exponential mechanism on U = -i.

        With epsilon_shape = eps/2 and sensitivity 1 this is the paper's exp(-i eps/4).
        """
        i = np.arange(1, self.rungs + 2, dtype=float)
        with np.errstate(divide="ignore"):
            return np.log(np.clip(self.lengths, 0.0, None)) - i * epsilon_shape / (2.0 * sensitivity)

    def probabilities(self, epsilon_shape: float, sensitivity: float = 1.0) -> np.ndarray:
        """Probability of each rung i = 1..K+1."""
        lw = self.log_weights(epsilon_shape, sensitivity)
        w = np.exp(lw - lw.max())
        return w / w.sum()

    def utility(self, p: np.ndarray) -> np.ndarray:
        """U(p, D) = -k for p in rung k (0 at p*), Definition 5; points outside [0, gamma] get -(K+1)."""
        p = np.asarray(p, dtype=float)
        inside = (p[..., None] >= self.lower) & (p[..., None] <= self.upper)
        k = np.where(inside.any(-1), inside.argmax(-1), self.rungs + 1)
        return -k

    def segments(self, k_max: int | None = None) -> list[tuple[int, float, float]]:
        """Pieces (k, start, end) of the ladder for drawing Figure 1: rung k = [l(k), l(k-1)) and (u(k-1), u(k)]."""
        k_max = self.rungs + 1 if k_max is None else min(int(k_max), self.rungs + 1)
        out = [(0, self.p_star, self.p_star)]
        for k in range(1, k_max + 1):
            if self.lower[k] < self.lower[k - 1]:
                out.append((k, float(self.lower[k]), float(self.lower[k - 1])))
            if self.upper[k] > self.upper[k - 1]:
                out.append((k, float(self.upper[k - 1]), float(self.upper[k])))
        return out

    def sample(self, epsilon_shape: float, noise: NoiseSource, size: int, sensitivity: float = 1.0
               ) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``size`` shapes: a rung by weight (Gumbel-max), then p uniform in it. Returns (p, rung).

        On a release source the rung comes from OpenDP's Gumbel noisy max and p is snapped to the
        release grid (Mironov 2012), since the uniform position comes from a floating-point sampler."""
        if math.isinf(epsilon_shape):
            return np.full(size, self.p_star), np.zeros(size, dtype=int)
        lw = self.log_weights(epsilon_shape, sensitivity)
        rung = noise.gumbel_argmax(lw, size) + 1
        left = self.lower[rung - 1] - self.lower[rung]
        right = self.upper[rung] - self.upper[rung - 1]
        v = noise.uniform(0.0, 1.0, size) * (left + right)
        p = np.where(v < left, self.lower[rung] + v, self.upper[rung - 1] + (v - left))
        return noise.snap(p), rung


class _Sums:
    """Power sums of one sample at one p, with the n-k prefix sums over the sorted times."""

    def __init__(self, s: WeibullSample, rungs: int) -> None:
        self.lt = s.lt_u
        self.c = s.c_u
        cum = np.cumsum(s.c_u)
        keep = s.n - np.arange(rungs + 1)  # n - k records kept, k = 0..K
        # records 1..n-k: distinct times 0..j-1 in full plus r copies of distinct time j
        j = np.searchsorted(cum, keep, side="left")
        prev = np.concatenate([[0.0], cum])[j]
        self.j = j
        self.r = keep - prev


def _quad_guess(xs: list[float]) -> float:
    if len(xs) >= 3:
        return 3.0 * xs[-1] - 3.0 * xs[-2] + xs[-3]
    if len(xs) == 2:
        return 2.0 * xs[-1] - xs[-2]
    return xs[-1]


def compute_ladder(s: WeibullSample, rungs: int = RUNGS, gamma: float = GAMMA, tol: float = 1e-9) -> Ladder:
    """Algorithm 1 with dpsurv's clamping, floor rung and nesting (see the module docstring)."""
    _, gamma, rungs = check_hyper(s.omega, gamma, rungs)
    D = s.n_events
    if D == 0:
        raise DataError("There are no events in the data: LSP needs at least one observed event.")
    omega, sd = s.omega, s.sum_d_lnt
    p_star = shape_root(s, upper=gamma)
    K = rungs
    raw_l = np.zeros(K + 2)
    raw_u = np.full(K + 2, gamma)
    raw_l[0] = raw_u[0] = p_star
    sums = _Sums(s, min(K, D))
    lt, c = sums.lt, sums.c
    kmax = min(K, D - 1)

    def F(k: int, p: float) -> tuple[float, float]:
        wc = np.exp(p * lt) * c
        s1v = wc * lt
        s0, s1, s2 = wc.sum(), s1v.sum(), s1v @ lt
        a = k / (_E * p)
        den = s0 + k
        val = (s1 + a) / den - 1.0 / p - (sd - k * omega) / (D - k)
        der = (s2 - a / p) / den - (s1 + a) * s1 / (den * den) + 1.0 / (p * p)
        return val, der

    def G(k: int, p: float) -> tuple[float, float]:
        w = np.exp(p * lt)
        wc = w * c
        s1v = wc * lt
        j, r = sums.j[k], sums.r[k]
        s1, s2 = s1v.sum(), s1v @ lt
        P = wc[:j].sum() + r * w[j]
        P1 = s1v[:j].sum() + r * w[j] * lt[j]
        a = k / (_E * p)
        val = (s1 - a) / P - 1.0 / p - (sd + k * omega) / (D + k)
        der = (s2 + a / p) / P - (s1 - a) * P1 / (P * P) + 1.0 / (p * p)
        return float(val), float(der)

    def newton(fun, k: int, x0: float, lo: float, hi: float, hi_known: bool) -> float:
        """Root of fun(k, .) in (lo, hi]; fun < 0 at lo+ and (if hi_known) >= 0 at hi.

        For G (hi_known False) the value at hi = gamma is checked only when Newton wants to go there.
        Returns hi when fun(hi) < 0 (F) or <= 0 (G): the missing root clamps to the end of the range.
        """
        x = min(max(x0, lo + 0.5 * (hi - lo) * 1e-3), hi)
        if not (lo < x <= hi):
            x = 0.5 * (lo + hi)
        checked_hi = hi_known
        for _ in range(100):
            v, dv = fun(k, x)
            if v < 0:
                lo = x
            else:
                hi, checked_hi = x, True
                if v == 0:
                    return x
            step = v / dv if dv > 0 else math.nan
            new = x - step
            if not math.isfinite(new) or new <= lo or new >= hi:
                if not checked_hi and (not math.isfinite(new) or new >= hi):
                    vh, _ = fun(k, hi)
                    checked_hi = True
                    if vh <= 0:
                        return hi
                    new = 0.5 * (lo + hi) if not (lo < new < hi) else new
                else:
                    new = 0.5 * (lo + hi)
            if abs(new - x) <= tol * max(x, 1e-3) or hi - lo <= 1e-15 * max(hi, 1.0):
                return new
            x = new
        return x

    hist_l: list[float] = [p_star]
    hist_u: list[float] = [p_star]
    for k in range(1, kmax + 1):
        prev = hist_l[-1]
        raw_l[k] = newton(F, k, _quad_guess(hist_l), 0.0, prev, True)
        hist_l.append(raw_l[k])
    for k in range(1, kmax + 1):
        prev = hist_u[-1]
        if prev >= gamma:
            raw_u[k:kmax + 1] = gamma
            break
        raw_u[k] = newton(G, k, _quad_guess(hist_u), prev, gamma, False)
        hist_u.append(raw_u[k])
    # floor rungs (k >= sum d) and the floor rung K+1
    raw_l[kmax + 1:] = 0.0
    raw_u[kmax + 1:] = gamma
    lower = np.minimum.accumulate(np.clip(raw_l, 0.0, gamma))
    upper = np.maximum.accumulate(np.clip(raw_u, 0.0, gamma))
    return Ladder(lower, upper, raw_l, raw_u, gamma, K, D)
