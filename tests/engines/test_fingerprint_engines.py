"""The content fingerprint computed by the engine: DuckDB (on a frame, a Parquet or CSV file, a DuckDB table), Spark
and the NumPy reference give the same fingerprint for the same data, keep today's invariances and sensitivities, and
the per-file cache is used only for an unchanged file."""

from __future__ import annotations

import json
import os

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpsurv_core.data import datasets
from dpsurv_core.engines.source import Source
from dpsurv_core.privacy import fingerprint_cache, fingerprint_sql
from dpsurv_core.privacy.fingerprint import fingerprint, fingerprint_file, fingerprint_source, number_words
from dpsurv_core.privacy.fingerprint_sql import fingerprint_frame, fingerprint_path, number_sql
from tests.cli_run import fails, run

CELL = {
    "int": st.one_of(st.none(), st.integers(-5, 5)),
    "float": st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)),
    "wide": st.floats(allow_nan=True, allow_infinity=True),
    "text": st.one_of(st.none(), st.sampled_from(["a", "b", "c", "dd", "e f", "ü", "1x"])),
}


@st.composite
def frames(draw) -> pd.DataFrame:
    kinds = draw(st.lists(st.sampled_from(sorted(CELL)), min_size=1, max_size=4))
    n = draw(st.integers(1, 8))
    data = {f"c{j}": draw(st.lists(CELL[k], min_size=n, max_size=n)) for j, k in enumerate(kinds)}
    frame = pd.DataFrame(data)
    for j, k in enumerate(kinds):  # integers with missing values as a nullable integer column
        if k == "int":
            frame[f"c{j}"] = frame[f"c{j}"].astype("Int64")
    return frame


def test_duckdb_hash_is_the_reference_finaliser():
    assert fingerprint_sql.available()


@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=30))
def test_number_words_in_sql_equal_numpy(values):
    con = duckdb.connect()
    got = [r[0] for r in con.execute(f"SELECT {number_sql('x')} FROM (SELECT unnest(?::DOUBLE[]) AS x)",
                                     [values]).fetchall()]
    assert got == [int(v) for v in number_words(np.array(values, dtype="float64"))]


class paths:
    """DuckDB's three ways to the same fingerprint: ``one-scan`` (few distinct rows: GROUP BY every column, counted
    in NumPy), ``grouping-sets`` (column keys from distinct values, row hashes in SQL), ``sql`` (everything hashed per
    row in SQL)."""

    def __init__(self, way: str) -> None:
        self.way = way

    def __enter__(self) -> None:
        self.saved = fingerprint_sql.FEW_VALUES, fingerprint_sql.distinct_row_limit
        if self.way != "one-scan":
            fingerprint_sql.distinct_row_limit = lambda ncols: 0
        if self.way == "sql":
            fingerprint_sql.FEW_VALUES = -1

    def __exit__(self, *exc) -> None:
        fingerprint_sql.FEW_VALUES, fingerprint_sql.distinct_row_limit = self.saved


WAYS = ("one-scan", "grouping-sets", "sql")


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None, max_examples=30)
@given(frame=frames())
def test_property_duckdb_equals_numpy_on_frames_parquet_and_csv(frame, tmp_path_factory):
    ref = fingerprint(frame)
    folder = tmp_path_factory.mktemp("fp")
    frame.to_parquet(folder / "t.parquet", index=False)
    for way in WAYS:
        with paths(way):
            assert fingerprint_frame(frame) == ref, way
            assert fingerprint_path(folder / "t.parquet") == ref, way


@pytest.mark.parametrize("way", WAYS)
def test_each_duckdb_path_keeps_invariances_and_sensitivities(way, tmp_path):
    lung = datasets.load("lung")
    ref = fingerprint(lung)
    a = pd.DataFrame({"x": [1, 2, 1, 2], "y": [2, 1, 2, 1], "z": ["p", "q", "r", "s"]})
    b = pd.DataFrame({"x": [2, 1, 1, 2], "y": [1, 2, 2, 1], "z": ["p", "q", "r", "s"]})
    swapped = lung.copy()
    swapped.loc[[0, 1], "age"] = swapped.loc[[1, 0], "age"].to_numpy()
    with paths(way):
        lung.sample(frac=1, random_state=4)[list(lung.columns[::-1])].astype("float64").to_csv(tmp_path / "l.csv",
                                                                                                 index=False)
        assert fingerprint_path(tmp_path / "l.csv") == fingerprint_frame(lung) == ref
        assert fingerprint_frame(a) == fingerprint(a) != fingerprint_frame(b) == fingerprint(b)
        assert fingerprint_frame(a[["z", "y", "x"]].iloc[::-1]) == fingerprint(a)
        for changed in (swapped, lung.drop(index=5), pd.concat([lung, lung.iloc[[5]]])):
            assert fingerprint_frame(changed) == fingerprint(changed) != ref


def test_lung_everywhere_the_same(tmp_path):
    lung = datasets.load("lung")
    ref = fingerprint(lung)
    lung.sample(frac=1, random_state=2)[list(lung.columns[::-1])].to_parquet(tmp_path / "l.parquet", index=False)
    lung.astype("float64").to_csv(tmp_path / "l.csv", index=False)
    con = duckdb.connect(str(tmp_path / "l.duckdb"))
    con.execute("CREATE TABLE cohort AS SELECT * FROM read_parquet(?)", [str(tmp_path / "l.parquet")])
    con.execute("CREATE TABLE decimals AS SELECT * REPLACE (CAST(age AS DECIMAL(6, 2)) AS age) FROM cohort")
    con.close()
    assert fingerprint_file(tmp_path / "l.parquet") == ref
    assert fingerprint_file(tmp_path / "l.csv") == ref
    assert fingerprint_source(Source("duckdb", str(tmp_path / "l.duckdb"), "cohort")) == ref
    assert fingerprint_source(Source("duckdb", str(tmp_path / "l.duckdb"), "decimals")) == ref  # numeric type


def test_tied_columns_and_sensitivities_in_duckdb():
    a = pd.DataFrame({"x": [1, 2, 1, 2], "y": [2, 1, 2, 1], "z": ["p", "q", "r", "s"]})
    b = pd.DataFrame({"x": [2, 1, 1, 2], "y": [1, 2, 2, 1], "z": ["p", "q", "r", "s"]})
    assert fingerprint_frame(a) == fingerprint(a) != fingerprint_frame(b) == fingerprint(b)
    assert fingerprint_frame(a[["z", "y", "x"]].iloc[::-1]) == fingerprint(a)
    lung = datasets.load("lung")
    ref = fingerprint_frame(lung)
    swapped = lung.copy()
    swapped.loc[[0, 1], "age"] = swapped.loc[[1, 0], "age"].to_numpy()
    for changed in (swapped, lung.drop(index=5), pd.concat([lung, lung.iloc[[5]]])):
        assert fingerprint_frame(changed) != ref


def test_many_labels_join_and_identifiers_hashed_in_sql(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"id": [f"P{i:05d}" for i in range(3000)], "site": rng.integers(0, 100, 3000).astype(str),
                          "code": [f"{v}" for v in rng.integers(0, 10**6, 3000)], "t": rng.exponential(5, 3000)})
    frame.to_parquet(tmp_path / "f.parquet", index=False)
    ref = fingerprint(frame)  # site and code read as numbers
    assert fingerprint_path(tmp_path / "f.parquet") == ref  # one scan: 3000 distinct rows
    with paths("grouping-sets"):
        assert fingerprint_path(tmp_path / "f.parquet") == ref  # a join for id (3000 labels), a CASE for none
    monkeypatch.setattr(fingerprint_sql, "DICTIONARY_LIMIT", 10)  # every text column hashed in SQL
    with paths("sql"):
        assert fingerprint_path(tmp_path / "f.parquet") == ref


def test_the_cache_is_used_for_an_unchanged_file_only(tmp_path, monkeypatch):
    path = tmp_path / "lung.parquet"
    lung = datasets.load("lung")
    lung.to_parquet(path, index=False)
    calls = []
    real = fingerprint_sql.fingerprint_path
    monkeypatch.setattr(fingerprint_sql, "fingerprint_path", lambda p: calls.append(p) or real(p))
    first = fingerprint_file(path)
    assert fingerprint_file(path) == first and len(calls) == 1  # a hit
    entry = json.loads(fingerprint_cache.cache_path().read_text())
    assert [e["fingerprint"] for e in entry.values()] == [first]
    lung.drop(index=3).to_parquet(path, index=False)  # changed: a miss
    assert fingerprint_file(path) != first and len(calls) == 2
    second = fingerprint_file(path)
    assert len(calls) == 2
    # the same size and time, one sampled block changed: a miss
    st = os.stat(path)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fingerprint_cache.lookup(path) is None
    # refresh forces a full pass even when the entry matches
    lung.to_parquet(path, index=False)
    fingerprint_file(path)
    n = len(calls)
    assert fingerprint_file(path, refresh=True) == first and len(calls) == n + 1
    assert second != first
    monkeypatch.setenv("DPSURV_FINGERPRINT_CACHE", "off")
    assert fingerprint_file(path) == first and len(calls) == n + 2


def test_budget_verify_refingerprint_links_version_1_records(tmp_path, capsys, monkeypatch):
    from dpsurv_core.privacy import fingerprint_v1
    from dpsurv_core.privacy.ledger import LedgerStore

    lung = datasets.load("lung")
    path = tmp_path / "lung.csv"
    lung.to_csv(path, index=False)
    LedgerStore().set_cap(fingerprint_v1.fingerprint(lung), 2.0, "lung")  # a cap kept under version 1
    out = run(capsys, "budget", "verify", "--data", str(path), "--refingerprint")
    assert out["refingerprint"]["version_1_records"] == 1 and out["refingerprint"]["cache_agreed"]
    assert fingerprint_cache.legacy(fingerprint(lung)) == [fingerprint_v1.fingerprint(lung)]
    # the data set's records under version 1 are found under its version-2 fingerprint: the cap holds
    assert LedgerStore().ledger(fingerprint(lung)).cap == 2.0
    # and a release of the same data is charged against that cap
    run(capsys, "km", "--data", str(path), "--time", "time", "--event", "status", "--mechanism", "laplace-counts",
        "--epsilon", "1.5", "--grid", "0:1100:20")
    assert LedgerStore().ledger(fingerprint(lung)).spent() == pytest.approx(1.5)


def test_the_link_is_in_the_ledger_so_another_machine_counts_the_old_spending(tmp_path, capsys, monkeypatch):
    from dpsurv_core.privacy import fingerprint_v1
    from dpsurv_core.privacy.ledger import FINGERPRINT_LINK, LedgerStore

    lung = datasets.load("lung")
    path = tmp_path / "lung.csv"
    lung.to_csv(path, index=False)
    old = fingerprint_v1.fingerprint(lung)
    store = LedgerStore()
    store.set_cap(old, 2.0, "lung")  # a cap and a release kept under version 1
    with store.transaction(old) as tx:
        from dpsurv_core.privacy.ledger import LedgerEntry, PrivacyCost

        tx.charge(LedgerEntry("laplace-counts", "survival curves", "lung", {"epsilon": 1.5}, PrivacyCost(1.5)))
    out = run(capsys, "budget", "verify", "--data", str(path), "--refingerprint")["refingerprint"]
    assert out["version_1_records"] == 2 and out["link_record"] == 3 and "link_error" not in out
    assert [r.kind for r in LedgerStore().records()][-1] == FINGERPRINT_LINK
    # another machine: no fingerprint cache at all
    fingerprint_cache.cache_path().unlink()
    monkeypatch.setenv("DPSURV_FINGERPRINT_CACHE", str(tmp_path / "elsewhere.json"))
    assert fingerprint_cache.legacy(fingerprint(lung)) == []
    view = LedgerStore().ledger(fingerprint(lung))
    assert view.cap == 2.0 and view.spent() == pytest.approx(1.5)
    km = ["km", "--data", str(path), "--time", "time", "--event", "status", "--mechanism", "laplace-counts",
          "--grid", "0:1100:20"]
    line = fails(capsys, *km, "--epsilon", "1")  # 1.5 + 1 exceeds the cap of 2 kept under version 1
    assert "cap" in line
    run(capsys, *km, "--epsilon", "0.5")
    assert LedgerStore().ledger(fingerprint(lung)).spent() == pytest.approx(2.0)
    # running it again appends no second link
    again = run(capsys, "budget", "verify", "--data", str(path), "--refingerprint")["refingerprint"]
    assert again["link_record"] is None and again["version_1_records"] == 2
    assert [r.kind for r in LedgerStore().records()].count(FINGERPRINT_LINK) == 1


@pytest.mark.slow
@pytest.mark.spark
def test_spark_equals_duckdb_and_numpy(tmp_path, spark_session, monkeypatch):
    from dpsurv_core import engines
    from dpsurv_core.privacy import fingerprint as fp_module

    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    eng = engines.connect("spark", Source("parquet", "file://" + str(path)))
    assert fingerprint_source(eng.source, eng) == fingerprint_path(path) == fingerprint(lung)  # one scan in Spark
    monkeypatch.setattr(fp_module, "ENGINE_DISTINCT_ROWS", 10)  # too many distinct rows: streamed through NumPy
    assert fingerprint_source(eng.source, eng) == fingerprint(lung)


def test_the_fingerprint_started_with_the_command_is_the_one_computed_in_place(tmp_path, monkeypatch):
    from dpsurv_core.privacy import fingerprint_prefetch as pre

    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    common = ["--data", str(path), "--time", "time", "--event", "status"]
    pre.start(["km", *common, "--seed", "1"])  # a simulation is keyed by nothing (and pandas reads this small file)
    assert pre.take(path) is None and pre.projection(path) is None
    assert pre.wanted(["budget", "show", *common]) is None
    assert pre.wanted(["km", "--data", "lung"]) is None
    assert pre.wanted(["km", *common]) == path
    monkeypatch.setenv("DPSURV_FINGERPRINT_CACHE", "off")
    pre.start(["km", *common])
    assert pre.take(path) == fingerprint(lung)
    assert pre.take(path) is None  # taken once
    pre.start(["km", *common])
    path.touch()  # changed since (its time): not used, computed again
    os.utime(path, ns=(1, 1))
    assert pre.take(path) is None and fingerprint_file(path) == fingerprint(lung)


def test_a_release_through_the_command_line_is_charged_under_the_fingerprint(tmp_path):
    import subprocess
    import sys

    from dpsurv_core.privacy.ledger import LedgerStore

    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    cmd = [sys.executable, "-m", "dpsurv_core", "km", "--data", str(path), "--time", "time", "--event", "status",
           "--mechanism", "laplace-counts", "--epsilon", "0.5", "--grid", "0:1100:20", "--engine", "duckdb", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ}, timeout=300)
    assert done.returncode == 0, done.stderr
    store = LedgerStore()
    assert [r.fingerprint for r in store.release_records(fingerprint(lung))] == [store.key(fingerprint(lung))]
    assert fingerprint_cache.lookup(path)["fingerprint"] == fingerprint(lung)


def test_the_engine_one_scan_path_in_duckdb_sql(tmp_path, monkeypatch):
    """What Spark runs on a cluster path (GROUP BY every column in the engine's SQL), here on DuckDB's view."""
    from dpsurv_core import engines
    from dpsurv_core.privacy import fingerprint as fp_module

    lung = datasets.load("lung")
    path = tmp_path / "lung.parquet"
    lung.to_parquet(path, index=False)
    eng = engines.connect("duckdb", Source("parquet", str(path)))
    assert fp_module._distinct_rows(eng) == fingerprint(lung)
    monkeypatch.setattr(fp_module, "ENGINE_DISTINCT_ROWS", 10)
    assert fp_module._distinct_rows(eng) is None


def test_refingerprint_of_a_duckdb_table(tmp_path, capsys):
    from dpsurv_core.privacy import fingerprint_v1

    lung = datasets.load("lung")
    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    con.register("lung_frame", lung)
    con.execute("CREATE TABLE registry AS SELECT * FROM lung_frame")
    con.close()
    data = f"duckdb:{tmp_path / 'r.duckdb'}:registry"
    out = run(capsys, "budget", "verify", "--data", data, "--refingerprint")["refingerprint"]
    assert out["cache_agreed"] and not out["cached"] and out["version_1_records"] == 0
    assert fingerprint_cache.legacy(fingerprint(lung)) == [fingerprint_v1.fingerprint(lung)]
    assert run(capsys, "budget", "verify", "--data", data, "--refingerprint")["refingerprint"]["cached"]
