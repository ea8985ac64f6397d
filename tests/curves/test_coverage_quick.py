"""Quick mode of benchmarks/coverage_curves.py: the noise-aware intervals cover the true survival of simulated
Weibull cohorts about 95% of the time, where the sampling-only (Greenwood) band around the same private curve
does not."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from benchmarks import coverage_curves as cc
from dpsurv_core.cli.km import conf_bands
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.privacy.noise import SimulationNoise

REPLICATES = 150  # x 2 groups: Monte Carlo s.e. about 1.3 points at 95%


def test_laplace_counts_intervals_cover_the_truth():
    """At q75 group B's true S is 0.125, with about 12 subjects at risk against noise of +/- 15 on the number at risk
    read from the counts: there a sentence says the curve cannot be read (curves/curve_warnings.py, few at risk), and
    the band covers about 90% (read from clamped counts, which pulled the curve down, it over-covered earlier
    landmarks instead; docs/coverage-curves.md)."""
    out = cc.measure("laplace-counts", 1.0, 200, REPLICATES, seed=7)
    cov = out["coverage"]  # S at the true 25/50/75% quantiles, then the median
    assert np.all(cov[[0, 1, 3]] >= 0.93) and cov[2] >= 0.87 and np.all(cov <= 0.995), cov
    assert 0.93 <= cov[:3].mean() <= 0.98, cov


def test_rrr_debiased_intervals_cover_the_truth():
    cov = cc.measure("rrr", 1.0, 200, 100, seed=3)["coverage"]
    assert np.all(cov >= 0.9) and np.all(cov <= 1.0), cov


def test_median_interval_on_the_grid_is_not_a_bin_too_wide():
    """At n = 2,000 the median's interval is about one grid bin wide: reading the bands linearly between grid points
    covers about 97% here (seeded), where taking the grid point before the lower band's crossing covered 99%."""
    cov = cc.measure("laplace-counts", 2.0, 2000, REPLICATES, seed=5)["coverage"][3]
    assert 0.93 <= cov <= 0.98, cov


def test_greenwood_alone_would_fail():
    """The check has teeth: the sampling-only band around the same laplace-counts releases covers far less."""
    public, idx, s_true, _ = cc.setting()
    hits = 0
    for r in range(60):
        data = cc.cohort(200, 7 + r)
        curves = LaplaceCounts(1.0).compute(data, public, SimulationNoise([7, r])).curves
        lo, up = conf_bands(replace(curves, interval_variance=None, interval_method=None), "log")
        hits += int(((lo[0][:, idx] <= s_true) & (s_true <= up[0][:, idx])).sum())
    assert hits / (60 * 2 * 3) < 0.85


def test_bootstrap_spread_is_the_release_spread():
    """No wider than needed, and not narrower: at n = 200, epsilon 0.5 the bootstrap draws' standard deviation of S
    on the survival scale matches the spread of the released S over cohorts; Greenwood's is far smaller. (The band's
    variance of log S is at least the draws' spread: larger where the log band must reach down to the draws' lower
    tail, bootstrap.lower_tail_log_variance.)"""
    public, idx, _, _ = cc.setting()
    released, boot_sd, greenwood_sd = [], [], []
    for r in range(80):
        data = cc.cohort(200, 11 + r)
        c = LaplaceCounts(0.5).compute(data, public, SimulationNoise([11, r])).curves
        s = c.survival[0][:, idx]
        released.append(s)
        boot_sd.append(np.asarray(c.rmst_draws)[0].std(axis=0)[:, idx])
        greenwood_sd.append(np.sqrt(c.greenwood[0][:, idx]) * s)
    real = np.std(released, axis=0)[:, :2]  # q25 and q50 (q75's released S is often 0, where sd is undefined)
    ratio = np.median(boot_sd, axis=0)[:, :2] / real
    assert np.all((ratio > 0.7) & (ratio < 1.3)), ratio
    assert np.all(np.median(greenwood_sd, axis=0)[:, :2] / real < 0.5)


def test_time_indexed_band_needs_the_sampling_error_where_the_curve_is_informative():
    """time-indexed as published at e = 5 (total 312.5): with the declared group size the band covers about 95%;
    the noise-only band (what it printed before) misses the sampling error and covers far less."""
    with_size = cc.measure("time-indexed/base+n", 5.0, 200, 60, seed=5)["coverage"][:3]
    noise_only = cc.measure("time-indexed/base", 5.0, 200, 60, seed=5)["coverage"][:3]
    assert 0.88 <= with_size.mean() <= 0.985 and with_size.min() >= 0.83, with_size
    assert noise_only.mean() < 0.8, noise_only


def test_time_indexed_late_landmark_covers_with_the_declared_censoring():
    """time-indexed as published at e = 5, n = 200, sizes and the design's censoring share (30%) declared: the band's
    cohorts are censored and its candidates Weibull-shaped, so S at the true 75% quantile is covered at about 95%.
    The band of uncensored exponential candidates (before) covered it 90-91% on this and two other seeds (the censored
    truth's Kaplan-Meier curve spreads more late than an uncensored cohort's); this one covers 93-95% there."""
    cov = cc.measure("time-indexed/base+n", 5.0, 200, 150, seed=11)["coverage"][:3]
    assert cov[2] >= 0.93 and np.all(cov >= 0.9) and np.all(cov <= 0.985), cov


def test_time_indexed_uninformative_release_covers_95_not_97():
    """At a fixed total of 1 on 20 points the clipped outputs pile up at 0 for every candidate, so a central range
    swallows its lower tail there and held 97.5% (the band covered 96.9-97.6%, all its misses on one side); the
    acceptance ranges give the unused tail to the other side, and the band covers about 95% (this seed: 98.0% pooled
    over the landmarks before, 96.1% now)."""
    out = cc.measure("time-indexed+n", 1.0, 200, 150, seed=2)
    cov = out["coverage"][:3]
    assert 0.93 <= cov.mean() <= 0.965 and np.all(cov >= 0.91), cov


def test_rmst_interval_covers_when_the_curve_is_read_linearly_between_grid_points():
    """RMST to a time off the 20-bin grid, laplace-counts at n = 2,000 and epsilon 1 (100 seeded cohorts): read
    linearly between grid points the interval covers the true RMST and the mean bias is a day or two; the step
    curve's area is about 40 days too high and its interval misses most of the time."""
    from benchmarks.coverage_rmst import measure

    m = measure("laplace-counts", 1.0, 2000, 100, seed=3)
    assert 0.91 <= m["linear"]["coverage"] <= 0.99 and abs(m["linear"]["bias"]) < 6.0
    assert m["step"]["coverage"] < 0.7 and m["step"]["bias"] > 25.0


def test_adaptive_km_rmst_interval_covers_small_cohorts(monkeypatch):
    """adaptive-km at n = 200 and epsilon 0.5 (200 seeded cohorts): with its error bar at least the delta method's
    the RMST interval covers 95%; the bootstrap's spread alone, on the same cohorts, 93.3% (88.8% when the curve read
    the clamped merged-bin counts as released, whose bias the delta method's floor made up for)."""
    from dataclasses import replace

    import benchmarks.coverage_rmst as bench
    from dpsurv_core.curves.intervals import rmst_interval

    m = bench.measure("adaptive-km", 0.5, 200, 200, seed=3)
    assert 0.90 <= m["linear"]["coverage"] <= 0.98
    monkeypatch.setattr(bench, "rmst_interval",
                        lambda c, h, coarse=False: rmst_interval(replace(c, noise_covariance=None), h, coarse))
    alone = bench.measure("adaptive-km", 0.5, 200, 200, seed=3)
    assert alone["linear"]["coverage"] < m["linear"]["coverage"] and m["linear"]["coverage"] >= 0.93
