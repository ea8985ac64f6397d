"""``km`` with noise off against R survival (Therneau 2024): conf.type, print.survfit's median and its CI, and
landmarks at the times asked."""

from __future__ import annotations

import json

import numpy as np
import pytest
from lifelines import KaplanMeierFitter

from dpsurv_core.cli import main
from dpsurv_core.curves.kaplan_meier import confidence_limits
from dpsurv_core.data.cohort import load_bundled

LUNG = ["--data", "lung", "--time", "time", "--event", "status"]


def run(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_lung_median_as_r_prints(capsys):
    """print(survfit(Surv(time, status) ~ 1, lung)): median 310, 0.95 LCL 285, UCL 363 (conf.type log, R's default);
    by sex: 270 (212, 310) and 426 (348, 550)."""
    o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "event-times")
    assert o["conf_type"] == "log" and o["interval_includes_noise"] is False
    assert "Greenwood" in o["interval_method"] and "not include" in o["interval_method"]
    (c,) = o["curves"]
    assert (c["median"], c["median_lower"], c["median_upper"]) == (310, 285, 363)
    assert [q["probability"] for q in c["quantiles"]] == [0.25, 0.5, 0.75]
    assert c["quantiles"][1]["time"] == 310
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--grid", "event-times")
    got = {c["group"]: (c["median"], c["median_lower"], c["median_upper"]) for c in o["curves"]}
    assert got == {"1": (270, 212, 310), "2": (426, 348, 550)}


def test_lung_bands_follow_the_type(capsys):
    """Each type's band from lifelines' survival and Greenwood variance; log-log equals lifelines' own band."""
    c = load_bundled("lung")
    kmf = KaplanMeierFitter().fit(c.time, c.event)
    for kind in ("plain", "log", "log-log", "logit", "arcsin"):
        o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "event-times", "--conf-type", kind)
        (curve,) = o["curves"]
        s = np.array(curve["survival"])
        d, r = np.array(curve["events"], float), np.array(curve["at_risk"], float)
        g = np.cumsum(np.where(r > d, d / (r * (r - d)), 0.0))
        lo, up = confidence_limits(s, g, kind)
        got_lo = np.array([np.nan if v is None else v for v in curve["lower"]])
        got_up = np.array([np.nan if v is None else v for v in curve["upper"]])
        np.testing.assert_allclose(got_lo, lo, rtol=1e-10, equal_nan=True)
        np.testing.assert_allclose(got_up, up, rtol=1e-10, equal_nan=True)
        if kind == "log-log":
            ci = kmf.confidence_interval_survival_function_.loc[curve["time"]].to_numpy()
            np.testing.assert_allclose(got_lo, ci[:, 0], atol=1e-10)


def test_landmarks_on_event_times_are_exact(capsys):
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--grid", "event-times",
            "--landmarks", "365,730")
    c = load_bundled("lung", group="sex")
    rows = o["landmarks"]
    assert len(rows) == 4 and {(r["group"], r["time_requested"]) for r in rows} == {
        (g, t) for g in ("1", "2") for t in (365.0, 730.0)}
    for r in rows:
        assert r["time_used"] == r["time_requested"] and r["trial"] == 0
        sel = c.group == r["group"]
        kmf = KaplanMeierFitter().fit(c.time[sel], c.event[sel])
        assert r["survival"] == pytest.approx(float(kmf.survival_function_at_times(r["time_requested"]).iloc[0]),
                                              abs=1e-12)
        assert r["lower"] <= r["survival"] <= r["upper"]


def test_landmarks_on_a_public_grid(capsys):
    """Grid 0:1100:20 has points 55, 110, ...: a private curve is read at 330 for 365 and at 0 for 10; without noise
    the curve at every event time is kept, so each time is read where it was asked, as R's summary(fit, times = t)
    (lifelines agrees: S(365) = 0.4092, S(10) = 1 - 1/228)."""
    o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "0:1100:20", "--landmarks", "10,330,365")
    by_time = {r["time_requested"]: r for r in o["landmarks"]}
    assert [by_time[t]["time_used"] for t in (10.0, 330.0, 365.0)] == [10.0, 330.0, 365.0]
    kmf = KaplanMeierFitter().fit(load_bundled("lung").time, load_bundled("lung").event)
    for t in (10.0, 330.0, 365.0):
        assert by_time[t]["survival"] == pytest.approx(float(kmf.predict(t)), abs=1e-12)
    assert by_time[10.0]["survival"] == pytest.approx(1 - 1 / 228)
    p = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "2", "--grid", "0:1100:20",
            "--landmarks", "10,330,365")
    (curve,) = p["curves"]
    by_time = {r["time_requested"]: r for r in p["landmarks"]}
    assert by_time[330.0]["time_used"] == 330.0 and by_time[365.0]["time_used"] == 330.0
    k = curve["time"].index(330.0)
    for t in (330.0, 365.0):
        assert (by_time[t]["survival"], by_time[t]["lower"], by_time[t]["upper"]) == (
            curve["survival"][k], curve["lower"][k], curve["upper"][k])
    assert by_time[10.0]["time_used"] == 0.0 and by_time[10.0]["survival"] == 1.0
    assert by_time[10.0]["lower"] == by_time[10.0]["upper"] == 1.0  # log: [1, 1] at S = 1


def test_landmarks_repeat_and_log_log_at_start(capsys):
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20",
            "--repeat", "2", "--seed", "3", "--landmarks", "10,500", "--conf-type", "log-log")
    assert o["conf_type"] == "log-log" and len(o["landmarks"]) == 4
    assert {r["trial"] for r in o["landmarks"]} == {0, 1}
    start = [r for r in o["landmarks"] if r["time_requested"] == 10.0]
    # read at time 0, before anybody's first time: R's summary gives S = 1 with [1, 1] there for every conf.type
    # (log-log is NA at S = 1 only from a curve's first time on)
    assert all(r["survival"] == 1.0 and r["lower"] == 1.0 and r["upper"] == 1.0 for r in start)


def test_bad_landmarks(capsys):
    assert main(["km", *LUNG, "--landmarks", "soon", "--json"]) == 2
    assert "not a list of times" in capsys.readouterr().err
    assert main(["km", *LUNG, "--landmarks", "-5", "--json"]) == 2
    assert "from 0 on" in capsys.readouterr().err


def test_a_landmark_at_zero_is_the_start(capsys):
    """R's summary(fit, times = 0): survival 1 with the interval [1, 1] (log type), and no 'before the grid' sentence."""
    for args in (["--mechanism", "nonprivate"], ["--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "2"]):
        o = run(capsys, "km", *LUNG, *args, "--landmarks", "0,365")
        start = o["landmarks"][0]
        assert (start["time_requested"], start["survival"], start["lower"], start["upper"]) == (0.0, 1.0, 1.0, 1.0)
        assert not any("before the first point" in w for w in o["warnings"])


def test_noise_aware_band_converted_with_its_total_variance():
    """A noise-aware release carries its total var(log S) (``interval_variance``); every conf.type is built from that
    total, and a curve without one keeps Greenwood's."""
    from dataclasses import replace

    from dpsurv_core.cli.km import conf_bands
    from dpsurv_core.curves.bootstrap import monotone_band
    from dpsurv_core.curves.kaplan_meier import SurvivalCurves, greenwood_bands

    s = np.array([[[1.0, 0.9, 0.7, 0.5, 0.3, 0.0]]])
    gw = np.array([[[0.0, 0.01, 0.03, 0.06, 0.1, 0.1]]])
    total = gw + np.array([[[0.0, 0.02, 0.02, 0.05, 0.05, 0.05]]])
    lo, up, lol, upl = greenwood_bands(s, gw)
    z = np.zeros_like(s)
    curves = SurvivalCurves(np.arange(1.0, 7.0), ("all",), s, lo, up, lol, upl, gw, z + 10, z, z, z, z[..., None, :],
                            ("event",))
    plain_gw = confidence_limits(s, gw, "log")
    np.testing.assert_allclose(conf_bands(curves, "log")[0], plain_gw[0], rtol=1e-12, equal_nan=True)
    noisy = replace(curves, interval_variance=total, interval_method="test")
    for kind in ("log", "log-log", "plain"):  # made non-increasing (log-log's lower limit at 0.9 dips below 0.7's)
        want_lo, want_up = monotone_band(*confidence_limits(s, total, kind))
        got_lo, got_up = conf_bands(noisy, kind)
        np.testing.assert_allclose(got_lo[..., 1:5], want_lo[..., 1:5], rtol=1e-9)
        np.testing.assert_allclose(got_up[..., 1:5], want_up[..., 1:5], rtol=1e-9)
    # where the noisy curve reached 0 the band is not [0, 0]: its upper limit carries the last one before
    got_lo, got_up = conf_bands(noisy, "log")
    assert got_lo[0, 0, 5] == 0 and got_up[0, 0, 5] == got_up[0, 0, 4] > 0


@pytest.mark.parametrize("argv", [["km", "--mechanism", "nonprivate"], ["km", "--mechanism", "laplace-counts", "--epsilon",
                                                                        "inf"],
                                  ["logrank", "--group", "sex", "--mechanism", "nonprivate"],
                                  ["logrank", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "inf"]])
def test_no_noise_is_labelled_not_private(capsys, argv):
    o = run(capsys, argv[0], *LUNG, *argv[1:], "--grid", "0:1100:20")
    assert o["guarantee"] == "no noise: not private" and o["cost"].startswith("no noise: not private")
    assert o["protects"] == "nothing (no noise: not private)" and o["neighbouring"] == "none"
    assert "subject" not in o["protects"] and "exact" != o["guarantee"]


def test_number_at_risk_is_r_convention_and_shared(capsys):
    """n.risk at t = subjects with time >= t (R's summary.survfit(times = t)), the same table in km and logrank."""
    c = load_bundled("lung", group="sex")
    km = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--grid", "0:1100:20")
    lr = run(capsys, "logrank", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--grid", "0:1100:20")
    table = km["number_at_risk"]
    assert table == lr["number_at_risk"] and "time >= t" in table["definition"]
    assert table["times"] == [110.0 * k for k in range(11)]
    for row in table["rows"]:
        times = c.time[c.group == row["group"]]
        assert row["at_risk"] == [float(np.sum(times >= t)) for t in table["times"]]
    assert [r["at_risk"][0] for r in table["rows"]] == [138.0, 90.0]


def test_number_at_risk_counts_rows_when_subjects_have_several(capsys):
    """kidney (two infection times per patient): R's n.risk counts rows with time >= t; the table was short by the
    events at t (62 against R's 64 at 12 days)."""
    c = load_bundled("kidney")
    o = run(capsys, "km", "--data", "kidney", "--mechanism", "nonprivate")
    (row,) = o["number_at_risk"]["rows"]
    assert row["at_risk"] == [float(np.sum(c.time >= t)) for t in o["number_at_risk"]["times"]]
    assert row["at_risk"][1:3] == [64.0, 55.0]


def test_number_at_risk_from_released_counts(capsys):
    """From counts (private releases) the table is the same step function read from the counts; with the noise
    switched off it differs from R's only by events exactly at t."""
    from dpsurv_core.curves.counts import count
    from dpsurv_core.curves.summary import at_risk_at, at_risk_exact
    from dpsurv_core.data.public import TimeGrid

    c = load_bundled("lung")
    grid = TimeGrid(np.linspace(0, 1100, 21))
    times = np.array([0.0, 55.0, 110.0, 300.0, 301.0, 1100.0])
    from_counts = at_risk_at(count(c, grid), times)[0]
    exact = at_risk_exact(c, ("all",), times)[0]
    at_t = np.array([np.sum((c.time == t) & c.event.astype(bool)) for t in times])
    on_edge = np.isin(times, grid.edges)
    np.testing.assert_array_equal(from_counts[on_edge] + at_t[on_edge], exact[on_edge])
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20",
            "--seed", "4", "--repeat", "2")
    assert "released binned counts" in o["number_at_risk"]["definition"] and len(o["number_at_risk"]["rows"]) == 2
    ti = run(capsys, "km", *LUNG, "--mechanism", "time-indexed", "--grid", "0:1100:20", "--seed", "4")
    assert ti["number_at_risk"] is None


@pytest.mark.parametrize("mechanism", ["laplace-counts", "adaptive-km", "rrr", "time-indexed", "random-round"])
def test_without_noise_medians_quartiles_and_landmarks_are_rs(capsys, mechanism):
    """Noise switched off on the 20-bin grid: the median, quartiles and their limits, and a landmark between grid
    points, are read at every event time as R's (median 310 days, 285 to 363 for the whole of lung; S(365) 0.409),
    not off the grid (330, 330 to 385; S(330)). Disclosure control has no epsilon: it stays on the grid."""
    exact = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--landmarks", "365,500")
    args = ["--epsilon", "inf"] if mechanism != "random-round" else ["--seed", "1"]
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", mechanism, *args, "--landmarks", "365,500")
    want = {(c["group"]): c for c in exact["curves"]}
    got = [c for c in o["curves"] if c.get("debiased", True)]
    assert len(got) == 2
    for c in got:
        keys = ("median", "median_lower", "median_upper", "quantiles")
        if mechanism == "random-round":
            assert c["median"] != want[c["group"]]["median"] or c["quantiles"] != want[c["group"]]["quantiles"]
        else:
            assert {k: c[k] for k in keys} == {k: want[c["group"]][k] for k in keys}
    if mechanism != "random-round":
        assert [(e["time_used"], e["survival"], e["lower"], e["upper"]) for e in o["landmarks"]] == \
            [(e["time_used"], e["survival"], e["lower"], e["upper"]) for e in exact["landmarks"]]
        assert [e["time_used"] for e in o["landmarks"]][:2] == [365.0, 500.0]


@pytest.mark.parametrize("mechanism", ["laplace-counts", "adaptive-km", "rrr"])
def test_without_noise_the_log_rank_test_is_rs_survdiff(capsys, mechanism):
    """leukemia by x on the 20-bin grid, noise switched off: chi-square 3.396 on the data's event times (R's survdiff,
    lifelines' logrank_test), as the non-private test, not the binned counts' 1.87 or 2.24."""
    from lifelines.statistics import logrank_test

    exact = run(capsys, "logrank", "--data", "leukemia", "--group", "x", "--mechanism", "nonprivate")
    o = run(capsys, "logrank", "--data", "leukemia", "--group", "x", "--mechanism", mechanism, "--epsilon", "inf")
    assert o["overall"][0]["statistic"] == pytest.approx(exact["overall"][0]["statistic"], rel=1e-12)
    assert o["tests"][0]["p_value"] == pytest.approx(exact["tests"][0]["p_value"], rel=1e-12)
    c = load_bundled("leukemia", group="x")
    a, b = (c.group == g for g in sorted(set(c.group)))
    want = logrank_test(c.time[a], c.time[b], c.event[a], c.event[b]).test_statistic
    assert o["overall"][0]["statistic"] == pytest.approx(want, rel=1e-9) and want == pytest.approx(3.396, abs=1e-3)


def test_number_at_risk_from_counts_is_whole_and_unknown_before_a_late_grid_start(capsys):
    """adaptive-km with almost no noise: its table is R's n.risk read at the merged bins (133, 80, 9 at 220, 330 and
    770 days), whole numbers, not the curve's derived counts that keep half a bin's censorings at risk (139.5, 85,
    9.5); a grid starting at 100 days bins everyone earlier into its first bin, so the counts cannot give the number
    at risk at 100 (null, not everyone)."""
    o = run(capsys, "km", *LUNG, "--mechanism", "adaptive-km", "--epsilon", "1000", "--seed", "1")
    table = o["number_at_risk"]
    (row,) = table["rows"]
    at = dict(zip(table["times"], row["at_risk"]))
    assert (at[220.0], at[330.0], at[770.0]) == (133.0, 80.0, 9.0)
    assert all(float(v).is_integer() for v in row["at_risk"])
    o = run(capsys, "logrank", *LUNG, "--group", "sex", "--grid", "100:1000:9", "--mechanism", "laplace-counts",
            "--epsilon", "1000", "--seed", "1")
    assert all(r["at_risk"][0] is None and r["at_risk"][1] is not None for r in o["number_at_risk"]["rows"])


def test_without_noise_a_landmark_past_a_groups_follow_up_is_said_to_be_carried_on(capsys):
    """Non-private lung by sex: group 2 is last followed at 965 days, so S at 1,000 days is the curve carried on (R's
    summary(fit, times = 1000) gives no row); 10 days is read at the time itself (no 'before the grid' sentence)."""
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--landmarks", "10,1000")
    (w,) = o["warnings"]
    assert w.startswith("Group Female is last followed at 965 days") and "1000 days" in w and "public grid" not in w
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "inf", "--landmarks", "10,1050")
    (w,) = o["warnings"]
    assert w.startswith("The data are last followed at 1022 days")


def test_without_noise_follow_up_ends_at_a_declared_horizon(capsys):
    """--horizon 500 on lung (data to 1,022 days), noise off: a landmark at 800 days carries the curve at the horizon
    (S = 0.293, not the 0.078 read past it), the RMST to 700 holds the curve flat after 500, and the sentences say
    follow-up ends at the horizon (not that the data end there)."""
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "inf", "--horizon", "500",
            "--landmarks", "300,800", "--rmst", "700")
    late = o["landmarks"][1]
    assert late["survival"] == pytest.approx(0.2933, abs=5e-4)
    assert any(w.startswith("Follow-up ends at the horizon (500 days)") for w in o["warnings"])
    assert any("runs past the horizon (500 days)" in w for w in o["warnings"])
    area = o["rmst"][0]["rmst"]
    exact = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--epsilon", "inf", "--horizon", "500",
                "--rmst", "500")["rmst"][0]["rmst"]
    assert area == pytest.approx(exact + 200 * late["survival"], rel=1e-9)  # flat after the horizon


def test_a_declared_horizon_ends_the_non_private_curve_too(capsys):
    """nonprivate, --horizon 200 on lung: the printed curve, its median, landmarks, RMST and number-at-risk table all
    stop at 200 days (the median is not reached there: S(199) = 0.68), and two groups ending at the horizon get one
    sentence, not one each."""
    o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--horizon", "200", "--landmarks", "150,300")
    (c,) = o["curves"]
    assert max(c["time"]) <= 200 and c["median"] is None
    assert o["landmarks"][1]["survival"] == pytest.approx(c["survival"][-1]) == pytest.approx(0.68, abs=5e-3)
    assert max(o["number_at_risk"]["times"]) <= 200
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--horizon", "500", "--landmarks", "600")
    assert [w.startswith("Follow-up ends at the horizon (500 days)") for w in o["warnings"]] == [True]


def test_an_rmst_past_one_group_s_follow_up_says_so(capsys):
    """lung by sex: women are last followed at 965 days, so their RMST to 1,000 days holds the curve flat for 35 days;
    men are followed to 1,022 days (no sentence for them); rrr's number at risk is read from its de-biased counts."""
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--rmst", "1000")
    (w,) = [w for w in o["warnings"] if w.startswith("The RMST to 1000 days")]
    assert "group Female (965 days)" in w and "Male" not in w and "up to 965 days" in w
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "nonprivate", "--rmst", "900")
    assert not any("RMST" in w for w in o["warnings"])
    o = run(capsys, "km", *LUNG, "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--seed", "5")
    first = {r["group"]: r["at_risk"][0] for r in o["number_at_risk"]["rows"]}
    assert abs(first["1"] - 138) <= 10 and abs(first["2"] - 90) <= 10  # the true groups', not the reported labels'


def test_conf_type_is_null_where_no_conf_type_applies(capsys):
    """time-indexed releases no variance: its band is an inversion of its pipeline, so no R conf.type names it."""
    o = run(capsys, "km", *LUNG, "--mechanism", "time-indexed", "--seed", "4", "--conf-type", "plain")
    assert o["conf_type"] is None and "does not apply" in o["interval_method"]
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--seed", "4", "--conf-type", "plain")
    assert o["conf_type"] == "plain"
