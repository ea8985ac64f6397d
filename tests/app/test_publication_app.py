"""The publication boundary in the app: declared or ticked before the Release button, three-part records, the page
showing the record's derived numbers, and files that leave holding released numbers only (the non-private overlay a
separate, marked download).

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from dpsurv_core.data.cohort import ColumnMap
from ui import session

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
CURVES = str(ROOT / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "pages" / "3_Group_comparison.py")


def ok(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def upload_choice() -> session.DataChoice:
    """An uploaded trial (two arms): nothing about it is documented, so nothing is declared."""
    rng = np.random.default_rng(4)
    n = 80
    frame = pd.DataFrame({"time": np.round(rng.exponential(300, n)) + 1, "status": rng.integers(0, 2, n),
                          "arm": np.where(np.arange(n) % 2 == 0, "A", "B")})
    return session.DataChoice("trial.csv", frame, ColumnMap(time="time", event="status", group="arm"), "days", False)


def _lung_cohort():
    from dpsurv_core.data.cohort import load_bundled

    return load_bundled("lung", group="sex")


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
    shown_disclosures = " ".join(w.value for w in at.warning)
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
    warnings = " ".join(w.value for w in upload.warning)
    assert "Disclosed (horizon)" in warnings and "Disclosed (groups)" in warnings


