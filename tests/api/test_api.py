"""The Python API gives the command line's numbers, through its release protocol and ledger."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsurv_core import (
    Audit,
    PrivateDiscreteTimeRegression,
    PrivateKaplanMeier,
    PrivateLogRank,
    PrivateWeibull,
    load_dataset,
)
from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.privacy.release import stored_release
from dpsurv_core.publication.record import jsonable
from tests.cli_run import fails, run

lifelines = pytest.importorskip("lifelines")

REGRESSION = dict(covariates=["age", "sex"], horizon=1000, range={"age": (30, 90), "sex": (1, 2)}, n_public=228)
REGRESSION_ARGS = ("--covariates", "age,sex", "--horizon", "1000", "--range", "age:30:90", "--range", "sex:1:2",
                   "--n-public", "228")


def releases(path) -> list:
    return [r for r in LedgerStore(str(path)).records() if r.kind == RELEASE]


def lifelines_curve(df: pd.DataFrame, group: int, times: np.ndarray) -> np.ndarray:
    rows = df[df["sex"] == group]
    kmf = lifelines.KaplanMeierFitter().fit(rows["time"], rows["status"])
    return kmf.survival_function_at_times(times).to_numpy()


def test_nonprivate_curve_equals_lifelines() -> None:
    lung = load_dataset("lung")
    km = PrivateKaplanMeier("nonprivate").simulate(lung, group_col="sex")
    assert list(km.survival_function_.columns) == ["Male", "Female"]
    for code, name in ((1, "Male"), (2, "Female")):
        got = km.survival_function_[name].dropna()
        np.testing.assert_allclose(got.to_numpy(), lifelines_curve(lung.frame, code, got.index.to_numpy()), atol=1e-12)
    kmf = lifelines.KaplanMeierFitter().fit(lung.frame["time"], lung.frame["status"])
    whole = PrivateKaplanMeier("nonprivate").simulate(lung)
    assert whole.median_survival_time_ == kmf.median_survival_time_


def test_no_noise_on_a_grid_equals_lifelines_and_the_cli(capsys) -> None:
    lung = load_dataset("lung")
    km = PrivateKaplanMeier("laplace-counts", epsilon=math.inf, grid=(0, 1000, 10)).simulate(lung, group_col="sex")
    times = km.survival_function_.index.to_numpy()
    np.testing.assert_allclose(km.survival_function_["Male"], lifelines_curve(lung.frame, 1, times), atol=1e-12)
    cli = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "inf",
              "--grid", "0:1000:10")
    assert cli["curves"][0]["survival"] == km.survival_function_["Male"].tolist()


def test_a_dataframe_is_its_rows(capsys) -> None:
    frame = load_dataset("lung").frame
    km = PrivateKaplanMeier("nonprivate").simulate(frame, "time", "status", "sex", dataset="mine")
    exact = PrivateKaplanMeier("nonprivate").simulate(load_dataset("lung"), group_col="sex")
    pd.testing.assert_frame_equal(km.survival_function_.set_axis(["Male", "Female"], axis=1), exact.survival_function_)
    with pytest.raises(ParameterError, match="bundled"):
        PrivateKaplanMeier("nonprivate").simulate(frame, "time", "status", dataset="lung")
    with pytest.raises(ParameterError, match="duration_col"):
        PrivateKaplanMeier("nonprivate").simulate(frame)


@pytest.mark.parametrize("fitter", [
    lambda: PrivateKaplanMeier(epsilon=0.5, grid=(0, 1000, 10)),
    lambda: PrivateLogRank(epsilon=0.5, grid=(0, 1000, 10)),
    lambda: PrivateWeibull(epsilon=0.5, horizon=1000, censoring=0.3),
    lambda: PrivateDiscreteTimeRegression(epsilon=0.5, **REGRESSION),
])
def test_a_release_is_one_record_equal_to_publishable(fitter, ledger_path) -> None:
    group = "sex" if isinstance(fitter(), (PrivateKaplanMeier, PrivateLogRank)) else None
    fitted = fitter().release(load_dataset("lung"), group_col=group, cap=2.0)
    records = releases(ledger_path)
    assert len(records) == 1 and records[0].id == fitted.record_id_
    stored = stored_release(records[0], None).publishable()
    assert jsonable(stored, strict=False) == fitted.publishable_
    assert fitted.result_["publishable"] == fitted.publishable_


def test_a_simulation_records_nothing(ledger_path) -> None:
    lung = load_dataset("lung")
    km = PrivateKaplanMeier(grid=(0, 1000, 10)).simulate(lung, group_col="sex", seed=1)
    PrivateWeibull(horizon=1000, censoring=0.3).simulate(lung, seed=1)
    assert km.record_id_ is None and km.publishable_ is None
    assert releases(ledger_path) == []


def test_the_cap_refuses_as_the_cli_does(capsys, ledger_path) -> None:
    lung = load_dataset("lung")
    PrivateKaplanMeier(epsilon=1.0, grid=(0, 1000, 10)).release(lung, group_col="sex", cap=1.5)
    with pytest.raises(BudgetExceededError) as refused:
        PrivateKaplanMeier(epsilon=1.0, grid=(0, 1000, 10)).release(lung, group_col="sex")
    line = fails(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "adaptive-km", "--epsilon", "1",
                 "--grid", "0:1000:10")
    assert line == f"error: {refused.value}"
    assert len(releases(ledger_path)) == 1


@pytest.mark.parametrize(("fitter", "argv"), [
    (lambda: PrivateKaplanMeier(epsilon=1.0, grid=(0, 1000, 10)),
     ("km", "--group", "sex", "--mechanism", "adaptive-km", "--grid", "0:1000:10")),
    (lambda: PrivateLogRank(epsilon=1.0, grid=(0, 1000, 10)),
     ("logrank", "--group", "sex", "--mechanism", "adaptive-km", "--grid", "0:1000:10")),
    (lambda: PrivateWeibull(epsilon=1.0, horizon=1000, censoring=0.3),
     ("weibull", "--mechanism", "lsp-tll", "--horizon", "1000", "--censoring", "0.3")),
    (lambda: PrivateDiscreteTimeRegression(epsilon=1.0, **REGRESSION),
     ("regression", "--mechanism", "objective", *REGRESSION_ARGS)),
])
def test_a_seeded_simulation_equals_the_cli(fitter, argv, capsys) -> None:
    group = "sex" if "--group" in argv else None
    fitted = fitter().simulate(load_dataset("lung"), group_col=group, seed=7)
    cli = run(capsys, argv[0], "--data", "lung", *argv[1:], "--epsilon", "1", "--seed", "7")
    assert fitted.result_ == cli


def test_attributes_read_the_output() -> None:
    lung = load_dataset("lung")
    test = PrivateLogRank("nonprivate").simulate(lung, group_col="sex")
    assert test.p_value == test.result_["overall"][0]["p_value"]
    assert test.summary.loc[("Male", "Female"), "p"] == test.p_value
    weibull = PrivateWeibull("mle", horizon=1000).simulate(lung)
    assert weibull.params_["rho_"] == weibull.result_["estimates"][0]["shape"]
    model = PrivateDiscreteTimeRegression(epsilon=1.0, **REGRESSION).simulate(lung, seed=2)
    assert model.params_.to_dict() == model.result_["estimates"][0]["coefficients"]


def test_plot_needs_a_release() -> None:
    km = PrivateKaplanMeier(grid=(0, 1000, 10)).simulate(load_dataset("lung"), seed=1)
    with pytest.raises(ParameterError, match="release"):
        km.plot()


def test_an_audit_equals_the_cli_and_records_nothing(capsys, ledger_path) -> None:
    audit = Audit("km", "adaptive-km", epsilon=1.0, trials=20, grid=(0, 150, 5), record_trials=0)
    audit.run(load_dataset("leukemia"), group_col="x", seed=4)
    cli = run(capsys, "audit", "--data", "leukemia", "--group", "x", "--analysis", "km", "--mechanism", "adaptive-km",
              "--epsilon", "1", "--trials", "20", "--grid", "0:150:5", "--record-trials", "0", "--seed", "4")
    assert audit.result_ == cli
    assert audit.empirical_epsilon_ == cli["empirical_epsilon_lower"] and audit.auc_ == cli["auc"]
    assert releases(ledger_path) == []


def test_a_release_reads_what_the_cli_prints() -> None:
    km = PrivateKaplanMeier(grid=(0, 1000, 10)).release(load_dataset("lung"), group_col="sex", cap=2.0)
    for curve, name in zip(km.result_["curves"], ["Male", "Female"]):
        assert km.survival_function_[name].tolist() == curve["survival"]
        assert km.confidence_interval_[f"{name}_upper_0.95"].tolist() == curve["upper"]
        assert km.median_survival_time_[name] == curve["median"]
    assert km.survival_function_.index.tolist() == km.publishable_["derived"]["time"]
