"""R's timefix and R's limits before a group's first time on tables kept in an engine (DuckDB; Spark marked).

R's answers: ``near_ties`` of ``tests/curves/r_reference/timefix_censored.json`` (survfit with timefix = TRUE and
FALSE on times such as 0.1 + 0.2 against 0.3, written as hexadecimal doubles) and ``before_first`` of
``tests/curves/r_reference/quantiles_na.json`` (summary.survfit before group B's first time: [1, 1] for every
conf.type). The engine's non-private release (``EngineCohort.exact_release``, what the app and reports show for a
table kept in an engine) must equal R and the in-memory path, and read no row into Python."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core import engines
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.readings import conf_bands
from dpsurv_core.curves.result import NonPrivate, with_follow_up_end
from dpsurv_core.data.cohort import ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.engines.source import Source
from tests.cli_run import run

R_DIR = Path(__file__).parents[1] / "curves" / "r_reference"
NEAR = json.loads((R_DIR / "timefix_censored.json").read_text())["near_ties"]
BEFORE = json.loads((R_DIR / "quantiles_na.json").read_text())["before_first"]
RTOL = 1e-8


def hexes(values: list) -> list[float]:
    return [float.fromhex(v[0] if isinstance(v, list) else v) if isinstance(v, (str, list)) else float(v)
            for v in values]


def close(ours: float, r: float | None) -> bool:
    if r is None:
        return bool(np.isnan(ours))
    return math.isclose(float(ours), float(r), rel_tol=RTOL, abs_tol=1e-12)


@pytest.fixture
def near_ties(tmp_path) -> tuple[pd.DataFrame, str]:
    d = NEAR["data"]
    frame = pd.DataFrame({"time": hexes(d["time"]), "status": d["status"], "group": d["group"]})
    path = tmp_path / "near_ties.parquet"
    frame.to_parquet(path)  # exact doubles: the near ties differ in their last bits
    return frame, str(path)


def engine_and_memory(frame: pd.DataFrame, path: str, timefix: bool, engine: str = "duckdb"):
    mapping = ColumnMap("time", "status", "group", timefix=timefix)
    return (engines.open_cohort(Source("parquet", path), engine, mapping, "near_ties"),
            build_cohort(frame, mapping, "near_ties"))


def check_against_r(ec, frame: pd.DataFrame, timefix: bool) -> None:
    mode = "timefix" if timefix else "exact"
    r = NEAR[mode]["grouped"]
    grid = ec.event_time_grid()
    r_events = sorted({float.fromhex(t) for t, n in zip(r["time"], r["n_event"]) if n > 0})
    np.testing.assert_array_equal(grid.edges[1:], r_events)  # the event-time grid: R's event times
    rel = ec.exact_release(ec.public_parameters(grid=grid))
    c = rel.curves
    lower, upper = conf_bands(c, "log")
    checked = 0
    for i, (g, t, n_event) in enumerate(zip(r["strata"], r["time"], r["n_event"])):
        if n_event == 0:
            continue
        gi, (k,) = c.groups.index(g), np.flatnonzero(c.time == float.fromhex(t))
        for ours, theirs in ((c.survival[0, gi, k], r["surv"][i]), (lower[0, gi, k], r["lower"][i]),
                             (upper[0, gi, k], r["upper"][i]), (c.at_risk[0, gi, k], r["n_risk"][i]),
                             (c.events[0, gi, k], n_event)):
            assert close(ours, theirs), (mode, g, t, ours, theirs)
        checked += 1
    assert checked == sum(1 for n in r["n_event"] if n > 0)
    assert not ec.loaded, "the engine's table must be counted there, not read into Python"


@pytest.mark.parametrize("timefix", [True, False])
def test_duckdb_exact_curves_equal_r_survfit_and_the_in_memory_path(near_ties, timefix):
    frame, path = near_ties
    ec, mem = engine_and_memory(frame, path, timefix)
    check_against_r(ec, frame, timefix)
    # the same grid, counts and curves as rows in memory
    grid = TimeGrid.event_times(mem)
    np.testing.assert_array_equal(ec.event_time_grid().edges, grid.edges)
    assert grid.edges.size - 1 == (57 if timefix else 60)  # R: 57 event times with timefix, 60 without
    from dpsurv_core.curves.timefix import timefixed

    a, b = count(ec.timefixed(), grid, ("A", "B")), count(timefixed(mem), grid, ("A", "B"))
    for f in ("n", "events", "censored"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    public = PublicParameters.derive(mem, grid=grid)
    ours = ec.exact_release(ec.public_parameters(grid=ec.event_time_grid())).curves
    theirs = with_follow_up_end(NonPrivate().compute(mem, public), mem, public).curves
    for f in ("survival", "lower", "upper", "at_risk", "events", "censored", "follow_up_start", "follow_up_end"):
        np.testing.assert_allclose(getattr(ours, f), getattr(theirs, f), rtol=1e-12, err_msg=f)
    assert not ec.loaded


def test_the_merge_reads_the_tied_times_only(near_ties):
    frame, path = near_ties
    ec, _ = engine_and_memory(frame, path, True)
    view = ec.timefixed()
    assert view is not ec and view.timefixed() is view and ec.timefixed() is view
    assert view.summary.time == "_tf_time"
    # its rows, if read (bounded path), are the in-memory merge of the table's rows
    from dpsurv_core.curves.timefix import merge_near_ties

    np.testing.assert_array_equal(view.time, merge_near_ties(frame["time"].to_numpy()))
    off, _ = engine_and_memory(frame, path, False)
    assert off.timefixed() is off


def test_km_and_logrank_on_duckdb_equal_r(capsys, near_ties):
    _, path = near_ties
    base = ["--data", path, "--time", "time", "--event", "status", "--group", "group", "--mechanism", "nonprivate",
            "--engine", "duckdb"]
    r = NEAR["timefix"]
    lr = run(capsys, "logrank", *base)["overall"][0]
    assert close(lr["statistic"], r["logrank"]["chisq"]) and close(lr["p_value"], r["logrank"]["p"])
    for mode, extra in (("timefix", []), ("exact", ["--no-timefix"])):
        out = run(capsys, "km", *base, *extra)
        rr = NEAR[mode]["grouped"]
        for cur in out["curves"]:
            g = cur["group"]
            rows = [i for i, s in enumerate(rr["strata"]) if s == g and rr["n_event"][i] > 0]
            assert sum(1 for e in cur["events"] if e) == len(rows), (mode, g)
            assert close(cur["median"], rr["median"][g]), (mode, g)


@pytest.mark.parametrize("conf_type", ["plain", "log", "log-log", "logit", "arcsin"])
def test_limits_before_a_groups_first_time_are_one_as_r(tmp_path, conf_type):
    path = tmp_path / "two.parquet"
    pd.DataFrame(BEFORE["data"]).to_parquet(path)
    ec = engines.open_cohort(Source("parquet", str(path)), "duckdb", ColumnMap("time", "status", "group"), "two")
    case = next(c for c in BEFORE["cases"] if c["conf_type"] == conf_type)
    times = sorted(set(hexes(case["time"])))
    grid = TimeGrid(np.array([0.0, *times]), "custom", False)  # R's summary(fit, times = c(0.5, 2.5))
    c = ec.exact_release(ec.public_parameters(grid=grid)).curves
    lower, upper = conf_bands(c, conf_type)
    for g, t, s, lo, up in zip(case["strata"], hexes(case["time"]), hexes(case["surv"]), hexes(case["lower"]),
                               hexes(case["upper"])):
        gi, k = c.groups.index(g), times.index(t)
        assert close(c.survival[0, gi, k], s) and close(lower[0, gi, k], lo) and close(upper[0, gi, k], up), \
            (conf_type, g, t, lower[0, gi, k], upper[0, gi, k], lo, up)
    np.testing.assert_array_equal(c.follow_up_start[0], [1.0, 3.0])
    assert not ec.loaded


@pytest.mark.spark
def test_spark_exact_curves_equal_r_survfit(near_ties, spark_session):
    frame, path = near_ties
    for timefix in (True, False):
        ec, _ = engine_and_memory(frame, path, timefix, "spark")
        check_against_r(ec, frame, timefix)
