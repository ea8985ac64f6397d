"""All-censored data on the Survival curves page, as R survival analyses it: the page runs, says in one sentence that
no events were observed (the curve stays at 1, no quantile is reached), and its non-private curve is 1 throughout.

Each test has its own ledger database (the autouse ``ledger_path`` fixture)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.data.cohort import NO_EVENTS, ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from tests.app.apptest import ok
from tests.app.tables import shown_text

CURVES = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "2_Survival_curves.py")


def test_the_curves_page_takes_all_censored_data_with_one_sentence():
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"time": np.round(rng.exponential(300, 60)) + 1, "status": 0, "arm": ["A", "B"] * 30})
    choice = session.DataChoice("censored.csv", frame, ColumnMap("time", "status", group="arm"), "days", False,
                                horizon=1000.0, grid="0:1000:10")
    at = AppTest.from_file(CURVES, default_timeout=120)
    at.session_state["data_choice"] = choice
    ok(at)
    assert [shown_text(i.value) for i in at.info].count(NO_EVENTS) == 1
    assert not at.error
    cohort = build_cohort(frame, choice.mapping, "censored.csv")
    public = PublicParameters.derive(cohort, horizon=1000.0, grid=TimeGrid.equal(0, 1000, 10))
    curves = NonPrivate().compute(cohort, public).curves  # the page's reference curve
    assert np.all(curves.survival == 1.0) and np.all(np.isinf(curves.median()[0]))  # inf: not reached
