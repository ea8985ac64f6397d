"""An event column coded with words on the Data page, as ``--event-codes`` and ``--censor-codes`` on the command line:
the values that mean an event, those that mean censored, and with several event values each its own (declared) event
type for a cumulative incidence. A value in neither list stops the analysis with one sentence naming it and its rows,
never counted as censored.

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.apptest import ok
from tests.app.test_app_shell import messages, rerun, start, upload, widget

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")


def outcome_csv() -> bytes:
    """90 subjects whose one column says how follow-up ended: 'censored', 'relapse', 'death', and 12 rows spelled
    'censor'."""
    rng = np.random.default_rng(7)
    outcome = rng.choice(["censored", "relapse", "death"], 90, p=[0.3, 0.4, 0.3]).tolist()
    for i in range(12):
        outcome[i * 7] = "censor"
    frame = pd.DataFrame({"months": np.round(rng.exponential(20, 90), 1) + 0.5, "outcome": outcome})
    return frame.to_csv(index=False).encode()


def mapped() -> AppTest:
    at = upload(start(), "outcome.csv", outcome_csv())
    widget(at, "selectbox", "Event").set_value("outcome")
    rerun(at)
    widget(at, "multiselect", "Values of 'outcome' that mean the event happened").set_value(["relapse", "death"])
    return rerun(at)


def test_a_value_in_neither_list_is_named_with_its_rows():
    at = mapped()
    censor = widget(at, "multiselect", "Values of 'outcome' that mean censored")
    assert sorted(censor.value) == ["censor", "censored"]  # every other value until the data holder says otherwise
    assert not [m for m in messages(at) if "neither" in m]
    censor.set_value(["censored"])
    rerun(at)
    (error,) = [m for m in messages(at) if "neither" in m]
    assert error.startswith("The column 'outcome' holds 'censor' (12 rows), which is neither an event code "
                            "(relapse, death) nor a censoring code (censored)")
    assert any("Fix the red messages" in m for m in messages(at))


def test_several_event_values_are_declared_event_types_for_a_cumulative_incidence():
    at = mapped()
    box = widget(at, "checkbox", "Each event value of 'outcome' is its own event type")
    assert box.value is False
    box.check()
    rerun(at)
    choice = at.session_state["data_choice"]
    m = choice.mapping
    assert (m.event, m.event_type, m.event_codes) == ("outcome", "outcome", ("relapse", "death"))
    assert m.event_type_names == (("relapse", "relapse"), ("death", "death"))
    assert sorted(m.censor_codes) == sorted(m.type_censor_codes) == ["censor", "censored"]
    assert "Disclosed (event-types)" not in " ".join(messages(at, "warning"))  # declared, not read off the data
    curves = AppTest.from_file(CURVES, default_timeout=90)
    curves.session_state["data_choice"] = choice
    ok(curves)
    curves.radio(key="sc_estimand").set_value("cumulative incidence")
    ok(curves)
    assert "Cumulative incidence" in curves.radio(key="sc_estimand").format_func("cumulative incidence")
    assert "accept-curves-event-types" not in {c.key for c in curves.checkbox}  # declared: nothing to accept
