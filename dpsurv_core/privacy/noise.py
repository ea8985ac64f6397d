"""The two random sources of docs/mechanisms.md, kept visibly apart.

* :class:`ReleaseNoise` is for numbers a user may publish. It cannot be seeded: its constructor takes
  no argument, and it creates no numpy generator. Floating-point samplers can leak through the low bits
  of what they return (Mironov 2012), so every draw comes from an exact sampler:

  - Laplace, discrete Laplace and the standard normal come from OpenDP's samplers (exact sampling on
    OS entropy, then rounding; the normal is OpenDP's Gaussian mechanism with scale 1 applied to 0).
  - ``gumbel_argmax`` (the exponential mechanism as Gumbel-max) is OpenDP's noisy max with Gumbel
    noise (``make_noisy_max`` under zero-concentrated divergence): only an index leaves it.
  - ``integers`` and ``choice`` use exact integer arithmetic on ``os.urandom``: a uniform integer below
    a bound by rejection sampling; ``choice`` reads the float weights as the exact dyadic rationals they
    are and picks the category with a uniform integer below their common total, so its law is exactly
    the normalised weights. Block assignment, minibatches, epoch picks and random rounding use them.
  - ``uniform`` is a discrete uniform on the 2^52-point grid: low + (high - low) k / 2^52 with k uniform
    on 0..2^52 - 1 (``integers``). k / 2^52 is exactly that discrete law (every grid point is a float);
    it is not a continuous uniform, and nothing more is claimed. The LSP rung position uses it.
  - ``gamma_sum`` (and ``gamma`` for a whole-number shape) is Gamma(d, scale) as the sum of d
    exponentials, each the absolute value of an OpenDP Laplace draw (|Laplace(s)| is Exponential(s)).
    The radius of output and objective perturbation uses it. A non-integer shape is refused.
  - ``gumbel`` (raw Gumbel variates) has no exact sampler here and raises: releases use ``gumbel_argmax``.

  The released reals built from these draws (w + b of output perturbation, the objective minimiser and
  its information matrix, pSGLD's state, the LSP shape) are still floating-point arithmetic on them, whose
  rounding Mironov (2012) attacks; they pass through :meth:`ReleaseNoise.snap`, which rounds them to
  multiples of :data:`SNAP_GRID` = 2^-20, his snapping defence. Limits: his proof needs a clamp and a grid
  about as coarse as the noise scale, and charges a small extra epsilon; a fixed 2^-20 grid comes with no
  such proof, so dpsurv charges nothing extra for it and claims no more than that.
* :class:`SimulationNoise` is for repeated trials, trade-off curves, audits and previews: a seeded
  ``numpy.random.Generator`` so results are reproducible. Never use it for a release. A preview's seed
  comes from :func:`preview_seed_for` (a session secret hashed with the preview's settings), so previews
  at two epsilons have independent noise and cannot be combined into the exact value.

Both expose the same methods, so a mechanism is written once and takes either source.
"""

from __future__ import annotations

import hashlib
import json
import types
from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

Shape = int | tuple[int, ...]


class NoiseSource(Protocol):
    """What a mechanism may ask of a random source."""

    is_release: bool

    def laplace(self, scale: float | np.ndarray, size: Shape) -> np.ndarray: ...

    def discrete_laplace(self, scale: float, size: Shape) -> np.ndarray: ...

    def integers(self, high: int, size: Shape) -> np.ndarray: ...

    def uniform(self, low: float | np.ndarray, high: float | np.ndarray, size: Shape) -> np.ndarray: ...

    def standard_normal(self, size: Shape) -> np.ndarray: ...

    def exponential(self, scale: float, size: Shape) -> np.ndarray: ...

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray: ...

    def gamma_sum(self, dim: int, scale: float, size: Shape) -> np.ndarray: ...

    def gumbel(self, size: Shape) -> np.ndarray: ...

    def gumbel_argmax(self, log_weights: np.ndarray, size: int) -> np.ndarray: ...

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray: ...

    def snap(self, values: np.ndarray) -> np.ndarray: ...

    def describe(self) -> str: ...


# Released reals built by floating-point arithmetic on the draws are rounded to multiples of this (Mironov 2012).
SNAP_GRID = 2.0**-20


def snap_to_grid(values: np.ndarray | float, grid: float = SNAP_GRID) -> np.ndarray:
    """Round to the nearest multiple of ``grid`` (a power of two, so the multiples are exact floats)."""
    return np.round(np.asarray(values, dtype=float) / grid) * grid


def _exact_integer_weights(weights: np.ndarray) -> list[int]:
    """Non-negative float weights as integers in the same exact ratios (floats are dyadic rationals)."""
    from fractions import Fraction
    from math import lcm

    from dpsurv_core.errors import ParameterError

    w = np.asarray(weights, dtype=float).ravel()
    if w.size == 0 or not np.all(np.isfinite(w)) or np.any(w < 0) or not np.any(w > 0):
        raise ParameterError("Category weights must be finite, non-negative and not all zero.")
    fr = [Fraction(float(x)) for x in w]
    den = lcm(*(f.denominator for f in fr))
    return [int(f * den) for f in fr]


def _urandom_below(total: int, count: int) -> np.ndarray:
    """``count`` independent integers uniform on 0..total-1 from os.urandom (rejection sampling, exact).

    int64 when total < 2^62 (63-bit words, a draw kept when below the largest multiple of total); above that
    Python integers (dtype object) from ``secrets.randbelow``."""
    import os

    if total < 1:
        raise ValueError(f"A uniform integer below {total} does not exist.")
    if total < 2**62:
        limit = np.uint64((2**63 // total) * total)  # the largest multiple of total in 63 bits: accepted draws are uniform
        parts, have = [], 0
        while have < count:
            raw = np.frombuffer(os.urandom(8 * max(16, 2 * (count - have))), dtype=np.uint64) >> np.uint64(1)
            kept = raw[raw < limit] % np.uint64(total)
            parts.append(kept)
            have += kept.size
        out = np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)
        return out[:count].astype(np.int64)
    import secrets

    return np.array([secrets.randbelow(total) for _ in range(count)], dtype=object)


def _check_high(high: int) -> int:
    """A whole number of at least 1 (the count of values ``integers`` draws from)."""
    from dpsurv_core.errors import ParameterError

    if isinstance(high, (bool, np.bool_)) or int(high) != high or high < 1:
        raise ParameterError(f"Uniform integers need a whole number of values of at least 1, got {high}.")
    return int(high)


def _check_whole_shape(shape: float) -> int:
    """Gamma shapes the exact sampler takes: whole numbers of at least 1 (a sum of that many exponentials)."""
    from dpsurv_core.errors import ParameterError

    if not np.isfinite(shape) or int(shape) != shape or shape < 1:
        raise ParameterError(f"The exact gamma sampler needs a whole-number shape of at least 1 (a sum of exponentials), "
                             f"got {shape}.")
    return int(shape)


# the grid of ReleaseNoise.uniform: k / 2^52 for k = 0..2^52 - 1, every point an exact float in [0, 1)
UNIFORM_BITS = 52


def _canonical(value: Any) -> Any:
    """JSON for what json cannot write itself: numpy scalars and arrays as numbers and lists, sets sorted, else repr."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def preview_seed_for(secret: int, key: Mapping[str, Any]) -> int:
    """The seed of one preview: the first 128 bits of SHA-256 over the session's secret and the canonical JSON of
    ``key`` (mechanism, epsilon, settings). The same key gives the same seed (moving a widget back shows the same
    draw); another epsilon or setting gives an unrelated one, so two previews never share their standard draws and
    cannot be combined into the exact value (with one seed, 2 y(2) - y(1) of Laplace previews at epsilon 1 and 2 is
    the truth). ``secret``: a non-negative integer, 128 random bits in the app (``secrets.randbits(128)``)."""
    if int(secret) != secret or secret < 0:
        raise ValueError("The preview secret is a non-negative integer.")
    text = json.dumps(dict(key), sort_keys=True, separators=(",", ":"), default=_canonical)
    digest = hashlib.sha256(b"dpsurv preview seed\0" + format(int(secret), "x").encode() + b"\0" + text.encode())
    return int.from_bytes(digest.digest()[:16], "big")


# OpenDP's integer sampler saturates at +-(2^31 - 1); a noise scale that can reach it would let a release be
# read back exactly (true count + clamp). Refuse scales where P(|X| >= 2^31 - 1) exceeds about e^-40.
MAX_DISCRETE_SCALE = (2**31 - 1) / 40.0


def _check_discrete_scale(scale: float) -> None:
    from dpsurv_core.errors import ParameterError

    if scale > MAX_DISCRETE_SCALE:
        raise ParameterError(f"epsilon is so small that the count noise (scale {scale:.3g}) could overflow the integer "
                             "sampler, which would expose the true counts: use a larger epsilon (1e-6 or more).")


def _shape(size: Shape) -> tuple[int, ...]:
    return (size,) if isinstance(size, (int, np.integer)) else tuple(size)


def _opendp() -> types.SimpleNamespace:
    """The parts of OpenDP the release noise uses, under the prelude's names (``dp.m.make_laplace``,
    ``dp.atom_domain``, ...). Imported from their modules: ``opendp.prelude`` also imports its scikit-learn and
    NumPy extras, about 0.05 s of a release's start-up that the noise never uses."""
    import opendp.domains
    import opendp.measurements
    import opendp.measures
    import opendp.metrics
    import opendp.mod

    opendp.mod.enable_features("contrib")
    return types.SimpleNamespace(
        m=opendp.measurements, atom_domain=opendp.domains.atom_domain, vector_domain=opendp.domains.vector_domain,
        l1_distance=opendp.metrics.l1_distance, l2_distance=opendp.metrics.l2_distance,
        linf_distance=opendp.metrics.linf_distance,
        zero_concentrated_divergence=opendp.measures.zero_concentrated_divergence)


class ReleaseNoise:
    """Noise for releases: OpenDP's samplers and exact integer draws on OS entropy. Takes no seed and creates no
    numpy generator, by design."""

    is_release = True

    def __init__(self) -> None:
        self._dp = _opendp()
        self._gaussian: Any = None  # an OpenDP measurement (untyped), built on first use

    def _vector_laplace(self, scale: float, count: int, integer: bool) -> np.ndarray:
        dp = self._dp
        if count == 0:
            return np.zeros(0, dtype=np.int64 if integer else float)
        if scale == 0:
            return np.zeros(count, dtype=np.int64 if integer else float)
        atom = dp.atom_domain(T=int) if integer else dp.atom_domain(T=float, nan=False)
        meas = dp.m.make_laplace(dp.vector_domain(atom), dp.l1_distance(T=int if integer else float), scale=float(scale))
        zeros = [0] * count if integer else [0.0] * count
        return np.asarray(meas(zeros), dtype=np.int64 if integer else float)

    def laplace(self, scale: float | np.ndarray, size: Shape) -> np.ndarray:
        shape = _shape(size)
        scales = np.broadcast_to(np.asarray(scale, dtype=float), shape)
        out = np.zeros(shape, dtype=float)
        for s in np.unique(scales):
            mask = scales == s
            out[mask] = self._vector_laplace(float(s), int(mask.sum()), integer=False)
        return out

    def discrete_laplace(self, scale: float, size: Shape) -> np.ndarray:
        _check_discrete_scale(float(scale))
        shape = _shape(size)
        return self._vector_laplace(float(scale), int(np.prod(shape)), integer=True).reshape(shape)

    def integers(self, high: int, size: Shape) -> np.ndarray:
        """Independent integers uniform on 0..high-1, exactly: rejection sampling on os.urandom (int64 below 2^62)."""
        shape = _shape(size)
        return _urandom_below(_check_high(high), int(np.prod(shape))).reshape(shape)

    def uniform(self, low, high, size: Shape) -> np.ndarray:
        """low + (high - low) * k / 2^52 with k uniform on 0..2^52 - 1 (:meth:`integers`).

        The law claimed is that of k / 2^52: the discrete uniform on the 2^52 points {0, 2^-52, ..., 1 - 2^-52},
        each an exact float, drawn exactly; not a continuous uniform. On [0, 1) that is the result itself; other
        bounds add one rounded product and one rounded sum."""
        shape = _shape(size)
        u = self.integers(2**UNIFORM_BITS, shape).astype(float) * 2.0**-UNIFORM_BITS  # exact: k < 2^53, power of 2
        return low + (np.asarray(high, dtype=float) - low) * u

    def standard_normal(self, size: Shape) -> np.ndarray:
        """OpenDP's Gaussian sampler (scale 1 on a zero vector)."""
        dp = self._dp
        shape = _shape(size)
        count = int(np.prod(shape))
        if count == 0:
            return np.zeros(shape)
        if self._gaussian is None:  # built once: the measurement holds no randomness, only the sampler's settings
            self._gaussian = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=float, nan=False)),
                                                dp.l2_distance(T=float), scale=1.0)
        return np.asarray(self._gaussian([0.0] * count), dtype=float).reshape(shape)

    def exponential(self, scale: float, size: Shape) -> np.ndarray:
        """Exponential(scale) as |Laplace(scale)|: the absolute value of OpenDP's Laplace draw (its density
        exp(-|x|/s) / (2 s) folded onto x >= 0 is exp(-x/s) / s), so as exact as that sampler."""
        shape = _shape(size)
        return np.abs(self._vector_laplace(float(scale), int(np.prod(shape)), integer=False)).reshape(shape)

    def gamma_sum(self, dim: int, scale: float, size: Shape) -> np.ndarray:
        """Gamma(dim, scale) for a whole number dim: the sum of dim independent :meth:`exponential` draws (the sum
        of d Exponential(s) variables is Gamma(d, s)); the sum is rounded floating-point addition."""
        d = _check_whole_shape(dim)
        shape = _shape(size)
        return self.exponential(scale, (int(np.prod(shape)), d)).sum(axis=1).reshape(shape)

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray:
        """:meth:`gamma_sum` for a whole-number shape; any other shape is refused (no exact sampler for it)."""
        return self.gamma_sum(_check_whole_shape(shape), scale, size)

    def gumbel(self, size: Shape) -> np.ndarray:
        """Refused: raw Gumbel variates have no exact sampler here. A release draws an index with
        :meth:`gumbel_argmax` (OpenDP's noisy max); raw variates are for :class:`SimulationNoise` only."""
        raise NotImplementedError("ReleaseNoise draws no raw Gumbel variates (no exact sampler): use gumbel_argmax, "
                                  "OpenDP's Gumbel noisy max, or SimulationNoise for a simulation.")

    def gumbel_argmax(self, log_weights: np.ndarray, size: int) -> np.ndarray:
        """``size`` indices i drawn with P(i) proportional to exp(log_weights[i]): OpenDP's Gumbel noisy max.

        Entries of -inf (weight 0) are never drawn and are left out of the scores."""
        from dpsurv_core.errors import ParameterError

        dp = self._dp
        lw = np.asarray(log_weights, dtype=float)
        keep = np.flatnonzero(np.isfinite(lw))
        if keep.size == 0 or np.any(np.isnan(lw)) or np.any(lw == np.inf):
            raise ParameterError("The exponential mechanism needs finite log-weights (at least one).")
        meas = dp.m.make_noisy_max(dp.vector_domain(dp.atom_domain(T=float, nan=False)), dp.linf_distance(T=float),
                                   dp.zero_concentrated_divergence(), scale=1.0)
        scores = [float(x) for x in lw[keep]]
        return keep[np.array([meas(scores) for _ in range(int(size))], dtype=np.int64)]

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray:
        """Category indices with P(i) = weights[i] / sum(weights) exactly, by integer arithmetic on os.urandom."""
        ints = _exact_integer_weights(weights)
        shape = _shape(size)
        count = int(np.prod(shape))
        from bisect import bisect_right
        from itertools import accumulate

        cum = list(accumulate(ints))
        u = _urandom_below(cum[-1], count)
        idx = np.array([bisect_right(cum, int(x)) for x in u], dtype=np.int64)
        return idx.reshape(shape)

    def snap(self, values: np.ndarray) -> np.ndarray:
        """Released reals rounded to multiples of :data:`SNAP_GRID` (Mironov 2012's snapping, without its proof): the
        draws are exact, but the reals a mechanism builds from them are rounded floating-point arithmetic."""
        return snap_to_grid(values)

    def describe(self) -> str:
        return ("release: OpenDP samplers (Laplace and |Laplace| sums for gamma radii, discrete Laplace, Gaussian, "
                "Gumbel noisy max), exact integer draws on os.urandom (indices, categories, a 2^-52-grid uniform); "
                "released reals snapped to a 2^-20 grid; unseeded")


class SimulationNoise:
    """Seeded noise for simulations (repeated trials, audits). Not for releases."""

    is_release = False

    def __init__(self, seed: int | np.random.SeedSequence | None) -> None:
        """``seed``: any non-negative integer (a preview's 128-bit :func:`preview_seed_for` included) or a
        SeedSequence; None draws one from OS entropy."""
        self.seed = seed
        self.rng = np.random.default_rng(seed)

    def laplace(self, scale: float | np.ndarray, size: Shape) -> np.ndarray:
        scale = np.asarray(scale, dtype=float)
        return self.rng.laplace(0.0, 1.0, _shape(size)) * scale

    def discrete_laplace(self, scale: float, size: Shape) -> np.ndarray:
        """Discrete Laplace: P(k) proportional to exp(-|k|/scale), as the difference of two geometrics."""
        _check_discrete_scale(float(scale))
        shape = _shape(size)
        if scale == 0:
            return np.zeros(shape, dtype=np.int64)
        p = -np.expm1(-1.0 / scale)
        # NumPy's geometric draws are int64 already: no copy (a planner's simulated tests draw millions of them)
        first = self.rng.geometric(p, shape).astype(np.int64, copy=False)
        return first - self.rng.geometric(p, shape).astype(np.int64, copy=False)

    def integers(self, high: int, size: Shape) -> np.ndarray:
        return self.rng.integers(0, _check_high(high), _shape(size))

    def uniform(self, low, high, size: Shape) -> np.ndarray:
        return self.rng.uniform(low, high, _shape(size))

    def standard_normal(self, size: Shape) -> np.ndarray:
        return self.rng.standard_normal(_shape(size))

    def exponential(self, scale: float, size: Shape) -> np.ndarray:
        return self.rng.exponential(scale, _shape(size))

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray:
        return self.rng.gamma(shape, scale, _shape(size))

    def gamma_sum(self, dim: int, scale: float, size: Shape) -> np.ndarray:
        """Gamma(dim, scale), the law of ReleaseNoise.gamma_sum (numpy's gamma sampler: one draw per value)."""
        return self.rng.gamma(_check_whole_shape(dim), scale, _shape(size))

    def gumbel(self, size: Shape) -> np.ndarray:
        return self.rng.gumbel(size=_shape(size))

    def gumbel_argmax(self, log_weights: np.ndarray, size: int) -> np.ndarray:
        lw = np.asarray(log_weights, dtype=float)
        return np.argmax(lw[None, :] + self.rng.gumbel(size=(int(size), lw.size)), axis=1)

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray:
        w = np.asarray(weights, dtype=float)
        return self.rng.choice(len(w), size=_shape(size), p=w / w.sum())

    def snap(self, values: np.ndarray) -> np.ndarray:
        """Identity: simulated values are not published (the grid is far below any reported precision)."""
        return np.asarray(values, dtype=float)

    def describe(self) -> str:
        return f"simulation: numpy Generator, seed {self.seed}; not for publication"
