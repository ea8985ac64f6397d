"""adaptive-km's rule for a merged bin: the life table's premise (constant hazard, censorings spread evenly over the
bin) solved exactly, so long merged bins do not read the curve high."""

import numpy as np
import pytest

from dpsurv_core.curves.adaptive_km import AdaptiveKM, derive_fine_counts
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.life_table import uniform_censoring_drop
from dpsurv_core.curves.result import exact_counts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy.noise import SimulationNoise


@pytest.mark.parametrize("rate, share", [(0.05, 0.3), (0.3, 0.5), (1.0, 0.8), (2.0, 0.9)])
def test_recovers_the_drop_of_a_constant_hazard_with_even_censoring(rate, share):
    rng = np.random.default_rng(3)
    r = 400_000
    t = rng.exponential(1 / rate, r)
    c = np.where(rng.random(r) < share, rng.random(r), np.inf)
    d_count, c_count = float(((t < c) & (t < 1)).sum()), float(((c < t) & (c < 1)).sum())
    q = uniform_censoring_drop(np.array([d_count]), np.array([c_count]), np.array([float(r)]))[0]
    assert q == pytest.approx(1 - np.exp(-rate), abs=0.003)
    if share >= 0.5:  # the life table's first-order rule misses by far more there
        assert abs(d_count / (r - c_count / 2) - (1 - np.exp(-rate))) > 0.005


def test_limits():
    q = uniform_censoring_drop(np.array([10.0, 0.0, 5.0, 3.0, 4.0]), np.array([0.0, 7.0, 0.0, 7.0, 0.0]),
                               np.array([100.0, 50.0, 0.0, 10.0, 4.0]))
    assert q[0] == pytest.approx(0.1, abs=1e-9)  # no censoring: d / r
    assert q[1] == 0 and q[2] == 0  # no event; nobody at risk
    assert 0 < q[3] < 1 and q[4] == pytest.approx(1.0, abs=1e-6)  # everyone leaves: all by the event when none censored


def test_solves_its_equation():
    rng = np.random.default_rng(5)
    r = rng.integers(5, 500, 200).astype(float)
    c = np.floor(rng.random(200) * r * 0.8)
    d = np.floor(rng.random(200) * (r - c))
    q = uniform_censoring_drop(d, c, r)
    ok = (d > 0) & (q < 1 - 1e-9)
    cum = -np.log1p(-q[ok])
    np.testing.assert_allclose(q[ok] - c[ok] / r[ok] * (1 + cum - cum / q[ok]), d[ok] / r[ok], atol=1e-9)
    # the first-order rule is its approximation where few leave
    few = ok & ((d + c) / r < 0.02)
    np.testing.assert_allclose(q[few], d[few] / (r[few] - c[few] / 2), rtol=0.01)


def test_merged_bins_chosen_at_noisy_event_counts_do_not_read_the_curve_high():
    """Weibull cohorts of 200 (30% censored) on 100 equal bins, the bins merged as adaptive-km merges them at epsilon
    0.5, the merged bins' exact counts (no part-2 noise): at the grid's end (true S 0.100) the curve agrees with the
    fine bins' life table on average. The life table's own rule on the merged bins read 0.121 against 0.096 there: a
    merged bin ends just after its noisy events reach the threshold, so its events crowd its end, after most of its
    censorings."""
    truth = WeibullTruth(shape=1.3, censoring=0.3)
    horizon = min(truth.quantile(0.9), 0.9 * truth.censoring_limit)
    grid = TimeGrid(np.linspace(0, horizon, 101), "equal", False)
    mech = AdaptiveKM(0.5)
    diff = []
    for seed in range(120):
        d = weibull_cohort(200, truth, seed=seed)
        cohort = Cohort(d["time"].to_numpy(float), d["status"].to_numpy(np.int64), np.full(200, "A"))
        exact = exact_counts(cohort, grid, PublicParameters(horizon, grid, group_categories=("A",)), False)
        merged, _ = mech.select(exact, SimulationNoise([9, seed]), 1)
        end = []
        for kept in (merged, np.ones_like(merged)):
            ev, ce, s = AdaptiveKM.block_histogram(exact, kept)
            end.append(estimate(derive_fine_counts(exact, kept, ev, ce, s, 0.5)).survival[0, 0, -1])
        diff.append(end[0] - end[1])
    assert abs(np.mean(diff)) < 0.012, np.mean(diff)


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("censored", [0.0, 3.0])
def test_a_merged_bin_everyone_leaves_gives_finite_counts(censored):
    """A merged bin that takes everyone (drop 1, so nothing stays at its end): its censorings stay finite and inside
    the counts on grids whose bins' shares of a merged bin do not sum exactly (equal grids of 20 to 60 bins)."""
    from dpsurv_core.curves.counts import BinnedCounts

    for bins in range(20, 61):
        grid = TimeGrid(np.linspace(0, 1000.0 * bins / 37, bins + 1), "equal", False)
        kept = np.zeros((1, bins), bool)
        kept[0, 6::7] = True
        kept[0, -1] = True
        ev = np.zeros((1, 1, 1, bins))
        ce = np.zeros((1, 1, bins))
        ev[0, 0, 0, [0, 1]] = [4.0, 5.0]
        ce[0, 0, [0, 1]] = [2.0, censored]
        template = BinnedCounts(grid, ("A",), np.zeros(1), np.zeros((1, 1, bins)), np.zeros((1, bins)), ("event",))
        fine = derive_fine_counts(template, kept, ev, ce, np.zeros((1, 1)), 0.5)
        assert np.isfinite(fine.events).all() and np.isfinite(fine.censored).all(), bins
        assert fine.events.sum() + fine.censored.sum() == pytest.approx(11.0 + censored)
        tail = estimate(fine).survival[0, 0, 13:]
        if censored == 0:  # all by the event: the curve reaches 0
            np.testing.assert_allclose(tail, 0.0, atol=1e-12)
        else:  # some censored on the way out, as Kaplan-Meier ending on a censoring: it stays above 0
            assert (tail > 0.01).all()
