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
from dpsurv_core.weibull import censoring, inference, simulation
from dpsurv_core.weibull.inference import censoring_share, simulate_samples, weibull_intervals
from dpsurv_core.weibull.mechanisms import (
    LaplaceWeibull,
    LspTll,
    SampleAggregateWeibull,
    WeibullEstimates,
    clipped_mle,
    make_mechanism,
)
from dpsurv_core.weibull.model import WeibullSample, normalise, shape_root


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


def test_follow_up_ends_at_the_horizon_in_the_simulated_cohorts():
    """A truth whose scale lies beyond the horizon (flchain: 2.6 horizons, 70% censored) has no event after it:
    the simulated times beyond the horizon are censored there, the closed-form share agrees with the simulation,
    and a horizon that alone censors the share needs no other censoring."""
    from dpsurv_core.weibull.inference import censored_share, exact_censoring_limit

    rng = np.random.default_rng(1)
    c = exact_censoring_limit(0.95, 0.7, 2.6)
    assert math.isfinite(c) and censored_share(0.95, 2.6, c) == pytest.approx(0.7, abs=1e-9)
    s = simulate_samples(0.95, 2.6, 20_000, 0.7, 1, 6.0, 1.0, 1, rng, limit=c)[0]
    assert 1 - s.n_events / s.n == pytest.approx(0.7, abs=0.01)
    assert not np.any((s.t >= 1.0) & (s.d == 1))  # no event at the horizon or after it
    # the simulated limit (a fixed sample of 20,000) censors the same share
    assert censored_share(0.95, 2.6, censoring.censoring_limit(0.95, 2.6, 0.7, rng)) == pytest.approx(0.7, abs=0.005)
    s1 = math.exp(-(1 / 2.6) ** 0.95)  # the share the horizon alone censors
    assert exact_censoring_limit(0.95, s1 - 0.01, 2.6) == math.inf
    law = inference.record_law(0.95, 2.6, c, 6.0)
    assert law.events[-1] == 0.0 and law.censored.sum() == pytest.approx(0.7, abs=1e-6)


def test_flchain_interval_holds_its_release_and_the_mle():
    """flchain (7,874 subjects, scale beyond the horizon): the LSP + TLL interval holds the release and the
    non-private fit; before the simulated cohorts ended follow-up at the horizon it held neither scale."""
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import nice_ceiling
    from dpsurv_core.weibull.mechanisms import clipped_mle
    from dpsurv_core.weibull.model import sample_from_cohort

    cohort = load_bundled("flchain")
    s = sample_from_cohort(cohort, nice_ceiling(float(cohort.time.max())))
    mech = make_mechanism("lsp-tll", 1.0, s.horizon)
    est = mech.compute(s, SimulationNoise(11))
    iv = weibull_intervals(mech, est, s.n, 0.7)
    p_mle, l_mle = clipped_mle(s, 10.0)
    for name, mle in (("shape", p_mle), ("scale_normalised", l_mle)):
        band = getattr(iv, name)
        assert band.lower <= float(getattr(est, name)[0]) <= band.upper
        assert band.lower <= mle <= band.upper
    assert not iv.warnings


def test_interval_is_reproducible_and_contains_a_noiseless_release():
    s = _sample()
    mech = make_mechanism("lsp-tll", 1.0, s.horizon)
    est = mech.compute(s, SimulationNoise(8))
    a, b = weibull_intervals(mech, est, s.n, 0.3), weibull_intervals(mech, est, s.n, 0.3)
    assert a.to_dict() == b.to_dict()
    assert a.shape.lower <= est.shape[0] <= a.shape.upper
    assert a.scale.lower <= est.scale[0] <= a.scale.upper
    assert a.scale.upper == pytest.approx(a.scale_normalised.upper * s.horizon)


def test_laplace_warning_says_why():
    s = _sample()
    mech = make_mechanism("laplace", 0.5, s.horizon)
    inf = weibull_intervals(mech, mech.compute(s, SimulationNoise(1)), s.n, 0.3)
    text = " ".join(inf.warnings)
    assert "global sensitivity" in text and "lsp-tll" in text


def test_every_private_weibull_mechanism_says_its_interval_carries_the_noise():
    for cls in (LspTll, LaplaceWeibull, SampleAggregateWeibull):
        assert cls.interval_includes_noise is True
    for mid in ("lsp-tll", "laplace", "saa"):
        assert catalogue.get(catalogue.WEIBULL, mid).interval_includes_noise


def test_scale_interval_of_a_clamped_release_keeps_the_scales_that_often_clamp():
    # n = 200, epsilon 1: LSP released a large shape (6.86), so TLL's noisy sum of t^6.86 fell below its floor and the
    # released scale is the floor (0.0012). Every scale whose releases clamp at least 2.5% of the time makes it
    # typical, the truth (0.326) among them; interpolating quantiles at that point mass stopped at 0.31 (a miss).
    h = WeibullTruth().censoring_limit
    mech = make_mechanism("lsp-tll", 1.0, h)
    est = WeibullEstimates("lsp-tll", np.array([6.8594296469035765]), np.array([0.0012052518779215849]), h,
                           clamped=np.array([True]))
    inf = weibull_intervals(mech, est, 200, 0.3)
    truth = WeibullTruth().scale / h
    assert inf.scale_normalised.lower <= truth <= inf.scale_normalised.upper
    assert inf.scale_normalised.upper < 1.0  # not the whole range: large scales do not clamp


def test_intervals_above_the_direct_size_simulate_no_cohort_of_the_public_size(monkeypatch):
    real = inference.simulate_samples
    seen: list[int] = []

    def spy(shape, scale, n, *args, **kwargs):
        seen.append(n)
        assert n <= max(simulation.SIM_SUBJECTS, simulation.LADDER_SUBJECTS), f"simulated {n} records"
        return real(shape, scale, n, *args, **kwargs)


    monkeypatch.setattr(simulation, "simulate_samples", spy)
    n = 200_000
    s = _sample(n, seed=1)
    mech = make_mechanism("lsp-tll", 1.0, s.horizon)
    est = mech.compute(s, SimulationNoise(2))
    inf = weibull_intervals(mech, est, n, 0.3)
    assert seen
    truth = WeibullTruth()
    # the sampling sd of the shape at n = 200,000 is about 0.0027 (sandwich), LSP's noise far smaller
    assert inf.shape.lower <= truth.shape <= inf.shape.upper
    assert 0.006 < inf.shape.upper - inf.shape.lower < 0.02
    assert inf.scale_normalised.lower <= truth.scale / s.horizon <= inf.scale_normalised.upper
    assert inf.scale_normalised.upper - inf.scale_normalised.lower < 0.02


def test_rescaled_route_agrees_with_simulating_cohorts_of_n_at_the_switch():
    # at n = DIRECT_SUBJECTS both routes are possible: cohorts of n with the mechanism run on each, or the record
    # law's sampling part with LSP offsets from 2,000-record ladders rescaled; their released laws agree
    mech = inference._truncated(make_mechanism("lsp-tll", 2.0, 1000.0))
    n = inference.DIRECT_SUBJECTS
    pd_, ld = inference.simulate_releases(mech, 1.3, 0.33, n, 0.3, 60, 4, 5)
    pr, lr = inference.rescaled_releases(mech, 1.3, 0.33, n, 0.3, 60, 4, 6)
    for direct, rescaled in ((pd_, pr), (ld, lr)):
        se = np.std(direct) / math.sqrt(60) + np.std(rescaled) / math.sqrt(240)  # direct: 60 cohorts
        assert abs(np.mean(direct) - np.mean(rescaled)) < 4 * se
        assert 0.8 < np.std(rescaled) / np.std(direct) < 1.25


def test_record_law_gives_the_mle_limit_and_spread():
    # the large-sample limit and sandwich sd of the MLE on clipped, censored records against 300 simulated cohorts
    limit = inference.exact_censoring_limit(1.3, 0.3, 0.7)
    law = inference.record_law(1.3, 0.7, limit, 6.0)
    assert law.event_share == pytest.approx(0.7, abs=1e-9)
    p_lim, l_lim = law.mle(10.0)
    sd = math.sqrt(law.sandwich(p_lim, l_lim)[0, 0] / 5000)
    samples = simulate_samples(1.3, 0.7, 5000, 0.3, 300, 6.0, 1.0, 1, np.random.default_rng(5), limit=limit)
    p = np.array([shape_root(s, 10.0) for s in samples])
    assert abs(p.mean() - p_lim) < 4 * sd / math.sqrt(300) + 2e-3  # + the O(1/n) small-sample bias
    assert 0.85 < p.std() / sd < 1.15


def test_release_intervals_from_plain_numbers_equal_the_intervals_of_the_release():
    """What the Weibull page computes (and a background process computes ahead) from the release's numbers
    and public inputs is the interval of that release, number for number, at any epsilon."""
    from dpsurv_core.weibull.inference import release_intervals
    from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS

    s = _sample()
    for eps in (0.8, 1.6):
        mech = make_mechanism("lsp-tll", eps, s.horizon)
        est = mech.compute(s, SimulationNoise(8))
        plain = release_intervals("lsp-tll", eps, float(est.shape[0]), float(est.scale_normalised[0]), s.n, 0.3,
                                  s.horizon, OMEGA, GAMMA, RUNGS, clamped=bool(est.clamped[0]))
        assert plain == weibull_intervals(mech, est, s.n, 0.3).to_dict()


def test_laplace_mixture_quantiles_are_the_exact_laplace_law():
    # one centre: s + b Q(u) exactly, Q(u) = ln(2u) below 1/2 and -ln(2 (1 - u)) above
    q = inference.laplace_mixture_quantiles(np.array([1.3]), 20.0, [0.025, 0.5, 0.975])
    assert q == pytest.approx([1.3 + 20 * math.log(0.05), 1.3, 1.3 - 20 * math.log(0.05)], abs=1e-9)
    # a mixture: against a million draws of S + Laplace(b)
    rng = np.random.default_rng(0)
    centres = rng.normal(1.3, 3.0, 40)
    draws = rng.choice(centres, 1_000_000) + rng.laplace(0.0, 5.0, 1_000_000)
    exact = inference.laplace_mixture_quantiles(centres, 5.0, [0.025, 0.3, 0.975])
    assert exact == pytest.approx(np.quantile(draws, [0.025, 0.3, 0.975]), abs=0.1)


@pytest.mark.parametrize("name", ["laplace", "saa"])
def test_additive_noise_is_the_noise_the_baseline_adds(name):
    # at n = 200 sample and aggregate has one block, so both statistics are the clipped MLE: release - statistic is
    # the mechanism's Laplace noise, whose mean absolute value is its scale b
    s = _sample()
    mech = make_mechanism(name, 1.0, s.horizon)
    est = mech.compute_many(s, SimulationNoise(3), 40_000)
    p, lam = clipped_mle(s, mech.gamma)
    b_p, b_l = inference.additive_noise(mech, s.n)
    assert b_p == b_l == pytest.approx(20.0)
    assert np.mean(np.abs(est.shape - p)) == pytest.approx(b_p, rel=0.03)
    assert np.mean(np.abs(est.scale_normalised - lam)) == pytest.approx(b_l, rel=0.03)
    assert inference.additive_noise(make_mechanism("saa", 1.0, s.horizon), 2000) == pytest.approx((5.0, 5.0))
    assert inference.additive_noise(make_mechanism("lsp-tll", 1.0, s.horizon), 200) is None


def test_laplace_baseline_interval_holds_the_truth_for_every_release_its_region_accepts():
    # Laplace baseline, n = 200, epsilon 1: the release is the clipped MLE (about 1.3) plus Laplace(20) noise. The true
    # shape's acceptance region is [1.3 + 20 ln(2 t_lo), 1.3 - 20 ln(2 t_hi)] (tails of boundary_tails, about -84 to
    # 50). Every release inside it must get an interval holding 1.3: that is what makes the coverage 95%. Reading
    # each candidate's region off 400 simulated releases (the old way) missed here: the 2.5% quantile of 400 draws
    # of Laplace(20) is uncertain by about 6, so some candidate's noisy region rejected a release its true region
    # holds and the interval stopped short (misses at releases -55 and -51).
    h = WeibullTruth().censoring_limit
    mech = make_mechanism("laplace", 1.0, h)
    t_lo, t_hi = inference.boundary_tails(1.3, 20.0, mech.gamma, 0.05)
    lo, hi = 1.3 + 20 * math.log(2 * t_lo), 1.3 - 20 * math.log(2 * t_hi)
    assert -90 < lo < -80 and 45 < hi < 55
    for x in np.linspace(lo + 2.0, hi - 2.0, 25):
        est = WeibullEstimates("laplace", np.array([x]), np.array([0.33]), h)
        inf = weibull_intervals(mech, est, 200, 0.3)
        assert inf.shape.lower <= 1.3 <= inf.shape.upper, x
    # a release far outside (0, gamma] is still typical for some shape: an interval inside (0, gamma], no widening
    for x, side in ((200.0, "high"), (-120.0, "low")):
        inf = weibull_intervals(mech, WeibullEstimates("laplace", np.array([x]), np.array([0.33]), h), 200, 0.3)
        assert 0.0 <= inf.shape.lower < inf.shape.upper <= mech.gamma
        assert (inf.shape.lower > 5.0) if side == "high" else (inf.shape.upper < 5.0)
        assert not any("unusual" in w for w in inf.warnings)


def test_boundary_tails_are_central_away_from_the_ends_and_sum_to_alpha():
    for b in (0.1, 1.0, 20.0):
        for p in (0.01, 1.3, 5.0, 9.9):
            lo, hi = inference.boundary_tails(p, b, 10.0, 0.05)
            assert lo + hi == pytest.approx(0.05)
    assert inference.boundary_tails(5.0, 0.1, 10.0, 0.05) == pytest.approx((0.025, 0.025))
    assert inference.boundary_tails(1e-6, 20.0, 10.0, 0.05)[0] < 1e-8
    assert inference.boundary_tails(10.0 - 1e-6, 20.0, 10.0, 0.05)[1] < 1e-8


def test_baseline_scale_interval_stays_inside_its_range_and_holds_the_truth_its_region_accepts():
    # the scale of the Laplace baseline (n = 200, epsilon 1): release = clipped MLE (about 0.33) + Laplace(20). Inverted
    # over (0, gamma] with the tails of boundary_tails: never [0, 0] (a release far below 0 was given that before) and
    # never beyond gamma, and every release inside the true scale's region gets an interval holding it
    h = WeibullTruth().censoring_limit
    mech = make_mechanism("laplace", 1.0, h)
    truth = WeibullTruth().scale / h
    t_lo, t_hi = inference.boundary_tails(truth, 20.0, mech.gamma, 0.05)
    lo, hi = truth + 20 * math.log(2 * t_lo), truth - 20 * math.log(2 * t_hi)
    for x in np.linspace(lo + 2.0, hi - 2.0, 9):
        inf = weibull_intervals(mech, WeibullEstimates("laplace", np.array([1.0]), np.array([x]), h), 200, 0.3)
        assert inf.scale_normalised.lower <= truth <= inf.scale_normalised.upper, x
    for x in (-115.0, 103.0):
        inf = weibull_intervals(mech, WeibullEstimates("laplace", np.array([1.0]), np.array([x]), h), 200, 0.3)
        assert 0.0 <= inf.scale_normalised.lower < inf.scale_normalised.upper <= mech.gamma
        assert not inf.scale_normalised.lower <= truth <= inf.scale_normalised.upper  # outside the truth's region


def test_lsp_tll_simulates_more_cohorts_when_the_sampling_error_dominates():
    h = WeibullTruth().censoring_limit
    assert [inference.cohorts_for(make_mechanism("lsp-tll", e, h), 2000) for e in (0.5, 1.0, 2.0)] == [8, 12, 24]
    assert [inference.cohorts_for(make_mechanism("lsp-tll", e, h), 200) for e in (0.5, 1.0, 2.0)] == [8, 8, 8]
    assert inference.cohorts_for(make_mechanism("lsp-tll", 2.0, h), 5000) == inference.MAX_COHORTS
    # the record-law route above 5,000 subjects draws a fresh sampling error for every simulated release
    assert inference.cohorts_for(make_mechanism("lsp-tll", 2.0, h), 200_000) == inference.COHORTS
    assert inference.cohorts_for(make_mechanism("saa", 2.0, h), 2000) == inference.COHORTS


def test_scale_ranges_give_a_clamped_tail_to_the_other_tail():
    """A candidate scale that clamps 10% of its TLL releases to the floor: its range for an unclamped release keeps the
    clump and cuts 5% from the top, so it holds 95% of the releases (a central range would hold 97.5%); a candidate
    that never clamps keeps the central range."""
    rng = np.random.default_rng(3)
    body = rng.lognormal(-1.0, 0.3, size=(2, 20_000))
    sims = body.copy()
    sims[0, :2_000] = 1e-3  # 10% clamped
    lo, hi = inference.clamp_aware_ranges(sims, np.array([0.1, 0.0]), 0.95)
    held = np.mean((sims >= lo[:, None]) & (sims <= hi[:, None]), axis=1)
    assert held[0] == pytest.approx(0.95, abs=0.002)
    assert held[1] == pytest.approx(0.95, abs=0.002)
    central = np.quantile(sims[0], [0.025, 0.975])
    assert np.mean((sims[0] >= central[0]) & (sims[0] <= central[1])) == pytest.approx(0.975, abs=0.002)
    assert lo[1] == pytest.approx(np.quantile(sims[1], 0.025)) and hi[1] == pytest.approx(np.quantile(sims[1], 0.975))


def test_a_release_no_candidate_makes_typical_gets_the_candidates_of_a_wider_range():
    """pbc (418 subjects) at epsilon 0.5: LSP released 0.920, which no candidate shape's central 95% range holds. The
    interval was [0, 0.920] (it read as 'the hazard falls' and left out the MLE, 1.079); now it holds every candidate
    whose central 99.5% range of the same simulated releases holds the release, and says it is unusual."""
    from dpsurv_core.weibull.inference import release_intervals
    from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS

    iv = release_intervals("lsp-tll", 0.5, 0.9199050348640163, 1.1010561790153957, 418, 0.6, 4800.0, OMEGA, GAMMA,
                           RUNGS)
    assert iv["shape"]["lower"] < 1.079 < iv["shape"]["upper"]
    assert any("unusual for every true shape" in w for w in iv["warnings"])
    assert any("includes 1" in w for w in iv["warnings"])
