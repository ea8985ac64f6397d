"""DuckDB, the embedded default: Parquet, CSV and DuckDB tables are scanned in place (no row enters Python
except through :meth:`DuckDBEngine.batches`, the bounded chunked path)."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dpsurv_core.engines.base import RELATION, Engine, kind_of
from dpsurv_core.engines.source import Source
from dpsurv_core.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

MEMORY_ENV = "DPSURV_DUCKDB_MEMORY"
DEFAULT_MEMORY = "1GB"  # DuckDB's own cap; beyond it joins and aggregates spill to the temporary directory


def not_duckdb(path: str, exc: Exception) -> str:
    """The sentence for a file DuckDB cannot open as a database."""
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return (f"{path!r} could not be opened as a DuckDB database ({first}): give a database file made by DuckDB in "
            "--data duckdb:PATH:TABLE, or pass a Parquet or CSV file as --data PATH.")


def _close(con: Any) -> None:
    """Close a connection; one still busy in another thread (a server shutting down mid-query) is left to DuckDB."""
    import duckdb

    try:
        con.close()
    except duckdb.Error:
        pass


class DuckDBEngine(Engine):
    name = "duckdb"

    def __init__(self, source: Source, threads: int | None = None, memory_limit: str | None = None) -> None:
        import duckdb

        super().__init__(source)
        self.distinct_rows: str | None = None  # a table of the source's distinct rows with their counts, if kept
        shared = self._projection(source)
        try:
            self.con = shared[0].cursor() if shared else duckdb.connect(
                source.location if source.kind == "duckdb" else ":memory:", read_only=source.kind == "duckdb")
        except duckdb.Error as exc:  # a file that is not a DuckDB database, or one of a newer DuckDB
            raise DataError(not_duckdb(source.location, exc)) from None
        if shared:
            self.distinct_rows = shared[1]
        from dpsurv_core.privacy.fingerprint_scan import QUIET, temp_directory

        self.con.execute(QUIET)
        # closed when the engine is collected or, at the latest, by the process's exit handlers: DuckDB then removes
        # the rows it spilled to its temporary directory (a command line that ends without the interpreter's teardown
        # would otherwise leave them on disk)
        weakref.finalize(self, _close, self.con)
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        memory_limit = memory_limit or os.environ.get(MEMORY_ENV, "").strip() or DEFAULT_MEMORY
        self.con.execute(f"SET memory_limit = {self.string(memory_limit)}")  # larger intermediates spill to disk
        folder = temp_directory()
        # a cursor on the one scan's database has it already (and DuckDB refuses to set it again once used)
        if (self.con.execute("SELECT current_setting('temp_directory')").fetchone() or [None])[0] != folder:
            self.con.execute(f"SET temp_directory = {self.string(folder)}")
        loc = self.string(source.location)
        if source.kind == "parquet":
            scan = f"SELECT * EXCLUDE (file_row_number), file_row_number AS _row FROM read_parquet({loc}, file_row_number = true)"
        elif source.kind == "csv":
            delim = f", delim = {self.string(source.delimiter)}" if source.delimiter else ""
            scan = f"SELECT *, row_number() OVER () - 1 AS _row FROM read_csv({loc}, header = true{delim})"
        elif source.kind == "duckdb":
            tables = {r[0] for r in self.con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
            if source.table not in tables:
                raise DataError(f"The DuckDB database {source.location!r} has no table {source.table!r}: choose one of "
                                f"{', '.join(sorted(tables)) or '(none)'}.")
            scan = f"SELECT *, rowid AS _row FROM {self.quote(source.table)}"
        elif source.kind == "frame":
            self.con.register("_frame", source.frame)
            scan = "SELECT *, row_number() OVER () - 1 AS _row FROM _frame"
        else:
            raise DataError(f"DuckDB cannot read a {source.kind} source.")
        try:
            self.con.execute(f"CREATE TEMP VIEW {RELATION} AS {scan}")
            self._columns = {r[0]: kind_of(str(r[1])) for r in self.con.execute(f"DESCRIBE {RELATION}").fetchall()
                             if r[0] != "_row"}
        except duckdb.Error as exc:
            raise DataError(f"DuckDB could not read {source.name!r} ({str(exc).splitlines()[0]}): check that it is a "
                            "Parquet or CSV file with a header row.") from None

    @staticmethod
    def _projection(source: Source):
        """The command line's one scan of a Parquet file, made as the command started
        (:func:`dpsurv_core.privacy.fingerprint_prefetch.projection`): its connection and the table of the file's
        distinct rows with their counts, which :meth:`~dpsurv_core.engines.statistics.Statistics.summarise` counts
        from instead of scanning the file again; None when there is none."""
        if source.kind != "parquet" or not Path(source.location).is_file():
            return None
        from dpsurv_core.privacy.fingerprint_prefetch import projection

        return projection(Path(source.location))

    def columns(self) -> dict[str, str]:
        return dict(self._columns)

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def string(self, text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    def cache(self, sql: str) -> str:
        self._cached = getattr(self, "_cached", 0) + 1
        name = f"_cells{self._cached}"
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}")
        return name

    def rows(self, sql: str) -> list[tuple]:
        return [tuple(r) for r in self.con.execute(sql).fetchall()]

    def batches(self, sql: str, size: int) -> Iterator[pd.DataFrame]:
        reader = self.con.sql(sql).to_arrow_reader(int(size))
        for batch in reader:
            yield batch.to_pandas()

    def close(self) -> None:
        self.con.close()
