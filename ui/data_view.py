"""Helpers of the Data page: guessing a column map for an upload, reading uploads, formatting tables.

No statistics here: the numbers come from ``dpsurv_core``; this module only chooses defaults,
formats and draws. Uploaded bytes are passed around in memory and never written anywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dpsurv_core import limits
from dpsurv_core.data.cohort import FALSE_WORDS, TRUE_WORDS, ColumnMap, Problem
from dpsurv_core.data.io import read_table
from dpsurv_core.data.summary import convert_times
from dpsurv_core.errors import DataError, SheetChoiceNeeded

TIME_NAMES = ("time", "futime", "os_time", "survival_time", "survtime", "stop", "duration", "follow_up", "followup",
              "days", "months", "years", "t")
EVENT_NAMES = ("status", "event", "death", "dead", "died", "fustat", "cens", "censor", "delta", "outcome", "d")
ID_NAMES = ("id", "subject", "subject_id", "patient", "patient_id", "pid")


def _find(columns: list[str], names: tuple[str, ...]) -> str | None:
    lower = {c.lower(): c for c in columns}
    return next((lower[n] for n in names if n in lower), None)


def guess_mapping(df: pd.DataFrame) -> ColumnMap:
    """A first column map for an uploaded table, from common column names (the user can change it).

    A subject-id column (``id``, ``patient_id``, ...) is mapped with the bound of one row per subject.
    """
    cols = [str(c) for c in df.columns]
    time = _find(cols, TIME_NAMES)
    if time is None:
        numeric = [c for c in cols if pd.api.types.is_numeric_dtype(df[c])]
        time = numeric[0] if numeric else cols[0]
    event = _find([c for c in cols if c != time], EVENT_NAMES)
    if event is None:
        rest = [c for c in cols if c != time]
        event = next((c for c in rest if is_binary_like(df[c])), rest[0] if rest else time)
    # a subject-id column is mapped from the start, so rows are never silently treated as patients
    subject = _find([c for c in cols if c not in (time, event)], ID_NAMES)
    return ColumnMap(time=time, event=event, id=subject)


def is_binary_like(series: pd.Series) -> bool:
    """True when the values are already 0/1, true/false or yes/no (no event codes needed)."""
    s = series.dropna()
    if pd.api.types.is_bool_dtype(s):
        return True
    vals = set(s.astype(str).str.strip().str.lower().str.replace(r"\.0$", "", regex=True).unique())
    if pd.api.types.is_numeric_dtype(s):
        return vals <= {"0", "1"}
    return vals <= TRUE_WORDS | FALSE_WORDS


def code_options(series: pd.Series, limit: int = 30) -> list[str]:
    """The distinct values of a code column as the strings validation compares (``2.0`` -> ``2``)."""
    s = series.dropna().astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
    vals = list(pd.unique(s))

    def key(v: str):
        try:
            return (0, float(v), "")
        except ValueError:
            return (1, 0.0, v)

    return sorted(vals, key=key)[:limit]


def with_time_unit(raw: pd.DataFrame, time_col: str, source_unit: str, unit: str) -> pd.DataFrame:
    """``raw`` with its time column expressed in ``unit`` (a copy when a conversion is needed)."""
    if source_unit == unit or time_col not in raw.columns:
        return raw
    out = raw.copy()
    out[time_col] = convert_times(out[time_col], source_unit, unit)
    return out


@dataclass
class UploadResult:
    """What reading an upload gave: a table, a sheet question, or one sentence saying what is wrong."""

    frame: pd.DataFrame | None = None
    warnings: tuple[str, ...] = ()
    sheets: tuple[str, ...] = ()
    error: str | None = None


def read_upload(data: bytes, filename: str, sheet: str | None = None) -> UploadResult:
    """Read uploaded bytes in memory; never raises on bad input. An upload past the size cap
    (:func:`dpsurv_core.limits.max_upload_mb`, also ``server.maxUploadSize``) is refused with a sentence."""
    try:
        limits.check_upload(len(data), filename)
        frame, warnings = read_table(data, filename, sheet=sheet)
    except SheetChoiceNeeded as exc:
        return UploadResult(sheets=tuple(exc.sheets))
    except DataError as exc:
        return UploadResult(error=str(exc))
    except Exception as exc:  # a file the readers choke on in an unforeseen way: still a sentence
        return UploadResult(error=f"{filename!r} could not be read ({type(exc).__name__}): save it as a plain CSV "
                                  "with a header row and upload that.")
    return UploadResult(frame=frame, warnings=tuple(warnings))


def show_problems(problems: list[Problem]) -> None:
    """Errors as st.error, warnings as st.warning, each one sentence."""
    for p in problems:
        (st.error if p.severity == "error" else st.warning)(p.message, icon=":material/error:" if p.severity == "error" else ":material/warning:")


def fmt_time(x: float, unit: str) -> str:
    """A follow-up time as clinicians read it: 588 days, 19.3 months; 'not reached' for inf."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if math.isinf(x):
        return "not reached"
    return f"{x:,.0f} {unit}" if abs(x) >= 100 or float(x).is_integer() else f"{x:.3g} {unit}"


def summary_display(table: pd.DataFrame, unit: str, group_name: str | None, with_rows: bool) -> pd.DataFrame:
    """The summary table of :func:`dpsurv_core.data.summary.cohort_summary` as readable strings."""
    out = pd.DataFrame({
        (group_name or "Group"): ["All subjects" if g == "All" else str(g) for g in table["group"]],
        "Subjects": [f"{n:,}" for n in table["subjects"]],
    })
    if with_rows:
        out["Rows"] = [f"{n:,}" for n in table["rows"]]
    out["Events"] = [f"{n:,}" for n in table["events"]]
    out["Censored"] = [f"{n:,} ({p:.1f}%)" for n, p in zip(table["censored"], table["censored_pct"], strict=True)]
    out["Median follow-up (reverse KM)"] = [fmt_time(x, unit) for x in table["median_followup"]]
    out["Longest follow-up"] = [fmt_time(x, unit) for x in table["max_followup"]]
    return out


def budget_caption(ledger, fingerprint: str) -> str:
    """One sentence on the budget of the data in use: it belongs to the content, so it follows the data set across
    tabs, reloads, file names and the command line."""
    spent = ledger.spent()
    n = len(ledger.entries)
    state = (f"no cap set, spent epsilon {spent:.3g}" if ledger.cap is None
             else f"spent epsilon {spent:.3g} of {ledger.cap:g}")
    return (f"This data set's budget: {state} in {n} release(s). It belongs to the data's content (fingerprint "
            f"`{fingerprint[:12]}`), not to this tab or the file name: the same values loaded again, in another tab, "
            "another order or under other column names, or by the command line, share it.")
