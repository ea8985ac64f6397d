"""Competing-event types in the app are declared or refused, like group categories: on an upload the Data page's box
declares them (prefilled from nothing: only a bundled data set's documented types prefill it), undeclared types are
a disclosure and the Survival curves page's cumulative incidence release stays off until they are declared or ticked
(``event-types``), declared ones release a record that re-derives, and rows whose code is neither declared nor a
censoring code are counted for the data holder on the Data page, and nothing is analysed until they are resolved.

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.privacy.ledger import entry_from_body
from dpsurv_core.publication import rederive
from tests.app.apptest import ok, release, releases
from tests.app.tables import shown_text

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dpsurv_app" / "app.py")
DATA = str(ROOT / "dpsurv_app" / "pages" / "1_Data.py")
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
TOKEN = "u-trial.csv"  # the Data page's widget keys for this upload


def upload(names: tuple[tuple[str, str], ...] = (), cause: list[str] | None = None) -> session.DataChoice:
    """An uploaded cohort with a competing-event type column (censored 0, relapse, death), its horizon and grid
    declared; ``names``: the event types declared on the Data page (none: read off the data)."""
    rng = np.random.default_rng(5)
    n = 90
    kinds = cause or rng.choice(["0", "relapse", "death"], n, p=[0.3, 0.4, 0.3]).tolist()
    frame = pd.DataFrame({"time": np.round(rng.exponential(300, n)) + 1, "cause": kinds})
    frame["status"] = (frame["cause"] != "0").astype(int)
    mapping = ColumnMap(time="time", event="status", event_type="cause", event_type_names=names)
    return session.DataChoice("trial.csv", frame, mapping, "days", False, horizon=1000.0, grid="0:1000:10")


def curves_page(choice: session.DataChoice) -> AppTest:
    at = AppTest.from_file(CURVES, default_timeout=90)
    at.session_state["data_choice"] = choice
    ok(at)
    at.radio(key="sc_estimand").set_value("cumulative incidence")
    return ok(at)


def test_undeclared_event_types_keep_the_release_off_naming_event_types():
    at = curves_page(upload())
    assert at.button(key="release-curves").disabled
    (why,) = [shown_text(w.value) for w in at.warning if w.value.startswith("Release is off")]
    assert "the competing-event types (event-types)" in why and "Data page" in why
    assert {c.key for c in at.checkbox if str(c.key).startswith("accept-")} == {"accept-curves-event-types"}
    assert releases() == []
    at.checkbox(key="accept-curves-event-types").check()
    ok(at)
    release(at, "release-curves")
    ok(at)
    (record,) = releases()
    run = entry_from_body(record.body, record.id, record.time).as_run()
    assert not run["subject_protected"] and "event-types read off the data" in run["sentence"]
    assert record.body["public_inputs"]["event_types_from_data"] is True
    assert "--accept-disclosure event-types" in record.body["command"]
    assert rederive(record.body)["identical"] is True


def test_declared_event_types_release_a_record_that_rederives():
    at = curves_page(upload((("relapse", "Relapse"), ("death", "Death"))))
    assert not at.button(key="release-curves").disabled
    assert not [c for c in at.checkbox if str(c.key).startswith("accept-")]  # nothing read off the data
    release(at, "release-curves")
    ok(at)
    (record,) = releases()
    body = record.body
    assert body["public_inputs"]["event_types"] == [{"code": "relapse", "name": "Relapse"},
                                                    {"code": "death", "name": "Death"}]
    assert body["public_inputs"]["event_types_from_data"] is False
    assert body["released"]["counts"]["event_types"] == ["Relapse", "Death"]
    assert entry_from_body(body, record.id, record.time).as_run()["subject_protected"]
    assert rederive(body)["identical"] is True
    # the command line that runs it again declares the same column and types
    assert "--event-type cause --event-types relapse=Relapse,death=Death" in body["command"]


def test_the_data_page_declares_event_types_from_nothing_the_data_hold():
    at = AppTest.from_file(DATA, default_timeout=90)
    at.session_state["data_choice"] = upload()
    ok(at)
    box = at.checkbox(key=f"{TOKEN}-declare-types-cause")
    assert box.value is False  # an upload declares nothing
    warnings = " ".join(shown_text(w.value) for w in at.warning)
    assert "Disclosed (event-types)" in warnings
    box.check()
    ok(at)
    typed = at.text_input(key=f"{TOKEN}-types-cause")
    assert typed.value == "" and "relapse" not in (typed.placeholder or "")  # never prefilled from the data
    typed.set_value("relapse=Relapse, death=Death")
    ok(at)
    choice = at.session_state["data_choice"]
    assert choice.mapping.event_type_names == (("relapse", "Relapse"), ("death", "Death"))
    assert "Disclosed (event-types)" not in " ".join(shown_text(w.value) for w in at.warning)
    assert any("Relapse: " in c.value and "Death: " in c.value for c in at.caption)  # rows by type, for the holder

    # a code the declaration lacks: counted for the data holder here, and nothing is analysed until it is resolved
    at.text_input(key=f"{TOKEN}-types-cause").set_value("relapse")
    ok(at)
    errors = [shown_text(e.value) for e in at.error]
    deaths = int((upload().frame["cause"] == "death").sum())
    assert any(e.startswith(f"The column 'cause' holds 'death' ({deaths} rows), which is neither a declared event "
                            "type (relapse) nor a censoring code") for e in errors)
    assert any("Fix the red messages above" in e for e in errors)


def test_a_bundled_data_set_prefills_its_documented_event_types():
    at = AppTest.from_file(APP, default_timeout=90)
    ok(at)
    at.selectbox(key="bundled_name").set_value("pbc")
    ok(at)
    at.selectbox(key="b-pbc-type").set_value("status")
    ok(at)
    assert at.checkbox(key="b-pbc-declare-types-status").value is True
    assert at.text_input(key="b-pbc-types-status").value == "1=transplant, 2=death"
    choice = at.session_state["data_choice"]
    assert choice.mapping.event_type_names == (("1", "transplant"), ("2", "death"))
    assert "Disclosed (event-types)" not in " ".join(shown_text(w.value) for w in at.warning)
    # the same data set with its declaration cleared: read off the data, disclosed
    at.checkbox(key="b-pbc-declare-types-status").uncheck()
    ok(at)
    assert at.session_state["data_choice"].mapping.event_type_names == ()
    assert "Disclosed (event-types)" in " ".join(shown_text(w.value) for w in at.warning)


def test_a_neighbour_gives_the_same_public_inputs_when_everything_is_declared():
    """D and D minus one subject (the only one with the 'other' cause), everything declared: the records' public
    inputs are identical, and the released counts have one cell per declared type in both (read off the data, the
    types of D minus that subject would be one fewer)."""
    kinds = [*np.random.default_rng(2).choice(["0", "relapse", "death"], 89).tolist(), "other"]
    declared = (("relapse", "Relapse"), ("death", "Death"), ("other", "Other"))
    full = upload(declared, kinds)
    less = dataclasses.replace(full, frame=full.frame.iloc[:-1].reset_index(drop=True), fingerprint="")
    inputs, types = [], []
    for choice in (full, less):
        at = curves_page(choice)
        release(at, "release-curves")
        ok(at)
        body = releases()[-1].body
        inputs.append(body["public_inputs"])
        types.append(body["released"]["counts"]["event_types"])
    assert len(releases()) == 2 and inputs[0] == inputs[1]
    assert [t["name"] for t in inputs[0]["event_types"]] == types[0] == types[1] == ["Relapse", "Death", "Other"]
