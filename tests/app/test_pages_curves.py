"""AppTest of the Survival curves and Group comparison pages (run from the repository root).

Explore freely, release once: opening a page and moving its widgets shows previews and charges nothing; only the
Release button writes a record to the ledger database (``DPSURV_LEDGER``, one per test).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_app import session
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import LedgerStore, record_outputs
from tests.app.apptest import release, releases
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py")
KM = catalogue.ids(catalogue.CURVES, "km", private=True)
# the time grids a release declares (the Data page's box): the grids each data set's default reads off the data
# (20 bins up to its largest time rounded up), so that the numbers are those of the pages' defaults
GRIDS = {"lung": "0:1100:20", "pbc": "0:4800:20", "stanford2": "0:3700:20"}


def declared(dataset: str = "lung") -> session.DataChoice:
    """A bundled data set with its time grid declared on the Data page (its documented codes declare its groups)."""
    import dataclasses

    return dataclasses.replace(session.bundled_choice(dataset), grid=GRIDS[dataset])


def run(path: str, dataset: str | None = None, grid: bool = False, preview_secret: int | None = None) -> AppTest:
    """``path`` on ``dataset`` (lung by default); ``grid``: with its time grid declared, so that a release reads
    nothing off the data; ``preview_secret``: the session's preview secret (random when None), for previews drawn
    the same at every run."""
    at = AppTest.from_file(path, default_timeout=30)
    if preview_secret is not None:
        at.session_state["preview_seed"] = preview_secret
    if grid:
        at.session_state["data_choice"] = declared(dataset or "lung")
    elif dataset is not None:
        at.session_state["data_choice"] = session.bundled_choice(dataset)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def table(at: AppTest, first_column: str, value: str | None = None) -> pd.DataFrame:
    """The widest st.table whose first column (or index) is ``first_column`` (the log-rank tests show six columns
    first and every column in an expander's table after it)."""
    found = [df for df in (shown(t.value) for t in at.table)
             if df.columns[0] == first_column or (value is not None and value in df.index)]
    if found:
        return max(found, key=lambda df: len(df.columns)) if first_column == "Test" else found[0]
    raise AssertionError(f"no table starting with {first_column!r}: {[t.value.columns[0] for t in at.table]}")


def private_numbers(at: AppTest, label: str = "preview") -> list[str]:
    """The private at-risk row and the private landmark column, as shown."""
    risk = table(at, "0", f"All patients, {label}")
    return risk.loc[f"All patients, {label}"].tolist() + table(at, "Group").iloc[:, -1].tolist()


def text(at: AppTest) -> str:
    return " ".join(shown_text(e.value) for e in [*at.markdown, *at.caption])


def test_default_lung_page_shows_exact_numbers_and_a_labelled_preview():
    at = run(CURVES)
    med = table(at, "Group")
    assert med.loc[0, "Non-private (days)"] == "310 (285 to 363)"  # R: survfit(Surv(time, status) ~ 1, lung)
    assert med.loc[0, "Preview (days)"] != ""
    risk = table(at, "0", "All patients, non-private")
    assert risk.loc["All patients, non-private", "0"] == "228"
    assert risk.loc["All patients, non-private", "110"] == "192"  # R: summary(fit, times = 110)$n.risk (time >= 110)
    assert "All patients, preview" in risk.index
    landmark = [t for t in (shown(x.value) for x in at.table) if "Time" in t.columns][0]
    assert landmark.loc[0, "Time"] == "1 year, read at 330 days"  # the public grid's point before 365 days
    assert landmark.loc[0, "Non-private (95% CI)"] == "48.3% (41.8% to 55.8%)"  # both columns read at 330 days
    assert "Preview (95% CI)" in landmark.columns
    rmst = [t for t in (shown(x.value) for x in at.table) if "Preview minus non-private (days)" in t.columns][0]
    assert rmst.loc[0, "Non-private (days)"] == "380"
    words = text(at)
    assert "Preview, not for publication" in words  # the preview's mark, with what a release would charge
    assert "Releasing this plan would charge epsilon = 1, protecting the subject" in words
    assert catalogue.get(catalogue.CURVES, "laplace-counts").paper in words  # the explainer cites the catalogue
    assert "horizon 1100 was read off the data" in words  # disclosure in view
    assert at.button(key="release-curves").label.startswith("Release")
    assert releases() == []  # opening the page charges nothing


def test_moving_epsilon_redraws_the_preview_and_charges_nothing():
    at = run(CURVES)
    before = private_numbers(at)
    at.run()  # a rerun shows the same preview
    assert private_numbers(at) == before
    at.select_slider(key="sc_epsilon").set_value(0.2).run()
    assert private_numbers(at) != before
    assert "Releasing this plan would charge epsilon = 0.2" in text(at)
    at.select_slider(key="sc_epsilon").set_value(1.0).run()  # back: the same preview (the session's seed)
    assert private_numbers(at) == before
    at.radio(key="sc_layout").set_value("side by side").run()
    at.radio(key="sc_estimand").set_value("cumulative hazard").run()
    assert not at.exception
    assert releases() == []


def test_release_button_charges_once_per_click_and_labels_the_released_numbers():
    at = run(CURVES, grid=True)
    at.select_slider(key="sc_epsilon").set_value(0.5).run()
    assert releases() == []
    release(at, "release-curves").run()
    assert not at.exception, [e.message for e in at.exception]
    recs = releases()
    assert len(recs) == 1
    body = recs[0].body
    assert body["cost"]["epsilon"] == pytest.approx(0.5) and body["analysis"] == "survival curves"
    assert body["command"].startswith("python -m dpsurv_core km ")
    assert "--mechanism laplace-counts --epsilon 0.5" in body["command"]
    assert len(record_outputs(body)["survival"]) == 1 and len(record_outputs(body)["survival"][0]) == 20
    label = f"released, record {recs[0].id}"
    first = private_numbers(at, label)
    assert f"Released as record {recs[0].id}" in " ".join(s.value for s in at.success)
    assert f"Released, record {recs[0].id} (days)" in table(at, "Group").columns
    at.run()  # a rerun shows the release again and charges nothing
    assert len(releases()) == 1 and private_numbers(at, label) == first
    at.radio(key="sc_estimand").set_value("cumulative hazard").run()  # another view of the same release
    assert len(releases()) == 1 and f"released, record {recs[0].id}" in text(at)
    at.radio(key="sc_estimand").set_value("survival").run()
    release(at, "release-curves").run()  # a second click: a fresh draw, a second record
    recs = releases()
    assert len(recs) == 2 and recs[1].id != recs[0].id
    assert private_numbers(at, f"released, record {recs[1].id}") != first


def test_budget_refusal_is_a_sentence_and_records_nothing():
    LedgerStore().set_cap(session.bundled_choice("lung").fingerprint, 0.5, "lung")
    at = run(CURVES, grid=True)
    assert not at.exception
    # the budget cannot pay: the button is off before any click, with the ledger's sentence naming the cap
    assert at.button(key="release-curves").disabled
    said = " ".join(shown_text(w.value) for w in at.warning)
    assert "Release is off" in said and "0.5" in said
    assert releases() == []
    assert "Preview (days)" in table(at, "Group").columns  # the preview stays, labelled


def test_time_indexed_releases_no_counts():
    assert "time-indexed" in KM
    at = run(CURVES, grid=True)
    at.selectbox(key="sc_mechanism").set_value("time-indexed").run()
    assert not at.exception
    risk = table(at, "0", "All patients, preview")
    assert set(risk.loc["All patients, preview"]) == {"not released"}
    median = table(at, "Group").loc[0, "Preview (days)"]
    # its band inverts the noise pipeline: the median has limits, or says in words why it has none
    assert re.fullmatch(r"\d+ \((\d+|not reached) to (\d+|not reached)\)", median) or "no CI: the band allows" in median
    at.radio(key="sc_eps_mode").set_value("as published").run()  # base e = 0.008 on 20 points, alpha 0.5
    total = 0.008 * 20 * (1 + 0.5 * 21 / 2)
    assert f"epsilon = {total:.4g}, protecting the subject" in text(at)
    assert releases() == []
    release(at, "release-curves").run()
    recs = releases()
    assert len(recs) == 1 and recs[0].body["cost"]["epsilon"] == pytest.approx(total)
    assert "--base-epsilon 0.008" in recs[0].body["command"] and "--epsilon" not in recs[0].body["command"]
    at.number_input(key="sc_opt_tau_end").set_value(1.0).run()
    at.number_input(key="sc_opt_tau_start").set_value(0.5).run()  # tau start below tau end: one sentence
    assert not at.exception and any("tau" in e.value for e in at.error)


@pytest.mark.parametrize("name", [n for n in ("adaptive-km", "rrr") if n in KM])
def test_other_mechanisms_render(name):
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value(name).run()
    assert not at.exception
    if name == "rrr":
        assert "protects the group label only" in text(at).lower()
        assert table(at, "Group")["Group"].tolist() == ["Male", "Female"]  # value labels
    assert releases() == []


def test_suppression_says_its_number_at_risk_counts_hidden_cells_as_zero():
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value("suppress-small-cells").run()
    assert not at.exception
    assert "count as 0 here" in text(at)
    at.selectbox(key="sc_mechanism").set_value("laplace-counts").run()
    assert "count as 0 here" not in text(at)


def test_cumulative_incidence_on_pbc():
    at = run(CURVES, dataset="pbc", grid=True)
    at.radio(key="sc_estimand").set_value("cumulative incidence").run()
    assert not at.exception
    landmark = [t for t in (shown(x.value) for x in at.table) if "Time" in t.columns][0]
    assert {"All patients: transplant", "All patients: death"} <= set(landmark["Group"])
    # the non-private incidence has R's interval (infinitesimal jackknife variance), the estimate inside it
    for cell in landmark["Non-private (95% CI)"]:
        if cell == "0.0% (no interval)":  # R's NA where nobody has had the event yet
            continue
        m = re.fullmatch(r"([\d.]+)% \(([\d.]+)% to ([\d.]+)%\)", cell)
        assert m, cell
        value, lo, up = map(float, m.groups())
        assert lo < value < up
    assert "The non-private band is drawn side by side" in text(at)  # overlaid: only the private band is shaded
    at.radio(key="sc_layout").set_value("side by side").run()
    assert "infinitesimal jackknife" in text(at)
    release(at, "release-curves").run()
    assert "--estimand cumulative-incidence" in releases()[0].body["command"]


def test_rrr_incidence_chart_draws_the_de_biased_curves_the_tables_read():
    """Randomized response: the incidence chart draws the de-biased curves with their noise-aware band, the curves
    whose numbers the landmark table prints, and names them so."""
    import json

    if "rrr" not in KM:
        pytest.skip("rrr is not offered")
    at = run(CURVES, dataset="pbc")
    at.selectbox(key="sc_mechanism").set_value("rrr").run()
    at.radio(key="sc_estimand").set_value("cumulative incidence").run()
    assert not at.exception
    traces = json.loads(at.get("plotly_chart")[0].proto.spec)["data"]
    names = [t.get("name", "") for t in traces if t.get("showlegend", True) is not False]
    assert any("(de-biased)" in n for n in names)
    assert any(t.get("fill") == "tonexty" for t in traces)  # the de-biased band is drawn
    assert "carries the noise" in text(at)


@pytest.mark.parametrize("dataset, estimand", [("lung", "cumulative hazard"), ("pbc", "cumulative incidence")])
def test_hazard_and_incidence_landmarks_have_intervals_that_carry_the_noise(dataset, estimand):
    """Every private number beside the landmarks has an interval (the hazard's from the noise-aware survival band,
    the incidence's from its noise-aware variance), as km prints them, and the estimate lies inside it."""
    at = run(CURVES, dataset=dataset)
    at.radio(key="sc_estimand").set_value(estimand).run()
    assert not at.exception
    landmark = [t for t in (shown(x.value) for x in at.table) if "Time" in t.columns][0]
    private = landmark[[c for c in landmark.columns if c.startswith("Preview")][0]]
    pattern = r"([\d.]+)%? \(([\d.]+)%? to (?:([\d.]+)%?|no upper limit)\)"
    for cell in private:
        if cell == "beyond the horizon":
            continue
        m = re.fullmatch(pattern, cell)
        assert m, cell
        value, lo, up = (float(x) if x is not None else float("inf") for x in m.groups())
        assert lo <= value + 1e-9 and value <= up + 1e-9
    assert "carries the noise" in text(at)


def test_group_page_lung_log_rank():
    at = run(GROUPS)
    lr = table(at, "Test")
    assert lr.loc[0, "Test"] == "Male vs Female"
    assert lr.loc[0, "Chi² non-private"] == "10.33"  # Gondara & Wang 2020 Table 3, "No privacy": 10.3
    assert lr.loc[0, "p non-private"] == "0.0013"
    assert lr.loc[0, "Flip?"] in {"same conclusion", "FLIPPED: significant → not significant"}
    assert "Chi² preview (noise-adjusted)" in lr.columns  # laplace-counts, the default
    # one epsilon control, and only the mechanisms that publish counts are offered
    assert len([w for w in [*at.select_slider, *at.number_input] if "epsilon" in w.label.lower()]) == 1
    assert at.selectbox(key="gc_mechanism").options == [catalogue.get(catalogue.CURVES, m).name for m in
                                                        catalogue.ids(catalogue.CURVES, "logrank", private=True)]
    if "time-indexed" in KM:
        assert catalogue.get(catalogue.CURVES, "time-indexed").name in text(at)  # said to be not offered
    at.select_slider(key="gc_epsilon").set_value(0.5).run()
    assert releases() == []
    if "rrr" in KM:
        at.selectbox(key="gc_mechanism").set_value("rrr").run()
        assert not at.exception
        assert len([t for t in at.table if t.value.columns[0] == "Test"]) == 4  # raw and de-biased, each with all columns
        assert any("group label only" in m.value for m in at.markdown)
        assert "reported groups need no calibration" in text(at)  # the preview caption agrees with the raw table
    assert releases() == []


def test_group_page_release_is_labelled_log_rank_tests():
    at = run(GROUPS, grid=True)
    release(at, "release-logrank").run()
    assert not at.exception
    recs = releases()
    assert len(recs) == 1
    body = recs[0].body
    assert body["analysis"] == "log-rank tests" and body["cost"]["epsilon"] == pytest.approx(1.0)
    assert body["command"].startswith("python -m dpsurv_core logrank ") and "--group sex" in body["command"]
    assert record_outputs(body)["tests"][0]["group_a"] == "1" and "at_risk" in record_outputs(body)
    assert f"Chi² released, record {recs[0].id} (noise-adjusted)" in table(at, "Test").columns
    # the record keeps the calibrated test the page shows (not the chi-square tail that ignores the noise)
    kept = record_outputs(body)["tests"][0]
    shown = table(at, "Test")
    p_col = next(c for c in shown.columns if c.startswith("p released") and "calibrated" in c)
    assert shown[p_col].iloc[0] == cv.fmt_p(kept["p_value"]) and kept["test_method"].startswith("Monte Carlo")
    assert record_outputs(body)["test_warnings"]
    release(at, "release-logrank").run()
    assert len(releases()) == 2


def test_group_page_without_a_group_explains_and_offers_a_numeric_split():
    at = run(GROUPS, dataset="stanford2", grid=True)
    assert any("No group column is mapped" in i.value for i in at.info)
    assert not at.table
    at.selectbox(key="gc_split_col").set_value("age").run()
    at.number_input(key="gc_split_cut").set_value(44.0).run()
    assert not at.exception
    lr = table(at, "Test")
    assert lr.loc[0, "Test"] == "age <= 44 vs age > 44"
    assert lr.loc[0, "Chi² non-private"] == "6.58"  # Gondara & Wang 2020 Table 3: stanford2 by age, 6.6
    release(at, "release-logrank").run()
    assert "--group age:44" in releases()[0].body["command"]


MINE = ["pages/2_Survival_curves.py", "pages/3_Group_comparison.py", "pages/4_Weibull_parameters.py",
        "pages/5_Regression.py", "pages/7_Trade-off_explorer.py", "curves_view.py", "tradeoff_view.py",
        "curve_format.py", "curve_figures.py", "curve_readings.py", "curve_tables.py", "curve_mechanisms.py",
        "exact_curves.py", "curve_plans.py", "curve_release.py", "regression_view.py", "weibull_view.py"]  # in dpsurv_app/


@pytest.mark.parametrize("path", MINE)
def test_pages_neither_spell_mechanism_ids_nor_build_mechanisms(path):
    source = (ROOT / "dpsurv_app" / path).read_text()
    ids = {e.id for e in catalogue.ENTRIES}
    spelled = [i for i in ids if re.search(rf"""["']{re.escape(i)}["']""", source)]
    assert not spelled, f"{path} spells mechanism ids {spelled}: read them from the catalogue"
    for banned in ("record_release", "releases.store", "ReleaseNoise", "mechanism_class", "make_mechanism",
                   "build_mechanism", "available()"):
        assert banned not in source, f"{path} uses {banned}"


def test_time_indexed_takes_declared_group_sizes_and_says_what_its_band_covers():
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value("time-indexed").run()
    assert not at.exception
    assert "not the sampling error" in text(at)
    at.text_input(key="sc_sample_size").set_value("228").run()
    assert not at.exception
    assert "declared size 228" in text(at) and "covers the sampling error" in text(at)
    at.text_input(key="sc_sample_size").set_value("lots").run()
    assert not at.exception
    assert any("declared group size must be whole numbers" in e.value for e in at.error)
    assert "not the sampling error" in text(at)


def test_time_indexed_takes_a_declared_censoring_share_with_the_sizes():
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value("time-indexed").run()
    assert at.text_input(key="sc_censoring").disabled  # a share needs a declared size
    at.text_input(key="sc_sample_size").set_value("228").run()
    assert "uncensored (no censoring share declared)" in text(at)
    at.text_input(key="sc_censoring").set_value("30%").run()
    assert not at.exception
    assert "censored uniformly at the declared share 30%" in text(at) and "--censoring 0.3" in text(at)
    at.text_input(key="sc_censoring").set_value("1.5").run()
    assert not at.exception
    assert any("censoring share must be numbers from 0" in e.value for e in at.error)
    assert "uncensored (no censoring share declared)" in text(at)


def test_reproduce_command_reads_group_labels_set_on_the_data_page():
    """Group names changed on the Data page travel to the printed command as --labels <name>-labels.json (the file the
    Data page's 'Labels as JSON' saves); with the bundled labels the command needs no file."""
    from dpsurv_core.data.labels import ValueLabels

    group_page = str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py")
    at = run(group_page)
    assert "--labels" not in text(at)
    at = AppTest.from_file(group_page, default_timeout=60)
    at.run()
    fp = at.session_state["data_choice"].fingerprint
    at.session_state["value_labels"] = {fp: ValueLabels().with_labels("sex", {1: "Men", 2: "Women"})}
    at.run()
    assert not at.exception
    assert "--labels lung-labels.json" in text(at)


def test_declared_categories_without_patients_are_named_in_one_sentence():
    """Group categories typed as labels ('Male', 'Female') where lung holds codes 1 and 2, or one more category than
    the data have: the pages say which groups describe nobody instead of printing 'not reached' for them."""
    import dataclasses

    for path in (CURVES, GROUPS):
        at = AppTest.from_file(path, default_timeout=30)
        at.session_state["data_choice"] = dataclasses.replace(session.bundled_choice("lung"),
                                                              group_categories=("1", "2", "3"))
        at.session_state["sc_split"] = True
        at.run()
        assert not at.exception
        (w,) = [shown_text(w.value) for w in at.warning if w.value.startswith("No patient in the data is in")]
        assert "sex = 3" in w and "Male" not in w.split(":")[0]


def test_the_record_keeps_what_the_page_prints_beside_the_release():
    """The band type, medians, landmarks and RMST the page shows at the Release click are the record's (so a report
    rebuilt from the ledger repeats them), and its command line reads them the same way; changing how the release is
    read afterwards keeps the release on the page."""
    at = run(CURVES, grid=True)
    at.selectbox(key="sc_conf_type").set_value("log-log").run()
    at.number_input(key="sc_rmst_lung_days").set_value(400.0).run()
    at.text_input(key="sc_lm_lung_days_years").set_value("0.5, 1").run()
    release(at, "release-curves").run()
    assert not at.exception, [e.message for e in at.exception]
    (rec,) = releases()
    out, command = record_outputs(rec.body), rec.body["command"]
    assert out["conf_type"] == "log-log" and "--conf-type log-log --landmarks 182.625,365.25 --rmst 400" in command
    assert [e["time_requested"] for e in out["landmarks"]] == [182.625, 365.25]
    assert [e["time_used"] for e in out["rmst"]] == [400.0]
    label = f"Released, record {rec.id} (days)"
    med = table(at, "Group")
    m = out["medians"][0]
    # a record keeps "not reached" as null, read back as infinity (as the report reads it)
    lim = [math.inf if m[k] is None else m[k] for k in ("median", "median_lower", "median_upper")]
    assert med.loc[0, label] == cv.fmt_ci_time(*lim, "days")
    assert not [i for i in at.info if "after the Release click" in i.value]
    at.selectbox(key="sc_conf_type").set_value("log").run()  # another reading of the same release
    # its numbers are labelled as read anew, not as the record's
    assert len(releases()) == 1 and f"Record {rec.id} read anew (days)" in table(at, "Group").columns
    assert f"Released, record {rec.id} (days)" not in table(at, "Group").columns
    (note,) = [i.value for i in at.info if "after the Release click" in i.value]  # said not to be the record's
    assert "keep the click's readings: the log-log band." in note and "landmark" not in note and "RMST" not in note
    at.number_input(key="sc_rmst_lung_days").set_value(300.0).run()
    (note,) = [i.value for i in at.info if "after the Release click" in i.value]
    assert "keep the click's readings: the log-log band and the RMST time." in note and "charged again" in note
    at.selectbox(key="sc_conf_type").set_value("log-log").run()
    at.number_input(key="sc_rmst_lung_days").set_value(400.0).run()  # back to the click's readings: no note
    assert not [i for i in at.info if "after the Release click" in i.value]
    assert label in table(at, "Group").columns


def test_cumulative_hazard_chart_draws_and_names_its_band():
    import json

    at = run(CURVES)
    at.radio(key="sc_estimand").set_value("cumulative hazard").run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert any(d.get("fill") == "tonexty" for d in spec["data"])  # the private curve's band, overlaid
    assert spec["layout"]["legend"]["title"]["text"] == "Shaded: 95% log band"
    assert any("band of type log on the cumulative hazard" in c.value for c in at.caption)


def test_reading_note_names_the_default_band_the_record_keeps():
    from dpsurv_app.release_panel import reading_changed

    recorded = "python -m dpsurv_core km --data lung --epsilon 1"  # R's default log band: no --conf-type
    assert reading_changed(recorded, recorded + " --conf-type log") is None
    note = reading_changed(recorded, recorded + " --conf-type plain --landmarks 365")
    assert "keep the click's readings: the log band and no landmark times." in note


def test_the_spread_of_twenty_preview_draws_is_shown_on_request_and_charges_nothing():
    """Before a release the page offers the spread of the private median over 20 preview draws; the numbers are the
    core's reading of a 20-draw simulation of the same plan (free), and nothing is recorded."""
    # a fixed preview secret: with a random one the two spreads below, read on lung's 20-bin grid, matched by chance
    # in one full run (both "330 to 385 days (median 330)")
    at = run(CURVES, grid=True, preview_secret=20261130)
    assert not [c for c in at.caption if "preview draws (simulation noise" in c.value]
    at.button(key="spread-curves").click().run()
    assert not at.exception, [e.message for e in at.exception]
    (cap,) = [c.value for c in at.caption if "Private median across 20 preview draws" in c.value]
    found = re.search(r"All patients: ([\d,]+) to ([\d,]+) days \(median ([\d,]+)\)", cap)
    assert found, cap
    lo, hi, mid = (float(x.replace(",", "")) for x in found.groups())
    assert lo <= mid <= hi and 150 < mid < 500  # lung's median is 310 days
    assert releases() == []
    # another plan is drawn 20 times only on request again (a redraw stays quick)
    at.select_slider(key="sc_epsilon").set_value(0.5).run()
    assert not [c for c in at.caption if "Private median across 20 preview draws" in c.value]
    at.button(key="spread-curves").click().run()
    (wider,) = [c.value for c in at.caption if "Private median across 20 preview draws" in c.value]
    assert wider != cap and releases() == [], (cap, wider)
