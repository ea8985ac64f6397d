"""curve_summary: landmark values, RMST, errors, number at risk, flips and default landmarks, checked against lifelines."""

from __future__ import annotations

import numpy as np
import pytest
from lifelines import KaplanMeierFitter
from lifelines.utils import restricted_mean_survival_time

from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.logrank import LogRankResult
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError


@pytest.fixture(scope="module")
def lung():
    cohort = load_bundled("lung")
    fine = NonPrivate().compute(cohort, PublicParameters.derive(cohort, grid=TimeGrid.event_times(cohort)))
    kmf = KaplanMeierFitter().fit(cohort.time, cohort.event)
    return cohort, fine.curves, kmf


def test_median_on_lung_is_310_days(lung):
    _, curves, kmf = lung
    med, lo, hi = (a[0, 0] for a in curves.median())
    assert (med, lo, hi) == (310.0, 284.0, 361.0)
    assert med == kmf.median_survival_time_


@pytest.mark.parametrize("horizon", [100.0, 365.25, 500.0, 1022.0])
def test_rmst_equals_lifelines(lung, horizon):
    _, curves, kmf = lung
    assert cs.rmst(curves, horizon)[0, 0] == pytest.approx(restricted_mean_survival_time(kmf, t=horizon), rel=1e-10)


def test_rmst_rejects_non_positive_horizon(lung):
    with pytest.raises(ParameterError, match="positive"):
        cs.rmst(lung[1], 0.0)


def test_landmarks_equal_lifelines_with_log_log_ci(lung):
    _, curves, kmf = lung
    times = np.array([180.0, 365.25, 730.5])
    lm = cs.landmarks(curves, times)
    expected = kmf.survival_function_at_times(times).to_numpy()
    assert lm.value[0, 0] == pytest.approx(expected, rel=1e-12)
    ci = kmf.confidence_interval_
    for i, t in enumerate(times):
        row = ci.loc[:t].iloc[-1]
        assert lm.lower[0, 0, i] == pytest.approx(row.iloc[0], rel=1e-9)
        assert lm.upper[0, 0, i] == pytest.approx(row.iloc[1], rel=1e-9)
    assert lm.value[0, 0, 1] == pytest.approx(0.409242, abs=1e-6)  # 1-year survival on lung


def test_landmark_before_first_time_is_one_and_hazard_has_no_band(lung):
    _, curves, _ = lung
    assert cs.landmarks(curves, [1.0]).value[0, 0, 0] == 1.0
    lm = cs.landmarks(curves, [365.25], cs.HAZARD)
    assert lm.lower is None and lm.value[0, 0, 0] > 0


def test_curve_errors_zero_against_itself_and_known_shift(lung):
    cohort, curves, _ = lung
    public = PublicParameters.derive(cohort, horizon=1100.0)
    on_grid = NonPrivate().compute(cohort, public).curves
    rmse, sup = cs.curve_errors(on_grid, curves)
    assert rmse[0, 0] == pytest.approx(0.0, abs=1e-12) and sup[0, 0] == pytest.approx(0.0, abs=1e-12)
    from dataclasses import replace

    shifted = replace(on_grid, survival=on_grid.survival - 0.1)
    rmse, sup = cs.curve_errors(shifted, curves)
    assert rmse[0, 0] == pytest.approx(0.1) and sup[0, 0] == pytest.approx(0.1)


def test_at_risk_at_counts_subjects_still_followed():
    t = np.array([1.0, 2.0, 3.5, 4.5, 6.0, 7.5, 9.0, 12.0])
    e = np.array([1, 0, 1, 1, 0, 1, 0, 1])
    cohort = Cohort(t, e, group=np.array(list("aabbabab")))
    grid = TimeGrid.equal(0.0, 10.0, 5)  # edges 0, 2, 4, 6, 8, 10
    counts = count(cohort, grid, ("a", "b"))
    times = cs.table_times(grid)
    assert times.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    risk = cs.at_risk_at(counts, times)
    # subjects with time >= each edge (no event exactly at an edge; the censoring at 2.0 and 6.0 stays at risk)
    for gi, g in enumerate("ab"):
        expected = [int(((cohort.group == g) & (t >= x)).sum()) for x in times]
        assert risk[gi].tolist() == expected


def test_compare_tests_marks_flips():
    def res(a, b, p):
        return LogRankResult(a, b, np.array([3.0]), np.array([p]), 1, np.zeros(2), np.zeros(2))

    rows = cs.compare_tests([res("1", "2", 0.01), res("1", "3", 0.2)], [res("1", "2", 0.09), res("1", "3", 0.3)])
    assert [r.label for r in rows] == ["1 vs 2", "1 vs 3"]
    assert [r.flipped for r in rows] == [True, False]
    assert rows[0].significant_exact and not rows[0].significant_private


def test_default_landmarks():
    assert cs.default_landmarks(1100.0, "days") == ([1.0, 2.0, 3.0], "years")
    assert cs.default_landmarks(35.0, "weeks") == ([3.0, 6.0], "months")
    assert cs.default_landmarks(5300.0, "days") == ([1.0, 5.0, 10.0], "years")
    assert cs.default_landmarks(40.0, "days") == ([10.0, 20.0, 30.0], "days")
    # mgus2: 430 months on 20 bins, the first grid point at 21.5 months: no "1 year" read at time 0
    assert cs.default_landmarks(430.0, "months", 21.5) == ([5.0, 10.0], "years")
    assert cs.default_landmarks(1100.0, "days", 55.0) == ([1.0, 2.0, 3.0], "years")
    # a coarse grid: the quarters of what lies after its first point
    assert cs.default_landmarks(730.0, "days", 400.0) == ([482.5, 565.0, 647.5], "days")
    assert cs.default_landmarks(4000.0, "days", 3900.0) == ([3925.0, 3950.0, 3975.0], "days")
    assert all(t >= 6 for t in cs.default_landmarks(12.0, "weeks", 6.0)[0])


def test_parse_times():
    assert cs.parse_times("5, 1 3") == [1.0, 3.0, 5.0]
    with pytest.raises(ParameterError, match="not a list of times"):
        cs.parse_times("1, two")
    with pytest.raises(ParameterError, match="from 0 on"):
        cs.parse_times("-1")
    assert cs.parse_times("0, 1") == [0.0, 1.0]  # the start, as R's summary(fit, times = 0)


def test_fingerprint_tracks_the_data():
    a = load_bundled("lung")
    b = load_bundled("lung", group="sex")
    assert cs.fingerprint(a) == cs.fingerprint(load_bundled("lung"))
    assert cs.fingerprint(a) != cs.fingerprint(b)


def test_an_undefined_private_test_is_neither_a_flip_nor_the_same_conclusion():
    from dpsurv_core.curves.summary import TestComparison

    undefined = TestComparison("a", "b", 5.0, 0.02, float("nan"), float("nan"), True, False)
    assert not undefined.defined and not undefined.flipped
    flipped = TestComparison("a", "b", 5.0, 0.02, 1.0, 0.3, True, False)
    assert flipped.defined and flipped.flipped


def test_rmst_on_a_coarse_grid_reads_the_curve_linearly_between_grid_points(lung):
    """On a public grid the curve is known at grid points only: the area is the trapezoid rule from S(0) = 1,
    cut at the horizon by the same linear reading and held flat after the last point."""
    cohort, fine, _ = lung
    coarse = NonPrivate().compute(cohort, PublicParameters.derive(cohort, grid=TimeGrid.parse("0:1100:20"))).curves
    t, s = coarse.time, coarse.survival[0, 0]
    x, y = np.concatenate([[0.0], t]), np.concatenate([[1.0], s])
    for horizon in (55.0, 500.0, 1022.0, 1500.0):
        keep = x <= horizon
        xs, ys = x[keep], y[keep]
        if horizon > xs[-1] and keep.sum() < x.size:
            xs, ys = np.append(xs, horizon), np.append(ys, np.interp(horizon, x, y))
        expected = np.trapezoid(ys, xs) + max(horizon - x[-1], 0.0) * y[-1]
        assert coarse.rmst(horizon, linear=True)[0, 0] == pytest.approx(expected, rel=1e-12)
    # the step curve on 55-day bins overstates lung's RMST to 500 days by 21 days; the linear reading is within 2
    exact = fine.rmst(500.0)[0, 0]
    assert coarse.rmst(500.0)[0, 0] - exact > 15.0
    assert abs(coarse.rmst(500.0, linear=True)[0, 0] - exact) < 2.0


def test_linear_rmst_is_the_step_rmst_on_the_event_times(lung):
    """Read linearly between every event time the area differs from the step curve's by half of sum dt dS, which
    goes to zero as the grid is refined: it is never below the step area minus that bound."""
    _, fine, _ = lung
    t, s = fine.time, fine.survival[0, 0]
    bound = 0.5 * np.sum(np.diff(np.concatenate([[0.0], t])) * np.abs(np.diff(np.concatenate([[1.0], s]))))
    for horizon in (100.0, 500.0):
        assert abs(fine.rmst(horizon, linear=True)[0, 0] - fine.rmst(horizon)[0, 0]) <= bound


def test_logrank_rows_leave_out_the_overall_test_of_two_groups():
    from types import SimpleNamespace

    def res(a, b, p, stat=3.0):
        return LogRankResult(a, b, np.array([stat]), np.array([p]), 1, np.zeros(2), np.zeros(2))

    def calibrated(a, b, p, needed):
        return SimpleNamespace(group_a=a, group_b=b, statistic=np.array([4.0]), p_value=np.array([p]),
                               critical_value=np.array([needed]))

    # two groups: the overall test is the pair's, so one row
    two = cs.logrank_rows([res("a", "b", 0.01, 7.0)], res("a, b", None, 0.01), [res("a", "b", 0.2), res("a, b", None, 0.2)],
                          [calibrated("a", "b", 0.03, 5.5)], calibrated("a, b", None, 0.03, 5.5), 2)
    assert [r.label for r in two.on_grid] == ["a vs b"] and two.needed == [5.5]
    assert two.on_grid[0].flipped and not two.every_time[0].flipped  # flips are against the same grid
    assert two.every_time[0].statistic_exact == 7.0
    # three groups: the pairs, then the overall test, each with its own 95% point
    pairs = [("a", "b"), ("a", "c"), ("b", "c")]
    three = cs.logrank_rows([res(a, b, 0.5) for a, b in pairs], res("a, b, c", None, 0.5),
                            [*(res(a, b, 0.5) for a, b in pairs), res("a, b, c", None, 0.5)],
                            [calibrated(a, b, 0.5, 4.0 + i) for i, (a, b) in enumerate(pairs)],
                            calibrated("a, b, c", None, 0.5, 9.0), 3)
    assert [r.group_b for r in three.on_grid] == ["b", "c", "c", None]
    assert three.needed == [4.0, 5.0, 6.0, 9.0]


def test_landmark_request_reads_typed_times_or_takes_picked_grid_points_exactly():
    points = np.array([0.0, 182.625, 365.25, 547.875, 730.5])
    values, times = cs.landmark_request("1, 0.5", [], points, "days", "years")
    assert values == [0.5, 1.0] and times.tolist() == [182.625, 365.25]
    values, times = cs.landmark_request("ignored", [1.5, 0.5, 0.5], points, "days", "years")
    assert values == [0.5, 1.5] and times.tolist() == [182.625, 547.875]  # the grid points themselves
    values, times = cs.landmark_request("10", [], points, "visits", "years")  # a unit dpsurv does not know: as typed
    assert values == [10.0] and times.tolist() == [10.0]


def test_released_at_risk_reads_the_release_counts_of_the_same_groups():
    from dataclasses import replace

    from dpsurv_core.curves.result import released_at_risk

    t = np.array([1.0, 2.0, 3.5, 4.5, 6.0, 7.5, 9.0, 12.0])
    cohort = Cohort(t, np.array([1, 0, 1, 1, 0, 1, 0, 1]), group=np.array(list("aabbabab")))
    public = PublicParameters.derive(cohort, grid=TimeGrid.equal(0.0, 10.0, 5))
    rel = NonPrivate().compute(cohort, public)
    times = cs.table_times(public.grid)
    assert np.array_equal(released_at_risk(rel, times, ("a", "b")), cs.at_risk_at(rel.counts, times)[0])
    assert released_at_risk(rel, times, ("b", "a")) is None  # never one group's numbers beside another's
    assert released_at_risk(replace(rel, counts=None), times, ("a", "b")) is None  # a curve-only release
