"""AppTest of the Regression page (run from the repository root).

Explore freely, release once: the page and its settings show previews and charge nothing; each private fit's Release
button writes one record to the ledger database (``DPSURV_LEDGER``, one per test).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, LedgerStore, record_outputs
from dpsurv_core.publication import rederive
from dpsurv_core.report.text import format_ratio_ci
from tests.app.apptest import release, releases
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dpsurv_app" / "pages" / "5_Regression.py")
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


def declared_lung():
    """lung with its horizon declared on the Data page (1,100 days): with the documented bounds and published size the
    page declares by default, nothing a release uses is read off the data."""
    return dataclasses.replace(session.bundled_choice("lung"), horizon=1100.0)


def text(at: AppTest) -> str:
    return " ".join(shown_text(e.value) for e in [*at.markdown, *at.caption])


def lung_ledger():
    return LedgerStore().ledger(session.bundled_choice("lung").fingerprint)


@pytest.mark.slow
def test_default_page_previews_the_exact_dp_fits_and_charges_nothing():
    at = run()
    df = shown(at.table[0].value)
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
    at = run(data_choice=declared_lung())
    release(at, "release-regression-objective").run()
    assert not at.exception
    recs = releases()
    assert len(recs) == 1
    body = recs[0].body
    assert body["mechanism"] == "objective perturbation" and body["analysis"] == "regression"
    assert body["cost"]["epsilon"] == pytest.approx(1.0)
    assert body["command"].startswith("python -m dpsurv_core regression ")
    assert "--covariates age,sex --mechanism objective --epsilon 1" in body["command"]
    assert "--n-public 228" in body["command"]  # lung's published size is the declared n
    assert "--horizon 1100" in body["command"] and "--accept-disclosure" not in body["command"]
    outputs = record_outputs(body)
    assert set(outputs["coefficients"][0]) == {"age", "sex=Female"}  # sex: an indicator against Male
    # the record holds the noisy w and the declared values, and its readable part is recomputed from them alone
    assert body["kind"] == "regression" and len(body["released"]["w"][0]) == 2 + 5
    assert body["public_inputs"]["n_public"] == 228 and body["public_inputs"]["horizon"] == 1100.0
    assert rederive(body)["identical"]
    # no not-DP disclosure, so the subject keeps its guarantee
    assert not [d for d in body["disclosures"] if not d["dp"]] and lung_ledger().void_reasons() == []
    df = shown(at.table[0].value)
    released = df[df.Estimate.str.endswith(f"released, record {recs[0].id}")].set_index("Covariate")
    assert released.loc["sex: Female vs Male", "Coefficient (log ratio)"] == pytest.approx(
        outputs["coefficients"][0]["sex=Female"], abs=5e-5)
    # the page shows the record's interval (the reader's, computed from the record alone), not one of its own
    row = next(r for r in outputs["intervals"] if r["covariate"] == "sex=Female")
    assert row["covariate_label"] == "sex: Female vs Male"
    assert released.loc["sex: Female vs Male", "Ratio (95% CI)"] == format_ratio_ci(row["ratio"], row["ratio_lower"],
                                                                                     row["ratio_upper"])
    release(at, "release-regression-objective").run()  # a fresh draw, a second record
    assert len(releases()) == 2


def test_a_horizon_read_off_the_data_is_refused_until_declared_or_accepted():
    """Bundled lung without a declared horizon: the horizon is read off the data (1,100, the largest time rounded
    up), so the Release button is off, with one sentence naming it, and nothing is recorded; ticking its box publishes
    it as read, and the record says the release is not DP as run."""
    at = run()
    button = at.button(key="release-regression-output")
    assert button.disabled and releases() == []
    assert any("Release is off" in w.value and "(horizon)" in shown_text(w.value) for w in at.warning)
    at.checkbox(key="accept-regression-output-horizon").check().run()
    release(at, "release-regression-output").run()
    assert not at.exception
    (rec,) = releases()
    assert "--accept-disclosure horizon" in rec.body["command"]
    assert [d["parameter"] for d in rec.body["disclosures"] if not d["dp"]] == ["horizon"]
    assert rec.body["public_inputs"]["horizon"] == 1100.0 and rederive(rec.body)["identical"]


def test_counting_n_in_the_data_is_flagged_not_dp():
    at = run(data_choice=declared_lung(), rg_n_lung=None)
    assert "Guarantee: none: not DP" in text(at) and "a release needs n declared" in text(at)
    assert releases() == []
    assert at.button(key="release-regression-output").disabled  # n undeclared: nothing can be drawn or charged
    assert any("Release is off" in w.value and "(n)" in shown_text(w.value) for w in at.warning)
    at.checkbox(key="accept-regression-output-n").check().run()
    release(at, "release-regression-output").run()
    (rec,) = releases()
    assert "--n-public" not in rec.body["command"] and "--accept-disclosure n" in rec.body["command"]
    assert rec.body["public_inputs"]["n_public"] == 228  # the count, published as read: the record says so
    reasons = lung_ledger().void_reasons()
    assert reasons and "n read off the data" in reasons[0]


def test_an_uploaded_cohort_declares_no_n_by_default():
    """On an upload (no published size) the public n starts empty: the page does not count it in the data and call
    the release epsilon-DP; the release needs the declared n (or the box that publishes the count as read)."""
    from dpsurv_core.data.labels import ValueLabels

    upload = dataclasses.replace(declared_lung(), name="trial.csv", bundled=False)
    # sex's codes named on the Data page: its categories are declared (an upload's unnamed codes would be read off)
    named = ValueLabels().with_labels("sex", {1: "Male", 2: "Female"}).with_kind("sex", "categorical")
    at = run(data_choice=upload, value_labels={upload.fingerprint: named})
    assert at.number_input(key="rg_n_trial.csv").value is None
    assert "a release needs n declared" in text(at) and at.button(key="release-regression-output").disabled
    at.number_input(key="rg_n_trial.csv").set_value(228).run()
    assert not at.button(key="release-regression-output").disabled
    release(at, "release-regression-output").run()
    (rec,) = releases()
    assert rec.body["public_inputs"]["n_public"] == 228 and "--n-public 228" in rec.body["command"]
    assert not [d for d in rec.body["disclosures"] if not d["dp"]] and rederive(rec.body)["identical"]


@pytest.mark.slow
def test_all_fits_show_coefficients_and_guarantees():
    at = run(data_choice=declared_lung(), rg_mechs=PRIVATE, rg_run_study=True, rg_run_chains=True)
    assert not at.error
    df = shown(at.table[0].value)
    assert isinstance(df, pd.DataFrame)
    sex = "sex: Female vs Male"  # a categorical covariate: an indicator against its reference level
    assert set(df["Covariate"]) == {"age", sex}
    np_rows = df[df.Estimate.str.startswith("Discrete-time")].set_index("Covariate")
    cox_rows = df[df.Estimate.str.startswith("Cox")].set_index("Covariate")
    # R: coxph(Surv(time, status) ~ age + factor(sex)): coef -0.5132, HR 0.60 (0.43 to 0.83), p = 0.0018
    assert abs(cox_rows.loc[sex, "Coefficient (log ratio)"] - (-0.5132)) < 1e-3
    assert cox_rows.loc[sex, "Ratio (95% CI)"] == "0.60 (95% CI 0.43 to 0.83)"
    assert cox_rows.loc[sex, "p"] in ("0.0018", "0.0022")  # two significant digits
    assert np_rows.loc[sex, "Ratio (95% CI)"].startswith(f"{np.exp(np_rows.loc[sex, 'Coefficient (log ratio)']):.2f}")
    previews = df[df.Estimate.str.endswith("preview")]
    assert len(previews) == 6 and previews["Coefficient (log ratio)"].notna().all()
    # noise-aware intervals, calibrated p-values and, in previews, the non-private p beside them
    assert previews["Ratio (95% CI)"].str.contains("95% CI|10⁶|10⁻⁶").all()
    assert (previews["p"] != "–").all() and (previews["Non-private p (preview only)"] != "–").all()
    assert "Reference levels" in text(at) and "sex: Male" in text(at)
    assert "carry the privacy noise" in text(at)
    assert any("includes 1 (no effect)" in w.value.replace("\\", "") for w in at.warning)  # lung at epsilon 1
    words = text(at)
    assert "approximate DP (MCMC)" in words and "exact DP" in words
    assert all(e.paper in words for e in catalogue.entries(catalogue.REGRESSION, "regression"))
    assert len(at.get("plotly_chart")) == 4  # forest, MRE vs epsilon, Lambda trade-off, chain traces
    assert releases() == []
    for kind in PRIVATE:
        release(at, f"release-regression-{kind}").run()
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
    at = run(data_choice=declared_lung(), rg_covs=["age"], rg_mechs=["output", "objective"])
    release(at, "release-regression-output").run()
    # the second would pass the cap: its button is off, with the ledger's sentence naming the cap
    assert not at.exception and at.button(key="release-regression-objective").disabled
    assert any("Release is off" in w.value and "cap" in w.value for w in at.warning)
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
        assert [e.value for e in at.error] and words in shown_text(at.error[0].value), [e.value for e in at.error]
        assert "Traceback" not in at.error[0].value and not at.get("plotly_chart")
    assert releases() == []


def test_clinician_view_labels_reference_levels_glossary_and_downloads():
    at = run(rg_covs=["age", "ph.ecog"])
    df = shown(at.table[0].value)
    # ph.ecog is categorical in lung's R documentation: one indicator per score against ECOG 0, named by its label
    cox = df[df.Estimate.str.startswith("Cox")]
    assert list(cox.Covariate) == ["age", "ph.ecog: ECOG 1: symptomatic, fully ambulatory vs ECOG 0: asymptomatic",
                                   "ph.ecog: ECOG 2: in bed < 50% of the day vs ECOG 0: asymptomatic",
                                   "ph.ecog: ECOG 3: in bed > 50% of the day, not bedbound vs ECOG 0: asymptomatic"]
    # coxph(Surv(time, status) ~ age + factor(ph.ecog), lung), Efron ties (lifelines on dummies agrees): ECOG 2 vs 0
    assert cox.iloc[2]["Ratio (95% CI)"] == "2.36 (95% CI 1.50 to 3.70)" and cox.iloc[2]["p"] == "< 0.001"
    assert "Reference levels" in text(at) and "ph.ecog: ECOG 0: asymptomatic" in text(at).replace("\\", "")
    (box,) = [e for e in at.expander if "What am I looking at?" in e.label]
    assert box.proto.expanded and "reference level" in box.markdown[0].value
    popovers = {p.proto.popover.label for p in at.get("popover")}
    assert {"odds ratio", "Wald test", "calibrated p-value", "output perturbation", "objective perturbation", "pSGLD",
            "sanitizer bound", "reference level"} <= popovers
    downloads = [b.proto.label for b in at.get("download_button")]
    assert downloads.count("Figure as PNG") == len(at.get("plotly_chart")) == 1  # the forest plot; studies wait
    assert "Table as CSV" in downloads
    assert any("error study is off" in i.value for i in at.info)
    for w in at.warning:  # every warning says what to do next
        assert any(word in w.value for word in ("spend", "raise", "use a larger", "declare", "choose", "remove"))
    assert releases() == []


def test_epsilon_redraw_keeps_the_design_and_shows_what_a_fresh_session_shows():
    """Moving epsilon reuses this session's person-period design and w*(Lambda) (pages/5_Regression.py keeps them):
    the table must be the one a fresh session shows at that epsilon with the same preview seed; a design change
    (T) builds a new design."""
    seed = 20261123
    at = run(preview_seed=seed)
    design = at.session_state["rg_design"]
    at.select_slider(key="rg_eps").set_value(0.5).run()
    assert not at.exception and at.session_state["rg_design"][1] is design[1]
    pd.testing.assert_frame_equal(at.table[0].value, run(preview_seed=seed, rg_eps=0.5).table[0].value)
    at.number_input(key="rg_T").set_value(10).run()
    assert not at.exception
    assert at.session_state["rg_design"][1] is not design[1] and at.session_state["rg_design"][1].intervals == 10
    assert "T = 10 intervals" in text(at)
    pd.testing.assert_frame_equal(at.table[0].value, run(preview_seed=seed, rg_eps=0.5, rg_T=10).table[0].value)
    assert releases() == []


def test_kept_fits_are_the_fits_computed_afresh():
    """The page hands output perturbation a kept w*(Lambda), and the previews share one kept maximum-likelihood fit:
    both are the same L-BFGS call on the same design, so the released draw and the p-values are bit for bit equal."""
    from dpsurv_core.data.cohort import validate
    from dpsurv_core.privacy.noise import SimulationNoise
    from dpsurv_core.regression.inference import nonprivate_fit
    from dpsurv_core.regression.model import fit_nonprivate, minimise
    from dpsurv_core.regression.person_period import person_period

    lung = session.bundled_choice("lung")
    cohort = validate(lung.frame, dataclasses.replace(lung.mapping, covariates=("age",)))[0]
    pp = person_period(cohort, ["age"], intervals=10, knots=3, n_public=228)
    mech = catalogue.get(catalogue.REGRESSION, "output").build(0.5, pp=pp, lam=0.01)
    kept = mech.compute(pp, SimulationNoise(7), trials=3, w_star=minimise(pp, mech.lam)).W
    np.testing.assert_array_equal(kept, mech.compute(pp, SimulationNoise(7), trials=3).W)
    fit = nonprivate_fit(pp)
    assert nonprivate_fit(pp) is fit  # kept on the design
    again = fit_nonprivate(pp, 0.0)
    np.testing.assert_array_equal(fit.w, again.w)
    np.testing.assert_array_equal(fit.se, again.se)



def test_psgld_several_draws_give_an_interval_and_say_so_in_the_command():
    """Several released pSGLD draws (epsilon split) give an interval from their spread, narrower than one draw's
    prior-wide interval, and the reproduce command carries --draws."""
    sampler = [k for k in PRIVATE if catalogue.get(catalogue.REGRESSION, k).guarantee == APPROXIMATE_MCMC]
    one = run(rg_mechs=sampler, rg_covs=["age"])
    five = run(rg_mechs=sampler, rg_covs=["age"], rg_draws=5)
    def command(at: AppTest) -> str:
        return next(c.value for c in at.caption if c.value.startswith("Reproduce on the command line"))

    assert "--draws 5" in command(five) and "--draws" not in command(one)
    assert any("prior" in w.value for w in one.warning)  # one draw: an interval as wide as the prior
    assert not any("as wide as" in w.value and "prior" in w.value for w in five.warning)


def test_each_private_row_says_its_own_caution_and_sentences_come_after_the_table():
    """Private fits on lung at epsilon 1 have rows whose sign flips or whose interval spans 1 widely: the row says so
    in the table, and the page's sentences are gathered in one 'Read with care' box (they stood before the table)."""
    at = run(data_choice=declared_lung())
    frame = next(shown(t.value) for t in at.table if "Read with care" in shown(t.value).columns)
    private = frame[frame["Epsilon"].str.contains("charged|preview")]
    assert len(private) and (private["Read with care"] != "").any()
    assert not (frame[~frame.index.isin(private.index)]["Read with care"] != "").any()  # non-private rows: none
    assert any(m.value == "**Read with care**" for m in at.markdown)
