"""Spark through PySpark, for data that lives in a cluster: ``--spark-master URL`` (or the usual
``SPARK_MASTER`` / spark-submit environment); local mode otherwise. One session per process."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pandas as pd

from dpsurv_core.engines.base import RELATION, Engine, kind_of
from dpsurv_core.engines.source import Source
from dpsurv_core.errors import DataError

_SESSION = None


def session(master: str | None = None):
    """The process's Spark session (created once; ``master`` only counts the first time)."""
    global _SESSION
    if _SESSION is None:
        import shutil

        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise DataError("--engine spark needs Java, which is not installed: install Debian's headless JRE "
                            "(apt-get install default-jre-headless) or use --engine duckdb.")
        from pyspark.sql import SparkSession

        master = master or os.environ.get("SPARK_MASTER") or "local[*]"
        builder = (SparkSession.builder.appName("dpsurv").master(master)
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC"))
        if master.startswith("local"):  # the statistics are small tables: 200 shuffle partitions are 200 idle tasks
            builder = builder.config("spark.sql.shuffle.partitions", "4")
        _SESSION = builder.getOrCreate()
        _SESSION.sparkContext.setLogLevel("ERROR")
    return _SESSION


class SparkEngine(Engine):
    name = "spark"

    def __init__(self, source: Source, master: str | None = None) -> None:
        from pyspark.sql import functions as F

        super().__init__(source)
        self.spark = session(master)
        try:
            if source.kind == "parquet":
                df = self.spark.read.parquet(source.location)
            elif source.kind == "csv":
                df = self.spark.read.csv(source.location, header=True, inferSchema=True, sep=source.delimiter or ",")
            elif source.kind == "frame":
                df = self.spark.createDataFrame(source.frame)
            else:
                raise DataError("Spark cannot read a DuckDB database file: export the table to Parquet and pass that file.")
        except DataError:
            raise
        except Exception as exc:
            raise DataError(f"Spark could not read {source.name!r} ({str(exc).splitlines()[0]}): check the path.") from None
        # file order: monotonically increasing ids follow the partitions, which follow the file
        df = df.withColumn("_row", F.monotonically_increasing_id())
        df.createOrReplaceTempView(RELATION)
        self._columns = {n: kind_of(t) for n, t in df.dtypes if n != "_row"}

    def columns(self) -> dict[str, str]:
        return dict(self._columns)

    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def string(self, text: str) -> str:
        return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"

    def cache(self, sql: str) -> str:
        self._cached = getattr(self, "_cached", 0) + 1
        name = f"_cells{self._cached}"
        self.spark.sql(sql).cache().createOrReplaceTempView(name)
        return name

    def rows(self, sql: str) -> list[tuple]:
        return [tuple(r) for r in self.spark.sql(sql).collect()]

    def batches(self, sql: str, size: int) -> Iterator[pd.DataFrame]:
        df = self.spark.sql(sql)
        names = df.columns
        chunk: list[tuple] = []
        for row in df.toLocalIterator(prefetchPartitions=False):
            chunk.append(tuple(row))
            if len(chunk) >= size:
                yield pd.DataFrame.from_records(chunk, columns=names)
                chunk = []
        if chunk:
            yield pd.DataFrame.from_records(chunk, columns=names)
