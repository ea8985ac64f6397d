"""The plain log-rank tests (``logrank.pairwise`` and ``logrank.overall``, read by reports, the audit and the
trade-off explorer) against R's survdiff where a group has no expected events.

R (survival 3.5-3, ``survdiff``): a group whose expected count is 0 is left out of the statistic; with fewer than two
groups left the statistic is 0 on 0 degrees of freedom and ``pchisq(0, 0, lower.tail = FALSE)`` = 1. The reference
is ``no_expected`` of ``r_reference/quantiles_na.json`` (``tools/r_reference/quantiles_na.R``)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from dpsurv_core.curves import logrank
from dpsurv_core.curves.counts import count
from dpsurv_core.data.cohort import ColumnMap, build_cohort
from dpsurv_core.data.public import TimeGrid

REFERENCE = json.loads((Path(__file__).parent / "r_reference" / "quantiles_na.json").read_text())["no_expected"]


def number(h: list | str) -> float:
    return float.fromhex(h[0] if isinstance(h, list) else h)


def counts():
    cohort = build_cohort(pd.DataFrame(REFERENCE["data"]), ColumnMap("time", "status", "group"), "no-expected")
    return count(cohort, TimeGrid.event_times(cohort), ("A", "B", "C"))


def test_pairwise_against_a_group_without_expected_events_is_chisq_0_on_0_df_p_1():
    ours = {(r.group_a, r.group_b): r for r in logrank.pairwise(counts())}
    for pair in REFERENCE["pairs"]:
        r = ours[tuple(pair["groups"])]
        assert r.dof == pair["df"], pair["groups"]
        assert math.isclose(float(r.statistic), number(pair["chisq"]), rel_tol=1e-8, abs_tol=1e-12), pair["groups"]
        assert math.isclose(float(r.p_value), number(pair["p"]), rel_tol=1e-8, abs_tol=1e-12), pair["groups"]
        assert np.allclose(r.expected, [number(e) for e in pair["expected"]], rtol=1e-8, atol=1e-12)
    assert float(ours[("A", "C")].statistic) == 0.0 and float(ours[("A", "C")].p_value) == 1.0


def test_overall_leaves_the_group_without_expected_events_out():
    r = logrank.overall(counts())
    assert r.dof == REFERENCE["overall"]["df"]
    assert math.isclose(float(r.statistic), number(REFERENCE["overall"]["chisq"]), rel_tol=1e-8)
    assert math.isclose(float(r.p_value), number(REFERENCE["overall"]["p"]), rel_tol=1e-8)


def test_no_events_at_all_is_no_test():
    cohort = build_cohort(pd.DataFrame({"time": [1.0, 2.0, 3.0, 4.0], "status": [1, 0, 0, 0],
                                        "group": ["A", "A", "B", "B"]}), ColumnMap("time", "status", "group"), "x")
    c = count(cohort, TimeGrid.event_times(cohort), ("A", "B"))
    # B is at risk at A's event: a test with expected events in both groups
    (pair,) = logrank.pairwise(c)
    assert pair.dof == 1 and np.isfinite(pair.statistic).all()
    empty = count(cohort, TimeGrid.parse("0:0.5:1"), ("A", "B"))  # no event on this grid: R's p is NA
    (none,) = logrank.pairwise(empty)
    assert np.isnan(none.p_value).all() and none.dof == 0
