"""Quick coverage of the noise-aware Weibull intervals (full table: benchmarks/coverage_models.py,
docs/coverage-models.md). Seeded and small; they fail if the noise is left out of the interval."""

from __future__ import annotations

import math

import numpy as np
import pytest

from benchmarks.coverage_models import weibull_cell
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.inference import censoring_share, simulate_samples, weibull_intervals
from dpsurv_core.weibull.mechanisms import LaplaceWeibull, LspTll, SampleAggregateWeibull, make_mechanism
from dpsurv_core.weibull.model import WeibullSample, normalise


def _sample(n: int = 200, seed: int = 5) -> WeibullSample:
    truth = WeibullTruth()
    df = weibull_cohort(n, truth, seed=seed)
    return WeibullSample(normalise(df["time"].to_numpy(float), truth.censoring_limit), df["status"].to_numpy(),
                         truth.censoring_limit)


def test_lsp_tll_coverage_quick():
    row = weibull_cell(200, 1.0, "lsp-tll", 8, seed=3)
    assert row["coverage_shape"] >= 0.75 and row["coverage_scale"] >= 0.75
    # LSP's noise is several times the sampling error at n = 200, epsilon 1: a sampling-only interval is far narrower
    assert row["width_ratio_shape"] > 3


def test_laplace_coverage_quick():
    row = weibull_cell(200, 2.0, "laplace", 10, seed=4)
    assert row["coverage_shape"] >= 0.8 and row["coverage_scale"] >= 0.8
    assert row["width_ratio_shape"] > 5 and row["width_ratio_scale"] > 5


def test_simulated_cohorts_follow_the_public_censoring_share():
    rng = np.random.default_rng(0)
    samples = simulate_samples(1.3, 0.3, 2000, 0.3, 3, 6.0, 1000.0, 1, rng)
    share = np.mean([1 - s.n_events / s.n for s in samples])
    assert share == pytest.approx(0.3, abs=0.03)
    assert all(s.t.min() >= math.exp(-6) and s.t.max() <= 1 for s in samples)
    assert censoring_share(_sample()) in {0.25, 0.3, 0.35}


def test_interval_is_reproducible_and_contains_a_noiseless_release():
    s = _sample()
    mech = make_mechanism("lsp-tll", 1.0, s.horizon)
    est = mech.release(s, SimulationNoise(8))
    a, b = weibull_intervals(mech, est, s.n, 0.3), weibull_intervals(mech, est, s.n, 0.3)
    assert a.to_dict() == b.to_dict()
    assert a.shape.lower <= est.shape[0] <= a.shape.upper
    assert a.scale.lower <= est.scale[0] <= a.scale.upper
    assert a.scale.upper == pytest.approx(a.scale_normalised.upper * s.horizon)


def test_laplace_warning_says_why():
    s = _sample()
    mech = make_mechanism("laplace", 0.5, s.horizon)
    inf = weibull_intervals(mech, mech.release(s, SimulationNoise(1)), s.n, 0.3)
    text = " ".join(inf.warnings)
    assert "global sensitivity" in text and "lsp-tll" in text


def test_every_private_weibull_mechanism_says_its_interval_carries_the_noise():
    for cls in (LspTll, LaplaceWeibull, SampleAggregateWeibull):
        assert cls.interval_includes_noise is True
    for mid in ("lsp-tll", "laplace", "saa"):
        assert catalogue.get(catalogue.WEIBULL, mid).interval_includes_noise
