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
    out = cc.measure("laplace-counts", 1.0, 200, REPLICATES, seed=7)
    cov = out["coverage"]  # S at the true 25/50/75% quantiles, then the median
    assert np.all(cov >= 0.91) and np.all(cov <= 0.995), cov
    assert 0.93 <= cov[:3].mean() <= 0.98, cov


def test_rrr_debiased_intervals_cover_the_truth():
    cov = cc.measure("rrr", 1.0, 200, 100, seed=3)["coverage"]
    assert np.all(cov >= 0.9) and np.all(cov <= 1.0), cov


def test_greenwood_alone_would_fail():
    """The check has teeth: the sampling-only band around the same laplace-counts releases covers far less."""
    public, idx, s_true, _ = cc.setting()
    hits = 0
    for r in range(60):
        data = cc.cohort(200, 7 + r)
        curves = LaplaceCounts(1.0).release(data, public, SimulationNoise([7, r])).curves
        lo, up = conf_bands(replace(curves, interval_variance=None, interval_method=None), "log")
        hits += int(((lo[0][:, idx] <= s_true) & (s_true <= up[0][:, idx])).sum())
    assert hits / (60 * 2 * 3) < 0.85
