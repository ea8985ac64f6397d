"""The scan a release's data file needs, started as the command starts: its content fingerprint and, for the DuckDB
engine on a Parquet file, the distinct rows the engine counts from.

A release on a Parquet or CSV file needs the file's content fingerprint (:func:`dpsurv_core.privacy.fingerprint.
fingerprint_file`) and, before that, imports dpsurv's analysis modules and validates the cohort in the engine. :func:`start`,
called by ``python -m dpsurv_core`` before it builds its parser, looks at the command line alone (a release command,
``--data`` naming an existing Parquet/CSV/TSV file, no help) and works in a background thread, which runs while the main
thread imports (DuckDB releases Python's lock while it scans):

- for a Parquet file the DuckDB engine will read (``--engine duckdb``, or no ``--engine`` and a file above the
  engine's size threshold) with few distinct rows, *one scan* keeps the file's distinct rows with their counts as a
  small table (:func:`dpsurv_core.privacy.fingerprint_scan.materialise_path`). The engine's counts
  (:func:`projection`, used by :class:`~dpsurv_core.engines.duckdb.DuckDBEngine`) and the fingerprint
  (:func:`~dpsurv_core.privacy.fingerprint_sql.fingerprint_distinct`, unless the per-file cache has it) are both read
  off that table: the file is scanned once per release, in the same pass for both;
- otherwise (CSV, many distinct rows, another engine) the fingerprint is computed as ``fingerprint_file`` computes it.

The fingerprint is skipped for a seeded simulation (``--seed``: no ledger), the projection is not. :func:`take` hands the
fingerprint to ``fingerprint_file``, which waits for the thread when it is still running; the value is the same as
computing it there (and it is kept in the per-file cache as usual). Any failure in the thread is dropped: the engine
then scans the file and ``fingerprint_file`` computes the fingerprint itself, so an error reads the same.
``DPSURV_FINGERPRINT_PREFETCH=off`` turns it off.
"""

from __future__ import annotations

import atexit
import os
import threading
from pathlib import Path

PREFETCH_ENV = "DPSURV_FINGERPRINT_PREFETCH"
COMMANDS = ("km", "logrank", "weibull", "regression")
SUFFIXES = (".parquet", ".pq", ".csv", ".tsv", ".txt", ".tab")
PARQUET = (".parquet", ".pq")
TABLE = "dpsurv_distinct_rows"  # the projection's table in its in-memory database
ENGINE_MB_ENV, DEFAULT_ENGINE_MB = "DPSURV_ENGINE_MB", 100  # as dpsurv_core.engines.source (not imported here: pandas)
_RUNNING: dict[str, tuple[threading.Thread, dict]] = {}


def _option(argv: list[str], name: str) -> str | None:
    for i, a in enumerate(argv):
        if a == name and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def wanted(argv: list[str]) -> Path | None:
    """The data file this command line will read in a release command, or None."""
    if os.environ.get(PREFETCH_ENV, "").strip().lower() in ("off", "0", "no", "false"):
        return None
    command = next((a for a in argv if not a.startswith("-")), None)
    if command not in COMMANDS or any(a in ("-h", "--help") for a in argv):
        return None
    text = _option(argv, "--data")
    if not text or Path(text).suffix.lower() not in SUFFIXES:
        return None
    path = Path(text)
    return path if path.is_file() else None


def _seeded(argv: list[str]) -> bool:
    return any(a == "--seed" or a.startswith("--seed=") for a in argv)


def _duckdb_parquet(argv: list[str], path: Path) -> bool:
    """Whether the DuckDB engine will read this Parquet file (as :func:`dpsurv_core.engines.source.choose_engine`
    decides, without importing it) and count from its rows (no ``--id``, whose ranking reads the rows)."""
    if path.suffix.lower() not in PARQUET or _option(argv, "--id") is not None:
        return False
    engine = _option(argv, "--engine")
    if engine is not None:
        return engine == "duckdb"
    text = os.environ.get(ENGINE_MB_ENV, "").strip()
    threshold = int(text) if text.isdigit() and int(text) > 0 else DEFAULT_ENGINE_MB
    return path.stat().st_size > threshold * 2**20


def start(argv: list[str]) -> None:
    """Start the file's scan in a background thread (see the module docstring)."""
    path = wanted(argv)
    if path is None:
        return
    key = str(path.resolve())
    if key in _RUNNING and _RUNNING[key][0].is_alive():
        return
    fingerprint, project = not _seeded(argv), _duckdb_parquet(argv, path)
    if not (fingerprint or project):
        return
    st = path.stat()
    box: dict = {"stamp": (st.st_size, st.st_mtime_ns)}  # the file as it was before it is read

    def work() -> None:
        try:
            from dpsurv_core.privacy.fingerprint_scan import materialise_path  # DuckDB only: the scan starts now

            con = materialise_path(path, TABLE) if project else None
            if con is not None:
                box["projection"] = con
            if not fingerprint:
                return
            if con is not None:
                from dpsurv_core.privacy import fingerprint_cache, fingerprint_sql

                box["value"] = fingerprint_cache.cached(path, lambda: fingerprint_sql.fingerprint_distinct(con, TABLE))
            else:
                from dpsurv_core.privacy.fingerprint import fingerprint_file

                box["value"] = fingerprint_file(path, prefetched=False)
        except BaseException:  # noqa: BLE001 - the main thread scans and computes again and reports any error
            box.pop("value", None)

    thread = threading.Thread(target=work, name="dpsurv-fingerprint", daemon=True)
    _RUNNING[key] = (thread, box)
    thread.start()


def _unchanged(path: Path, box: dict) -> bool:
    st = path.stat()
    return box.get("stamp") == (st.st_size, st.st_mtime_ns)


def projection(path: Path) -> tuple[object, str] | None:
    """``(connection, table)``: the DuckDB connection holding the file's distinct rows with their counts (column
    :data:`~dpsurv_core.privacy.fingerprint_scan.COUNT_COLUMN`) as ``table``, waiting for the thread; None when there is
    none or the file changed since it was started. The engine opens a cursor on it (the same in-memory database)."""
    entry = _RUNNING.get(str(path.resolve()))
    if entry is None:
        return None
    thread, box = entry
    thread.join()
    con = box.get("projection")
    return (con, TABLE) if con is not None and _unchanged(path, box) else None


def take(path: Path) -> str | None:
    """The prefetched fingerprint of ``path`` (waiting for its thread), or None when there is none or the file changed
    since it was started."""
    entry = _RUNNING.get(str(path.resolve()))
    if entry is None:
        return None
    thread, box = entry
    thread.join()
    value = box.pop("value", None)
    return value if value is not None and _unchanged(path, box) else None


@atexit.register
def _close_scans() -> None:
    """At exit, after :func:`_wait` (exit handlers run last registered first): every scan's connection is closed, so
    DuckDB removes anything it spilled to disk, also when the process then ends without the interpreter's teardown
    (:func:`dpsurv_core.__main__.exit_now`)."""
    import sys

    sql = sys.modules.get("dpsurv_core.privacy.fingerprint_scan")
    if sql is not None:
        sql.close_all()


@atexit.register
def _wait() -> None:
    """A command that ends before it needed the fingerprint (an error, a non-private run) interrupts the thread's
    DuckDB query and waits for it, so DuckDB is never torn down under a running query."""
    if not _RUNNING:
        return
    import sys

    sql = sys.modules.get("dpsurv_core.privacy.fingerprint_scan")
    if sql is not None:
        sql.interrupt_all()
    for thread, _ in list(_RUNNING.values()):
        thread.join()
    _RUNNING.clear()
