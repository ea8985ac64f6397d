"""The ``km`` and ``logrank`` commands: JSON shape and values, the papers' numbers through the CLI,
vectorised repeats, and bad input (exit 2 with one ``error:`` line)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from lifelines import KaplanMeierFitter
from lifelines.utils import median_survival_times
from scipy.special import chdtrc

from dpsurv_core.data.cohort import load_bundled
from tests.cli_run import fails, run

LUNG = ["--data", "lung"]




def test_km_laplace_counts_shape(capsys):
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
            "--grid", "0:1100:20", "--repeat", "3", "--seed", "1")
    assert o["mechanism"] == "laplace-counts" and o["epsilon_spent"] == 1.0
    assert o["protects"] == "the subject" and o["neighbouring"] == "add/remove one subject"
    assert o["parameters"]["scale"] == 2.0 and "simulation" in o["noise"]
    assert len(o["curves"]) == 6 and {c["group"] for c in o["curves"]} == {"1", "2"}
    for c in o["curves"]:
        assert c["time"] == [55.0 * (i + 1) for i in range(20)]
        assert len(c["survival"]) == len(c["at_risk"]) == len(c["events"]) == 20
        # no interval where S = 0 (R's NA): null there
        assert all(lo <= s <= up for lo, s, up in zip(c["lower"], c["survival"], c["upper"]) if lo is not None)
        assert all(s == 0 for lo, s in zip(c["lower"], c["survival"]) if lo is None)
        assert all(a >= b for a, b in zip(c["survival"], c["survival"][1:]))
        assert c["median"] is None or 0 < c["median"] <= 1100
    assert not any(d["parameter"] == "groups" for d in o["disclosures"])  # lung's sex codes are documented
    again = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
                "--grid", "0:1100:20", "--repeat", "3", "--seed", "1")
    assert again["curves"] == o["curves"]


@pytest.mark.parametrize("mechanism", ["nonprivate", "laplace-counts", "time-indexed"])
def test_km_without_noise_equals_lifelines(capsys, mechanism):
    o = run(capsys, "km", *LUNG, "--mechanism", mechanism, "--epsilon", "inf", "--grid", "event-times",
            "--conf-type", "log-log")
    c = load_bundled("lung")
    kmf = KaplanMeierFitter().fit(c.time, c.event)
    (curve,) = o["curves"]
    np.testing.assert_allclose(curve["survival"], kmf.survival_function_at_times(curve["time"]).to_numpy(), atol=1e-12)
    assert curve["median"] == kmf.median_survival_time_ == 310
    assert any(not d["dp"] and "event time" in d["message"] for d in o["disclosures"])
    # time-indexed too, with its default clipping and smoothing: without noise they have nothing to reduce
    ci = median_survival_times(kmf.confidence_interval_).to_numpy()[0]  # log-log band: (284, 361)
    assert curve["at_risk"][0] == 228 and (curve["median_lower"], curve["median_upper"]) == tuple(ci)


def test_km_time_indexed_accounting(capsys):
    o = run(capsys, "km", *LUNG, "--mechanism", "time-indexed", "--grid", "0:1100:20", "--seed", "2")
    p = o["parameters"]
    assert o["epsilon_spent"] == 1.0 and math.isclose(p["base_epsilon"], 1 / 125)
    assert (p["alpha"], p["tau_start"], p["tau_end"], p["window"], p["edge_mode"]) == (0.5, 1.0, 0.6, 5, "mean")
    o = run(capsys, "km", *LUNG, "--mechanism", "time-indexed", "--grid", "0:1100:20", "--base-epsilon", "0.1",
            "--alpha", "0.25", "--window", "3", "--edge-mode", "as-published", "--tau-start", "0.95",
            "--tau-end", "0.5", "--seed", "2")
    assert o["parameters"]["accounting"] == "as published"
    assert math.isclose(o["epsilon_spent"], 0.1 * 20 * (1 + 0.25 * 21 / 2))
    assert max(o["curves"][0]["survival"]) <= 0.95


def test_km_rrr_raw_and_debiased(capsys):
    o = run(capsys, "km", "--data", "kidney", "--group", "disease", "--mechanism", "rrr", "--epsilon", "1",
            "--grid", "0:600:12", "--repeat", "2", "--seed", "3")
    assert o["protects"] == "the group label only" and "label" in o["neighbouring"]
    assert math.isclose(o["parameters"]["keep_probability"], (math.e - 1) / (math.e - 1 + 4))
    assert any("group label only" in d["message"] and not d["dp"] for d in o["disclosures"])
    raw = [c for c in o["curves"] if not c["debiased"]]
    deb = [c for c in o["curves"] if c["debiased"]]
    assert len(raw) == len(deb) == 8


@pytest.mark.parametrize("name,types", [("pbc", {"transplant", "death"}), ("transplant", {"ltx", "death"})])
def test_km_cumulative_incidence(capsys, name, types):
    o = run(capsys, "km", "--data", name, "--mechanism", "laplace-counts", "--epsilon", "2", "--horizon", "4000",
            "--estimand", "cumulative-incidence", "--seed", "1")
    (c,) = o["curves"]
    assert types <= set(c["cumulative_incidence"])
    total = np.sum([v for v in c["cumulative_incidence"].values()], axis=0) + np.array(c["survival"])
    np.testing.assert_allclose(total, 1.0, atol=1e-9)


def test_km_cumulative_hazard(capsys):
    o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "0:1000:10", "--estimand", "cumulative-hazard")
    h = o["curves"][0]["cumulative_hazard"]
    assert len(h) == 10 and all(b >= a for a, b in zip(h, h[1:])) and h[0] > 0


def test_logrank_nonprivate_reproduces_the_papers(capsys):
    o = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "nonprivate")
    assert round(o["tests"][0]["statistic"], 1) == 10.3 and round(o["overall"][0]["statistic"], 1) == 10.3
    o = run(capsys, "logrank", "--data", "kidney", "--group", "disease", "--mechanism", "nonprivate")
    pairs = {(t["group_a"], t["group_b"]): (round(t["statistic"], 2), round(t["p_value"], 2)) for t in o["tests"]}
    assert pairs[("AN", "Other")] == (1.69, 0.19) and o["overall"][0]["dof"] == 3
    o = run(capsys, "logrank", "--data", "stanford2", "--group", "age:median", "--mechanism", "nonprivate")
    assert round(o["overall"][0]["statistic"], 1) == 6.6
    assert any(not d["dp"] and "median" in d["message"] for d in o["disclosures"])
    o2 = run(capsys, "logrank", "--data", "stanford2", "--group", "age:44", "--mechanism", "nonprivate")
    assert o2["overall"][0]["statistic"] == o["overall"][0]["statistic"]
    assert not any(d["parameter"] == "groups" for d in o2["disclosures"])


def test_logrank_repeats_are_vectorised(capsys):
    """3000 repeats in one call (the speed target is in benchmarks/timings.py)."""
    o = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
            "--grid", "0:1100:20", "--repeat", "3000", "--seed", "5")
    assert len(o["tests"]) == len(o["overall"]) == 3000
    stats = np.array([t["statistic_ignoring_noise"] for t in o["tests"]])
    assert 5 < np.median(stats) < 15  # around the non-private 10.3 on a 20-bin grid
    adjusted = np.array([t["statistic"] for t in o["tests"]])  # the noise's variance in its denominator
    assert np.all(adjusted <= stats + 1e-9) and np.median(adjusted) < 0.8 * np.median(stats)
    o = run(capsys, "logrank", "--data", "kidney", "--group", "disease", "--mechanism", "rrr", "--epsilon", "3",
            "--repeat", "50", "--seed", "5")
    assert len(o["tests"]) == 6 * 50 and o["protects"] == "the group label only"
    # the tests on the de-biased counts too, as the Group comparison page and the release's record show them
    assert len(o["debiased_tests"]) == 6 * 50 and len(o["debiased_overall"]) == 50
    assert o["debiased_test_method"].startswith("Monte Carlo") and "calibration is needed" in o["test_method"]


@pytest.mark.parametrize("argv,words", [
    (["logrank", *LUNG, "--group", "sex", "--mechanism", "time-indexed"], "counts"),
    (["logrank", *LUNG, "--mechanism", "laplace-counts"], "--group"),
    (["km", *LUNG, "--epsilon", "-1"], "epsilon"),
    (["km", *LUNG, "--epsilon", "abc"], "epsilon"),
    (["km", *LUNG, "--grid", "0:1100"], "START:STOP:BINS"),
    (["km", *LUNG, "--group", "nosuch"], "nosuch"),
    (["km", *LUNG, "--group", "age:abc"], "median"),
    (["km", *LUNG, "--group", "nosuch:median"], "nosuch"),
    (["km", "--data", "nosuch"], "nosuch"),
    (["km", *LUNG, "--mechanism", "time-indexed", "--window", "0"], "window"),
    (["km", *LUNG, "--mechanism", "time-indexed", "--tau-start", "2"], "tau-start"),
    (["km", *LUNG, "--mechanism", "time-indexed", "--tau-start", "0.5", "--tau-end", "0.7"], "tau"),
    (["km", *LUNG, "--mechanism", "time-indexed", "--estimand", "cumulative-incidence", "--data", "pbc",
      "--horizon", "4800"], "laplace-counts"),
    (["km", *LUNG, "--estimand", "cumulative-incidence"], "competing"),
    (["km", *LUNG, "--mechanism", "rrr"], "rrr randomizes the group label: choose a group column with two or more groups."),
    (["km", *LUNG, "--mechanism", "nosuch"], "nosuch"),
])
def test_bad_input_exits_2_with_one_error_line(capsys, argv, words):
    assert words in fails(capsys, *argv)


def test_numeric_group_split():
    from dpsurv_core.data import grouping
    from dpsurv_core.errors import DataError, ParameterError

    assert grouping.parse("sex") is None and grouping.parse(None) is None
    assert grouping.parse("age:median") == grouping.NumericSplit("age", None)
    assert grouping.parse("ph.karno:75.5") == grouping.NumericSplit("ph.karno", 75.5)
    for bad in (":60", "age:abc", "age:inf"):
        with pytest.raises(ParameterError):
            grouping.parse(bad)
    labels, cats, disclosures = grouping.split_values([1.0, 2.0, None, 3.0, 4.0], grouping.parse("x:median"))
    assert cats == ("x <= 2.5", "x > 2.5", "x missing")
    assert labels.tolist() == ["x <= 2.5", "x <= 2.5", "x missing", "x > 2.5", "x > 2.5"]
    assert [d.dp for d in disclosures] == [False, True]
    labels, cats, disclosures = grouping.split_values([1, 2, 3], grouping.parse("x:2"))
    assert labels.tolist() == ["x <= 2", "x <= 2", "x > 2"] and disclosures == []
    # the median is taken over subjects, not rows
    _, cats, _ = grouping.split_values([1, 1, 1, 5, 9], grouping.parse("x:median"), subject=np.array([0, 0, 0, 1, 2]))
    assert cats[0] == "x <= 5"
    with pytest.raises(DataError):
        grouping.split_values(["a", "b"], grouping.parse("x:1"))


def test_repeated_simulations_state_what_publishing_all_would_cost():
    import json as _json

    from tests.cli_run import completed

    r = completed("km", "--data", "lung", "--epsilon", "0.5", "--repeat", "4", "--seed", "1", "--json")
    out = _json.loads(r.stdout)
    assert out["epsilon_per_release"] == 0.5 and out["epsilon_if_all_published"] == 2.0
    assert "not for publication" in out["noise"]


def _run(*args):
    from tests.cli_run import completed

    return completed(*args, "--json")


def test_missing_group_labels_are_left_out_as_in_r_and_the_json_says_so():
    import json as _json

    r = _run("logrank", "--data", "lung", "--group", "ph.ecog", "--mechanism", "nonprivate", "--grid", "event-times")
    out = _json.loads(r.stdout)
    overall = out["overall"][0]
    assert overall["dof"] == 3 and abs(overall["statistic"] - 21.96) < 0.01  # R: survdiff(... ~ ph.ecog, lung)
    assert any("left out" in w for w in out["warnings"])


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["km", "--data", "lung", "--grid", "0:1100:10000000"], "more than the 10,000"),
    (["km", "--data", "lung", "--horizon", "inf"], "finite"),
    (["km", "--data", "lung", "--seed", "-1"], "seed"),
    (["km", "--data", "lung", "--epsilon", "1e-9", "--horizon", "1100"], "overflow"),
    (["km", "--data", "lung", "--repeat", "100000", "--seed", "1", "--grid", "0:1100:1000"], "too large"),
    (["weibull", "--data", "lung", "--mechanism", "saa", "--blocks", "1000", "--horizon", "1100",
      "--censoring", "0.3"], "blocks"),
    (["report", "--data", "lung", "--epsilon", "inf", "--out", "/tmp/x.html"], "finite --epsilon"),
    (["report", "--data", "lung", "--horizon", "1100", "--out", "/proc/x.html"], "cannot be written"),
])
def test_more_bad_input_is_one_sentence(args, message):
    r = _run(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]


def test_logrank_p_value_is_calibrated_for_the_noise(capsys):
    """Private p-values come from the simulated null with the noise; the chi-square tail that ignores the noise
    is kept under a name that says so. Without noise both equal the exact binned test."""
    o = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
            "--grid", "0:1100:20", "--seed", "3", "--null-draws", "199")
    t = o["tests"][0]
    assert o["null_draws"] == t["null_draws"] == 199 and "Monte Carlo" in o["test_method"]
    assert o["interval_includes_noise"] is True and isinstance(o["warnings"], list)
    assert t["p_value"] == t["p_value_calibrated"] and t["p_value"] >= 1 / 200
    assert "noise-adjusted" in o["test_method"] and t["statistic"] < t["statistic_ignoring_noise"]
    assert 2.5 < t["critical_value_95"] < 6.5  # the adjusted statistic's 95% point on this seeded release
    assert t["chi2_tail_ignoring_noise"] == pytest.approx(float(chdtrc(1, t["statistic_ignoring_noise"])))
    assert t["p_value"] > t["chi2_tail_ignoring_noise"] or t["statistic_ignoring_noise"] < 3.84
    exact = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "inf",
                "--grid", "0:1100:20", "--seed", "3")
    np_ = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "nonprivate")
    e = exact["tests"][0]
    assert e["null_draws"] == 0 and e["p_value"] == e["chi2_tail_ignoring_noise"]
    assert np_["tests"][0]["p_value"] == pytest.approx(0.0013, abs=1e-4)  # lifelines / survdiff on the event times
    assert np_["warnings"] == [] and "no noise" in np_["test_method"]
    weak = run(capsys, "logrank", "--data", "kidney", "--group", "disease", "--mechanism", "laplace-counts",
               "--epsilon", "0.5", "--seed", "1", "--null-draws", "99", "--categories", "disease:AN,GN,Other,PKD")
    assert any(w.startswith("Weak test at epsilon 0.5") for w in weak["warnings"])
    assert any(w.startswith("Up to 2 rows per patient") for w in weak["warnings"])
    # the three pairs with a p-value (the PKD pairs have none), each at 5%
    assert any(w.startswith("3 pairwise tests, each at the 5% level") and "0.05 / 3 = 0.017 (Bonferroni)" in w
               for w in weak["warnings"])
    # released counts that leave a pair no variance leave its test undefined: no statistic, no p-value, one sentence
    undefined = [t for t in weak["tests"] if t["p_value"] is None]
    assert undefined and all(t["statistic"] is None for t in undefined)
    assert any(w.startswith("No p-value for") and "Polycystic" in w for w in weak["warnings"])


def test_a_private_log_rank_preview_shows_the_non_private_p_value_beside_it(capsys):
    """A seeded run (a preview, for the data holder) prints R's survdiff p-value beside the calibrated one; the
    number at risk says it is read from noisy counts; no sentence about bands a log-rank output does not have."""
    o = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--seed", "1")
    test = o["tests"][0]
    assert test["p_value_nonprivate"] == pytest.approx(0.001311, abs=2e-6)  # survdiff on lung by sex
    assert o["overall"][0]["p_value_nonprivate"] == pytest.approx(0.001311, abs=2e-6)
    assert test["p_value_calibrated"] != test["p_value_nonprivate"] and "preview only" in o["p_value_note"]
    assert "estimates without an interval" in o["number_at_risk"]["definition"]
    assert not any("band" in n.lower() for n in o["notes"])
    exact = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "nonprivate")
    assert "p_value_nonprivate" not in exact["tests"][0] and "estimates without" not in exact["number_at_risk"]["definition"]
    assert exact["neighbouring"] == "none"


def test_rrr_log_rank_release_says_its_p_values_carry_the_label_noise(capsys):
    """rrr: a private release whose raw tests keep their level without calibration; the JSON says the p-values
    include the noise and the note says why no calibration is needed (not 'calibrated')."""
    o = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--seed", "4")
    assert o["interval_includes_noise"] is True
    assert "no calibration needed" in o["p_value_note"] and "calibrated by" not in o["p_value_note"]
    o = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
            "--seed", "4")
    assert o["interval_includes_noise"] is True and "calibrated by simulating" in o["p_value_note"]


def test_log_rank_degrees_of_freedom_follow_r_when_a_group_has_no_expected_events(tmp_path):
    """R's survdiff drops a group with no expected events from the degrees of freedom: a third group censored before
    the first event leaves chi-square 8.6335 on 1 df (p 0.00330), not 2 df (p 0.0133); its pairs are chi-square 0 on
    0 df, p = 1, as R's survdiff gives them."""
    import json as _json

    rows = ["time,status,grp"] + [f"{t},{s},a" for t, s in ((1, 1), (2, 0), (3, 1), (4, 1), (5, 1))] \
        + [f"{t},{s},b" for t, s in ((6, 0), (7, 1), (8, 1), (9, 0), (10, 0))] \
        + [f"{t},0,c" for t in (0.5, 0.6, 0.7, 0.8, 0.9)]
    path = tmp_path / "zero_expected.csv"
    path.write_text("\n".join(rows) + "\n")
    r = _run("logrank", "--data", str(path), "--time", "time", "--event", "status", "--group", "grp",
             "--mechanism", "nonprivate")
    out = _json.loads(r.stdout)
    overall = out["overall"][0]
    assert overall["dof"] == 1
    assert abs(overall["statistic"] - 8.6335) < 1e-3 and abs(overall["p_value"] - 0.0033004) < 1e-6
    pairs = {(t["group_a"], t["group_b"]): t for t in out["tests"]}
    assert pairs[("a", "b")]["dof"] == 1 and abs(pairs[("a", "b")]["p_value"] - 0.0033004) < 1e-6
    for pair in (("a", "c"), ("b", "c")):
        assert pairs[pair]["dof"] == 0 and pairs[pair]["statistic"] == 0.0 and pairs[pair]["p_value"] == 1.0


def test_rrr_keep_probability_does_not_overflow_at_large_epsilon():
    from dpsurv_core.curves.rrr import keep_probability

    assert keep_probability(800.0, 2) == 1.0 and keep_probability(1e6, 3) == 1.0
    assert math.isclose(keep_probability(700.0, 2), 1.0 / (1.0 + 2.0 * math.exp(-700.0)))


def test_a_test_with_no_degrees_of_freedom_has_no_statistic_and_each_trial_its_own_dof(tmp_path):
    """lung with two groups of 3 beside 222: small-cell suppression leaves the small groups no events, so the overall
    test has no degree of freedom: no statistic and no p (a pseudo-inverse had given 0 and p = 1); under noise each
    simulated trial's JSON names the degrees of freedom its naive chi-square tail used."""
    import json as _json

    from scipy.special import chdtrc as _chdtrc

    from dpsurv_core.data import datasets

    t = datasets.load("lung")
    t["g3"] = 1
    t.loc[[0, 1, 2], "g3"] = 2
    t.loc[[3, 4, 5], "g3"] = 3
    path = tmp_path / "tiny3.csv"
    t.to_csv(path, index=False)
    r = _run("logrank", "--data", str(path), "--time", "time", "--event", "status", "--group", "g3",
             "--mechanism", "suppress-small-cells", "--grid", "0:1100:20", "--categories", "g3:1,2,3")
    overall = _json.loads(r.stdout)["overall"][0]
    assert overall["dof"] == 0 and overall["statistic"] is None and overall["p_value"] is None
    r = _run("logrank", "--data", str(path), "--time", "time", "--event", "status", "--group", "g3", "--mechanism",
             "laplace-counts", "--epsilon", "0.5", "--seed", "1", "--repeat", "30")
    trials = [x for x in _json.loads(r.stdout)["overall"] if x["chi2_tail_ignoring_noise"] is not None]
    assert len({x["dof"] for x in trials}) > 1  # the trials differ
    for x in trials:
        assert x["chi2_tail_ignoring_noise"] == pytest.approx(_chdtrc(x["dof"], x["statistic_ignoring_noise"]))
