"""A picker for data the server can see (Parquet, CSV, a DuckDB table), read where it lives by an engine.

Thin: the listing and the checks are in :mod:`dpsurv_core.engines.source`; this draws the widgets and returns
the chosen :class:`~dpsurv_core.engines.source.Source` (or None). The folders offered are those the
administrator lists in ``DPSURV_SERVER_DATA``; nothing else on the server is shown.

A table within the app's row limit is read into the session (every page works on it); a larger one stays in the
engine: the session keeps its validated :class:`~dpsurv_core.engines.EngineCohort` and fingerprint, the counting
pages query it, and :func:`engine_sections` draws the Data page's sections for it (no rows in memory).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import session
from dpsurv_app.cache import session_cache
from dpsurv_app.data_view import budget_caption
from dpsurv_core import limits
from dpsurv_core.curves.result import exact_counts
from dpsurv_core.data.public import TimeGrid
from dpsurv_core.engines.source import SERVER_DATA_ENV, Source, duckdb_tables, server_files, server_roots, server_source
from dpsurv_core.errors import DataError, DpsurvError
from dpsurv_core.report.text import markdown_literal, markdown_literal_frame


def server_data_picker(key: str = "server_data") -> Source | None:
    """Draw the path and table picker; returns the chosen source, or None while nothing is chosen."""
    roots = server_roots()
    if not roots:
        st.caption(f"No server folder is shared: the administrator can set {SERVER_DATA_ENV} to folders holding "
                   "Parquet, CSV or DuckDB files, which are then analysed in place (DuckDB counts inside the file).")
        return None
    files = server_files(roots)
    if not files:
        st.caption(f"The shared folders ({', '.join(str(r) for r in roots)}) hold no Parquet, CSV or DuckDB file.")
        return None

    def label(p: Path) -> str:
        root = next(r for r in roots if p.is_relative_to(r))
        return f"{root.name}/{p.relative_to(root)}"

    chosen = st.selectbox("File on the server", files, format_func=label, index=None, key=f"{key}_file",
                          help="Read in place by DuckDB: only the counts each analysis needs leave the file.")
    if chosen is None:
        return None
    table = None
    if chosen.suffix.lower() == ".duckdb":
        tables = duckdb_tables(chosen)
        if not tables:
            st.warning(f"{markdown_literal(chosen.name)} holds no table.")
            return None
        table = st.selectbox("Table", tables, key=f"{key}_table")
    try:
        return server_source(chosen, table)
    except DataError as exc:
        st.error(markdown_literal(exc))
        return None


def session_engine(source: Source):
    """A DuckDB engine over ``source`` for this browser session only. A DuckDB connection serves one query at a time
    (another thread's call is refused, or worse), so sessions must not share the one per process that
    :func:`dpsurv_core.engines.connect` keeps for the command line; within a session the script runs one at a time."""
    from dpsurv_core.engines.duckdb import DuckDBEngine

    return session_cache(("server_engine", source), lambda: DuckDBEngine(source))


def open_server_cohort(source: Source, engine, mapping, time_unit: str):
    """The table validated and summarised in the engine for ``mapping`` (:func:`dpsurv_core.engines.open_cohort`),
    kept in this session per source, file version, column map and unit: the Data page's reruns do not scan the table
    again (a scan of 10^7 rows takes about a second)."""
    from dpsurv_core.engines import open_cohort

    stat = Path(source.location).stat()
    return session_cache(("server_cohort", source, stat.st_mtime_ns, stat.st_size, mapping, time_unit),
                         lambda: open_cohort(source, engine, mapping, source.name, time_unit, "The app's analysis pages"))


def server_fits_in_memory(cohort) -> bool:
    """True when the table is within the app's row limit (read into the session as today), else it stays in the
    engine."""
    return cohort.summary.rows_in_source <= session.row_limit(cohort)[0]


def engine_fingerprint(source: Source, engine) -> str:
    """The table's content fingerprint, the key of its budget: the CLI's for the same file or DuckDB table (the
    engines share one fingerprint with the file), computed once per session and source."""
    from dpsurv_core.privacy.fingerprint import fingerprint_source

    return session_cache(("server_fingerprint", source), lambda: fingerprint_source(source, engine))


def server_caption(cohort, in_memory: bool) -> str:
    """What pressing "Analyse this cohort" does with this table: read it into memory, or keep it in the engine."""
    limit, columns = session.row_limit(cohort)
    if in_memory:
        return (f"Within the app's row limit ({limit:,} rows of {columns} columns, {limits.CLI_CELLS_ENV}): pressing "
                "the button reads the table into this session's memory in chunks, and every analysis page works on it.")
    return (f"Past the app's row limit ({limit:,} rows of {columns} columns, {limits.CLI_CELLS_ENV}): pressing the "
            "button keeps the table in DuckDB. Survival curves, Group comparison and Weibull parameters (maximum "
            "likelihood, LSP + TLL, Laplace) then compute from the counts DuckDB returns, as the command line does; "
            "Regression, the Privacy audit and the Trade-off explorer need the rows and say so.")


def _summary_table(cohort) -> pd.DataFrame:
    """Rows, events and censored per group from one count over a single bin holding every time (the engine's counts:
    the group's size and its events in the bin)."""
    grid = TimeGrid(np.array([-1.0, max(float(cohort.max_time), 0.0)]), "custom")
    public = cohort.public_parameters()
    counts = exact_counts(cohort, grid, public)
    rows = []
    for g, label in enumerate(counts.groups):
        n, d = int(counts.n[g]), int(counts.events[g].sum())
        name = "All patients" if label == "all" else session.group_label(label)
        rows.append({"Group": name, "Rows": f"{n:,}", "Events": f"{d:,}",
                     "Censored": f"{n - d:,} ({100 * (n - d) / max(n, 1):.1f}%)"})
    return pd.DataFrame(rows)


def engine_sections(choice: session.DataChoice) -> None:
    """The Data page for a server table kept in the engine: what is in use, its columns, a counted summary and the
    public parameters (horizon, bins, group categories). No row is read into this session."""
    cohort = session.kept_engine(choice)
    m = choice.mapping
    key = f"srv-{choice.name}"
    st.markdown(f"**In use: {markdown_literal(choice.name)}** (on the server, kept in DuckDB: {choice.rows:,} rows, "
                "not read into this session)")
    try:
        st.caption(budget_caption(session.ledger(), session.store().key(choice.fingerprint)))
    except DpsurvError as exc:
        st.error(f"The ledger database cannot be read: {markdown_literal(exc)}")
    st.subheader("2. What each column means")
    group = f", group: '{markdown_literal(m.group)}'" if m.group else ", no group column"
    st.markdown(f"Time: '{markdown_literal(m.time)}' (in {choice.time_unit}), event: '{markdown_literal(m.event)}'"
                f"{group}.")
    st.caption("Chosen in section 1 above: change them there and press *Analyse this cohort* again. The table was "
               "checked inside DuckDB with the same rules as an upload.")
    for w in cohort.warnings:
        st.warning(markdown_literal(w), icon=":material/warning:")

    st.subheader("3. Summary")
    try:
        st.table(markdown_literal_frame(session_cache(("server_summary", cohort.engine.source, cohort.mapping),
                                                      lambda: _summary_table(cohort))), hide_index=True)
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
    st.caption("Exact numbers for the data holder (not private, never released), counted by DuckDB inside the file. "
               "The median follow-up needs each subject's time and is left out for a table kept on the server.")

    st.subheader("4. Public parameters")
    st.caption("Declare these from the study design, not from the data. A release that needs a value left empty reads "
               "it off the data: it is shown as a disclosure, and a release is refused unless you publish it as read "
               "(the release is then not DP as run).")
    p1, p2, p3 = st.columns(3)
    declare_h = p1.checkbox("Declare the horizon", value=choice.horizon is not None, key=f"{key}-declare-h",
                            help="The last time point any curve is reported at, e.g. 5 years from the protocol.")
    horizon = None
    if declare_h:
        typed = p1.number_input(f"Horizon ({choice.time_unit})", min_value=0.001, value=choice.horizon,
                                key=f"{key}-h", placeholder=f"from the protocol (the data's maximum is "
                                                            f"{cohort.max_time:g})")
        horizon = None if typed is None else float(typed)
    grid_text = p2.text_input(f"Time grid START:STOP:BINS ({choice.time_unit}, optional)", value=choice.grid or "",
                              key=f"{key}-grid", placeholder="from the protocol, e.g. 0:1000:20",
                              help="The public time axis: BINS equal bins from START to STOP. Left empty, the axis "
                                   "is the number of bins beside it, from 0 to the horizon.")
    grid = None
    if grid_text.strip():
        try:
            TimeGrid.parse(grid_text)
            grid = grid_text.strip()
        except DpsurvError as exc:
            p2.error(f"{markdown_literal(str(exc).removeprefix('--grid '))} Until it is fixed the grid is not "
                     "declared.")
    bins = int(p3.number_input("Number of time bins", min_value=2, max_value=500, value=int(choice.bins), step=1,
                               key=f"{key}-bins", disabled=grid is not None))
    cats = None
    if m.group:
        found = [str(g) for g in cohort.groups]
        if st.checkbox(f"Declare the categories of '{markdown_literal(m.group)}'",
                       value=choice.group_categories is not None, key=f"{key}-declare-g"):
            text = st.text_input("Group categories, comma-separated", value=", ".join(choice.group_categories or ()),
                                 key=f"{key}-cats", placeholder=f"as in the protocol, e.g. {', '.join(found[:6])}")
            cats = tuple(s.strip() for s in text.split(",") if s.strip()) or None
    if (horizon, bins, grid, cats) != (choice.horizon, choice.bins, choice.grid, choice.group_categories):
        categories = {k: v for k, v in choice.categories.items() if k != m.group}
        if m.group and cats:
            categories[m.group] = cats
        choice = dataclasses.replace(choice, horizon=horizon, bins=bins, grid=grid, group_categories=cats,
                                     categories=categories)
        session.set_data_choice(choice)
        st.session_state["upload_choice"] = choice
    try:
        params = session.public_parameters(cohort)
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        return
    for dsc in params.disclosures():
        st.warning(f"Disclosed ({markdown_literal(dsc.parameter)}): {markdown_literal(dsc.message)}", icon=":material/visibility:")
    st.caption(f"Time grid: {params.grid.bins} bins from {params.grid.edges[0]:g} to {params.grid.edges[-1]:g} "
               f"{choice.time_unit}; horizon {params.horizon:g} {choice.time_unit}.")
