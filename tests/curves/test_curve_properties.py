"""Properties of every curve mechanism's output (hypothesis): survival in [0, 1] and
non-increasing, bands contain the estimate, cumulative hazard non-decreasing, cumulative
incidences add up with survival to 1; no crash on ties, all-censored groups, a single subject,
empty bins, subjects past the grid."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.curves.adaptive_km import AdaptiveKM
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.logrank import overall, pairwise
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.curves.rrr import RandomizedResponse
from dpsurv_core.curves.time_indexed import TimeIndexed
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

GROUPS = ("a", "b", "c")
EPS = st.sampled_from([0.1, 1.0, 5.0, math.inf])


@st.composite
def cohorts(draw):
    """Small cohorts with tied integer times, random groups (some all-censored or empty) and event types."""
    n = draw(st.integers(1, 30))
    time = np.array(draw(st.lists(st.integers(0, 15), min_size=n, max_size=n)), dtype=float)
    etype = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int16)
    group = np.array(draw(st.lists(st.sampled_from(GROUPS[:2]), min_size=n, max_size=n)))
    censored_group = draw(st.booleans())
    if censored_group:  # every subject of group "b" censored
        etype[group == "b"] = 0
    cohort = Cohort(time, (etype > 0).astype(np.int8), group, None, etype, ("one", "two"), pd.DataFrame())
    bins = draw(st.integers(1, 12))
    stop = draw(st.sampled_from([5.0, 12.0, 30.0]))
    public = PublicParameters.derive(cohort, horizon=stop, grid=TimeGrid.equal(0, stop, bins), group_categories=GROUPS)
    return cohort, public


def _check(curves):
    s = curves.survival
    assert np.all(np.isfinite(s)) and np.all((s >= 0) & (s <= 1))
    assert np.all(np.diff(s, axis=-1) <= 1e-12)
    for lo, up in ((curves.lower, curves.upper), (curves.lower_linear, curves.upper_linear)):
        if np.all(np.isnan(lo)):
            continue
        assert np.all((lo >= 0) & (up <= 1))
        assert np.all(lo <= s + 1e-12) and np.all(s <= up + 1e-12)
    h = np.where(np.isposinf(curves.cumulative_hazard), 1e300, curves.cumulative_hazard)  # -log 0 = inf is fine
    assert np.all(h >= 0) and np.all(np.diff(h, axis=-1) >= -1e-12)
    med, med_lo, med_up = curves.median()
    if not np.all(np.isnan(curves.lower)):
        assert np.all(med_lo <= med) and np.all(med <= med_up)


def _check_counts(counts, curves):
    assert np.all(counts.events >= 0) and np.all(counts.censored >= 0) and np.all(counts.n >= 0)
    r = curves.at_risk
    assert np.all(curves.events <= np.maximum(r, 0) + 1e-9)
    cif = curves.cumulative_incidence
    assert np.all(cif >= -1e-12) and np.all(np.diff(cif, axis=-1) >= -1e-12)
    # Aalen-Johansen identity on the released counts: sum_k I_k(t) + S(t) = 1
    np.testing.assert_allclose(cif.sum(-2) + curves.survival, 1.0, atol=1e-9)


@given(cohorts(), EPS, st.booleans(), st.integers(0, 10**6))
def test_laplace_counts(case, eps, competing, seed):
    cohort, public = case
    rel = LaplaceCounts(eps).compute(cohort, public, SimulationNoise(seed), trials=5, competing=competing)
    _check(rel.curves)
    _check_counts(rel.counts, rel.curves)
    for res in [overall(rel.counts), *pairwise(rel.counts)]:
        ok = ~np.isnan(res.statistic)
        assert np.all(res.statistic[ok] >= -1e-9) and np.all((res.p_value[ok] >= 0) & (res.p_value[ok] <= 1))


@given(cohorts(), EPS, st.integers(1, 6), st.sampled_from(["mean", "as-published"]), st.integers(0, 10**6))
def test_time_indexed(case, eps, window, edge_mode, seed):
    cohort, public = case
    mech = TimeIndexed(public.grid.bins, epsilon=eps, window=window, edge_mode=edge_mode)
    rel = mech.compute(cohort, public, SimulationNoise(seed), trials=5)
    _check(rel.curves)
    assert rel.curves.survival.shape == (5, 3, public.grid.bins)
    # clipped to tau(i) before smoothing: under tau_start everywhere, under tau(i) without smoothing (with noise; without
    # it there is nothing to clip or smooth away and the curve is the Kaplan-Meier curve)
    if math.isfinite(eps):
        assert np.all(rel.curves.survival <= mech.tau_start + 1e-12)
        if window == 1:
            assert np.all(rel.curves.survival <= mech.thresholds + 1e-12)


@given(cohorts(), EPS, st.booleans(), st.integers(0, 10**6))
def test_rrr_raw_and_debiased(case, eps, competing, seed):
    cohort, public = case
    rel = RandomizedResponse(eps, GROUPS).compute(cohort, public, SimulationNoise(seed), trials=5, competing=competing)
    for curves, counts in ((rel.curves, rel.counts), (rel.extra["debiased_curves"], rel.extra["debiased_counts"])):
        _check(curves)
        _check_counts(counts, curves)


@given(cohorts(), st.booleans())
def test_nonprivate(case, competing):
    cohort, public = case
    rel = NonPrivate().compute(cohort, public, competing=competing)
    _check(rel.curves)
    if not np.any(cohort.event == 1):  # no events: the curve stays at 1, as R's survfit gives
        np.testing.assert_allclose(rel.curves.survival, 1.0)


def test_single_subject_and_subjects_past_the_grid():
    one = Cohort(np.array([3.0]), np.array([1], dtype=np.int8), np.array(["a"]))
    public = PublicParameters.derive(one, horizon=10, grid=TimeGrid.equal(0, 10, 5), group_categories=("a", "b"))
    for mech in (LaplaceCounts(1.0), LaplaceCounts(math.inf), TimeIndexed(5, epsilon=1.0), RandomizedResponse(1.0, ("a", "b"))):
        rel = mech.compute(one, public, SimulationNoise(0), trials=3)
        _check(rel.curves)
    exact = LaplaceCounts(math.inf).compute(one, public, SimulationNoise(0)).curves
    np.testing.assert_allclose(exact.survival[0, 0], [1, 0, 0, 0, 0])
    np.testing.assert_allclose(exact.survival[0, 1], 1.0)  # empty group: stays at 1
    late = Cohort(np.array([50.0, 60.0]), np.array([1, 1], dtype=np.int8))
    rel = LaplaceCounts(math.inf).compute(late, PublicParameters.derive(late, horizon=10, grid=TimeGrid.equal(0, 10, 5)),
                                          SimulationNoise(0))
    np.testing.assert_allclose(rel.curves.survival, 1.0)
    np.testing.assert_allclose(rel.curves.at_risk, 2.0)


def test_adaptive_km_keeps_the_properties():
    """The adaptive curve mechanism, registered by name, keeps the same properties."""
    cls = catalogue.get(catalogue.CURVES, "adaptive-km").mechanism_class()
    assert cls is AdaptiveKM
    rng = np.random.default_rng(0)
    for n in (1, 7, 60):
        time = rng.integers(0, 20, n).astype(float)
        cohort = Cohort(time, rng.integers(0, 2, n).astype(np.int8), rng.choice(["a", "b"], n))
        public = PublicParameters.derive(cohort, horizon=20, grid=TimeGrid.equal(0, 20, 10), group_categories=("a", "b"))
        for eps in (0.5, 2.0):
            rel = cls(eps).compute(cohort, public, SimulationNoise(n), trials=4)
            _check(rel.curves)


def test_released_number_at_risk_is_never_negative():
    """Past the point where noisy exits exceed the subjects, the curve stops; the published at-risk is 0, not < 0."""
    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters
    from dpsurv_core.privacy.noise import SimulationNoise

    cohort = load_bundled("leukemia")
    public = PublicParameters.derive(cohort, horizon=200, bins=20)
    rel = LaplaceCounts(0.1).compute(cohort, public, SimulationNoise(5), trials=500)
    assert (rel.counts.at_risk() < 0).any()  # the raw recursion does go below zero at this epsilon
    assert (rel.curves.at_risk >= 0).all()


def test_a_stopped_curve_has_an_uninformative_band():
    """Where noise leaves nobody at risk, the band runs from 0 to the last upper limit before (a survival curve never
    rises): never a zero-width interval that looks certain, nor one that jumps back up to 1."""
    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters
    from dpsurv_core.privacy.noise import SimulationNoise

    cohort = load_bundled("ovarian", group="rx")
    public = PublicParameters.derive(cohort, horizon=1300, bins=20)
    rel = LaplaceCounts(0.05).compute(cohort, public, SimulationNoise(3), trials=300)
    at_risk = rel.counts.at_risk() + 0.5 * rel.counts.censored  # the life-table risk set of a public grid
    stopped = np.logical_or.accumulate(at_risk <= 0, axis=-1)
    assert stopped.any()
    cur = rel.curves
    for lo, up in ((cur.lower, cur.upper), (cur.lower_linear, cur.upper_linear)):
        assert (lo[stopped] == 0).all() and (up[stopped] > 0).all()
        assert (np.diff(up, axis=-1) <= 1e-12).all()
