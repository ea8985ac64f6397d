"""Cohort summary for the data holder: subjects, events, censoring, follow-up, overall and per group.

These are exact (non-private) descriptive numbers: they are for the person who holds the data,
to check the upload, and are never part of a release. Median follow-up is estimated with the
reverse Kaplan-Meier method (censoring treated as the event), via lifelines.

Also here: converting times between the units the app offers (days, weeks, months, years).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.errors import ParameterError

if TYPE_CHECKING:
    import pandas as pd

DAYS_PER = {"days": 1.0, "weeks": 7.0, "months": 365.25 / 12.0, "years": 365.25}
TIME_UNITS = tuple(DAYS_PER)

COLUMNS = ["group", "subjects", "rows", "events", "censored", "censored_pct", "median_followup", "max_followup"]


def time_factor(from_unit: str, to_unit: str) -> float:
    """Multiply a time in ``from_unit`` by this to get it in ``to_unit`` (a month is 365.25/12 days)."""
    for u in (from_unit, to_unit):
        if u not in DAYS_PER:
            raise ParameterError(f"{u!r} is not a time unit dpsurv knows: choose one of {', '.join(TIME_UNITS)}.")
    return DAYS_PER[from_unit] / DAYS_PER[to_unit]


def factor_or_one(from_unit: str, to_unit: str) -> float:
    """:func:`time_factor`, or 1 when either is not a unit dpsurv knows (a data set's own label, kept as it is)."""
    return time_factor(from_unit, to_unit) if from_unit in DAYS_PER and to_unit in DAYS_PER else 1.0


def convert_times(values: np.ndarray | pd.Series, from_unit: str, to_unit: str) -> np.ndarray | pd.Series:
    """``values`` (numbers in ``from_unit``) expressed in ``to_unit``; non-numbers are left to validation."""
    f = time_factor(from_unit, to_unit)
    if f == 1.0:
        return values
    pd = sys.modules.get("pandas")  # not imported yet: ``values`` cannot be a Series
    if pd is not None and isinstance(values, pd.Series):
        num = pd.to_numeric(values, errors="coerce")
        # keep text entries as they are, so validation still names the offending row
        return (num * f).where(num.notna(), values) if (num.isna() & values.notna()).any() else num * f
    return np.asarray(values, dtype=float) * f


def median_followup(time: np.ndarray, event: np.ndarray) -> float:
    """Median follow-up by reverse Kaplan-Meier (Schemper & Smith 1996: censoring is the 'event'), read by R's
    quantile rule (:func:`dpsurv_core.curves.kaplan_meier.quantile_r`); inf when not reached. The same estimate as
    lifelines' ``KaplanMeierFitter`` on (time, 1 - event), computed here with numpy so the Data page's first view
    does not load lifelines and SciPy."""
    from dpsurv_core.curves.kaplan_meier import quantile_r

    time = np.asarray(time, dtype=float)
    censored = 1 - np.asarray(event, dtype=int)
    if time.size == 0:
        return math.nan
    if censored.sum() == 0:
        return math.inf
    times, index = np.unique(time, return_inverse=True)
    leaving = np.bincount(index, minlength=times.size)
    at_risk = time.size - np.concatenate([[0], np.cumsum(leaving)[:-1]])
    curve = np.cumprod(1.0 - np.bincount(index, weights=censored, minlength=times.size) / at_risk)
    return float(quantile_r(times, curve, 0.5))


def _row(label: str, cohort: Cohort, mask: np.ndarray) -> dict:
    t, e = cohort.time[mask], cohort.event[mask]
    subjects = int(np.unique(cohort.subject[mask]).size) if cohort.subject is not None else int(mask.sum())
    n_rows = int(mask.sum())
    events = int(e.sum())
    return {
        "group": label, "subjects": subjects, "rows": n_rows, "events": events, "censored": n_rows - events,
        "censored_pct": 100.0 * (n_rows - events) / n_rows if n_rows else math.nan,
        "median_followup": median_followup(t, e), "max_followup": float(t.max()) if n_rows else math.nan,
    }


def cohort_summary(cohort: Cohort) -> pd.DataFrame:
    """One row for the whole cohort ("All"), then one per group (natural order); columns ``COLUMNS``.

    ``censored_pct`` is a percentage of rows; follow-up times are in ``cohort.time_unit``;
    ``median_followup`` is inf when the reverse Kaplan-Meier curve never drops to one half.

    Parameters
    ----------
    cohort : Cohort
        The data set (exact values: for the data holder's eyes, never a release).

    Returns
    -------
    pandas.DataFrame
        Subjects, events, censored share and follow-up, overall and per group.
    """
    import pandas as pd

    rows = [_row("All", cohort, np.ones(cohort.n, dtype=bool))]
    if cohort.group is not None:
        for g in cohort.groups:
            rows.append(_row(str(g), cohort, cohort.group == g))
    return pd.DataFrame(rows, columns=COLUMNS)


def event_type_counts(cohort: Cohort) -> dict[str, int]:
    """Rows per event type (competing risks), with 'censored' first; empty when there is no type column."""
    if cohort.event_type is None:
        return {}
    out = {"censored": int((cohort.event_type == 0).sum())}
    for k, label in enumerate(cohort.event_type_labels, start=1):
        out[str(label)] = int((cohort.event_type == k).sum())
    return out
