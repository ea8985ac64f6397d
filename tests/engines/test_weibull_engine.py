"""Weibull from engine statistics: the MLE, LSP + TLL and the Laplace baseline read only the table of
distinct times (an engine ``GROUP BY``), so DuckDB and Spark give the in-memory numbers to the last digit and the
same seeded releases; sample-and-aggregate reads rows in bounded chunks and is refused past the row limit."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dpsurv_core import engines, limits
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import ColumnMap, load_bundled
from dpsurv_core.engines.source import Source
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.weibull.mechanisms import make_mechanism
from dpsurv_core.weibull.model import WeibullSample, lifelines_fit, normalise, weibull_mle
from tests.cli_run import fails, run

DATA = ("lung", "flchain", "veteran", "kidney", "gehan", "mgus2", "stanford2")
STATISTICS_MECHANISMS = ("mle", "clipped-mle", "lsp-tll", "laplace")


def _same_sample(a: WeibullSample, b: WeibullSample) -> None:
    for f in ("lt_u", "c_u", "e_u"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert (a.n, a.n_events, a.sum_d_lnt) == (b.n, b.n_events, b.sum_d_lnt)


def _check_engine(engine: str, tmp_path, names: tuple[str, ...] = DATA) -> None:
    for name in names:
        ref = load_bundled(name)
        path = tmp_path / f"{name}.parquet"
        datasets.load(name).to_parquet(path)
        # the table of distinct times is streamed in chunks of 7 rows (the bounded path for a large table)
        ec = engines.open_cohort(Source("parquet", str(path)), engine, ref.mapping, name, chunk_rows=7)
        tmax = float(ref.time.max())
        for horizon in (tmax, round(tmax / 2)):  # all times inside; half of them beyond the horizon (capped)
            for mech_name, eps in itertools.product(STATISTICS_MECHANISMS, (math.inf, 1.0)):  # noise off, seeded
                mech = make_mechanism(mech_name, eps, horizon, rows_per_subject=ref.rows_per_subject, rungs=100)
                if mech_name == "mle" and (ref.time <= 0).any():  # survreg's MLE refuses a time of 0, everywhere
                    for cohort in (ref, ec):
                        with pytest.raises(ParameterError, match="have time 0"):
                            mech.prepare(cohort)
                    continue
                a, b = mech.prepare(ref), mech.prepare(ec)
                assert a.per_subject and not b.per_subject
                _same_sample(a, b)
                ra = mech.compute_many(a, SimulationNoise(7), 4)
                rb = mech.compute_many(b, SimulationNoise(7), 4)
                np.testing.assert_array_equal(ra.shape, rb.shape, err_msg=f"{name} {mech_name} {eps}")
                np.testing.assert_array_equal(ra.scale, rb.scale, err_msg=f"{name} {mech_name} {eps}")
        assert not ec.loaded, f"{name}: the Weibull statistics must come from the engine, not from rows in Python"


def test_duckdb_weibull_equals_pandas_to_the_last_digit(tmp_path):
    _check_engine("duckdb", tmp_path)


@pytest.mark.slow
@pytest.mark.spark
def test_spark_weibull_equals_pandas_to_the_last_digit(tmp_path, spark_session):
    _check_engine("spark", tmp_path, ("lung", "flchain", "kidney"))


def test_noise_off_equals_the_mle_and_lifelines(tmp_path):
    """epsilon = inf: LSP + TLL and Laplace return the non-private clipped MLE, which agrees with lifelines."""
    ref = load_bundled("lung")
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", ref.mapping, "lung")
    fit = weibull_mle(make_mechanism("clipped-mle", 1, 1100.0).prepare(ref))
    for name in ("lsp-tll", "laplace"):
        mech = make_mechanism(name, float("inf"), 1100.0)
        est = mech.compute(mech.prepare(ec), SimulationNoise(1))
        assert est.shape[0] == fit.shape and est.scale_normalised[0] == fit.scale_normalised
    life = lifelines_fit(make_mechanism("clipped-mle", 1, 1100.0).prepare(ref))
    assert fit.shape == pytest.approx(life.shape, rel=1e-5) and fit.scale == pytest.approx(life.scale, rel=1e-5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 500.0, allow_nan=False), st.booleans()), min_size=1, max_size=60),
       st.integers(0, 2), st.sampled_from([1e-3, 20.0, 100.0, 1e4]), st.floats(0.5, 12.0))
def test_table_sample_equals_subject_sample_property(rows, digits, horizon, omega):
    """from_table on (distinct times capped at the horizon, counts, events) equals the per-subject sample, ties,
    times beyond the horizon and times clipped to e^-omega included."""
    t = np.round(np.array([r[0] for r in rows]), digits)
    d = np.array([r[1] for r in rows], dtype=int)
    u, inv = np.unique(np.minimum(t, horizon), return_inverse=True)
    table = WeibullSample.from_table(u, np.bincount(inv), np.bincount(inv, weights=d).astype(int), horizon, omega)
    _same_sample(WeibullSample(normalise(t, horizon, omega), d, horizon, omega), table)


def test_cli_lsp_tll_runs_in_duckdb_past_the_row_limit(capsys, tmp_path, monkeypatch):
    """With a row limit of 20 (rows of 2 columns), lsp-tll on a 228-row file reads no row: same JSON as pandas."""
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    args = ("weibull", "--data", str(path), "--time", "time", "--event", "status", "--horizon", "1100",
            "--epsilon", "1", "--seed", "5", "--repeat", "2")
    want = {m: run(capsys, *args, "--mechanism", m, "--engine", "pandas") for m in STATISTICS_MECHANISMS}
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "600")  # 200 distinct times fit (600 / 3); 300 rows of 2 columns
    for m in STATISTICS_MECHANISMS:
        got = run(capsys, *args, "--mechanism", m, "--engine", "duckdb")
        assert got["estimates"] == want[m]["estimates"] and got["n"] == want[m]["n"] == 228, m
        assert got.get("intervals") == want[m].get("intervals"), m


def test_saa_is_refused_past_the_row_limit_and_table_past_its_limit(capsys, tmp_path, monkeypatch):
    path = tmp_path / "lung.parquet"
    datasets.load("lung").to_parquet(path)
    base = ("weibull", "--data", str(path), "--time", "time", "--event", "status", "--horizon", "1100",
            "--epsilon", "1", "--seed", "5", "--engine", "duckdb")
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "100")
    msg = fails(capsys, *base, "--mechanism", "saa", "--blocks", "2")
    assert msg == ("error: `weibull --mechanism saa` needs each subject's values in memory, and "
                   f"{str(path)!r} has 228 rows, more than the 50 rows of 2 column(s) dpsurv reads into memory "
                   "(DPSURV_MAX_CLI_CELLS); km and logrank with laplace-counts, adaptive-km or a disclosure-control "
                   "method count inside the engine at any size.")
    msg = fails(capsys, *base, "--mechanism", "lsp-tll")
    assert msg == (f"error: `weibull --mechanism lsp-tll` needs the table of distinct times, and {str(path)!r} has 186 "
                   "distinct times up to the horizon, more than the 33 dpsurv holds in memory (DPSURV_MAX_CLI_CELLS / "
                   "3): round the times in the source (to whole days, for example).")
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "1000")  # below the limit saa reads the rows in chunks: as pandas
    got = run(capsys, *base, "--mechanism", "saa", "--blocks", "2")
    monkeypatch.delenv(limits.CLI_CELLS_ENV)
    want = run(capsys, *base[:-2], "--mechanism", "saa", "--blocks", "2")
    assert got["estimates"] == want["estimates"]


def test_saa_needs_subjects_and_catalogue_says_where_each_runs():
    frame = pd.DataFrame({"t": [1.0, 2.0, 2.0, 5.0], "d": [1, 0, 1, 1]})
    ec = engines.open_cohort(Source("frame", frame=frame), "duckdb", ColumnMap("t", "d"), "tiny")
    lsp = make_mechanism("lsp-tll", 1.0, 5.0)
    table = lsp.prepare(ec)
    saa = make_mechanism("saa", 1.0, 5.0, blocks=2)
    with pytest.raises(Exception, match="needs each subject's time and event"):
        saa.compute(table, SimulationNoise(1))
    with pytest.raises(DataError, match="lifelines needs each subject's time and event"):
        lifelines_fit(table)
    assert saa.prepare(ec).per_subject
    where = {e.id: e.engines for e in catalogue.entries(catalogue.WEIBULL)}
    assert where["lsp-tll"] == where["laplace"] == where["mle"] == where["clipped-mle"] == ("pandas", "duckdb", "spark")
    assert where["saa"] == ("pandas",)
