"""Floating-point-safe release noise: every ReleaseNoise draw against its exact law, and the defences.

* the standard normal (OpenDP's Gaussian) passes KS; the Gumbel-max selection (OpenDP's noisy max)
  and the integer categorical sampler pass chi-square against their exact probabilities;
* released reals built by floating-point arithmetic on the draws lie on the 2^-20 grid (Mironov 2012's snapping);
* the release source cannot be seeded, not even through numpy's global seed.

The release path is unseeded, so the tests are random: rejection at p < 1e-4, and each law test also
checks that a wrong law is rejected, so it has power.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.noise import SNAP_GRID, ReleaseNoise, SimulationNoise, _exact_integer_weights, snap_to_grid

ALPHA = 1e-4


@pytest.fixture(scope="module")
def release() -> ReleaseNoise:
    return ReleaseNoise()


def _chi2_p(draws: np.ndarray, probs: np.ndarray) -> float:
    observed = np.bincount(draws.ravel(), minlength=probs.size).astype(float)
    keep = probs > 0
    assert observed[~keep].sum() == 0  # a category of probability 0 is never drawn
    return float(stats.chisquare(observed[keep], probs[keep] / probs[keep].sum() * draws.size).pvalue)


def _on_grid(x: np.ndarray) -> bool:
    q = np.asarray(x, dtype=float) / SNAP_GRID
    return bool(np.all(q == np.round(q)))


def test_release_standard_normal_is_opendp_gaussian_with_the_exact_law(release):
    z = release.standard_normal((1000, 3))
    assert z.shape == (1000, 3) and z.dtype == float
    assert stats.kstest(z.ravel(), stats.norm.cdf).pvalue > ALPHA
    assert stats.kstest(z.ravel(), stats.norm(scale=1.3).cdf).pvalue < ALPHA  # power
    assert release.standard_normal(0).shape == (0,)


def test_release_gumbel_argmax_matches_the_softmax_law(release):
    lw = np.array([0.0, -1.0, 0.5, -np.inf, -3.0, 1.2])
    probs = np.exp(lw - lw.max())
    probs /= probs.sum()
    idx = release.gumbel_argmax(lw, 3000)
    assert idx.shape == (3000,) and np.issubdtype(idx.dtype, np.integer)
    assert _chi2_p(idx, probs) > ALPHA
    flat = np.where(np.isfinite(lw), 1.0, 0.0)
    assert _chi2_p(idx, flat) < ALPHA  # power: the uniform law is rejected
    with pytest.raises(ParameterError):
        release.gumbel_argmax(np.array([-np.inf, -np.inf]), 1)


def test_simulation_gumbel_argmax_matches_the_softmax_law():
    lw = np.array([0.0, -1.0, 0.5, -np.inf, -3.0])
    probs = np.exp(lw - lw.max())
    idx = SimulationNoise(11).gumbel_argmax(lw, 4000)
    assert _chi2_p(idx, probs / probs.sum()) > ALPHA


@pytest.mark.parametrize("weights", [[1.0, 2.0, 3.0, 4.0], [0.3, 0.7], [0.0, 1.0, 3.0], [1e-3, 1.0]])
def test_release_choice_frequencies_match_the_public_probabilities(release, weights):
    w = np.array(weights)
    c = release.choice(w, (1000, 4))
    assert c.shape == (1000, 4) and np.issubdtype(c.dtype, np.integer)
    assert _chi2_p(c, w / w.sum()) > ALPHA
    if len(w) > 2 and w[0] > 0:
        assert _chi2_p(c, np.ones(len(w))) < ALPHA  # power


def test_choice_thresholds_are_exact_rationals():
    w = [0.1, 0.2, 0.7]
    ints = _exact_integer_weights(np.array(w))
    total = sum(ints)
    assert all(Fraction(i, total) == Fraction(x) / sum(Fraction(y) for y in w) for i, x in zip(ints, w, strict=True))
    for bad in ([], [-1.0, 2.0], [0.0, 0.0], [np.nan, 1.0]):
        with pytest.raises(ParameterError):
            _exact_integer_weights(np.array(bad))


def test_release_choice_with_a_huge_common_denominator(release):
    c = release.choice(np.array([1.0, 2.0**-80, 1.0]), 400)  # total above 2^62: the secrets path
    assert set(np.unique(c)) <= {0, 1, 2} and 0.35 < (c == 0).mean() < 0.65


def test_randomized_response_on_the_release_path_reports_at_the_public_rates(release):
    from dpsurv_core.curves.rrr import RandomizedResponse

    mech = RandomizedResponse(1.0, ["a", "b", "c"])
    labels = np.zeros(3000, dtype=np.int64)
    labels[:5] = -1
    out = mech.randomize(labels, release, trials=1)
    assert np.all(out[0, :5] == -1)
    own, other = mech.parameters()["report_own_probability"], mech.parameters()["report_other_probability"]
    assert _chi2_p(out[0, 5:], np.array([own, other, other])) > ALPHA
    assert _chi2_p(out[0, 5:], np.ones(3)) < ALPHA


def test_snap_rounds_to_the_published_grid(release):
    x = np.array([0.1, -3.14159, 1e-9, 12345.678901, 2.0**-21 * 3])
    s = release.snap(x)
    assert _on_grid(s) and np.all(np.abs(s - x) <= SNAP_GRID / 2)
    assert np.array_equal(snap_to_grid(s), s)  # idempotent
    assert np.array_equal(SimulationNoise(0).snap(x), x)  # simulations are not published


def test_released_regression_coefficients_lie_on_the_grid(release):
    from dpsurv_core.regression.mechanisms import DesignBounds, ObjectivePerturbation, OutputPerturbation
    from dpsurv_core.regression.person_period import person_period

    pp = person_period(load_bundled("lung", covariates=("age", "sex")), ["age", "sex"], horizon=1100)
    b = DesignBounds.of(pp)
    for mech in (OutputPerturbation(2.0, 0.05, b), ObjectivePerturbation(1.0, 1.0, b)):
        rel = mech.compute(pp, release, trials=2)
        assert rel.W.shape == (2, pp.dim) and np.all(np.isfinite(rel.W)) and _on_grid(rel.W)


def test_released_lsp_shapes_lie_on_the_grid(release):
    from dpsurv_core.data.public import nice_ceiling
    from dpsurv_core.weibull.lsp import compute_ladder
    from dpsurv_core.weibull.model import sample_from_cohort

    c = load_bundled("lung")
    s = sample_from_cohort(c, nice_ceiling(float(c.time.max())))
    lad = compute_ladder(s, 50, 10.0)
    p, rung = lad.sample(1.0, release, 20)
    assert p.shape == (20,) and np.all(rung >= 1) and _on_grid(p)
    probs = lad.probabilities(1.0)
    assert np.all(probs[rung - 1] > 0)  # only rungs of positive weight are drawn


def test_release_draws_ignore_numpy_global_seeding():
    out = []
    for _ in range(2):
        np.random.seed(0)
        r = ReleaseNoise()
        out.append(np.concatenate([r.standard_normal(20), r.choice(np.ones(7), 20).astype(float),
                                   r.gumbel_argmax(np.zeros(9), 20).astype(float), r.gamma(2.0, 1.0, 5)]))
    assert not np.array_equal(out[0], out[1])
    assert "OpenDP" in ReleaseNoise().describe() and "2^-20" in ReleaseNoise().describe()
    assert math.log2(SNAP_GRID) == -20


def test_catalogue_names_an_exact_sampler_and_no_floating_point_generator():
    from dpsurv_core.privacy.catalogue import ENTRIES

    for e in ENTRIES:
        if not e.private or (not e.formal and e.noise.startswith("none (")):  # deterministic disclosure control
            continue
        assert "OpenDP" in e.noise or "os.urandom" in e.noise, e.name
        assert "numpy" not in e.noise and "PCG64" not in e.noise, e.name  # no floating-point generator in a release
