"""Near-tied times and all-censored data against R survival (survfit, survdiff; R's aeqSurv rule for timefix).

R's answers are in ``r_reference/timefix_censored.json``, written by ``tools/r_reference/timefix_censored.R`` (R is
not needed to test). Its times are hexadecimal floats, so the data here are the very doubles R counted."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.curves.timefix import TOLERANCE, merge_near_ties, timefixed
from dpsurv_core.data.cohort import NO_EVENTS, ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from tests.cli_run import run

REFERENCE = json.loads((Path(__file__).parent / "r_reference" / "timefix_censored.json").read_text())
RTOL = 1e-8


def frame(case: str) -> pd.DataFrame:
    data = REFERENCE[case]["data"]
    return pd.DataFrame({"time": [float.fromhex(h) for h in data["time"]], "status": data["status"],
                         "group": data["group"]})


@pytest.fixture
def parquet(tmp_path):
    def write(case: str) -> str:
        path = tmp_path / f"{case}.parquet"
        frame(case).to_parquet(path)  # exact doubles (a CSV could round the last bits that make the near ties)
        return str(path)
    return write


def close(ours: object, r: object) -> bool:
    if ours is None or r is None:
        return ours is None and r is None
    return math.isclose(float(ours), float(r), rel_tol=RTOL, abs_tol=1e-12)


def test_r_merges_point_one_plus_point_two_with_point_three():
    times = np.array([0.1 + 0.2, 0.3, 0.5])
    assert times[0] != times[1]
    merged = merge_near_ties(times)
    assert merged[0] == merged[1] == 0.3 and merged[2] == 0.5  # a run becomes its smallest member, as in R
    assert merge_near_ties(np.array([5.0, 5.0 + 4 * TOLERANCE, 9.0]))[1] == 5.0  # relative to mean |y| = 6.3
    assert merge_near_ties(np.array([5.0, 5.0 + 20 * TOLERANCE, 9.0]))[1] > 5.0  # past the tolerance: apart
    assert np.array_equal(merge_near_ties(np.array([1.0, 1.1, 2.0])), [1.0, 1.1, 2.0])  # nothing tied: unchanged


def test_a_near_tie_counts_as_a_tie_in_the_exact_curve_and_not_with_timefix_off():
    df = pd.DataFrame({"time": [0.1 + 0.2, 0.3, 0.5, 0.8], "status": [1, 1, 1, 0]})
    for timefix, steps in ((True, 2), (False, 3)):
        cohort = build_cohort(df, ColumnMap("time", "status", timefix=timefix), "ties")
        fixed = timefixed(cohort)
        public = PublicParameters.derive(fixed, grid=TimeGrid.event_times(fixed))
        curves = NonPrivate().compute(cohort, public).curves
        assert curves.time.size == steps
        # R: S(0.3) = 1 - 2/4 with the tie; apart, 3/4 then 2/3 * 3/4
        assert curves.survival[0, 0, 0] == pytest.approx(0.5 if timefix else 0.75, rel=1e-12)


@pytest.mark.parametrize("mode", ["timefix", "exact"])
def test_curves_equal_r_survfit(capsys, parquet, mode):
    for case in ("near_ties", "all_censored"):
        extra = ["--no-timefix"] if mode == "exact" else []
        out = run(capsys, "km", "--data", parquet(case), "--time", "time", "--event", "status", "--group", "group",
                  "--mechanism", "nonprivate", *extra)
        r = REFERENCE[case][mode]["grouped"]
        for cur in out["curves"]:
            g = cur["group"]
            rows = [i for i, s in enumerate(r["strata"]) if s == g and r["n_event"][i] > 0]
            times = np.array(cur["time"])
            assert sum(1 for i, s in enumerate(cur["events"]) if s and s > 0) == len(rows), (case, mode, g)
            for i in rows:
                (k,) = np.flatnonzero(times == float.fromhex(r["time"][i]))
                for ours, theirs in ((cur["survival"][k], r["surv"][i]), (cur["lower"][k], r["lower"][i]),
                                     (cur["upper"][k], r["upper"][i]), (cur["at_risk"][k], r["n_risk"][i])):
                    assert close(ours, theirs), (case, mode, g, r["time"][i], ours, theirs)
            assert close(cur["median"], r["median"][g]), (case, mode, g)


def test_log_rank_equals_r_survdiff_with_timefix(capsys, parquet):
    r = REFERENCE["near_ties"]["timefix"]["logrank"]
    args = ["logrank", "--data", parquet("near_ties"), "--time", "time", "--event", "status", "--group", "group",
            "--mechanism", "nonprivate"]
    (overall,) = run(capsys, *args)["overall"]
    assert close(overall["statistic"], r["chisq"]) and close(overall["p_value"], r["p"])
    (apart,) = run(capsys, *args, "--no-timefix")["overall"]
    assert not close(apart["statistic"], r["chisq"])  # the near ties counted apart: not R's test


def test_all_censored_curves_stay_at_one_without_a_median(capsys, parquet):
    r = REFERENCE["all_censored"]["timefix"]
    assert all(s == 1 for s in r["pooled"]["surv"]) and r["pooled"]["median"]["all"] is None
    path = parquet("all_censored")
    out = run(capsys, "km", "--data", path, "--time", "time", "--event", "status", "--mechanism", "nonprivate")
    (cur,) = out["curves"]
    assert set(cur["survival"]) == {1.0} and cur["median"] is None
    assert all(q["time"] is None for q in cur["quantiles"])
    assert any(w.startswith(NO_EVENTS) for w in out["warnings"])
    # R's survdiff: chisq 0 (p NA, on -1 df); here: no p-value, and a sentence saying why
    assert r["logrank"]["chisq"] == 0 and r["logrank"]["p"] is None
    lr = run(capsys, "logrank", "--data", path, "--time", "time", "--event", "status", "--group", "group",
             "--mechanism", "nonprivate")
    assert lr["overall"][0]["p_value"] is None


@pytest.mark.parametrize("mechanism", ["laplace-counts", "time-indexed", "adaptive-km", "rrr", "smooth-steps"])
def test_private_mechanisms_run_on_all_censored_data(capsys, parquet, mechanism):
    out = run(capsys, "km", "--data", parquet("all_censored"), "--time", "time", "--event", "status", "--group",
              "group", "--mechanism", mechanism, "--horizon", "60", "--grid", "0:60:6", "--repeat", "2", "--seed", "1",
              "--accept-disclosure", "categories")
    for cur in out["curves"]:
        assert all(s is None or 0 <= s <= 1 for s in cur["survival"])
