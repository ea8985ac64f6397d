"""Non-private ``km`` and ``logrank`` on a table kept in an engine are computed from the engine's cells: no row
enters Python (the row limit DPSURV_MAX_CLI_CELLS is set to 10 here), and every printed number equals the in-memory
path's (``--engine pandas`` on the same file, which matches R survival) to 1e-12 relative."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core import limits
from dpsurv_core.data import datasets
from tests.cli_run import fails, run

R_DIR = Path(__file__).parents[1] / "curves" / "r_reference"
RTOL = 1e-12
# fields that name the path taken, not a number of the analysis
SKIP = {"warnings_data"}


def same(a, b, where: str = "") -> None:
    """``a`` equals ``b``: numbers to RTOL relative, everything else exactly."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), (where, sorted(set(a) ^ set(b)))
        for k in a:
            if k not in SKIP:
                same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list):
        assert isinstance(b, list) and len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    elif isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        assert math.isclose(a, b, rel_tol=RTOL, abs_tol=1e-300) or (math.isnan(a) and math.isnan(b)), (where, a, b)
    else:
        assert a == b, (where, a, b)


def both(capsys, monkeypatch, *argv: str) -> tuple[dict, dict]:
    """(in memory, in DuckDB with a row limit of 10) outputs of one command."""
    memory = run(capsys, *argv, "--engine", "pandas")
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "10")
    engine = run(capsys, *argv, "--engine", "duckdb")
    monkeypatch.delenv(limits.CLI_CELLS_ENV)
    return memory, engine


def parquet(tmp_path, frame: pd.DataFrame, name: str) -> str:
    path = tmp_path / f"{name}.parquet"
    frame.to_parquet(path)
    return str(path)


@pytest.fixture
def lung(tmp_path) -> str:
    return parquet(tmp_path, datasets.load("lung"), "lung")


def test_km_on_lung_by_sex_reads_no_row(capsys, monkeypatch, lung):
    args = ["km", "--data", lung, "--time", "time", "--event", "status", "--group", "sex", "--mechanism", "nonprivate",
            "--rmst", "365", "--landmarks", "180,365,730"]
    memory, engine = both(capsys, monkeypatch, *args)
    same(memory, engine)
    male = engine["curves"][0]
    assert male["median"] == 270 and engine["rmst"][0]["group"] == "1"  # R: median 270 (212, 310) for sex 1
    assert male["at_risk"][0] == 138 and sum(male["events"]) == 112
    for conf in ("log-log", "plain"):
        same(*both(capsys, monkeypatch, *args, "--conf-type", conf))


def test_km_on_a_declared_grid_and_without_groups(capsys, monkeypatch, lung):
    base = ["km", "--data", lung, "--time", "time", "--event", "status", "--mechanism", "nonprivate"]
    same(*both(capsys, monkeypatch, *base, "--group", "sex", "--grid", "0:1000:10", "--horizon", "900"))
    memory, engine = both(capsys, monkeypatch, *base, "--estimand", "cumulative-hazard")
    same(memory, engine)
    assert engine["curves"][0]["median"] == 310  # R: survfit(Surv(time, status) ~ 1, lung) median 310


def test_logrank_on_lung_reads_no_row(capsys, monkeypatch, lung):
    memory, engine = both(capsys, monkeypatch, "logrank", "--data", lung, "--time", "time", "--event", "status",
                          "--group", "sex", "--mechanism", "nonprivate")
    same(memory, engine)
    assert engine["overall"][0]["statistic"] == pytest.approx(10.3267, abs=5e-5)  # R survdiff: Chisq = 10.3


def test_cumulative_incidence_of_pbc_counts_in_the_engine(capsys, monkeypatch, tmp_path):
    pbc = parquet(tmp_path, datasets.load("pbc"), "pbc")
    memory, engine = both(capsys, monkeypatch, "km", "--data", pbc, "--time", "time", "--event", "status",
                          "--event-codes", "1,2", "--censor-codes", "0", "--group", "trt", "--mechanism", "nonprivate",
                          "--estimand", "cumulative-incidence", "--landmarks", "1000,3000")
    same(memory, engine)
    assert [c["group"] for c in engine["curves"]] == ["1", "2"] and engine["curves"][0]["cumulative_incidence"]


@pytest.mark.parametrize("timefix", [True, False])
def test_near_tied_times_merged_as_r_or_kept(capsys, monkeypatch, tmp_path, timefix):
    d = json.loads((R_DIR / "timefix_censored.json").read_text())["near_ties"]["data"]
    hexes = [float.fromhex(v[0] if isinstance(v, list) else v) if isinstance(v, (str, list)) else float(v)
             for v in d["time"]]
    frame = pd.DataFrame({"time": hexes, "status": d["status"], "group": d["group"]})
    path = parquet(tmp_path, frame, "near")
    flag = [] if timefix else ["--no-timefix"]
    for command in ("km", "logrank"):
        same(*both(capsys, monkeypatch, command, "--data", path, "--time", "time", "--event", "status", "--group",
                   "group", "--mechanism", "nonprivate", *flag))


def test_a_group_with_every_subject_censored(capsys, monkeypatch, tmp_path):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"time": np.round(rng.exponential(100, 60), 1) + 1, "status": np.r_[rng.integers(0, 2, 40),
                                                                                            np.zeros(20, int)],
                          "arm": ["a"] * 40 + ["b"] * 20})
    path = parquet(tmp_path, frame, "censored")
    args = ["--data", path, "--time", "time", "--event", "status", "--group", "arm", "--mechanism", "nonprivate"]
    memory, engine = both(capsys, monkeypatch, "km", *args, "--rmst", "50")
    same(memory, engine)
    b = engine["curves"][1]
    assert b["group"] == "b" and set(b["survival"]) == {1.0} and b["median"] is None
    same(*both(capsys, monkeypatch, "logrank", *args))


def test_spark_nonprivate_km_equals_memory(capsys, monkeypatch, lung, spark_session):
    args = ["km", "--data", lung, "--time", "time", "--event", "status", "--group", "sex", "--mechanism", "nonprivate",
            "--rmst", "365"]
    memory = run(capsys, *args, "--engine", "pandas")
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "10")
    same(memory, run(capsys, *args, "--engine", "spark"))


def test_several_rows_per_subject(capsys, monkeypatch, tmp_path):
    """kidney (two infections per patient): the curves and the number-at-risk table (R counts rows) are counted in the
    engine; only the robust standard errors (survfit's id = id) need each subject's rows, through the bounded path."""
    path = parquet(tmp_path, datasets.load("kidney"), "kidney")
    args = ["km", "--data", path, "--time", "time", "--event", "status", "--group", "sex", "--mechanism",
            "nonprivate", "--id", "id", "--max-rows-per-subject", "2"]
    memory = run(capsys, *args, "--engine", "pandas")
    engine = run(capsys, *args, "--engine", "duckdb")
    same(memory, engine)
    assert "robust_note" in engine and engine["number_at_risk"]["rows"][0]["at_risk"][0] == 20  # 10 men, 2 rows each
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "10")
    same(memory["number_at_risk"], run(capsys, "logrank", *args[1:], "--engine", "duckdb")["number_at_risk"])


def test_more_event_times_than_a_grid_reads_the_rows_within_the_limit(capsys, monkeypatch, tmp_path):
    rng = np.random.default_rng(7)
    n = 10_100  # every time distinct: more event times than the engine counts on (MAX_BINS)
    frame = pd.DataFrame({"t": rng.exponential(100, n), "d": np.r_[np.ones(10_050, int), np.zeros(50, int)]})
    path = parquet(tmp_path, frame, "continuous")
    args = ["km", "--data", path, "--time", "t", "--event", "d", "--mechanism", "nonprivate", "--grid", "0:300:6"]
    memory = run(capsys, *args, "--engine", "pandas")
    same(memory, run(capsys, *args, "--engine", "duckdb"))
    monkeypatch.setenv(limits.CLI_CELLS_ENV, "10")
    assert "round the times in the source" in fails(capsys, *args, "--engine", "duckdb")


@pytest.mark.parametrize("timefix", [True, False])
def test_a_private_competing_risks_event_time_grid_is_the_same_in_memory_and_in_duckdb(capsys, tmp_path, timefix):
    """The event-time grid a private cumulative-incidence release is published on (a public value read off the data,
    accepted) merges near-tied times in memory as the engine does, unless --no-timefix keeps them apart in both."""
    times = np.r_[np.full(10, 0.1 + 0.2), np.full(10, 0.3), np.arange(1.0, 101.0)]
    types = np.r_[np.tile([1, 2], 10), np.arange(100) % 3]
    path = parquet(tmp_path, pd.DataFrame({"time": times, "etype": types}), "near_competing")
    flag = [] if timefix else ["--no-timefix"]
    grids = [run(capsys, "km", "--data", path, "--time", "time", "--event", "etype", "--event-codes", "1,2",
                 "--censor-codes", "0", "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "event-times",
                 "--estimand", "cumulative-incidence", "--horizon", "300", "--accept-disclosure", "grid",
                 "--engine", engine, *flag)["grid"] for engine in ("pandas", "duckdb")]
    assert grids[0] == grids[1]
    near = [p for p in grids[0]["points"] if p < 1.0]
    assert near == ([0.3] if timefix else [0.3, 0.1 + 0.2])
