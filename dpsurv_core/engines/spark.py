"""Spark through PySpark, for data that lives in a cluster: ``--spark-master URL`` (or the usual
``SPARK_MASTER`` / spark-submit environment); local mode otherwise. One session per process.

A master URL is checked before Java starts (:func:`check_master`): its form (``local``, ``local[N]``, ``local[*]``,
``local[N,F]``, ``spark://HOST:PORT[,HOST:PORT...]``, ``k8s://[https://]HOST:PORT``, ``yarn``), and for a cluster
that some master answers on its host and port within :data:`CONNECT_SECONDS`; the session itself must start within
``DPSURV_SPARK_START_SECONDS`` (default 30 s; 180 s on YARN and Kubernetes, which start containers first). Spark's
own client would otherwise retry an unreachable master for a minute, printing Java traces.
"""

from __future__ import annotations

import os
import re
import socket
import threading
from collections.abc import Iterator

import numpy as np
import pandas as pd

from dpsurv_core.engines.base import RELATION, Engine, kind_of, number
from dpsurv_core.engines.source import Source
from dpsurv_core.errors import DataError

_SESSION = None
CONNECT_SECONDS = 5.0  # to open a TCP connection to a cluster's master
START_ENV = "DPSURV_SPARK_START_SECONDS"
DEFAULT_START_SECONDS = 30.0
MANAGED_START_SECONDS = 180.0  # yarn and k8s: the resource manager starts the containers first
_LOCAL = re.compile(r"local(\[(\*|[1-9]\d*)(,[1-9]\d*)?\])?")
_HOST_PORT = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):([1-9]\d{0,4})"
_CLUSTER = re.compile(rf"spark://{_HOST_PORT}(,{_HOST_PORT})*|k8s://(https?://)?{_HOST_PORT}")
MASTER_FORMS = "local, local[N], local[*], spark://HOST:PORT, k8s://https://HOST:PORT or yarn"
_POS, _STEP = "_dpsurv_pos", "_dpsurv_step"  # lambda variables of the edge search (they hide columns so named)


def check_master(master: str) -> None:
    """Refuse, before Java starts, a Spark master URL of no form Spark accepts, or a cluster whose master does not
    accept a connection on its host and port within :data:`CONNECT_SECONDS` (one sentence, no Java trace)."""
    if _LOCAL.fullmatch(master):
        return
    if master == "yarn":
        if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
            raise DataError("--spark-master yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR naming the cluster's "
                            "configuration: set it, or give spark://HOST:PORT.")
        return
    if not _CLUSTER.fullmatch(master):
        raise DataError(f"--spark-master {master!r} is not a Spark master URL: give {MASTER_FORMS}.")
    places = re.findall(_HOST_PORT, master.split("://", 1)[1].split("://")[-1])
    failures: list[str] = []
    answered = threading.Event()

    def probe() -> None:  # in a thread: a name lookup has no timeout of its own
        for host, port in places:
            try:
                with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_SECONDS):
                    answered.set()
                    return
            except OSError as exc:
                failures.append(f"{host}:{port}: {exc.strerror or exc}")

    worker = threading.Thread(target=probe, name="dpsurv-spark-probe", daemon=True)
    worker.start()
    worker.join(CONNECT_SECONDS * len(places) + 1.0)
    if answered.is_set():
        return
    why = "; ".join(failures) if failures else f"no answer within {CONNECT_SECONDS * len(places) + 1.0:.0f} s"
    raise DataError(f"No Spark master answered at {master!r} ({why}): check the host and port, that the cluster is "
                    "running and reachable from here, or use --engine duckdb.")


def array_search(t: str, edges: np.ndarray, strict: bool) -> str:
    """Spark SQL for the number of sorted ``edges`` below ``t`` (``strict``: e < t) or at or below it (e <= t):
    the same comparisons as :func:`~dpsurv_core.engines.base.balanced_case`, as a binary search over one array
    literal: ``AGGREGATE`` over the steps 2^k, ..., 2, 1 (2^k <= J) moves the position p up by a step when
    edge p + step (1-based) still compares below ``t``, so it ends at the count (NULL ``t``: 0; NaN: J).
    log2(J) ``ELEMENT_AT`` per row on J literals once, instead of nested CASEs on about 2J literals, whose
    generated code Spark fails to compile past about a thousand edges (and then plans and interprets slowly)."""
    e = [number(v) for v in np.asarray(edges, float)]
    if not e:
        return "0"
    steps = [1 << i for i in range(len(e).bit_length())][::-1]
    op = "<" if strict else "<="
    return (f"AGGREGATE(ARRAY({', '.join(map(str, steps))}), 0, ({_POS}, {_STEP}) -> CASE WHEN {_POS} + {_STEP} > "
            f"{len(e)} THEN {_POS} WHEN ELEMENT_AT(ARRAY({', '.join(e)}), {_POS} + {_STEP}) {op} {t} THEN "
            f"{_POS} + {_STEP} ELSE {_POS} END)")


def _start_seconds(master: str) -> float:
    default = MANAGED_START_SECONDS if master == "yarn" or master.startswith("k8s://") else DEFAULT_START_SECONDS
    try:
        value = float(os.environ.get(START_ENV, "") or default)
    except ValueError:
        return default
    return value if value > 0 and value == value else default


def _start(builder, master: str):
    """``builder.getOrCreate()`` within :func:`_start_seconds` (a thread: the JVM cannot be interrupted; the process
    ends it on exit), any failure one sentence."""
    out: dict = {}

    def run() -> None:
        try:
            out["session"] = builder.getOrCreate()
        except BaseException as exc:  # noqa: BLE001 - reported below as one sentence
            out["error"] = exc

    worker = threading.Thread(target=run, name="dpsurv-spark-start", daemon=True)
    worker.start()
    worker.join(_start_seconds(master))
    if worker.is_alive():
        raise DataError(f"Spark did not start with master {master!r} within {_start_seconds(master):.0f} s ({START_ENV}): "
                        "check that it is a running Spark master, or use --engine duckdb.")
    if "error" in out:
        first = (str(out["error"]).strip().splitlines() or [type(out["error"]).__name__])[0]
        raise DataError(f"Spark could not start with master {master!r} ({first[:200]}): check --spark-master and the "
                        "Java installation, or use --engine duckdb.")
    return out["session"]


def session(master: str | None = None):
    """The process's Spark session (created once; ``master`` only counts the first time)."""
    global _SESSION
    if _SESSION is None:
        import shutil

        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            raise DataError("--engine spark needs Java, which is not installed: install Debian's headless JRE "
                            "(apt-get install default-jre-headless) or use --engine duckdb.")
        from pyspark.sql import SparkSession

        master = (master or os.environ.get("SPARK_MASTER") or "local[*]").strip()
        check_master(master)
        builder = (SparkSession.builder.appName("dpsurv").master(master)
                   .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC"))
        if master.startswith("local"):  # the statistics are small tables: 200 shuffle partitions are 200 idle tasks
            builder = builder.config("spark.sql.shuffle.partitions", "4")
        _SESSION = _start(builder, master)
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

    def count_edges(self, t: str, edges: np.ndarray, strict: bool) -> str:
        """The edge count as a binary search over one array literal (:func:`array_search`)."""
        return array_search(t, edges, strict)

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
