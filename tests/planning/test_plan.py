"""The planner: tighter targets need more epsilon, a planned epsilon delivers on fresh cohorts, the JSON's shape."""

from __future__ import annotations

import numpy as np
import pytest

from dpsurv_core.planning import Study, Survival, make_plan, parse_target
from dpsurv_core.planning.evaluate import CurveProfile
from dpsurv_core.planning.search import candidates, round_up, summarise

STUDY = Study((500, 500), 1825.0, (0.0, 1825.0, 20), 0.3, Survival.exponential(730.0))
CACHE: dict = {}  # profiles shared by the tests of this module (the same declaration and seed)


def plan(*specs: str, mechanism: str = "laplace-counts", **kw) -> dict:
    kw.setdefault("cohorts", 8)
    kw.setdefault("power_cohorts", 60)
    return make_plan(STUDY, [parse_target(s) for s in specs], [mechanism], cache=CACHE, **kw)


def test_a_tighter_target_needs_a_larger_epsilon():
    loose, tight = plan("survival:365:0.055"), plan("survival:365:0.045")
    assert loose["reachable"] and tight["reachable"]
    assert 0.05 <= loose["epsilon"] < tight["epsilon"] <= 10
    # each meets its target where it is planned, the tighter one only at the larger epsilon
    assert loose["achieved"]["survival:365:0.055"]["median"] <= 0.055
    assert tight["achieved"]["survival:365:0.045"]["median"] <= 0.045


def test_a_planned_epsilon_meets_its_target_on_fresh_cohorts():
    got = plan("rmst:1825:70")
    eps = got["epsilon"]
    fresh = CurveProfile(STUDY, "laplace-counts", 40, seed=12345)  # other cohorts, other noise
    target = parse_target("rmst:1825:70")
    achieved = summarise(target, fresh.values([target], eps)[target.key], STUDY.groups, eps)
    assert abs(achieved.median / 70.0 - 1.0) < 0.12, (eps, achieved)


def test_power_tighter_needs_more_and_json_shape():
    low, high = plan("logrank-power:0.7:0.6"), plan("logrank-power:0.7:0.9")
    assert low["epsilon"] < high["epsilon"]
    line = high["targets"][0]
    assert line["target"] == "logrank-power:0.7:0.9" and line["epsilon"] == high["epsilon"]
    a = line["achieved"]
    assert a["p10"] <= a["median"] <= a["p90"] and a["median"] >= 0.9


def test_one_mechanism_json_is_the_contract():
    got = plan("survival:365:0.05", "median:150")
    assert isinstance(got["epsilon"], float) and set(got["achieved"]) == {"survival:365:0.05", "median:150"}
    assert got["epsilon"] == max(t["epsilon"] for t in got["targets"])
    for t in got["targets"]:
        assert {"target", "epsilon", "achieved"} <= set(t) and {"median", "p10", "p90"} <= set(t["achieved"])
    assert got["mechanism"] == "laplace-counts" and got["reads_data"] is False
    assert got["budget"]["total"] == got["epsilon"] and len(got["releases"]) == 1


def test_unreachable_target_says_so():
    got = plan("survival:365:0.01")
    assert got["epsilon"] == 10.0 and got["reachable"] is False and got["not_reachable"] == ["survival:365:0.01"]
    line = got["targets"][0]
    assert line["epsilon"] is None and "not reachable below epsilon 10" in line["note"]
    assert "even without noise" in line["note"] and line["without_noise"] > 0.01


def test_a_cap_below_the_need_misses_every_target_as_little_as_it_can():
    need = plan("survival:365:0.05")["epsilon"]
    short = plan("survival:365:0.05", cap=need / 2)
    assert short["budget"]["total"] <= need / 2 + 1e-9 and short["budget"]["meets_all"] is False
    assert short["budget"]["worst_margin"] < 0
    roomy = plan("survival:365:0.05", cap=need * 3)
    assert roomy["budget"]["meets_all"] and roomy["budget"]["worst_margin"] > 0
    assert need <= roomy["budget"]["total"] <= need * 3


def test_several_mechanisms_are_keyed_by_id():
    got = make_plan(STUDY, [parse_target("survival:365:0.05")], ["laplace-counts", "adaptive-km"], cohorts=6,
                    cache=CACHE)
    assert set(got["plans"]) == {"laplace-counts", "adaptive-km"}
    best = min(got["plans"].values(), key=lambda p: p["epsilon"])
    assert got["releases"][0]["mechanism"] == best["mechanism"] and got["epsilon"] == best["epsilon"]


def test_rounding_and_candidates():
    assert round_up(0.8712) == 0.88 and round_up(1.01) == 1.1 and round_up(12.1) == 13
    c = candidates(0.75, 1.0)
    assert c[0] == 0.76 and c[-1] == 1.0 and all(a < b for a, b in zip(c, c[1:]))


def test_summary_takes_the_worst_group():
    t = parse_target("survival:365:0.05")
    values = np.array([[0.04, 0.06], [0.05, 0.07], [0.045, 0.065]])
    a = summarise(t, values, ("A", "B"), 1.0)
    assert a.group == "B" and a.median == pytest.approx(0.065) and not a.met


def test_parallel_search_gives_the_same_plan():
    specs = [parse_target(s) for s in ("survival:365:0.06", "logrank-power:0.7:0.7")]
    one = make_plan(STUDY, specs, ["laplace-counts"], cohorts=6, power_cohorts=60, jobs=1)
    two = make_plan(STUDY, specs, ["laplace-counts"], cohorts=6, power_cohorts=60, jobs=2)
    assert [t["epsilon"] for t in one["targets"]] == [t["epsilon"] for t in two["targets"]]
    assert one["achieved"] == two["achieved"] and one["epsilon"] == two["epsilon"]
