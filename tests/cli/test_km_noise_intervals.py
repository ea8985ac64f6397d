"""``km`` JSON of private releases: intervals that carry the noise (method named), RMST with its interval, bands of
the cumulative hazard, and plain-sentence warnings when a result cannot be read."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpsurv_core.cli import main

LUNG = ["--data", "lung", "--time", "time", "--event", "status", "--group", "sex"]


def run(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("mechanism", ["laplace-counts", "time-indexed", "rrr", "adaptive-km"])
def test_private_release_says_its_interval_carries_the_noise(capsys, mechanism):
    o = run(capsys, "km", *LUNG, "--mechanism", mechanism, "--epsilon", "1", "--seed", "4", "--rmst", "500",
            "--estimand", "cumulative-hazard")
    assert o["interval_includes_noise"] is True
    assert o["interval_method"] and "not include" not in o["interval_method"]
    assert isinstance(o["warnings"], list) and all(isinstance(w, str) and w.endswith(".") for w in o["warnings"])
    for c in o["curves"]:
        s, lo, up = (np.array(c[k], float) for k in ("survival", "lower", "upper"))
        assert np.all(lo <= s + 1e-12) and np.all(s <= up + 1e-12)
        # a survival band never rises (rrr's reported-label curves keep Greenwood's band; time-indexed's inversion
        # band is pointwise: made non-increasing it would under-cover, docs/coverage-curves.md)
        if c.get("interval_includes_noise", True) and mechanism != "time-indexed":
            assert np.all(np.diff(up) <= 1e-12) and np.all(np.diff(lo) <= 1e-12)
        h, h_up = np.array(c["cumulative_hazard"], float), np.array(c["cumulative_hazard_upper"], dtype=float)
        ok = np.isfinite(h) & np.isfinite(h_up)
        assert np.all(h[ok] <= h_up[ok] + 1e-9)
    for r in o["rmst"]:
        assert r["time_used"] == r["time_requested"] == 500
        assert r["lower"] <= r["rmst"] <= r["upper"]


def test_noise_widens_the_interval(capsys):
    """The same landmark, read from a private release, has a wider interval than the non-private one."""
    common = ["km", *LUNG, "--landmarks", "330", "--seed", "2"]
    exact = run(capsys, *common, "--mechanism", "nonprivate")["landmarks"]
    noisy = run(capsys, *common, "--mechanism", "laplace-counts", "--epsilon", "1")["landmarks"]
    for e, n in zip(exact, noisy):
        assert n["upper"] - n["lower"] > 1.5 * (e["upper"] - e["lower"])


def test_unreadable_results_are_flagged(capsys):
    """time-indexed at epsilon 1 on 20 points is noise: its band spans 0 to 1 and its median may be an artefact."""
    o = run(capsys, "km", *LUNG, "--mechanism", "time-indexed", "--epsilon", "1", "--seed", "1")
    text = " ".join(o["warnings"])
    assert "spans almost 0 to 1" in text and "raise epsilon" in text
    assert "cannot tell these groups apart" in text
    assert run(capsys, "km", *LUNG, "--mechanism", "nonprivate")["warnings"] == []


def test_rmst_of_the_exact_curve_follows_r(capsys):
    """R's print(survfit(...), rmean = 500): se^2 = sum_j A_j^2 d_j / (r_j (r_j - d_j)), A_j = area from t_j to 500."""
    from dpsurv_core.data.cohort import load_bundled

    o = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "event-times", "--rmst", "500")
    cohort = load_bundled("lung", group="sex")
    for r in o["rmst"]:
        keep = cohort.group == r["group"]
        t, d = cohort.time[keep], cohort.event[keep]
        times = np.unique(t[(d == 1) & (t <= 500)])
        at_risk = np.array([(t >= u).sum() for u in times], float)
        events = np.array([((t == u) & (d == 1)).sum() for u in times], float)
        s = np.cumprod(1 - events / at_risk)
        edges = np.concatenate([[0.0], times, [500.0]])
        area = np.concatenate([[1.0], s]) * np.diff(edges)
        assert r["rmst"] == pytest.approx(area.sum(), rel=1e-9)
        after = np.cumsum(area[::-1])[::-1][1:]  # area from each event time to 500
        se = np.sqrt(np.sum(after ** 2 * events / (at_risk * (at_risk - events))))
        assert r["upper"] - r["rmst"] == pytest.approx(1.959963984540054 * se, rel=1e-6)


def test_nonprivate_km_gives_r_numbers_without_a_grid(capsys):
    """Nothing is private, so no public grid is needed: the default is every event time and the median, its limits
    and the RMST are R's (survfit(Surv(time, status) ~ 1, data = lung): median 310 (285, 363), rmean 310.3 to 500)."""
    o = run(capsys, "km", "--data", "lung", "--mechanism", "nonprivate", "--rmst", "500")
    assert o["grid"]["kind"] == "event-times"
    c = o["curves"][0]
    assert (c["median"], c["median_lower"], c["median_upper"]) == (310.0, 285.0, 363.0)
    assert o["rmst"][0]["rmst"] == pytest.approx(310.334, abs=1e-3)


def test_private_rmst_on_a_coarse_grid_is_not_biased_by_the_grid(capsys):
    """A private curve on 20 public bins is read linearly between grid points: over 200 seeded releases at epsilon 1
    the mean RMST to 500 days is within 3 days of R's 310.3 (the step curve read 331) and the interval holds it."""
    o = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "11",
            "--repeat", "200", "--rmst", "500")
    v = np.array([r["rmst"] for r in o["rmst"]])
    lo, up = (np.array([r[k] for r in o["rmst"]]) for k in ("lower", "upper"))
    assert abs(v.mean() - 310.3) < 3.0
    assert np.mean((lo <= 310.3) & (310.3 <= up)) >= 0.93


def test_noise_switched_off_on_a_coarse_grid_reproduces_the_non_private_numbers(capsys):
    """epsilon inf on the 20 public bins is the non-private analysis: R's Kaplan-Meier at the grid points (not the
    life table the noisy counts need), R's RMST to 500 days (310.3, se 11.25) and medians; a huge epsilon reads the
    noiseless counts on the grid, within 2 days of it."""
    off = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "inf", "--rmst", "500")
    ref = run(capsys, "km", "--data", "lung", "--mechanism", "nonprivate", "--rmst", "500", "--grid", "0:1100:20")
    r = off["rmst"][0]
    assert r == ref["rmst"][0] and r["rmst"] == pytest.approx(310.334, abs=1e-3)
    assert (r["upper"] - r["rmst"]) / 1.959963984540054 == pytest.approx(11.25, rel=0.01)
    for a, b in zip(off["curves"], ref["curves"], strict=True):
        assert a["survival"] == pytest.approx(b["survival"], abs=1e-12) and a["median"] == b["median"]
        assert a["lower"] == pytest.approx(b["lower"], abs=1e-12)
    assert off["counts_definition"] == ref["counts_definition"]
    huge = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1e12", "--seed", "1",
               "--rmst", "500")
    assert huge["rmst"][0]["rmst"] == pytest.approx(r["rmst"], abs=2.0)


def test_bad_rmst_horizon(capsys):
    assert main(["km", *LUNG, "--rmst", "-3", "--json"]) == 2
    assert "positive time" in capsys.readouterr().err


@pytest.mark.parametrize("mechanism", ["laplace-counts", "rrr"])
def test_cumulative_incidence_bands_carry_the_noise(capsys, mechanism):
    o = run(capsys, "km", "--data", "pbc", "--group", "sex", "--mechanism", mechanism, "--epsilon", "1", "--seed", "3",
            "--estimand", "cumulative-incidence")
    banded = [c for c in o["curves"] if c.get("debiased", True)]
    assert banded
    for c in banded:
        for kind, cif in c["cumulative_incidence"].items():
            lo = np.array(c["cumulative_incidence_lower"][kind], dtype=float)
            up = np.array(c["cumulative_incidence_upper"][kind], dtype=float)
            cif = np.array(cif, float)
            ok = np.isfinite(lo) & np.isfinite(up)
            assert ok.any() and np.all(lo[ok] <= cif[ok] + 1e-9) and np.all(cif[ok] <= up[ok] + 1e-9)
            assert np.all((lo[ok] >= 0) & (up[ok] <= 1))


def test_time_indexed_declared_group_sizes_widen_the_band_for_sampling(capsys):
    """--sample-size (public, one per group) puts the sampling error in the time-indexed band: the method says so,
    the parameters list it, and the band is at least as wide as the noise-only band of the same release."""
    args = ("km", *LUNG, "--mechanism", "time-indexed", "--base-epsilon", "5", "--seed", "3")  # informative noise
    noise_only = run(capsys, *args)
    both = run(capsys, *args, "--sample-size", "138,90")
    assert "not the sampling error" in noise_only["interval_method"]
    assert "declared size 138, 90" in both["interval_method"] and "covers the sampling error" in both["interval_method"]
    assert both["parameters"]["declared_group_size"] == [138, 90]
    for a, b in zip(noise_only["curves"], both["curves"]):
        assert a["survival"] == b["survival"]  # the same release: only the band reads the sizes
        wa = np.subtract(a["upper"], a["lower"], dtype=float)
        wb = np.subtract(b["upper"], b["lower"], dtype=float)
        ok = ~np.isnan(wa) & ~np.isnan(wb)
        assert np.mean(wb[ok]) > np.mean(wa[ok])


@pytest.mark.parametrize("text", ["abc", "0", "1.5", "inf", "1,2,3"])
def test_bad_declared_group_size_is_one_sentence(capsys, text):
    code = main(["km", *LUNG, "--mechanism", "time-indexed", "--epsilon", "1", "--seed", "1", "--sample-size", text,
                 "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_time_indexed_declared_censoring_share_censors_the_band_cohorts(capsys):
    """--censoring (public, with --sample-size) censors the band's simulated cohorts: the method and the parameters
    name the shares, the release is the same, and censored cohorts make the late band wider than uncensored ones."""
    args = ("km", *LUNG, "--mechanism", "time-indexed", "--base-epsilon", "5", "--seed", "3", "--sample-size", "138,90")
    plain = run(capsys, *args)
    censored = run(capsys, *args, "--censoring", "30%,0.25")
    assert "uncensored (no censoring share declared)" in plain["interval_method"]
    assert "censored uniformly at the declared share 30%, 25%" in censored["interval_method"]
    assert censored["parameters"]["declared_censoring_share"] == [0.3, 0.25]
    for a, b in zip(plain["curves"], censored["curves"]):
        assert a["survival"] == b["survival"]
        late = slice(len(a["time"]) // 2, None)
        wa = np.subtract(a["upper"][late], a["lower"][late], dtype=float)
        wb = np.subtract(b["upper"][late], b["lower"][late], dtype=float)
        assert np.nanmean(wb) > np.nanmean(wa)


@pytest.mark.parametrize("extra", [("--censoring", "1.2"), ("--censoring", "lots"), ("--censoring", "0.3"),
                                   ("--sample-size", "138,90", "--censoring", "0.1,0.2,0.3")])
def test_bad_declared_censoring_share_is_one_sentence(capsys, extra):
    """A share outside [0, 1), one without a declared size, or one per group for the wrong number of groups."""
    code = main(["km", *LUNG, "--mechanism", "time-indexed", "--epsilon", "1", "--seed", "1", *extra, "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err


def test_time_indexed_band_without_the_sampling_error_says_so(capsys):
    """As published at base e = 5 the curve carries information and a band of the noise alone covers 52-64% at q50 and
    q75: the JSON warns until the group sizes (and censoring share) are declared."""
    common = ["km", *LUNG, "--mechanism", "time-indexed", "--base-epsilon", "5", "--seed", "1"]
    said = lambda o: any("not the sampling error" in w for w in o["warnings"])  # noqa: E731
    assert said(run(capsys, *common))
    assert not said(run(capsys, *common, "--sample-size", "138,90", "--censoring", "0.3"))
    assert not said(run(capsys, *common[:-4], "--epsilon", "1", "--seed", "1"))  # a band near [0, 1]: nothing to add


@pytest.mark.parametrize("mechanism, grid, epsilon", [("nonprivate", "event-times", "inf"),
                                                      ("nonprivate", "0:1100:20", "inf"),
                                                      ("laplace-counts", "0:1100:20", "inf"),
                                                      ("laplace-counts", "0:1100:20", "1e12")])
def test_counts_beside_the_curve_are_what_counts_definition_says(capsys, mechanism, grid, epsilon):
    """On the event-time grid at_risk is R's n.risk (time >= t). On a public grid the non-private curve gives R's
    n.risk at each grid time (summary(fit, times = t)); a curve from counts (here without noise) gives the bin's
    effective number at risk, at risk at the bin's start less half its censorings (the life-table rule its curve
    uses; without noise a count mechanism's curve is the non-private one). The JSON says which; events are the bin's
    in both."""
    from dpsurv_core.data.cohort import load_bundled

    o = run(capsys, "km", "--data", "lung", "--mechanism", mechanism, "--grid", grid, "--epsilon", epsilon,
            *(("--seed", "1") if epsilon != "inf" else ()))
    c = o["curves"][0]
    cohort = load_bundled("lung")
    t, d = cohort.time, cohort.event
    times, risk, events = np.array(c["time"]), np.array(c["at_risk"], float), np.array(c["events"], float)
    start = np.concatenate([[-np.inf], times[:-1]])
    inside = [(t > a) & (t <= b) for a, b in zip(start, times)]
    assert np.array_equal(events, [(m & (d == 1)).sum() for m in inside])
    if epsilon == "inf":
        assert "n.risk" in o["counts_definition"]
        assert np.array_equal(risk, [(t >= u).sum() for u in times])
    else:
        assert "half the bin's censorings" in o["counts_definition"]
        expected = [(t > a).sum() - 0.5 * (m & (d == 0)).sum() for a, m in zip(start, inside)]
        assert np.array_equal(risk, expected)


def test_nonprivate_cumulative_incidence_has_r_interval(capsys):
    """Without noise the incidence's limits are R's log interval on I from the infinitesimal jackknife variance
    (survfit on multi-state data): I exp(-/+ z se / I), upper at most 1, null (R's NA) while I = 0."""
    from scipy.special import ndtri

    from dpsurv_core.curves.counts import count
    from dpsurv_core.curves.kaplan_meier import estimate
    from dpsurv_core.curves.result import event_times_grid
    from dpsurv_core.data.cohort import load_bundled

    o = run(capsys, "km", "--data", "pbc", "--mechanism", "nonprivate", "--estimand", "cumulative-incidence")
    assert "infinitesimal jackknife" in o["incidence_interval_method"]
    cohort = load_bundled("pbc", competing=True)
    ref = estimate(count(cohort, event_times_grid(cohort, competing=True), competing=True))
    c = o["curves"][0]
    idx = np.searchsorted(ref.time, c["time"], side="right") - 1
    z = ndtri(0.975)
    for k, kind in enumerate(ref.event_types):
        value = np.array(c["cumulative_incidence"][kind], float)
        lo = np.array(c["cumulative_incidence_lower"][kind], dtype=float)
        up = np.array(c["cumulative_incidence_upper"][kind], dtype=float)
        se = np.sqrt(ref.incidence_variance[0, k, idx])
        pos = value > 0
        assert pos.any() and np.all(np.isnan(lo[~pos]))
        np.testing.assert_allclose(lo[pos], value[pos] * np.exp(-z * se[pos] / value[pos]), rtol=1e-9)
        np.testing.assert_allclose(up[pos], np.minimum(value[pos] * np.exp(z * se[pos] / value[pos]), 1.0), rtol=1e-9)


def test_the_ledger_record_keeps_the_warnings_km_printed(capsys, tmp_path):
    """A release's record (what the Ledger and report page rebuilds reports from) holds the same warnings as the
    printed JSON, the landmarks' and the de-biased curves' included."""
    from dpsurv_core.privacy.ledger import RELEASE, LedgerStore

    path = tmp_path / "ledger.sqlite"
    for mechanism in ("laplace-counts", "rrr"):
        o = run(capsys, "km", *LUNG, "--mechanism", mechanism, "--epsilon", "0.3", "--landmarks", "200,700,2000",
                "--horizon", "1100", "--ledger", str(path))
        record = [r for r in LedgerStore(path).records() if r.kind == RELEASE][-1]
        assert record.id == o["record_id"]
        assert o["warnings"] and sorted(record.body["derived"]["warnings"]) == sorted(o["warnings"])


@pytest.mark.parametrize("mechanism, extra", [("laplace-counts", ()), ("rrr", ()),
                                              ("adaptive-km", ("--grid", "0:1000:25"))])
def test_the_ledger_record_keeps_the_medians_landmarks_and_rmst_km_printed(capsys, tmp_path, mechanism, extra):
    """A report rebuilt from the record shows the medians, quartiles, landmark survival and RMST with the intervals
    km printed (the RMST's private interval needs the bootstrap draws, which only the release has)."""
    from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
    from dpsurv_core.report.html import derived_tables

    path = tmp_path / "ledger.sqlite"
    o = run(capsys, "km", *LUNG, "--mechanism", mechanism, "--epsilon", "1", "--landmarks", "365,400",
            "--rmst", "500", "--ledger", str(path), *(extra or ("--horizon", "1100")))
    kept = [r for r in LedgerStore(path).records() if r.kind == RELEASE][-1].body["derived"]
    printed = [c for c in o["curves"] if c.get("debiased", True)]  # rrr: the de-biased curves carry the band
    assert len(kept["medians"]) == len(printed) == 2
    for k, c in zip(kept["medians"], printed, strict=True):
        for key in ("median", "median_lower", "median_upper"):  # the record keeps NaN and infinities, JSON null
            assert (None if k[key] is None or not np.isfinite(k[key]) else k[key]) == pytest.approx(c[key])
        assert [q["time"] for q in k["quantiles"]] == pytest.approx([q["time"] for q in c["quantiles"]])
    strip = lambda es: [{k: v for k, v in e.items() if k != "group_label"} for e in es]  # noqa: E731
    assert kept["landmarks"] == strip(o["landmarks"]) and kept["rmst"] == strip(o["rmst"])
    tables = {caption.split(" (")[0]: frame for frame, caption in derived_tables(kept)}
    assert list(tables["Median survival and quartiles"]["group"]) == ["Male", "Female"]
    rmst = tables["Restricted mean survival time"]
    assert list(rmst["RMST"]) == pytest.approx([e["rmst"] for e in o["rmst"]])
    assert list(rmst["95% CI upper"]) == pytest.approx([e["upper"] for e in o["rmst"]])
    lm = tables["Survival at the landmark times"]
    assert list(lm["time used"]) == [e["time_used"] for e in o["landmarks"]]


def test_nonprivate_rmst_on_a_public_grid_is_the_exact_area(capsys):
    """The non-private RMST integrates the step curve at every event time, as R's rmean does, whatever the reporting
    grid (the grid's step curve overstated it: 259.6 against 241.5 days for lung's men to 365 days)."""
    on_grid = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--grid", "0:1100:20", "--rmst", "365")["rmst"]
    exact = run(capsys, "km", *LUNG, "--mechanism", "nonprivate", "--rmst", "365")["rmst"]
    for a, b in zip(on_grid, exact, strict=True):
        assert a["rmst"] == pytest.approx(b["rmst"], abs=1e-9) and a["lower"] == pytest.approx(b["lower"], abs=1e-9)
    assert on_grid[0]["rmst"] == pytest.approx(241.5, abs=0.05)


def test_a_landmark_before_the_first_grid_point_is_said_to_be_time_zero(capsys):
    o = run(capsys, "km", *LUNG, "--mechanism", "laplace-counts", "--seed", "1", "--landmarks", "30,365")
    first = [e for e in o["landmarks"] if e["time_requested"] == 30]
    assert all(e["time_used"] == 0 and e["survival"] == 1 for e in first)
    assert any("before the first point of the public grid" in w and "30 days" in w for w in o["warnings"])


def test_competing_events_say_the_survival_curve_is_event_free(capsys):
    o = run(capsys, "km", "--data", "pbc", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
            "--seed", "2", "--estimand", "cumulative-incidence")
    assert "free of all of them" in o["survival_definition"]
    medians = [w for w in o["warnings"] if "median" in w]
    assert medians and all("event-free median" in w for w in medians)
    plain = run(capsys, "km", "--data", "pbc", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
                "--seed", "2")
    assert "survival_definition" not in plain and not any("event-free" in w for w in plain["warnings"])


def test_without_noise_the_private_incidence_interval_is_the_non_private_one(capsys):
    """epsilon = inf on the event times: the same Aalen-Johansen curve, variance and limits as the non-private run."""
    args = ("km", "--data", "pbc", "--group", "sex", "--estimand", "cumulative-incidence", "--grid", "event-times")
    exact = run(capsys, *args, "--mechanism", "nonprivate")
    free = run(capsys, *args, "--mechanism", "laplace-counts", "--epsilon", "inf", "--seed", "1")
    for a, b in zip(exact["curves"], free["curves"], strict=True):
        for key in ("cumulative_incidence", "cumulative_incidence_lower", "cumulative_incidence_upper"):
            for kind in a[key]:
                np.testing.assert_allclose(np.array(b[key][kind], dtype=float), np.array(a[key][kind], dtype=float),
                                           rtol=1e-12, atol=1e-15)


def test_a_landmark_where_the_release_leaves_nobody_at_risk_is_said_to_be_carried_on(capsys):
    """lung at epsilon 1 (seed 123): the released counts leave nobody at risk from 660 days, so the curve is 0 there
    with a band from 0 to 36%; survival at 730 and 1,095 days is not an estimate at those times, and says so."""
    o = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "123",
            "--landmarks", "365,730,1095")
    (w,) = [w for w in o["warnings"] if "nobody at risk" in w]
    # each landmark named as the table names it: the time asked and the grid point it is read at
    assert w.startswith("From 660 days on") and "730 days (read at 715 days), 1095 days (read at 1045 days)" in w
    assert "365 days" not in w
    assert o["number_at_risk"]["rows"][0]["at_risk"][6] == 0  # at 660 days, time >= t
    o = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "123",
            "--landmarks", "365")
    # no landmark is read there, but the curve drawn on to the grid's end is: one sentence says where to stop reading
    (w,) = [w for w in o["warnings"] if "nobody at risk" in w]
    assert w.startswith("From 660 days on") and "365" not in w and "read it only up to 660 days" in w


def test_a_curve_resting_on_one_half_is_not_called_unidentifiable(capsys):
    """gehan's control arm under rounding: 1, .75, .5, .5, .25, .25, 0 has R's midpoint median (7 weeks); no
    'crosses 0.5 twice' sentence, and no 'band from 0 to 1' where the curve is 0 and nobody is left."""
    o = run(capsys, "km", "--data", "gehan", "--group", "treat", "--mechanism", "round", "--horizon", "35")
    assert not any("crosses 0.5" in w for w in o["warnings"])
    assert not any("spans almost 0 to 1" in w for w in o["warnings"])
    control = [c for c in o["curves"] if c["group"] == "control"][0]
    assert control["median"] == pytest.approx(7.0)
    pbc = run(capsys, "km", "--data", "pbc", "--mechanism", "round", "--estimand", "cumulative-incidence",
              "--horizon", "4800")
    assert any("infinitesimal jackknife's for the cumulative incidence" in w for w in pbc["warnings"])


def test_deterministic_rules_say_what_they_do_to_the_late_counts(capsys):
    """Suppressed cells count as 0 (veteran's standard arm seems to keep 16 at risk after its last death at 553
    days), and rounding's errors add up in the number at risk (lung, 20 bins: 15 at 1,000 days against 2)."""
    sup = run(capsys, "km", "--data", "veteran", "--group", "trt", "--mechanism", "suppress-small-cells",
              "--horizon", "1000")
    assert any("Suppressed cells" in w and "too high" in w for w in sup["warnings"])
    rnd = run(capsys, "km", "--data", "lung", "--mechanism", "round", "--grid", "0:1000:20")
    assert rnd["number_at_risk"]["rows"][0]["at_risk"][-1] == 15
    assert any("rounding errors add up" in w for w in rnd["warnings"])


def test_a_competing_risks_record_calls_its_medians_and_landmarks_event_free(capsys, tmp_path):
    from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
    from dpsurv_core.report.html import derived_tables, output_records

    path = tmp_path / "ledger.sqlite"
    run(capsys, "km", "--data", "pbc", "--mechanism", "laplace-counts", "--epsilon", "1", "--estimand",
        "cumulative-incidence", "--landmarks", "1826", "--horizon", "4800", "--ledger", str(path))
    out = [r for r in LedgerStore(path).records() if r.kind == RELEASE][-1].body["derived"]
    captions = [caption for _, caption in derived_tables(out)]
    assert out["event_free"] is True and captions and all("event-free" in c.lower() for c in captions)
    assert "event_free" not in {r["quantity"] for r in output_records(out)}


def test_a_median_the_noise_leaves_not_reached_says_the_truth_may_be_reached(capsys):
    """gehan at epsilon 0.1 (seed 3): both noisy curves stay above 0.5 (median 'not reached') while their bands fall
    below it already at the first grid point (1.75 weeks; R's medians: 23 and 8 weeks), so the median's lower limit is
    the grid's start (the crossing lies inside the first bin, where the curve is not known); a sentence says the
    median may be reached, another that the interval inside the first bin is one-sided."""
    o = run(capsys, "km", "--data", "gehan", "--group", "treat", "--mechanism", "laplace-counts", "--epsilon", "0.1",
            "--seed", "3")
    assert all(c["median"] is None and c["median_lower"] is not None for c in o["curves"])
    hits = [w for w in o["warnings"] if "is not reached on the noisy curve" in w]
    assert len(hits) == 2 and "from 0 weeks on" in hits[1]
    assert sum("may lie inside the first bin (before 1.75 weeks)" in w for w in o["warnings"]) == 2


def test_a_rule_s_curve_at_zero_has_no_interval_and_a_curve_without_events_is_not_called_wide(capsys):
    """R's rule where S = 0 holds after the risk set empties too (no [0, 1] band, and no error bar read from one);
    a group whose events the rule removed has no band (log-log at S = 1), which is no interval, not a wide one."""
    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "round", "--seed", "5",
            "--landmarks", "900")
    female = [x for x in o["landmarks"] if x["group"] == "2"][0]
    assert female["survival"] == 0.0 and female["lower"] is None and female["upper"] is None
    assert not any("smaller than the error bar" in w for w in o["warnings"])
    o = run(capsys, "km", "--data", "leukemia", "--group", "x", "--mechanism", "round", "--seed", "1",
            "--conf-type", "log-log", "--rmst", "40")
    assert not any("spans almost 0 to 1" in w for w in o["warnings"])
    maintained = [x for x in o["rmst"] if x["group"] == "Maintained"][0]
    assert maintained["lower"] == maintained["upper"] == 40.0  # Greenwood's, on counts that hold no events
    (w,) = [w for w in o["warnings"] if w.startswith("The released counts of group Maintained hold no events at all")]
    assert "'no events released', not 'nobody had the event'" in w and w.endswith("or pool groups.")
