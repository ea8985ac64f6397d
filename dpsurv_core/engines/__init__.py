"""Statistics computed where the data lives: DuckDB by default for large files and DuckDB tables,
Spark for data in a cluster, pandas for small files. See docs/engines.md.

``open_cohort(source, engine, mapping)`` validates in the engine (the same sentences as the in-memory path)
and returns an :class:`~dpsurv_core.engines.cohort.EngineCohort`; the curve mechanisms' counts then come from
one ``GROUP BY`` and no row enters Python.
"""

from __future__ import annotations

from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.engines.base import Engine
from dpsurv_core.engines.cohort import DEFAULT_CHUNK_ROWS, EngineCohort
from dpsurv_core.engines.source import ENGINES, Source, choose_engine, parse
from dpsurv_core.engines.statistics import Statistics
from dpsurv_core.errors import DataError
from dpsurv_core.extras import install_hint, installed

__all__ = ["ENGINES", "Engine", "EngineCohort", "Source", "choose_engine", "connect", "open_cohort", "parse"]

_OPEN: dict[tuple, Engine] = {}


def connect(name: str, source: Source, spark_master: str | None = None) -> Engine:
    """An engine over ``source`` (one per source and engine in a process: Spark starts once).

    Parameters
    ----------
    name : str
        ``"duckdb"`` or ``"spark"``.
    source : Source
        The data's source.
    spark_master : str, optional
        The Spark master URL (default ``SPARK_MASTER``, else local mode).

    Returns
    -------
    Engine
        The engine, shared by later calls on the same source (a frame gets a new one).

    Raises
    ------
    dpsurv_core.errors.DataError
        For an unknown engine or one whose package is not installed.
    """
    key = (name, source.kind, source.location, source.table, spark_master)
    if source.kind == "frame" or key not in _OPEN:  # a frame is registered afresh (its id may be reused)
        if name == "duckdb":
            try:
                from dpsurv_core.engines.duckdb import DuckDBEngine
            except ImportError:
                raise DataError("--engine duckdb needs the duckdb package: pip install -r requirements.txt.") from None
            engine: Engine = DuckDBEngine(source)
        elif name == "spark":
            if not installed("pyspark"):  # PySpark is imported only when the engine starts
                raise DataError(f"--engine spark needs PySpark, which is not installed: {install_hint('pyspark')} "
                                "(and a Java runtime).")
            from dpsurv_core.engines.spark import SparkEngine

            engine = SparkEngine(source, spark_master)
        else:
            raise DataError(f"There is no engine {name!r}: choose one of {', '.join(ENGINES)}.")
        if source.kind == "frame":
            return engine
        _OPEN[key] = engine
    return _OPEN[key]


def open_cohort(source: Source, engine: str | Engine, mapping: ColumnMap, name: str | None = None,
                time_unit: str = "days", purpose: str = "This analysis", chunk_rows: int = DEFAULT_CHUNK_ROWS,
                spark_master: str | None = None) -> EngineCohort:
    """Validate ``mapping`` on ``source`` inside the engine; the first blocking problem is a :class:`DataError`.

    Parameters
    ----------
    source : Source
        The data's source.
    engine : str or Engine
        The engine, or its name (:func:`connect` opens it).
    mapping : ColumnMap
        Which column is time, event, group, id.
    name : str, optional
        The data set's name (default the source's).
    time_unit : str, default "days"
        The unit of the time column.
    purpose : str, default "This analysis"
        How the error sentences name the analysis.
    chunk_rows : int
        Rows per chunk when rows are read.
    spark_master : str, optional
        The Spark master URL.

    Returns
    -------
    EngineCohort
        The cohort, kept in the engine.

    Raises
    ------
    dpsurv_core.errors.DataError
        The first blocking problem.
    """
    eng = engine if isinstance(engine, Engine) else connect(engine, source, spark_master)
    summary, problems = Statistics(eng, mapping).summarise()
    if summary is None:
        first = next(p for p in problems if p.severity == "error")
        raise DataError(first.message, column=first.column)
    return EngineCohort.open(eng, summary, name or source.name, time_unit, purpose, chunk_rows)
