"""Cohort summary: counts per group, censoring, reverse Kaplan-Meier median follow-up, time units."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.data.cohort import ColumnMap, build_cohort, load_bundled
from dpsurv_core.data.summary import (
    COLUMNS,
    cohort_summary,
    convert_times,
    event_type_counts,
    factor_or_one,
    median_followup,
    time_factor,
)
from dpsurv_core.errors import ParameterError


def reverse_km_median(time: np.ndarray, event: np.ndarray) -> float:
    """Independent reverse KM: censoring is the event; deaths at a tie stay at risk. First t with S <= 1/2."""
    s = 1.0
    for t in np.unique(time):
        at_risk = (time >= t).sum()
        cens = ((time == t) & (event == 0)).sum()
        s *= 1 - cens / at_risk
        if s <= 0.5:
            return float(t)
    return math.inf


def test_lung_by_sex_matches_r_counts_and_an_independent_reverse_km():
    cohort = load_bundled("lung", group="sex")
    table = cohort_summary(cohort)
    assert list(table.columns) == COLUMNS
    assert table["group"].tolist() == ["All", "1", "2"]
    assert table["subjects"].tolist() == [228, 138, 90]
    assert table["events"].tolist() == [165, 112, 53]  # R: survfit(Surv(time, status) ~ sex, lung)
    assert table["censored"].tolist() == [63, 26, 37]
    assert table["censored_pct"].tolist() == pytest.approx([100 * 63 / 228, 100 * 26 / 138, 100 * 37 / 90])
    assert table["max_followup"].tolist() == [1022.0, 1022.0, 965.0]
    for i, mask in enumerate([np.ones(cohort.n, bool), cohort.group == "1", cohort.group == "2"]):
        expected = reverse_km_median(cohort.time[mask], cohort.event[mask])
        assert math.isfinite(expected)
        assert table["median_followup"][i] == pytest.approx(expected)


def test_subjects_and_rows_differ_when_patients_have_several_rows():
    table = cohort_summary(load_bundled("kidney"))
    row = table.iloc[0]
    assert (row["subjects"], row["rows"], row["events"], row["censored"]) == (38, 76, 58, 18)
    assert len(table) == 1  # no group column: the overall row only


def test_median_followup_not_reached_and_hand_example():
    # reverse KM: censoring at 4 (1 of 4 at risk): S = 0.75; at 6 (1 of 2): S = 0.375 <= 1/2, so the median is 6
    t = np.array([2.0, 4.0, 5.0, 6.0, 9.0])
    e = np.array([1, 0, 1, 0, 0])
    assert median_followup(t, e) == 6.0 == reverse_km_median(t, e)
    assert median_followup(t, np.ones(5, int)) == math.inf  # nobody censored: follow-up median not reached
    assert math.isnan(median_followup(np.array([]), np.array([])))


def test_veteran_median_followup_not_reached():
    # 128 of 137 die: fewer than half are ever censored, so the reverse KM never reaches one half
    table = cohort_summary(load_bundled("veteran"))
    assert table["median_followup"][0] == math.inf
    assert table["events"][0] == 128


def test_event_type_counts_pbc():
    assert event_type_counts(load_bundled("pbc", competing=True)) == {"censored": 232, "transplant": 25, "death": 161}
    assert event_type_counts(load_bundled("lung")) == {}


def test_time_units():
    assert time_factor("days", "days") == 1.0
    assert time_factor("weeks", "days") == 7.0
    assert time_factor("days", "years") == pytest.approx(1 / 365.25)
    assert time_factor("years", "months") == pytest.approx(12.0)
    assert time_factor("months", "days") == pytest.approx(30.4375)
    with pytest.raises(ParameterError, match="fortnights"):
        time_factor("days", "fortnights")
    assert factor_or_one("years", "days") == 365.25
    assert factor_or_one("days", "fortnights") == factor_or_one("visits", "years") == 1.0
    assert np.allclose(convert_times(np.array([365.25, 730.5]), "days", "years"), [1.0, 2.0])
    s = convert_times(pd.Series([7, 14]), "days", "weeks")
    assert s.tolist() == [1.0, 2.0]
    # text entries survive the conversion so validation can still name them
    mixed = convert_times(pd.Series(["7", "oops"], dtype=object), "days", "weeks")
    assert mixed.tolist() == [1.0, "oops"]


def test_summary_in_months_scales_follow_up():
    df = pd.DataFrame({"t": [30.4375, 60.875, 91.3125, 121.75], "d": [1, 0, 1, 0]})
    df["t"] = convert_times(df["t"], "days", "months")
    cohort = build_cohort(df, ColumnMap("t", "d"), "toy", "months")
    table = cohort_summary(cohort)
    assert table["max_followup"][0] == pytest.approx(4.0)
    assert table["median_followup"][0] == pytest.approx(4.0)  # censorings at 2 (S = 2/3) and 4 (S = 0)


@pytest.mark.parametrize("name", ["lung", "veteran", "pbc", "flchain", "kidney", "mgus2", "transplant"])
def test_median_followup_equals_lifelines_reverse_km(name):
    from lifelines import KaplanMeierFitter

    c = load_bundled(name)
    expected = KaplanMeierFitter().fit(c.time, event_observed=1 - c.event.astype(int)).median_survival_time_
    assert median_followup(c.time, c.event) == pytest.approx(expected, rel=1e-12)


def test_median_followup_on_a_flat_half_is_r_midpoint():
    # censored at 1, 2, 3, 4 (no events): reverse KM 0.75, 0.5, 0.25, 0; R's quantile rule gives (2 + 3) / 2
    assert median_followup(np.array([1.0, 2, 3, 4]), np.zeros(4, int)) == 2.5


def test_data_summary_loads_no_scipy():
    import subprocess
    import sys

    code = ("import sys, numpy as np; from dpsurv_core.data.summary import median_followup; "
            "median_followup(np.array([1., 2, 3]), np.array([1, 0, 0])); "
            "print(any(m.split('.')[0] in ('scipy', 'lifelines') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
