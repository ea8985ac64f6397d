"""Cox robust (cluster) variance against R's coxph(..., cluster = id) (survival 3.5, fixture
r_reference/cox_cluster.json from tools/r_reference/cox_cluster.R): the sandwich variance V = D^T D of the dfbeta
residuals summed within subject (Lin & Wei 1989; Therneau & Grambsch 2000), the robust standard errors and p-values,
the robust Wald and robust score tests, within 1e-8 relative, with Efron and Breslow ties: on kidney (two rows per
patient) through the command line, on synthetic data with 2 to 4 rows per subject from a file with --id, and on
one-row clusters; without an id, or with one row per subject and no --id, the output has no robust keys."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.regression.cox import coxph
from tests.cli_run import run

FIXTURE = json.loads((Path(__file__).parent / "r_reference" / "cox_cluster.json").read_text())
RTOL = 1e-8
ROBUST_KEYS = ("robust_se", "robust_lower", "robust_upper", "robust_p_value")


def _list(v: object) -> list:
    """The fixture writes a vector of one as a scalar."""
    return list(v) if isinstance(v, list) else [v]


def close(ours: float, r: float, rtol: float = RTOL) -> bool:
    return abs(ours - r) <= rtol * abs(r) + 1e-300


def _assert_cli(o: dict, ref: dict) -> None:
    names = o["covariates"]
    e = o["estimates"][0]
    for key, ours in (("coefficients", e["coefficients"]), ("se", e["se"]), ("robust_se", e["robust_se"]),
                      ("p_value", e["robust_p_value"])):  # R's Pr(>|z|) with a cluster is the robust one
        for n, r in zip(names, _list(ref[key]), strict=True):
            assert close(ours[n], r), (key, n, ours[n], r)
    for n, rse, b in zip(names, _list(ref["robust_se"]), _list(ref["coefficients"]), strict=True):
        assert close(e["robust_lower"][n], np.exp(b - 1.959963984540054 * rse))
        assert close(e["robust_upper"][n], np.exp(b + 1.959963984540054 * rse))
    for ours_key, ref_key in (("robust_wald", "robust_wald"), ("robust_score", "robust_score"),
                              ("score", "score"), ("likelihood_ratio", "likelihood_ratio")):
        stat, df, p = ref[ref_key]
        t = o["tests"][ours_key]
        assert t["df"] == df and close(t["statistic"], stat) and close(t["p_value"], p), (ours_key, t, ref[ref_key])
    assert "cluster = id" in o["robust_note"]


@pytest.mark.parametrize("ref", FIXTURE["bundled"], ids=[c["ties"] for c in FIXTURE["bundled"]])
def test_kidney_two_rows_per_patient_agrees_with_r(capsys, ref):
    o = run(capsys, "regression", "--data", "kidney", "--covariates", "age,sex,frail", "--categorical", "sex:1",
            "--mechanism", "cox", "--ties", ref["ties"])
    assert o["n"] == ref["n"] and o["clusters"] == 38
    _assert_cli(o, ref)


SYNTHETIC = FIXTURE["synthetic"]


@pytest.mark.parametrize("ref", SYNTHETIC, ids=[f"{c['name']}-{c['ties']}" for c in SYNTHETIC])
def test_synthetic_clusters_agree_with_r(ref):
    d = pd.DataFrame(ref["data"])
    names = _list(ref["names"])
    m = coxph(d.time.to_numpy(), d.event.to_numpy(), d[names].to_numpy(), ref["ties"], cluster=d.id.to_numpy())
    assert m.robust_var is not None and m.robust_wald_test is not None and m.robust_score_test is not None
    assert m.clusters == d.id.nunique()
    np.testing.assert_allclose(m.coef, _list(ref["coefficients"]), rtol=RTOL)
    np.testing.assert_allclose(m.se, _list(ref["se"]), rtol=RTOL)
    np.testing.assert_allclose(m.robust_var, ref["robust_var"], rtol=RTOL)
    rse, rp = m.robust_se, m.robust_p_values
    assert rse is not None and rp is not None
    np.testing.assert_allclose(rse, _list(ref["robust_se"]), rtol=RTOL)
    np.testing.assert_allclose(rp, _list(ref["p_value"]), rtol=RTOL)
    for test, key in ((m.robust_wald_test, "robust_wald"), (m.robust_score_test, "robust_score"),
                      (m.score_test, "score"), (m.likelihood_ratio_test, "likelihood_ratio")):
        stat, df, p = ref[key]
        assert test.df == df and close(test.statistic, stat) and close(test.p_value, p), (key, test, ref[key])


@pytest.mark.parametrize("name", ["repeated_heavy_ties", "one_row_each"])
@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_a_file_with_id_agrees_with_r(capsys, tmp_path, name, ties):
    ref = next(c for c in SYNTHETIC if c["name"] == name and c["ties"] == ties)
    d = pd.DataFrame(ref["data"])
    path = tmp_path / "repeated.csv"
    d.to_csv(path, index=False)
    names = _list(ref["names"])
    o = run(capsys, "regression", "--data", str(path), "--time", "time", "--event", "event", "--id", "id",
            "--max-rows-per-subject", "4", "--covariates", ",".join(names), "--mechanism", "cox", "--ties", ties)
    assert o["clusters"] == d.id.nunique()
    _assert_cli(o, ref)


def test_without_repeated_rows_or_id_there_are_no_robust_keys(capsys, tmp_path):
    ref = next(c for c in SYNTHETIC if c["name"] == "one_row_each")
    path = tmp_path / "single.csv"
    pd.DataFrame(ref["data"]).to_csv(path, index=False)
    for argv in (["--data", str(path), "--time", "time", "--event", "event", "--covariates", "x1"],
                 ["--data", "lung", "--covariates", "age,sex"]):
        o = run(capsys, "regression", *argv, "--mechanism", "cox")
        assert not {"robust_wald", "robust_score"} & set(o["tests"]) and "clusters" not in o
        assert not set(ROBUST_KEYS) & set(o["estimates"][0])


def test_cluster_sum_of_score_residuals_is_the_score():
    """sum_i L_i(beta) = U(beta) at any beta: the score residuals split the score by row."""
    d = pd.DataFrame(SYNTHETIC[0]["data"])
    from dpsurv_core.regression.cox import _Design

    for ties in ("efron", "breslow"):
        des = _Design(d.time.to_numpy(), d.event.to_numpy(), d[["x1", "x2"]].to_numpy(), ties)
        beta = np.array([0.3, -0.7])
        _, u, _ = des.evaluate(beta)
        assert u is not None
        np.testing.assert_allclose(des.score_residuals(beta).sum(axis=0), u, rtol=1e-12, atol=1e-12)
