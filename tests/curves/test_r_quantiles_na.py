"""Medians and quartiles with their limits, and R's NA conventions, against R survival.

R's answers are in ``r_reference/quantiles_na.json``, written by ``tools/r_reference/quantiles_na.R`` (R is not needed
to test); doubles are hexadecimal floats, null is R's NA.

- quantile.survfit reads the lower and upper limit curves with the same rule as the estimate (survival's findq): the
  curve's distinct values, sorted, the first whose 1 - S reaches p within sqrt(.Machine$double.eps), the midpoint
  over a flat stretch at exactly 1 - p; where a band is not monotone the sorted values decide. Compared on every
  bundled data set, ungrouped and by each of its group columns, for conf.type log, log-log and plain.
- summary.survfit before a group's first time: S = 1 with limits [1, 1] for every conf.type.
- a multi-state (competing risks) curve's plain band where the event-free probability is 0: [0, 0].
- the cumulative hazard's limits (survfit_confint on cumhaz with logse = FALSE, ulimit = FALSE) at H = 1 and above.
- survdiff against a group with no expected events: chisq 0 on 0 df, p = 1.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from tests.cli_run import run

REFERENCE = json.loads((Path(__file__).parent / "r_reference" / "quantiles_na.json").read_text())
RTOL = 1e-8


def number(h: object) -> float | None:
    if isinstance(h, list):
        h = h[0] if h else None
    return None if h is None else float.fromhex(h) if isinstance(h, str) else float(h)


def close(ours: object, r: object) -> bool:
    if ours is None or r is None:
        return ours is None and r is None
    return math.isclose(float(ours), float(r), rel_tol=RTOL, abs_tol=1e-12)


def same_group(ours: str, r: str) -> bool:
    if ours == r:
        return True
    try:
        return float(ours) == float(r)
    except ValueError:
        return False


def bundled_differences(capsys, case: dict) -> list[tuple]:
    """(stratum, probability, what, dpsurv, R) for every number that differs from R in one bundled case."""
    args = ["km", "--data", case["data"], "--mechanism", "nonprivate", "--conf-type", case["conf_type"]]
    if case.get("group"):
        args += ["--group", case["group"]]
    out = run(capsys, *args)
    probs = REFERENCE["probabilities"]
    diffs = []
    for stratum in case["strata"]:
        ours = [c for c in out["curves"] if same_group(str(c["group"]), stratum["group"])]
        assert len(ours) == 1, (case["data"], case.get("group"), stratum["group"], [c["group"] for c in out["curves"]])
        by_p = {q["probability"]: q for q in ours[0]["quantiles"]}
        for k, p in enumerate(probs):
            for what, key in (("quantile", "time"), ("lower", "lower"), ("upper", "upper")):
                r = number(stratum[what][k])
                if not close(by_p[p][key], r):
                    diffs.append((stratum["group"], p, what, by_p[p][key], r))
    return diffs


@pytest.mark.parametrize("case", REFERENCE["bundled"],
                         ids=[f"{c['data']}-{c.get('group') or 'all'}-{c['conf_type']}" for c in REFERENCE["bundled"]])
def test_bundled_quantiles_and_limits_equal_r(capsys, case):
    assert bundled_differences(capsys, case) == []


def csv(tmp_path, name: str, rows: list[dict] | dict) -> str:
    frame = pd.DataFrame(rows)
    path = tmp_path / f"{name}.csv"
    frame.to_csv(path, index=False)
    return str(path)


@pytest.mark.parametrize("conf_type", ["plain", "log", "log-log", "logit", "arcsin"])
def test_limits_before_a_groups_first_time_are_one_as_in_r(capsys, tmp_path, conf_type):
    ref = REFERENCE["before_first"]
    case = next(c for c in ref["cases"] if c["conf_type"] == conf_type)
    out = run(capsys, "km", "--data", csv(tmp_path, "two", ref["data"]), "--time", "time", "--event", "status",
              "--group", "group", "--mechanism", "nonprivate", "--conf-type", conf_type, "--landmarks", "0.5,2.5")
    ours = {(e["group"], e["time_requested"]): e for e in out["landmarks"]}
    for g, t, s, lo, up in zip(case["strata"], case["time"], case["surv"], case["lower"], case["upper"]):
        e = ours[(g, number(t))]
        assert close(e["survival"], number(s)) and close(e["lower"], number(lo)) and close(e["upper"], number(up)), \
            (g, number(t), e, number(lo), number(up))
    # the curve of group B on the common time axis, before its first time (3): S = 1 with limits [1, 1]
    b = next(c for c in out["curves"] if c["group"] == "B")
    early = [i for i, t in enumerate(b["time"]) if t < 3]
    assert early and all(b["lower"][i] == 1.0 and b["upper"][i] == 1.0 for i in early)


@pytest.mark.parametrize("conf_type", ["plain", "log", "log-log", "logit", "arcsin"])
def test_cumulative_hazard_limits_at_one_equal_r(capsys, tmp_path, conf_type):
    case = next(c for c in REFERENCE["hazard_at_one"] if c["conf_type"] == conf_type)
    out = run(capsys, "km", "--data", csv(tmp_path, "h1", case["data"]), "--time", "time", "--event", "status",
              "--mechanism", "nonprivate", "--conf-type", conf_type, "--estimand", "cumulative-hazard")
    cur = out["curves"][0]
    r_times = [number(t) for t in case["time"]]
    assert any(number(h) == 1.0 for h in case["cumhaz"])
    for i, t in enumerate(cur["time"]):
        k = r_times.index(t)
        assert close(cur["cumulative_hazard"][i], number(case["cumhaz"][k]))
        assert close(cur["cumulative_hazard_lower"][i], number(case["lower"][k])), (t, cur["cumulative_hazard_lower"])
        assert close(cur["cumulative_hazard_upper"][i], number(case["upper"][k])), (t, cur["cumulative_hazard_upper"])


@pytest.mark.parametrize("conf_type", ["plain", "log", "log-log", "logit", "arcsin"])
def test_competing_risks_bands_equal_r_where_the_event_free_probability_is_0(capsys, tmp_path, conf_type):
    case = next(c for c in REFERENCE["competing_at_zero"] if c["conf_type"] == conf_type)
    out = run(capsys, "km", "--data", csv(tmp_path, "cr", case["data"]), "--time", "time", "--event", "status",
              "--event-codes", "1,2", "--censor-codes", "0", "--mechanism", "nonprivate", "--conf-type", conf_type,
              "--estimand", "cumulative-incidence")
    cur = out["curves"][0]
    r_times = [number(t) for t in case["time"]]
    assert case["states"][0] == "(s0)"
    for i, t in enumerate(cur["time"]):
        k = r_times.index(t)
        assert close(cur["survival"][i], number(case["pstate"][0][k]))
        assert close(cur["lower"][i], number(case["lower"][0][k])), (t, cur["lower"], case["lower"][0])
        assert close(cur["upper"][i], number(case["upper"][0][k])), (t, cur["upper"], case["upper"][0])
        for state, code in ((1, "1"), (2, "2")):
            assert close(cur["cumulative_incidence"][code][i], number(case["pstate"][state][k]))
            assert close(cur["cumulative_incidence_lower"][code][i], number(case["lower"][state][k])), (t, code)
            assert close(cur["cumulative_incidence_upper"][code][i], number(case["upper"][state][k])), (t, code)


def test_logrank_against_a_group_with_no_expected_events_is_r_survdiff(capsys, tmp_path):
    ref = REFERENCE["no_expected"]
    out = run(capsys, "logrank", "--data", csv(tmp_path, "ne", ref["data"]), "--time", "time", "--event", "status",
              "--group", "group", "--mechanism", "nonprivate")
    tests = {(t["group_a"], t["group_b"]): t for t in out["tests"]}
    for pair in ref["pairs"]:
        ours = tests[tuple(pair["groups"])]
        assert ours["dof"] == pair["df"], pair["groups"]
        assert close(ours["statistic"], number(pair["chisq"])), (pair["groups"], ours["statistic"])
        assert close(ours["p_value"], number(pair["p"])), (pair["groups"], ours["p_value"])
    overall = out["overall"][0]
    assert overall["dof"] == ref["overall"]["df"]
    assert close(overall["statistic"], number(ref["overall"]["chisq"]))
    assert close(overall["p_value"], number(ref["overall"]["p"]))
