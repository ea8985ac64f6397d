"""Cox regression against R's coxph (survival 3.5, fixture r_reference/coxph.json from tools/r_reference/coxph.R):
coefficients, standard errors, Wald p-values, log likelihoods and the likelihood-ratio, Wald and score tests within
1e-8 relative on every bundled data set's covariates (through the command line) and on synthetic edge cases; Efron
equals Breslow without ties; a category with no event is NA with a sentence; lifelines agrees to its own tolerance."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core.cli import main
from dpsurv_core.regression.cox import coxph
from tests.cli_run import fails, run

FIXTURE = json.loads((Path(__file__).parent / "r_reference" / "coxph.json").read_text())
RTOL = 1e-8


def _list(v: object) -> list:
    """jsonlite writes a vector of one as a scalar."""
    return list(v) if isinstance(v, list) else [v]


def close(ours: float | None, r: float, rtol: float = RTOL) -> bool:
    """|ours - r| <= rtol |r| (absolute 1e-300 for an exact zero)."""
    return ours is not None and abs(ours - r) <= rtol * abs(r) + 1e-300


def _assert_fit(o: dict, ref: dict, names: list[str]) -> None:
    e = o["estimates"][0]
    got = {"coefficients": [e["coefficients"][n] for n in names], "se": [e["se"][n] for n in names],
           "p_value": [e["p_value"][n] for n in names]}
    for key in ("coefficients", "se", "p_value"):
        for ours, r in zip(got[key], _list(ref[key]), strict=True):
            assert close(ours, r), (key, ours, r)
    for ours, r in zip(o["loglik"], ref["loglik"], strict=True):
        assert close(ours, r), ("loglik", ours, r)
    for test in ("likelihood_ratio", "wald", "score"):
        stat, df, p = ref[test]
        assert o["tests"][test]["df"] == df
        assert close(o["tests"][test]["statistic"], stat), (test, o["tests"][test], ref[test])
        assert close(o["tests"][test]["p_value"], p), (test, o["tests"][test], ref[test])


BUNDLED = FIXTURE["bundled"]


@pytest.mark.parametrize("ref", BUNDLED, ids=[f"{c['data']}-{len(_list(c['covariates']))}-{c['ties']}" for c in BUNDLED])
def test_bundled_data_sets_agree_with_r(capsys, ref):
    covs = _list(ref["covariates"])
    argv = ["regression", "--data", ref["data"], "--covariates", ",".join(covs), "--mechanism", "cox",
            "--ties", ref["ties"]]
    if ref["categorical"]:
        argv += ["--categorical", ",".join(f"{c}:{levels[0]}" for c, levels in ref["categorical"].items())]
    o = run(capsys, *argv)
    assert o["n"] == ref["n"] and o["parameters"]["ties"] == ref["ties"]
    assert len(o["covariates"]) == len(_list(ref["names"]))
    _assert_fit(o, ref, o["covariates"])  # the same order: numeric as given, a factor's levels after its reference
    assert o["not_estimated"] == [] and not any("NA" in w for w in o["warnings"])


def _frame(ref: dict) -> pd.DataFrame:
    return pd.DataFrame(ref["data"])


SYNTHETIC = {(c["name"], c["ties"]): c for c in FIXTURE["synthetic"]}


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_heavy_ties_agree_with_r(ties):
    ref = SYNTHETIC[("heavy_ties", ties)]
    d = _frame(ref)
    m = coxph(d.time.to_numpy(), d.event.to_numpy(), d[["x1", "x2", "x3"]].to_numpy(), ties)
    for ours, r in [*zip(m.coef, ref["coefficients"]), *zip(m.se, ref["se"]), *zip(m.p_values, ref["p_value"]),
                    *zip(m.loglik, ref["loglik"]), (m.likelihood_ratio_test.statistic, ref["likelihood_ratio"][0]),
                    (m.wald_test.statistic, ref["wald"][0]), (m.score_test.statistic, ref["score"][0])]:
        assert close(float(ours), r), (ours, r)


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_a_level_with_no_event_is_na_and_the_rest_is_r_s_limit(capsys, tmp_path, ties):
    """R's coxph sends the level's coefficient towards minus infinity ('Loglik converged before variable'); the other
    coefficients converge to the fit without that level's subjects, which dpsurv reports, with NA and a sentence."""
    ref = SYNTHETIC[("no_event_level", ties)]
    path = tmp_path / "noevent.csv"
    _frame(ref).to_csv(path, index=False)
    o = run(capsys, "regression", "--data", str(path), "--time", "time", "--event", "event", "--covariates", "age,g",
            "--categorical", "g:a", "--mechanism", "cox", "--ties", ties)
    e = o["estimates"][0]
    assert o["covariates"] == ["age", "g=b", "g=c"] and o["not_estimated"] == ["g=b"]
    assert e["coefficients"]["g=b"] is None and e["p_value"]["g=b"] is None and e["ratios"]["g=b"] is None
    assert len(o["warnings"]) == 1 and "'b'" in o["warnings"][0] and "NA" in o["warnings"][0]
    _assert_fit(o, ref, ["age", "g=c"])


def test_a_reference_level_with_no_event_is_one_sentence(capsys, tmp_path):
    ref = SYNTHETIC[("no_event_level", "efron")]
    path = tmp_path / "noevent.csv"
    _frame(ref).to_csv(path, index=False)
    line = fails(capsys, "regression", "--data", str(path), "--time", "time", "--event", "event", "--covariates",
                 "age,g", "--categorical", "g:b", "--mechanism", "cox")
    assert "reference level" in line and "'b'" in line


def test_ties_option_exit_codes(capsys):
    assert "--ties applies to --mechanism cox only" in fails(
        capsys, "regression", "--data", "lung", "--covariates", "age", "--mechanism", "nonprivate", "--ties", "efron")
    assert main(["regression", "--data", "lung", "--covariates", "age", "--mechanism", "cox", "--ties", "exact",
                 "--json"]) == 2  # argparse's own refusal of a choice
    assert "invalid choice: 'exact'" in capsys.readouterr().err
    o = run(capsys, "regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "cox")
    assert o["parameters"]["ties"] == "efron"  # R's default


@settings(max_examples=25, deadline=None)
@given(st.integers(8, 40), st.integers(0, 10_000))
def test_efron_equals_breslow_without_ties(n, seed):
    rng = np.random.default_rng(seed)
    time = rng.permutation(n).astype(float) + 1.0  # distinct times
    event = rng.random(n) < 0.7
    event[0] = True
    X = np.column_stack([rng.normal(size=n), rng.random(n) < 0.5])
    if np.linalg.matrix_rank(np.column_stack([np.ones(n), X])) < 3:
        return
    try:
        a = coxph(time, event, X, "efron")
    except Exception:  # noqa: BLE001  (a singular information: no fit either way)
        return
    b = coxph(time, event, X, "breslow")
    np.testing.assert_array_equal(a.coef, b.coef)
    np.testing.assert_array_equal(a.var, b.var)
    assert a.loglik == b.loglik


@pytest.mark.parametrize("ties", ["efron", "breslow"])
def test_no_ties_synthetic_efron_is_breslow_is_r(ties):
    ref = SYNTHETIC[("no_ties", ties)]
    d = _frame(ref)
    m = coxph(d.time.to_numpy(), d.event.to_numpy(), d[["x1", "x2"]].to_numpy(), ties)
    for ours, r in zip(m.coef, ref["coefficients"]):
        assert close(float(ours), r)


def test_lifelines_agrees_within_its_tolerance():
    """lifelines' CoxPHFitter (Efron) as an independent cross-check: its own stopping rule leaves ~1e-4 relative."""
    from lifelines import CoxPHFitter

    from dpsurv_core.data.cohort import load_bundled

    covs = ("age", "rx", "ecog.ps")
    c = load_bundled("ovarian", covariates=covs)
    df = c.covariates[list(covs)].assign(_t=c.time, _e=c.event)
    ll = CoxPHFitter().fit(df, duration_col="_t", event_col="_e").summary
    m = coxph(c.time, c.event, c.covariates[list(covs)].to_numpy(float))
    np.testing.assert_allclose(m.coef, ll["coef"].to_numpy(), rtol=1e-3)
    np.testing.assert_allclose(m.se, ll["se(coef)"].to_numpy(), rtol=1e-3)
    assert math.isclose(m.loglik[1], -27.027358325753536, rel_tol=1e-12)  # R
