"""A picker for data the server can see (Parquet, CSV, a DuckDB table), read where it lives by an engine.

Thin: the listing and the checks are in :mod:`dpsurv_core.engines.source`; this draws the widgets and returns
the chosen :class:`~dpsurv_core.engines.source.Source` (or None). The folders offered are those the
administrator lists in ``DPSURV_SERVER_DATA``; nothing else on the server is shown.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dpsurv_core.engines.source import SERVER_DATA_ENV, Source, duckdb_tables, server_files, server_roots, server_source
from dpsurv_core.errors import DataError


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
            st.warning(f"{chosen.name} holds no table.")
            return None
        table = st.selectbox("Table", tables, key=f"{key}_table")
    try:
        return server_source(chosen, table)
    except DataError as exc:
        st.error(str(exc))
        return None
