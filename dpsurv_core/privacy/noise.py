"""The two random sources of spec section 0.6, kept visibly apart.

* :class:`ReleaseNoise` is for numbers a user may publish. Laplace noise (continuous for reals,
  discrete for integers) comes from OpenDP's samplers, which draw from OS entropy. Draws OpenDP
  has no sampler for (uniform, gamma, normal, categorical) come from a numpy generator seeded
  afresh from OS entropy for each call. It cannot be seeded: its constructor takes no argument.
* :class:`SimulationNoise` is for repeated trials, trade-off curves and audits: a seeded
  ``numpy.random.Generator`` so results are reproducible. Never use it for a release.

Both expose the same methods, so a mechanism is written once and takes either source.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

Shape = int | tuple[int, ...]


class NoiseSource(Protocol):
    """What a mechanism may ask of a random source."""

    is_release: bool

    def laplace(self, scale: float | np.ndarray, size: Shape) -> np.ndarray: ...

    def discrete_laplace(self, scale: float, size: Shape) -> np.ndarray: ...

    def uniform(self, low: float | np.ndarray, high: float | np.ndarray, size: Shape) -> np.ndarray: ...

    def standard_normal(self, size: Shape) -> np.ndarray: ...

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray: ...

    def gumbel(self, size: Shape) -> np.ndarray: ...

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray: ...

    def describe(self) -> str: ...


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


def _opendp():
    import opendp.prelude as dp

    dp.enable_features("contrib")
    return dp


class ReleaseNoise:
    """Noise for releases: OpenDP's samplers on OS entropy. Takes no seed, by design."""

    is_release = True

    def __init__(self) -> None:
        self._dp = _opendp()

    @staticmethod
    def _fresh_rng() -> np.random.Generator:
        return np.random.Generator(np.random.PCG64(np.random.SeedSequence()))

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

    def uniform(self, low, high, size: Shape) -> np.ndarray:
        return self._fresh_rng().uniform(low, high, _shape(size))

    def standard_normal(self, size: Shape) -> np.ndarray:
        return self._fresh_rng().standard_normal(_shape(size))

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray:
        return self._fresh_rng().gamma(shape, scale, _shape(size))

    def gumbel(self, size: Shape) -> np.ndarray:
        return self._fresh_rng().gumbel(size=_shape(size))

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray:
        w = np.asarray(weights, dtype=float)
        return self._fresh_rng().choice(len(w), size=_shape(size), p=w / w.sum())

    def describe(self) -> str:
        return "release: OpenDP samplers, OS entropy, unseeded"


class SimulationNoise:
    """Seeded noise for simulations (repeated trials, audits). Not for releases."""

    is_release = False

    def __init__(self, seed: int | np.random.SeedSequence | None) -> None:
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
        return self.rng.geometric(p, shape).astype(np.int64) - self.rng.geometric(p, shape).astype(np.int64)

    def uniform(self, low, high, size: Shape) -> np.ndarray:
        return self.rng.uniform(low, high, _shape(size))

    def standard_normal(self, size: Shape) -> np.ndarray:
        return self.rng.standard_normal(_shape(size))

    def gamma(self, shape: float, scale: float, size: Shape) -> np.ndarray:
        return self.rng.gamma(shape, scale, _shape(size))

    def gumbel(self, size: Shape) -> np.ndarray:
        return self.rng.gumbel(size=_shape(size))

    def choice(self, weights: np.ndarray, size: Shape) -> np.ndarray:
        w = np.asarray(weights, dtype=float)
        return self.rng.choice(len(w), size=_shape(size), p=w / w.sum())

    def describe(self) -> str:
        return f"simulation: numpy Generator, seed {self.seed}; not for publication"
