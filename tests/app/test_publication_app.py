"""The publication boundary in the app: declared or ticked before the Release button, three-part records, the page
showing the record's derived numbers, and files that leave holding released numbers only (the non-private overlay a
separate, marked download).

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_app import downloads as dl
from dpsurv_app import session
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.privacy.ledger import RELEASE, entry_from_body
from dpsurv_core.publication import rederive
from tests.app.apptest import ok, release, releases
from tests.app.tables import shown as shown_table
from tests.app.tables import shown_text

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dpsurv_app" / "app.py")
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py")


def upload_choice() -> session.DataChoice:
    """An uploaded trial (two arms): nothing about it is documented, so nothing is declared."""
    rng = np.random.default_rng(4)
    n = 80
    frame = pd.DataFrame({"time": np.round(rng.exponential(300, n)) + 1, "status": rng.integers(0, 2, n),
                          "arm": np.where(np.arange(n) % 2 == 0, "A", "B")})
    return session.DataChoice("trial.csv", frame, ColumnMap(time="time", event="status", group="arm"), "days", False)


class Offered(dict):
    """What each download button of the latest run hands the browser, by label: (file name, data) of the last button
    so labelled; ``every`` keeps every button: (label, file name, data)."""

    def __init__(self) -> None:
        super().__init__()
        self.every: list[tuple[str, str, object]] = []


@pytest.fixture
def offered(monkeypatch) -> Offered:
    got = Offered()
    original = st.download_button

    def spy(label, data, *args, **kwargs):
        got[label] = (kwargs.get("file_name"), data)
        got.every.append((label, kwargs.get("file_name"), data))
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", spy)
    monkeypatch.setattr(dl, "static_export_problem", lambda: None)  # the buttons are drawn; nothing is exported
    return got


def released_lung_curves(offered: Offered | None = None) -> tuple[AppTest, object]:
    """The Survival curves page on lung by sex with its grid declared on the Data page, released once."""
    at = AppTest.from_file(APP, default_timeout=90)
    ok(at)
    at.text_input(key="b-lung-grid-days").set_value("0:1100:20")
    ok(at)
    choice = at.session_state["data_choice"]
    assert choice.grid == "0:1100:20"
    public = session.PublicParameters.derive(_lung_cohort(), horizon=1100.0, grid=session.declared_grid(choice),
                                             group_categories=choice.group_categories)
    assert not public.horizon_from_data and not public.grid.from_data and not public.categories_from_data
    at.switch_page("pages/2_Survival_curves.py")
    ok(at)
    at.checkbox(key="sc_split").check()
    ok(at)
    assert not at.button(key="release-curves").disabled
    assert not [c for c in at.checkbox if str(c.key).startswith("accept-")]  # nothing read off the data
    release(at, "release-curves")
    if offered is not None:
        offered.every.clear()
    # app.py starts every run with no preview shown (downloads.start_run); a page switched to in AppTest runs
    # without app.py, so the test does what it does
    at.session_state[dl.PREVIEWS_SHOWN] = False
    ok(at)
    (record,) = releases()
    return at, record


def _lung_cohort():
    from dpsurv_core.data.cohort import load_bundled

    return load_bundled("lung", group="sex")


def shown(at: AppTest, first: str, column_start: str) -> pd.DataFrame:
    return next(t for t in (shown_table(x.value) for x in at.table) if t.columns[0] == first
                and any(str(c).startswith(column_start) for c in t.columns))


def test_a_release_of_lung_with_a_declared_grid_records_three_parts_the_page_shows(offered):
    at, record = released_lung_curves(offered)
    body = record.body
    assert body["kind"] == "curves" and {"released", "public_inputs", "derived"} <= set(body)
    assert "outputs" not in body
    inputs = body["public_inputs"]
    assert inputs["grid"]["edges"] == list(np.linspace(0, 1100, 21)) and inputs["grid"]["from_data"] is False
    assert inputs["horizon_from_data"] is False and inputs["categories_from_data"] is False
    assert inputs["categories"] == ["1", "2"] and inputs["reading"]["names"] == {"1": "Male", "2": "Female"}
    assert rederive(body)["identical"] is True  # derived again from released and public inputs alone
    run = entry_from_body(body, record.id, record.time).as_run()
    assert run["subject_protected"] and "not DP" not in run["sentence"]
    assert "--grid 0:1100:20" in body["command"] and "--accept-disclosure" not in body["command"]

    # what the page shows beside the release is the record's derived numbers
    derived, unit, label = body["derived"], "days", f"Released, record {record.id}"
    names = {"1": "Male", "2": "Female"}
    medians = shown(at, "Group", "Quartiles")
    for m in derived["medians"]:
        row = medians[medians["Group"] == names[m["group"]]].iloc[0]
        inf = float("inf")
        assert row[f"{label} ({unit})"].split(" (no CI")[0] == cv.fmt_ci_time(
            m["median"] if m["median"] is not None else inf, m["median_lower"] if m["median_lower"] is not None
            else inf, m["median_upper"] if m["median_upper"] is not None else inf, unit).split(" (no CI")[0]
        quartiles = {q["probability"]: q["time"] for q in m["quantiles"]}
        assert row[f"Quartiles 25%, 75% {label.lower()}"] == ", ".join(
            cv.fmt_time(quartiles[p] if quartiles[p] is not None else float("inf"), unit) for p in (0.25, 0.75))
    rmst = shown(at, "Group", "Non-private 95% CI")
    for r in derived["rmst"]:
        row = rmst[rmst["Group"] == names[r["group"]]].iloc[0]
        assert row[f"{label} ({unit})"] == cv.fmt_time(r["rmst"], unit)
        assert row[f"{label} 95% CI"] == cv.fmt_interval(r["lower"], r["upper"], unit)
    landmarks = shown(at, "Group", "Time")
    for g, code in (("Male", "1"), ("Female", "2")):
        cells = landmarks[landmarks["Group"] == g][f"{label} (95% CI)"].tolist()
        entries = [e for e in derived["landmarks"] if e["group"] == code]
        assert cells == [f"{cv.fmt_pct(e['survival'])} ({cv.fmt_pct(e['lower'])} to {cv.fmt_pct(e['upper'])})"
                         for e in entries]


def test_the_release_downloads_hold_released_numbers_and_the_overlay_is_marked(offered):
    at, record = released_lung_curves(offered)
    derived = record.body["derived"]
    label = f"released, record {record.id}"

    name, png = offered["Figure as PNG"]
    assert "confidential" not in name and "preview" not in name and name.endswith(".png")
    figure = png.figure  # what the file will hold
    traces = [t for t in figure.data if t.name]
    assert traces and all(label in t.name and "non-private" not in t.name for t in traces)
    assert not [a for a in figure.layout.annotations if a.text in (dl.CONFIDENTIAL_MARK, dl.PREVIEW_MARK)]
    for gi, code in enumerate(derived["groups"]):  # each drawn curve is the record's (clipped to the axis)
        (curve,) = [t for t in traces if t.name.startswith({"1": "Male", "2": "Female"}[code])]
        expected = np.clip([1.0, *derived["survival"][gi], derived["survival"][gi][-1]], 0, 1)[:len(curve.y)] * 100
        assert np.allclose(np.asarray(curve.y, float), expected)

    name, comparison = offered["Comparison (confidential) as PNG"]
    assert name.endswith("-confidential-not-for-publication.png")
    marks = [a.text for a in comparison.figure.layout.annotations]
    assert dl.CONFIDENTIAL_MARK in marks
    assert any("non-private" in (t.name or "") for t in comparison.figure.data)

    # tables: "Table as CSV" saves the released part; the whole table is a separate, marked file
    tables = [(label_, name_, data) for label_, name_, data in offered.every if name_.endswith(".csv")]
    released_csvs = [(name_, data) for label_, name_, data in tables if label_ == "Table as CSV"
                     and "confidential" not in name_]
    assert len(released_csvs) == 4  # number at risk, medians, RMST, landmarks (the errors compare: confidential)
    for name_, data in released_csvs:
        assert "non-private" not in data.lower() and label in data.lower(), name_  # no exact number, no difference
    marked = [name_ for label_, name_, _ in tables if "confidential" in name_]
    assert len(marked) == 5 and all(n.endswith("-confidential-not-for-publication.csv") for n in marked)
    risk = pd.read_csv(io.StringIO(released_csvs[0][1]), index_col=0)
    assert list(risk.index) == [f"Male, {label}", f"Female, {label}"]

    name, record_json = offered["Release record as JSON"]
    published = json.loads(record_json)
    assert published["record_id"] == record.id and name.endswith(".json")
    assert {k: published[k] for k in ("released", "public_inputs", "derived")} == {
        k: record.body[k] for k in ("released", "public_inputs", "derived")}


def test_an_upload_with_nothing_declared_names_the_values_and_releases_once_ticked():
    at = AppTest.from_file(CURVES, default_timeout=60)
    at.session_state["data_choice"] = upload_choice()
    at.session_state["sc_split"] = True
    ok(at)
    button = at.button(key="release-curves")
    assert button.disabled
    (why,) = [shown_text(w.value) for w in at.warning if w.value.startswith("Release is off")]
    assert "the horizon (horizon)" in why and "the group categories (categories)" in why and "Data page" in why
    boxes = {c.key: c for c in at.checkbox if str(c.key).startswith("accept-")}
    assert set(boxes) == {"accept-curves-horizon", "accept-curves-categories"}
    assert boxes["accept-curves-horizon"].label == ("Publish horizon as read off the data (the release is then not "
                                                    "DP as run)")
    boxes["accept-curves-horizon"].check()
    ok(at)
    assert at.button(key="release-curves").disabled  # one value still neither declared nor ticked
    (why,) = [shown_text(w.value) for w in at.warning if w.value.startswith("Release is off")]
    assert "categories" in why and "horizon" not in why
    at.checkbox(key="accept-curves-categories").check()
    ok(at)
    assert releases() == []  # ticking charges nothing
    release(at, "release-curves")
    ok(at)
    (record,) = releases()
    run = entry_from_body(record.body, record.id, record.time).as_run()
    assert not run["subject_protected"] and run["guarantee"].startswith("none: not differentially private")
    assert "not differentially private as run" in run["sentence"]
    assert any(d["dp"] is False and "horizon read off the data, published as read" in d["message"]
               for d in record.body["disclosures"])
    assert {d["parameter"] for d in record.body["disclosures"] if d.get("dp") is False} >= {"horizon", "categories"}
    assert "--accept-disclosure horizon,categories" in record.body["command"]
    assert record.body["public_inputs"]["horizon_from_data"] is True
    assert rederive(record.body)["identical"] is True
    assert any("not differentially private as run: horizon read off the data" in shown_text(s.value) for s in at.success)
    assert "read anew" not in " ".join(c.value for c in at.caption)  # the accepted values are not a new reading


def test_a_refused_release_is_one_sentence_and_charges_nothing(monkeypatch):
    """A release the protocol refuses (here: values read off the data that nobody accepted, as when the boxes and the
    plan disagree) is one sentence, never a traceback, and nothing is recorded."""
    from dpsurv_app import release_panel

    monkeypatch.setattr(release_panel, "accept_boxes", lambda plan, key: ((), []))  # the button is on, nothing ticked
    at = AppTest.from_file(CURVES, default_timeout=60)
    at.session_state["data_choice"] = upload_choice()
    ok(at)
    release(at, "release-curves")
    ok(at)
    (error,) = [shown_text(e.value) for e in at.error]
    assert error.startswith("This release would read the horizon (horizon) off the data") and "Data page" in error
    assert "--accept-disclosure" not in error and releases() == []


def test_group_comparison_records_a_log_rank_release_that_rederives():
    at = AppTest.from_file(GROUPS, default_timeout=60)
    at.session_state["data_choice"] = dataclasses.replace(session.bundled_choice("lung"), horizon=1100.0)
    ok(at)
    release(at, "release-logrank")
    ok(at)
    (record,) = releases()
    body = record.body
    assert body["kind"] == "logrank" and body["public_inputs"]["tests"] == {"null_draws": None}
    assert rederive(body)["identical"] is True
    shown_tests = next(t for t in (shown_table(x.value) for x in at.table) if t.columns[0] == "Test")
    p_col = next(c for c in shown_tests.columns if c.startswith("p released") and "calibrated" in c)
    assert shown_tests[p_col].iloc[0] == cv.fmt_p(body["derived"]["tests"][0]["p_value"])


def test_the_data_page_declares_every_public_value_and_an_upload_starts_empty():
    at = AppTest.from_file(APP, default_timeout=90)
    ok(at)
    choice = at.session_state["data_choice"]
    # lung: its documentation declares the bounds, the codes and the size; no horizon or grid is documented
    assert choice.n_public == 228 and choice.categories["sex"] == ("1", "2") and choice.covariate_ranges["age"]
    assert choice.horizon is None and choice.grid is None and choice.censoring is None
    assert at.number_input(key="b-lung-n-public").value == 228
    assert at.number_input(key="b-lung-censoring").value is None
    at.text_input(key="b-lung-grid-days").set_value("0:900:15")
    at.number_input(key="b-lung-censoring").set_value(0.3)
    ok(at)
    choice = at.session_state["data_choice"]
    assert (choice.grid, choice.censoring) == ("0:900:15", 0.3)
    public = session.PublicParameters.derive(_lung_cohort(), horizon=900.0, grid=session.declared_grid(choice),
                                             group_categories=choice.group_categories)
    assert public.grid.bins == 15 and not public.grid.from_data and not public.horizon_from_data
    shown_disclosures = " ".join(shown_text(w.value) for w in at.warning)
    assert "(horizon)" not in shown_disclosures and "(grid)" not in shown_disclosures
    assert "(groups)" not in shown_disclosures
    at.text_input(key="b-lung-grid-days").set_value("0:900")
    ok(at)
    assert at.session_state["data_choice"].grid is None  # not readable: one sentence, and not declared
    (error,) = [e.value.replace("\\", "") for e in at.error]  # as shown (markdown-escaped)
    assert error.startswith("'0:900' is not START:STOP:BINS") and error.endswith("the grid is not declared.")

    upload = AppTest.from_file(APP, default_timeout=90)
    upload.session_state["data_choice"] = upload_choice()
    ok(upload)
    choice = upload.session_state["data_choice"]
    assert (choice.horizon, choice.grid, choice.group_categories, choice.n_public, choice.censoring) == (
        None, None, None, None, None)
    assert choice.categories == {} and choice.covariate_ranges == {}
    warnings = " ".join(shown_text(w.value) for w in upload.warning)
    assert "Disclosed (horizon)" in warnings and "Disclosed (groups)" in warnings


def test_the_ledger_page_marks_the_review_report_and_keeps_numbers_out_of_the_accounts(offered):
    released_lung_curves()
    ok(AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "8_Ledger_and_report.py"), default_timeout=90))
    for kind in ("HTML", "PDF"):
        assert offered[f"Download review report ({kind})"][0].endswith(f"-confidential-not-for-publication."
                                                                       f"{kind.lower()}")
        assert "confidential" not in offered[f"Download release report ({kind})"][0]
    name, accounts = offered["Ledger accounts (JSON)"]
    (record,) = json.loads(accounts())["records"]
    assert record["mechanism"] == "laplace-counts" and record["kind"] == RELEASE and record["reader"] == "curves"
    assert not {"released", "public_inputs", "derived", "outputs"} & set(record)  # the accounting only
