"""Privacy audit: the binomial bounds, the attack, influential points, target selection, CLI, report section."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from dpsurv_core.audit import attack, figures, runner, targets
from dpsurv_core.cli import main
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import exact_counts, groups_of, tile_trials
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.html import Report

LUNG_ARGS = ["audit", "--data", "lung", "--time", "time", "--event", "status"]


@pytest.fixture(scope="module")
def lung() -> tuple[Cohort, PublicParameters]:
    cohort = load_bundled("lung", group="sex", covariates=("age", "sex", "meal.cal"))
    return cohort, PublicParameters.derive(cohort, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))


def run_cli(args: list[str], capsys) -> tuple[int, dict | None, str]:
    code = main(args + ["--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None), err


# ----------------------------------------------------------------------------------------- bounds
def test_epsilon_bound_is_a_lower_bound_on_both_ratios():
    n = 500
    lo, hi = attack.clopper_pearson(n, n)
    flo, fhi = attack.clopper_pearson(0, n)
    # perfect separation: ln(TPR_lo / FPR_hi) with TPR_lo = 0.025^(1/n), FPR_hi = 1 - 0.025^(1/n)
    expect = math.log(0.025 ** (1 / n) / (1 - 0.025 ** (1 / n)))
    assert attack.epsilon_lower_bound(lo, hi, flo, fhi) == pytest.approx(expect, rel=1e-9)
    # no information at all: 999/1000 positives in both worlds must give 0 (the optimistic second term gave 5.4)
    lo, hi = attack.clopper_pearson(999, 1000)
    assert attack.epsilon_lower_bound(lo, hi, lo, hi) == 0.0
    # the complement ratio: TPR 0.2, FPR 0.01 -> (1 - FPR_hi) / (1 - TPR_lo) is small, ln(TPR_lo / FPR_hi) large
    tl, th = attack.clopper_pearson(100, 500)
    fl, fh = attack.clopper_pearson(5, 500)
    assert attack.epsilon_lower_bound(tl, th, fl, fh) == pytest.approx(math.log(tl / fh))
    # and the reverse direction: TPR 0.99, FPR 0.8 -> ln((1 - FPR_hi) / (1 - TPR_lo))
    tl, th = attack.clopper_pearson(495, 500)
    fl, fh = attack.clopper_pearson(400, 500)
    assert attack.epsilon_lower_bound(tl, th, fl, fh) == pytest.approx(math.log((1 - fh) / (1 - tl)))


def test_point_epsilon_and_advantage_bound():
    assert attack.point_epsilon(0.5, 0.5) == 0.0
    assert attack.point_epsilon(0.4, 0.1) == pytest.approx(math.log(4))
    assert attack.point_epsilon(1.0, 0.0) == math.inf
    assert attack.advantage_bound(1.0) == pytest.approx((math.e - 1) / (math.e + 1))
    assert attack.advantage_bound(math.inf) == 1.0


def test_roc_curve_runs_from_origin_to_one():
    fpr, tpr, auc = attack.roc_curve(np.array([2.0, 3.0, 4.0]), np.array([0.0, 1.0, 1.5]))
    assert (fpr[0], tpr[0], fpr[-1], tpr[-1]) == (0.0, 0.0, 1.0, 1.0)
    assert np.all(np.diff(fpr) >= 0) and np.all(np.diff(tpr) >= 0)
    assert auc == 1.0
    rng = np.random.default_rng(0)
    a, b = rng.normal(1, 1, 4000), rng.normal(0, 1, 4000)
    _, _, auc = attack.roc_curve(a, b)
    assert auc == pytest.approx(stats.norm.cdf(1 / math.sqrt(2)), abs=0.02)


# ----------------------------------------------------------------------------------------- attack
def test_attack_on_a_known_laplace_pair_is_bounded_by_its_epsilon():
    """Laplace(0, 1) against Laplace(1, 1) is exactly 1-DP: the bound is close to 1 and never above."""
    rng = np.random.default_rng(1)
    x_in = 1.0 + rng.laplace(0.0, 1.0, (4000, 1))
    x_out = rng.laplace(0.0, 1.0, (4000, 1))
    att = attack.distinguish(x_in, x_out, {"the coordinate": np.array([0])})
    assert 0.6 <= att.epsilon_lower <= 1.0
    assert att.runs == 2000
    assert att.tpr_ci[0] <= att.tpr <= att.tpr_ci[1]


def test_attack_on_identical_worlds_finds_nothing():
    rng = np.random.default_rng(2)
    att = attack.distinguish(rng.laplace(size=(2000, 6)), rng.laplace(size=(2000, 6)))
    assert att.epsilon_lower == 0.0
    assert abs(att.advantage) < 0.08


def test_attack_needs_matching_runs():
    with pytest.raises(ParameterError):
        attack.distinguish(np.zeros((10, 2)), np.zeros((10, 3)))
    with pytest.raises(ParameterError):
        attack.distinguish(np.zeros((3, 2)), np.zeros((3, 2)))


def test_given_scores_fit_on_one_half_and_test_at_or_above_on_the_other():
    """Scores 1 on D and 0 on D': the threshold 1 is fitted on the first halves, and the held-out test
    'score >= 1' separates perfectly (a strict test at 1 would find nothing)."""
    res = attack.empirical_epsilon(np.ones(1000), np.zeros(1000))
    n = 500
    assert (res.threshold, res.inclusive, res.runs, res.tpr, res.fpr) == (1.0, True, n, 1.0, 0.0)
    assert res.epsilon_lower == pytest.approx(math.log(0.025 ** (1 / n) / (1 - 0.025 ** (1 / n))), rel=1e-9)
    assert res.epsilon_point == math.inf and res.auc == 1.0
    strict = attack.measure(np.ones(n), np.zeros(n), 1.0)
    assert (strict.tpr, strict.epsilon_lower) == (0.0, 0.0)


def test_influential_points_count_threshold_exceedances():
    a = np.array([[[0.9, 0.5, 0.2]], [[1.0, 1.0, 1.0]]])  # (R=2, G=1, J=3)
    b = np.array([[[0.82, 0.5, 0.8]], [[0.2, 0.97, 0.25]]])
    total, per = targets.influential_points(a, b)
    # run 1 diffs 0.08, 0, 0.6; run 2 diffs 0.8, 0.03, 0.75
    assert per[0.05].tolist() == [2, 2]
    assert per[0.1].tolist() == [1, 2]
    assert per[0.5].tolist() == [1, 2]
    assert per[0.7].tolist() == [0, 2]
    assert total == {0.05: 4, 0.1: 3, 0.5: 3, 0.7: 2}


# ----------------------------------------------------------------------------------------- targets
def test_leave_one_out_counts_equal_counting_without_the_subject(lung):
    cohort, public = lung
    exact, contrib, loo, unit = targets.leave_one_out_counts(cohort, public)
    for i in (0, 5, 37, 100, cohort.n - 1):
        keep = np.ones(cohort.n, bool)
        keep[i] = False
        direct = count(cohort.subset(keep), public.grid, groups_of(cohort, public))
        assert np.array_equal(loo.n[i], direct.n)
        assert np.array_equal(loo.events[i], direct.events)
        assert np.array_equal(loo.censored[i], direct.censored)
    assert contrib.n.sum() == exact.n.sum()


@given(st.lists(st.tuples(st.floats(0.0, 12.0), st.booleans(), st.sampled_from(["a", "b", "c"]),
                          st.integers(0, 6)), min_size=2, max_size=25))
def test_leave_one_out_counts_property(rows):
    """For random cohorts with groups and subject ids, removing a unit's rows equals the vectorised result."""
    time_ = np.array([r[0] for r in rows])
    event = np.array([r[1] for r in rows], dtype=np.int8)
    subject = np.array([r[3] for r in rows])
    first_group = {}
    for s_, g in zip(subject, (r[2] for r in rows)):
        first_group.setdefault(s_, g)
    group = np.array([first_group[s_] for s_ in subject])  # one label per subject
    cohort = Cohort(time_, event, group, subject, rows_per_subject=3)
    public = PublicParameters.derive(cohort, horizon=10.0, grid=TimeGrid.equal(0.0, 10.0, 4),
                                     group_categories=("a", "b", "c"))
    exact, _, loo, unit = targets.leave_one_out_counts(cohort, public)
    for u in np.unique(unit):
        direct = count(cohort.subset(unit != u), public.grid, ("a", "b", "c"))
        assert np.array_equal(loo.n[u], direct.n)
        assert np.array_equal(loo.events[u], direct.events)
        assert np.array_equal(loo.censored[u], direct.censored)


def test_default_curve_target_is_the_most_exposed_subject(lung):
    cohort, public = lung
    target = targets.select_curve_target(cohort, public)
    base = estimate(tile_trials(exact_counts(cohort, public.grid, public), 1)).survival
    moves = []
    for i in range(cohort.n):  # brute force (test only)
        keep = np.ones(cohort.n, bool)
        keep[i] = False
        s = estimate(tile_trials(exact_counts(cohort.subset(keep), public.grid, public), 1)).survival
        moves.append(np.abs(s - base).max())
    assert target.influence == pytest.approx(max(moves))
    assert moves[target.row] == pytest.approx(max(moves))
    assert target.chosen_by == "default" and "most exposed" in target.why
    assert f"row {target.row}" in target.why


def test_label_change_target_for_randomized_response(lung):
    cohort, public = lung
    target = targets.select_curve_target(cohort, public, label_change=True)
    other = targets.relabelled(cohort, target)
    assert target.new_group != target.group
    assert other.group[target.row] == target.new_group
    assert np.sum(other.group != cohort.group) == 1
    assert "changing its group label" in target.why


def test_subject_ids_remove_every_row_of_the_subject():
    cohort = load_bundled("kidney")
    public = PublicParameters.derive(cohort, horizon=600.0, grid=TimeGrid.equal(0.0, 600.0, 12))
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, cohort, public)
    target = adapter.target(0)
    assert len(target.rows) == 2
    assert targets.without(cohort, target).n == cohort.n - 2
    assert adapter.cost.epsilon == 1.0
    default = adapter.default_target()
    assert len(default.rows) == 2  # the privacy unit is the patient


def test_weibull_influence_matches_refitting(lung):
    from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle

    cohort, _ = lung
    sample = sample_from_cohort(cohort, 1100.0)
    fit = weibull_mle(sample)
    delta = targets.weibull_influence(sample.t, sample.d.astype(float), fit.shape, fit.scale_normalised)
    for i in (5, 37, 100):
        keep = np.ones(cohort.n, bool)
        keep[i] = False
        refit = weibull_mle(sample_from_cohort(cohort.subset(keep), 1100.0))
        assert refit.shape - fit.shape == pytest.approx(delta[i, 0], rel=0.15, abs=1e-4)
        assert refit.scale_normalised - fit.scale_normalised == pytest.approx(delta[i, 1], rel=0.15, abs=1e-4)


def test_regression_influence_matches_refitting(lung):
    from dpsurv_core.regression.model import minimise
    from dpsurv_core.regression.person_period import person_period

    cohort, public = lung
    adapter = runner.RegressionAdapter("output", 1.0, cohort, public, ("age", "sex"))
    w = minimise(adapter.pp, 0.01)
    delta = targets.regression_influence(adapter.pp, w, 0.01)
    target = adapter.default_target()
    assert target.influence == pytest.approx(np.abs(np.linalg.norm(delta, axis=1)).max())
    pp_out = person_period(targets.without(cohort, target), ("age", "sex"), ranges=adapter.ranges,
                           n_public=adapter.pp.n_public, **adapter.design)
    moved = minimise(pp_out, 0.01) - w
    assert np.linalg.norm(moved) == pytest.approx(target.influence, rel=0.15)


def test_regression_neighbour_keeps_the_public_design(lung):
    cohort, public = lung
    adapter = runner.RegressionAdapter("objective", 1.0, cohort, public, ("age", "sex"))
    target = adapter.default_target()
    pp_out = adapter._pp(adapter.neighbour(target))
    assert pp_out.n == adapter.pp.n - 1
    assert pp_out.n_public == adapter.pp.n_public
    adapter.mechanism._check(pp_out)  # same calibration constants on D and D'


def test_regression_refuses_a_row_it_drops(lung):
    cohort, public = lung
    adapter = runner.RegressionAdapter("output", 1.0, cohort, public, ("age", "meal.cal"))
    missing = int(np.flatnonzero(cohort.covariates["meal.cal"].isna().to_numpy())[0])
    with pytest.raises(ParameterError, match="meal.cal"):
        adapter.target(missing)


def test_user_target_and_trials_limits(lung):
    cohort, public = lung
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, cohort, public)
    t = adapter.target(12)
    assert (t.row, t.chosen_by) == (12, "user") and "chosen by the user" in t.why
    with pytest.raises(ParameterError):
        adapter.target(cohort.n)
    with pytest.raises(ParameterError):
        runner.audit(adapter, trials=2)
    with pytest.raises(ParameterError):
        runner.make_adapter("logrank", "time-indexed", 1.0, cohort, public)
    with pytest.raises(ParameterError):
        runner.make_adapter("weibull", "laplace-counts", 1.0, cohort, public)


# ----------------------------------------------------------------------------------------- audit
def test_audit_is_reproducible_and_serialisable(lung):
    cohort, public = lung
    r1 = runner.audit(runner.make_adapter("km", "laplace-counts", 1.0, cohort, public, record=True), trials=400, seed=5,
                      record_trials=60)
    r2 = runner.audit(runner.make_adapter("km", "laplace-counts", 1.0, cohort, public, record=True), trials=400, seed=5,
                      record_trials=60)
    d1, d2 = r1.to_dict(), r2.to_dict()
    assert d1["empirical_epsilon_lower"] == d2["empirical_epsilon_lower"]
    assert d1["output_attack"] == d2["output_attack"] and d1["attacked_fields"] == d2["attacked_fields"]
    assert d1["charged_to_ledger"] is False
    assert set(d1["influential_points"]) == {"0.05", "0.1", "0.5", "0.7"}
    # the headline attacks the whole record (here on 60 runs per data set); the output alone on all 400
    assert d1["grid_points"] == 20 and d1["trials"] == 400 and d1["held_out_runs"] == 30
    assert d1["record_trials"] == 60 and d1["output_attack"]["held_out_runs"] == 200
    assert "the guarantee of epsilon 1 is that" in d1["sentence"] and "at most 46% advantage." in d1["sentence"]
    assert f"with at most {100 * r1.headline.advantage_upper:.0f}% advantage over a coin toss" in d1["sentence"]
    assert {"advantage", "advantage_lower", "advantage_upper", "auc", "tpr", "fpr"} <= set(d1)
    from dpsurv_core.cli import _clean

    json.dumps(_clean(d1), allow_nan=False)


def test_two_times_2000_laplace_counts_runs(lung):
    """2 x 2000 runs, half held out for the attack (the speed target is in benchmarks/timings.py)."""
    cohort, public = lung
    # bands off, as the audit builds a curve mechanism (runner.curve_mechanism): the attack never reads them
    adapter = runner.CurveAdapter(LaplaceCounts(1.0, noise_in_bands=False), cohort, public)
    res = runner.audit(adapter, trials=2000, seed=0)
    assert res.trials == 2000 and res.attack.runs == 1000


def test_progress_is_reported(lung):
    cohort, public = lung
    seen: list[float] = []
    runner.audit(runner.make_adapter("weibull", "laplace", 1.0, cohort, public, record=True), trials=100, seed=0,
                 progress=lambda f, text: seen.append(f), record_trials=6)
    assert seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen)


def test_label_only_audit_says_what_it_protects(lung):
    cohort, public = lung
    res = runner.audit(runner.make_adapter("km", "rrr", 1.0, cohort, public, record=True), trials=400, seed=3,
                       record_trials=40)
    d = res.to_dict()
    assert d["protects"] == "the group label only"
    assert d["neighbouring"] == "change one subject's group label"
    assert "which group this patient belongs to" in d["sentence"]
    assert d["empirical_epsilon_lower"] <= 1.0


# ----------------------------------------------------------------------------------------- CLI
def test_cli_contract(capsys):
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "laplace-counts", "--epsilon", "1",
                                        "--grid", "0:1100:20", "--trials", "200", "--seed", "1", "--record-trials",
                                        "40"], capsys)
    assert code == 0
    for key in ("mechanism", "epsilon_charged", "empirical_epsilon_lower", "trials", "target", "tpr", "fpr",
                "influential_points", "tpr_ci", "fpr_ci", "protects", "neighbouring", "attacked_fields",
                "record_trials", "output_attack"):
        assert key in out
    assert out["attacked"] == "record" and out["record_trials"] == 40 and out["held_out_runs"] == 20
    assert out["mechanism"] == "laplace-counts" and out["epsilon_charged"] == 1.0 and out["trials"] == 200
    assert {"row", "why"} <= set(out["target"])
    assert out["empirical_epsilon_lower"] <= 1.0
    assert out["fpr_ci"][0] <= out["fpr"] <= out["fpr_ci"][1]


def test_cli_other_analyses_and_options(capsys):
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "weibull", "--mechanism", "lsp-tll", "--horizon", "1100",
                                        "--rungs", "100", "--trials", "20", "--target", "3", "--record-trials", "6"],
                           capsys)
    assert code == 0 and out["target"]["row"] == 3 and out["target"]["chosen_by"] == "user"
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "regression", "--mechanism", "output", "--covariates", "age,sex",
                                        "--range", "age:30:90", "--lambda", "0.05", "--trials", "20",
                                        "--record-trials", "6"], capsys)
    assert code == 0 and out["influential_points"] is None and out["analysis"] == "regression"
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "time-indexed", "--alpha", "0",
                                        "--window", "1", "--trials", "20", "--record-trials", "20"], capsys)
    assert code == 0 and out["epsilon_charged"] == pytest.approx(1.0)
    code, out, _ = run_cli(LUNG_ARGS + ["--group", "sex", "--analysis", "logrank", "--mechanism", "rrr",
                                        "--trials", "20", "--record-trials", "20"], capsys)
    assert code == 0 and out["protects"] == "the group label only"


@pytest.mark.parametrize("extra", [
    ["--analysis", "weibull", "--mechanism", "laplace-counts"],
    ["--analysis", "km", "--mechanism", "laplace-counts", "--target", "9999"],
    ["--analysis", "regression", "--mechanism", "output"],
    ["--analysis", "logrank", "--mechanism", "laplace-counts"],
    ["--analysis", "km", "--mechanism", "laplace-counts", "--trials", "2"],
    ["--analysis", "km", "--mechanism", "laplace-counts", "--epsilon", "0"],
    ["--analysis", "km", "--mechanism", "rrr"],
    ["--analysis", "survival", "--mechanism", "laplace-counts"],
])
def test_cli_bad_input_exits_2_with_one_line(capsys, extra):
    code, _, err = run_cli(LUNG_ARGS + extra, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")


# ----------------------------------------------------------------------------------------- report
def test_report_section_in_a_review_report(lung):
    cohort, public = lung
    rep = Report("Audit", cohort.name, Ledger(), kind="review")
    res = figures.report_section(rep, cohort, public, LaplaceCounts(1.0), trials=200)
    assert rep.sections[-1].title == "Privacy audit" and rep.sections[-1].confidential
    html = rep.to_html()
    assert "Privacy audit" in html and "Empirical epsilon" in html and "influential points" in html
    assert res.attack.epsilon_lower <= 1.0
    with pytest.raises(ParameterError):
        figures.report_section(Report("x", cohort.name, Ledger()), cohort, public, LaplaceCounts(1.0), trials=50)


def test_report_command_adds_the_audit_section(tmp_path, capsys):
    out = tmp_path / "r.html"
    code = main(["report", "--data", "lung", "--mechanism", "laplace-counts", "--grid", "0:1100:20", "--review",
                 "--out", str(out), "--json"])
    res = json.loads(capsys.readouterr().out)
    assert code == 0 and "Privacy audit" in res["sections"]
    assert "Empirical epsilon" in out.read_text()


# ----------------------------------------------------------------------------------------- app page
PAGE = str(__import__("pathlib").Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "6_Privacy_audit.py")


def _page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.run()
    assert not at.exception
    return at


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_page_runs_the_audit_without_charging_the_ledger():
    at = _page()
    assert "not charged to the privacy ledger" in at.info[0].value
    assert any(e.label == "What am I looking at?" for e in at.expander)
    assert not at.metric  # nothing runs before the button
    at.select_slider(key="au_runs_km_laplace-counts").set_value(100).run()  # 100 runs and 100 records per data set
    at.button(key="au_run").click().run()
    assert not at.exception
    m = _metrics(at)
    assert m["Charged epsilon"] == "1"
    assert float(m["Empirical epsilon lower bound"]) <= 1.0
    assert "at most 46% advantage." in at.success[0].value
    assert "the strongest attack on the whole release record could tell" in at.success[0].value
    assert any("fields** (" in c.value and "runs per data set" in c.value for c in at.caption)  # what was attacked
    assert float(m["AUC of the attack"]) >= 0.5 and m["Attacker's advantage (strongest attack)"].endswith("%")
    assert any("most exposed subject" in md.value for md in at.markdown)
    assert len(at.get("plotly_chart")) == 3
    ledger = at.session_state["ledger"] if "ledger" in at.session_state else None
    assert ledger is None or not ledger.entries  # an audit is not a release
    # a rerun with the same settings comes from the cache and shows the same numbers
    at.run()
    assert _metrics(at) == m


def test_page_audits_weibull_and_a_chosen_row():
    at = _page()
    at.selectbox(key="au_analysis").set_value("weibull").run()
    at.selectbox(key="au_mechanism_weibull").set_value("laplace").run()
    at.radio(key="au_target_mode").set_value("a row I choose").run()
    at.number_input(key="au_target_row").set_value(12).run()
    at.select_slider(key="au_runs_weibull_laplace").set_value(40).run()  # 40 runs and 40 records per data set
    at.button(key="au_run").click().run()
    assert not at.exception
    assert any("row 12" in md.value and "chosen by the user" in md.value for md in at.markdown)
    assert float(_metrics(at)["Empirical epsilon lower bound"]) <= 1.0


def test_page_regression_and_non_private_release():
    at = _page()
    at.selectbox(key="au_analysis").set_value("regression").run()
    at.selectbox(key="au_mechanism_regression").set_value("nonprivate").run()
    at.select_slider(key="au_runs_regression_nonprivate").set_value(200).run()
    at.button(key="au_run").click().run()
    assert not at.exception
    m = _metrics(at)
    assert m["Charged epsilon"] == "no noise: not private"
    # no bound on the advantage without noise (not "at most 100%")
    assert any("no bound: no noise: not private" in c.value for c in at.caption)
    # a deterministic release that the target changes: the outputs never overlap, the empirical epsilon is infinite
    assert m["Empirical epsilon lower bound"] == "infinite"
    # told apart every time: a red box, never a green one beside the red "do not publish"
    assert any("not private" in e.value for e in at.error) and not at.success


def test_page_starts_from_the_release_chosen_on_the_curves_page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state["sc_mechanism"] = "time-indexed"
    at.session_state["sc_epsilon"] = 2.0
    at.session_state["sc_opt_alpha"] = 0.0  # the curves page's option widget
    at.run()
    assert at.selectbox(key="au_mechanism_km").value == "time-indexed"
    assert at.select_slider(key="au_epsilon_km").value == 2.0
    assert any("alpha = 0.0" in c.value.replace("\\", "") for c in at.caption)  # captions are escaped Markdown
    at.select_slider(key="au_runs_km_time-indexed").set_value(200).run()
    at.button(key="au_run").click().run()
    assert not at.exception
    assert _metrics(at)["Charged epsilon"] == "2"


def test_regression_audit_scores_the_released_information_matrix_too(lung):
    """Objective perturbation with an information share releases w~ and H~: the audit's releases hold both (d + d(d+1)/2
    coordinates), name the matrix as its own statistic, and the strongest attack stays within the charge."""
    cohort, public = lung
    adapter = runner.make_adapter("regression", "objective", 1.0, cohort, public, record=True, covariates=("age", "sex"),
                                  information_share=0.2, n_public=228,  # n and the range declared: it stands
                                  ranges={"age": (18.0, 100.0), "sex": (1.0, 2.0)})
    assert adapter.mechanism.information_share == 0.2
    d = adapter.pp.dim
    rel = adapter.releases(adapter.default_target(), 40, seed=3)
    assert rel.released_in.shape == (40, d + d * (d + 1) // 2) == rel.released_out.shape
    assert list(rel.focus["information matrix"]) == list(range(d, d + d * (d + 1) // 2))
    result = runner.audit(adapter, trials=200, seed=5, record_trials=8)  # its reader simulates: a few records
    assert result.within_charge is True and result.empirical_epsilon <= 1.0
    assert result.record is not None and "released.information[0][1][1]" in result.attacked_fields
    plain = runner.make_adapter("regression", "objective", 1.0, cohort, public, covariates=("age", "sex"))
    assert plain.releases(plain.default_target(), 5, seed=3).released_in.shape == (5, d)


def test_differencing_sentence_names_the_group_by_its_label():
    from dpsurv_core.audit.exposure import Differencing

    d = Differencing(3, [{"cell": "events", "group": "2"}], {"group": "2", "kind": "event"},
                     "The two releases differ in one event cell in group 2: the removed person had an event.")
    assert d.named({"2": "Female"}.get) == ("The two releases differ in one event cell in group Female: the removed "
                                            "person had an event.")
    assert Differencing(3, [], {"group": None}, "identical").named(str.upper) == "identical"


def test_audit_states_the_guarantee_as_run(capsys):
    """Output perturbation with n read off the data (not DP) and saa with its blocks read off the data: the audit
    says what the release command says, no guarantee, not "exact"; with n declared the guarantee stands."""
    for extra in (["--analysis", "regression", "--mechanism", "output", "--covariates", "age,sex"],
                  ["--analysis", "weibull", "--mechanism", "saa"]):
        code, out, _ = run_cli(LUNG_ARGS + extra + ["--trials", "20", "--record-trials", "6"], capsys)
        assert code == 0 and out["guarantee"].startswith("none: not differentially private")
        assert out["formal_guarantee"] is False and "not differentially private as run" in out["sentence"]
        assert "guarantee of epsilon" not in out["sentence"] and "as run this release" not in out["sentence"]
        assert out["within_charge"] is None and out["advantage_bound"] is None  # no guarantee to be within
        assert any(d["dp"] is False for d in out["disclosures"])
    # a group cut at the data's median, disclosed while loading the data, voids it too
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "laplace-counts", "--group", "age:median",
                                        "--trials", "20"], capsys)
    assert code == 0 and out["formal_guarantee"] is False and out["guarantee"].startswith("none: not differentially")
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "regression", "--mechanism", "output", "--covariates", "age,sex",
                                        "--n-public", "228", "--range", "age:18:100", "--range", "sex:1:2",
                                        "--trials", "20", "--record-trials", "6"], capsys)
    assert code == 0 and out["guarantee"] == "exact" and out["formal_guarantee"] is True
    assert "the guarantee of epsilon 1 is that" in out["sentence"]


def test_audit_lists_each_disclosure_once(capsys):
    """A regression audit's data and its design both name the covariate ranges: listed once each."""
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "regression", "--mechanism", "output", "--covariates", "age,sex",
                                        "--trials", "20", "--record-trials", "6"], capsys)
    keys = [(d["parameter"], d["message"]) for d in out["disclosures"]]
    assert code == 0 and len(keys) == len(set(keys)) and any(p == "n" for p, _ in keys)


def test_comparison_rows_name_the_differencing_group_by_its_label():
    from dpsurv_core.audit.comparison import ComparisonRow

    row = ComparisonRow("round", "Rounding", "disclosure control", None, 0.1, 0.2, 1.0, 1.0, 1.0, math.inf, True,
                        "none", "The two releases differ only in group 1: the removed person was in that group.", "1")
    assert row.differencing_named({"1": "Male"}.get) == ("The two releases differ only in group Male: the removed "
                                                         "person was in that group.")
    from dataclasses import replace

    assert replace(row, differencing_group=None).differencing_named(str.upper) == row.differencing


def test_an_epsilon_test_that_labels_every_run_alike_gives_no_point_estimate(capsys):
    """rrr's log-rank release on lung at epsilon 2 with 100 runs: the epsilon test's threshold says 'yes' to every
    held-out run (TPR = FPR = 1), so it has no point estimate and a sentence says to run more trials."""
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "logrank", "--group", "sex", "--mechanism", "rrr", "--epsilon",
                                        "2", "--trials", "100", "--record-trials", "0"], capsys)
    assert code == 0 and out["tpr"] == out["fpr"] == 1.0
    assert out["empirical_epsilon_point"] is None and "--trials 1000" in out["empirical_epsilon_note"]
    assert out["empirical_epsilon_lower"] == 0.0 and out["advantage"] > 0.1


def test_influential_points_come_with_what_the_noise_alone_moves(capsys):
    """Two runs on D differ by their noise alone: laplace-counts at epsilon 1 moves about as many grid points between
    two runs on D as between D and D' (one patient does not show through), a deterministic rule moves none."""
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "laplace-counts", "--epsilon", "1",
                                        "--trials", "100"], capsys)
    d, alone = out["influential_points_per_trial"], out["influential_points_noise_alone_per_trial"]
    assert code == 0 and alone["0.05"] > 2 and abs(d["0.05"] - alone["0.05"]) < 0.35 * alone["0.05"]
    code, out, _ = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "round", "--trials", "20"], capsys)
    assert code == 0 and out["influential_points_noise_alone_per_trial"]["0.05"] == 0.0
