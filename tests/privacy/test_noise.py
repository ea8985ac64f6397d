"""The two noise sources: distributions (KS / chi-square against the exact law) and seeding rules.

The release path is unseeded by design, so its tests are random: the rejection threshold is
p < 1e-4 (a false alarm about once in ten thousand runs), and each test also checks that the
same statistic does reject a wrong scale, so the test has power.
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest
from scipy import stats

from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise

N = 4000
ALPHA = 1e-4


def _dlaplace_chi2_p(draws: np.ndarray, scale: float) -> float:
    """Chi-square goodness of fit of integer draws to P(k) ~ exp(-|k|/scale), tails pooled."""
    law = stats.dlaplace(1.0 / scale)
    k = int(max(2, np.ceil(3 * scale)))
    cells = np.arange(-k, k + 1)
    observed = np.array([(draws < -k).sum(), *[(draws == c).sum() for c in cells], (draws > k).sum()], dtype=float)
    expected = np.array([law.cdf(-k - 1), *law.pmf(cells), law.sf(k)]) * draws.size
    return float(stats.chisquare(observed, expected).pvalue)


@pytest.fixture(scope="module")
def release() -> ReleaseNoise:
    return ReleaseNoise()


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_release_laplace_matches_the_exact_law(release, scale):
    x = release.laplace(scale, N)
    assert x.shape == (N,) and x.dtype == float
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    assert stats.kstest(x, stats.laplace(scale=2 * scale).cdf).pvalue < ALPHA  # power: a wrong scale is rejected


def test_release_laplace_with_per_cell_scales(release):
    scales = np.array([[1.0, 4.0]] * (N // 2))
    x = release.laplace(scales, scales.shape)
    assert x.shape == scales.shape
    assert stats.kstest(x[:, 0], stats.laplace(scale=1.0).cdf).pvalue > ALPHA
    assert stats.kstest(x[:, 1], stats.laplace(scale=4.0).cdf).pvalue > ALPHA


@pytest.mark.parametrize("scale", [1.0, 4.0])
def test_release_discrete_laplace_matches_the_exact_law(release, scale):
    x = release.discrete_laplace(scale, (N // 4, 4))
    assert x.shape == (N // 4, 4) and np.issubdtype(x.dtype, np.integer)
    x = x.ravel()
    assert _dlaplace_chi2_p(x, scale) > ALPHA
    assert _dlaplace_chi2_p(x, 2 * scale) < ALPHA
    assert abs(x.mean()) < 6 * np.sqrt(stats.dlaplace(1.0 / scale).var() / x.size)


def test_zero_scale_and_empty_draws(release):
    sim = SimulationNoise(1)
    for src in (release, sim):
        assert np.all(src.laplace(0.0, 5) == 0) and np.all(src.discrete_laplace(0.0, 5) == 0)
        assert src.laplace(1.0, 0).shape == (0,)


def test_release_path_cannot_be_seeded():
    params = inspect.signature(ReleaseNoise.__init__).parameters
    assert list(params) == ["self"]
    with pytest.raises(TypeError):
        ReleaseNoise(42)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        ReleaseNoise(seed=42)  # type: ignore[call-arg]
    assert ReleaseNoise.is_release and not SimulationNoise.is_release


def test_two_release_sources_differ_even_after_seeding_numpy():
    np.random.seed(0)
    a = ReleaseNoise()
    xa, da, ua = a.laplace(1.0, 50), a.discrete_laplace(3.0, 50), a.uniform(0, 1, 50)
    np.random.seed(0)
    b = ReleaseNoise()
    xb, db, ub = b.laplace(1.0, 50), b.discrete_laplace(3.0, 50), b.uniform(0, 1, 50)
    assert not np.array_equal(xa, xb) and not np.array_equal(da, db) and not np.array_equal(ua, ub)
    assert not np.array_equal(a.laplace(1.0, 50), xa)  # and one source never repeats itself
    assert "unseeded" in a.describe()


def test_simulation_path_is_reproducible_with_a_seed():
    def draws(seed):
        s = SimulationNoise(seed)
        return np.concatenate([s.laplace(2.0, 20), s.discrete_laplace(2.0, 20), s.uniform(0, 1, 5),
                               s.standard_normal(5), s.gamma(2.0, 1.0, 5), s.gumbel(5), s.choice(np.ones(3), 5),
                               s.gumbel_argmax(np.zeros(4), 5), s.snap(np.array([0.1]))])

    assert np.array_equal(draws(7), draws(7))
    assert not np.array_equal(draws(7), draws(8))
    assert "seed 7" in SimulationNoise(7).describe() and "not for publication" in SimulationNoise(7).describe()


@pytest.mark.parametrize("scale", [0.5, 3.0])
def test_simulation_laplace_and_discrete_laplace_match_the_exact_law(scale):
    sim = SimulationNoise(2024)
    x = sim.laplace(scale, N)
    assert stats.kstest(x, stats.laplace(scale=scale).cdf).pvalue > ALPHA
    d = sim.discrete_laplace(scale, N)
    assert np.issubdtype(d.dtype, np.integer)
    assert _dlaplace_chi2_p(d, scale) > ALPHA
    assert _dlaplace_chi2_p(d, 2 * scale) < ALPHA


def test_other_draws_have_the_right_shape_and_law(release):
    for src in (release, SimulationNoise(3)):
        u = src.uniform(2.0, 5.0, N)
        assert u.min() >= 2.0 and u.max() < 5.0
        assert stats.kstest(u, stats.uniform(2.0, 3.0).cdf).pvalue > ALPHA
        z = src.standard_normal((N // 2, 2))
        assert z.shape == (N // 2, 2) and stats.kstest(z.ravel(), stats.norm.cdf).pvalue > ALPHA
        g = src.gamma(3.0, 2.0, N)
        assert stats.kstest(g, stats.gamma(3.0, scale=2.0).cdf).pvalue > ALPHA
        c = src.choice(np.array([0.0, 1.0, 3.0]), N)
        assert set(np.unique(c)) <= {1, 2} and abs((c == 2).mean() - 0.75) < 0.05


@pytest.mark.parametrize("source", [lambda: ReleaseNoise(), lambda: SimulationNoise(0)])
def test_discrete_noise_refuses_scales_that_could_saturate_the_sampler(source):
    """OpenDP's integer sampler clamps at +-(2^31 - 1): at such scales true count + clamp would expose the count."""
    from dpsurv_core.errors import ParameterError
    from dpsurv_core.privacy.noise import MAX_DISCRETE_SCALE

    noise = source()
    assert noise.discrete_laplace(MAX_DISCRETE_SCALE, 3).shape == (3,)
    with pytest.raises(ParameterError, match="could overflow"):
        noise.discrete_laplace(2 / 1e-9, 3)
