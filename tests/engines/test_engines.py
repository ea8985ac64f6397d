"""Engines agree with the in-memory path to the last count: pandas, DuckDB and Spark on the
bundled data sets written to Parquet, the same sentences for bad input, the bounded chunked path, the CLI."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core import engines, limits
from dpsurv_core.curves.counts import count
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort, ColumnMap, build_cohort, load_bundled, validate
from dpsurv_core.data.public import TimeGrid
from dpsurv_core.engines.source import Source, choose_engine, parse
from dpsurv_core.engines.statistics import Statistics
from dpsurv_core.errors import DataError
from dpsurv_core.privacy.fingerprint import fingerprint, fingerprint_source
from tests.cli_run import fails, run

# (data set, group column, competing events): every bundled data set, with ids, codes and event types
CASES = [("lung", "sex", False), ("kidney", "sex", False), ("leukemia", "x", False), ("gehan", "treat", False),
         ("mgus2", "sex", False), ("myeloid", "trt", False), ("ovarian", "rx", False), ("stanford2", None, False),
         ("veteran", "celltype", False), ("pbc", "trt", False), ("pbc", "stage", True), ("transplant", "abo", True),
         ("flchain", "sex", False)]


def _grids(cohort: Cohort) -> list[TimeGrid]:
    tmax = float(cohort.time.max())
    return [TimeGrid.equal(0, tmax, 20), TimeGrid.equal(0, round(tmax / 2), 7), TimeGrid.event_times(cohort)]


def _same_counts(a, b) -> None:
    assert a.groups == b.groups and a.event_types == b.event_types
    for f in ("n", "events", "censored"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)


def _check_engine(engine: str, tmp_path) -> None:
    for name, group, competing in CASES:
        ref = load_bundled(name, group=group, competing=competing)
        path = tmp_path / f"{name}.parquet"
        datasets.load(name).to_parquet(path)
        ec = engines.open_cohort(Source("parquet", str(path)), engine, ref.mapping, name)
        assert (ec.n, ec.n_subjects, ec.n_events, ec.groups) == (ref.n, ref.n_subjects, ref.n_events, ref.groups), name
        assert ec.warnings == ref.warnings, name
        cats = None if group is None else tuple(ref.groups)
        for grid in _grids(ref):
            _same_counts(count(ref, grid, cats, competing), count(ec, grid, cats, competing))
        if cats and len(cats) > 1:  # declared categories: labels outside them are counted nowhere
            _same_counts(count(ref, grid, cats[1:], competing), count(ec, grid, cats[1:], competing))
        np.testing.assert_array_equal(ec.event_times(competing), np.unique(
            ref.time[(ref.event_type > 0) if competing else ref.event == 1]))
        assert not ec.loaded, f"{name}: the counts must come from the engine, not from rows in Python"


def test_duckdb_counts_equal_pandas_on_every_bundled_data_set(tmp_path):
    _check_engine("duckdb", tmp_path)


@pytest.mark.slow
@pytest.mark.spark
def test_spark_counts_equal_pandas_on_every_bundled_data_set(tmp_path, spark_session):
    _check_engine("spark", tmp_path)


@pytest.mark.slow
@pytest.mark.spark
def test_spark_edge_search_is_searchsorted(spark_session):
    """Spark's binary search over an array literal counts the edges below (or at or below) a time as numpy's
    searchsorted and the balanced CASE do: ties, times beyond either end, infinities, NaN (above every edge), NULL (0)."""
    from dpsurv_core.engines.base import balanced_case, number
    from dpsurv_core.engines.spark import array_search

    rng = np.random.default_rng(7)
    for j in (1, 2, 3, 7, 8, 9, 1739):
        edges = np.unique(np.round(rng.uniform(0, 1000, j), 1)) if j > 9 else np.arange(j) * 1.5
        times = np.concatenate([edges, edges + 0.05, [-1.0, 0.0, 1e9, np.inf, -np.inf, np.nan]])
        values = ", ".join(f"({number(t)})" if np.isfinite(t) else f"(CAST('{t}' AS DOUBLE))" for t in times)
        cols = [array_search("t", edges, True), array_search("t", edges, False)]
        if j <= 9:
            cols += [balanced_case("t", edges, True), balanced_case("t", edges, False)]
        got = spark_session.sql(f"SELECT {', '.join(cols)} FROM VALUES {values}, (NULL) AS v(t)").collect()
        want = [np.append(np.searchsorted(edges, times, side), 0) for side in ("left", "right")]
        for c in range(len(cols)):
            np.testing.assert_array_equal([r[c] for r in got], want[c % 2], err_msg=f"J={j}, column {c}")


@given(times=st.lists(st.integers(0, 30), min_size=5, max_size=60), data=st.data())
def test_duckdb_counts_property(times, data):
    """Random cohorts with times on the edges, before the start and past the end of the grid."""
    n = len(times)
    events = data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    groups = data.draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    bins = data.draw(st.integers(1, 12))
    stop = data.draw(st.integers(1, 35))
    frame = pd.DataFrame({"t": np.array(times, float) + data.draw(st.sampled_from([0.0, 0.5])), "d": events, "g": groups})
    if sum(events) == 0:
        frame.loc[0, "d"] = 1
    mapping = ColumnMap("t", "d", "g")
    ref = build_cohort(frame, mapping)
    ec = engines.open_cohort(Source("frame", frame=frame, label="x"), "duckdb", mapping)
    grid = TimeGrid.equal(0, stop, bins)
    for cats in (None, tuple(ref.groups), ("b", "a", "z")):
        _same_counts(count(ref, grid, cats), count(ec, grid, cats))


# ---- bad input: the same sentence from every engine ------------------------------------------------
BAD = {
    "negative time": (pd.DataFrame({"t": [5.0, -2.0, 3.0, -1.0], "d": [1, 0, 1, 1]}), ColumnMap("t", "d")),
    "missing time": (pd.DataFrame({"t": [5.0, None, 3.0, 4.0], "d": [1, 0, 1, 1]}), ColumnMap("t", "d")),
    "text time": (pd.DataFrame({"t": ["5", "7", "soon", "4"], "d": [1, 0, 1, 1]}), ColumnMap("t", "d")),
    "infinite time": (pd.DataFrame({"t": [5.0, np.inf, 3.0, 4.0], "d": [1, 0, 1, 1]}), ColumnMap("t", "d")),
    "event code 2": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": [1, 2, 1, 2]}), ColumnMap("t", "d")),
    "R coding": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": [1, 2, 1, 2]}), ColumnMap("t", "d")),
    "missing event": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": [1.0, None, 0.0, 1.0]}), ColumnMap("t", "d")),
    "word events": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": ["dead", "alive", "gone", "dead"]}),
                    ColumnMap("t", "d")),
    "undeclared code": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": ["x", "y", "z", "x"]}),
                        ColumnMap("t", "d", event_codes=("x",), censor_codes=("y",))),
    "missing column": (pd.DataFrame({"t": [5.0, 6.0], "d": [1, 0]}), ColumnMap("time", "d")),
    "missing id": (pd.DataFrame({"t": [5.0, 6.0, 3.0], "d": [1, 0, 1], "id": [1.0, None, 2.0]}),
                   ColumnMap("t", "d", id="id")),
    "continuous group": (pd.DataFrame({"t": np.arange(1.0, 31.0), "d": 1, "g": np.arange(30)}),
                         ColumnMap("t", "d", "g")),
}
WARN = {  # kept, with warnings: rows over the bound per subject, missing and small groups, zero times
    "rows per subject": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0, 8.0, 2.0], "d": [1, 0, 1, 1, 0, 1],
                                       "id": [1, 1, 1, 2, 2, 3]}), ColumnMap("t", "d", id="id", max_rows_per_subject=2)),
    "small and missing groups": (pd.DataFrame({"t": np.arange(0.0, 12.0), "d": [1, 0] * 6,
                                               "g": ["a"] * 7 + ["b"] * 3 + [None] * 2}), ColumnMap("t", "d", "g")),
    "single group": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0, 1.0, 2.0], "d": 1, "g": 1.0}), ColumnMap("t", "d", "g")),
    # no events: kept as R keeps it (S = 1, no quantile), with one sentence
    "no declared event": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": ["y", "y", "y", "y"]}),
                          ColumnMap("t", "d", event_codes=("x",), censor_codes=("y",))),
    "all censored": (pd.DataFrame({"t": [5.0, 6.0, 3.0, 4.0], "d": [0, 0, 0, 0]}), ColumnMap("t", "d")),
}


def _engine_problems(frame: pd.DataFrame, mapping: ColumnMap, engine: str, tmp_path, name: str) -> list[str]:
    path = tmp_path / f"{name.replace(' ', '_')}.parquet"
    frame.to_parquet(path)
    eng = engines.connect(engine, Source("parquet", str(path)))
    return [str(p) for p in Statistics(eng, mapping).summarise()[1]]


def _check_bad(engine: str, tmp_path) -> None:
    for name, (frame, mapping) in {**BAD, **WARN}.items():
        cohort, expected = validate(frame, mapping)
        got = _engine_problems(frame, mapping, engine, tmp_path, name)
        assert got == [str(p) for p in expected], (name, got, expected)
        assert (cohort is None) == (name in BAD), name


def test_duckdb_reports_bad_input_in_the_same_sentences(tmp_path):
    _check_bad("duckdb", tmp_path)


@pytest.mark.slow
@pytest.mark.spark
def test_spark_reports_bad_input_in_the_same_sentences(tmp_path, spark_session):
    _check_bad("spark", tmp_path)


def test_subject_bound_is_applied_in_the_query(tmp_path):
    frame, mapping = WARN["rows per subject"]
    ref = build_cohort(frame, mapping)
    path = tmp_path / "ids.parquet"
    frame.to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", mapping)
    assert ec.n == ref.n == 5 and ec.n_subjects == 3 and ec.rows_per_subject == 2
    grid = TimeGrid.equal(0, 10, 5)
    _same_counts(count(ref, grid), count(ec, grid))


# ---- the bounded chunked path ---------------------------------------------------------------------
def test_chunked_rows_equal_the_in_memory_cohort(tmp_path):
    ref = load_bundled("kidney", group="sex")
    path = tmp_path / "kidney.parquet"
    datasets.load("kidney").to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", ref.mapping, "kidney", chunk_rows=7)
    rows = ec.in_memory()
    assert ec.loaded and isinstance(rows, Cohort)
    for f in ("time", "event", "group", "subject"):
        np.testing.assert_array_equal(getattr(rows, f), getattr(ref, f))
    assert "in chunks of 7" in rows.warnings[-1] and "76 rows" in rows.warnings[-1]
    np.testing.assert_array_equal(ec.time, ref.time)  # per-subject attributes read through the same path


def test_rows_past_the_limit_are_refused_with_the_limit(tmp_path, monkeypatch):
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "100")
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", ColumnMap("time", "status"), purpose="`weibull`")
    count(ec, TimeGrid.equal(0, 1000, 10))  # counting needs no rows
    with pytest.raises(DataError, match=r"`weibull` needs each subject's values in memory.*228 rows, more than the 50 "
                                        r"rows of 2 column\(s\)"):
        _ = ec.time


def test_sources_and_default_engine(tmp_path, monkeypatch):
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    assert parse(str(path)).kind == "parquet" and parse("lung") is None
    assert choose_engine(None, parse(str(path))) == "pandas"
    monkeypatch.setenv("DPSURV_ENGINE_MB", "1")
    big = tmp_path / "big.csv"
    big.write_bytes(b"t,d\n" + b"1,0\n" * 300_000)
    assert choose_engine(None, parse(str(big))) == "duckdb"
    with pytest.raises(DataError, match="duckdb:PATH.duckdb:TABLE"):
        parse("duckdb:nothing")
    with pytest.raises(DataError, match="Spark cannot read a DuckDB database"):
        choose_engine("spark", Source("duckdb", "x.duckdb", "t"))


# ---- the command line --------------------------------------------------------------------------------
@pytest.fixture
def lung_table(tmp_path) -> str:
    db = tmp_path / "registry.duckdb"
    con = duckdb.connect(str(db))
    con.register("lung_frame", datasets.load("lung"))
    con.execute("CREATE TABLE lung AS SELECT * FROM lung_frame")
    con.close()
    return f"duckdb:{db}:lung"


def _curves(out: dict) -> list:
    return [(c["group"], c["survival"], c["at_risk"]) for c in out["curves"]]


def test_cli_duckdb_table_equals_the_bundled_data(capsys, lung_table):
    common = ["--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "5", "--grid", "0:1000:20"]
    ref = run(capsys, "km", "--data", "lung", *common)
    out = run(capsys, "km", "--data", lung_table, "--time", "time", "--event", "status", *common)
    assert _curves(out) == _curves(ref) and out["n_subjects"] == ref["n_subjects"] == 228
    exact = run(capsys, "logrank", "--data", lung_table, "--time", "time", "--event", "status", "--group", "sex",
                "--mechanism", "nonprivate")
    lr = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "nonprivate")
    assert exact["overall"][0]["statistic"] == pytest.approx(lr["overall"][0]["statistic"], rel=1e-12)


def test_cli_parquet_engines_agree_and_release_is_charged(capsys, tmp_path, ledger_path):
    path = tmp_path / "veteran.parquet"
    datasets.load("veteran").to_parquet(path)
    args = ["--data", str(path), "--time", "time", "--event", "status", "--group", "trt", "--grid", "0:600:12",
            "--categories", "trt:1,2", "--epsilon", "2", "--seed", "11"]
    a = run(capsys, "km", *args, "--engine", "pandas")
    b = run(capsys, "km", *args, "--engine", "duckdb")
    assert _curves(a) == _curves(b)
    released = run(capsys, "logrank", *args[:-2], "--engine", "duckdb")
    assert released["release"] is True and released["epsilon_spent"] == 2
    ledger = run(capsys, "budget", "show", "--data", str(path))
    assert ledger["spent"] == pytest.approx(2)  # the file's fingerprint keys the budget, whatever the engine


def test_cli_engine_refusals_are_one_sentence(capsys, lung_table, monkeypatch):
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "100")
    msg = fails(capsys, "weibull", "--data", lung_table, "--time", "time", "--event", "status", "--mechanism",
                "saa", "--seed", "1")
    assert "needs each subject's values in memory" in msg and "DPSURV_MAX_CLI_CELLS" in msg
    msg = fails(capsys, "km", "--data", lung_table, "--time", "time", "--event", "wrong", "--seed", "1")
    assert "There is no column 'wrong' for the event" in msg
    msg = fails(capsys, "km", "--data", lung_table.replace(":lung", ":nosuch"), "--time", "time", "--event", "status")
    assert "has no table 'nosuch'" in msg


def test_fingerprint_of_a_duckdb_table_equals_its_file(tmp_path, lung_table):
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    src = parse(lung_table)
    via_engine = fingerprint_source(src, engines.connect("duckdb", src))
    assert via_engine == fingerprint_source(parse(str(path))) == fingerprint(datasets.load("lung"))


def test_server_data_is_limited_to_the_shared_folders(tmp_path, monkeypatch, lung_table):
    from dpsurv_core.engines.source import duckdb_tables, server_files, server_source

    shared = tmp_path / "shared"
    shared.mkdir()
    datasets.load("lung").to_parquet(shared / "lung.parquet")
    monkeypatch.setenv("DPSURV_SERVER_DATA", str(shared))
    assert [p.name for p in server_files()] == ["lung.parquet"]
    assert server_source(shared / "lung.parquet").kind == "parquet"
    with pytest.raises(DataError, match="not under a folder the server shares"):
        server_source(tmp_path / "registry.duckdb", "lung")
    assert duckdb_tables(parse(lung_table).location) == ["lung"]


def test_weibull_sums_and_order_statistics_equal_numpy(tmp_path):
    from dpsurv_core.engines import statistics

    ref = load_bundled("flchain")
    path = tmp_path / "flchain.parquet"
    datasets.load("flchain").to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", ref.mapping, "flchain")
    horizon, omega, p = 4000.0, 6.0, 1.3
    got = statistics.weibull_sums(ec.engine, ec.summary, p, horizon, omega)
    u = np.clip(ref.time / horizon, np.exp(-omega), 1.0)
    d = np.where(ref.time <= horizon, ref.event, 0)  # follow-up ends at the horizon: later events are censored there
    assert got["events"] == d.sum() < ref.event.sum() and got["n"] == ref.n
    assert got["sum_d_log_t"] == pytest.approx(np.sum(d * np.log(u)), rel=1e-12)
    assert got["sum_t_p"] == pytest.approx(np.sum(u ** p), rel=1e-12)
    assert got["sum_t_p_log_t"] == pytest.approx(np.sum(u ** p * np.log(u)), rel=1e-12)
    np.testing.assert_array_equal(statistics.largest_times(ec.engine, ec.summary, 500), np.sort(ref.time)[::-1][:500])


def test_catalogue_engines_column_means_no_row_is_read(capsys, lung_table, monkeypatch):
    """Every curve mechanism the catalogue lists for duckdb runs with a row limit of 50: its counts come from the
    engine, no row from the table enters Python."""
    from dpsurv_core.privacy import catalogue

    monkeypatch.setenv(limits.CLI_CELLS_ENV, "100")
    ids = [e.id for e in catalogue.entries(catalogue.CURVES) if "duckdb" in e.engines]
    assert "laplace-counts" in ids
    for mech in ids:
        out = run(capsys, "km", "--data", lung_table, "--time", "time", "--event", "status", "--group", "sex",
                  "--grid", "0:1000:10", "--mechanism", mech, "--epsilon", "1", "--seed", "2")
        assert len(out["curves"]) == 2, mech


def test_budget_of_a_duckdb_table_is_the_budget_of_its_data(capsys, lung_table):
    table = run(capsys, "budget", "show", "--data", lung_table)
    assert table["fingerprint"] == run(capsys, "budget", "show", "--data", "lung")["fingerprint"]


@pytest.mark.slow
@pytest.mark.spark
def test_spark_chunked_rows_equal_the_in_memory_cohort(tmp_path, spark_session):
    ref = load_bundled("kidney", group="sex")
    path = tmp_path / "kidney.parquet"
    datasets.load("kidney").to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "spark", ref.mapping, "kidney", chunk_rows=7)
    rows = ec.in_memory()
    for f in ("time", "event", "group", "subject"):
        np.testing.assert_array_equal(getattr(rows, f), getattr(ref, f))
    assert "in chunks of 7" in rows.warnings[-1]


def test_no_noise_on_an_engine_table_is_the_kaplan_meier_curve_as_in_memory(capsys, tmp_path):
    """epsilon = inf reads a DuckDB table the same way as rows in memory: R's Kaplan-Meier at the grid points and its
    RMST, not the life table the noisy counts need."""
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    args = ["km", "--data", str(path), "--time", "time", "--event", "status", "--group", "sex", "--mechanism",
            "laplace-counts", "--epsilon", "inf", "--rmst", "500"]
    a, b = run(capsys, *args, "--engine", "pandas"), run(capsys, *args, "--engine", "duckdb")
    for x, y in zip(a["curves"], b["curves"], strict=True):
        assert x["survival"] == pytest.approx(y["survival"], abs=1e-12)
    assert a["rmst"][0]["rmst"] == pytest.approx(b["rmst"][0]["rmst"], abs=1e-9)
    assert a["rmst"][0]["rmst"] == pytest.approx(278.76, abs=0.01)
