"""Release once, read many: a curve release made on one page is read again, not drawn again, by every page whose plan
matches it (Group comparison reads its log-rank tests), and nothing more is charged.

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_app import session
from dpsurv_core.publication import rederive
from dpsurv_core.publication.reading import read_record
from tests.app.apptest import ok, release, releases
from tests.app.tables import shown as shown_table

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py")


def lung() -> session.DataChoice:
    return dataclasses.replace(session.bundled_choice("lung"), horizon=1100.0)


def test_group_comparison_reads_the_curves_released_on_the_survival_curves_page():
    at = AppTest.from_file(CURVES, default_timeout=90)
    at.session_state["data_choice"] = lung()
    at.session_state["sc_split"] = True  # one curve per group, as the Group comparison page compares them
    ok(at)
    release(at, "release-curves")
    ok(at)
    (record,) = releases()
    assert record.body["kind"] == "curves"

    groups = AppTest.from_file(GROUPS, default_timeout=90)
    groups.session_state["data_choice"] = lung()
    ok(groups)
    assert len(releases()) == 1  # read, not drawn again: no new record, nothing charged
    said = " ".join(i.value for i in groups.info)
    assert f"Reading release #{record.id}" in said and "Nothing more is charged" in said
    button = groups.button(key="release-logrank")
    assert "again" in button.label  # another draw is offered as such, charged again
    # the tests shown are the stored release's, read as a log-rank release would read them
    tests = read_record(record.body, "logrank")
    frames = [shown_table(x.value) for x in groups.table] + [x.value for x in groups.dataframe]
    shown_tests = next(t for t in frames if len(t.columns) and t.columns[0] == "Test")
    p_col = next(c for c in shown_tests.columns if c.startswith("p released") and "calibrated" in c)
    assert shown_tests[p_col].iloc[0] == cv.fmt_p(tests["tests"][0]["p_value"])
    assert rederive(record.body)["identical"] is True


def test_the_survival_curves_page_reads_its_release_again_in_a_new_visit():
    first = AppTest.from_file(CURVES, default_timeout=90)
    first.session_state["data_choice"] = lung()
    ok(first)
    release(first, "release-curves")
    ok(first)
    (record,) = releases()
    again = AppTest.from_file(CURVES, default_timeout=90)  # a new session: nothing in its memory
    again.session_state["data_choice"] = lung()
    ok(again)
    assert len(releases()) == 1
    assert any(f"Reading release #{record.id}" in i.value for i in again.info)


def test_another_epsilon_is_another_release():
    at = AppTest.from_file(CURVES, default_timeout=90)
    at.session_state["data_choice"] = lung()
    at.session_state["sc_split"] = True
    ok(at)
    release(at, "release-curves")
    ok(at)
    other = AppTest.from_file(GROUPS, default_timeout=90)
    other.session_state["data_choice"] = lung()
    ok(other)
    other.select_slider(key="gc_epsilon").set_value(2.0)
    ok(other)
    assert not any("Reading release" in i.value for i in other.info)
    assert "again" not in other.button(key="release-logrank").label


def test_settings_are_kept_while_visiting_other_pages():
    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "app.py"), default_timeout=90)
    at.session_state["data_choice"] = lung()
    ok(at)
    at.switch_page("pages/2_Survival_curves.py")
    ok(at)
    at.select_slider(key="sc_epsilon").set_value(2.0)
    at.checkbox(key="sc_split").check()
    ok(at)
    at.switch_page("pages/3_Group_comparison.py")
    ok(at)
    at.select_slider(key="gc_epsilon").set_value(0.5)
    ok(at)
    at.switch_page("pages/2_Survival_curves.py")
    ok(at)
    assert at.select_slider(key="sc_epsilon").value == 2.0 and at.checkbox(key="sc_split").value is True
    at.switch_page("pages/3_Group_comparison.py")
    ok(at)
    assert at.select_slider(key="gc_epsilon").value == 0.5


def test_another_draw_shows_a_fresh_preview_and_charges_nothing():
    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "4_Weibull_parameters.py"), default_timeout=90)
    at.session_state["data_choice"] = lung()
    ok(at)
    keys = [b.key for b in at.button if b.key and b.key.startswith("another-draw-")]
    assert keys
    before = [str(t.value) for t in at.table] + [str(d.value) for d in at.dataframe]
    at.button(key=keys[0]).click()
    ok(at)
    after = [str(t.value) for t in at.table] + [str(d.value) for d in at.dataframe]
    assert before != after and releases() == []
