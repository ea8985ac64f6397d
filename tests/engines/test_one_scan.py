"""One DuckDB scan of a Parquet file serves a release's counts and its content fingerprint
(:mod:`dpsurv_core.privacy.fingerprint_scan`, started with the command by
:mod:`dpsurv_core.privacy.fingerprint_prefetch`): the same fingerprint as every other path, the same cells and the
same seeded output as the engine's own scan, no second scan of the file; and a release imports no SciPy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from dpsurv_core import engines
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.engines.duckdb import DuckDBEngine
from dpsurv_core.engines.source import Source
from dpsurv_core.privacy import fingerprint_prefetch as pre
from dpsurv_core.privacy import fingerprint_scan, fingerprint_sql
from dpsurv_core.privacy.fingerprint import fingerprint, fingerprint_file


@pytest.fixture(autouse=True)
def no_leftover_scans():
    yield
    pre._wait()  # each test's background scans end with it


def _cells(engine) -> list[tuple]:
    name = f"_cells{engine._cached}"
    return engine.rows(f"SELECT * FROM {name} ORDER BY ALL")


def _release(path, *extra: str) -> list[str]:
    return ["km", "--data", str(path), "--time", "time", "--event", "status", "--group", "sex", "--grid", "0:1100:20",
            "--epsilon", "1", "--engine", "duckdb", "--json", "--categories", "sex:1,2", *extra]


def test_the_scan_serves_the_fingerprint_and_the_engines_cells(tmp_path, monkeypatch):
    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    scanned = []
    real = fingerprint_sql.fingerprint_path
    monkeypatch.setattr(fingerprint_sql, "fingerprint_path", lambda p: scanned.append(p) or real(p))
    pre.start(_release(path))
    engine = engines.connect("duckdb", Source("parquet", str(path)))
    assert engine.distinct_rows == pre.TABLE  # the engine reads the kept distinct rows
    mapping = ColumnMap(time="time", event="status", group="sex")
    shared = engines.open_cohort(engine.source, engine, mapping)
    assert fingerprint_file(path) == fingerprint(lung) == real(path)
    assert scanned == []  # the fingerprint came from the same scan, not a pass of its own
    pre._wait()
    own = DuckDBEngine(Source("parquet", str(path)))  # no scan running: the engine scans the file itself
    assert own.distinct_rows is None
    alone = engines.open_cohort(own.source, own, mapping)
    assert _cells(engine) == _cells(own) and len(_cells(own)) > 100
    assert shared.summary.rows == alone.summary.rows == len(lung)
    assert shared.summary.events == alone.summary.events == int(lung["status"].sum())
    assert shared.summary.groups == alone.summary.groups


def test_many_distinct_rows_keep_nothing_and_the_fingerprint_is_the_same(tmp_path, monkeypatch):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"time": rng.uniform(0, 100, 3000), "status": rng.integers(0, 2, 3000),
                          "sex": rng.integers(1, 3, 3000)})
    path = tmp_path / "wide.parquet"
    frame.to_parquet(path, index=False)
    monkeypatch.setattr(fingerprint_scan, "FEW_VALUES", 100)  # the probe finds more: nothing kept
    pre.start(_release(path))
    assert pre.projection(path) is None
    assert fingerprint_file(path) == fingerprint(frame)
    monkeypatch.setattr(fingerprint_scan, "FEW_VALUES", 50_000)
    monkeypatch.setattr(fingerprint_scan, "distinct_row_limit", lambda n: 10)  # more distinct rows than kept
    con = fingerprint_scan.materialise_path(path, "t")
    assert con is None


def test_a_seeded_run_gives_the_same_output_with_and_without_the_scan(tmp_path, monkeypatch, capsys):
    from dpsurv_core.__main__ import main

    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    assert main(_release(path, "--seed", "4")) == 0
    shared = json.loads(capsys.readouterr().out)
    assert pre.projection(path) is not None  # a simulation scans once too (no fingerprint)
    pre._wait()
    engines._OPEN.clear()
    monkeypatch.setenv(pre.PREFETCH_ENV, "off")
    assert main(_release(path, "--seed", "4")) == 0
    alone = json.loads(capsys.readouterr().out)
    assert shared == alone


def registry(rows: int, seed: int = 5) -> pd.DataFrame:
    """A registry-like cohort: whole days up to ten years, about 30% censored, two groups."""
    rng = np.random.default_rng(seed)
    g = rng.integers(0, 2, rows)
    event = rng.exponential(1500.0 / np.where(g == 1, 1.3, 1.0))
    censor = rng.uniform(0, 6000, rows)
    time = np.ceil(np.minimum(np.minimum(event, censor), 3650.0)).astype(np.int32)
    return pd.DataFrame({"time": time, "status": (event <= np.minimum(censor, 3650.0)).astype(np.int8),
                         "group": np.where(g == 1, "B", "A")})


def test_a_release_imports_no_scipy(tmp_path):
    """SciPy took about a second of a release's start-up: a release of well-filled bins needs none of it (the normal
    quantile of its bands is kept, the pooling of a falling curve and the tests import it when they run)."""
    cohort = registry(200_000)
    path = tmp_path / "registry.parquet"
    cohort.to_parquet(path, index=False)
    argv = ["km", "--data", str(path), "--time", "time", "--event", "status", "--group", "group", "--grid",
            "0:3650:20", "--epsilon", "1", "--engine", "duckdb", "--json", "--categories", "group:A,B"]
    code = ("import sys\nfrom dpsurv_core.__main__ import main\n"
            f"code = main({argv!r})\n"
            "print('SCIPY', sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'), file=sys.stderr)\n"
            "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ},
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["epsilon_spent"] == 1.0
    assert "SCIPY []" in done.stderr, done.stderr[-2000:]
