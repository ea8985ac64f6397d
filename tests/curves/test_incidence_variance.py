"""The non-private cumulative incidence's variance is R's infinitesimal jackknife (survfit on multi-state data:
the sum over subjects of the squared derivative of I with respect to the subject's case weight), and its band is
R's conf.type formulas on I itself (survfit_confint on pstate)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import ndtri

from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.intervals import incidence_limits
from dpsurv_core.curves.kaplan_meier import estimate, incidence_variance
from dpsurv_core.curves.result import event_times_grid
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import TimeGrid

Z = ndtri(0.975)


def _counts(n, events, censored, edges=None) -> BinnedCounts:
    events = np.asarray(events, float)
    j = events.shape[-1]
    grid = TimeGrid(np.arange(j + 1.0) if edges is None else np.asarray(edges, float), "equal", False)
    groups = tuple(f"g{i}" for i in range(events.shape[0]))
    types = tuple(f"t{k}" for k in range(events.shape[1]))
    return BinnedCounts(grid, groups, np.asarray(n, float), events, np.asarray(censored, float), types)


def test_by_hand_four_subjects():
    """Times 1 (type 1), 2 (type 2), 3 (censored), 4 (type 1). I_1(4) = (w1 + w3 + w4) / (w1 + w2 + w3 + w4) and
    I_2(2) = w2 / sum w, so each derivative at w = 1 is 1/16 or -3/16 and every variance here is 12 / 256."""
    c = _counts([4], [[[1, 0, 0, 1], [0, 1, 0, 0]]], [[0, 0, 1, 0]])
    cur = estimate(c)
    np.testing.assert_allclose(cur.cumulative_incidence[0], [[0.25, 0.25, 0.25, 0.75], [0.0, 0.25, 0.25, 0.25]])
    var = incidence_variance(c)
    np.testing.assert_allclose(var[0, 0], [12 / 256] * 4, rtol=1e-12)
    np.testing.assert_allclose(var[0, 1], [0.0] + [12 / 256] * 3, atol=1e-15, rtol=1e-12)
    np.testing.assert_allclose(cur.incidence_variance, var)
    # R's log interval on I: I exp(-/+ z se / I), upper at most 1; NA where I = 0
    lo, up = incidence_limits(cur.cumulative_incidence, var, "log")
    se = np.sqrt(12 / 256)
    np.testing.assert_allclose([lo[0, 0, 3], up[0, 0, 3]], [0.75 * np.exp(-Z * se / 0.75), 1.0])
    np.testing.assert_allclose([lo[0, 0, 0], up[0, 0, 0]], [0.25 * np.exp(-Z * se / 0.25), 1.0])
    assert np.isnan(lo[0, 1, 0]) and np.isnan(up[0, 1, 0])


def _brute_force(n, ev, ce, actuarial, h=1e-6):
    """Sum over cells of count x (central difference of I in that cell's case weight)^2."""
    def cif(dn=0.0, dev=None, dce=None):
        e = ev + (0 if dev is None else dev)
        c = ce + (0 if dce is None else dce)
        return estimate(_counts(n + dn, e, c), actuarial=actuarial).cumulative_incidence
    out = np.zeros(ev.shape[:1] + ev.shape[1:])
    stay = n - ev.sum((-2, -1)) - ce.sum(-1)
    for g in range(ev.shape[0]):
        one = np.zeros_like(n)
        one[g] = 1.0
        unit = np.zeros_like(ev)
        cells = [(stay[g], None, None)]
        for j in range(ev.shape[-1]):
            dc = np.zeros_like(ce)
            dc[g, j] = 1.0
            cells.append((ce[g, j], None, dc))
            for k in range(ev.shape[1]):
                de = unit.copy()
                de[g, k, j] = 1.0
                cells.append((ev[g, k, j], de, None))
        for weight, de, dc in cells:
            u = (cif(h * one, None if de is None else h * de, None if dc is None else h * dc)
                 - cif(-h * one, None if de is None else -h * de, None if dc is None else -h * dc)) / (2 * h)
            out[g] += weight * u[g] ** 2
    return out


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([0.0, 0.5]), st.integers(1, 3))
def test_equals_the_derivative_in_each_case_weight(seed, actuarial, types):
    """Against a numerical derivative of the estimator itself, on random small counts with ties, censorings in
    event bins, bins with nobody left and (sometimes) a bin where everybody at risk has the event."""
    rng = np.random.default_rng(seed)
    j = int(rng.integers(2, 7))
    ev = rng.integers(0, 4, (2, types, j)).astype(float)
    ce = rng.integers(0, 3, (2, j)).astype(float)
    n = ev.sum((-2, -1)) + ce.sum(-1) + rng.integers(0, 3, 2)
    if rng.random() < 0.3:  # group 0 ends with every subject at risk having an event
        ce[0, -1] = 0.0
        n[0] = ev[0].sum() + ce[0].sum()
    got = incidence_variance(_counts(n, ev, ce), actuarial)
    np.testing.assert_allclose(got, _brute_force(n, ev, ce, actuarial), atol=1e-8)


def test_interval_covers_a_known_incidence():
    """Constant hazards 0.02 (type 1) and 0.01 (type 2), exponential censoring 0.01, n = 150: R's log interval
    on I_1(30) covers the truth about 95% of the time over 400 seeded cohorts (Monte Carlo error 1.1 points)."""
    h1, h2, hc, t0 = 0.02, 0.01, 0.01, 30.0
    truth = h1 / (h1 + h2) * (1 - np.exp(-(h1 + h2) * t0))
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(400):
        t_event = rng.exponential(1 / (h1 + h2), 150)
        kind = np.where(rng.random(150) < h1 / (h1 + h2), 1, 2)
        t_cens = rng.exponential(1 / hc, 150)
        time = np.round(np.minimum(t_event, t_cens), 1) + 0.1  # some ties, as in day-rounded data
        etype = np.where(t_event <= t_cens, kind, 0)
        cohort = Cohort(time, (etype > 0).astype(np.int64), event_type=etype, event_type_labels=("a", "b"))
        cur = estimate(count(cohort, event_times_grid(cohort, competing=True), competing=True))
        lo, up = incidence_limits(cur.cumulative_incidence, cur.incidence_variance, "log")
        j = np.searchsorted(cur.time, t0, side="right") - 1
        hits += lo[0, 0, j] <= truth <= up[0, 0, j]
    assert 0.925 <= hits / 400 <= 0.975, hits / 400


def test_r_gives_plain_zero_width_and_other_types_na_where_nobody_had_the_event():
    """survfit_confint(p = 0, se = 0, logse = FALSE): plain [0, 0], the other four NA."""
    for kind in ("plain", "log", "log-log", "logit", "arcsin"):
        lo, up = incidence_limits(np.array([0.0, 0.2]), np.array([0.0, 0.01]), kind)
        if kind == "plain":
            assert lo[0] == 0.0 and up[0] == 0.0
        else:
            assert np.isnan(lo[0]) and np.isnan(up[0])
        assert lo[1] < 0.2 < up[1]


def test_a_noisy_zero_incidence_keeps_an_interval_under_every_type():
    """A private incidence of 0 whose bootstrap variance is positive is uncertain: every type gives [0, u] with u > 0
    (log-log, logit and arcsin are undefined on 1 - I = 1, so the log formula's 1 - exp(-z sd) stands in)."""
    for kind in ("plain", "log", "log-log", "logit", "arcsin"):
        lo, up = incidence_limits(np.array([0.0]), np.array([0.0004]), kind, complement=True)
        assert lo[0] == 0.0 and up[0] > 0.0, kind
        if kind in ("log", "log-log", "logit", "arcsin"):
            np.testing.assert_allclose(up[0], 1 - np.exp(-Z * 0.02))


def test_a_noisy_band_where_nobody_is_left_runs_from_the_last_lower_limit_to_one():
    from dataclasses import replace

    from dpsurv_core.curves.intervals import incidence_band

    c = _counts([20], [[[3, 2, 2, 1]]], [[1, 1, 1, 1]])
    cur = estimate(c)
    noisy = replace(cur, interval_method="bootstrap", incidence_variance=np.full(cur.cumulative_incidence.shape, 1e-3),
                    at_risk=np.array([[20.0, 14.0, 0.0, 5.0]]))
    lo, up = incidence_band(noisy, "log")
    free_lo, _ = incidence_limits(cur.cumulative_incidence, noisy.incidence_variance, "log", complement=True)
    np.testing.assert_allclose(lo[0, 0, :2], free_lo[0, 0, :2])
    assert np.all(lo[0, 0, 2:] == free_lo[0, 0, 1]) and np.all(up[0, 0, 2:] == 1.0)


def test_private_incidence_band_covers_in_a_quick_simulation():
    """laplace-counts at n = 200 and epsilon 0.5, 150 seeded cohorts (benchmarks/coverage_incidence.py): the
    published bootstrap band (the formulas on 1 - I; from the last lower limit to 1 where the released counts leave
    nobody at risk, as at the last point in most of these releases) covers the true incidence at three grid points
    about 95% of the time (97.3 / 95.3 / 98.0% here)."""
    from benchmarks.coverage_incidence import private

    cov = private(200, 0.5, 150, seed=11)["on 1 - I"]
    assert np.all((cov >= 0.90) & (cov <= 0.99)), cov


def test_noisy_adaptive_counts_get_no_exact_count_incidence_variance():
    """adaptive-km's fine counts carry the noise: the exact-count formula must not stand in as their variance (its
    delta-method band path keeps whatever estimate returns)."""
    from dpsurv_core.curves.adaptive_km import AdaptiveKM
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters
    from dpsurv_core.privacy.noise import SimulationNoise

    cohort = load_bundled("pbc", competing=True)
    pub = PublicParameters.derive(cohort, grid=TimeGrid.parse("0:4800:20", cohort))
    rel = AdaptiveKM(1.0, band_method="delta").compute(cohort, pub, SimulationNoise(1), competing=True)
    assert rel.curves.incidence_variance is None
