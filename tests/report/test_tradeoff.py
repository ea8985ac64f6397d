"""The trade-off core: utility against epsilon from seeded simulations, with real values on lung."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from lifelines import KaplanMeierFitter
from lifelines.statistics import logrank_test

from dpsurv_core import tradeoff
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.result import context, exact_counts, tile_trials
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, GROUP_LABEL, SUBJECT, LedgerStore
from dpsurv_core.regression.mechanisms import build_mechanism, mre_study
from dpsurv_core.regression.model import fit_nonprivate
from dpsurv_core.regression.person_period import person_period
from dpsurv_core.weibull.mechanisms import mdae_study
from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle


@pytest.fixture(scope="module")
def lung():
    return load_bundled("lung", group="sex", covariates=("age", "sex"))


@pytest.fixture(scope="module")
def public(lung):
    return PublicParameters.derive(lung, horizon=1100.0)


def values(result: tradeoff.TradeoffResult, mechanism: str, metric: str) -> pd.Series:
    t = result.table
    return t[(t.mechanism == mechanism) & (t.metric == metric)].set_index("epsilon")["value"]


def lifelines_km(cohort, label, times):
    keep = cohort.group == label
    km = KaplanMeierFitter().fit(cohort.time[keep], cohort.event[keep])
    return km.survival_function_at_times(times).to_numpy()


def test_epsilon_grid_is_log_spaced():
    g = tradeoff.epsilon_grid()
    assert g[0] == 0.05 and g[-1] == 10.0 and g.size == 10
    ratios = g[1:] / g[:-1]
    assert np.allclose(ratios, (10 / 0.05) ** (1 / 9), rtol=0.01)
    with pytest.raises(ParameterError):
        tradeoff.epsilon_grid(0.0, 10.0)


def test_rmse_falls_as_epsilon_grows_for_laplace_counts(lung, public):
    eps = [0.05, 0.1, 0.3, 1.0, 3.0, 10.0]
    r = tradeoff.tradeoff("curves", lung, public, ["laplace-counts"], eps, trials=200, seed=3, by_group=False)
    v = values(r, "laplace-counts", "rmse").to_numpy()
    assert np.all(v[1:] <= v[:-1] * 1.05), v  # decreasing, with a small tolerance for simulation noise
    assert v[-1] < v[0] / 10
    # the band is a real 10%-90% range of the trials, around the median
    t = r.table.set_index("epsilon")
    assert np.all(t["lower"] <= t["median"]) and np.all(t["median"] <= t["upper"])
    assert np.all(t["upper"] - t["lower"] > 0)


def test_rmse_at_huge_epsilon_is_the_binning_error_only(lung, public):
    r = tradeoff.tradeoff("curves", lung, public, ["laplace-counts"], [1e6], trials=20, seed=1)
    floor = r.reference["rmse"]
    # the binning error, computed independently: life-table KM of the exact counts on the public grid vs lifelines
    binned = estimate(tile_trials(exact_counts(lung, public.grid, public), 1), actuarial=0.5).survival[0]
    ref = np.stack([lifelines_km(lung, g, public.grid.points) for g in ("1", "2")])
    expected = np.sqrt(np.mean((binned - ref) ** 2))
    assert floor == pytest.approx(expected, rel=1e-9)
    assert 0.0005 < floor < 0.01  # 20 bins over 1100 days, life-table rule: a fraction of a percentage point
    row = r.table.iloc[0]
    assert row["value"] == pytest.approx(floor, abs=1e-4)
    assert row["upper"] == pytest.approx(floor, abs=1e-4)


def test_flips_become_rarer_as_epsilon_grows(lung, public):
    r = tradeoff.tradeoff("logrank", lung, public, ["laplace-counts", "adaptive-km"], [0.1, 0.5, 2.0, 10.0],
                          trials=200, seed=5)
    for m in ("laplace-counts", "adaptive-km"):
        v = values(r, m, "flip_rate")
        assert v[10.0] <= 0.02 and v[10.0] < v[0.5] and v[2.0] <= v[0.1] + 0.05, v
        assert v.between(0, 1).all()
    assert r.reference["flip_rate"] == 0.0  # the exact test on the public grid tells the same story
    t = r.table
    assert (t.lower <= t.value).all() and (t.value <= t.upper).all()


def test_reference_values_are_the_nonprivate_analysis(lung, public):
    ctx = tradeoff.prepare("curves", lung, public)
    pts = public.grid.points
    for g in ("1", "2"):
        mine = np.array([ctx.reference_values[f"survival at {t:g} ({g})"] for t in pts])
        assert np.allclose(mine, lifelines_km(lung, g, pts), atol=1e-12)

    ctx = tradeoff.prepare("logrank", lung, public)
    a, b = lung.group == "1", lung.group == "2"
    lr = logrank_test(lung.time[a], lung.time[b], lung.event[a], lung.event[b])
    assert ctx.reference_values["p 1 vs 2"] == pytest.approx(lr.p_value, rel=1e-9)
    assert ctx.reference_values["chi2 1 vs 2"] == pytest.approx(lr.test_statistic, rel=1e-9)

    ctx = tradeoff.prepare("weibull", lung, public)
    mle = weibull_mle(sample_from_cohort(lung, 1100.0))
    assert ctx.reference_values["shape"] == pytest.approx(mle.shape, rel=1e-12)
    assert ctx.reference_values["scale"] == pytest.approx(mle.scale, rel=1e-12)
    assert ctx.reference == {"mdae_shape": 0.0, "mdae_scale": 0.0}

    ctx = tradeoff.prepare("regression", lung, public, covariates=("age", "sex"))
    fit = fit_nonprivate(person_period(lung, ("age", "sex"), public=public), 0.0)
    for k, v in fit.coefficients.items():
        assert ctx.reference_values[f"coefficient {k}"] == pytest.approx(v, rel=1e-8)


def test_progress_reaches_one(lung, public):
    calls = []
    tradeoff.tradeoff("curves", lung, public, ["laplace-counts", "time-indexed"], [0.5, 1.0, 2.0], trials=10,
                      seed=0, progress=lambda f, msg: calls.append((f, msg)))
    fractions = [f for f, _ in calls]
    assert len(calls) == 6 and fractions[-1] == pytest.approx(1.0)
    assert all(b >= a for a, b in zip(fractions, fractions[1:], strict=False))
    assert "time-indexed at epsilon 2" in calls[-1][1]


def test_results_are_reproducible_with_a_seed(lung, public):
    run = lambda seed, mechs: tradeoff.tradeoff("curves", lung, public, mechs, [0.2, 2.0], trials=50,  # noqa: E731
                                                seed=seed).table
    a, b = run(11, ["laplace-counts", "rrr"]), run(11, ["laplace-counts", "rrr"])
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a["value"], run(12, ["laplace-counts", "rrr"])["value"])
    # a cell does not depend on which other cells were run (the page caches cells one by one)
    alone = run(11, ["rrr"])
    pd.testing.assert_frame_equal(alone.reset_index(drop=True), a[a.mechanism == "rrr"].reset_index(drop=True))


def test_what_each_epsilon_protects(lung, public):
    r = tradeoff.tradeoff("curves", lung, public, None, [1.0], trials=20, seed=0)
    assert {"laplace-counts", "time-indexed", "adaptive-km", "rrr", "rrr-debiased"} <= set(r.table.mechanism)
    # by default every epsilon mechanism; disclosure-control methods (no epsilon) only on request
    assert set(r.table.mechanism) == set(tradeoff.defaults(tradeoff.CURVE_MECHANISMS))
    assert not any(tradeoff.no_epsilon(m) for m in r.table.mechanism)
    prot = dict(zip(r.table.mechanism, r.table.protects))
    assert prot["rrr"] == prot["rrr-debiased"] == GROUP_LABEL and prot["laplace-counts"] == SUBJECT
    # de-biasing undoes the pull of the reported groups towards each other at a small epsilon on average? It is
    # unbiased, so at a large epsilon both match the binning error
    big = tradeoff.tradeoff("curves", lung, public, ["rrr", "rrr-debiased"], [50.0], trials=20, seed=0)
    assert np.allclose(big.table["value"], big.reference["rmse"], atol=1e-9)


def test_weibull_matches_the_mdae_study_helper(lung, public):
    r = tradeoff.tradeoff("weibull", lung, public, ["lsp-tll", "laplace"], [0.5, 4.0], trials=100, seed=7)
    sample = sample_from_cohort(lung, 1100.0)
    for m in ("lsp-tll", "laplace"):
        for eps in (0.5, 4.0):
            ref = mdae_study(sample, [eps], 100, tradeoff.cell_seed(7, "weibull", m, eps), (m,))[0]
            assert values(r, m, "mdae_shape")[eps] == pytest.approx(ref["mdae_shape"], rel=1e-12)
            assert values(r, m, "mdae_scale")[eps] == pytest.approx(ref["mdae_scale"], rel=1e-12)
    lsp = values(r, "lsp-tll", "mdae_shape")
    assert lsp[4.0] < lsp[0.5] and lsp[4.0] < values(r, "laplace", "mdae_shape")[4.0]


@pytest.mark.slow
def test_regression_mre(lung, public):
    r = tradeoff.tradeoff("regression", lung, public, ["output", "objective"], [0.5, 50.0], trials=40, seed=2,
                          covariates=("age", "sex"))
    pp = person_period(lung, ("age", "sex"), public=public)
    for eps in (0.5, 50.0):
        ref = mre_study(pp, [eps], 0.01, 40, tradeoff.cell_seed(2, "regression", "output", eps), ("output",))[0]
        assert values(r, "output", "mre")[eps] == pytest.approx(ref["mre"], rel=1e-10)
    for m in ("output", "objective"):
        v = values(r, m, "mre")
        assert v[50.0] < v[0.5]
    t = r.table
    assert (t["mean"] == t["value"]).all() and (t.guarantee == "exact").all()
    ctx = tradeoff.prepare("regression", lung, public, covariates=("age", "sex"))
    switch = ctx.settings["objective_switch"]
    assert switch == pytest.approx(2 * build_mechanism("objective", 1.0, pp, lam=0.01).jacobian_log_bound, rel=1e-12)
    # below the switch the extra ridge is on and eps' = eps / 2; above it no ridge and eps' >= eps / 2
    below, above = build_mechanism("objective", 0.9 * switch, pp, lam=0.01), build_mechanism("objective", 1.1 * switch, pp, lam=0.01)
    assert below.extra_ridge > 0 and below.epsilon_prime == pytest.approx(0.45 * switch)
    assert above.extra_ridge == 0 and above.epsilon_prime >= 0.55 * switch


def test_psgld_is_labelled_approximate(lung, public):
    ctx = tradeoff.prepare("regression", lung, public, covariates=("age",), psgld={"epochs": 3, "burn_in": 1})
    inner = []
    rows = tradeoff.evaluate(ctx, "psgld", 2.0, 4, 0, progress=inner.append)
    assert rows[0]["guarantee"] == APPROXIMATE_MCMC and np.isfinite(rows[0]["value"])
    assert inner[-1] == pytest.approx(1.0)


def test_user_errors_are_sentences(lung, public):
    nogroup = load_bundled("lung")
    cases = [
        lambda: tradeoff.prepare("survival", lung, public),
        lambda: tradeoff.prepare("logrank", nogroup, PublicParameters.derive(nogroup, horizon=1100.0)),
        lambda: tradeoff.prepare("regression", lung, public),
        lambda: tradeoff.tradeoff("curves", lung, public, ["laplace-counts"], [0.0], trials=5),
        lambda: tradeoff.tradeoff("curves", lung, public, ["laplace-counts"], [1.0], trials=0),
        lambda: tradeoff.tradeoff("curves", nogroup, PublicParameters.derive(nogroup, horizon=1100.0), ["rrr"], [1.0],
                                  trials=5),
    ]
    for case in cases:
        with pytest.raises(ParameterError) as err:
            case()
        msg = str(err.value)
        assert msg.endswith(".") and "\n" not in msg and len(msg) > 30


def test_applicable_mechanisms(lung, public):
    assert tradeoff.applicable("curves", lung, public) == list(tradeoff.CURVE_MECHANISMS)
    assert "rrr" not in tradeoff.applicable("curves", lung, public, by_group=False)
    assert tradeoff.applicable("logrank", lung, public) == list(tradeoff.TEST_MECHANISMS)
    assert tradeoff.applicable("regression", lung, public) == []
    assert tradeoff.applicable("regression", lung, public, ("age",)) == ["output", "objective", "psgld"]


def test_default_page_run_covers_every_mechanism_and_epsilon(lung, public):
    """The page's default run (its speed target is in benchmarks/timings.py)."""
    r = tradeoff.tradeoff("curves", lung, public, trials=200, seed=2024)
    assert len(r.table) == len(tradeoff.defaults(tradeoff.CURVE_MECHANISMS)) * 10 and (r.table.trials == 200).all()


def test_mechanisms_names_and_factories_come_from_the_catalogue(lung, public):
    for analysis, command in (("curves", "km"), ("logrank", "logrank"), ("weibull", "weibull"),
                              ("regression", "regression")):
        family = tradeoff.FAMILY[analysis]
        studied = tradeoff.mechanisms(analysis)
        assert list(dict.fromkeys(tradeoff.base(m) for m in studied)) == catalogue.ids(family, command, private=True)
        for m in studied:
            assert tradeoff.label(m, analysis).startswith(catalogue.get(family, tradeoff.base(m)).name)
    assert tradeoff.label("rrr") != tradeoff.label("rrr-debiased")  # the two readings are told apart
    assert tradeoff.defaults(tradeoff.REGRESSION_MECHANISMS) == ["output", "objective"]  # pSGLD on request only
    with pytest.raises(ParameterError):
        tradeoff.entry("no-such-mechanism")
    # a cell's mechanism is the catalogue's: the cost a simulated cell reports is the factory's cost
    ctx = tradeoff.prepare("curves", lung, public)
    row = tradeoff.evaluate(ctx, "time-indexed", 2.0, 5, 0)[0]
    assert row["protects"] == catalogue.get(catalogue.CURVES, "time-indexed").build(
        2.0, **context(lung, public)).cost.protects


def test_simulations_never_touch_the_ledger(lung, public):
    tradeoff.tradeoff("curves", lung, public, ["laplace-counts", "rrr"], [1.0], trials=5, seed=0)
    tradeoff.tradeoff("weibull", lung, public, ["lsp-tll"], [1.0], trials=5, seed=0)
    assert LedgerStore().records() == []


def test_flip_chart_compares_like_with_like(lung, public):
    """The non-private reference is the exact test on the same public grid (0% flips); the private flips use the
    calibrated test, so with the noise switched almost off they vanish, and at a small epsilon they are failures to
    detect, not false alarms."""
    ctx = tradeoff.prepare("logrank", lung, public)
    assert ctx.reference["flip_rate"] == 0.0 and ctx.reference_label == "exact test on the same public grid"
    assert ctx.reference_values["p on the public grid 1 vs 2"] < 0.05  # lung by sex: significant on the grid
    for m in ("laplace-counts", "adaptive-km", "rrr-debiased"):
        assert tradeoff.evaluate(ctx, m, 50.0, 40, seed=2)[0]["value"] <= 0.05, m
    # at a small epsilon the calibrated test seldom rejects: nearly every release flips to 'not significant'
    small = tradeoff.evaluate(ctx, "laplace-counts", 0.1, 60, seed=2)[0]["value"]
    assert small >= 0.8
