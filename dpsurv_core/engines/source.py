"""What a data source is: a pandas frame, a Parquet or CSV path, or a table in a DuckDB database.

``--data`` accepts a bundled name, a file path, or ``duckdb:PATH.duckdb:TABLE``. Parquet, CSV/TSV and
DuckDB tables can be read by an engine (DuckDB, Spark) without loading the rows into Python; Excel
files and bundled data sets are read by pandas.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from dpsurv_core.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

ENGINES = ("pandas", "duckdb", "spark")
ENGINE_MB_ENV = "DPSURV_ENGINE_MB"
DEFAULT_ENGINE_MB = 100  # files above this size default to DuckDB; smaller ones are read by pandas
ENGINE_SUFFIXES = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv", ".txt": "csv", ".tab": "csv"}


@dataclass(frozen=True)
class Source:
    """A table an engine can read: ``kind`` is frame, parquet, csv or duckdb (a table in a database file)."""

    kind: str
    location: str = ""
    table: str = ""
    frame: pd.DataFrame | None = field(default=None, compare=False, repr=False)
    label: str = ""

    @property
    def name(self) -> str:
        """The name results and the ledger show."""
        if self.label:
            return self.label
        if self.kind == "duckdb":
            return f"duckdb:{self.location}:{self.table}"
        return self.location

    @property
    def delimiter(self) -> str | None:
        return "\t" if Path(self.location).suffix.lower() in (".tsv", ".tab") else None

    def size_bytes(self) -> int:
        """Size on disk (0 for a frame; a DuckDB database counts whole)."""
        if self.kind == "frame":
            return 0
        p = Path(self.location)
        return p.stat().st_size if p.exists() else 0


def engine_mb() -> int:
    text = os.environ.get(ENGINE_MB_ENV, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else DEFAULT_ENGINE_MB


def parse(text: str) -> Source | None:
    """The engine source ``text`` names, or None when it is not one (a bundled name or an Excel file).

    Parameters
    ----------
    text : str
        What ``--data`` says: ``duckdb:PATH:TABLE``, or a path.

    Returns
    -------
    Source or None
        The source, or None when the engines do not read it.

    Raises
    ------
    dpsurv_core.errors.DataError
        For a malformed ``duckdb:`` source or a missing database.
    """
    if text.startswith("duckdb:"):
        rest = text[len("duckdb:"):]
        path, sep, table = rest.rpartition(":")
        if not sep or not path or not table:
            raise DataError(f"--data {text!r} is not duckdb:PATH.duckdb:TABLE (for example duckdb:registry.duckdb:cohort).")
        if not Path(path).exists():
            raise DataError(f"There is no DuckDB database at {path!r}: check the path in --data duckdb:PATH:TABLE.")
        return Source("duckdb", path, table)
    kind = ENGINE_SUFFIXES.get(Path(text).suffix.lower())
    return None if kind is None else Source(kind, text)


def check_exists(source: Source) -> None:
    """A local file source must exist (cluster paths such as hdfs:// and globs are left to the engine)."""
    text = source.location
    if source.kind in ("parquet", "csv") and "://" not in text and not any(ch in text for ch in "*?[") \
            and not Path(text).exists():
        raise DataError(f"There is no file at {text!r}: check the path, or give a bundled data set name.")


def choose_engine(requested: str | None, source: Source | None) -> str:
    """``requested``, else duckdb for DuckDB tables and files above :func:`engine_mb` megabytes, else pandas.

    Parameters
    ----------
    requested : str, optional
        The engine asked for (``--engine``).
    source : Source, optional
        The data's source (None for a bundled data set or an upload).

    Returns
    -------
    str
        ``"pandas"``, ``"duckdb"`` or ``"spark"``.

    Raises
    ------
    dpsurv_core.errors.DataError
        For an unknown engine, or Spark asked to read a DuckDB database.
    """
    if requested is not None:
        if requested not in ENGINES:
            raise DataError(f"--engine {requested!r} is not one of {', '.join(ENGINES)}.")
        if source is not None and source.kind == "duckdb" and requested == "spark":
            raise DataError("Spark cannot read a DuckDB database file: export the table to Parquet "
                            "(COPY table TO 'cohort.parquet') and pass that file to --engine spark.")
        return requested
    if source is None:
        return "pandas"
    if source.kind == "duckdb" or (Path(source.location).is_file() and source.size_bytes() > engine_mb() * 2**20):
        return "duckdb"
    return "pandas"


SERVER_DATA_ENV = "DPSURV_SERVER_DATA"
SERVER_SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".duckdb")


def server_roots() -> list[Path]:
    """The folders whose tables the app may offer (``DPSURV_SERVER_DATA``, separated by ``os.pathsep``); none unless
    the administrator sets it, so a browser never lists arbitrary server paths."""
    text = os.environ.get(SERVER_DATA_ENV, "")
    return [Path(p).resolve() for p in text.split(os.pathsep) if p.strip() and Path(p).is_dir()]


def server_files(roots: list[Path] | None = None, limit: int = 500) -> list[Path]:
    """Parquet, CSV/TSV and DuckDB files under the roots (sorted, at most ``limit``)."""
    out: list[Path] = []
    for root in server_roots() if roots is None else roots:
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix.lower() in SERVER_SUFFIXES:
                out.append(p)
                if len(out) >= limit:
                    return out
    return out


def duckdb_tables(path: str | Path) -> list[str]:
    """The tables of a DuckDB database file (opened read-only)."""
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        from dpsurv_core.engines.duckdb import not_duckdb

        raise DataError(not_duckdb(str(path), exc)) from None
    try:
        return sorted(r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall())
    finally:
        con.close()


def server_source(path: str | Path, table: str | None = None) -> Source:
    """The :class:`Source` for a file under the server roots (refused elsewhere)."""
    p = Path(path).resolve()
    if not any(p.is_relative_to(r) for r in server_roots()):
        raise DataError(f"{str(path)!r} is not under a folder the server shares ({SERVER_DATA_ENV}).")
    if p.suffix.lower() == ".duckdb":
        if not table:
            raise DataError(f"Choose a table of the DuckDB database {p.name!r}.")
        return Source("duckdb", str(p), table)
    return Source(ENGINE_SUFFIXES[p.suffix.lower()], str(p))
