"""Helpers of the Data page: guessing a column map for an upload, reading uploads, formatting tables.

No statistics here: the numbers come from ``dpsurv_core``; this module only chooses defaults,
formats and draws. Uploaded bytes are passed around in memory and never written anywhere.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd
import streamlit as st

from dpsurv_core import limits
from dpsurv_core.data import guess as guessing
from dpsurv_core.data.cohort import FALSE_WORDS, TRUE_WORDS, ColumnMap, Problem
from dpsurv_core.data.io import read_table
from dpsurv_core.data.labels import ValueLabels
from dpsurv_core.data.summary import convert_times
from dpsurv_core.errors import DataError, SheetChoiceNeeded


def guess_mapping(df: pd.DataFrame) -> ColumnMap:
    """A first column map for an uploaded table (:func:`dpsurv_core.data.guess.guess_mapping`: by name, then
    content; the user confirms or changes it)."""
    return guessing.guess_mapping(df)


def guess_table(guess: guessing.Guess, raw: pd.DataFrame) -> pd.DataFrame:
    """The guessed roles for the user to check: role, column, its values and why it was chosen."""
    rows = []
    for role, col, why in (("Time", guess.time, "time"), ("Event", guess.event, "event"), ("Group", guess.group, "group"),
                           ("Subject id", guess.id, "id")):
        values = guessing.numeric_summary(raw[col]) if col is not None and col in raw.columns else ""
        rows.append({"Role": role, "Column": col or "(none)", "Values": values,
                     "Why": guess.reasons.get(why, "no column is named like one")})
    rows.append({"Role": "Time unit", "Column": guess.time_unit, "Values": "",
                 "Why": guess.reasons.get("time_unit", "not guessed: days assumed")})
    return pd.DataFrame(rows)


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


MAX_LABELS_BYTES = 1_000_000


def load_labels_json(data: bytes, columns: list[str]) -> tuple[ValueLabels | None, str]:
    """Value labels from a JSON file saved by the Data page, restricted to ``columns``: (labels, what was loaded), or
    (None, one sentence saying what is wrong)."""
    if len(data) > MAX_LABELS_BYTES:
        return None, "That labels file is larger than 1 MB: a labels file holds only codes and names; check the file."
    try:
        loaded = ValueLabels.from_json(json.loads(data.decode("utf-8")))
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None, "That file is not JSON text: load a file saved with 'Labels as JSON'."
    except DataError as exc:
        return None, f"{exc} Load a file saved with 'Labels as JSON'."
    known = set(columns)
    mentioned = set(loaded.values) | set(loaded.kinds) | set(loaded.descriptions) | set(loaded.references)
    kept = ValueLabels({c: m for c, m in loaded.values.items() if c in known},
                       {c: k for c, k in loaded.kinds.items() if c in known},
                       {c: d for c, d in loaded.descriptions.items() if c in known},
                       {c: r for c, r in loaded.references.items() if c in known})
    used = sorted(mentioned & known)
    ignored = sorted(mentioned - known)
    if not used:
        return None, "That labels file names none of this table's columns: was it saved for another data set?"
    text = f"Loaded labels for {len(used)} column(s): {', '.join(used)}."
    if ignored:
        text += f" Ignored {len(ignored)} column(s) this table does not have: {', '.join(ignored[:8])}."
    return kept, text


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


def summary_display(table: pd.DataFrame, unit: str, group_name: str | None, with_rows: bool,
                    labels: ValueLabels | None = None) -> pd.DataFrame:
    """The summary table of :func:`dpsurv_core.data.summary.cohort_summary` as readable strings; with ``labels``,
    a labelled group shows as ``label (code)``."""
    def name(g: object) -> str:
        if g == "All":
            return "All subjects"
        return labels.display(group_name, g) if labels is not None else str(g)

    out = pd.DataFrame({
        (group_name or "Group"): [name(g) for g in table["group"]],
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


SAMPLE_ROWS = 1000  # rows of a server table read to guess its columns' roles


def engine_sample(engine, rows: int = SAMPLE_ROWS) -> pd.DataFrame:
    """The first ``rows`` rows of an engine's table (to guess the column roles), without ``_row``."""
    from dpsurv_core.engines.base import RELATION

    cols = list(engine.columns())
    sql = f"SELECT {', '.join(engine.quote(c) for c in cols)} FROM {RELATION} ORDER BY _row LIMIT {int(rows)}"
    parts = list(engine.batches(sql, rows))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def engine_frame(cohort, chunk_rows: int = 200_000) -> pd.DataFrame:
    """Every column of an engine cohort's table, streamed in chunks below the app's row limit
    (:func:`dpsurv_core.limits.check_engine_rows`: past it, one sentence naming the limit, nothing read)."""
    from dpsurv_core.engines.base import RELATION

    engine = cohort.engine
    cols = list(engine.columns())
    rows = cohort.summary.rows_in_source
    limits.check_engine_rows(rows, len(cols), cohort.name, "The app's analysis pages")
    sql = f"SELECT {', '.join(engine.quote(c) for c in cols)} FROM {RELATION} ORDER BY _row"
    parts = list(engine.batches(sql, chunk_rows))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)
