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
from dpsurv_core.data.labels import CATEGORICAL, ValueLabels
from dpsurv_core.data.summary import convert_times
from dpsurv_core.errors import DataError, SheetChoiceNeeded
from dpsurv_core.report.text import markdown_literal


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
    """Errors as st.error, warnings as st.warning, each one sentence shown as typed (it names columns and values of
    the data, which Markdown would otherwise read)."""
    for p in problems:
        (st.error if p.severity == "error" else st.warning)(
            markdown_literal(p.message), icon=":material/error:" if p.severity == "error" else ":material/warning:")


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


def budget_caption(ledger, key: str) -> str:
    """One sentence on the budget of the data in use: it belongs to the content, so it follows the data set across
    tabs, reloads, file names and the command line."""
    spent = ledger.spent()
    n = len(ledger.entries)
    state = (f"no cap set, spent epsilon {spent:.3g}" if ledger.cap is None
             else f"spent epsilon {spent:.3g} of {ledger.cap:g}")
    return (f"This data set's budget: {state} in {n} release(s). It belongs to the data's content (data set key "
            f"`{key[:12]}`), not to this tab or the file name: the same values loaded again, in another tab, "
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


# ------------------------------------------------------------------------------ public parameters (Data page, part 4)

@dataclass(frozen=True)
class DeclaredTimes:
    """A declared horizon and grid, in one unit."""

    horizon: float | None
    grid: str | None


def declared_in_unit(choice, old_unit: str, unit: str) -> DeclaredTimes:
    """``choice``'s declared horizon and grid (``START:STOP:BINS``) expressed in ``unit`` instead of ``old_unit``: the
    same times, so that showing months instead of days declares nothing new."""
    from dpsurv_core.data.public import TimeGrid
    from dpsurv_core.data.summary import time_factor

    if unit == old_unit:
        return DeclaredTimes(choice.horizon, choice.grid)
    f = time_factor(old_unit, unit)
    horizon = None if choice.horizon is None else choice.horizon * f
    grid = None
    if choice.grid:
        g = TimeGrid.parse(choice.grid)
        grid = f"{g.edges[0] * f:.10g}:{g.edges[-1] * f:.10g}:{g.bins}"
    return DeclaredTimes(horizon, grid)


def event_codes_box(mapping: ColumnMap, column: str, tok: str, options: list[str], event_codes: tuple[str, ...]
                    ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The censoring codes of an event column coded with words or several codes (as ``--censor-codes``), and with
    several event codes whether each is its own event type (as ``--event-codes A,B`` with a cumulative incidence).
    The censoring codes start as every other value (or what is declared); a value left in neither list stops the
    analysis with one sentence naming it and its rows (:func:`dpsurv_core.data.event_types.unlisted_text`), never
    counted as censored. Returns (censoring codes, the (code, name) event types or ())."""
    rest = [o for o in options if o not in event_codes]
    declared = {str(c).strip().lower() for c in mapping.censor_codes} if mapping.event == column else set()
    default = [o for o in rest if o.lower() in declared] if declared else rest
    censor = st.multiselect(f"Values of '{markdown_literal(column)}' that mean censored", rest, default=default,
                            key=f"{tok}-censor-{column}",
                            help="A value in neither list stops the analysis, naming it and its number of rows: it "
                                 "is never counted as censored by default.")
    pairs: tuple[tuple[str, str], ...] = ()
    if len(event_codes) > 1:
        on = st.checkbox(f"Each event value of '{markdown_literal(column)}' is its own event type (competing risks)",
                         value=bool(mapping.event == column and mapping.event_type == column),
                         key=f"{tok}-code-types-{column}",
                         help="For a cumulative incidence per event type on the Survival curves page; the types are "
                              "declared (these values, in this order), so a release does not read them off the data.")
        if on:
            pairs = tuple((c, c) for c in event_codes)
    return tuple(censor), pairs


def event_types_box(mapping: ColumnMap, column: str, tok: str, documented: tuple[tuple[str, str], ...] = ()
                    ) -> tuple[tuple[str, str], ...]:
    """The Data page's declaration of the competing-event types of ``column``: the codes of the study design's event
    types, each with an optional name (``1=Relapse, 2=Death``). Prefilled with what is declared (a bundled data set's
    documented types for its own type column), never with the codes found in the data. Returns the declared (code,
    name) pairs, () while undeclared (the types are then read off the data: a competing-risks release is refused
    unless the data holder publishes them as read)."""
    from dpsurv_core.data import event_types
    from dpsurv_core.errors import DpsurvError

    current = tuple(mapping.event_type_names) if mapping.event_type == column else documented
    on = st.checkbox(f"Declare the event types of '{markdown_literal(column)}'", value=bool(current),
                     key=f"{tok}-declare-types-{column}",
                     help="The event types as the study design lists them (relapse, death, ...), so that a "
                          "competing-risks release need not read which ones occur off the data."
                          + (" Prefilled with the types this data set's documentation lists." if documented else ""))
    if not on:
        st.caption("Undeclared, the event types are the codes the data hold besides the censoring codes: a "
                   "competing-risks release reads them off the data (event-types) and is refused unless you publish "
                   "them as read (the release is then not DP as run).")
        return ()
    typed = st.text_input(f"Event types of '{markdown_literal(column)}': codes, each with an optional name",
                          value=event_types.text(current).replace(",", ", "), key=f"{tok}-types-{column}",
                          placeholder="as in the protocol, e.g. 1=Relapse, 2=Death")
    try:
        pairs = event_types.parse(typed, "The event types")
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} Until it is fixed the event types are not declared.")
        return ()
    if not pairs:
        st.caption("Type the event types to declare them; until then they are read off the data (disclosed).")
        return ()
    st.caption("Declared: these are the release's event types, whichever occur. A row whose code is neither one of "
               "them nor a censoring code stops the analysis with one sentence here (it is never made a new type, "
               "counted as censored or left out).")
    return pairs


def _codes(text: str) -> tuple[str, ...] | None:
    codes = tuple(dict.fromkeys(s.strip() for s in text.split(",") if s.strip()))
    return codes or None


def _declared_categories(choice, cohort, tok: str, labels: ValueLabels) -> dict[str, tuple[str, ...]]:
    """A box per categorical column a release may publish categories of: the group column (its groups) and each
    categorical covariate (a regression's levels). Prefilled with what is declared (for a bundled data set the codes
    its documentation lists), never with the codes found in the data."""

    m = choice.mapping
    columns = [m.group] if m.group else []
    columns += [c for c in m.covariates if c not in columns and c in choice.frame.columns
                and labels.kind(c, choice.frame[c]) == CATEGORICAL]
    out = {k: v for k, v in choice.categories.items() if k not in columns}  # columns not in use keep theirs
    for col in columns:
        group = col == m.group
        found = [str(g) for g in cohort.groups] if group else code_options(choice.frame[col])
        what = f"the categories of '{markdown_literal(col)}'"
        on = st.checkbox(f"Declare {what}", value=col in choice.categories, key=f"{tok}-declare-g-{col}",
                         help="The categories as the study design lists them (the protocol's arms, a variable's "
                              "codes), so that a release need not read which ones occur off the data.")
        if not on:
            continue
        text = st.text_input("Group categories, comma-separated" if group else
                             f"Categories of '{markdown_literal(col)}', comma-separated",
                             value=", ".join(choice.categories.get(col, ())), key=f"{tok}-cats-{col}",
                             placeholder=f"as in the protocol, e.g. {', '.join(found[:6])}")
        codes = _codes(text)
        if codes is None:
            st.caption("Type the categories to declare them; until then they are read off the data (disclosed).")
            continue
        out[col] = codes
        missing = sorted(set(found) - set(codes))
        if missing:
            st.warning(f"The data has {'group(s)' if group else 'value(s)'} {markdown_literal(', '.join(missing))} "
                       "that are not declared: add them, or those subjects fall outside every released "
                       f"{'group' if group else 'category'}.")
    return out


def public_boxes(choice, cohort, tok: str, labels: ValueLabels):
    """The Data page's box for every public value a release may need: horizon, time grid (``START:STOP:BINS``),
    categories per categorical column, covariate ranges, the number of subjects n and the censoring share. Each is
    empty unless declared (a bundled data set's documented design prefills its ranges, codes and size; an upload
    starts with nothing). Returns ``choice`` with what the boxes hold; a value that cannot be read is one sentence and
    stays undeclared."""
    import dataclasses

    import numpy as np

    from dpsurv_core.data.public import TimeGrid
    from dpsurv_core.errors import DpsurvError

    unit = choice.time_unit
    p1, p2, p3 = st.columns(3)
    tmax = float(np.max(cohort.time))
    declare_h = p1.checkbox("Declare the horizon", value=choice.horizon is not None, key=f"{tok}-declare-h",
                            help="The last time point any curve is reported at, e.g. 5 years from the protocol.")
    horizon = None
    if declare_h:
        # no value is pre-filled from the data (that would launder a data-derived horizon into a "declared" one)
        typed = p1.number_input(f"Horizon ({unit})", min_value=0.001, value=choice.horizon, key=f"{tok}-h-{unit}",
                                placeholder=f"from the protocol (the data's maximum is {tmax:g})")
        horizon = None if typed is None else float(typed)
        if horizon is None:
            p1.caption("Type the horizon to declare it; until then it is read off the data (disclosed).")
    grid_text = p2.text_input(f"Time grid START:STOP:BINS ({unit}, optional)", value=choice.grid or "",
                              key=f"{tok}-grid-{unit}", placeholder="from the protocol, e.g. 0:1000:20",
                              help="The public time axis: BINS equal bins from START to STOP. Left empty, the axis "
                                   "is the number of bins below, from 0 to the horizon. Declared, and without a "
                                   "declared horizon, its STOP is the horizon (as --grid alone on the command line).")
    grid = None
    if grid_text.strip():
        try:
            grid = TimeGrid.parse(grid_text)
        except DpsurvError as exc:
            p2.error(f"{markdown_literal(str(exc).removeprefix('--grid '))} Until it is fixed the grid is not "
                     "declared.")
    bins = int(p2.number_input("Number of time bins", min_value=2, max_value=500, value=int(choice.bins), step=1,
                               key=f"{tok}-bins", disabled=grid is not None,
                               help="Without a declared grid, the time axis is cut into this many equal bins up to the "
                                    "horizon."))
    event_grid = p3.checkbox("Event-time grid (not DP)", value=choice.event_time_grid,
                             key=f"{tok}-event-grid",
                             help="Use the data's own event times as the time axis. This publishes every distinct event "
                                  "time: the result is no longer differentially private.")
    categories = _declared_categories(choice, cohort, tok, labels)

    ranges: dict[str, tuple[float, float]] = {}
    numeric_covs = [c for c in cohort.covariates.columns if pd.api.types.is_numeric_dtype(cohort.covariates[c])]
    if numeric_covs:
        st.markdown("**Covariate ranges** (the plausible bounds a private regression may assume for each covariate)")
        for c in numeric_covs:
            r1, r2, r3 = st.columns([2, 1, 1])
            on = r1.checkbox(f"Declare the range of '{markdown_literal(c)}'", value=c in choice.covariate_ranges,
                             key=f"{tok}-declare-r-{c}")
            if on:
                s = cohort.covariates[c]
                lo0, hi0 = choice.covariate_ranges.get(c, (None, None))
                lo = r2.number_input(f"{markdown_literal(c)}: lowest", value=lo0, key=f"{tok}-lo-{c}",
                                     placeholder=f"data: {s.min():g}")
                hi = r3.number_input(f"{markdown_literal(c)}: highest", value=hi0, key=f"{tok}-hi-{c}",
                                     placeholder=f"data: {s.max():g}")
                if lo is None or hi is None:
                    r1.caption("Type both bounds to declare them; until then they are read off the data (disclosed).")
                elif hi > lo:
                    ranges[c] = (float(lo), float(hi))
                else:
                    r1.error(f"The highest value of '{markdown_literal(c)}' must be above the lowest: fix the range.")

    n1, n2 = st.columns(2)
    n_typed = n1.number_input("Number of subjects n (declared)", min_value=1, max_value=10**9, value=choice.n_public,
                              step=1, key=f"{tok}-n-public", placeholder="from the study design, e.g. the number enrolled",
                              help="A release that scales its noise or its intervals by the cohort size needs it "
                                   "public. " + ("Prefilled with the size published with the R package."
                                                 if choice.bundled else "Not read off the data."))
    share = n2.number_input("Censoring share (declared, 0 to 1)", min_value=0.0, max_value=1.0, value=choice.censoring,
                            step=0.05, key=f"{tok}-censoring", placeholder="from the study design, e.g. 0.3",
                            help="The share of subjects the study design expects to be censored, for the mechanisms "
                                 "whose intervals simulate censored cohorts. Not read off the data.")
    group = choice.mapping.group
    return dataclasses.replace(choice, horizon=horizon, bins=bins, grid=None if grid is None else grid_text.strip(),
                               event_time_grid=event_grid, categories=categories,
                               group_categories=categories.get(group) if group else None, covariate_ranges=ranges,
                               n_public=None if n_typed is None else int(n_typed),
                               censoring=None if share is None else float(share))


TIMEFIX_LABEL = "Keep near-tied times apart (R's timefix off)"
TIMEFIX_HELP = ("By default times that differ only by rounding error (0.1 + 0.2 and 0.3) are one time in the "
                "non-private curves, tests and the event-time grid, as R survival's timefix makes them; tick to keep "
                "every stored time apart, as --no-timefix on the command line.")


def timefix_box(mapping: ColumnMap, key: str) -> bool:
    """The column map's ``timefix`` as the user sets it: on unless the box to keep near-tied times apart is ticked."""
    return not st.checkbox(TIMEFIX_LABEL, value=not mapping.timefix, key=key, help=TIMEFIX_HELP)
