"""Weibull model, non-private MLE vs lifelines, the mechanisms' exactness at epsilon = inf, edge cases, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from lifelines import WeibullFitter

from dpsurv_core.cli import main
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import nice_ceiling
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.privacy.ledger import ADD_REMOVE, SUBJECT
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.lsp import compute_ladder
from dpsurv_core.weibull.mechanisms import (
    LaplaceWeibull,
    LspTll,
    NonPrivateMLE,
    SampleAggregateWeibull,
    make_mechanism,
    tll,
)
from dpsurv_core.weibull.model import (
    WeibullSample,
    normalise,
    sample_from_cohort,
    scale_at,
    shape_root,
    survival_curve,
    weibull_mle,
)

LIFELINES_TIGHT = {"ftol": 1e-16, "gtol": 1e-12, "maxiter": 2000}


def _sample(name: str) -> WeibullSample:
    c = load_bundled(name)
    return sample_from_cohort(c, nice_ceiling(float(c.time.max())))


@pytest.fixture(scope="module")
def flchain() -> WeibullSample:
    return _sample("flchain")


@pytest.mark.parametrize("name", ["flchain", "lung", "veteran", "pbc", "ovarian", "gehan", "mgus2"])
def test_mle_matches_lifelines(name):
    s = _sample(name)
    fit = weibull_mle(s)
    wf = WeibullFitter().fit(s.t, s.d, fit_options=LIFELINES_TIGHT)
    assert fit.shape == pytest.approx(wf.rho_, rel=1e-6)
    assert fit.scale_normalised == pytest.approx(wf.lambda_, rel=1e-6)
    assert fit.scale == pytest.approx(wf.lambda_ * s.horizon, rel=1e-6)


def test_mle_solves_equations_4_and_5(flchain):
    fit = weibull_mle(flchain)
    t, d, p = flchain.t, flchain.d, fit.shape
    lhs = np.sum(t**p * np.log(t)) / np.sum(t**p)
    rhs = 1 / p + np.sum(d * np.log(t)) / d.sum()
    assert lhs == pytest.approx(rhs, abs=1e-12)
    assert fit.scale_normalised ** p == pytest.approx(np.sum(t**p) / d.sum(), rel=1e-12)
    assert fit.shape == pytest.approx(0.96160775, abs=1e-7)  # flchain with horizon 5300 days


def test_normalisation_clips_zero_and_beyond_horizon():
    t = normalise(np.array([0.0, 50.0, 100.0, 250.0]), 100.0, omega=6.0)
    np.testing.assert_allclose(t, [math.exp(-6), 0.5, 1.0, 1.0])
    with pytest.raises(ParameterError):
        normalise(np.array([1.0]), 0.0)


def test_follow_up_ends_at_the_horizon():
    """A horizon shorter than the follow-up censors the rest there: times clipped to it, their events censored, as
    lifelines fits the same data censored administratively at 500 days (and as the intervals simulate it)."""
    from lifelines import WeibullFitter

    c = load_bundled("lung")
    short = sample_from_cohort(c, 500.0)
    assert short.t.max() == 1.0 and short.n_events == int(np.sum(c.event[c.time <= 500.0]))
    assert short.n_events < c.n_events
    t = np.minimum(c.time / 500.0, 1.0).clip(math.exp(-6))
    d = np.where(c.time <= 500.0, c.event, 0)
    assert weibull_mle(short).shape == pytest.approx(weibull_mle(WeibullSample(t, d, 500.0)).shape, rel=1e-12)
    fit = WeibullFitter().fit(t, d)
    assert weibull_mle(short).shape == pytest.approx(fit.rho_, rel=1e-4)


def test_survival_curve():
    s = survival_curve(np.array([0.0, 2.0]), 1.5, 2.0)
    np.testing.assert_allclose(s, [1.0, math.exp(-1)])
    many = survival_curve(np.array([0.0, 2.0]), np.array([1.0, -1.0]), np.array([2.0, 2.0]))
    assert many.shape == (2, 2) and np.isnan(many[1]).all()


def test_no_events_is_a_clear_error():
    s = WeibullSample(np.array([0.2, 0.5, 0.9]), np.zeros(3), 1.0)
    with pytest.raises(DataError, match="no events"):
        weibull_mle(s)
    with pytest.raises(DataError, match="no events"):
        compute_ladder(s, 10)


def test_all_times_equal_error_for_mle_and_clamp_for_private():
    s = WeibullSample(np.full(20, 0.4), np.ones(20), 1.0)
    with pytest.raises(DataError, match="same"):
        weibull_mle(s)
    assert shape_root(s, upper=10.0) == 10.0  # missing root clamps to gamma
    est = LspTll(1.0, 1.0, rungs=30).compute_many(s, SimulationNoise(0), 50)
    assert np.all((est.shape >= 0) & (est.shape <= 10))


def test_zero_times_are_kept_at_exp_minus_omega():
    t = np.array([0.0, 0.0, 30.0, 60.0, 90.0, 120.0])
    s = WeibullSample(normalise(t, 120.0), np.array([1, 0, 1, 1, 0, 1]), 120.0)
    assert s.t.min() == pytest.approx(math.exp(-6))
    wf = WeibullFitter().fit(s.t, s.d, fit_options=LIFELINES_TIGHT)
    assert weibull_mle(s).shape == pytest.approx(wf.rho_, rel=1e-6)


def test_fewer_events_than_rungs_gives_floor_rungs():
    rng = np.random.default_rng(3)
    t = rng.uniform(0.05, 1.0, 40)
    d = np.zeros(40, dtype=int)
    d[:7] = 1
    lad = compute_ladder(WeibullSample(t, d, 1.0), rungs=50)
    assert np.all(lad.lower[7:] == 0.0) and np.all(lad.upper[7:] == 10.0)
    assert lad.lower[6] > 0 or lad.upper[6] < 10
    assert lad.lengths[7:].sum() == 0.0  # rungs past the floor are empty


@pytest.mark.parametrize("cls", [LspTll, LaplaceWeibull])
def test_epsilon_inf_returns_the_mle(cls, flchain):
    fit = weibull_mle(flchain)
    mech = cls(math.inf, flchain.horizon)
    est = mech.compute_many(flchain, SimulationNoise(1), 3)
    np.testing.assert_allclose(est.shape, fit.shape, rtol=1e-14)
    np.testing.assert_allclose(est.scale_normalised, fit.scale_normalised, rtol=1e-12)
    np.testing.assert_allclose(est.scale, fit.scale, rtol=1e-12)


def test_saa_without_noise_is_the_mle_whatever_the_blocks():
    """The blocks only bound one record's influence on the noisy average: with no noise the release is the fit on
    every record (flchain's 16 blocks averaged to shape 0.970 where the MLE is 0.962), while the intervals still
    simulate the block average the mechanism releases with noise."""
    for name, blocks in (("lung", 1), ("flchain", None)):
        s = _sample(name)
        fit = weibull_mle(s)
        mech = SampleAggregateWeibull(math.inf, s.horizon, blocks=blocks)
        est = mech.compute_many(s, SimulationNoise(2), 2)
        np.testing.assert_allclose(est.shape, fit.shape, rtol=1e-10)
        np.testing.assert_allclose(est.scale_normalised, fit.scale_normalised, rtol=1e-10)
    stat = mech.block_statistic(s, SimulationNoise(2), 2)
    assert abs(stat.shape[0] - fit.shape) > 1e-3


def test_tll_noise_off_returns_lambda_star(flchain):
    fit = weibull_mle(flchain)
    lam, clamped = tll(flchain, np.array([fit.shape]), math.inf, SimulationNoise(0))
    assert lam[0] == pytest.approx(fit.scale_normalised, rel=1e-13) and not clamped.any()
    assert scale_at(flchain, fit.shape) == pytest.approx(fit.scale_normalised, rel=1e-13)


def test_costs_are_computed_from_parameters():
    for name in ("lsp-tll", "laplace", "saa"):
        mech = make_mechanism(name, 0.8, 1000.0)
        assert mech.cost.epsilon == pytest.approx(0.8)
        assert mech.epsilon_shape == mech.epsilon_scale == pytest.approx(0.4)
        assert mech.cost.neighbouring == ADD_REMOVE and mech.cost.protects == SUBJECT
        entry = mech.ledger_entry("lung")
        assert entry.parameters["epsilon"] == 0.8 and entry.cost.epsilon == 0.8
    assert not NonPrivateMLE(1000.0).private
    with pytest.raises(ParameterError):
        LspTll(0.0, 1000.0)
    with pytest.raises(ParameterError):
        LspTll(1.0, 1000.0, rungs=0)


def test_noise_scales_follow_the_budget():
    s = _sample("lung")
    fit = weibull_mle(s)
    est = LaplaceWeibull(0.4, s.horizon).compute_many(s, SimulationNoise(5), 20000)
    # Lap(gamma / (eps/2)) = Lap(50): mean absolute deviation 50
    assert np.mean(np.abs(est.shape - fit.shape)) == pytest.approx(50.0, rel=0.05)
    saa = SampleAggregateWeibull(0.4, s.horizon, blocks=2)
    e2 = saa.compute_many(s, SimulationNoise(6), 400)
    assert np.mean(np.abs(e2.shape - np.median(e2.shape))) == pytest.approx(25.0, rel=0.15)  # Lap(10 / (2 * 0.2))


def test_rows_per_subject_multiplies_sensitivity():
    s = _sample("lung")
    one = LspTll(1.0, s.horizon, rungs=50)
    two = LspTll(1.0, s.horizon, rungs=50, rows_per_subject=2)
    lad = one.ladder(s)
    p1 = lad.probabilities(one.epsilon_shape, 1)
    p2 = lad.probabilities(two.epsilon_shape, 2)
    np.testing.assert_allclose(p2, lad.probabilities(one.epsilon_shape / 2, 1))
    assert not np.allclose(p1, p2)
    kidney = load_bundled("kidney")
    with pytest.raises(ParameterError, match="rows per subject"):
        LspTll(1.0, 1000.0).prepare(kidney)


def test_release_many_is_reproducible_and_reuses_the_ladder(flchain):
    mech = LspTll(0.2, flchain.horizon)
    lad = mech.ladder(flchain)
    a = mech.compute_many(flchain, SimulationNoise(9), 500, ladder=lad)
    b = mech.compute_many(flchain, SimulationNoise(9), 500, ladder=lad)
    np.testing.assert_array_equal(a.shape, b.shape)
    assert a.trials == 500 and len(a.records()) == 500
    assert set(a.records()[0]) >= {"trial", "shape", "scale", "scale_normalised"}
    assert np.median(np.abs(a.shape - lad.p_star)) < 0.2


# ---------------------------------------------------------------- command line

def _cli(capsys, *argv: str) -> tuple[int, dict | None, str]:
    rc = main(["weibull", *argv, "--json"])
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 else None), err


def test_cli_lsp_tll(capsys):
    rc, out, _ = _cli(capsys, "--data", "lung", "--time", "time", "--event", "status", "--mechanism", "lsp-tll",
                      "--epsilon", "1", "--horizon", "1100", "--repeat", "3", "--seed", "1")
    assert rc == 0
    assert out["mechanism"] == "lsp-tll" and out["epsilon_spent"] == 1.0 and out["horizon"] == 1100
    assert out["protects"] == SUBJECT and out["neighbouring"] == ADD_REMOVE
    assert [d["parameter"] for d in out["disclosures"]] == ["censoring"] and "seed 1" in out["noise"]
    assert [e["trial"] for e in out["estimates"]] == [0, 1, 2]
    assert out["interval_includes_noise"] is True and "bootstrap" in out["interval_method"]
    for e, iv in zip(out["estimates"], out["intervals"]):
        assert iv["shape"]["lower"] <= e["shape"] <= iv["shape"]["upper"]
        assert iv["scale"]["lower"] <= e["scale"] <= iv["scale"]["upper"]
    for e in out["estimates"]:
        assert e["scale"] == pytest.approx(e["scale_normalised"] * 1100)
    assert len(out["curve"]["survival"]) == 3


def test_cli_mle_and_disclosed_horizon(capsys):
    rc, out, _ = _cli(capsys, "--data", "lung", "--mechanism", "mle")
    assert rc == 0 and out["epsilon_spent"] is None and out["private"] is False
    assert out["horizon"] == 1100 and {d["parameter"] for d in out["disclosures"]} == {"horizon", "mechanism"}
    fit = weibull_mle(_sample("lung"))
    assert out["estimates"][0]["shape"] == pytest.approx(fit.shape, rel=1e-12)


def test_cli_inf_epsilon_equals_mle(capsys):
    rc, out, _ = _cli(capsys, "--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "inf", "--seed", "1")
    _, mle, _ = _cli(capsys, "--data", "lung", "--mechanism", "mle")
    assert out["estimates"][0]["shape"] == pytest.approx(mle["estimates"][0]["shape"], rel=1e-14)
    assert out["estimates"][0]["scale"] == pytest.approx(mle["estimates"][0]["scale"], rel=1e-12)


@pytest.mark.parametrize("argv", [
    ["--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "0"],
    ["--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "-1"],
    ["--data", "lung", "--mechanism", "nope"],
    ["--data", "lung", "--mechanism", "lsp-tll", "--rungs", "0"],
    ["--data", "lung", "--mechanism", "lsp-tll", "--horizon", "-5"],
    ["--data", "lung", "--mechanism", "saa", "--blocks", "0"],
    ["--data", "lung", "--time", "nosuchcolumn", "--mechanism", "mle"],
    ["--data", "no-such-data", "--mechanism", "mle"],
    ["--data", "lung"],
])
def test_cli_errors_exit_2(capsys, argv):
    rc, _, err = _cli(capsys, *argv)
    assert rc == 2 and err.startswith("error: ") and "Traceback" not in err


def test_cli_no_events(tmp_path, capsys):
    """All-censored data: no Weibull fit has a maximum there, the non-private one nor LSP's (exit 2, one sentence
    each, once the declared values are given)."""
    f = tmp_path / "censored.csv"
    f.write_text("t,e\n1,0\n2,0\n3,0\n")
    rc, _, err = _cli(capsys, "--data", str(f), "--time", "t", "--event", "e", "--mechanism", "mle")
    assert rc == 2 and "no events" in err
    rc, _, out = _cli(capsys, "--data", str(f), "--time", "t", "--event", "e", "--mechanism", "lsp-tll", "--horizon",
                      "10", "--n-public", "3", "--censoring", "0.9", "--seed", "1")
    assert rc == 2 and "no events" in out


def test_cli_all_times_equal_mle_exit_2(tmp_path, capsys):
    f = tmp_path / "equal.csv"
    f.write_text("t,e\n" + "".join("5,1\n" for _ in range(10)))
    rc, _, err = _cli(capsys, "--data", str(f), "--time", "t", "--event", "e", "--mechanism", "mle", "--horizon", "10")
    assert rc == 2 and "same" in err
    rc, out, _ = _cli(capsys, "--data", str(f), "--time", "t", "--event", "e", "--mechanism", "lsp-tll",
                      "--horizon", "10", "--rungs", "20", "--seed", "3")
    assert rc == 0 and 0 <= out["estimates"][0]["shape"] <= 10


def test_warnings_read_the_error_off_the_interval_and_say_an_unbounded_scale():
    """The 'error larger than the estimate' sentence quotes the 95% interval it reads (not a standard deviation that
    can disagree with it), and an LSP + TLL scale interval that reaches gamma times the horizon says that the scale
    is not bounded above (pbc at epsilon 1: 0 to 48,000 days)."""
    from dpsurv_core.weibull.inference import ParameterInterval, weibull_warnings
    from dpsurv_core.weibull.mechanisms import LspTll

    mech = LspTll(1.0, 4800.0)
    shape = ParameterInterval(0.85, 0.5, 1.2, 0.3)
    scale = ParameterInterval(4071.4 / 4800, 0.0, 10.0, 0.076)
    out = weibull_warnings(mech, shape, scale, 4800.0)
    (err,) = [w for w in out if "error is larger" in w]
    assert "scale's" in err and "0 to 48,000 around 4,071" in err
    assert any("reaches gamma times the horizon (48,000)" in w and "not bound the scale from above" in w for w in out)
    narrow = weibull_warnings(mech, ParameterInterval(1.3, 1.1, 1.5, 2.0), ParameterInterval(0.4, 0.3, 0.5, 0.1), 4800.0)
    assert narrow == []  # a large simulated spread alone does not make the interval unreadable


def test_the_non_private_fit_prints_its_wald_interval_as_lifelines_computes_its_error(capsys):
    """weibull --mechanism mle (and any mechanism at epsilon inf): the Wald interval on the log scale from the
    observed information; its standard errors equal lifelines' WeibullFitter's (delta method: se(rho) = rho se(log
    rho)) to 1e-6, and the JSON has the same keys as a private release (interval_method, warnings)."""
    assert main(["weibull", "--data", "lung", "--mechanism", "mle", "--json"]) == 0
    o = json.loads(capsys.readouterr().out)
    cohort = load_bundled("lung")
    wf = WeibullFitter().fit(cohort.time, cohort.event)
    se = wf.summary["se(coef)"]
    iv = o["intervals"][0]
    assert o["interval_includes_noise"] is False and "Wald" in o["interval_method"] and o["warnings"] == []
    assert iv["shape"]["error_sd"] == pytest.approx(se["rho_"], rel=1e-6)
    assert iv["scale"]["error_sd"] == pytest.approx(se["lambda_"], rel=1e-6)
    p, lo, up = iv["shape"]["estimate"], iv["shape"]["lower"], iv["shape"]["upper"]
    assert math.log(up / p) == pytest.approx(math.log(p / lo)) and lo < wf.rho_ < up
    assert main(["weibull", "--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "inf", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["intervals"] == o["intervals"]
