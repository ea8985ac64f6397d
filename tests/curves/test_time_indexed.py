"""time-indexed (Veeraragavan et al. 2024, docs/mechanisms.md): cost in both accounting modes, each post-processing
step, and a distinguishing test that passes for the mechanism and fails for broken variants."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.audit.attack import empirical_epsilon, laplace_score
from dpsurv_core.curves.time_indexed import (
    TimeIndexed,
    exact_survival,
    paper_bound,
    parse_shares,
    rolling_mean,
    total_factor,
)
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.privacy.noise import SimulationNoise


@pytest.mark.parametrize("n,alpha", [(1, 0.5), (20, 0.5), (7, 0.0), (50, 1.3)])
def test_charges_e_n_times_one_plus_alpha_n_plus_one_over_two(n, alpha):
    e = 0.01
    mech = TimeIndexed(n, base_epsilon=e, alpha=alpha)
    expected = e * n * (1 + alpha * (n + 1) / 2)
    assert math.isclose(mech.cost.epsilon, expected, rel_tol=1e-12)
    assert math.isclose(mech.cost.epsilon, sum(e * (1 + alpha * i) for i in range(1, n + 1)), rel_tol=1e-12)
    assert paper_bound(e, n, alpha) >= mech.cost.epsilon  # the paper's sum from i = 0 is larger
    assert mech.parameters()["accounting"] == "as published"
    np.testing.assert_allclose(mech.scales, 1 / (e * (1 + alpha * np.arange(1, n + 1))))
    # fixed total: e = total / (n (1 + alpha (n + 1) / 2)); the ledger charges the total
    fixed = TimeIndexed(n, epsilon=1.0, alpha=alpha)
    assert math.isclose(fixed.base_epsilon, 1.0 / total_factor(n, alpha)) and fixed.cost.epsilon == 1.0
    ledger = Ledger(cap=100.0)
    ledger.charge(mech.ledger_entry("lung"))
    assert math.isclose(ledger.spent(), expected)


def test_twenty_points_alpha_half_total_one_gives_base_1_over_125():
    assert math.isclose(TimeIndexed(20, epsilon=1.0, alpha=0.5).base_epsilon, 1 / 125)


def test_post_processing_steps():
    mech = TimeIndexed(4, epsilon=math.inf, tau_start=1.0, tau_end=0.6, window=3)
    np.testing.assert_allclose(mech.thresholds, [0.9, 0.8, 0.7, 0.6])
    noisy = np.array([[[1.2, -0.3, 0.75, 0.65]]])
    clipped = np.array([0.9, 0.0, 0.7, 0.6])
    c = clipped
    smooth = np.array([(c[0] + c[1]) / 2, c[:3].mean(), c[1:].mean(), (c[2] + c[3]) / 2])
    np.testing.assert_allclose(mech.post_process(noisy)[0, 0], np.minimum.accumulate(smooth))
    published = TimeIndexed(4, epsilon=math.inf, tau_start=1.0, tau_end=0.6, window=3, edge_mode="as-published")
    smooth_p = np.array([0.9 / 3, 1.6 / 3, 1.3 / 3, 1.3 / 3])
    np.testing.assert_allclose(published.post_process(noisy)[0, 0], np.minimum.accumulate(smooth_p))
    x = np.random.default_rng(1).random((2, 15))
    for w in (2, 5, 7):
        ref = pd.DataFrame(x.T).rolling(w, center=True, min_periods=1).mean().to_numpy().T
        np.testing.assert_allclose(rolling_mean(x, w), ref, atol=1e-12)


def test_bad_parameters_raise_one_sentence():
    for kwargs in ({"alpha": -1}, {"tau_start": 0.5, "tau_end": 0.7}, {"window": 0}, {"edge_mode": "x"}):
        with pytest.raises(ParameterError):
            TimeIndexed(5, epsilon=1.0, **kwargs)
    with pytest.raises(ParameterError):
        TimeIndexed(5, epsilon=1.0).compute(load_bundled("lung"), PublicParameters.derive(load_bundled("lung")),
                                           SimulationNoise(0))  # 20 grid points, mechanism built for 5


def test_groups_compose_in_parallel_and_noise_shrinks_over_time():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, grid=TimeGrid.equal(0, 1100, 20))
    mech = TimeIndexed(20, epsilon=8.0, alpha=0.5, window=1, tau_end=1.0)
    rel = mech.compute(cohort, public, SimulationNoise(5), trials=3000)
    assert rel.cost.epsilon == 8.0 and rel.curves.survival.shape == (3000, 2, 20)
    raw = mech.noisy(exact_survival(cohort, public, public.grid.points), SimulationNoise(5), 3000)
    spread = raw.std(axis=0).mean(axis=0)
    np.testing.assert_allclose(spread, math.sqrt(2) * mech.scales, rtol=0.08)
    s = rel.curves.survival
    assert np.all((s >= 0) & (s <= 1)) and np.all(np.diff(s, axis=-1) <= 0)


def _pair():
    """D: an event at 1 after a censoring at 0.5 (S(2) = 0); D' = D minus the event (S(2) = 1)."""
    d = Cohort(np.array([1.0, 0.5]), np.array([1, 0], dtype=np.int8))
    return d, d.subset(np.array([False, True]))


class HalfNoise(TimeIndexed):
    @property
    def scales(self) -> np.ndarray:
        return super().scales / 2


class ChargesBaseEpsilon(TimeIndexed):
    """The paper's plots: labelled (and here charged) by e instead of e_hat."""

    @property
    def cost(self):
        from dpsurv_core.privacy.ledger import PrivacyCost

        return PrivacyCost(self.base_epsilon)


def _audit(cls, total=2.0, runs=4000, seed=3):
    d, d_minus = _pair()
    public = PublicParameters.derive(d, horizon=2, grid=TimeGrid.equal(0, 2, 1))
    mech = cls(1, epsilon=total, alpha=0.5, window=1, tau_start=1.0, tau_end=1.0)
    assert math.isclose(TimeIndexed(1, epsilon=total, alpha=0.5).scales[0], 1 / total)
    s_in = mech.compute(d, public, SimulationNoise(seed), trials=runs).curves.survival[:, 0, :]
    s_out = mech.compute(d_minus, public, SimulationNoise(seed + 1), trials=runs).curves.survival[:, 0, :]
    np.testing.assert_allclose(exact_survival(d, public, public.grid.points), [[0.0]])
    np.testing.assert_allclose(exact_survival(d_minus, public, public.grid.points), [[1.0]])
    score = lambda x: laplace_score(x, 0.0, 1.0, 1 / total)  # noqa: E731
    return empirical_epsilon(score(s_in), score(s_out)), mech.cost.epsilon


def test_distinguishing_attack_stays_below_the_charge():
    audit, charged = _audit(TimeIndexed)
    assert charged == 2.0
    assert 1.0 < audit.epsilon_lower <= charged


def test_distinguishing_attack_catches_half_the_noise():
    audit, charged = _audit(HalfNoise)
    assert audit.epsilon_lower > charged


def test_distinguishing_attack_catches_charging_the_base_epsilon():
    audit, charged = _audit(ChargesBaseEpsilon)
    assert charged < 2.0 and audit.epsilon_lower > charged


def test_declared_group_size_is_checked_named_and_public():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1000, grid=TimeGrid.equal(0, 1000, 10), group_categories=("1", "2"))
    with pytest.raises(ParameterError, match="whole number"):
        TimeIndexed(10, base_epsilon=1.0, sample_size=0)
    with pytest.raises(ParameterError, match="one per group"):
        TimeIndexed(10, base_epsilon=1.0, sample_size=(100, 50, 20)).compute(cohort, public, SimulationNoise(0))
    mech = TimeIndexed(10, base_epsilon=1.0, sample_size=(138, 90))
    rel = mech.compute(cohort, public, SimulationNoise(0))
    assert mech.parameters()["declared_group_size"] == [138, 90]
    assert "declared size 138, 90" in rel.curves.interval_method
    assert "declared_group_size" not in TimeIndexed(10, base_epsilon=1.0).parameters()
    assert mech.interval_covers_sampling and not TimeIndexed(10, base_epsilon=1.0).interval_covers_sampling
    # the declared size changes the band only, never the released curve or the cost
    plain = TimeIndexed(10, base_epsilon=1.0).compute(cohort, public, SimulationNoise(0))
    np.testing.assert_array_equal(plain.curves.survival, rel.curves.survival)
    assert plain.cost == rel.cost
    assert np.mean(rel.curves.upper - rel.curves.lower) > np.mean(plain.curves.upper - plain.curves.lower)


def test_declared_censoring_share_is_checked_named_and_public():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1000, grid=TimeGrid.equal(0, 1000, 10), group_categories=("1", "2"))
    with pytest.raises(ParameterError, match="declared group size too"):
        TimeIndexed(10, base_epsilon=1.0, censoring=0.3)
    for bad in (-0.1, 1.0, math.nan):
        with pytest.raises(ParameterError, match="censoring share"):
            TimeIndexed(10, base_epsilon=1.0, sample_size=100, censoring=bad)
    mech = TimeIndexed(10, base_epsilon=1.0, sample_size=(138, 90), censoring=0.28)
    rel = mech.compute(cohort, public, SimulationNoise(0))
    assert mech.parameters()["declared_censoring_share"] == [0.28]
    assert "declared share 28%" in rel.curves.interval_method
    per_group = TimeIndexed(10, base_epsilon=1.0, sample_size=(138, 90), censoring=(0.3, 0.2))
    assert "declared share 30%, 20%" in per_group.compute(cohort, public, SimulationNoise(0)).curves.interval_method
    with pytest.raises(ParameterError, match="one per group"):
        TimeIndexed(10, base_epsilon=1.0, sample_size=100, censoring=(0.3, 0.2, 0.1)).compute(cohort, public,
                                                                                               SimulationNoise(0))
    with pytest.raises(ParameterError, match="censoring share"):
        TimeIndexed(10, base_epsilon=1.0, sample_size=100, censoring="lots")
    assert "uncensored" in TimeIndexed(10, base_epsilon=1.0, sample_size=100).compute(
        cohort, public, SimulationNoise(0)).curves.interval_method
    plain = TimeIndexed(10, base_epsilon=1.0, sample_size=(138, 90)).compute(cohort, public, SimulationNoise(0))
    np.testing.assert_array_equal(plain.curves.survival, rel.curves.survival)  # the band only, never the curve
    assert plain.cost == rel.cost


def test_censored_cohorts_of_the_band_have_the_kaplan_meier_spread():
    """The band's simulated cohorts (one actuarial step per grid bin, uniform censoring at the declared share) give
    the mean and standard deviation of the Kaplan-Meier estimator of real censored cohorts of the same size; without
    the censoring the spread at the late landmark is too small (the under-coverage this share fixes)."""
    from benchmarks import coverage_curves as cc
    from dpsurv_core.curves.time_indexed_bands import _cohort_curves
    from dpsurv_core.data.simulate import weibull_cohort

    public, idx, _, _ = cc.setting()
    points = public.grid.points
    real = []
    for r in range(400):
        d = weibull_cohort(200, cc.TRUTH, seed=100 + r)
        a = (d["group"] == "A").to_numpy()
        real.append(exact_survival(Cohort(d["time"].to_numpy(float)[a], d["status"].to_numpy(np.int64)[a]), public,
                                   points)[0, idx])
    real = np.asarray(real)
    share = float(np.mean([1 - weibull_cohort(200, cc.TRUTH, seed=r)["status"][::2].mean() for r in range(50)]))
    shape, scale = np.array([cc.TRUTH.shape]), np.array([cc.TRUTH.scale])
    rng = np.random.default_rng(0)
    censored = _cohort_curves(points, shape, scale, 100, share, 4000, rng)[:, 0, idx]
    uncensored = _cohort_curves(points, shape, scale, 100, 0.0, 4000, rng)[:, 0, idx]
    np.testing.assert_allclose(censored.mean(0), real.mean(0), atol=0.01)
    np.testing.assert_allclose(censored.std(0), real.std(0), rtol=0.1)
    assert uncensored.std(0)[2] < 0.85 * real.std(0)[2]


def test_parse_declared_censoring_shares():
    assert parse_shares(None) is None and parse_shares("  ") is None
    assert parse_shares("0.3") == (0.3,) and parse_shares("0.34, 0.25") == (0.34, 0.25)
    assert parse_shares("30%,25%") == (0.3, 0.25)
    for bad in ("abc", "1", "-0.1", "0.3,x", "inf", "120%"):
        with pytest.raises(ParameterError, match="censoring share"):
            parse_shares(bad)
