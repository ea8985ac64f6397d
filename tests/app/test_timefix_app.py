"""R's timefix in the app: near-tied times (0.1 + 0.2 against 0.3) on the event-time grid of the Survival curves page,
rows in memory and a table kept in DuckDB alike, and the Data page's box that keeps them apart (``--no-timefix``).

R's answers: ``near_ties`` of ``tests/curves/r_reference/timefix_censored.json`` (survfit, timefix TRUE and FALSE;
``tools/r_reference/timefix_censored.R``). Each test has its own ledger database (the autouse ``ledger_path``
fixture)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_app import session
from dpsurv_core import engines
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.engines.source import Source
from tests.app.apptest import ok
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")
DATA = str(ROOT / "dpsurv_app" / "pages" / "1_Data.py")
NEAR = json.loads((ROOT / "tests" / "curves" / "r_reference" / "timefix_censored.json").read_text())["near_ties"]


def frame() -> pd.DataFrame:
    d = NEAR["data"]
    return pd.DataFrame({"time": [float.fromhex(h) for h in d["time"]], "status": d["status"], "arm": d["group"]})


def r_at(mode: str, t: float) -> str:
    """R's pooled survfit at time t as the landmark table prints it: S (lower to upper), percentages."""
    p = NEAR[mode]["pooled"]
    k = max(i for i, x in enumerate(p["time"]) if float.fromhex(x) <= t)
    return f"{100 * p['surv'][k]:.1f}% ({100 * p['lower'][k]:.1f}% to {100 * p['upper'][k]:.1f}%)"


def landmark_at(at: AppTest, when: str) -> str:
    unit_key = next(s.key for s in at.selectbox if s.key and s.key.startswith("sc_lm_unit_"))
    at.selectbox(key=unit_key).set_value("days")
    ok(at)
    key = next(t.key for t in at.text_input if t.key and t.key.startswith("sc_lm_") and "pick" not in t.key)
    at.text_input(key=key).set_value(when)
    ok(at)
    table = next(t for t in (shown(x.value) for x in at.table) if "Time" in t.columns)
    return str(table["Non-private (95% CI)"].iloc[0])


@pytest.mark.parametrize("kept", ["memory", "duckdb"])
@pytest.mark.parametrize("timefix", [True, False])
def test_event_time_grid_curve_is_r_survfit_with_and_without_timefix(tmp_path, kept, timefix):
    data = frame()
    mapping = ColumnMap("time", "status", group="arm", timefix=timefix)
    engine = None
    if kept == "duckdb":
        path = tmp_path / "near.parquet"
        data.to_parquet(path)
        engine = engines.open_cohort(Source("parquet", str(path)), "duckdb", mapping, "near.parquet")
    choice = session.DataChoice("near.parquet", data.iloc[:0] if engine is not None else data, mapping, "days",
                                False, event_time_grid=True, engine=engine)
    at = AppTest.from_file(CURVES, default_timeout=120)
    at.session_state["data_choice"] = choice
    ok(at)
    # S(0.3): with timefix 0.1 + 0.2 and 0.3 are one time (R: 91.9%); apart, only the events at exactly 0.3 (96.5%)
    mode = "timefix" if timefix else "exact"
    assert landmark_at(at, "0.3") == r_at(mode, 0.3)
    assert r_at("timefix", 0.3) != r_at("exact", 0.3)
    # the page's command line (its record's reproduce command) says --no-timefix when the box is ticked
    assert cv.cli_command("km", cv.timefix_option(choice)).count("--no-timefix") == (0 if timefix else 1)
    if engine is not None:
        assert not engine.loaded  # counted in the engine: no row read


def test_the_data_page_box_keeps_near_ties_apart():
    choice = session.DataChoice("near.csv", frame(), ColumnMap("time", "status", group="arm"), "days", False)
    at = AppTest.from_file(DATA, default_timeout=120)
    at.session_state["data_choice"] = choice
    ok(at)
    box = next(c for c in at.checkbox if shown_text(c.label).startswith("Keep near-tied times apart"))
    assert box.value is False and at.session_state["data_choice"].mapping.timefix is True
    box.check()
    ok(at)
    assert at.session_state["data_choice"].mapping.timefix is False
