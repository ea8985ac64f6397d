"""The LSP ladder of docs/mechanisms.md (Nguyen & Hui 2017, Weibull, section IV-A, Algorithms 1 and 2).

For k = 1..K the boundary functions bound Equation 4 on any data set at distance k:

    f_L^k(p) = (sum t^p ln t - k/(e p)) / sum_{i=1}^{n-k} (t*_i)^p      f_U^k(p) = (sum t^p ln t + k/(e p)) / (sum t^p + k)
    g_L^k(p) = 1/p + (sum d ln t - k omega) / (sum d - k)            g_U^k(p) = 1/p + (sum d ln t + k omega) / (sum d + k)

l(k) is the root of F_k = f_U^k - g_L^k and u(k) the root of G_k = f_L^k - g_U^k, searched in (0, gamma].
F_k is strictly increasing in p (its derivative is a weighted variance plus a positive 1/p^2 term), so
l(k) is the unique root; F_k increases with k, so the roots move left as k grows. G_k decreases with k,
so u(k) moves right. G_k need not be monotone in p: on small data sets (lung's rungs 6 to 9) it rises above 0
and falls back below it before gamma, and u(k) is then its first crossing above u(k-1), the one Algorithm 1's
search from the previous rung finds; when G_k < 0 all the way to gamma the root is missing and u(k) clamps to
gamma (and so does every later rung). Where k >= sum d
the rung is the floor [0, gamma]; l(K+1) = 0 and u(K+1) = gamma. Nesting is enforced with a running min
of l and a running max of u.

Speed: the rungs are solved together, as arrays over k. The power sums are Taylor series in p around the
points of a grid (one row of exponentials over the distinct times per grid point, not one per rung and Newton
step), the n-k partial sums from cumulative sums over the sorted times; starting points come from a table of
the boundary functions on that grid (for the lower roots the rung k at which a shape is a root has a closed
form: a quadratic in k); then an elementwise safeguarded Newton runs to the same tolerance as before. Only the
upper rungs where G_k may cross 0 twice are still solved one after the other (see :func:`compute_ladder`).
The ladder depends only on the data and (omega, gamma, K), never on epsilon, so repeated releases reuse it.

Rung i = 1..K+1 is [l(i), l(i-1)) U (u(i-1), u(i)] with weight length_i * exp(-i eps / 4), eps the total
budget of LSP + TLL (LSP spends eps/2 with utility sensitivity 1). A release draws a rung by weight
(Gumbel-max over log-weights) and then p uniformly inside the rung: on a release the position is a discrete
uniform on 2^52 equally spaced points across the rung (``ReleaseNoise.uniform``), not a continuous one.
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

        On a release source the rung comes from OpenDP's Gumbel noisy max and the position v = k / 2^52 times the
        rung's length, k uniform on 0..2^52 - 1 from os.urandom (a discrete uniform on that grid, drawn exactly).
        p is the rung's end plus v, a rounded floating-point sum, so it is snapped to the release grid (Mironov
        2012)."""
        if math.isinf(epsilon_shape):
            return np.full(size, self.p_star), np.zeros(size, dtype=int)
        lw = self.log_weights(epsilon_shape, sensitivity)
        rung = noise.gumbel_argmax(lw, size) + 1
        left = self.lower[rung - 1] - self.lower[rung]
        right = self.upper[rung] - self.upper[rung - 1]
        v = noise.uniform(0.0, 1.0, size) * (left + right)
        p = np.where(v < left, self.lower[rung] + v, self.upper[rung - 1] + (v - left))
        return noise.snap(p), rung


_TERMS = 17  # Taylor terms of exp(delta ln t): |delta ln t| <= 1/2 leaves out less than 0.5^17 / 17! < 1e-19 of it
_BLOCK = 1 << 20  # elements of one block of work (grid points x distinct times x moments)
_REFINE = 4  # points per bracket at which every rung's boundary function is read before Newton starts
_ROWS = 16  # grid points per matrix product (larger products go multi-threaded in BLAS, slower on a busy machine)


def _grow(arrays: list[np.ndarray], used: int, extra: int) -> list[np.ndarray]:
    """The arrays with room for ``extra`` more rows after the first ``used``."""
    if used + extra <= arrays[0].shape[0]:
        return arrays
    cap = max(2 * arrays[0].shape[0], used + extra, 8)
    out = [np.empty((cap,) + a.shape[1:]) for a in arrays]
    for a, b in zip(arrays, out):
        b[:used] = a[:used]
    return out


class _Sums:
    """The power sums of one sample as functions of p, at many p at once without an exponential per (p, time).

    A sum sum_i c_i (ln t_i)^m t_i^p is a Taylor series around the nearest point p0 of a grid of step
    h = 1 / max|ln t|:

        sum_i c_i (ln t_i)^m t_i^p = sum_j (p - p0)^j / j! * M_{m+j}(p0),   M_q(p0) = sum_i c_i (ln t_i)^q t_i^p0,

    and |p - p0| max|ln t| <= 1/2, so ``_TERMS`` terms leave out less than 1e-19 of it (the terms of one M_q all
    have the same sign: nothing cancels). The moments of a grid point (one row of exponentials over the distinct
    times, then a matrix product) are computed the first time an iterate comes near it and kept. This class holds
    m = 0, 1, 2 over all times (``full``); with ``kcap`` it holds m = 0, 1 over the n-k smallest records for
    k = 0..kcap instead (``partial``): records
    1..n-k are distinct times 0..j_k-1 in full plus r_k copies of distinct time j_k, so the moments are those of
    the times every such rung keeps (below j_kcap) plus cumulative sums over the distinct times from j_kcap on,
    read at j_k."""

    lt_pow: np.ndarray
    c_pow: np.ndarray

    def __init__(self, s: WeibullSample, top: float, kcap: int | None = None, like: _Sums | None = None) -> None:
        lt, c = s.lt_u, s.c_u
        self.lt = lt
        self.inv_h = max(float(np.max(np.abs(lt))), 1e-12)
        self.h = 1.0 / self.inv_h
        self.size = int(math.ceil(top * self.inv_h)) + 1  # grid points 0, h, 2h, ... covering [0, top]
        q = _TERMS + 2
        if like is None:
            pw = np.empty((lt.size, q))
            pw[:, 0] = 1.0
            pw[:, 1:] = lt[:, None]
            lt_pow = np.cumprod(pw, axis=1)  # (ln t)^q, q = 0.._TERMS+1
            c_pow = c[:, None] * lt_pow
        else:
            lt_pow, c_pow = like.lt_pow, like.c_pow
        self.lt_pow, self.c_pow = lt_pow, c_pow
        self.inv_fact = 1.0 / np.cumprod(np.concatenate([[1.0], np.arange(1.0, _TERMS)]))
        self.slot = np.full(self.size, -1, dtype=np.intp)  # grid point -> row of the moments
        self.p0 = np.empty(0)  # the grid point of each row
        self.used = 0
        self.kcap = kcap
        if kcap is None:
            self.cols = c_pow
            self.mom = np.empty((0, q))
            return
        cum = np.cumsum(c)
        keep = s.n - np.arange(kcap + 1)  # n - k records kept, k = 0..kcap
        j = np.searchsorted(cum, keep, side="left")
        r = keep - np.concatenate([[0.0], cum])[j]
        self.j0 = j0 = int(j[-1])  # distinct times below j0 are kept by every rung up to kcap
        self.cols = c_pow[:, :_TERMS + 1] * (np.arange(lt.size) < j0)[:, None]
        self.tail_pow = c_pow[j0:, :_TERMS + 1]  # (distinct times from j0 on, moments)
        self.jw = j - j0  # rung k: those times 0..jw_k-1 in full, r_k copies of time jw_k
        self.r_pow = r[:, None] * lt_pow[j, :_TERMS + 1]
        self.mom = np.empty((0, kcap + 1, _TERMS + 1))

    def rows(self, p: np.ndarray) -> np.ndarray:
        """Row of the grid point nearest to each p, computing the moments of new grid points."""
        g = np.minimum(np.rint(np.abs(p) * self.inv_h).astype(np.intp), self.size - 1)
        rows = self.slot[g]
        if (rows < 0).any():
            self._add(np.unique(g[rows < 0]))
            rows = self.slot[g]
        return rows

    def _add(self, new: np.ndarray) -> None:
        self.mom, self.p0 = _grow([self.mom, self.p0], self.used, new.size)
        width = self.lt.size * self.cols.shape[1] + (0 if self.kcap is None else 2 * self.mom[0].size)
        step = max(1, min(_ROWS, _BLOCK // max(width, 1)))
        for a in range(0, new.size, step):
            idx = new[a:a + step]
            w = np.exp(np.multiply.outer(idx * self.h, self.lt))
            mm = w @ self.cols
            rows = np.arange(self.used, self.used + idx.size)
            if self.kcap is None:
                self.mom[rows] = mm
            else:
                wt = w[:, self.j0:]  # (points, times from j0 on)
                cum = np.zeros((idx.size, wt.shape[1] + 1, _TERMS + 1))  # (points, times, moments)
                np.cumsum(wt[:, :, None] * self.tail_pow, axis=1, out=cum[:, 1:])
                self.mom[rows] = (mm[:, None, :] + cum[:, self.jw]
                                  + wt[:, self.jw][:, :, None] * self.r_pow)
            self.p0[rows] = idx * self.h
            self.slot[idx] = rows
            self.used += idx.size

    def _powers(self, p: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """(p - p0)^j / j! for j < _TERMS (rows), one column per p."""
        d = p - self.p0[rows]
        x = np.empty((_TERMS, p.size))
        x[0] = 1.0
        x[1] = d
        w, dd = 2, d * d
        while w < _TERMS:  # powers 0..w-1 times d^w give powers w..2w-1
            e = min(2 * w, _TERMS)
            np.multiply(x[:e - w], dd, out=x[w:e])
            dd = dd * dd
            w = e
        x *= self.inv_fact[:, None]
        return x

    def full(self, p: np.ndarray) -> np.ndarray:
        """Rows sum c t^p, sum c t^p ln t and sum c t^p ln^2 t at every p."""
        rows = self.rows(p)
        x, m = self._powers(p, rows), np.ascontiguousarray(self.mom[rows].T)
        return np.stack([np.einsum("ji,ji->i", x, m[s:s + _TERMS]) for s in range(3)])

    def partial(self, k: np.ndarray, p: np.ndarray) -> np.ndarray:
        """Rows: sums of c t^p and of c t^p ln t over the n-k smallest records, at every (k, p), k <= kcap."""
        rows = self.rows(p)
        x, m = self._powers(p, rows), np.ascontiguousarray(self.mom[rows, k].T)
        return np.stack([np.einsum("ji,ji->i", x, m[s:s + _TERMS]) for s in range(2)])


class _Boundary:
    """F_k = f_U^k - g_L^k and G_k = f_L^k - g_U^k with their p-derivatives, elementwise over arrays of rungs k
    and shapes p (Taylor sums, :class:`_Sums`), and G_k exactly (one exponential per distinct time) where few
    values are needed."""

    def __init__(self, s: WeibullSample, kmax: int, top: float) -> None:
        self.s, self.top = s, top
        self.sums = _Sums(s, top)
        self.prefix: _Sums | None = None
        self.D, self.sd, self.omega = s.n_events, s.sum_d_lnt, s.omega
        cum = np.cumsum(s.c_u)
        keep = s.n - np.arange(kmax + 1)  # n - k records kept, k = 0..kmax
        self.j = np.searchsorted(cum, keep, side="left")
        self.r = keep - np.concatenate([[0.0], cum])[self.j]

    def F(self, k: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        s0, s1, s2 = self.sums.full(p)
        a = k / (_E * p)
        den = s0 + k
        val = (s1 + a) / den - 1.0 / p - (self.sd - k * self.omega) / (self.D - k)
        der = (s2 - a / p) / den - (s1 + a) * s1 / (den * den) + 1.0 / (p * p)
        return val, der

    def use_prefix(self, kcap: int) -> None:
        """Taylor prefix sums for the rungs up to kcap (:meth:`G`)."""
        self.prefix = _Sums(self.s, self.top, kcap, like=self.sums)

    def G(self, k: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        _, s1, s2 = self.sums.full(p)
        assert self.prefix is not None, "use_prefix first"
        P, P1 = self.prefix.partial(k, p)
        a = k / (_E * p)
        val = (s1 - a) / P - 1.0 / p - (self.sd + k * self.omega) / (self.D + k)
        der = (s2 + a / p) / P - (s1 - a) * P1 / (P * P) + 1.0 / (p * p)
        return val, der

    def G_one(self, k: int, p: float) -> tuple[float, float]:
        """G_k(p) and its derivative at one (k, p), summed exactly (Algorithm 1's evaluation, rung after rung)."""
        lt, c = self.s.lt_u, self.s.c_u
        w = np.exp(p * lt)
        wc = w * c
        s1v = wc * lt
        j, r = self.j[k], self.r[k]
        s1, s2 = s1v.sum(), s1v @ lt
        P = wc[:j].sum() + r * w[j]
        P1 = s1v[:j].sum() + r * w[j] * lt[j]
        a = k / (_E * p)
        val = (s1 - a) / P - 1.0 / p - (self.sd + k * self.omega) / (self.D + k)
        der = (s2 + a / p) / P - (s1 - a) * P1 / (P * P) + 1.0 / (p * p)
        return float(val), float(der)

    def G_pairs(self, k: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """G_k(p) and its derivative summed exactly at every (k, p) (one row of exponentials per pair)."""
        lt, c = self.s.lt_u, self.s.c_u
        w = np.exp(np.multiply.outer(p, lt))
        s1, s2 = (w @ np.stack([c * lt, c * lt * lt], axis=1)).T
        wc = w * c
        r = np.arange(p.size)
        j, rk = self.j[k], self.r[k]
        cum0 = np.cumsum(wc, axis=1)
        cum1 = np.cumsum(wc * lt, axis=1)
        before = j > 0
        jb = np.maximum(j - 1, 0)
        P = np.where(before, cum0[r, jb], 0.0) + rk * w[r, j]
        P1 = np.where(before, cum1[r, jb], 0.0) + rk * w[r, j] * lt[j]
        a = k / (_E * p)
        val = (s1 - a) / P - 1.0 / p - (self.sd + k * self.omega) / (self.D + k)
        der = (s2 + a / p) / P - (s1 - a) * P1 / (P * P) + 1.0 / (p * p)
        return val, der

    def G_exact(self, k: np.ndarray, p: np.ndarray) -> np.ndarray:
        """G_k(p) summed exactly for every rung k (rows) at every p (columns)."""
        lt, c = self.s.lt_u, self.s.c_u
        out = np.empty((k.size, p.size))
        step = max(1, _BLOCK // max(lt.size, 1))
        for a in range(0, p.size, step):
            pp = p[a:a + step]
            w = np.exp(np.multiply.outer(pp, lt))
            s1 = w @ (c * lt)
            cum = np.concatenate([np.zeros((pp.size, 1)), np.cumsum(w * c, axis=1)], axis=1)
            P = cum[:, self.j[k]] + self.r[k] * w[:, self.j[k]]  # (p, rungs)
            kk = k[None, :]
            val = (s1[:, None] - kk / (_E * pp[:, None])) / P - 1.0 / pp[:, None] - (self.sd + kk * self.omega) / (
                self.D + kk)
            out[:, a:a + step] = val.T
        return out

    def rung_of(self, p: np.ndarray) -> np.ndarray:
        """The k (a real number) with F_k(p) = 0, at shapes p below p*. F_k(p) (s0 + k)(D - k) is a quadratic in k,
        A k^2 + B k + C with A = 1/p + omega - 1/(e p) > 0 and C = D s0 (f(p) - g(p)) < 0 below p*: its positive
        root (it rises to D as p falls to 0). F_k(p) >= 0 exactly for the rungs at or above it (F_k grows with k)."""
        s0, s1, _ = self.sums.full(p)
        a = 1.0 / (_E * p)
        A = 1.0 / p + self.omega - a
        B = a * self.D - s1 - (self.D - s0) / p - self.sd + self.omega * s0
        C = self.D * (s1 - s0 / p) - self.sd * s0
        return (-B + np.sqrt(np.maximum(B * B - 4.0 * A * C, 0.0))) / (2.0 * A)


def _newton(fun, k: np.ndarray, x: np.ndarray, lo: np.ndarray, hi: np.ndarray, tol: float) -> np.ndarray:
    """Roots of fun(k, .) in (lo, hi], elementwise: safeguarded Newton with a bisection bracket per element.

    fun < 0 left of the root and >= 0 right of it (a NaN counts as >= 0); a step that leaves the bracket is
    replaced by its midpoint; an element stops when its step is below ``tol`` relative (or its bracket is
    empty) and returns the new iterate, or the point where fun is exactly 0. When fun < 0 on all of (lo, hi]
    the bracket closes on hi: a missing root clamps to the end of the range."""
    out = np.empty(k.size)
    act = np.arange(k.size)
    for _ in range(100):
        if act.size == 0:
            break
        v, dv = fun(k, x)
        neg = v < 0
        lo = np.where(neg, x, lo)
        hi = np.where(neg, hi, x)
        with np.errstate(divide="ignore", invalid="ignore"):
            new = x - v / np.where(dv > 0, dv, np.nan)
        bad = ~(lo < new) | ~(new < hi)  # also NaN: no usable Newton step
        new = np.where(bad, 0.5 * (lo + hi), new)
        zero = v == 0
        done = zero | (np.abs(new - x) <= tol * np.maximum(x, 1e-3)) | (hi - lo <= 1e-15 * np.maximum(hi, 1.0))
        if done.any():
            out[act[done]] = np.where(zero, x, new)[done]
            go = ~done
            act, k, x, lo, hi = act[go], k[go], new[go], lo[go], hi[go]
        else:
            x = new
    out[act] = x
    return out


def _refine(fun, k: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Narrow every rung's bracket (lo, hi] (fun < 0 at lo, or lo the end of the range; fun >= 0 at hi, or hi the
    end of the range) to the first of ``_REFINE`` + 1 equal parts where fun reaches 0, in one evaluation of fun
    at the points of all rungs; returns (start, lo, hi), the start the root of the cubic through the two
    ends' values and slopes (Hermite; a linear interpolation or the midpoint where an end is not evaluated)."""
    m = _REFINE + 2
    xs = lo[:, None] + np.linspace(0.0, 1.0, m) * (hi - lo)[:, None]
    at0 = lo <= 0
    xs[:, 0] = np.where(at0, 0.5 * xs[:, 1], lo)  # no evaluation at p = 0, where F and its slope are infinite
    v, dv = (a.reshape(-1, m) for a in fun(np.repeat(k, m), xs.ravel()))
    xs[:, 0] = lo
    v[at0, 0] = np.nan
    reach = ~(v < 0)  # NaN counts as >= 0, as in _newton
    reach[:, 0] = False
    reach[:, -1] = True
    c = np.argmax(reach, axis=1)
    r = np.arange(k.size)
    a, b, va, vb = xs[r, c - 1], xs[r, c], v[r, c - 1], v[r, c]
    w = b - a
    da, db = dv[r, c - 1] * w, dv[r, c] * w
    known = np.isfinite(va) & np.isfinite(vb) & (vb > va)
    u = np.where(known, -va / np.where(known, vb - va, 1.0), 0.5)
    cubic = known & np.isfinite(da) & np.isfinite(db)
    for _ in range(2):  # Newton on the Hermite cubic H(u) = va h00 + da h10 + vb h01 + db h11, u in [0, 1]
        u2, u3 = u * u, u * u * u
        H = va * (2 * u3 - 3 * u2 + 1) + da * (u3 - 2 * u2 + u) + vb * (3 * u2 - 2 * u3) + db * (u3 - u2)
        dH = va * (6 * u2 - 6 * u) + da * (3 * u2 - 4 * u + 1) + vb * (6 * u - 6 * u2) + db * (3 * u2 - 2 * u)
        nxt = u - H / np.where(dH > 0, dH, np.nan)
        u = np.where(cubic & (nxt > 0) & (nxt < 1), nxt, u)
    start = np.clip(a + u * w, a + 1e-3 * w, b)
    return start, a, b


def _lower_roots(bf: _Boundary, kmax: int, p_star: float, tol: float) -> np.ndarray:
    """l(k), k = 1..kmax: the root of F_k in (0, p*]. Shapes below p* (the grid points, then halving below h) give
    their rung k(p) (:meth:`_Boundary.rung_of`) down to where it passes kmax; each rung's root lies in the cell whose
    ends bracket k, which :func:`_refine` narrows before Newton."""
    h = bf.sums.h
    p = np.concatenate([[p_star], np.arange(math.ceil(p_star / h) - 1, 0, -1) * h, min(p_star, h) * 0.5 ** np.arange(1, 41)])
    p = p[p <= p_star]
    ks = [bf.rung_of(p[1:])]
    while ks[-1][-1] < kmax and p[-1] > 1e-300:
        more = p[-1] * 0.5 ** np.arange(1, 41)
        p = np.concatenate([p, more])
        ks.append(bf.rung_of(more))
    ks_a = np.maximum.accumulate(np.nan_to_num(np.concatenate([np.array([0.0]), *ks]), nan=-1.0))  # k(p) rises as p falls
    k = np.arange(1, kmax + 1, dtype=float)
    c = np.searchsorted(ks_a, k, side="left")  # ks_a[c - 1] < k <= ks_a[c]
    inside = c < ks_a.size
    c = np.minimum(c, ks_a.size - 1)
    start, lo, hi = _refine(bf.F, k, np.where(inside, p[c], 0.0), p[c - 1])
    return _newton(bf.F, k, start, lo, hi, tol)


def _upper_roots(bf: _Boundary, first: int, p_star: float, gamma: float, tol: float) -> np.ndarray:
    """u(k), k = 1..first, rungs with G_k(gamma) > 0 and one crossing in (p*, gamma): a table of G_k (summed exactly)
    at the grid points above p*, extended until every rung has crossed 0; each root lies in the first cell where
    G_k is >= 0, which :func:`_refine` narrows before Newton (Taylor sums, or exact sums for a few rungs on a
    small sample, where they cost less)."""
    h = bf.sums.h
    k = np.arange(1, first + 1)
    grid = np.arange(math.floor(p_star / h) + 1, math.ceil(gamma / h)) * h
    grid = grid[(grid > p_star) & (grid < gamma)]
    cols = [np.full((first, 1), -1.0)]  # G_k(p*) <= 0: the left end of the range
    step = max(_ROWS, _BLOCK // max(first * bf.s.lt_u.size, 1))
    done = 0
    while done < grid.size and not (cols[-1][:, -1] >= 0).all():
        cols.append(bf.G_exact(k, grid[done:done + step]))
        done += step
    p = np.concatenate([[p_star], grid[:done], [gamma]])
    tab = np.concatenate(cols + [np.ones((first, 1))], axis=1)  # G_k(gamma) > 0 for these rungs
    c = np.maximum(np.argmax(~(tab < 0), axis=1), 1)  # the first point where G_k >= 0
    if first * bf.s.lt_u.size <= 1 << 14:
        fun = bf.G_pairs
    else:
        bf.use_prefix(first)
        fun = bf.G
    start, lo, hi = _refine(fun, k, p[c - 1], p[c])
    return _newton(fun, k, start, lo, hi, tol)


def _quad_guess(xs: list[float]) -> float:
    if len(xs) >= 3:
        return 3.0 * xs[-1] - 3.0 * xs[-2] + xs[-3]
    if len(xs) == 2:
        return 2.0 * xs[-1] - xs[-2]
    return xs[-1]


def _newton_up(bf: _Boundary, k: int, x0: float, lo: float, hi: float, tol: float) -> float:
    """Root of G_k in (lo, hi] searched from x0 as Algorithm 1 does rung after rung, for the rungs where
    G_k(gamma) <= 0: the value at hi = gamma is checked only when Newton wants to go there, and the search
    returns gamma when G_k(gamma) <= 0 then (the missing root clamps to the end of the range)."""
    x = min(max(x0, lo + 0.5 * (hi - lo) * 1e-3), hi)
    if not (lo < x <= hi):
        x = 0.5 * (lo + hi)
    checked_hi = False
    for _ in range(100):
        v, dv = bf.G_one(k, x)
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
                vh, _ = bf.G_one(k, hi)
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


@np.errstate(divide="ignore", over="ignore", invalid="ignore")  # NaN and inf count as >= 0, as before
def compute_ladder(s: WeibullSample, rungs: int = RUNGS, gamma: float = GAMMA, tol: float = 1e-9) -> Ladder:
    """Algorithm 1 with dpsurv's clamping, floor rung and nesting (see the module docstring).

    The rungs are solved together (:class:`_Sums`, :func:`_newton`): l(k) in (0, p*] for k = 1..min(K, sum d - 1)
    at once (F_k rises with p: one root), and u(k) in (p*, gamma] at once for the rungs with G_k(gamma) > 0 (a
    single crossing). G_k is not monotone in p: where G_k(gamma) <= 0 it may rise above 0 and fall back below
    it before gamma, and Algorithm 1 as dpsurv ran it rung after rung takes the crossing its Newton search from the
    previous rungs' roots finds (the first one above u(k-1) on the data sets checked), or gamma; those rungs (from
    the first with G_k(gamma) <= 0 up to the first that reaches gamma, after which every rung is gamma) are still
    solved one after the other in the same way (:func:`_newton_up`), so ``lower`` and ``upper`` are today's.
    ``raw_lower``/``raw_upper`` are the roots before nesting; where a root lies beyond the previous rung's (rounding)
    the sequential search clamped it to the previous root, here it is kept; the running min / max gives the same
    nested ladder. Nothing but the tests reads them.

    Parameters
    ----------
    s : WeibullSample
        The normalised sample.
    rungs : int, default 500
        Number of rungs K.
    gamma : float, default 10.0
        The largest shape considered.
    tol : float, default 1e-09
        Tolerance of the roots.

    Returns
    -------
    Ladder
        The lower and upper rungs around the MLE's shape.

    References
    ----------
    .. [1] Nguyen T. T. & Hui S. C. (2017a), Privacy-Preserving Mechanisms for Parametric Survival Analysis with
       Weibull Distribution, section IV-A, Algorithms 1 and 2.
    """
    _, gamma, rungs = check_hyper(s.omega, gamma, rungs)
    D = s.n_events
    if D == 0:
        raise DataError("There are no events in the data: LSP needs at least one observed event.")
    p_star = shape_root(s, upper=gamma)
    K = rungs
    raw_l = np.zeros(K + 2)
    raw_u = np.full(K + 2, gamma)
    raw_l[0] = raw_u[0] = p_star
    kmax = min(K, D - 1)
    if kmax >= 1:
        bf = _Boundary(s, kmax, gamma)
        raw_l[1:kmax + 1] = _lower_roots(bf, kmax, p_star, tol)
        if p_star < gamma:
            at_gamma = bf.G_exact(np.arange(1, kmax + 1), np.array([gamma]))[:, 0]
            first = int(np.argmax(at_gamma <= 0)) if (at_gamma <= 0).any() else kmax  # rungs 1..first: one crossing
            if first:
                raw_u[1:first + 1] = _upper_roots(bf, first, p_star, gamma, tol)
            for kk in range(first + 1, kmax + 1):
                prev = raw_u[kk - 1]
                if prev >= gamma:
                    raw_u[kk:kmax + 1] = gamma
                    break
                raw_u[kk] = _newton_up(bf, kk, _quad_guess(list(raw_u[max(0, kk - 3):kk])), prev, gamma, tol)
    # floor rungs (k >= sum d) and the floor rung K+1
    raw_l[kmax + 1:] = 0.0
    raw_u[kmax + 1:] = gamma
    lower = np.minimum.accumulate(np.clip(raw_l, 0.0, gamma))
    upper = np.maximum.accumulate(np.clip(raw_u, 0.0, gamma))
    return Ladder(lower, upper, raw_l, raw_u, gamma, K, D)
