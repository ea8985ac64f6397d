"""Spark against a cluster, not local mode: a standalone master and one worker started from PySpark's own
``spark-class`` (Java needed; skipped with the reason where it is missing), and ``km`` / ``logrank`` run with
``--spark-master spark://...`` in a fresh process, giving the same counts and tests as DuckDB on the same file."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import _free_port

pytestmark = [pytest.mark.spark, pytest.mark.slow]

START_SECONDS = 180.0  # a master and a worker JVM on a loaded two-core machine
LOGS: dict[str, Path] = {}  # the master's log of each cluster started here
CONF: dict[str, Path] = {}  # the SPARK_CONF_DIR a driver of each cluster started here reads
# The cluster's spark-defaults.conf, as an operator would configure a small cluster: dpsurv sets no shuffle width for
# a cluster master (it leaves that to the cluster's configuration), and Spark's default of 200 shuffle partitions is
# 200 tasks per aggregation on the worker's one core (about 60 of the test's 110 CPU seconds). Two keep every
# aggregation a shuffle across partitions, as on a real cluster.
SPARK_DEFAULTS = "spark.sql.shuffle.partitions 2\n"


def cluster_log(url: str) -> Path:
    return LOGS[url]


def _spark_class() -> Path | None:
    try:
        import pyspark
    except ImportError:
        return None
    path = Path(pyspark.__file__).parent / "bin" / "spark-class"
    return path if path.exists() else None


def _wait(check, what: str, logs: list[Path]) -> None:
    end = time.monotonic() + START_SECONDS
    while time.monotonic() < end:
        if check():
            return
        time.sleep(1.0)
    tails = "\n".join(p.read_text(errors="replace")[-2000:] for p in logs if p.exists())
    pytest.fail(f"the standalone Spark {what} did not start within {START_SECONDS:g} s:\n{tails}")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[str]:
    """spark://127.0.0.1:PORT of a standalone master with one worker (one core, 1 GB), stopped afterwards."""
    spark_class = _spark_class()
    if shutil.which("java") is None or spark_class is None:
        print("skipping the Spark cluster test: it needs Java and PySpark (make test installs both)")
        pytest.skip("the Spark cluster test needs Java and PySpark")
    tmp = tmp_path_factory.mktemp("spark-cluster")
    port = _free_port()
    env = {**os.environ, "SPARK_HOME": str(spark_class.parent.parent), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp), "SPARK_WORKER_DIR": str(tmp / "work")}
    master_log, worker_log = tmp / "master.log", tmp / "worker.log"
    procs = []
    try:
        with master_log.open("w") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
                 "--webui-port", str(_free_port())], env=env, stdout=out, stderr=subprocess.STDOUT))
        _wait(lambda: "ALIVE" in master_log.read_text(errors="replace"), "master", [master_log])
        url = f"spark://127.0.0.1:{port}"
        LOGS[url] = master_log
        CONF[url] = tmp / "conf"
        CONF[url].mkdir()
        (CONF[url] / "spark-defaults.conf").write_text(SPARK_DEFAULTS)
        with worker_log.open("w") as out:
            procs.append(subprocess.Popen(
                [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(_free_port()), "--work-dir", str(tmp / "work")],
                env=env, stdout=out, stderr=subprocess.STDOUT))
        _wait(lambda: "Registering worker" in master_log.read_text(errors="replace"), "worker",
              [master_log, worker_log])
        yield url
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()


def _cli(*argv: str) -> dict:
    # a driver registering with the cluster while other tests load both cores takes longer than the 30 s default
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "DPSURV_SPARK_START_SECONDS": "300"}
    if "--spark-master" in argv:
        env["SPARK_CONF_DIR"] = str(CONF[argv[argv.index("--spark-master") + 1]])
    done = subprocess.run([sys.executable, "-m", "dpsurv_core", *argv, "--json"], capture_output=True, text=True,
                          env=env, timeout=600, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.fixture(scope="module")
def lung_file(tmp_path_factory) -> str:
    from dpsurv_core import load_dataset

    path = tmp_path_factory.mktemp("lung") / "lung.csv"
    load_dataset("lung").frame.to_csv(path, index=False)
    return str(path)


def test_km_and_logrank_on_a_standalone_cluster_equal_duckdb(cluster, lung_file):
    common = ("--data", lung_file, "--time", "time", "--event", "status", "--mechanism", "nonprivate")
    for command, extra in (("km", ("--grid", "0:1100:20")), ("logrank", ("--group", "sex", "--horizon", "1100"))):
        on_cluster = _cli(command, *common, *extra, "--engine", "spark", "--spark-master", cluster)
        on_duckdb = _cli(command, *common, *extra, "--engine", "duckdb")
        if command == "km":
            (a,), (b,) = on_cluster["curves"], on_duckdb["curves"]
            for key in ("at_risk", "events", "survival", "lower", "upper"):
                assert a[key] == b[key], key
        else:
            assert on_cluster["tests"] == on_duckdb["tests"]
    log = Path(cluster_log(cluster)).read_text(errors="replace")
    assert "Registered app" in log and "Launching executor" in log  # the commands ran on the cluster's worker
