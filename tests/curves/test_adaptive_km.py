"""adaptive-km: exactness at epsilon = inf, the budget split, per-part sensitivity on neighbouring
data sets, a distinguishing test, curve properties, and a fast version of the lung benchmark."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from lifelines import AalenJohansenFitter, KaplanMeierFitter
from lifelines.statistics import logrank_test

from dpsurv_core.audit.attack import clopper_pearson, laplace_score
from dpsurv_core.curves.adaptive_km import AdaptiveKM, bands, discrete_laplace_variance, merge_bins
from dpsurv_core.curves.bootstrap import monotone_band, widen_between
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.life_table import uniform_censoring_drop
from dpsurv_core.curves.logrank import overall
from dpsurv_core.curves.result import CurveResult, NonPrivate, event_times_grid, exact_counts
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise

INF = math.inf


# ---- exactness --------------------------------------------------------------------------------
@pytest.mark.parametrize("group", [None, "sex"])
def test_epsilon_inf_event_times_equals_lifelines(group):
    cohort = load_bundled("lung", group=group)
    public = PublicParameters.derive(cohort, grid=event_times_grid(cohort))
    rel = AdaptiveKM(INF).compute(cohort, public, SimulationNoise(0), trials=2)
    t = public.grid.points
    frames = [("all", np.ones(cohort.n, bool))] if group is None else [(g, cohort.group == g) for g in cohort.groups]
    assert rel.curves.groups == tuple(g for g, _ in frames)
    for gi, (_, mask) in enumerate(frames):
        kmf = KaplanMeierFitter().fit(cohort.time[mask], cohort.event[mask])
        expected = kmf.survival_function_at_times(t).to_numpy()
        ci = kmf.confidence_interval_survival_function_
        ci = ci.reindex(ci.index.union(t)).ffill().loc[t].to_numpy()
        for r in range(2):
            assert np.max(np.abs(rel.curves.survival[r, gi] - expected)) < 1e-12
            assert np.max(np.abs(rel.curves.lower[r, gi] - ci[:, 0])) < 1e-10
            assert np.max(np.abs(rel.curves.upper[r, gi] - ci[:, 1])) < 1e-10
    # no noise, no selection: the released counts are the exact counts
    exact = exact_counts(cohort, public.grid, public)
    np.testing.assert_array_equal(rel.counts.events[0], exact.events)
    np.testing.assert_array_equal(rel.counts.censored[0], exact.censored)
    np.testing.assert_array_equal(rel.counts.n[0], exact.n)
    assert rel.extra["kept"].all()
    if group == "sex":  # log-rank from the released counts: lifelines' value (10.3, seed-003 Table 3)
        ref = logrank_test(cohort.time[cohort.group == "1"], cohort.time[cohort.group == "2"],
                           cohort.event[cohort.group == "1"], cohort.event[cohort.group == "2"])
        assert overall(rel.counts).statistic[0] == pytest.approx(ref.test_statistic, rel=1e-9)
        assert ref.test_statistic == pytest.approx(10.33, abs=0.01)


def test_epsilon_inf_competing_risks_equals_aalen_johansen():
    cohort = load_bundled("pbc", competing=True)
    public = PublicParameters.derive(cohort, grid=event_times_grid(cohort, competing=True))
    rel = AdaptiveKM(INF).compute(cohort, public, SimulationNoise(0), competing=True)
    t = public.grid.points
    for k, label in enumerate(cohort.event_type_labels):
        ajf = AalenJohansenFitter(calculate_variance=False).fit(cohort.time, cohort.event_type, event_of_interest=k + 1)
        cif = ajf.cumulative_density_.iloc[:, 0]
        expected = cif.reindex(cif.index.union(t)).ffill().loc[t].to_numpy()
        assert np.max(np.abs(rel.curves.cumulative_incidence[0, 0, k] - expected)) < 1e-10, label


def test_registered_and_release_shape():
    from dpsurv_core.privacy import catalogue

    assert catalogue.get(catalogue.CURVES, "adaptive-km").mechanism_class() is AdaptiveKM
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    rel = AdaptiveKM(1.0).compute(cohort, public, SimulationNoise(1), trials=7)
    assert isinstance(rel, CurveResult) and rel.mechanism == "adaptive-km" and rel.trials == 7
    assert rel.curves.survival.shape == (7, 1, 20) and rel.counts.events.shape == (7, 1, 1, 20)
    np.testing.assert_array_equal(rel.curves.time, public.grid.points)
    assert any(d.parameter == "bins" and d.dp for d in rel.disclosures)
    # its plug-in world offsets the bootstrap draws by itself: the RMST's error bar is their spread alone
    assert rel.curves.rmst_draws is not None and not rel.curves.draws_offset_is_error


def test_release_path_uses_opendp_samplers():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    rel = AdaptiveKM(1.0).compute(cohort, public, ReleaseNoise())
    assert rel.noise.startswith("release") and rel.trials == 1
    assert np.all(np.diff(rel.curves.survival[0, 0]) <= 1e-12)


# ---- the budget ---------------------------------------------------------------------------------
@pytest.mark.parametrize("eps,share", [(1.0, 0.2), (0.3, 0.1), (4.0, 0.5), (2.0, 0.0), (0.7, 0.35)])
def test_charged_epsilon_is_the_sum_of_the_parts(eps, share):
    m = AdaptiveKM(eps, selection_share=share)
    assert m.cost.epsilon == m.selection_epsilon + m.counts_epsilon
    assert m.cost.epsilon == pytest.approx(eps, rel=1e-15)
    assert m.selection_epsilon == pytest.approx(share * eps)
    assert m.cost.neighbouring == ADD_REMOVE and m.cost.protects == SUBJECT
    assert m.selection_scale == (pytest.approx(1 / (share * eps)) if share else 0.0)
    assert m.counts_scale == pytest.approx(1 / ((1 - share) * eps))
    p = m.parameters()
    assert p["selection_epsilon"] + p["counts_epsilon"] == m.cost.epsilon
    assert "sequential composition" in p["split"]


def test_default_share_is_a_rule_on_epsilon_only():
    for eps, share in [(0.25, 0.2), (1.0, 0.2), (2.0, 0.2), (2.5, 0.0), (4.0, 0.0)]:
        m = AdaptiveKM(eps)
        assert m.selection_share == share and m.parameters()["selection_share_rule"] == "auto"
        assert m.cost.epsilon == pytest.approx(eps) and m.selects == (share > 0)
    assert AdaptiveKM(4.0, selection_share=0.3).selection_epsilon == pytest.approx(1.2)


def test_rows_per_subject_multiplies_the_scales():
    m = AdaptiveKM(1.0, rows_per_subject=2)
    assert m.sensitivity == 2 and m.counts_scale == pytest.approx(2 / 0.8) and m.selection_scale == pytest.approx(10)
    assert m.cost.epsilon == pytest.approx(1.0)


def test_epsilon_inf_charges_inf_and_selects_nothing():
    m = AdaptiveKM(INF)
    assert m.cost.epsilon == INF and m.selection_epsilon == 0 and not m.selects and m.counts_scale == 0


@pytest.mark.parametrize("kwargs", [{"epsilon": 0}, {"epsilon": -1}, {"epsilon": 1, "selection_share": 1.0},
                                    {"epsilon": 1, "selection_share": -0.1}, {"epsilon": 1, "events_per_bin": -1},
                                    {"epsilon": 1, "rows_per_subject": 0}])
def test_bad_parameters(kwargs):
    with pytest.raises(ParameterError):
        AdaptiveKM(**kwargs)


# ---- sensitivity of each released part on neighbouring data sets ----------------------------------
@st.composite
def cohorts(draw, min_size=1, max_size=40, groups=True):
    n = draw(st.integers(min_size, max_size))
    times = np.array(draw(st.lists(st.integers(1, 60), min_size=n, max_size=n)), float)
    events = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    group = None
    if groups and draw(st.booleans()):
        group = np.array(draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n)), dtype=object)
    return Cohort(times, events, group)


def _public(cohort, horizon, bins, cats=("a", "b", "c")):
    return PublicParameters(horizon, TimeGrid.equal(0, horizon, bins), group_categories=cats if cohort.group is not None else ())


@given(cohorts(min_size=2), st.integers(0, 10**6), st.integers(1, 12), st.sampled_from([20.0, 45.0, 80.0]),
       st.integers(0, 2**32 - 1), st.sampled_from([("a", "b", "c"), ("a", "b")]))
def test_sensitivity_of_each_part_at_most_m(cohort, who, bins, horizon, seed, cats):
    i = who % cohort.n
    neighbour = cohort.subset(np.arange(cohort.n) != i)
    public = _public(cohort, horizon, bins, cats)
    grid = public.grid
    a, b = exact_counts(cohort, grid, public), exact_counts(neighbour, grid, public)
    m = AdaptiveKM(1.0)
    d1 = np.abs(m.selection_histogram(a) - m.selection_histogram(b)).sum()
    assert d1 <= m.sensitivity
    kept = np.random.default_rng(seed).random((5, grid.bins)) < 0.5
    kept[:, -1] = True
    ha, hb = m.block_histogram(a, kept), m.block_histogram(b, kept)
    d2 = sum(np.abs(x - y).reshape(5, -1).sum(-1) for x, y in zip(ha, hb))
    assert np.all(d2 <= m.sensitivity)
    declared = cohort.group is None or cohort.group[i] in cats
    assert np.all(d2 == (1 if declared else 0))  # a subject of a declared group sits in exactly one cell


@given(cohorts(min_size=3, groups=False), st.integers(0, 10**6), st.integers(1, 10))
def test_sensitivity_with_two_rows_per_subject(cohort, who, bins):
    """A subject with m = 2 rows (rows i and i+1) moves each part by at most 2."""
    i = who % (cohort.n - 1)
    neighbour = cohort.subset(~np.isin(np.arange(cohort.n), [i, i + 1]))
    public = _public(cohort, 50.0, bins)
    a, b = exact_counts(cohort, public.grid, public), exact_counts(neighbour, public.grid, public)
    m = AdaptiveKM(1.0, rows_per_subject=2)
    assert np.abs(m.selection_histogram(a) - m.selection_histogram(b)).sum() <= 2
    kept = np.ones((1, bins), bool)
    d2 = sum(np.abs(x - y).sum() for x, y in zip(m.block_histogram(a, kept), m.block_histogram(b, kept)))
    assert d2 <= 2


def test_block_histogram_sums_public_bins():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    exact = exact_counts(cohort, public.grid, public)
    kept = np.zeros((1, 20), bool)
    kept[0, [4, 9, 19]] = True
    ev, ce, s = AdaptiveKM(1.0).block_histogram(exact, kept)
    d = exact.events_total[0]
    assert ev[0, 0, 0, :3].tolist() == [d[:5].sum(), d[5:10].sum(), d[10:].sum()]
    assert np.all(ev[0, ..., 3:] == 0) and np.all(ce[0, :, 3:] == 0)
    assert ce[0, 0, :3].sum() + ev[0].sum() + s[0, 0] == cohort.n


# ---- distinguishing test ---------------------------------------------------------------------------
def _conservative_bound(tp, n_in, fp, n_out):
    """Lower 95% confidence bound on epsilon from a test with tp / n_in true and fp / n_out false positives.

    An epsilon-DP mechanism has TPR <= e^eps FPR and (1 - FPR) <= e^eps (1 - TPR). Each ratio is bounded
    below with Clopper-Pearson bounds on the side that makes it smallest: ln(TPR_lo / FPR_hi) and
    ln((1 - FPR_hi) / (1 - TPR_lo)). (The second term of docs/mechanisms.md, ln((1 - FPR_lo) / (1 - TPR_hi)),
    takes the bounds on the optimistic side, so it can exceed the true epsilon of a correct mechanism:
    with a likelihood-ratio score on Laplace noise it reads 1.07 at epsilon 1 here.)
    """
    t_lo, t_hi = clopper_pearson(tp, n_in)
    f_lo, f_hi = clopper_pearson(fp, n_out)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = np.where((t_lo > 0) & (f_hi > 0), np.log(t_lo / np.where(f_hi > 0, f_hi, 1.0)), 0.0)
        b = np.where((f_hi < 1) & (t_lo < 1), np.log((1 - f_hi) / np.where(t_lo < 1, 1 - t_lo, 1.0)), 0.0)
    return np.maximum(np.maximum(a, b), 0.0)


def _empirical_epsilon(scores_in: np.ndarray, scores_out: np.ndarray) -> float:
    """Threshold fitted on the first half of each world's runs, bound measured on the second half."""
    ha, hb = scores_in.size // 2, scores_out.size // 2
    fit_a, test_a, fit_b, test_b = scores_in[:ha], scores_in[ha:], scores_out[:hb], scores_out[hb:]
    cands = np.unique(np.concatenate([fit_a, fit_b]))
    rate = lambda s, t: s.size - np.searchsorted(np.sort(s), t, side="left")  # noqa: E731
    thr = cands[np.argmax(_conservative_bound(rate(fit_a, cands), ha, rate(fit_b, cands), hb))]
    return float(_conservative_bound(rate(test_a, thr), test_a.size, rate(test_b, thr), test_b.size))


def _attack(mech: AdaptiveKM, runs: int = 6000) -> float:
    """D = lung vs D' = lung without its latest event; score = exact log-likelihood ratio of the two
    released cells that hold the target (part 1: its public bin; part 2: its merged bin, clamped)."""
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    target = int(np.argmax(np.where(cohort.event == 1, cohort.time, -1)))
    neighbour = cohort.subset(np.arange(cohort.n) != target)
    jt = int(np.searchsorted(public.grid.edges, cohort.time[target], side="left")) - 1
    exact_in, exact_out = (exact_counts(c, public.grid, public) for c in (cohort, neighbour))
    e_in = mech.selection_histogram(exact_in)[jt]

    def scores(world: Cohort, seed: int) -> np.ndarray:
        rel = mech.compute(world, public, SimulationNoise(seed), trials=runs)
        kept = rel.extra["kept"]
        rows, blk = np.arange(runs), (np.cumsum(kept, -1) - kept)[:, jt]
        mean_in = mech.block_histogram(exact_in, kept)[0][rows, 0, 0, blk]
        mean_out = mech.block_histogram(exact_out, kept)[0][rows, 0, 0, blk]
        x2 = rel.extra["block_events"][rows, 0, 0, blk]
        s2 = laplace_score(x2[:, None], mean_in[:, None], mean_out[:, None], mech.counts_scale)
        s1 = laplace_score(rel.extra["selection_counts"][:, jt, None], e_in, e_in - 1, mech.selection_scale)
        return s1 + s2

    return _empirical_epsilon(scores(cohort, 11), scores(neighbour, 12))


def test_distinguishing_attack_stays_below_the_charge():
    mech = AdaptiveKM(1.0, selection_share=0.4)
    eps_lo = _attack(mech)  # measured: 0.88
    assert eps_lo <= mech.cost.epsilon
    assert eps_lo > 0.5  # the attack has power


class _HalfNoise(AdaptiveKM):
    """A broken variant: part 2 with half the noise it needs (true epsilon 0.4 + 1.2 = 1.6, charged 1)."""

    @property
    def counts_scale(self) -> float:
        return super().counts_scale / 2


def test_distinguishing_attack_catches_too_little_noise():
    mech = _HalfNoise(1.0, selection_share=0.4)
    assert _attack(mech) > mech.cost.epsilon  # measured: 1.50


# ---- properties -----------------------------------------------------------------------------------
def _check_curves(rel: CurveResult) -> None:
    c = rel.curves
    tol = 1e-9
    assert np.all(np.isfinite(c.survival))
    assert np.all((c.survival >= -tol) & (c.survival <= 1 + tol))
    assert np.all(np.diff(c.survival, axis=-1) <= tol)
    assert np.all(c.lower <= c.survival + tol) and np.all(c.survival <= c.upper + tol)
    assert np.all(c.lower_linear <= c.survival + tol) and np.all(c.survival <= c.upper_linear + tol)
    assert np.all(np.diff(c.cumulative_hazard, axis=-1) >= -tol)
    assert np.all(c.at_risk >= -tol) and np.all(rel.counts.events >= 0) and np.all(rel.counts.censored >= 0)


@given(cohorts(), st.sampled_from([0.2, 1.0, 5.0, INF]), st.integers(1, 15), st.sampled_from([10.0, 61.0, 200.0]),
       st.sampled_from([0.0, 0.2, 0.5]), st.integers(0, 2**32 - 1))
def test_curve_properties(cohort, eps, bins, horizon, share, seed):
    public = _public(cohort, horizon, bins)
    rel = AdaptiveKM(eps, selection_share=share).compute(cohort, public, SimulationNoise(seed), trials=4)
    g = 1 if cohort.group is None else 3
    assert rel.curves.survival.shape == (4, g, bins)
    _check_curves(rel)


@pytest.mark.parametrize("case", ["all-censored", "single", "empty-bins", "ties", "all-die-at-once"])
@pytest.mark.parametrize("eps", [0.5, INF])
def test_edge_cases(case, eps):
    t = {"all-censored": [3.0, 5, 8, 8], "single": [7.0], "empty-bins": [1.0, 2, 2, 3],
         "ties": [4.0, 4, 4, 4, 9, 9, 9], "all-die-at-once": [5.0, 5, 5]}[case]
    d = {"all-censored": [0, 0, 0, 0], "single": [1], "empty-bins": [1, 0, 1, 1],
         "ties": [1, 0, 1, 1, 0, 1, 1], "all-die-at-once": [1, 1, 1]}[case]
    cohort = Cohort(np.array(t), np.array(d))
    public = _public(cohort, 100.0, 25)
    rel = AdaptiveKM(eps).compute(cohort, public, SimulationNoise(3), trials=50)
    _check_curves(rel)
    if math.isinf(eps):
        if case == "all-censored":
            assert np.all(rel.curves.survival == 1)
        if case == "all-die-at-once":
            assert np.all(rel.curves.survival[..., 1:] == 0) and np.all(rel.curves.survival[..., 0] == 1)


def test_curve_is_the_block_curve():
    """At the end of each merged bin the curve is prod (1 - q_B), q_B the life table's d_B / r*_B on a single public bin
    and its premise solved exactly on a merged one (:func:`uniform_censoring_drop`); inside, constant hazard in time."""
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    rel = AdaptiveKM(0.5).compute(cohort, public, SimulationNoise(5), trials=30)
    x = rel.extra
    assert (x["blocks"] < 20).any()  # some bins were merged
    ev, ce, s = x["block_events"][:, 0, 0], x["block_censored"][:, 0], x["beyond_grid"][:, 0]
    n = s + ev.sum(-1) + ce.sum(-1)
    r = n[:, None] - (np.cumsum(ev, -1) - ev) - np.cumsum(ce, -1) + 0.5 * ce
    h = np.where(r > 0, ev / np.where(r > 0, r, 1), 0)
    kept = x["kept"]
    widths = np.zeros((30, 20), int)
    for trial in range(30):
        ends = np.nonzero(kept[trial])[0]
        widths[trial, :ends.size] = np.diff(np.concatenate([[-1], ends]))
    h = np.where(widths > 1, uniform_censoring_drop(ev, ce, r + 0.5 * ce), h)
    surv_blocks = np.cumprod(1 - h, -1)
    for trial in range(30):
        ends = np.nonzero(kept[trial])[0]
        np.testing.assert_allclose(rel.curves.survival[trial, 0, ends], surv_blocks[trial, :ends.size], atol=1e-5)  # q near 1: counts stay >= 0
    # log S is linear in time inside a merged bin
    logs = np.log(np.maximum(rel.curves.survival[:, 0], 1e-300))
    prev = np.concatenate([np.zeros((30, 1)), logs[:, :-1]], -1)
    step = logs - prev
    blk = np.cumsum(kept, -1) - kept
    same = (blk[:, 1:] == blk[:, :-1]) & (rel.curves.survival[:, 0, 1:] > 1e-5)  # not where a bin takes nearly all
    np.testing.assert_allclose(step[:, 1:][same], step[:, :-1][same], atol=1e-12)


def test_merge_bins_rule():
    x = np.array([[1.0, 1.0, 3.0, -1.0, 5.0, 0.0], [9.0, 9.0, 9.0, 9.0, 9.0, 9.0]])
    kept = merge_bins(x, 2.0)
    assert kept[0].tolist() == [False, True, True, False, True, True]
    assert kept[1].all()
    assert merge_bins(np.zeros((2, 4)), 0.0).all()


def test_released_counts_drive_logrank():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    rel = AdaptiveKM(1.0).compute(cohort, public, SimulationNoise(2), trials=200)
    res = overall(rel.counts)
    assert res.statistic.shape == (200,) and np.all(np.isfinite(res.statistic))
    exact = overall(count(cohort, public.grid, ("1", "2"))).statistic
    assert abs(np.median(res.statistic) - exact) < 4


def test_bands_add_the_noise_variance():
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    reference = NonPrivate().compute(cohort, public).curves.survival[0]
    plain = AdaptiveKM(0.5, noise_in_bands=False).compute(cohort, public, SimulationNoise(8), trials=400)
    noisy = AdaptiveKM(0.5, band_method="delta").compute(cohort, public, SimulationNoise(8), trials=400)
    np.testing.assert_array_equal(plain.curves.survival, noisy.curves.survival)  # same draws, same curves
    # without the noise term the bands are Greenwood's on the released counts
    gw = estimate(plain.counts)
    np.testing.assert_array_equal(plain.curves.lower, gw.lower)
    np.testing.assert_array_equal(plain.curves.upper_linear, gw.upper_linear)
    lo, up, _, _ = bands(noisy.curves.survival, noisy.curves.greenwood + noisy.extra["noise_log_variance"], 0.05)
    # the band is that delta-method band made non-increasing and, inside merged bins, widened to the bin's ends
    known = np.broadcast_to(noisy.extra["kept"][:, None, :], lo.shape)
    np.testing.assert_array_equal(noisy.curves.lower, widen_between(*monotone_band(lo, up), known)[0])
    assert np.all(noisy.curves.lower <= lo + 1e-12) and np.all(noisy.curves.upper >= np.minimum.accumulate(up, -1) - 1e-12)
    # wider than Greenwood's on average (not pointwise: the noisy band is also cut back to never rise)
    assert np.mean(noisy.curves.upper - noisy.curves.lower) > np.mean(plain.curves.upper - plain.curves.lower)
    cover = lambda c: np.mean((c.lower <= reference + 1e-12) & (reference <= c.upper + 1e-12))  # noqa: E731
    assert cover(noisy.curves) > 0.9 and cover(plain.curves) < cover(noisy.curves) - 0.05  # measured 0.94 and 0.84
    boot = AdaptiveKM(0.5).compute(cohort, public, SimulationNoise(8), trials=100)  # the default: the bootstrap
    assert "parametric bootstrap" in boot.curves.interval_method
    assert cover(boot.curves) > 0.9


def test_discrete_laplace_variance():
    draws = SimulationNoise(1).discrete_laplace(2.5, 400_000)
    assert np.var(draws) == pytest.approx(discrete_laplace_variance(2.5), rel=0.02)
    assert discrete_laplace_variance(0.0) == 0.0


# ---- the benchmark, fast ------------------------------------------------------------------------------
def test_benchmark_ratio_at_epsilon_1_fast():
    from benchmarks.km_lung import MAX_RATIO, compare

    (row,) = compare(epsilons=(1.0,), runs=200, seed=7)
    assert row["ratio"] <= MAX_RATIO
    assert row["adaptive_rmse"] < 0.0356  # 0.75 x the measured laplace-counts median RMSE 0.0475


def test_noise_covariance_matches_the_spread_of_fresh_noise():
    """The delta method's covariance of S (noise only) against 2,000 redraws of the noise on the same merged bins:
    variances within 25% at the grid points where the curve is above 0.2, correlations of later points positive."""
    from dpsurv_core.curves.adaptive_km import derive_fine_counts
    from dpsurv_core.curves.kaplan_meier import estimate

    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    mech = AdaptiveKM(2.0)
    rel = mech.compute(cohort, public, SimulationNoise(4))
    x = rel.extra
    cov = rel.curves.noise_covariance[0, 0]
    rng = np.random.default_rng(0)
    kept, a = np.repeat(x["kept"], 2000, 0), x["actuarial"]
    valid = np.arange(20) < x["kept"].sum()
    sd = np.sqrt(mech.cell_variance)
    ev = np.maximum(x["block_events"] + rng.normal(0, sd, (2000, 1, 1, 20)) * valid, 0.0)
    ce = np.maximum(x["block_censored"] + rng.normal(0, sd, (2000, 1, 20)) * valid, 0.0)
    s = np.maximum(x["beyond_grid"] + rng.normal(0, sd, (2000, 1)), 0.0)
    sim = estimate(derive_fine_counts(rel.counts, kept, ev, ce, s, a)).survival[:, 0]
    inside = rel.curves.survival[0, 0] > 0.2
    ratio = np.diag(cov)[inside] / sim.var(0)[inside]
    assert np.all((ratio > 0.75) & (ratio < 1.25)), ratio
    assert cov.shape == (20, 20) and np.allclose(cov, cov.T) and cov[5, 10] > 0


def test_rmst_error_is_at_least_the_delta_methods():
    """adaptive-km's RMST interval: e = max(the draws' spread, sqrt(R's sampling variance + w' Cov w))."""
    from dataclasses import replace

    from scipy.special import ndtri

    from dpsurv_core.curves.intervals import rmst_interval, rmst_sampling_variance, rmst_weights

    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20, group_categories=("1", "2"))
    c = AdaptiveKM(0.5).compute(cohort, public, SimulationNoise(3)).curves
    value, lo, up = rmst_interval(c, 600.0, True)
    w = rmst_weights(c.time, 600.0, True)
    delta = np.sqrt(rmst_sampling_variance(c, 600.0, True, value) + np.einsum("i,gij,j->g", w, c.noise_covariance[0], w))
    spread = replace(c, survival=c.rmst_draws).rmst(600.0, True).std(axis=1, ddof=1)
    e = np.maximum(spread, delta)
    np.testing.assert_allclose(lo, value * np.exp(-ndtri(0.975) * e / value), rtol=1e-12)
    _, lo_draws, _ = rmst_interval(replace(c, noise_covariance=None), 600.0, True)
    assert np.all(lo <= lo_draws + 1e-12)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_number_at_risk_at_merged_bin_ends_is_n_minus_the_released_counts_before(eps):
    """The number-at-risk table reads counts spread over the public bins by width: at each merged bin's end it is the
    derived n minus every released event and censoring up to there (R's n.risk from the released block counts), not
    the curve's derived counts (which shift half a bin's censorings and run 1-2 subjects off)."""
    from dpsurv_core.curves.result import risk_counts
    from dpsurv_core.curves.summary import at_risk_at

    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    rel = AdaptiveKM(eps).compute(cohort, public, SimulationNoise(1))
    x = rel.extra
    kept = x["kept"][0]
    assert kept.sum() < 20  # some bins merged
    ev, ce, s = x["block_events"][0], x["block_censored"][0], x["beyond_grid"][0]
    n = s + ev.sum() + ce.sum()
    want = [float(n.sum()) - ev[..., :b + 1].sum() - ce[..., :b + 1].sum() for b in range(int(kept.sum()))]
    got = at_risk_at(risk_counts(rel), public.grid.edges[np.flatnonzero(kept) + 1])[0, 0]
    np.testing.assert_allclose(got, want, atol=1e-9)


def test_noise_covariance_is_computed_only_when_read():
    """The covariance is deferred (a band needs none), computed once, survives pickling (the app caches releases)
    and, cut to a horizon, equals the full covariance cut on both time axes."""
    import pickle

    from dpsurv_core.curves import adaptive_km

    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    calls = []
    real = adaptive_km.noise_covariance

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    adaptive_km.noise_covariance = counted
    try:
        rel = AdaptiveKM(1.0).compute(cohort, public, SimulationNoise(5))
        assert calls == []
        full = np.asarray(rel.curves.noise_covariance)
        np.asarray(rel.curves.noise_covariance)
        assert len(calls) == 1
    finally:
        adaptive_km.noise_covariance = real
    copy = pickle.loads(pickle.dumps(AdaptiveKM(1.0).compute(cohort, public, SimulationNoise(5)).curves))
    np.testing.assert_array_equal(np.asarray(copy.noise_covariance), full)
    cut = rel.curves.up_to(500.0)
    j = len(cut.time)
    assert j < 20
    np.testing.assert_array_equal(np.asarray(cut.noise_covariance), full[..., :j, :j])
    np.testing.assert_array_equal(np.asarray(copy.up_to(500.0).noise_covariance), full[..., :j, :j])
