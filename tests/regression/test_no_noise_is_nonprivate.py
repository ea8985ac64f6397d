"""With the noise switched off (epsilon = inf) every private regression reproduces the non-private fit.

The ridge Lambda of output and objective perturbation only bounds one subject's influence for the noise, so without
noise it is not applied: ``--mechanism output|objective|psgld --epsilon inf`` print the numbers of
``--mechanism nonprivate`` (the maximum-likelihood fit) to floating-point precision, intervals and p-values included.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpsurv_core.cli import main
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.regression.mechanisms import build_mechanism, mre_study
from dpsurv_core.regression.model import fit_nonprivate, minimise
from dpsurv_core.regression.person_period import person_period

LUNG = ["regression", "--data", "lung", "--covariates", "age,sex"]
FIELDS = ("coefficients", "ratios", "lower", "upper", "p_value")


def cli(capsys, *args: str) -> dict:
    assert main([*LUNG, *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def close(a: dict[str, float], b: dict[str, float], tol: float = 1e-8) -> bool:
    return a.keys() == b.keys() and all(math.isclose(a[k], b[k], rel_tol=tol, abs_tol=tol) for k in a)


@pytest.fixture(scope="module")
def lung_pp():
    return person_period(load_bundled("lung", covariates=("age", "sex")), ["age", "sex"])


@pytest.mark.parametrize("mechanism", [["output"], ["objective"], ["objective", "--information-share", "0.2"],
                                       ["output", "--lambda", "0.5"], ["psgld"]])
def test_epsilon_inf_prints_the_nonprivate_fit_on_lung_age_sex(capsys, mechanism):
    reference = cli(capsys, "--mechanism", "nonprivate")
    got = cli(capsys, "--mechanism", *mechanism, "--epsilon", "inf")
    (ref,), (est,) = reference["estimates"], got["estimates"]
    # lung, age + sex: the maximum-likelihood fit (R's glm on the person-period rows), not the ridge fit 0.0101 / -0.412
    assert est["coefficients"]["age"] == pytest.approx(0.0183, abs=1e-4)
    assert est["coefficients"]["sex"] == pytest.approx(-0.565, abs=1e-3)
    for key in FIELDS:
        assert close(est[key], ref[key]), (key, est[key], ref[key])
    assert got["interval_includes_noise"] is False and got["warnings"] == []
    assert "maximum-likelihood fit (Lambda = 0" in got["interval_method"]
    assert "no noise was added" in got["interval_method"]
    assert "not private" in got["privacy"]


def test_mechanisms_without_noise_return_the_maximum_likelihood_w(lung_pp):
    pp = lung_pp
    w = fit_nonprivate(pp, 0.0).w
    for kind, options in (("output", {"lam": 0.01}), ("objective", {"lam": 0.01}),
                          ("objective", {"lam": 0.01, "information_share": 0.2}), ("psgld", {})):
        mech = build_mechanism(kind, math.inf, pp, **options)
        assert mech.ridge_without_noise == 0.0
        start = {"w_star": minimise(pp, 0.01)} if kind != "psgld" else {}  # a kept w*(Lambda) is not the answer
        rel = mech.compute(pp, SimulationNoise(0), trials=3, **start)
        np.testing.assert_allclose(rel.W, np.repeat(w[None], 3, axis=0), rtol=0, atol=1e-12)
    # and the error study measures no error without noise
    rows = mre_study(pp, [math.inf], lam=0.01, trials=2, mechanisms=("output", "objective"))
    assert [r["mre"] for r in rows] == pytest.approx([0.0, 0.0], abs=1e-12)
