"""The log-rank reader: the calibrated tests of a counts release, from its record alone.

A log-rank test is post-processing of released counts: the statistic of the released numbers at risk and events,
compared with its null distribution simulated from the released pooled hazard and the public noise law (seeded from
the released values, so the same record gives the same p-value). ``read`` adds the tests to what the curves reader
gives (:mod:`dpsurv_core.curves.readout`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from dpsurv_core.curves import logrank_test
from dpsurv_core.curves.readings import named_groups
from dpsurv_core.curves.readout import (  # noqa: F401 (VERSION: the curves reader's rules are this reader's)
    VERSION,
    curve_release,
    mechanism_of,
    public_parameters,
    reading_options,
    released_numbers,
)
from dpsurv_core.curves.result import CurveResult


def read(released: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """``derived`` of a log-rank release: the curves reader's numbers and the calibrated tests of its first trial
    (``inputs["tests"]["null_draws"]``: the declared number of null draws, None for the default)."""
    rel = curve_release(released, inputs)
    options = reading_options(inputs, public_parameters(inputs))
    tests = inputs.get("tests") or {}
    return (released_numbers(rel, **options)
            | released_tests(rel, mechanism_of(inputs), options["names"], tests.get("null_draws")))


def released_tests(rel: CurveResult, mech: Any, names: dict[str, str] | None = None, draws: int | None = None
                   ) -> dict[str, Any]:
    """The calibrated log-rank tests of a release's first trial, kept with its ledger record so that a report built
    from the record shows what ``logrank`` printed (post-processing: the released counts and the public noise law):
    ``tests`` (each pair), ``overall``, ``test_method`` and ``test_warnings``; group codes named by ``names``. Empty
    when the release has no counts or one group."""
    if rel.counts is None or len(rel.counts.groups) < 2:
        return {}
    names = names or {}
    name = lambda g: names.get(str(g), str(g))  # noqa: E731
    out: dict[str, Any] = {"test_warnings": []}
    readings = [("", rel.counts, False)]
    if "debiased_counts" in rel.extra:  # rrr: the tests on the de-biased counts too, as the Group comparison page shows
        readings.append(("debiased_", rel.extra["debiased_counts"], True))
    for prefix, counts, debiased in readings:
        first = replace(counts, n=counts.n[:1], events=counts.events[:1], censored=counts.censored[:1])
        law = logrank_test.noise_law(mech, rel.extra, debiased)
        results = logrank_test.calibrated_tests(first, law, draws=draws or logrank_test.default_draws(
            1, len(counts.groups), counts.grid.bins))
        out[prefix + "tests"] = [{"group_a": r.group_a, "group_b": r.group_b, "group_a_label": name(r.group_a),
                                  "group_b_label": name(r.group_b), **calibrated_fields(r, 0)} for r in results[:-1]]
        out[prefix + "overall"] = calibrated_fields(results[-1], 0)
        out[prefix + "test_method"] = results[-1].method
        out["test_warnings"] += [w for w in logrank_test.warnings_for(
            named_groups(first, names), law, logrank_test.with_group_names(results, names), rel.cost.epsilon, mech,
            general=not debiased)
            if w not in out["test_warnings"]]
    return out


def _finite(v: float) -> float | None:
    return v if math.isfinite(v) else None


def calibrated_fields(r: logrank_test.CalibratedTest, t: int) -> dict[str, Any]:
    """One test's numbers in one trial (``p_value`` is the calibrated p-value)."""
    p = _finite(float(r.p_value[t]))
    return {"statistic": _finite(float(r.statistic[t])), "p_value": p, "p_value_calibrated": p,
            "statistic_ignoring_noise": _finite(float(r.statistic_ignoring_noise[t])),
            "chi2_tail_ignoring_noise": _finite(float(r.chi2_tail_ignoring_noise[t])),
            "critical_value_95": _finite(float(r.critical_value[t])), "dof": r.dof_of(t), "null_draws": r.null_draws,
            "test_method": r.method}
