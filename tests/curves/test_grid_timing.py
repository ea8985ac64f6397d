"""The timing shift of a binned log-rank test: how far its expected events move with when, within a bin, the
censorings fall (Holford 1980's piecewise-exponential null against the life table's rule), read off released counts."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.logrank_validity import DESIGNS, Design, cohort, public, stack
from dpsurv_core.curves import grid_timing as gt
from dpsurv_core.curves import logrank_test as lt
from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.data.public import TimeGrid
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise


def _exact(design: Design, bins: int, cohorts: int, seed: int) -> BinnedCounts:
    rng = np.random.default_rng(seed)
    grid = public(design, bins).grid
    return stack([count(cohort(design, 1.0, rng), grid, design.groups) for _ in range(cohorts)])


def test_the_shift_flags_coarse_grids_with_unequal_censoring_and_not_fine_ones():
    """Groups censored 10% and 70%: the binned test rejected 71% of true nulls on 3 bins and 19% on 5 (1,000
    cohorts), 5.3% on 20; equal censoring keeps the level on 5 bins."""
    unequal = DESIGNS["censoring 10/70"]
    assert gt.too_wide(_exact(unequal, 3, 20, 1)).all()
    assert gt.too_wide(_exact(unequal, 5, 40, 2)).mean() > 0.9
    assert not gt.too_wide(_exact(unequal, 20, 40, 3)).any()
    assert not gt.too_wide(_exact(DESIGNS["30 per group"], 5, 40, 4)).any()


def test_a_true_difference_between_equally_censored_groups_is_seldom_flagged():
    """E' uses the pooled events only: hazard ratios of 1.5 and 2 (power 69-99%) flag no cohort of 400 on 5 bins; a
    ratio of 3, whose groups leave their bins at very different rates, flagged 0.5%."""
    for hr, most in ((2.0, 0.0), (3.0, 0.05)):
        design = Design("hr", (100, 100), (0.3, 0.3), hr)
        rng = np.random.default_rng(5)
        grid = public(design, 5).grid
        counts = stack([count(cohort(design, hr, rng), grid, design.groups) for _ in range(60)])
        assert gt.too_wide(counts).mean() <= most


def test_the_shift_grows_with_the_square_root_of_the_patients():
    counts = _exact(DESIGNS["censoring 10/70"], 5, 5, 6)
    double = BinnedCounts(counts.grid, counts.groups, 2 * counts.n, 2 * counts.events, 2 * counts.censored,
                          counts.event_types)
    assert np.allclose(gt.timing_shift(double), np.sqrt(2) * gt.timing_shift(counts), rtol=0.02)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 3), st.integers(2, 8), st.integers(0, 2**32 - 1))
def test_identical_groups_and_the_event_time_grid_have_no_shift(groups, bins, seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(5, 200)
    events = rng.multinomial(n // 2, np.ones(bins) / bins)
    censored = rng.multinomial(n - n // 2, np.ones(bins) / bins)
    grid = TimeGrid(np.linspace(0.0, 100.0, bins + 1), "equal", False)
    same = BinnedCounts(grid, tuple("ABC"[:groups]), np.full((1, groups), float(n)),
                        np.tile(events.astype(float), (1, groups, 1, 1)),
                        np.tile(censored.astype(float), (1, groups, 1)), ("event",))
    assert np.allclose(gt.timing_shift(same), 0.0, atol=1e-9)
    unequal = BinnedCounts(TimeGrid(grid.edges, "event-times", True), same.groups, same.n, same.events,
                           np.concatenate([same.censored[:, :1] * 0, same.censored[:, 1:]], axis=1), ("event",))
    assert np.array_equal(gt.timing_shift(unequal), [0.0])


@pytest.mark.parametrize("bins, said", [(3, True), (20, False)])
def test_a_private_release_on_a_grid_too_wide_says_so_and_points_to_more_bins(bins, said):
    """laplace-counts at epsilon 2, groups censored 10% and 70%: on 3 bins the release's sentences say the p-value is
    not reliable, naming the censoring read off the release and 20 bins, and do not advise wider bins; on 20 bins
    they do not; a record of reader version 3 (``test_grid_warnings`` False) keeps its sentences."""
    design = DESIGNS["censoring 10/70"]
    data = cohort(design, 1.0, np.random.default_rng(8))
    pub = public(design, bins)
    mech = catalogue.get(catalogue.CURVES, "laplace-counts").mechanism_class()(2.0, noise_in_bands=False)
    rel = mech.compute(data, pub, SimulationNoise(3), trials=1)
    law = lt.noise_law(mech, rel.extra)
    tests = lt.calibrated_tests(rel.counts, law, draws=39)
    words = [w for w in lt.warnings_for(rel.counts, law, tests, 2.0, mech) if w.startswith("Bins too wide")]
    assert bool(words) == said == bool(lt.level_warned(law, tests[-1], rel.counts, 2.0)[0])
    if said:
        assert re.search(r"\(A \d+%, B \d+% censored, read off the release\)", words[0])
        assert "use 20 or more bins" in words[0]
        assert not any("wider bins" in w for w in lt.warnings_for(rel.counts, law, tests, 2.0, mech))
        mech.test_grid_warnings = False
        assert not [w for w in lt.warnings_for(rel.counts, law, tests, 2.0, mech) if w.startswith("Bins too wide")]


@pytest.mark.parametrize("mech_id", ["adaptive-km", "laplace-counts"])
@pytest.mark.parametrize("bins, said", [(8, True), (20, False)])
def test_a_release_on_fewer_than_10_bins_with_groups_censored_unequally_says_so_at_any_epsilon(mech_id, bins, said):
    """Epsilon 2, groups censored 10% and 70%: on 8 bins (releases the timing shift did not flag rejected 8-10.5% of
    true nulls in validation) a release says its p-value is suggestive only, naming the censoring read off it and 20
    bins, and does not advise wider bins; on 20 bins it does not; nor does a record of reader version 3, nor a
    release of groups censored alike."""
    design = DESIGNS["censoring 10/70"]
    data = cohort(design, 1.0, np.random.default_rng(12))
    pub = public(design, bins)
    mech = catalogue.get(catalogue.CURVES, mech_id).mechanism_class()(2.0, noise_in_bands=False)
    rel = mech.compute(data, pub, SimulationNoise(4), trials=1)
    law = lt.noise_law(mech, rel.extra)
    tests = lt.calibrated_tests(rel.counts, law, draws=39)
    words = lt.warnings_for(rel.counts, law, tests, 2.0, mech)
    grid = [w for w in words if w.startswith(("Groups censored this differently", "Bins too wide"))]
    assert bool(grid) == said and bool(lt.level_warned(law, tests[-1], rel.counts, 2.0)[0]) == said
    if said:
        assert re.search(r"\(A \d+%, B \d+% censored, read off the release\)", grid[0]) and "20 or more bins" in grid[0]
        assert not any("wider bins" in w for w in words)
        mech.test_grid_warnings = False
        assert not [w for w in lt.warnings_for(rel.counts, law, tests, 2.0, mech)
                    if w.startswith(("Groups censored this differently", "Bins too wide"))]
    alike = cohort(DESIGNS["30 per group"], 1.0, np.random.default_rng(12))
    other = mech.compute(alike, public(DESIGNS["30 per group"], bins), SimulationNoise(4), trials=1)
    assert not lt.coarse_unequal_trials(other.counts, lt.noise_law(mech, other.extra)).any()


def test_noise_alone_and_small_groups_do_not_make_a_grid_too_wide():
    """At epsilon 0.1 noise moves the shift of groups censored alike (a review found 26% of 20-bin releases flagged,
    with censoring shares of 342% and 632% read off one of them); the sentence needs fewer than 20 bins, two groups
    of at least 10 released subjects censored 0.3 or more apart (so it always names two groups), and a test that is
    not weak (whose own sentence already says its p-value is approximate)."""
    design = DESIGNS["30 per group"]
    rng = np.random.default_rng(9)
    mech = catalogue.get(catalogue.CURVES, "laplace-counts").mechanism_class()(0.1, noise_in_bands=False)
    for bins in (10, 20):
        pub = public(design, bins)
        for i in range(12):
            rel = mech.compute(cohort(design, 1.0, rng), pub, SimulationNoise(i), trials=1)
            law = lt.noise_law(mech, rel.extra)
            assert bins == 10 or not lt.too_wide_trials(rel.counts, law)[0]
            words = lt.warnings_for(rel.counts, law, lt.calibrated_tests(rel.counts, law, draws=39), 0.1, mech)
            assert not [w for w in words if w.startswith(("Bins too wide", "Groups censored this differently"))]
    grid = TimeGrid(np.linspace(0.0, 900.0, 4), "equal", False)
    small = BinnedCounts(grid, ("A", "B"), np.array([[9.0, 9.0]]), np.array([[[[6.0, 2.0, 1.0]], [[1.0, 0.0, 0.0]]]]),
                         np.array([[[0.0, 0.0, 0.0], [8.0, 0.0, 0.0]]]), ("event",))
    assert gt.timing_shift(small)[0] >= gt.GRID_SHIFT
    assert not lt.too_wide_trials(small, lt.no_noise_law("nonprivate")).any()


def test_a_group_censored_entirely_in_a_bin_has_a_converged_shift():
    """The censoring rate of a group that loses (almost) all of a bin to censoring is solved, not iterated towards
    infinity: the shift does not depend on the number of iterations."""
    grid = TimeGrid(np.linspace(0.0, 900.0, 4), "equal", False)
    for censored in (95.0, 100.0):
        counts = BinnedCounts(grid, ("A", "B"), np.array([[100.0, 100.0]]),
                              np.array([[[[40.0, 20.0, 10.0]], [[100.0 - censored, 0.0, 0.0]]]]),
                              np.array([[[5.0, 5.0, 5.0], [censored, 0.0, 0.0]]]), ("event",))
        first = gt.timing_shift(counts)
        saved = gt._ITERATIONS
        try:
            gt._ITERATIONS = 4 * saved
            assert np.allclose(gt.timing_shift(counts), first, rtol=1e-6)
        finally:
            gt._ITERATIONS = saved
