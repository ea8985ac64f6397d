"""AppTest of the Regression page (run from the repository root).

Explore freely, release once: the page and its settings show previews and charge nothing; each private fit's Release
button writes one record to the ledger database (``DPSURV_LEDGER``, one per test).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, RELEASE, LedgerStore
from ui import session

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "5_Regression.py")
PRIVATE = catalogue.ids(catalogue.REGRESSION, "regression", private=True)


def run(dataset: str | None = None, **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    if dataset is not None:
        at.session_state["data_choice"] = session.bundled_choice(dataset)
    state.setdefault("rg_trials", 10)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def releases() -> list:
    return [r for r in LedgerStore().records() if r.kind == RELEASE]


def text(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])


def lung_ledger():
    return LedgerStore().ledger(session.bundled_choice("lung").fingerprint)


@pytest.mark.slow
def test_default_page_previews_the_exact_dp_fits_and_charges_nothing():
    at = run()
    df = at.table[0].value
    exact = [e.name for e in catalogue.entries(catalogue.REGRESSION, "regression", private=True)
             if e.guarantee == "exact"]
    assert {f"{name}, preview" for name in exact} == set(df.Estimate[df.Estimate.str.endswith("preview")])
    words = text(at)
    assert "Guarantee: exact DP" in words and "Preview, not for publication" in words
    assert "A release would charge: epsilon = 1, protecting the subject" in words
    at.select_slider(key="rg_eps").set_value(0.5).run()
    at.select_slider(key="rg_lam").set_value(0.1).run()
    assert not at.exception
    assert "A release would charge: epsilon = 0.5" in text(at)
    assert releases() == []


def test_release_button_charges_once_per_click_with_the_published_cohort_size():
    at = run()
    at.button(key="release-regression-objective").click().run()
    assert not at.exception
    recs = releases()
    assert len(recs) == 1
    body = recs[0].body
    assert body["mechanism"] == "objective perturbation" and body["analysis"] == "regression"
    assert body["cost"]["epsilon"] == pytest.approx(1.0)
    assert body["command"].startswith("python -m dpsurv_core regression ")
    assert "--covariates age,sex --mechanism objective --epsilon 1" in body["command"]
    assert "--n-public 228" in body["command"]  # lung's published size is the declared n
    assert set(body["outputs"]["coefficients"][0]) == {"age", "sex"}
    # no not-DP disclosure, so the subject keeps its guarantee
    assert not [d for d in body["disclosures"] if not d["dp"]] and lung_ledger().void_reasons() == []
    df = at.table[0].value
    released = df[df.Estimate.str.endswith(f"released, record {recs[0].id}")].set_index("Covariate")
    assert released.loc["sex", "Coefficient"] == pytest.approx(body["outputs"]["coefficients"][0]["sex"])
    at.button(key="release-regression-objective").click().run()  # a fresh draw, a second record
    assert len(releases()) == 2


def test_counting_n_in_the_data_is_flagged_not_dp():
    at = run(rg_n_lung=0)
    assert "Guarantee: none: not DP" in text(at)
    assert releases() == []
    at.button(key="release-regression-output").click().run()
    assert "--n-public" not in releases()[0].body["command"]
    reasons = lung_ledger().void_reasons()
    assert reasons and "normaliser n" in reasons[0]


@pytest.mark.slow
def test_all_fits_show_coefficients_and_guarantees():
    at = run(rg_mechs=PRIVATE)
    assert not at.error
    df = at.table[0].value
    assert isinstance(df, pd.DataFrame)
    assert set(df["Covariate"]) == {"age", "sex"}
    np_rows = df[df.Estimate.str.startswith("Discrete-time")].set_index("Covariate")
    cox_rows = df[df.Estimate.str.startswith("Cox")].set_index("Covariate")
    assert np_rows.loc["sex", "Ratio"] == np.exp(np_rows.loc["sex", "Coefficient"])
    assert abs(cox_rows.loc["sex", "Coefficient"] - (-0.5132)) < 1e-3  # R: coxph(Surv(time, status) ~ age + sex)
    assert np_rows.loc["sex", "95% CI low"] < np_rows.loc["sex", "Ratio"] < np_rows.loc["sex", "95% CI high"]
    previews = df[df.Estimate.str.endswith("preview")]
    assert len(previews) == 6 and previews["Coefficient"].notna().all()
    # noise-aware intervals, calibrated p-values and, in previews, the non-private p beside them
    assert (previews["95% CI low"] <= previews["Ratio"]).all() and (previews["Ratio"] <= previews["95% CI high"]).all()
    assert previews["p-value"].between(0, 1).all() and previews["Non-private p (preview only)"].between(0, 1).all()
    assert np_rows["p-value"].between(0, 1).all() and cox_rows.loc["sex", "p-value"] < 0.01  # R: p = 0.0018
    assert "carry the privacy noise" in text(at)
    assert any("includes 1 (no effect)" in w.value.replace("\\", "") for w in at.warning)  # lung at epsilon 1
    words = text(at)
    assert "approximate DP (MCMC)" in words and "exact DP" in words
    assert all(e.paper in words for e in catalogue.entries(catalogue.REGRESSION, "regression"))
    assert len(at.get("plotly_chart")) == 4  # forest, MRE vs epsilon, Lambda trade-off, chain traces
    assert releases() == []
    for kind in PRIVATE:
        at.button(key=f"release-regression-{kind}").click().run()
    recs = releases()
    assert [r.body["mechanism"] for r in recs] == ["output perturbation", "objective perturbation",
                                                   "pSGLD posterior sampling"]
    assert sum(r.body["cost"]["epsilon"] for r in recs) == pytest.approx(3.0)
    assert recs[-1].body["cost"]["guarantee"] == APPROXIMATE_MCMC
    assert "--epochs 60 --burn-in 30" in recs[-1].body["command"]
    at.run()  # a rerun shows the releases again without charging
    assert len(releases()) == 3


@pytest.mark.slow
def test_budget_cap_refuses_with_a_sentence():
    LedgerStore().set_cap(session.bundled_choice("lung").fingerprint, 1.5, "lung")
    at = run(dataset="lung", rg_covs=["age"], rg_mechs=["output", "objective"])
    at.button(key="release-regression-output").click().run()
    at.button(key="release-regression-objective").click().run()  # would pass the cap
    assert not at.exception and at.error
    assert len(releases()) == 1 and lung_ledger().spent() == pytest.approx(1.0)


def test_bad_covariates_are_error_sentences():
    choice = session.bundled_choice("lung")
    frame = choice.frame.copy()
    frame["const"] = 3.0
    frame["mixed"] = frame["age"].astype(str)
    frame.loc[5, "mixed"] = "unknown"
    choice.frame = frame
    for col, words in (("const", "constant"), ("mixed", "numeric but row 7")):
        at = run(data_choice=choice, rg_covs=["age", col])
        assert [e.value for e in at.error] and words in at.error[0].value, [e.value for e in at.error]
        assert "Traceback" not in at.error[0].value and not at.get("plotly_chart")
    assert releases() == []
