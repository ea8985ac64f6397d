"""Labels that are true and warnings that reach the user: epsilon = inf says "no noise: not private" in every
command, a release that read a value off the data outside epsilon says it is not DP, the data's warnings are added
to the analysis's (not put in their place), and the report carries the noise-aware band, limits and warnings."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pytest

from dpsurv_core.audit.attack import Attack
from dpsurv_core.cli import main
from dpsurv_core.privacy.ledger import NO_NOISE, PrivacyCost, record_outputs


def run(capsys, *argv: str) -> dict:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(autouse=True)
def _ledger(tmp_path, monkeypatch):
    monkeypatch.setenv("DPSURV_LEDGER", str(tmp_path / "ledger.sqlite"))


def test_infinite_epsilon_protects_nothing():
    cost = PrivacyCost(float("inf"))
    assert cost.guarantee == NO_NOISE and cost.protects.startswith("nothing") and not cost.private
    assert cost.sentence().startswith(NO_NOISE)
    assert PrivacyCost(1.0).private and PrivacyCost(1.0).guarantee == "exact"


@pytest.mark.parametrize("argv", [
    ["weibull", "--data", "lung", "--mechanism", "laplace", "--epsilon", "inf"],
    ["weibull", "--data", "lung", "--mechanism", "mle"],
    ["weibull", "--data", "lung", "--mechanism", "mle", "--seed", "1"],
    ["regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--epsilon", "inf"],
    ["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "nonprivate"],
    ["regression", "--data", "lung", "--covariates", "age,sex", "--mechanism", "cox"],
    ["logrank", "--data", "lung", "--group", "sex", "--mechanism", "nonprivate"],
    ["km", "--data", "lung", "--mechanism", "nonprivate", "--seed", "1"],
])
def test_no_noise_is_labelled_not_private(capsys, argv):
    """A non-private estimator, or epsilon = inf, says "no noise: not private" (not "not DP as run" with a reason
    about noise it does not add), its intervals say they carry no noise, and a seed changes nothing."""
    o = run(capsys, *argv)
    assert o["guarantee"] == NO_NOISE and o["protects"].startswith("nothing (no noise")
    assert o["privacy"].startswith(NO_NOISE)
    assert "protecting the subject" not in json.dumps(o) and "noise is scaled" not in json.dumps(o)
    assert o.get("private", False) is False
    assert o["interval_includes_noise"] is False
    assert o["simulation"] is False and "seeded noise" not in o["privacy_note"]


def test_audit_without_noise_has_no_formal_guarantee(capsys):
    o = run(capsys, "audit", "--analysis", "km", "--mechanism", "laplace-counts", "--epsilon", "inf", "--data", "lung",
            "--trials", "20", "--seed", "1")
    assert o["formal_guarantee"] is False and o["guarantee"] == NO_NOISE
    # nothing was charged, so there is no charge to be within (a certain distinction is not "within" anything)
    assert o["within_charge"] is None and o["epsilon_charged"] is None


@pytest.mark.parametrize("analysis", ["km", "logrank"])
def test_audit_of_rounding_targets_a_subject_the_rule_exposes(capsys, analysis):
    """Rounding reveals about 70% of lung's subjects with certainty; the default target is one of them (for log-rank
    the most influential subject on the chi-square is not: its removal left the rounded table unchanged and the
    audit printed a safe 0% advantage)."""
    o = run(capsys, "audit", "--analysis", analysis, "--mechanism", "round", "--data", "lung", "--group", "sex",
            "--trials", "40", "--seed", "1")
    assert "among the subjects whose removal changes the released table" in o["target"]["why"]
    assert o["advantage"] == 1.0 and o["distinguishable_with_certainty"] is True


def test_mechanism_catalogue_gives_no_formal_guarantee_to_non_private_estimators(capsys):
    code = main(["mechanisms", "--json"])
    listing = json.loads(capsys.readouterr()[0])
    rows = listing if isinstance(listing, list) else listing["mechanisms"]
    for row in rows:
        if not row["private"]:
            assert row["formal_guarantee"] is False, row["id"]
    assert code == 0


def test_a_release_that_reads_n_off_the_data_says_it_is_not_dp(capsys):
    o = run(capsys, "regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--epsilon", "0.5",
            "--seed", "1", "--range", "age:18:100")
    assert o["guarantee"].startswith("none: not differentially private") and "n read off" in o["guarantee"]
    assert o["privacy"].startswith("not differentially private")
    declared = run(capsys, "regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--epsilon",
                   "0.5", "--seed", "1", "--n-public", "228", "--range", "age:18:100")
    assert declared["guarantee"] == "exact"
    # a covariate range read off the data sets the scale the noise is calibrated to: not DP either (lung's ages 39
    # to 82 would be published exactly)
    ranged = run(capsys, "regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--epsilon",
                 "0.5", "--seed", "1", "--n-public", "228")
    assert ranged["guarantee"] == "none: not differentially private (range:age read off the data)"
    assert any(d["parameter"] == "range:age" and d["dp"] is False for d in ranged["disclosures"])


def test_values_read_off_the_data_are_named_outside_the_guarantee(capsys):
    """lung by ph.karno (no documented categories) with the horizon and categories read off the data, in a
    simulation: epsilon covers the noisy counts, and the privacy sentence says the horizon and categories are published
    as read (a release would be refused: test_declared); declared, the sentence is the cost's."""
    o = run(capsys, "km", "--data", "lung", "--group", "ph.karno", "--epsilon", "1", "--seed", "1")
    assert o["guarantee"] == "exact"
    assert o["privacy"].endswith("; the horizon and the group categories read off the data are published as read, "
                                 "outside this guarantee")
    o = run(capsys, "km", "--data", "lung", "--epsilon", "1", "--seed", "1", "--grid", "0:1100:20")
    assert o["privacy"] == o["cost"]


def test_data_warnings_are_added_to_the_analysis_warnings(capsys):
    """flchain has times equal to 0 (a data warning); its sex odds ratio is unreadable at epsilon 1 (analysis
    warnings): both reach the JSON, the data's first."""
    o = run(capsys, "regression", "--data", "flchain", "--covariates", "sex", "--mechanism", "output", "--epsilon", "1",
            "--seed", "1")
    w = o["warnings"]
    assert "equal to 0" in w[0]
    assert any("sign of the coefficient flips" in s for s in w) and len(w) >= 3


def test_advantage_is_never_below_a_coin_toss():
    att = Attack(score="s", orientation=1, threshold=0.0, tpr=0.5, fpr=0.5, tpr_ci=(0.4, 0.6), fpr_ci=(0.4, 0.6),
                 epsilon_lower=0.0, epsilon_point=0.0, runs=100, roc_fpr=np.array([0.0, 1.0]),
                 roc_tpr=np.array([0.0, 1.0]), auc=0.5, adv_tpr=0.45, adv_fpr=0.5, adv_tpr_ci=(0.35, 0.55),
                 adv_fpr_ci=(0.4, 0.6))
    assert att.advantage == 0.0 and att.advantage_held_out == pytest.approx(-0.05)


def test_landmark_and_rmst_after_follow_up_warn(capsys):
    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--epsilon", "1", "--seed", "2", "--landmarks",
            "365,5000", "--rmst", "5000")
    assert any("landmark time 5000" in w and "end of follow-up" in w for w in o["warnings"])
    assert any("RMST to 5000" in w for w in o["warnings"])
    inside = run(capsys, "km", "--data", "lung", "--group", "sex", "--epsilon", "1", "--seed", "2", "--landmarks",
                 "365", "--rmst", "700")
    assert not any("end of follow-up" in w for w in inside["warnings"])


def test_warnings_name_the_groups_by_their_labels(capsys):
    o = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--epsilon", "0.5", "--seed", "1")
    assert o["warnings"] and all("1 vs 2" not in w for w in o["warnings"])
    assert any("Male vs Female" in w for w in o["warnings"])


def test_report_carries_the_noise_aware_band_limits_landmarks_and_warnings(capsys, tmp_path):
    out = tmp_path / "r.html"
    run(capsys, "report", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "0.5",
        "--landmarks", "365", "--rmst", "900", "--conf-type", "log-log", "--horizon", "1100", "--out", str(out))
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", "", out.read_text(), flags=re.S))))
    assert "R's log-log type, including the privacy noise" in text
    assert "Survival at the landmark times" in text and "Restricted mean survival time" in text
    assert "Number at risk" in text and "Male" in text and "Female" in text
    assert "Read with care" in text and "Weak test" in text


def test_report_shows_the_log_rank_tables_its_record_keeps(capsys, tmp_path, monkeypatch):
    """rrr: the report command prints the tests on the de-biased counts and their sentences, as a report rebuilt from
    its ledger record does (one path: the record's tests)."""
    monkeypatch.setenv("DPSURV_LEDGER", str(tmp_path / "l.db"))
    out = tmp_path / "r.html"
    run(capsys, "report", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--horizon", "1100",
        "--out", str(out))
    text = html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", "", out.read_text(), flags=re.S))))
    from dpsurv_core.privacy.ledger import LedgerStore
    from dpsurv_core.report.html import logrank_tables

    store = LedgerStore(tmp_path / "l.db")
    (rec,) = store.release_records(store.records()[0].fingerprint)
    captions = [c for _, c in logrank_tables(record_outputs(rec.body))]
    assert len(captions) == 2 and all(c in text for c in captions)
    assert "Log-rank tests on the de-biased counts" in text
    assert all(w in text for w in record_outputs(rec.body)["test_warnings"])


def test_report_refuses_seed_and_repeat(capsys, tmp_path):
    code = main(["report", "--data", "lung", "--out", str(tmp_path / "r.html"), "--seed", "1", "--json"])
    assert code == 2


def test_random_disclosure_control_bands_carry_the_perturbation(capsys):
    for mech in ("random-round", "cell-key"):
        o = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", mech, "--seed", "1")
        assert o["interval_includes_noise"] is True and "bootstrap" in o["interval_method"], mech
    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "round", "--horizon", "1100")
    assert o["interval_includes_noise"] is False and "does not include" in o["interval_method"]


def test_time_indexed_without_noise_has_the_non_private_interval(capsys):
    o = run(capsys, "km", "--data", "lung", "--mechanism", "time-indexed", "--epsilon", "inf")
    assert "Greenwood" in o["interval_method"] and not o["interval_includes_noise"]
    assert o["curves"][0]["lower"][5] is not None


def test_weibull_warns_when_the_estimate_lies_outside_the_range(capsys):
    o = run(capsys, "weibull", "--data", "lung", "--mechanism", "laplace", "--epsilon", "0.01", "--seed", "1")
    est, iv = o["estimates"][0]["shape"], o["intervals"][0]["shape"]
    assert est > iv["upper"] == 10.0
    assert any("lies above the largest value" in w and "need not hold the estimate" in w for w in o["warnings"])
    o = run(capsys, "weibull", "--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "1", "--seed", "1")
    if o["intervals"][0]["shape"]["upper"] >= 10.0:
        assert any("reaches gamma = 10" in w for w in o["warnings"])


def test_ledger_report_shows_the_bands_and_warnings_of_a_curve_release(capsys, tmp_path):
    from dpsurv_core.privacy.ledger import LedgerStore
    from dpsurv_core.report.html import ledger_report

    run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "0.5",
        "--horizon", "1100")
    store = LedgerStore(tmp_path / "ledger.sqlite")
    (fingerprint,) = store.datasets()
    records = store.release_records(fingerprint)
    outputs = record_outputs(records[0].body)
    assert outputs["interval_includes_noise"] is True and len(outputs["lower"]) == 2
    text = html.unescape(ledger_report("r", "lung", store.ledger(fingerprint), records))
    assert "R's log type, including the privacy noise" in text and "Read with care" in text


def test_bands_do_not_jump_back_to_one_once_nobody_is_at_risk(capsys):
    o = run(capsys, "km", "--data", "lung", "--group", "sex", "--epsilon", "1", "--seed", "1")
    stopped_somewhere = False
    for c in o["curves"]:
        risk = np.array([np.nan if x is None else x for x in c["at_risk"]], float)
        stopped = np.logical_or.accumulate(risk <= 0)
        stopped_somewhere |= bool(stopped.any())
        lower = np.array([np.nan if x is None else x for x in c["lower"]], float)
        upper = np.array([np.nan if x is None else x for x in c["upper"]], float)
        assert np.all(lower[stopped] == 0)  # nothing is known there: from 0 ...
        if stopped.any() and (~stopped).any():  # ... to the last upper limit before
            assert np.allclose(upper[stopped], upper[~stopped][-1])
        for key in ("upper", "upper_linear"):
            up = np.array([np.nan if x is None else x for x in c[key]], float)
            ok = up[~np.isnan(up)]
            assert np.all(np.diff(ok) <= 1e-12), key
    assert stopped_somewhere


def test_report_of_a_not_dp_release_says_so(capsys, tmp_path):
    out = tmp_path / "r.html"
    o = run(capsys, "report", "--data", "lung", "--group", "age:median", "--horizon", "1100",
            "--accept-disclosure", "cut:age", "--out", str(out))
    assert o["guarantee"].startswith("none: not differentially private")
    text = html.unescape(re.sub(r"<[^>]+>", " ", out.read_text()))
    assert "Privacy: epsilon = 1, but not differentially private as run" in text
    assert "released with noise, not differentially private as run." in text and "protecting the subject" not in text
    assert "as run, the release protects no one formally" in text  # the ledger line says what it charged all the same


def test_rrr_record_keeps_the_debiased_curve_with_its_band(capsys, tmp_path):
    from dpsurv_core.privacy.ledger import LedgerStore

    run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--horizon", "1100")
    store = LedgerStore(tmp_path / "ledger.sqlite")
    (fingerprint,) = store.datasets()
    outputs = record_outputs(store.release_records(fingerprint)[0].body)
    assert "lower" not in outputs and "upper" not in outputs  # the reported-label curve has no noise-aware band
    s, lo, up = (np.array(outputs[k], float) for k in ("debiased_survival", "debiased_lower", "debiased_upper"))
    assert s.shape == lo.shape == up.shape and np.all(lo <= s + 1e-12) and np.all(s <= up + 1e-12)


def test_disclosure_control_says_what_its_band_leaves_out(capsys):
    rounded = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "round", "--horizon", "1100")
    assert any(w.startswith("This band is Greenwood's") and "rounding changed them" in w for w in rounded["warnings"])
    rr = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "random-round", "--seed", "1")
    assert any("fewer than 50 subjects remain at risk" in w for w in rr["warnings"])
    dp = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--seed", "1")
    assert not any("Greenwood's" in w or "random rounding" in w for w in dp["warnings"])


@pytest.mark.parametrize("content", [None, b"\x00\x01binary", b"{not json"])
def test_a_bad_labels_file_stops_before_any_release_is_charged(tmp_path, capsys, content):
    path = tmp_path / "labels.json"
    if content is not None:
        path.write_bytes(content)
    code = main(["km", "--data", "lung", "--labels", str(path), "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.startswith("error: --labels") and err.count("\n") == 1
    assert not (tmp_path / "ledger.sqlite").exists()  # nothing was released, so nothing was charged


def test_a_run_that_is_not_dp_as_run_is_not_labelled_private(capsys):
    """Sample and aggregate with its number of blocks read off the data: no guarantee, so not "private" either."""
    o = run(capsys, "weibull", "--data", "lung", "--mechanism", "saa", "--seed", "2")
    assert o["guarantee"].startswith("none: not differentially private") and o["private"] is False
    declared = run(capsys, "weibull", "--data", "lung", "--mechanism", "saa", "--blocks", "10", "--seed", "2")
    assert declared["guarantee"] == "exact" and declared["private"] is True


def test_the_audit_target_s_group_has_its_label(capsys):
    o = run(capsys, "audit", "--analysis", "km", "--mechanism", "laplace-counts", "--data", "lung", "--group", "sex",
            "--trials", "20", "--seed", "1", "--target", "0")
    assert o["target"]["group"] == "1" and o["target"]["group_label"] == "Male"
    # the sentence that says why this subject was audited names the group as every other output does
    assert "group Male)" in o["target"]["why"] and "group 1)" not in o["target"]["why"]
    rr = run(capsys, "audit", "--analysis", "km", "--mechanism", "rrr", "--data", "lung", "--group", "sex",
             "--trials", "20", "--seed", "1")
    assert rr["target"]["new_group"] is not None
    assert f"group label to {rr['target']['new_group_label']}" in rr["target"]["why"]


def test_infinite_epsilon_names_no_simulation(capsys):
    """--epsilon inf draws nothing: its noise field says so, not a simulation's seed (it is not a simulation)."""
    o = run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "inf")
    assert o["noise"] == "none (epsilon = inf: nothing is drawn)" and o["simulation"] is False
    assert run(capsys, "km", "--data", "lung", "--mechanism", "nonprivate")["noise"] == "none"
