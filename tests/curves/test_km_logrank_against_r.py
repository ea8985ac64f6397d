"""Kaplan-Meier curves and log-rank tests on every bundled data set against R survival, to 1e-8 relative.

R's answers are in ``r_reference/km_logrank.json``, written by ``tools/r_reference/km_logrank.R`` (R is not needed to
test); doubles are hexadecimal floats, null is R's NA. Each bundled data set, ungrouped and by each of its group
columns (flchain's curves by sex only):

- at every event time of each group (``summary(survfit(...), censored = FALSE)``): the number at risk, the events,
  the survival and its 95% limits for every conf.type (plain, log, log-log, logit, arcsin; flchain log only);
- ``survdiff``: the overall chi-square with R's degrees of freedom (groups with a positive expected count, less one)
  and its p-value, and the same for every pair of groups.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from tests.cli_run import run

REFERENCE = json.loads((Path(__file__).parent / "r_reference" / "km_logrank.json").read_text())
RTOL = 1e-8


def numbers(values: list) -> np.ndarray:
    return np.array([np.nan if v is None else float.fromhex(v) for v in values], float)


def number(value: list | str | None) -> float:
    if isinstance(value, list):
        value = value[0] if value else None
    return math.nan if value is None else float.fromhex(value)


def same_group(ours: object, r: str) -> bool:
    if str(ours) == r:
        return True
    try:
        return float(str(ours)) == float(r)
    except ValueError:
        return False


def differences(ours: np.ndarray, r: np.ndarray) -> list[tuple[int, float, float]]:
    """(index, ours, R) where they differ by more than 1e-8 relative (NA only where R has NA)."""
    both_na = np.isnan(ours) & np.isnan(r)
    ok = both_na | np.isclose(ours, r, rtol=RTOL, atol=1e-12)
    return [(int(i), float(ours[i]), float(r[i])) for i in np.flatnonzero(~ok)]


def case_id(c: dict) -> str:
    return f"{c['data']}-{c.get('group') or 'all'}"


CURVE_CASES = [c for c in REFERENCE["cases"] if c["strata"]]
TEST_CASES = [c for c in REFERENCE["cases"] if c.get("overall")]


@pytest.mark.parametrize("case", CURVE_CASES, ids=[case_id(c) for c in CURVE_CASES])
def test_curves_at_every_event_time_equal_r(capsys, case):
    base = ["km", "--data", case["data"], "--mechanism", "nonprivate"] + (["--group", case["group"]]
                                                                          if case.get("group") else [])
    found = []
    for k, conf_type in enumerate(lim["conf_type"] for lim in case["strata"][0]["limits"]):
        out = run(capsys, *base, "--conf-type", conf_type)
        for stratum in case["strata"]:
            ours = [c for c in out["curves"] if same_group(c["group"], stratum["group"])]
            assert len(ours) == 1, (stratum["group"], [c["group"] for c in out["curves"]])
            cur = ours[0]
            times = np.asarray(cur["time"], float)
            r_times = numbers(stratum["time"])
            # each of R's event times is one of ours (the curve's axis holds every group's event times)
            at = np.searchsorted(times, r_times)
            assert np.all(at < times.size) and np.allclose(times[np.minimum(at, times.size - 1)], r_times, rtol=1e-12)
            pick = lambda key, cur=cur, at=at: np.asarray(cur[key], float)[at]  # noqa: E731
            limits = stratum["limits"][k]
            checks = [("lower", pick("lower"), numbers(limits["lower"])),
                      ("upper", pick("upper"), numbers(limits["upper"]))]
            if k == 0:
                checks += [("n.risk", pick("at_risk"), numbers(stratum["n_risk"])),
                           ("n.event", pick("events"), numbers(stratum["n_event"])),
                           ("surv", pick("survival"), numbers(stratum["survival"]))]
            found += [(conf_type, stratum["group"], what, d) for what, o, r in checks for d in differences(o, r)]
    assert found == []


def _test_numbers(t: dict) -> tuple[float, int, float]:
    return t["statistic"], t["dof"], t["p_value"]


@pytest.mark.parametrize("case", TEST_CASES, ids=[case_id(c) for c in TEST_CASES])
def test_log_rank_overall_and_pairwise_equal_survdiff(capsys, case):
    out = run(capsys, "logrank", "--data", case["data"], "--group", case["group"], "--mechanism", "nonprivate")
    overall = out["overall"][0]
    r = case["overall"]
    assert overall["dof"] == r["df"]
    assert math.isclose(overall["statistic"], number(r["chisq"]), rel_tol=RTOL, abs_tol=1e-12)
    assert math.isclose(overall["p_value"], number(r["p"]), rel_tol=RTOL, abs_tol=1e-300)
    # a declared category nobody is in (lung's ph.ecog 4) is a group of ours that R's data frame does not have
    present = {g for pair in case["pairs"] for g in (pair["a"], pair["b"])}
    pairs = {frozenset((str(t["group_a"]), str(t["group_b"]))): t for t in out["tests"] if t.get("trial", 0) == 0
             and all(any(same_group(g, x) for x in present) for g in (t["group_a"], t["group_b"]))}
    assert len(pairs) == len(case["pairs"])
    for pair in case["pairs"]:
        key = next(k for k in pairs if all(any(same_group(g, x) for g in k) for x in (pair["a"], pair["b"])))
        stat, dof, p = _test_numbers(pairs[key])
        assert dof == pair["df"], (pair["a"], pair["b"])
        if pair["df"] == 0:  # R: chisq 0 on 0 degrees of freedom, p = 1
            assert stat == 0.0 and p == 1.0
            continue
        assert math.isclose(stat, number(pair["chisq"]), rel_tol=RTOL, abs_tol=1e-12), (pair["a"], pair["b"])
        assert math.isclose(p, number(pair["p"]), rel_tol=RTOL, abs_tol=1e-300), (pair["a"], pair["b"])
