"""What keeps a plan quick, counted: the declaration's cohorts are simulated once per scenario (not once per epsilon
released), and laplace-counts' simulated releases pool their running sums without one SciPy call per row (that
pooling was most of a simulated curve release)."""

from __future__ import annotations

import functools

import numpy as np

from dpsurv_core.planning import Study, Survival, make_plan, parse_target
from dpsurv_core.planning import study as study_module
from dpsurv_core.planning.plan import kept_releases, prefill

STUDY = Study((150, 150), 1825.0, (0.0, 1825.0, 12), 0.2, Survival.exponential(730.0))
TARGETS = [parse_target(s) for s in ("survival:365:0.1", "logrank-power:0.6:0.8")]


def test_cohorts_are_simulated_once_per_scenario_and_pooled_without_scipy(monkeypatch):
    import scipy.optimize

    simulated: list[tuple[int, float]] = []
    real = study_module._simulate.__wrapped__

    def spy(study: Study, count: int, seed: int, hazard_ratio: float) -> study_module.Cohorts:
        simulated.append((count, hazard_ratio))
        return real(study, count, seed, hazard_ratio)

    monkeypatch.setattr(study_module, "_simulate", functools.lru_cache(maxsize=32)(spy))
    pooled = []
    isotonic = scipy.optimize.isotonic_regression
    monkeypatch.setattr(scipy.optimize, "isotonic_regression", lambda *a, **k: pooled.append(1) or isotonic(*a, **k))

    cache: dict = {}
    plan = make_plan(STUDY, TARGETS, ["laplace-counts"], cohorts=5, power_cohorts=60, cache=cache)
    prefill(STUDY, TARGETS, ["laplace-counts"], 5, cache=cache, power_cohorts=60)
    released = plan["simulation"]["epsilons_released"]
    assert all(len(eps) >= 2 for eps in released.values()) and kept_releases(cache) > 20  # many epsilons each
    assert sorted(simulated) == [(5, 1.0), (60, 0.6)]  # the curves' cohorts and the power scenario's, once each
    assert pooled == []
    assert np.isfinite(plan["epsilon"])
