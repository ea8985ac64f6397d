"""Numbers as clinicians write them: percentages, hazard ratios with their interval, p-values, times."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.report.text import DASH, hazard_ratio_ci, p_value, percent, time_in


def test_percent():
    assert percent(0.523) == "52%"
    assert percent(0.5234, 1) == "52.3%"
    assert percent(1.0) == "100%" and percent(0.0) == "0%"
    assert percent(-0.04) == "-4%"  # a private estimate below 0 is shown, not clipped
    assert percent(float("nan")) == DASH and percent(None) == DASH


def test_hazard_ratio_ci():
    assert hazard_ratio_ci(0.5912, 0.4213, 0.8234) == "0.59 (95% CI 0.42 to 0.82)"
    assert hazard_ratio_ci(1.5, 0.9, float("inf"), digits=1, level=0.9) == "1.5 (90% CI 0.9 to inf)"
    assert hazard_ratio_ci(1.5, float("nan"), 2.0) == f"1.50 (95% CI {DASH} to 2.00)"


@pytest.mark.parametrize(("p", "text"), [
    (0.5, "0.5"), (0.0123, "0.012"), (0.04999, "0.05"), (0.0012, "0.0012"), (0.001, "0.001"), (0.00099, "< 0.001"),
    (0.0, "< 0.001"), (1.0, "1"), (0.99, "0.99"), (0.2345, "0.23"),
])
def test_p_value_two_significant_digits_with_rs_floor(p, text):
    assert p_value(p) == text


def test_p_value_edge_cases():
    assert p_value(float("nan")) == DASH
    assert p_value(0.04, floor=0.05) == "< 0.05"
    with pytest.raises(ValueError):
        p_value(1.2)


@given(st.floats(0.001, 1.0))
def test_p_value_reads_back_within_rounding(p):
    assert math.isclose(float(p_value(p)), p, rel_tol=0.05)


def test_time_in_a_chosen_unit():
    assert time_in(588, "days") == "588 days"
    assert time_in(588, "months", from_unit="days") == "19.3 months"  # 588 / (365.25 / 12)
    assert time_in(1022, "years", from_unit="days") == "2.8 years"
    assert time_in(12, "months") == "12 months"
    assert time_in(1234.4, "days") == "1,234 days"
    assert time_in(float("inf"), "days") == "not reached" and time_in(None, "days") == DASH


def test_intervals():
    from dpsurv_core.report.text import percent_ci, time_ci

    assert percent_ci(0.523, 0.451, 0.594) == "52% (45% to 59%)"
    assert time_ci(310, 285, 363, "days") == "310 days (285 to 363)"
    assert time_ci(310, 285, float("inf"), "days") == "310 days (285 to not reached)"
    assert time_ci(float("inf"), 500, float("inf"), "days") == "not reached (500 to not reached)"
    assert time_ci(310, 285, 363, "months", from_unit="days") == "10.2 months (9.36 to 11.9)"


def test_ledger_times_read_as_utc_to_the_second():
    from dpsurv_core.report.text import timestamp

    assert timestamp("2026-11-23T16:25:04.327259+00:00") == "2026-11-23 16:25:04 UTC"
    assert timestamp("2026-11-23T17:25:04+01:00") == "2026-11-23 16:25:04 UTC"
    assert timestamp("not a time") == "not a time" and timestamp(None) == ""
