"""The audit's headline: the strongest attack's advantage with its 95% interval, and the AUC."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from dpsurv_core.audit import attack, figures, runner
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid


@pytest.fixture(scope="module")
def lung() -> tuple[Cohort, PublicParameters]:
    cohort = load_bundled("lung", group="sex", covariates=("age", "sex", "meal.cal"))
    return cohort, PublicParameters.derive(cohort, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))


def _audit(lung, mechanism: str, epsilon: float, trials: int, seed: int = 0, record_trials: int = 0
           ) -> runner.AuditResult:
    """The audit of the mechanism's output (``record_trials`` 0: the headline is that attack; the record's attack has
    its own tests in test_record_audit)."""
    cohort, public = lung
    return runner.audit(runner.make_adapter("km", mechanism, epsilon, cohort, public), trials=trials, seed=seed,
                        record_trials=record_trials)


def _pairs_auc(a: list[float], b: list[float]) -> float:
    """Pr[A > B] + Pr[A = B] / 2 by counting every pair."""
    wins = sum((x > y) + 0.5 * (x == y) for x in a for y in b)
    return wins / (len(a) * len(b))


def test_no_noise_gives_advantage_and_auc_near_one():
    x_in, x_out = np.full((400, 3), [5.0, 2.0, 1.0]), np.full((400, 3), [4.0, 2.0, 1.0])
    att = attack.distinguish(x_in, x_out)
    assert att.advantage == 1.0 and att.advantage_upper == 1.0 and att.advantage_lower > 0.95
    assert att.auc == 1.0


def test_nonprivate_release_on_lung_is_told_apart(lung):
    res = _audit(lung, "nonprivate", 1.0, 200)
    a = res.attack
    assert a.advantage >= 0.99 and a.advantage_lower >= 0.9 and a.auc >= 0.99
    assert "with at most 100% advantage" in res.sentence()


def test_small_epsilon_advantage_interval_reaches_below_the_bound():
    """Laplace(0, 1/eps) against Laplace(1, 1/eps) is eps-DP: the interval must hold advantages within tanh(eps/2)."""
    eps = 0.2
    rng = np.random.default_rng(3)
    x_in = 1.0 + rng.laplace(0.0, 1.0 / eps, (4000, 1))
    x_out = rng.laplace(0.0, 1.0 / eps, (4000, 1))
    att = attack.distinguish(x_in, x_out, {"the coordinate": np.array([0])})
    bound = (math.exp(eps) - 1) / (math.exp(eps) + 1)
    assert att.advantage_lower <= bound
    assert att.advantage_lower <= att.advantage <= att.advantage_upper
    assert 0.5 <= att.auc <= 0.5 + bound  # AUC <= (1 + tanh(eps/2)) / 2 for an eps-DP pair, with room for noise


def test_laplace_counts_at_small_epsilon_on_lung_stays_within_the_bound(lung):
    res = _audit(lung, "laplace-counts", 0.1, 1000)
    assert res.attack.advantage_lower <= attack.advantage_bound(0.1)


def test_auc_is_the_mann_whitney_statistic():
    a = [3.0, 1.0, 2.0, 2.0, 5.0, 0.5]
    b = [2.0, 0.0, 1.0, 4.0, 2.0]
    expected = _pairs_auc(a, b)
    assert expected == pytest.approx(stats.mannwhitneyu(a, b).statistic / (len(a) * len(b)))
    assert attack.auc_mann_whitney(np.array(a), np.array(b)) == pytest.approx(expected, abs=1e-12)
    assert attack.roc_curve(np.array(a), np.array(b))[2] == pytest.approx(expected, abs=1e-12)
    assert attack.measure(np.array(a), np.array(b), 1.5).auc == pytest.approx(expected, abs=1e-12)
    # given scores: the AUC is that of the held-out (second) halves
    rng = np.random.default_rng(4)
    s_in, s_out = rng.normal(0.7, 1.0, 60).round(1), rng.normal(0.0, 1.0, 40).round(1)
    res = attack.empirical_epsilon(s_in, s_out)
    assert res.auc == pytest.approx(_pairs_auc(list(s_in[30:]), list(s_out[20:])), abs=1e-12)


def test_advantage_interval_is_clopper_pearson_combined_conservatively():
    rng = np.random.default_rng(5)
    s_in, s_out = rng.normal(1.0, 1.0, 800), rng.normal(0.0, 1.0, 800)
    res = attack.empirical_epsilon(s_in, s_out)
    tp = int(np.sum(s_in[400:] >= res.adv_threshold))
    fp = int(np.sum(s_out[400:] >= res.adv_threshold))
    (t_lo, t_hi), (f_lo, f_hi) = attack.clopper_pearson(tp, 400, 0.975), attack.clopper_pearson(fp, 400, 0.975)
    assert res.advantage == pytest.approx(tp / 400 - fp / 400)
    assert res.advantage_lower == pytest.approx(max(t_lo - f_hi, 0.0))
    assert res.advantage_upper == pytest.approx(t_hi - f_lo)
    # the threshold was chosen on the first halves: it maximises TPR - FPR there
    fit = [np.mean(s_in[:400] >= t) - np.mean(s_out[:400] >= t) for t in np.concatenate([s_in[:400], s_out[:400]])]
    assert np.mean(s_in[:400] >= res.adv_threshold) - np.mean(s_out[:400] >= res.adv_threshold) == pytest.approx(max(fit))


def test_headline_is_at_least_the_epsilon_test_advantage_on_lung(lung):
    """Seed 0, laplace-counts at epsilon 1: the strongest attack is no weaker than the epsilon-maximising test."""
    res = _audit(lung, "laplace-counts", 1.0, 1000, seed=0)
    a = res.attack
    assert a.advantage >= a.epsilon_test_advantage
    assert a.advantage_lower <= a.advantage <= a.advantage_upper <= 1.0
    assert a.advantage_lower > 0.05 and a.auc > 0.55
    d = res.to_dict()
    assert d["advantage"] == a.advantage and d["advantage_upper"] == a.advantage_upper and d["auc"] == a.auc
    assert d["epsilon_test_advantage"] == pytest.approx(d["tpr"] - d["fpr"])
    assert f"with at most {100 * a.advantage_upper:.0f}% advantage over a coin toss" in d["sentence"]
    table = dict(figures.summary_table(res).itertuples(index=False))
    assert table["attacker's advantage, strongest attack (95% CI)"].startswith(f"{a.advantage:.3f} (")
    assert table["empirical epsilon lower bound (95%)"] == f"{a.epsilon_lower:.3f}"


def test_summary_without_noise_claims_no_bound(lung):
    """epsilon inf: the table says "no noise: not private" and names no bound on the advantage (not "1.000")."""
    table = dict(figures.summary_table(_audit(lung, "laplace-counts", math.inf, 200, seed=0)).itertuples(index=False))
    assert table["epsilon charged by the mechanism"] == "no noise: not private"
    assert table["advantage an epsilon-DP release allows at most"] == "no bound: no noise, not private"
