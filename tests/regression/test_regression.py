"""Non-private discrete-time fit against an independent IRLS fit and lifelines Cox; the regression command."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

from dpsurv_core.cli import main
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.regression.model import fit_cox, fit_nonprivate, mean_relative_error, relative_errors, subject_losses
from dpsurv_core.regression.person_period import person_period

ROOT = Path(__file__).resolve().parents[2]


def irls(Z: np.ndarray, y: np.ndarray, ridge: float = 0.0, iters: int = 50) -> tuple[np.ndarray, np.ndarray]:
    """Plain Newton-Raphson / IRLS for ridge logistic regression on the expanded rows (no compression)."""
    w = np.zeros(Z.shape[1])
    for _ in range(iters):
        p = special.expit(Z @ w)
        H = Z.T @ (Z * (p * (1 - p))[:, None]) + ridge * np.eye(Z.shape[1])
        g = Z.T @ (p - y) + ridge * w
        w = w - np.linalg.solve(H, g)
    p = special.expit(Z @ w)
    info = Z.T @ (Z * (p * (1 - p))[:, None])
    return w, np.sqrt(np.diag(np.linalg.inv(info)))


@pytest.fixture(scope="module")
def lung():
    c = load_bundled("lung", covariates=("age", "sex", "ph.ecog"))
    return c, person_period(c, ["age", "sex", "ph.ecog"], horizon=1100)


def test_nonprivate_matches_independent_irls(lung):
    _, pp = lung
    fit = fit_nonprivate(pp, 0.0)
    w, se = irls(pp.Z, pp.y.astype(float))
    np.testing.assert_allclose(fit.w, w, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(fit.se, se, rtol=1e-5)
    # with a ridge: J = (1/n) sum L + (lam/2)||w||^2  <=>  sum L + (n lam / 2)||w||^2
    lam = 0.05
    fit_r = fit_nonprivate(pp, lam)
    w_r, _ = irls(pp.Z, pp.y.astype(float), ridge=pp.n_public * lam)
    np.testing.assert_allclose(fit_r.w, w_r, rtol=1e-6, atol=1e-7)


def test_original_units_do_not_depend_on_declared_ranges(lung):
    c, pp = lung
    pp2 = person_period(c, ["age", "sex", "ph.ecog"], horizon=1100, ranges={"age": (0, 120), "sex": (0, 3),
                                                                              "ph.ecog": (0, 4)})
    a, b = fit_nonprivate(pp, 0).coefficients, fit_nonprivate(pp2, 0).coefficients
    for k in a:
        assert math.isclose(a[k], b[k], rel_tol=1e-6)
    # age coefficient in original units equals an IRLS fit on raw ages
    Zraw = pp.Z.copy()
    raw = c.covariates.loc[c.covariates.notna().all(axis=1)].to_numpy(float)[pp.subject]
    Zraw[:, :3] = raw
    w, _ = irls(Zraw, pp.y.astype(float))
    np.testing.assert_allclose([a["age"], a["sex"], a["ph.ecog"]], w[:3], rtol=1e-6)


def test_nonprivate_close_to_cox_on_lung_and_flchain(lung):
    c, pp = lung
    dt = fit_nonprivate(pp, 0).coefficients
    cox = fit_cox(c, pp).coefficients
    re = relative_errors(dt, cox)
    assert max(re.values()) < 0.15, re
    # same signs and odds ratios close to hazard ratios
    assert all(np.sign(dt[k]) == np.sign(cox[k]) for k in dt)
    fl = load_bundled("flchain", covariates=("age", "sex"))
    ppf = person_period(fl, ["age", "sex"], horizon=5300)
    dtf, coxf = fit_nonprivate(ppf, 0).coefficients, fit_cox(fl, ppf).coefficients
    ref = relative_errors(dtf, coxf)
    assert set(ref) == {"age", "sex=M"} and max(ref.values()) < 0.05, ref  # about 3% (paper: Table 3)
    assert 0.10 < coxf["age"] < 0.12 and 0.3 < coxf["sex=M"] < 0.5


def test_table_intervals_and_mre(lung):
    _, pp = lung
    tab = fit_nonprivate(pp, 0).table()
    assert list(tab.covariate) == ["age", "sex", "ph.ecog"]
    assert np.all(tab.lower < tab.odds_ratio) and np.all(tab.odds_ratio < tab.upper)
    assert tab.set_index("covariate").loc["sex", "odds_ratio"] < 1  # women (sex = 2) do better
    assert mean_relative_error(np.array([[3.0, 4.0], [0.0, 0.0]]), np.array([3.0, 4.0])) == pytest.approx(0.5)


def test_subject_losses_sum_to_objective(lung):
    _, pp = lung
    w = fit_nonprivate(pp, 0).w
    L = subject_losses(w, pp)
    rows = np.logaddexp(0, -(2 * pp.y - 1) * (pp.Z @ w))
    assert L.shape == (pp.n,) and np.isclose(L.sum(), rows.sum())
    L2 = subject_losses(np.vstack([w, 0 * w]), pp)
    assert L2.shape == (2, pp.n) and np.allclose(L2[1], pp.k * math.log(2))


def _cli(args: list[str], capsys) -> tuple[int, dict | str]:
    rc = main(args)
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else out.err)


def test_cli_contract_and_values(capsys):
    rc, o = _cli(["regression", "--data", "lung", "--time", "time", "--event", "status", "--covariates", "age,sex",
                  "--mechanism", "output", "--epsilon", "1", "--horizon", "1100", "--n-public", "228", "--seed", "1",
                  "--json"], capsys)
    assert rc == 0
    assert {"mechanism", "epsilon_spent", "guarantee", "parameters", "estimates", "protects", "neighbouring",
            "disclosures"} <= set(o)
    # n declared, the ranges read off the data: they set the covariates' scale, so the release is not DP as run
    assert o["epsilon_spent"] == 1 and o["guarantee"] == "none: not differentially private (range:age read off the data)"
    assert set(o["estimates"][0]["coefficients"]) == {"age", "sex"}
    assert o["parameters"]["sensitivity"] == pytest.approx(2 * 20 * math.sqrt(2) / (228 * 0.01))
    assert {d["parameter"] for d in o["disclosures"]} == {"range:age", "range:sex"}  # n declared: not read off
    assert all(d["dp"] is False for d in o["disclosures"])
    rc, o = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "output", "--epsilon", "1",
                  "--horizon", "1100", "--n-public", "228", "--range", "age:18:100", "--range", "sex:1:2", "--seed", "1",
                  "--json"], capsys)
    assert rc == 0 and o["guarantee"] == "exact" and o["protects"] == "the subject" and o["disclosures"] == []
    rc, o = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "psgld", "--epsilon", "2",
                  "--horizon", "1100", "--repeat", "3", "--seed", "2", "--epochs", "4", "--burn-in", "2", "--n-public",
                  "228", "--range", "age:18:100", "--range", "sex:1:2", "--json"], capsys)
    assert rc == 0 and o["guarantee"] == "approximate (MCMC)" and "approximate DP (MCMC)" in o["note"]
    assert [e["trial"] for e in o["estimates"]] == [0, 1, 2] and "(MCMC)" in o["privacy"]
    rc, o = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "output", "--epsilon", "inf",
                  "--lambda", "0.05", "--horizon", "1100", "--range", "age:30:90", "--range", "sex:1:2", "--n-public",
                  "228", "--json"], capsys)
    rc2, o2 = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate",
                    "--horizon", "1100", "--range", "age:30:90", "--range", "sex:1:2", "--n-public", "228",
                    "--json"], capsys)
    assert rc == rc2 == 0 and o["disclosures"] == [] and o["estimates"][0]["coefficients"] == o2["estimates"][0]["coefficients"]
    # without noise the ridge (which only bounds one subject's influence for the noise) is dropped: the fit is the
    # non-private maximum-likelihood fit, with its Wald interval (sampling error only); no MCMC note
    assert o["estimates"][0]["lower"] == o2["estimates"][0]["lower"] and o["estimates"][0]["upper"] == o2["estimates"][0]["upper"]
    assert o["estimates"][0]["p_value"] == o2["estimates"][0]["p_value"]
    assert o["interval_includes_noise"] is False and "note" not in o
    assert "maximum-likelihood fit (Lambda = 0" in o["interval_method"] and "Lambda = 0.05" not in o["interval_method"]
    assert o["estimates"][0]["trial"] == o2["estimates"][0]["trial"] == 0
    rc, o = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "psgld", "--epsilon", "inf",
                  "--json"], capsys)
    rc2, o2 = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate", "--json"],
                   capsys)
    assert rc == rc2 == 0 and o["estimates"][0]["coefficients"] == pytest.approx(o2["estimates"][0]["coefficients"])
    assert o["estimates"][0]["upper"] == pytest.approx(o2["estimates"][0]["upper"])
    assert "maximum-likelihood" in o["interval_method"] and "note" not in o
    rc, o = _cli(["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "cox", "--json"], capsys)
    assert rc == 0 and o["estimates"][0]["coefficients"]["sex"] == pytest.approx(-0.513, abs=1e-3)  # R: coxph -0.5132


@pytest.mark.slow
@pytest.mark.parametrize("column,values,words", [
    ("const", [5.0] * 8, "constant"),
    ("empty", [np.nan] * 8, "missing for every subject"),
    ("mixed", ["1", "2", "3", "4", "5", "6", "7", "oops"], "numeric but row 9"),
])
def test_cli_bad_covariates_exit_2(tmp_path, column, values, words):
    df = pd.DataFrame({"t": [1, 2, 3, 4, 5, 6, 7, 8.0], "d": [1, 0, 1, 1, 0, 1, 1, 0],
                       "age": [50, 60, 70, 40, 55, 65, 75, 45.0], column: values})
    path = tmp_path / "cohort.csv"
    df.to_csv(path, index=False)
    r = subprocess.run([sys.executable, "-m", "dpsurv_core", "regression", "--data", str(path), "--time", "t", "--event",
                        "d", "--covariates", f"age,{column}", "--mechanism", "output", "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    line = r.stderr.strip()
    assert line.startswith("error: ") and words in line and "Traceback" not in line and "\n" not in line


def test_cli_unknown_column_and_bad_lambda(capsys):
    rc, err = _cli(["regression", "--data", "lung", "--covariates", "age,nope", "--mechanism", "output", "--json"], capsys)
    assert rc == 2 and "no covariate column 'nope'" in err
    rc, err = _cli(["regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--lambda", "0",
                    "--json"], capsys)
    assert rc == 2 and "Lambda" in err
    rc, err = _cli(["regression", "--data", "lung", "--mechanism", "output", "--json"], capsys)
    assert rc == 2 and "--covariates is required" in err


@pytest.mark.parametrize("column, role", [("status", "event"), ("time", "time")])
def test_the_outcome_columns_are_refused_as_covariates(capsys, column, role):
    from tests.cli_run import fails

    line = fails(capsys, "regression", "--data", "lung", "--covariates", f"{column},age", "--mechanism", "cox")
    assert f"The covariate {column!r} is the {role} column" in line


def test_cox_converges_to_r_s_coxph():
    """ovarian, coxph(Surv(futime, fustat) ~ age + rx + ecog.ps): R prints rx -0.8146 (the Efron MLE -0.814585);
    lifelines' default stopping rule left it at -0.814453."""
    c = load_bundled("ovarian", covariates=("age", "rx", "ecog.ps"))
    pp = person_period(c, ["age", "rx", "ecog.ps"], horizon=1300)
    cox = fit_cox(c, pp).coefficients
    assert cox["rx"] == pytest.approx(-0.814585, abs=2e-6) and cox["age"] == pytest.approx(0.146989, abs=2e-6)
