"""With noise off, dpsurv's interval types and quantiles follow R survival (Therneau 2024): survfit's conf.type
(survfit_confint) and quantile.survfit's median rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit, logit, ndtri

from dpsurv_core.curves.kaplan_meier import CONF_TYPES, confidence_limits, quantile_r

Z = ndtri(0.975)


def test_limits_by_hand_at_half():
    """S = 0.5, se(log S) = 0.2, so se(S) = 0.1: each type's formula written in terms of se(S)."""
    s, g = np.array([0.5]), np.array([0.04])
    se_s = 0.1
    expect = {
        "plain": (0.5 - Z * se_s, 0.5 + Z * se_s),
        "log": (0.5 * np.exp(-Z * 0.2), 0.5 * np.exp(Z * 0.2)),
        "log-log": (0.5 ** np.exp(-Z * 0.2 / np.log(0.5)), 0.5 ** np.exp(Z * 0.2 / np.log(0.5))),
        "logit": (expit(logit(0.5) - Z * se_s / 0.25), expit(logit(0.5) + Z * se_s / 0.25)),
        "arcsin": (np.sin(np.arcsin(np.sqrt(0.5)) - Z * se_s / (2 * 0.5)) ** 2,
                   np.sin(np.arcsin(np.sqrt(0.5)) + Z * se_s / (2 * 0.5)) ** 2),
    }
    for kind, (lo, up) in expect.items():
        got = confidence_limits(s, g, kind)
        np.testing.assert_allclose([got[0][0], got[1][0]], [lo, up], rtol=1e-12, err_msg=kind)
    # worked numbers: log gives (0.3379, 0.7399), plain (0.3040, 0.6960)
    np.testing.assert_allclose([x[0] for x in confidence_limits(s, g, "log")], [0.337854, 0.739964], atol=1e-6)
    np.testing.assert_allclose([x[0] for x in confidence_limits(s, g, "plain")], [0.30400, 0.69600], atol=1e-5)


def test_na_where_r_gives_na():
    s, g = np.array([1.0, 0.0, 0.3]), np.array([0.0, 0.0, 0.1])
    for kind in CONF_TYPES:
        lo, up = confidence_limits(s, g, kind)
        assert np.isnan(lo[1]) and np.isnan(up[1]), kind  # S = 0: NA for every type
        assert np.isfinite(lo[2]) and np.isfinite(up[2]), kind
        if kind in ("plain", "log"):
            assert lo[0] == up[0] == 1.0  # R: [1, 1] before the first event
        else:
            assert np.isnan(lo[0]) and np.isnan(up[0]), kind  # transformation undefined at S = 1


def test_clipping_plain_and_log():
    lo, up = confidence_limits(np.array([0.95, 0.05]), np.array([0.5, 5.0]), "plain")
    assert up[0] == 1.0 and lo[1] == 0.0
    lo, up = confidence_limits(np.array([0.95]), np.array([0.5]), "log")
    assert up[0] == 1.0 and 0 < lo[0] < 0.95


def test_unknown_type():
    with pytest.raises(ValueError, match="log-log"):
        confidence_limits(np.array([0.5]), np.array([0.1]), "probit")


@settings(max_examples=300, deadline=None)
@given(st.floats(1e-6, 1 - 1e-6), st.floats(0.0, 4.0))
def test_bands_contain_the_estimate(s, var):
    for kind in CONF_TYPES:
        lo, up = confidence_limits(np.array([s]), np.array([var]), kind)
        assert 0.0 <= lo[0] <= s * (1 + 1e-9) and s * (1 - 1e-9) <= up[0] <= 1.0, kind
        if var == 0:
            np.testing.assert_allclose([lo[0], up[0]], [s, s], rtol=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(1e-4, 0.5), st.floats(1.05, 3.0))
def test_wider_with_more_variance(s, var, factor):
    for kind in CONF_TYPES:
        lo1, up1 = confidence_limits(np.array([s]), np.array([var]), kind)
        lo2, up2 = confidence_limits(np.array([s]), np.array([var * factor]), kind)
        assert lo2[0] <= lo1[0] + 1e-12 and up2[0] >= up1[0] - 1e-12, kind


def test_median_midpoint_on_flat_half():
    """Times 1, 2, 3, 4, all events: S = 0.75, 0.5, 0.25, 0; R's quantile gives 1.5, 2.5, 3.5."""
    t, s = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.75, 0.5, 0.25, 0.0])
    assert quantile_r(t, s, 0.5) == 2.5
    assert quantile_r(t, s, 0.75) == 1.5
    assert quantile_r(t, s, 0.25) == 3.5
    # not exactly at the quantile: the first time at or below it
    assert quantile_r(t, np.array([0.8, 0.6, 0.4, 0.2]), 0.5) == 3.0
    # the curve stays at 0.5 over several points: midpoint up to the next drop
    assert quantile_r(np.arange(1.0, 6.0), np.array([0.75, 0.5, 0.5, 0.5, 0.25]), 0.5) == 3.5
    # never reached; NaN (no interval) skipped
    assert quantile_r(t, np.array([0.9, 0.8, 0.7, 0.6]), 0.5) == np.inf
    assert quantile_r(t, np.array([np.nan, 0.7, 0.4, np.nan]), 0.5) == 3.0
    # leading axes kept
    both = quantile_r(t, np.stack([s, [0.8, 0.6, 0.4, 0.2]]), 0.5)
    np.testing.assert_array_equal(both, [2.5, 3.0])


def test_curves_median_uses_r_rule():
    """SurvivalCurves.median (pages, report) follows quantile.survfit too: 1, 2, 3, 4 all events -> 2.5."""
    from dpsurv_core.curves.counts import count
    from dpsurv_core.curves.kaplan_meier import estimate
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import TimeGrid

    cohort = Cohort(time=np.array([1.0, 2.0, 3.0, 4.0]), event=np.array([1, 1, 1, 1]), name="four")
    curves = estimate(count(cohort, TimeGrid(np.array([0.0, 1.0, 2.0, 3.0, 4.0]), kind="event-times")))
    np.testing.assert_allclose(curves.survival[0], [0.75, 0.5, 0.25, 0.0])
    assert curves.median()[0][0] == 2.5


def test_a_curve_that_ends_at_the_quantile_takes_the_midpoint_with_its_last_follow_up():
    """R's quantile.survfit special case: events at 1 and 2, censorings at 5 and 9 leave S = 0.5 to the end of
    follow-up, and the median is (2 + 9) / 2 = 5.5 (events 1-4 and censorings 5-8 of eight: (4 + 8) / 2 = 6). The
    non-private curves know each group's last time; a release without noise too, so it reproduces them; a noisy
    release does not publish it."""
    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.curves.result import NonPrivate, with_follow_up_end
    from dpsurv_core.data.cohort import Cohort
    from dpsurv_core.data.public import PublicParameters, TimeGrid
    from dpsurv_core.privacy.noise import SimulationNoise

    assert quantile_r(np.array([1.0, 2.0]), np.array([0.75, 0.5]), 0.5, last=np.array(9.0)) == 5.5
    assert quantile_r(np.array([1.0, 2.0]), np.array([0.75, 0.5]), 0.5) == 2.0  # no follow-up time: the axis' end
    for times, events, median in (([1, 2, 5, 9], [1, 1, 0, 0], 5.5), (range(1, 9), [1] * 4 + [0] * 4, 6.0)):
        cohort = Cohort(time=np.asarray(times, float), event=np.asarray(events), name="small")
        public = PublicParameters.derive(cohort, grid=TimeGrid.event_times(cohort))
        assert NonPrivate().compute(cohort, public).curves.median()[0][0, 0] == median
        off = with_follow_up_end(LaplaceCounts(float("inf")).compute(cohort, public, SimulationNoise(0), trials=2),
                                 cohort, public)
        assert off.curves.median()[0][0, 0] == median
        assert off.curves.median()[0][1, 0] == median  # every trial
        noisy = with_follow_up_end(LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(0)), cohort, public)
        assert noisy.curves.follow_up_end is None
    # follow-up ends at the public horizon: events at 1, 2, 8, censored at 9, read on 0:5:5 with horizon 5 stay at
    # 0.5 from 2 to 5, so the median is (2 + 5) / 2 = 3.5 (R on the data cut at 5), not (2 + 9) / 2 beyond the horizon
    cohort = Cohort(time=np.array([1.0, 2.0, 8.0, 9.0]), event=np.array([1, 1, 1, 0]), name="cut")
    public = PublicParameters.derive(cohort, horizon=5.0, grid=TimeGrid(np.linspace(0.0, 5.0, 6)))
    assert NonPrivate().compute(cohort, public).curves.median()[0][0, 0] == 3.5


@pytest.mark.parametrize("conf_type", ["log", "plain", "log-log"])
def test_cumulative_hazard_band_of_exact_counts_is_r_s(conf_type):
    """R draws the Nelson-Aalen band from its own variance (plot.survfit, cumhaz = TRUE: survfit_confint(cumhaz,
    std.chaz, logse = FALSE, ulimit = FALSE)), std.chaz^2 = sum d / r^2: lung's first lower limit is 0.00062 (-log of
    the survival band said 0), plain's upper at 883 days 3.71 (5.19), log-log NA once H >= 1."""
    from dpsurv_core.cli.km import hazard_band
    from dpsurv_core.curves.result import NonPrivate
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters, TimeGrid

    cohort = load_bundled("lung")
    t, d = cohort.time, cohort.event
    times = np.unique(t[d == 1])
    r = np.array([(t >= u).sum() for u in times], float)
    e = np.array([((t == u) & (d == 1)).sum() for u in times], float)
    h, sd = np.cumsum(e / r), np.sqrt(np.cumsum(e / r ** 2))
    with np.errstate(all="ignore"):
        ref = {"log": (h * np.exp(-Z * sd / h), h * np.exp(Z * sd / h)),
               "plain": (np.maximum(h - Z * sd, 0), h + Z * sd),
               "log-log": (np.exp(-np.exp(np.log(-np.log(h)) - Z * sd / h / np.log(h))),
                           np.exp(-np.exp(np.log(-np.log(h)) + Z * sd / h / np.log(h))))}[conf_type]
    public = PublicParameters.derive(cohort, grid=TimeGrid.event_times(cohort))
    curves = NonPrivate().compute(cohort, public).curves
    lo, up = hazard_band(curves, conf_type)
    np.testing.assert_allclose(lo[0, 0], ref[0], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(up[0, 0], ref[1], rtol=1e-12, atol=1e-15)
    if conf_type == "log":
        assert lo[0, 0, 0] == pytest.approx(0.00061782, abs=1e-8)


def test_curves_up_to_a_horizon_leave_a_later_median_not_reached():
    """lung's median is 310 days; with follow-up ending at a public horizon of 100 days it is not reached, as on a
    private curve restricted to that horizon; a horizon past the curve changes nothing."""
    from dpsurv_core.curves.result import NonPrivate
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters, TimeGrid

    cohort = load_bundled("lung")
    curves = NonPrivate().compute(cohort, PublicParameters.derive(cohort, grid=TimeGrid.event_times(cohort))).curves
    assert curves.median()[0][0, 0] == 310.0
    cut = curves.up_to(100.0)
    assert cut.time.max() <= 100.0 and cut.survival.shape[-1] == cut.time.size and cut.greenwood.shape == cut.survival.shape
    assert cut.median()[0][0, 0] == np.inf
    assert curves.up_to(1e9) is curves
