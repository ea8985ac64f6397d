"""AppTest of the Regression page (run from the repository root)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from ui import session

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "5_Regression.py")


def run(dataset: str | None = None, cap: float | None = None, **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    if dataset is not None:
        at.session_state["data_choice"] = session.bundled_choice(dataset)
    if cap is not None:
        at.session_state["budget_cap"] = cap
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_default_release_is_one_dp_fit_with_the_published_cohort_size():
    at = run(rg_trials=10)
    led = at.session_state["ledger"]
    assert [e.mechanism for e in led.entries] == ["objective perturbation"]
    # lung's published size (228) is the declared n: no not-DP disclosure, so the subject keeps its guarantee
    assert not [d for d in led.entries[0].disclosures if not d["dp"]] and led.void_reasons() == []
    assert "Guarantee: exact DP" in " ".join(m.value for m in at.markdown)


def test_counting_n_in_the_data_is_flagged_not_dp():
    at = run(rg_trials=10, rg_n_lung=0)
    led = at.session_state["ledger"]
    assert led.void_reasons() and "normaliser n" in led.void_reasons()[0]
    assert "Guarantee: none: not DP" in " ".join(m.value for m in at.markdown)


def test_all_fits_show_coefficients_ledger_and_guarantees():
    at = run(rg_trials=10, rg_mechs=["output", "objective", "psgld"])
    assert not at.error
    df = at.table[0].value
    assert isinstance(df, pd.DataFrame)
    assert set(df["Covariate"]) == {"age", "sex"}
    np_rows = df[df.Estimate.str.startswith("Discrete-time")].set_index("Covariate")
    cox_rows = df[df.Estimate.str.startswith("Cox")].set_index("Covariate")
    assert np_rows.loc["sex", "Ratio"] == np.exp(np_rows.loc["sex", "Coefficient"])
    assert abs(cox_rows.loc["sex", "Coefficient"] - (-0.5132)) < 1e-3  # R: coxph(Surv(time, status) ~ age + sex)
    assert np_rows.loc["sex", "95% CI low"] < np_rows.loc["sex", "Ratio"] < np_rows.loc["sex", "95% CI high"]
    released = df[df.Estimate.str.endswith("released")]
    assert len(released) == 6 and released["Coefficient"].notna().all()
    text = " ".join(m.value for m in at.markdown)
    assert "approximate DP (MCMC)" in text and "exact DP" in text
    assert "epsilon = 1, protecting the subject, neighbours: add/remove one subject" in text
    led = at.session_state["ledger"]
    assert led.spent() == 3.0 and {e.mechanism for e in led.entries} == {
        "output perturbation", "objective perturbation", "pSGLD posterior sampling"}
    assert any(e.cost.guarantee == "approximate (MCMC)" for e in led.entries)
    assert len(at.get("plotly_chart")) == 4  # forest, MRE vs epsilon, Lambda trade-off, chain traces
    # a rerun with the same settings shows the same releases without charging again
    at.run()
    assert at.session_state["ledger"].spent() == 3.0


def test_bad_covariate_and_budget_cap_get_sentences():
    at = run(dataset="lung", rg_covs=["age"], rg_mechs=["output", "objective"], budget_cap=1.5, rg_trials=10)
    warnings = " ".join(w.value for w in at.warning)
    assert "refused" in warnings  # the second release would pass the cap
    assert at.session_state["ledger"].spent() == 1.0


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
