"""A charged DuckDB release of a Parquet file imports no pandas: the engine cohort's empty covariate table is built only
when read (:class:`~dpsurv_core.data.cohort.Cohort`), and the modules on the release path import pandas inside the
functions that use it. pandas took about 0.4 CPU-seconds of a release's start-up (issue 36: a release at 2x10^7 rows
against a bare DuckDB count of the same cells)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.privacy.fingerprint import fingerprint
from tests.engines.test_one_scan import registry

ROOT = Path(__file__).resolve().parents[2]


def _release(path: Path, env: dict[str, str]) -> tuple[dict, list[str]]:
    """The release's JSON and whether its process imported pandas (run in a fresh interpreter; SciPy, imported only
    when noise makes a curve fall: test_one_scan.py)."""
    argv = ["km", "--data", str(path), "--time", "time", "--event", "status", "--group", "group", "--grid",
            "0:3650:20", "--epsilon", "1", "--engine", "duckdb", "--json", "--categories", "group:A,B",
            "--cap", "100"]
    code = ("import sys\nfrom dpsurv_core.__main__ import main\n"
            f"code = main({argv!r})\n"
            "print('PANDAS', sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3], file=sys.stderr)\n"
            "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(x for x in done.stderr.splitlines() if x.startswith("PANDAS"))
    return json.loads(done.stdout), ast.literal_eval(line.removeprefix("PANDAS "))


def test_a_duckdb_release_imports_no_pandas(tmp_path):
    path = tmp_path / "registry.parquet"
    registry(200_000, seed=3).to_parquet(path, index=False)
    env = {**os.environ, "DPSURV_LEDGER": str(tmp_path / "ledger.sqlite3"),
           "DPSURV_FINGERPRINT_CACHE": str(tmp_path / "fingerprints.json")}
    first, _ = _release(path, env)  # fills the fingerprint cache (the engine's cold pass)
    released, pandas_modules = _release(path, env)
    assert released["epsilon_spent"] == first["epsilon_spent"] == 1.0
    assert pandas_modules == [], pandas_modules


def test_a_release_whose_fingerprint_is_not_cached_imports_no_pandas(tmp_path):
    """The first release on a file computes its fingerprint from the scan's distinct rows, fetched as NumPy arrays and
    hashed without pandas (its text column reads as no number: no ``pandas.to_numeric`` needed)."""
    path = tmp_path / "registry.parquet"
    registry(200_000, seed=3).to_parquet(path, index=False)
    cache = tmp_path / "fingerprints.json"
    env = {**os.environ, "DPSURV_LEDGER": str(tmp_path / "ledger.sqlite3"), "DPSURV_FINGERPRINT_CACHE": str(cache)}
    released, pandas_modules = _release(path, env)
    assert released["epsilon_spent"] == 1.0
    assert json.loads(cache.read_text()), "the release computed and cached the fingerprint"
    assert pandas_modules == [], pandas_modules


def test_the_two_pass_fingerprint_of_a_parquet_file_imports_no_pandas(tmp_path):
    """A file with many distinct rows is fingerprinted by two scans (text labels mapped by a join past 32 of them, by
    a CASE below): their distinct values come as NumPy arrays and the labels' words go back as NumPy arrays too."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"t": rng.uniform(0, 100, 3000), "site": [f"site {i}" for i in rng.integers(0, 40, 3000)],
                          "group": np.where(rng.integers(0, 2, 3000) == 1, "B", None)})
    path = tmp_path / "wide.parquet"
    frame.to_parquet(path, index=False)
    code = ("import sys\nfrom dpsurv_core.privacy import fingerprint_sql\n"
            "fingerprint_sql.FEW_VALUES = 10\n"  # the probe finds more distinct rows: the two scans
            f"print(fingerprint_sql.fingerprint_path({str(path)!r}))\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'pandas')[:3])\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    value, pandas_modules = done.stdout.splitlines()
    assert value == fingerprint(frame)
    assert ast.literal_eval(pandas_modules) == []


def test_the_empty_covariate_table_is_built_when_read():
    c = Cohort(np.array([1.0, 2.0]), np.array([1, 0]))
    assert c.covariate_columns() == [] and c.__dict__["_covariates"] is None  # nothing built yet
    frame = c.covariates
    assert isinstance(frame, pd.DataFrame) and frame.empty and c.covariates is frame  # built once, then kept
    assert Cohort(c.time, c.event).covariates is not frame  # one table per cohort, as default_factory gave
    given = pd.DataFrame({"age": [50.0, 60.0]})
    d = Cohort(c.time, c.event, covariates=given)
    assert d.covariates is given and d.covariate_columns() == ["age"]
    assert d.subset(np.array([True, False])).covariates["age"].tolist() == [50.0]
    assert c.subset(np.array([True, False])).covariates.empty
