"""Exact release noise and independent previews.

* A release draws no numpy random number: with numpy's generators and global sampler functions made to raise
  whenever a ReleaseNoise method runs (and any unseeded generator made to raise at all), one real release of each
  mechanism that used to draw uniforms or gammas from numpy (lsp-tll, saa, output, objective, psgld, random-round)
  goes through. Seeded post-processing (the intervals' simulations) may still build a seeded generator.
* The laws of the exact samplers: uniform integers (chi-square), Gamma(d, s) as a sum of |Laplace| draws (KS,
  mean and variance), and the discrete uniform on the 2^-52 grid (every draw a grid point in [low, high), KS).
* Previews: a seed per (mechanism, epsilon, settings) from a session secret, so two previews at two epsilons do not
  share their standard draws (with one shared seed, 2 y(2) - y(1) is the exact value).

The release path is unseeded, so the law tests are random: rejection at p < 1e-4, and each checks that a wrong law
is rejected, so it has power.
"""

from __future__ import annotations

import contextlib
import functools

import numpy as np
import pytest
from scipy import stats

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise, preview_seed_for
from tests.cli_run import run

ALPHA = 1e-4


@pytest.fixture(scope="module")
def release() -> ReleaseNoise:
    return ReleaseNoise()


def _chi2_p(draws: np.ndarray, probs: np.ndarray) -> float:
    observed = np.bincount(np.asarray(draws, dtype=np.int64).ravel(), minlength=probs.size).astype(float)
    return float(stats.chisquare(observed, probs / probs.sum() * observed.sum()).pvalue)


# ------------------------------------------------------------------------------------------ the laws
@pytest.mark.parametrize("high", [2, 3, 7])
def test_release_integers_are_uniform_below_the_bound(release, high):
    k = release.integers(high, (1500, 2))
    assert k.shape == (1500, 2) and k.dtype == np.int64 and k.min() >= 0 and k.max() < high
    assert _chi2_p(k, np.ones(high)) > ALPHA
    skewed = np.ones(high)
    skewed[0] = 2.0
    assert _chi2_p(k, skewed) < ALPHA  # power: a law with twice the weight on 0 is rejected


def test_integers_edge_cases_and_refusals(release):
    assert np.all(release.integers(1, 5) == 0)
    assert release.integers(5, 0).shape == (0,)
    big = release.integers(2**70, 20)  # above 2^62: Python integers from secrets.randbelow
    assert all(0 <= int(x) < 2**70 for x in big) and len({int(x) for x in big}) == 20
    for src in (release, SimulationNoise(0)):
        for bad in (0, -3, 2.5):
            with pytest.raises(ParameterError):
                src.integers(bad, 3)
    sim = SimulationNoise(4).integers(6, 3000)
    assert sim.min() >= 0 and sim.max() < 6 and _chi2_p(sim, np.ones(6)) > ALPHA
    assert np.array_equal(SimulationNoise(4).integers(6, 3000), sim)  # seeded


@pytest.mark.parametrize("dim,scale", [(1, 2.0), (4, 0.5), (9, 1.5)])
def test_release_gamma_sum_has_the_gamma_law(release, dim, scale):
    g = release.gamma_sum(dim, scale, 2000)
    assert g.shape == (2000,) and np.all(g >= 0)
    law = stats.gamma(dim, scale=scale)
    assert stats.kstest(g, law.cdf).pvalue > ALPHA
    assert stats.kstest(g, stats.gamma(dim + 1, scale=scale).cdf).pvalue < ALPHA  # power
    assert abs(g.mean() - law.mean()) < 5 * law.std() / np.sqrt(g.size)
    assert 0.8 < g.var() / law.var() < 1.25
    assert np.array_equal(release.gamma_sum(dim, 0.0, 3), np.zeros(3))


def test_release_gamma_takes_whole_shapes_only(release):
    assert release.gamma(3.0, 1.0, (4, 2)).shape == (4, 2)
    for bad in (2.5, 0, -1, np.inf):
        with pytest.raises(ParameterError, match="whole-number shape"):
            release.gamma(bad, 1.0, 3)
        with pytest.raises(ParameterError):
            release.gamma_sum(bad, 1.0, 3)
    e = release.exponential(2.0, 2000)
    assert np.all(e >= 0) and stats.kstest(e, stats.expon(scale=2.0).cdf).pvalue > ALPHA


def test_release_uniform_is_the_discrete_uniform_on_the_2_52_grid(release):
    u = release.uniform(0.0, 1.0, 4000)
    assert np.all((u >= 0.0) & (u < 1.0))
    k = u * 2.0**52
    assert np.all(k == np.floor(k))  # every draw is a grid point k / 2^52
    assert stats.kstest(u, stats.uniform.cdf).pvalue > ALPHA
    assert stats.kstest(u, stats.beta(1.0, 1.3).cdf).pvalue < ALPHA  # power
    assert _chi2_p(np.floor(u * 10), np.ones(10)) > ALPHA
    v = release.uniform(2.0, 5.0, (2000, 2))
    assert v.shape == (2000, 2) and np.all((v >= 2.0) & (v < 5.0))
    assert stats.kstest(v.ravel(), stats.uniform(2.0, 3.0).cdf).pvalue > ALPHA


def test_release_noise_has_no_raw_gumbel_and_no_numpy_generator(release):
    with pytest.raises(NotImplementedError, match="gumbel_argmax"):
        release.gumbel(3)
    assert not hasattr(ReleaseNoise, "_fresh_rng")
    assert not any(isinstance(v, (np.random.Generator, np.random.BitGenerator)) for v in vars(release).values())
    assert SimulationNoise(1).gumbel(3).shape == (3,)  # simulations keep their raw Gumbel draws


def test_random_rounding_goes_up_with_probability_remainder_over_base(release):
    from dpsurv_core.disclosure.rounding import random_round_exact, random_round_with

    x = np.array([7.0, 10.0, 14.0, 0.0])  # remainders 2, 0, 4, 0 for base 5
    every_k = np.stack([random_round_exact(x, 5, np.full(x.shape, k)) for k in range(5)])
    assert np.array_equal(every_k.mean(axis=0), x)  # over the 5 equally likely k: exactly unbiased
    assert np.array_equal((every_k > x - np.mod(x, 5)).sum(axis=0), [2, 0, 4, 0])  # up for exactly r of the b
    out = random_round_with(np.full(3000, 7.0), 5, release)
    assert set(np.unique(out)) <= {5.0, 10.0}
    assert _chi2_p((out == 10.0).astype(int), np.array([0.6, 0.4])) > ALPHA
    assert _chi2_p((out == 10.0).astype(int), np.array([0.5, 0.5])) < ALPHA  # power
    half = random_round_with(np.full(2000, 2.5), 5, SimulationNoise(3))  # not whole: the uniform rule
    assert set(np.unique(half)) <= {0.0, 5.0} and 0.4 < (half == 5.0).mean() < 0.6


# ------------------------------------------------------------------------------------------ no numpy draw in a release
# a Generator needs a bit generator, so guarding every bit generator's constructor guards Generator(...) too (the
# classes Generator and RandomState stay as they are: libraries test isinstance against them)
_SAMPLERS = ("default_rng", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "SeedSequence", "random",
             "random_sample", "rand", "randn", "randint", "uniform", "normal", "standard_normal", "gamma",
             "standard_gamma", "gumbel", "laplace", "exponential", "choice", "seed")
_UNSEEDED = ("default_rng", "PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64", "SeedSequence")  # no seed: OS entropy


@contextlib.contextmanager
def _numpy_random_forbidden(monkeypatch: pytest.MonkeyPatch):
    """numpy's random module raises when called from inside a ReleaseNoise method, and its unseeded constructors
    raise anywhere; seeded generators outside ReleaseNoise (post-processing simulations) still work."""
    depth = [0]
    calls: list[str] = []

    def guarded(name, original):
        @functools.wraps(original)
        def call(*args, **kwargs):
            unseeded = name in _UNSEEDED and (not args or args[0] is None) and "entropy" not in kwargs \
                and "seed" not in kwargs
            if depth[0] or unseeded:
                calls.append(name)
                raise AssertionError(f"numpy.random.{name} called for a release draw")
            return original(*args, **kwargs)
        return call

    def inside(method):
        @functools.wraps(method)
        def call(*args, **kwargs):
            depth[0] += 1
            try:
                return method(*args, **kwargs)
            finally:
                depth[0] -= 1
        return call

    for name in _SAMPLERS:
        if hasattr(np.random, name):
            monkeypatch.setattr(np.random, name, guarded(name, getattr(np.random, name)))
    for name, method in vars(ReleaseNoise).items():
        if isinstance(method, staticmethod):
            monkeypatch.setattr(ReleaseNoise, name, staticmethod(inside(method.__func__)))
        elif callable(method) and not name.startswith("__"):
            monkeypatch.setattr(ReleaseNoise, name, inside(method))
    yield calls
    assert calls == []


def test_the_guard_catches_a_numpy_draw_inside_release_noise(monkeypatch):
    def numpy_uniform(self, low, high, size):
        return np.random.default_rng(1).uniform(low, high, size)

    monkeypatch.setattr(ReleaseNoise, "uniform", numpy_uniform)
    with pytest.raises(AssertionError, match="default_rng"):
        with _numpy_random_forbidden(monkeypatch):
            ReleaseNoise().uniform(0.0, 1.0, 3)


LUNG = ("--data", "lung", "--horizon", "1100")
WEIBULL = ("weibull", *LUNG, "--censoring", "0.28", "--epsilon", "1")
REGRESSION = ("regression", *LUNG, "--covariates", "age,sex", "--range", "age:39:82", "--range", "sex:1:2",
              "--n-public", "228", "--intervals", "10", "--epsilon", "1")

RELEASES = {
    "lsp-tll": (*WEIBULL, "--mechanism", "lsp-tll", "--rungs", "100"),
    "saa": (*WEIBULL, "--mechanism", "saa", "--blocks", "2"),
    "output": (*REGRESSION, "--mechanism", "output"),
    "objective": (*REGRESSION, "--mechanism", "objective", "--information-share", "0.2"),
    "psgld": (*REGRESSION, "--mechanism", "psgld", "--epochs", "4", "--burn-in", "2"),
    "random-round": ("km", *LUNG, "--grid", "0:1100:10", "--mechanism", "random-round"),
}


@pytest.mark.parametrize("mechanism", list(RELEASES))
def test_a_real_release_draws_no_numpy_random_number(monkeypatch, capsys, mechanism):
    from dpsurv_core.privacy.ledger import RELEASE, LedgerStore

    with _numpy_random_forbidden(monkeypatch):
        out = run(capsys, *RELEASES[mechanism])
    assert out["release"] is True and out["simulation"] is False
    assert [r.kind for r in LedgerStore().records()].count(RELEASE) == 1


def test_the_catalogue_names_no_numpy_generator_for_a_release():
    from dpsurv_core.privacy.catalogue import ENTRIES

    for e in ENTRIES:
        if e.private:
            assert "numpy" not in e.noise and "PCG64" not in e.noise and "seeded" not in e.noise, e.id
    noise = {e.id: e.noise for e in ENTRIES}
    assert "os.urandom" in noise["saa"] and "os.urandom" in noise["random-round"] and "os.urandom" in noise["psgld"]
    assert "2^-52" in noise["lsp-tll"] and "Laplace" in noise["output"] and "Laplace" in noise["objective"]


# ------------------------------------------------------------------------------------------ preview seeds
KEY = {"family": "curves", "mechanism": "laplace-counts", "epsilon": 1.0,
       "settings": {"scale": 2.0, "rows_per_subject": 1, "noise": "discrete Laplace"}}


def test_preview_seed_is_one_per_mechanism_epsilon_and_settings():
    secret = 0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321
    seed = preview_seed_for(secret, KEY)
    assert seed == preview_seed_for(secret, dict(reversed(list(KEY.items()))))  # canonical: key order is irrelevant
    assert 0 <= seed < 2**128 and seed == preview_seed_for(secret, KEY)  # the same settings: the same draw
    others = [{**KEY, "epsilon": 2.0}, {**KEY, "mechanism": "adaptive-km"},
              {**KEY, "settings": {**KEY["settings"], "scale": 1.0}}]
    seeds = {preview_seed_for(secret, k) for k in others} | {seed, preview_seed_for(secret + 1, KEY)}
    assert len(seeds) == 5
    numpy_key = {**KEY, "epsilon": np.float64(1.0), "settings": {**KEY["settings"], "scale": np.float64(2.0)}}
    assert preview_seed_for(secret, numpy_key) == seed  # numpy scalars are read as the numbers they are
    with pytest.raises(ValueError):
        preview_seed_for(-1, KEY)


def test_previews_at_two_epsilons_cannot_be_combined_into_the_exact_value():
    truth = np.array([12.0, 30.0, 7.0])
    secret = 20261123

    def preview(seed: int, epsilon: float) -> np.ndarray:
        return truth + SimulationNoise(seed).laplace(1.0 / epsilon, truth.shape)

    shared = 2 * preview(secret, 2.0) - preview(secret, 1.0)  # one seed for every epsilon: the old attack
    np.testing.assert_allclose(shared, truth, atol=1e-9)
    seeds = [preview_seed_for(secret, {**KEY, "epsilon": e}) for e in (1.0, 2.0)]
    combined = 2 * preview(seeds[1], 2.0) - preview(seeds[0], 1.0)
    assert np.all(np.abs(combined - truth) > 1e-6)
    assert np.array_equal(preview(seeds[0], 1.0), preview(seeds[0], 1.0))  # SimulationNoise takes 128-bit seeds
