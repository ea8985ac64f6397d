"""The baselines' shape intervals under heavy censoring (pbc 60%, flchain 70%).

With 60-70% of subjects censored, the U(0, c) censoring that censors the public share of a tiny candidate shape's
times (0.05, 0.08 at scale 1) lies below the floor e^-omega: every simulated record sits on the floor and the clipped
MLE is gamma, so those candidates reject a moderate release as too large while the shapes from about 0.13 up accept
it. The inversion used to stop at that first too-large candidate: [0, 0.05] for every release on pbc, with no
warning (docs/coverage-models.md, Weibull section)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull import inference
from dpsurv_core.weibull.inference import censoring_share, release_intervals, weibull_intervals
from dpsurv_core.weibull.mechanisms import WeibullEstimates, clipped_mle, make_mechanism
from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS, WeibullSample, normalise

PBC_MLE, FLCHAIN_MLE = 1.079, 0.962


def test_tiny_shapes_collapse_onto_the_floor_under_heavy_censoring():
    """The cause: the simulated cohorts do censor the public share, but for a tiny shape under 60% censoring the
    censoring limit lies below the floor e^-6, so every record is on it and the clipped MLE is gamma. At 30% the
    horizon alone censors the share (c = inf) and the same shape's cohorts are spread out."""
    rng = np.random.default_rng(0)
    s = inference.simulate_samples(0.05, 1.0, 2000, 0.6, 1, OMEGA, 1.0, 1, rng)[0]
    assert 1 - s.n_events / s.n == pytest.approx(0.6, abs=0.03)
    assert np.all(s.t <= math.exp(-OMEGA) * (1 + 1e-9))
    assert clipped_mle(s, GAMMA)[0] == GAMMA
    s30 = inference.simulate_samples(0.05, 1.0, 2000, 0.3, 1, OMEGA, 1.0, 1, rng)[0]
    assert clipped_mle(s30, GAMMA)[0] < 1.0


def test_invert_ignores_too_large_tiny_shapes_below_the_accepted_ones():
    grid = np.geomspace(0.05, 10.0, 12)
    q_lo, q_hi = grid - 2.0, grid + 2.0  # rising curves: accepted from 0.05 to about 3
    q_lo[:2], q_hi[:2] = 4.6, 12.4  # the two tiny shapes on the floor: their releases are about gamma
    lo, hi = inference._invert(grid, q_lo, q_hi, 1.1, GAMMA)
    assert lo == 0.0 and 3.0 < hi < 3.2  # was [0, 0.05]: the first candidate ended the interval
    # on a refined grid that starts on the floor: the coarse answer's lower end, or the first candidate kept if lower
    assert inference._invert(grid, q_lo, q_hi, 1.1, GAMMA, empty=(0.1, 3.0))[0] == 0.1
    assert inference._invert(grid, q_lo, q_hi, 1.1, GAMMA, empty=(0.5, 3.0))[0] == grid[2]
    # rising curves everywhere: unchanged (the last too-small candidate to the first too-large one)
    lo, hi = inference._invert(grid, grid - 0.5, grid + 0.5, 1.1, GAMMA)
    assert lo == pytest.approx(0.6) and hi == pytest.approx(1.6)
    # a too-small candidate followed by a too-large one (no candidate accepts between): still an empty inversion,
    # which holds no accepted candidate
    q_lo, q_hi = 3.0 * grid, 3.0 * grid
    lo, hi = inference._invert(grid, q_lo, q_hi, 3.001, GAMMA)
    assert inference._accepts(grid, q_lo, q_hi, 3.001, lo, hi).size == 0


def test_invert_spans_a_too_large_run_between_accepted_candidates():
    """Sample and aggregate at epsilon 2 with 70% censoring: a release of about -4.5 is accepted by the first
    candidate and by every shape from 0.21 to 2.4, rejected as too large by the floor-bound shapes between. Reader
    version 1 stopped at the first of those ([0, 0.08] on the coarse grid); version 2 (``span``) runs on to the last accepted one."""
    grid = np.geomspace(0.05, 10.0, 16)
    q_lo, q_hi = grid - 3.0, grid + 3.0  # rising curves: a release of -1 is accepted up to a shape of 2
    q_lo[1:3], q_hi[1:3] = 4.6, 12.4  # two tiny shapes on the floor call it too large
    v1 = inference._invert(grid, q_lo, q_hi, -1.0, GAMMA)
    v2 = inference._invert(grid, q_lo, q_hi, -1.0, GAMMA, span=True)
    assert v1[0] == v2[0] == 0.0
    assert v1[1] < grid[1] and v2[1] == pytest.approx(2.0)
    assert inference._accepts(grid, q_lo, q_hi, -1.0, *v2).size == np.sum(grid <= 2.0) - 2


@pytest.mark.parametrize("name", ["laplace", "saa", "lsp-tll"])
def test_reader_version_2_spans_the_baselines_intervals_only(monkeypatch, name):
    """On curves with the floor-bound run, version 2 takes a baseline's shape interval past it; LSP + TLL reads as in
    version 1 (its scale union runs over every shape inside the interval, so spanning would take in the tiny
    shapes whose candidate scales TLL clamps)."""

    def curves(mech, grid, lam0, n, share, cohorts, draws, seed, level, ratio):
        q_lo, q_hi = grid - 3.0, grid + 3.0
        q_lo[1:3], q_hi[1:3] = 4.6, 12.4
        width = np.full(grid.shape, 0.5)
        return q_lo, q_hi, -width, width, q_lo, q_hi

    monkeypatch.setattr(inference, "_quantile_curves", curves)
    mech = make_mechanism(name, 2.0, 4800.0)
    est = WeibullEstimates(name, np.array([-1.0]), np.array([1.0]), 4800.0, clamped=np.array([False]))
    v1, v2 = (weibull_intervals(mech, est, 2000, 0.7, reader_version=v).shape for v in (1, 2))
    if name == "lsp-tll":
        assert (v1.lower, v1.upper) == (v2.lower, v2.upper)
    else:
        assert v1.upper < 0.2 and v2.upper == pytest.approx(2.0, abs=0.1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 3.0), min_size=3, max_size=24), st.lists(st.floats(0.0, 3.0), min_size=3, max_size=24),
       st.floats(-5.0, 40.0), st.booleans())
def test_where_the_curves_rise_reader_version_2_inverts_as_version_1(steps, widths, value, refined):
    """Version 2 differs from version 1 only where an accepted candidate follows a too-large one, which rising
    curves never give: every record whose curves rose reads the same under both."""
    k = min(len(steps), len(widths))
    grid = np.geomspace(0.05, 10.0, k)
    q_lo = np.cumsum(steps[:k])
    q_hi = q_lo + np.maximum.accumulate(np.array(widths[:k]))
    empty = (0.1, 3.0) if refined else None
    assert inference._invert(grid, q_lo, q_hi, value, GAMMA, empty) == \
        inference._invert(grid, q_lo, q_hi, value, GAMMA, empty, span=True)


@pytest.mark.parametrize("name, eps, shape, scale, n, share, horizon, mle", [
    ("laplace", 20.0, 1.1024778845579435, 3.2927649409048505, 418, 0.6, 4800.0, PBC_MLE),  # pbc, seed 1: [0, 0.05]
    ("laplace", 20.0, 3.251092271981113, 1.0037783263502384, 418, 0.6, 4800.0, PBC_MLE),  # seed 4: [0.020, 0.020]
    ("saa", 20.0, 0.6974097343296409, 1.5243309405266432, 418, 0.6, 4800.0, PBC_MLE),  # seed 4: [0, 0.05]
    ("laplace", 50.0, 0.7025097138694022, 2.423170731174508, 7874, 0.7, 5300.0, FLCHAIN_MLE),  # flchain, seed 2
    # flchain, seed 2: its scale interval also left out the release (7 seconds: sample and aggregate at n = 7,874)
    pytest.param("saa", 5.0, 0.8113798367382764, 2.6868293684457925, 7874, 0.7, 5300.0, FLCHAIN_MLE,
                 marks=pytest.mark.slow),
])
def test_heavily_censored_baseline_interval_holds_the_release_and_the_mle(name, eps, shape, scale, n, share,
                                                                          horizon, mle):
    """The releases of `weibull --data pbc|flchain --mechanism laplace|saa` the reviewer found: each shape
    interval was [0, 0.05] (or [0.020, 0.020]) with no warning; the flchain scale interval [15,556, 23,495] days
    left out its own release (14,240), from a union over the rejected tiny shapes."""
    iv = release_intervals(name, eps, shape, scale, n, share, horizon, OMEGA, GAMMA, RUNGS)
    sh, sn = iv["shape"], iv["scale_normalised"]
    assert sh["upper"] > 1.0
    assert sh["lower"] <= shape <= sh["upper"] and sh["lower"] <= mle <= sh["upper"]
    assert sn["lower"] <= scale <= sn["upper"]
    assert not any("unusual" in w for w in iv["warnings"])


def test_baseline_release_that_no_shape_accepts_gets_the_whole_range_and_says_so(monkeypatch):
    """If no candidate's region holds the release but the tiny shapes that the inversion ignores, the interval used
    to be the point where the curves cross it, printed with no warning; it is now the whole range, and says why."""

    def curves(mech, grid, lam0, n, share, cohorts, draws, seed, level, ratio):
        q_lo, q_hi = 3.0 * grid, 3.0 * grid  # no candidate accepts 3.001 ...
        q_lo[0], q_hi[0] = -np.inf, np.inf  # ... but the smallest, on the floor
        width = np.full(grid.shape, 0.5)
        return q_lo, q_hi, -width, width, q_lo, q_hi

    monkeypatch.setattr(inference, "_quantile_curves", curves)
    mech = make_mechanism("laplace", 20.0, 4800.0)
    est = WeibullEstimates("laplace", np.array([3.001]), np.array([1.0]), 4800.0)
    iv = weibull_intervals(mech, est, 418, 0.6)
    assert (iv.shape.lower, iv.shape.upper) == (0.0, GAMMA)
    assert any("unusual for every true shape" in w and "whole range" in w for w in iv.warnings)


def test_baseline_coverage_under_heavy_censoring_quick():
    """pbc-like cohorts (418 subjects, shape 1.08, 60% censored, the share read off the data as the command does),
    Laplace baseline at epsilon 20: the shape interval holds the truth (was 0 of these 20: always [0, 0.05])."""
    truth = WeibullTruth(shape=1.08, scale=1000.0, censoring=0.6)
    h = truth.censoring_limit
    mech = make_mechanism("laplace", 20.0, h)
    hits = [0, 0]
    seeds = np.random.SeedSequence(17).spawn(20)
    for sq in seeds:
        rng = np.random.default_rng(sq)
        df = weibull_cohort(418, truth, rng=rng)
        s = WeibullSample(normalise(df["time"].to_numpy(float), h), df["status"].to_numpy(), h)
        share = censoring_share(s)
        assert share >= 0.5
        iv = weibull_intervals(mech, mech.compute(s, SimulationNoise(int(rng.integers(2 ** 63)))), s.n, share)
        hits[0] += iv.shape.lower <= truth.shape <= iv.shape.upper
        hits[1] += iv.scale_normalised.lower <= truth.scale / h <= iv.scale_normalised.upper
    assert hits[0] >= 17 and hits[1] >= 17
