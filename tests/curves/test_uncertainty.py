"""dpsurv_core.curves.uncertainty: the bootstrap redraw of a count release, the time-indexed inversion band and the
rules that read a band (non-increasing, widened between directly estimated points, quantile limits on a grid)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core.curves.bootstrap import carry_upper, monotone_band, redraw_counts, widen_between
from dpsurv_core.curves.intervals import linear_crossing, quantile_limits, rmst_interval
from dpsurv_core.curves.kaplan_meier import estimate, quantile_r
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import exact_counts, tile_trials
from dpsurv_core.curves.rrr import RandomizedResponse
from dpsurv_core.curves.time_indexed import TimeIndexed
from dpsurv_core.curves.time_indexed_bands import acceptance_ranges, sampled_curves, time_indexed_bands
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy.noise import SimulationNoise


def _lung():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, grid=TimeGrid.equal(0, 1100, 20), group_categories=("1", "2"))
    return cohort, public


def test_redraw_is_seeded_from_the_release_and_keeps_the_shape():
    cohort, public = _lung()
    mech = LaplaceCounts(1.0)
    released = mech.compute(cohort, public, SimulationNoise(1), trials=3).counts
    a = redraw_counts(mech, released, 50)
    b = redraw_counts(mech, released, 50)
    assert a.n.shape == (150, 2) and a.events.shape == (150, 2, 1, 20)
    np.testing.assert_array_equal(a.cells(), b.cells())  # same release, same draws
    other = mech.compute(cohort, public, SimulationNoise(2), trials=3).counts
    assert not np.array_equal(redraw_counts(mech, other, 50).cells(), a.cells())


def test_redraw_without_noise_or_sampling_returns_the_release():
    cohort, public = _lung()
    exact = tile_trials(exact_counts(cohort, public.grid, public), 1)
    out = redraw_counts(LaplaceCounts(math.inf), exact, 4, sampling=False)
    np.testing.assert_array_equal(out.cells(), np.repeat(exact.cells(), 4, axis=0))


def test_redraw_sampling_matches_the_plug_in_hazard():
    """Without noise, the redrawn cohorts' events per bin average to the released ones (the plug-in law)."""
    cohort, public = _lung()
    exact = tile_trials(exact_counts(cohort, public.grid, public), 1)
    out = redraw_counts(LaplaceCounts(math.inf), exact, 2000, seed=3)
    mean_events = out.events_total.mean(0)
    np.testing.assert_allclose(mean_events.sum(-1), exact.events_total[0].sum(-1), rtol=0.03)
    np.testing.assert_allclose(out.censored.mean(0).sum(-1), exact.censored[0].sum(-1), rtol=0.05)


def test_no_noise_keeps_greenwood():
    cohort, public = _lung()
    rel = LaplaceCounts(math.inf).compute(cohort, public, SimulationNoise(0))
    ref = estimate(tile_trials(exact_counts(cohort, public.grid, public), 1), actuarial=0.5)
    assert rel.curves.interval_method is None and rel.curves.interval_variance is None
    np.testing.assert_array_equal(rel.curves.lower, ref.lower)


def test_noisy_band_is_wider_than_greenwood_and_named():
    cohort, public = _lung()
    rel = LaplaceCounts(0.5).compute(cohort, public, SimulationNoise(5))
    c = rel.curves
    assert "parametric bootstrap" in c.interval_method
    live = (c.survival > 0.05) & (c.survival < 0.95)
    assert np.all(c.interval_variance[live] > c.greenwood[live])
    deb = RandomizedResponse(1.0, ("1", "2")).compute(cohort, public, SimulationNoise(5)).extra["debiased_curves"]
    assert "parametric bootstrap" in deb.interval_method


def test_rmst_interval_from_the_draws_covers_the_estimate():
    cohort, public = _lung()
    c = LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(2)).curves
    value, lo, up = rmst_interval(c, 500.0)
    assert np.all(lo < value) and np.all(value < up) and np.all(up - lo > 20)


def test_rmst_interval_adds_the_draws_offset_to_their_spread():
    """e^2 = var(draws) + (mean of draws - RMST)^2 on the log scale; the spread alone where the offset is the plug-in
    world's own (adaptive-km)."""
    from dataclasses import replace

    from scipy.special import ndtri

    cohort, public = _lung()
    c = LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(2)).curves
    value, lo, up = rmst_interval(c, 500.0, True)
    draws = replace(c, survival=c.rmst_draws).rmst(500.0, True)
    sd, offset = draws.std(axis=1, ddof=1), draws.mean(axis=1) - value
    z = ndtri(0.975)
    e = np.sqrt(sd ** 2 + offset ** 2)
    np.testing.assert_allclose(lo, value * np.exp(-z * e / value), rtol=1e-12)
    np.testing.assert_allclose(up, np.minimum(value * np.exp(z * e / value), 500.0), rtol=1e-12)
    _, lo_s, up_s = rmst_interval(replace(c, draws_offset_is_error=False), 500.0, True)
    np.testing.assert_allclose(lo_s, value * np.exp(-z * sd / value), rtol=1e-12)
    assert np.all(lo <= lo_s) and np.all(up_s <= up)


def test_time_indexed_band_tracks_the_noise():
    points = np.linspace(50, 1000, 20)
    truth = np.exp(-points / 800)[None, None, :]
    quiet = TimeIndexed(20, epsilon=20000.0)
    lo, up = time_indexed_bands(quiet, quiet.post_process(truth), points)
    assert np.all(up - lo < 0.2)
    loud = TimeIndexed(20, epsilon=1.0)
    released = loud.post_process(loud.noisy(truth[0], SimulationNoise(1), 1))
    lo, up = time_indexed_bands(loud, released, points)
    assert np.mean(up - lo) > 0.8  # at epsilon 1 on 20 points the release carries almost nothing
    assert np.all(lo <= released) and np.all(released <= up)


@given(st.integers(0, 2**32 - 1), st.floats(0.0, 0.6), st.floats(0.0, 0.6), st.sampled_from([0.05, 0.1]))
def test_acceptance_ranges_hold_their_level_with_atoms(seed, atom_low, atom_high, alpha):
    """Each range holds at least 1 - alpha of the draws and, when an atom at either end swallows a tail, not much more
    (the central range would hold up to 1 - alpha / 2 there); on a continuous law it is the central range."""
    rng = np.random.default_rng(seed)
    u = rng.random((400, 3))
    x = np.where(u < atom_low, 0.0, np.where(u > 1 - atom_high, 1.0, rng.random((400, 3))))
    a, b = acceptance_ranges(x, alpha)
    held = ((x >= a) & (x <= b)).mean(0)
    assert np.all(held >= 1 - alpha), held
    budget = round(alpha * 400)
    one_small = np.minimum((x == 0).sum(0), (x == 1).sum(0)) <= budget  # else both atoms must be held whole
    np.testing.assert_allclose(held[one_small], 1 - alpha)
    smooth = rng.normal(size=(400, 2))
    a, b = acceptance_ranges(smooth, alpha)
    np.testing.assert_allclose(a, np.sort(smooth, 0)[int(alpha * 200)])
    np.testing.assert_allclose(b, np.sort(smooth, 0)[399 - int(alpha * 200)])


@given(st.lists(st.floats(0, 1), min_size=2, max_size=12), st.lists(st.floats(0, 1), min_size=2, max_size=12))
def test_monotone_band_never_rises_and_only_narrows(a, b):
    n = min(len(a), len(b))
    lo, up = np.minimum(a[:n], b[:n]), np.maximum(a[:n], b[:n])
    mlo, mup = monotone_band(lo, up)
    assert np.all(np.diff(mlo) <= 0) and np.all(np.diff(mup) <= 0)
    assert np.all(mlo >= lo) and np.all(mup <= up)


def test_widen_between_and_carry_upper():
    lo = np.array([0.9, 0.8, 0.7, 0.6, 0.5])
    up = np.array([1.0, 0.95, 0.9, 0.85, 0.8])
    known = np.array([True, False, False, True, True])
    wlo, wup = widen_between(lo, up, known)
    np.testing.assert_allclose(wlo, [0.9, 0.6, 0.6, 0.6, 0.5])  # inside: the next known point's lower limit
    np.testing.assert_allclose(wup, [1.0, 1.0, 1.0, 0.85, 0.8])  # inside: the previous known point's upper limit
    s = np.array([0.5, 0.2, 0.0, 0.0])
    np.testing.assert_allclose(carry_upper(s, np.array([0.7, 0.4, 0.0, 0.0])), [0.7, 0.4, 0.4, 0.4])


def test_quantile_limits_on_a_grid():
    time = np.array([10.0, 20.0, 30.0, 40.0])
    lo = np.array([0.8, 0.45, 0.3, 0.2])
    up = np.array([0.95, 0.7, 0.55, 0.45])
    assert quantile_limits(time, lo, up) == (20.0, 40.0)  # R's rule: where each band reaches 0.5
    # on a coarse grid the truth crosses 0.5 between grid points: each band is read linearly between them
    lo_t, up_t = quantile_limits(time, lo, up, coarse=True)
    assert lo_t == pytest.approx(10.0 + 10.0 * 0.3 / 0.35)  # 0.8 at 10 to 0.45 at 20
    assert up_t == pytest.approx(30.0 + 10.0 * 0.05 / 0.10)  # 0.55 at 30 to 0.45 at 40
    # a band already below 0.5 at the first grid point crosses inside the first bin, where nothing is known: the
    # lower limit is the grid's start (a straight line from S(0) = 1 would put it at 8.3)
    assert quantile_limits(time, np.array([0.4, 0.3, 0.2, 0.1]), up, coarse=True)[0] == 0.0
    # the upper limit holds the estimate (R's rule on the grid: 40, the first point where the curve is <= 0.5)
    curve = np.array([0.9, 0.6, 0.51, 0.3])
    assert quantile_limits(time, lo, up, coarse=True, curve=curve)[1] == 40.0
    # a band equal to 0.5 over an interval keeps R's midpoint; one that never reaches 0.5 gives no limit
    flat = np.array([0.9, 0.5, 0.5, 0.3])
    assert quantile_limits(time, flat, flat, coarse=True) == (30.0, 30.0)  # 0.5 from 20 until the drop at 40
    assert quantile_limits(time, lo, np.array([0.95, 0.9, 0.8, 0.7]), coarse=True)[1] == np.inf
    # NaN points (R's NA where S = 0) are skipped
    assert quantile_limits(time, np.array([0.8, np.nan, 0.3, 0.2]), up, coarse=True)[0] == pytest.approx(22.0)


@given(st.lists(st.floats(0.0, 1.0), min_size=2, max_size=12), st.floats(0.05, 0.95))
@settings(max_examples=200, deadline=None)
def test_linear_limits_lie_between_the_grid_points_around_r_s_reading(drops, q):
    """On a grid the linear reading of a band is never before the grid point before R's reading, nor after it."""
    band = np.cumprod(np.asarray(drops))  # a non-increasing band in [0, 1]
    time = np.arange(1.0, band.size + 1.0) * 7.0
    r = quantile_r(time, band, q)
    lin = linear_crossing(time, band, q)
    if not np.isfinite(r):
        assert lin == np.inf
    else:
        before = time[time < r]
        assert (before[-1] if before.size else 0.0) - 1e-9 <= lin <= r + 1e-9


def test_sampled_curves_have_the_binomial_variance():
    """A cohort of n drawn from S without censoring: mean S, variance S (1 - S) / n at every point."""
    family = np.array([[0.9, 0.7, 0.5, 0.2], [0.99, 0.95, 0.9, 0.8]])
    out = sampled_curves(family, 50, 4000, np.random.default_rng(4))
    assert out.shape == (4000, 2, 4)
    np.testing.assert_allclose(out.mean(0), family, atol=0.01)
    np.testing.assert_allclose(out.var(0), family * (1 - family) / 50, rtol=0.12)
    assert np.all(np.diff(out, axis=-1) <= 0)  # survivors never come back


def test_time_indexed_band_with_a_declared_size_carries_the_sampling_error():
    """Nearly noise-free (total epsilon 20000): the noise-only band is narrow; with 100 subjects declared per group
    it widens to the sampling error (sd about 0.05 at S = 0.5) and still holds the released values."""
    points = np.linspace(50, 1000, 20)
    truth = np.exp(-points / 800)[None, None, :]
    quiet = TimeIndexed(20, epsilon=20000.0)
    released = quiet.post_process(truth)
    lo0, up0 = time_indexed_bands(quiet, released, points)
    lo, up = time_indexed_bands(quiet, released, points, sizes=100)
    mid = (truth[0, 0] > 0.3) & (truth[0, 0] < 0.8)
    assert np.all((up - lo)[..., mid] > 0.12) and np.all((up - lo)[..., mid] < 0.3)
    assert np.all((up - lo)[..., mid] > 2 * (up0 - lo0)[..., mid])
    assert np.all(lo <= released) and np.all(released <= up)


@given(st.integers(0, 2**32 - 1), st.floats(1.0, 2000.0), st.booleans())
@settings(max_examples=40, deadline=None)
def test_rmst_is_linear_in_the_curve(seed, horizon, linear):
    """RMST = const + w . S on any grid, step or linear reading (what carries a curve's covariance to the RMST)."""
    from dpsurv_core.curves.intervals import rmst_weights
    from dpsurv_core.curves.kaplan_meier import restricted_mean

    rng = np.random.default_rng(seed)
    time = np.sort(rng.uniform(1.0, 1500.0, 12))
    s = np.sort(rng.uniform(0.0, 1.0, (3, 12)), axis=-1)[:, ::-1]
    w = rmst_weights(time, horizon, linear)
    const = restricted_mean(time, np.zeros((1, 12)), horizon, linear)[0]
    np.testing.assert_allclose(restricted_mean(time, s, horizon, linear), const + s @ w, rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("discrete", [True, False])
def test_clamping_bias_matches_simulated_clamping(discrete):
    """E[max(0, d + N)] - d in closed form against 400,000 draws of the noise, for scales 0.5 to 8."""
    from dpsurv_core.curves.clamping import clamping_bias

    noise = SimulationNoise(5)
    for scale in (0.5, 2.0, 8.0):
        n = (noise.discrete_laplace if discrete else noise.laplace)(scale, (400_000,))
        for d in (0, 1, 3, 10):
            sim = np.maximum(d + n, 0.0).mean() - d
            assert clamping_bias(np.array([d]), scale, discrete)[0] == pytest.approx(sim, abs=0.02 * scale + 0.003)


def test_a_grid_too_fine_for_the_noise_no_longer_pulls_the_curve_down(capsys):
    """lung at epsilon 1 on 300 bins (under one event per bin against noise of +/- 2.8). Read as released, the
    clamped counts pulled the curve below its band (median 183 days, 128 to 224, against R's 310). Read without
    clamping's bias (each released 0 as the noise's mean below 0), its band holds R's curve at 150 and 270 days
    (0.793 and 0.575) and the median's interval holds 310, so no sentence on clamping is needed; from where the
    release cut the events to the number at risk (the bin from 282.3 days) a sentence says nobody is left at risk."""
    from tests.cli_run import run

    o = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "1",
            "--grid", "0:1100:300", "--landmarks", "150,270")
    for mark, r_value in zip(o["landmarks"], (0.7931, 0.5753)):
        assert mark["lower"] <= r_value <= mark["upper"] and abs(mark["survival"] - r_value) < 0.05
    curve = o["curves"][0]
    assert curve["median_lower"] < 310 and curve["median_upper"] is None  # not reached before the stop: open
    assert not any("clamping" in w for w in o["warnings"])
    assert any(w.startswith("From 282.3 days on the released counts leave nobody at risk") for w in o["warnings"])


def test_rrr_clamping_matches_simulated_de_biasing():
    """rrr's de-biased cell x = A r (A = (P^T)^-1, r the multinomial reports of each true group's subjects): the
    variance (A S A^T)_gg against 100,000 simulated cells, and the clamping bias of the normal approximation within
    0.06 of the simulated E[max(0, x)] - x (3 and 1 true events, keep probability 0.46)."""
    from dpsurv_core.curves.clamping import rrr_clamping
    from dpsurv_core.curves.rrr import response_matrix

    p = response_matrix(0.46, 2)
    a = np.linalg.inv(p.T)
    rng = np.random.default_rng(0)
    x = np.array([3, 1])
    reports = rng.multinomial(x[0], p[0], 100_000) + rng.multinomial(x[1], p[1], 100_000)
    sims = reports @ a.T
    got = rrr_clamping(x.reshape(1, 2, 1, 1).astype(float), p)
    np.testing.assert_allclose(got.events.ravel(), np.maximum(sims, 0).mean(0) - x, atol=0.06)
    np.testing.assert_allclose(got.noise_sd.ravel(), np.sqrt(sims.var(0)), rtol=0.03)


def test_rrr_on_the_event_time_grid_says_de_biasing_pulls_the_curve_down(capsys):
    """lung by sex, rrr at epsilon 1 on the event-time grid: de-biased cells of a handful of events, set to 0 where
    negative, drag the de-biased curves far below the truth (1-year survival 0.09 and 0 against 0.34 and 0.53), and
    a sentence says so."""
    from tests.cli_run import run

    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--seed", "2",
            "--grid", "event-times")
    assert any("de-biasing the randomized labels and setting negative counts to 0 alone pulls" in w
               for w in o["warnings"])
    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--seed", "2")
    assert not any("de-biasing the randomized labels" in w for w in o["warnings"])
