"""AppTest of the Survival curves page's R rules: the confidence band type (R survfit's conf.type), landmarks read
at the time actually used on the public grid, and medians and quartiles as R's quantile.survfit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.tables import shown

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py")


def run() -> AppTest:
    at = AppTest.from_file(CURVES, default_timeout=30)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def landmarks(at: AppTest) -> pd.DataFrame:
    return [t for t in (shown(x.value) for x in at.table) if "Time" in t.columns][0]


def medians(at: AppTest) -> pd.DataFrame:
    return [t for t in (shown(x.value) for x in at.table) if any(c.startswith("Quartiles") for c in t.columns)][0]


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def chart_spec(at: AppTest) -> str:
    return at.get("plotly_chart")[0].proto.spec


def test_default_band_is_r_log_and_named_on_the_chart():
    at = run()
    assert at.selectbox(key="sc_conf_type").value == "log"
    assert "band of type log" in captions(at)
    assert "95% log band" in chart_spec(at)


def test_the_selector_changes_the_bands_and_the_name():
    at = run()
    log_lm = landmarks(at)["Non-private (95% CI)"].tolist()
    log_med = medians(at)["Non-private (days)"].tolist()
    log_priv = landmarks(at).iloc[:, -1].tolist()
    at.selectbox(key="sc_conf_type").set_value("plain").run()
    assert not at.exception
    plain_lm = landmarks(at)["Non-private (95% CI)"].tolist()
    assert plain_lm != log_lm and plain_lm[0].split(" (")[0] == log_lm[0].split(" (")[0]  # same estimate, other CI
    assert landmarks(at).iloc[:, -1].tolist() != log_priv
    assert medians(at)["Non-private (days)"].tolist() != log_med
    assert "band of type plain" in captions(at) and "95% plain band" in chart_spec(at)
    assert "band of type log " not in captions(at)
    for kind in ("log-log", "logit", "arcsin"):
        at.selectbox(key="sc_conf_type").set_value(kind).run()
        assert not at.exception, kind
        assert f"band of type {kind}" in captions(at)


def test_off_grid_landmark_names_the_time_used():
    at = run()
    unit_key = [s.key for s in at.selectbox if s.key and s.key.startswith("sc_lm_unit_")][0]
    at.selectbox(key=unit_key).set_value("days").run()
    key = [t.key for t in at.text_input if t.key and t.key.startswith("sc_lm_") and "pick" not in t.key][0]
    at.text_input(key=key).set_value("330, 400").run()
    assert not at.exception
    times = landmarks(at)["Time"].tolist()
    assert times == ["330 days", "400 days, read at 385 days"]
    assert not any(t == "400 days" for t in times)  # never labelled with the requested time alone


def test_medians_table_has_r_quartiles():
    med = medians(run())
    assert med.loc[0, "Quartiles 25%, 75% non-private"] == "170, 550"  # R: quantile(survfit(...), c(.25, .75))


def test_group_comparison_number_at_risk_is_r_n_risk():
    """Non-private rows of the Group comparison page's number-at-risk table: R's n.risk at t (time >= t) per group,
    so a subject whose time equals a reporting time is still at risk there (lung has deaths at 110 days)."""
    from dpsurv_core.data import datasets

    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "3_Group_comparison.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    risk = [t for t in (shown(x.value) for x in at.table) if any(str(i).endswith("non-private") for i in t.index)][0]
    lung = datasets.load("lung")
    for code, label in ((1, "Male"), (2, "Female")):
        row = [i for i in risk.index if i.startswith(label) and i.endswith("non-private")][0]
        expected = int((lung.loc[lung["sex"] == code, "time"] >= 110).sum())
        assert risk.loc[row, "110"] == f"{expected:,}"


def test_times_and_median_intervals_read_as_r_prints_them():
    """A median with no interval (one patient who died: R's NA for both limits) says so instead of 'not reached to
    not reached'; a short grid's half-day points keep their fraction; no '-0'."""
    from dpsurv_app.curves_view import fmt_ci_time, fmt_time

    inf = float("inf")
    assert fmt_ci_time(118.0, inf, inf, "days") == "118 (no CI)"
    assert fmt_ci_time(inf, inf, inf, "days") == "not reached"
    assert fmt_ci_time(310.0, 285.0, 363.0, "days") == "310 (285 to 363)"
    assert fmt_time(2.5, "days") == "2.5" and fmt_time(380.2, "days") == "380" and fmt_time(-0.0, "days") == "0"
    assert fmt_time(-4.33, "days", difference=True) == "-4"  # a difference of RMSTs: as precise as the RMSTs


def test_landmark_unit_change_keeps_the_same_times():
    """Switching the landmark unit from years to days turns the default 1, 2, 3 years into 365.25, 730.5 and
    1,095.75 days instead of reading '1, 2, 3' as days; a time past the horizon has no 'read at'."""
    import os

    from dpsurv_app import session

    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py"), default_timeout=90)
    at.session_state["data_choice"] = session.bundled_choice("lung")
    at.run()
    key = next(s.key for s in at.selectbox if s.key and s.key.startswith("sc_lm_unit"))
    at.selectbox(key=key).set_value("days").run()
    assert not at.exception
    (box,) = [t for t in at.text_input if t.key and t.key.startswith("sc_lm_") and "pick" not in t.key]
    assert box.value == "365.25, 730.5, 1095.75"
    box.set_value("100, 5000").run()
    (table,) = [t for t in (shown(x.value) for x in at.table) if "Time" in t.columns][:1]
    times = table["Time"].tolist()
    assert any(t.startswith("5000 days") and "read at" not in t for t in times)
    assert os.environ.get("DPSURV_LEDGER")  # the page ran against the test ledger
