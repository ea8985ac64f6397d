"""One DuckDB scan of a Parquet file that serves both a release's counts and its content fingerprint.

A registry's cohort file has many rows but few distinct rows (whole days of follow-up, an event flag, a few group
labels). :func:`materialise_path` scans the file once, ``SELECT *, count(*) ... GROUP BY ALL``, and keeps the distinct
rows with their counts (column :data:`COUNT_COLUMN`) as a small table in an in-memory DuckDB database. From it:

- the content fingerprint (:func:`dpsurv_core.privacy.fingerprint_sql.fingerprint_distinct`): each distinct row
  weighted by its count gives the same sums as the rows themselves, so the value is the one every other path gives
  (the fingerprint's definition, :mod:`dpsurv_core.privacy.fingerprint`, is unchanged);
- the engine's cells (:meth:`dpsurv_core.engines.statistics.Statistics.summarise`): the counts per (time, event,
  group) are sums of those counts.

It is used only when a probe of the first :data:`PROBE_ROWS` rows finds at most :data:`FEW_VALUES` distinct rows and
the whole file has at most :func:`distinct_row_limit` of them; otherwise nothing is kept and the two-pass fingerprint
and the engine's own scan run as before. This module imports DuckDB alone (no NumPy, no pandas), so the command line
starts the scan in a background thread before it imports the rest (:mod:`dpsurv_core.privacy.fingerprint_prefetch`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

FEW_VALUES = 50_000  # distinct values in the first PROBE_ROWS rows below which a column's key comes from its counts
PROBE_ROWS = 200_000
DISTINCT_ROW_CELLS = 20_000_000  # a table of distinct rows (with counts) up to this many cells is hashed in NumPy
# DuckDB draws a progress bar on standard output when a query runs longer than 2 s (a registry's scan does), which
# would come before the command's JSON there
QUIET = "SET enable_progress_bar = false"
COUNT_COLUMN = "_dpsurv_n"  # a materialised table of distinct rows keeps each one's count in this column
NUMBER_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "BOOLEAN", "DECIMAL")
THREADS_ENV = "DPSURV_FINGERPRINT_THREADS"
_ACTIVE: set = set()  # open connections, so a process that ends early can interrupt them


def distinct_row_limit(ncols: int) -> int:
    """How many distinct rows the one-scan path takes (at most two million; fewer for a wide table)."""
    return max(1, min(2_000_000, DISTINCT_ROW_CELLS // max(ncols, 1)))


def quote(name: str) -> str:
    """An identifier quoted for DuckDB."""
    return '"' + name.replace('"', '""') + '"'


def string(text: str) -> str:
    """A string literal for DuckDB."""
    return "'" + text.replace("'", "''") + "'"


def interrupt_all() -> None:
    """Interrupt every running fingerprint query of this process (it then raises in its own thread)."""
    for con in list(_ACTIVE):
        try:
            con.interrupt()
        except Exception:  # noqa: BLE001 - closed meanwhile
            pass


def close_all() -> None:
    """Close every fingerprint connection of this process (its in-memory database then ends, and DuckDB removes
    anything it spilled to disk)."""
    for con in list(_ACTIVE):
        _ACTIVE.discard(con)
        try:
            con.close()
        except Exception:  # noqa: BLE001 - closed already
            pass


def connect() -> Any:
    """A new in-memory DuckDB connection for fingerprint scans (``$DPSURV_FINGERPRINT_THREADS`` threads when set,
    1 GB of memory, insertion order not kept), registered so :func:`interrupt_all` reaches it."""
    import duckdb

    con = duckdb.connect()
    _ACTIVE.add(con)
    con.execute(QUIET)
    threads = os.environ.get(THREADS_ENV, "").strip()
    if threads.isdigit() and int(threads) > 0:
        con.execute(f"SET threads = {int(threads)}")
    con.execute("SET memory_limit = '1GB'")
    con.execute(f"SET temp_directory = {string(temp_directory())}")  # not DuckDB's default, ./.tmp in the cwd
    con.execute("SET preserve_insertion_order = false")
    return con


def temp_directory() -> str:
    """Where dpsurv's DuckDB databases spill rows that outgrow their memory (the system's temporary folder; DuckDB
    removes its files there when the database closes)."""
    import tempfile

    return str(Path(tempfile.gettempdir()) / "dpsurv_duckdb")


def described(con: Any, rel: str) -> tuple[list[str], list[str]]:
    """The column names and (upper-case) types of the relation ``rel``."""
    rows = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
    return [r[0] for r in rows], [str(r[1]).upper() for r in rows]


def read_exprs(names: list[str], types: list[str]) -> list[str]:
    """Each column as the fingerprint reads it: DOUBLE for a number column, else text."""
    return [f"CAST({quote(c)} AS {'DOUBLE' if t.startswith(NUMBER_TYPES) else 'VARCHAR'})"
            for c, t in zip(names, types, strict=True)]


def materialise(con: Any, rel: str, table: str) -> bool:
    """Keep the distinct rows of ``rel`` with their counts as ``table`` (one scan) when the probe finds few; True when
    kept (see the module docstring)."""
    names, types = described(con, rel)
    if not names or COUNT_COLUMN in names:
        return False
    exprs = read_exprs(names, types)
    probe = con.execute(f"SELECT approx_count_distinct(hash({', '.join(exprs)})) FROM "
                        f"(SELECT * FROM {rel} LIMIT {PROBE_ROWS})").fetchone()
    if probe is None or (probe[0] or 0) > FEW_VALUES:
        return False
    limit = distinct_row_limit(len(names))
    cols = ", ".join(quote(c) for c in names)
    # grouped on the stored values (cheaper to hash than their DOUBLE or text; values that read alike stay separate
    # rows, which the weighted sums add up the same)
    con.execute(f"CREATE OR REPLACE TABLE {table} AS SELECT {cols}, count(*) AS {COUNT_COLUMN} FROM {rel} "
                f"GROUP BY ALL LIMIT {limit + 1}")
    found = con.execute(f"SELECT count(*) FROM {table}").fetchone()
    if found is None or found[0] > limit:
        con.execute(f"DROP TABLE {table}")
        return False
    return True


def parquet_relation(path: str | Path) -> str:
    """The FROM clause that scans a Parquet file."""
    return f"read_parquet({string(str(path))})"


def materialise_path(path: str | Path, table: str) -> Any:
    """One scan of a Parquet file keeping its distinct rows with their counts as ``table`` in a new in-memory DuckDB
    database (:func:`materialise`); returns its connection, or None when the file has too many distinct rows (the
    connection is then closed)."""
    con = connect()
    kept = False
    try:
        kept = materialise(con, parquet_relation(path), table)
    finally:
        if not kept:
            _ACTIVE.discard(con)
            con.close()
    return con if kept else None
