"""Plans from kept simulations (the app keeps one cache per declaration): the same answer as a fresh plan, and a
changed goal judged on numbers already released and read, with no new release."""

from __future__ import annotations

from typing import Any

import pytest

from dpsurv_core.planning import Study, Survival, evaluate, make_plan, parse_target
from dpsurv_core.planning.plan import kept_releases, prefill

STUDY = Study((150, 150), 1825.0, (0.0, 1825.0, 12), 0.2, Survival.exponential(730.0))
FIRST = ("survival:365:0.1", "median:300", "logrank-power:0.6:0.8")
CHANGED = ("survival:365:0.085", "median:260", "logrank-power:0.6:0.7")


def plan(specs: tuple[str, ...], cache: dict | None, **kw: Any) -> dict:
    out = make_plan(STUDY, [parse_target(s) for s in specs], ["laplace-counts"], cohorts=5, power_cohorts=60,
                    cache=cache, **kw)
    out.pop("seconds")
    return out


@pytest.fixture()
def counted(monkeypatch) -> dict[str, int]:
    """Calls of the profiles' release-and-read step (``_evaluate``), of every class."""
    calls = {"evaluate": 0}
    for cls in evaluate.PROFILES.values():
        def wrapped(self, targets, eps, _orig=cls._evaluate):
            calls["evaluate"] += 1
            return _orig(self, targets, eps)
        monkeypatch.setattr(cls, "_evaluate", wrapped)
    return calls


def test_kept_and_prefilled_simulations_give_the_fresh_answer(counted):
    cache: dict = {}
    assert plan(FIRST, cache) == plan(FIRST, None)
    prefill(STUDY, [parse_target(s) for s in FIRST], ["laplace-counts"], 5, cache=cache, power_cohorts=60)
    releases, evaluations = kept_releases(cache), counted["evaluate"]
    assert prefill(STUDY, [parse_target(s) for s in FIRST], ["laplace-counts"], 5, cache=cache,
                   power_cohorts=60) == 0  # every epsilon already there
    kept = plan(CHANGED, cache)
    # new goals: read from the numbers kept, nothing released or read again ...
    assert kept_releases(cache) == releases and counted["evaluate"] == evaluations
    # ... and the answer is exactly a fresh plan's, whatever else the kept profiles hold (the search steers by the
    # epsilons it reads itself)
    assert kept == plan(CHANGED, None)
    assert kept["epsilon"] != plan(FIRST, cache)["epsilon"]


def test_a_budget_split_reads_its_margins_from_kept_readings(counted):
    cache: dict = {}
    specs = ("survival:365:0.1", "median:300")
    prefill(STUDY, [parse_target(s) for s in specs], ["laplace-counts"], 5, cache=cache)
    evaluations = counted["evaluate"]
    capped = plan(specs, cache, cap=3.0)
    assert counted["evaluate"] == evaluations  # the margins' goals are new, the readings are not
    assert capped == plan(specs, None, cap=3.0)


def test_the_filling_in_starts_nearest_the_planned_epsilons(monkeypatch):
    order: list[float] = []
    profile = evaluate.PROFILES["curves"]

    def recorded(self, targets, eps, _orig=profile._evaluate):
        order.append(eps)
        return _orig(self, targets, eps)

    monkeypatch.setattr(profile, "_evaluate", recorded)
    prefill(STUDY, [parse_target("survival:365:0.1")], ["laplace-counts"], 5, cache={}, around=[0.75])
    assert order[:3] == [0.75, 1.0, 0.5] and order[-1] == float("inf") and len(order) == 16


def test_the_filling_in_holds_the_lock_for_one_release_at_a_time():
    held: list[bool] = []

    class Lock:
        """Records each hold; a plan of another session could run between two."""

        def __enter__(self) -> None:
            held.append(True)

        def __exit__(self, *exc: object) -> None:
            return None

    done = prefill(STUDY, [parse_target("median:300")], ["laplace-counts"], 5, cache={}, lock=Lock())
    assert done == 16 and len(held) == 1 + done  # the profiles found, then each release apart
