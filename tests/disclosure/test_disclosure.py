"""Statistical disclosure control: the five methods, their exposure (exact, checked by brute force), differencing,
the ledger's handling of a release with no epsilon, and the CLI JSON."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as hs

from dpsurv_core.audit.exposure import differencing, exposure
from dpsurv_core.curves.result import exact_counts
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.disclosure.cell_key import CellKey, perturbation, record_keys
from dpsurv_core.disclosure.rounding import RandomRound, Round, random_round, round_to_base
from dpsurv_core.disclosure.smooth_steps import SmoothSteps
from dpsurv_core.disclosure.suppress_small_cells import SuppressSmallCells
from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import DISCLOSURE_CONTROL, NO_FORMAL, Ledger, LedgerStore, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise
from tests.cli_run import fails, run

SECRET = b"a data holder's secret for tests!"
SDC_IDS = ("suppress-small-cells", "round", "random-round", "cell-key", "smooth-steps")


def cohort(time, event, group=None) -> Cohort:
    return Cohort(np.asarray(time, float), np.asarray(event, np.int64),
                  None if group is None else np.asarray(group, dtype=object), name="hand-made")


def public(c: Cohort, edges) -> PublicParameters:
    return PublicParameters.derive(c, horizon=float(edges[-1]), grid=TimeGrid(np.asarray(edges, float), "equal"))


def brute_force_exposure(mech, c: Cohort, pub: PublicParameters) -> np.ndarray:
    """Remove each subject in turn and recompute the released table (the slow way)."""
    base = mech.compute(c, pub, None).counts.cells()[0]
    out = []
    for i in range(c.n):
        keep = np.ones(c.n, bool)
        keep[i] = False
        other = mech.compute(c.subset(keep), pub, None).counts.cells()[0]
        out.append(bool(np.any(np.abs(other - base) > 1e-9)))
    return np.array(out)


# ------------------------------------------------------------------------------------------- exposure is exact
def test_a_cohort_where_removing_anyone_changes_a_rounded_count():
    # three subjects: n = 3 rounds to 5, n = 2 rounds to 0, so every removal changes the table
    c = cohort([1, 2, 7], [1, 0, 1])
    pub = public(c, [0, 5, 10])
    e = exposure(Round(5), c, pub)
    assert (e.share, e.exposed, e.units) == (1.0, 3, 3)


def test_a_cohort_where_no_removal_changes_a_rounded_count():
    # n = 12 (10 either way), bin 1: 6 events (5 either way), bin 2: 2 events (0 either way), 4 censored (5 either way)
    c = cohort([1, 2, 2, 3, 4, 4, 7, 8, 6, 7, 8, 9], [1] * 8 + [0] * 4)
    pub = public(c, [0, 5, 10])
    ex = exact_counts(c, pub.grid, pub)
    assert ex.n.tolist() == [12] and ex.events[0, 0].tolist() == [6, 2] and ex.censored[0].tolist() == [0, 4]
    e = exposure(Round(5), c, pub)
    assert (e.share, e.exposed) == (0.0, 0)
    assert not brute_force_exposure(Round(5), c, pub).any()


@pytest.mark.parametrize("mech", [Round(5), Round(3), SuppressSmallCells(5), SuppressSmallCells(3), SmoothSteps(3),
                                  CellKey(SECRET)], ids=lambda m: f"{m.name}")
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorised_exposure_equals_removing_each_subject(mech, seed):
    rng = np.random.default_rng(seed)
    n = 40
    c = cohort(rng.integers(1, 30, n).astype(float), rng.integers(0, 2, n), rng.choice(["a", "b"], n))
    pub = public(c, np.linspace(0, 30, 7))
    e = exposure(mech, c, pub)
    truth = brute_force_exposure(mech, c, pub)
    assert np.array_equal(e.mask, truth)
    assert e.share == pytest.approx(truth.mean())


def test_dp_and_random_rounding_expose_nobody_with_certainty_and_exact_counts_everyone():
    c = cohort([1, 2, 7, 8, 9], [1, 0, 1, 1, 0])
    pub = public(c, [0, 5, 10])
    assert exposure(RandomRound(5), c, pub).share == 0.0
    assert exposure(catalogue.get("curves", "laplace-counts").build(1.0), c, pub).share == 0.0
    assert exposure(catalogue.get("curves", "nonprivate").build(), c, pub).share == 1.0


# ------------------------------------------------------------------------------------------- the methods
def test_suppression_shows_less_than_five_and_holds_the_curve_flat():
    # bin 1: 6 events; bin 2: 2 events (suppressed); bin 3: 5 events
    c = cohort([1, 1, 2, 2, 3, 4, 6, 7, 11, 12, 12, 13, 14, 15, 16, 17, 18, 19, 20, 20],
               [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0])
    pub = public(c, [0, 5, 10, 15, 20])
    rel = SuppressSmallCells(5).compute(c, pub, None)
    table = rel.extra["table"]
    assert [r["events"] for r in table] == [6, "<5", 5, 0]
    assert [r["censored"] for r in table] == [0, 0, 0, 5]  # 15..19 censored in [15, 20); the two at 20 in no cell
    assert [r["at_risk"] for r in table] == [20, 14, 14, 9]  # 14 after bin 2: its 2 events withheld
    s = rel.curves.survival[0, 0]
    assert s[1] == s[0]  # the suppressed step is held flat
    assert s[0] == pytest.approx(1 - 6 / 20) and s[2] < s[1]
    assert rel.cost.epsilon is None and rel.cost.guarantee == NO_FORMAL
    assert any(not d.dp for d in rel.disclosures)


def test_rounding_rounds_every_cell_and_random_rounding_is_unbiased():
    assert round_to_base(np.array([0, 1, 2, 3, 7, 8, 12.5]), 5).tolist() == [0, 0, 0, 5, 5, 10, 15]
    x = np.array([0, 1, 2, 3, 4, 5, 13, 27], float)
    u = np.random.default_rng(3).random((40_000, x.size))
    draws = random_round(x[None], 5, u)
    assert set(np.unique(draws % 5)) == {0.0}
    assert np.all((draws >= 5 * np.floor(x / 5)) & (draws <= 5 * np.floor(x / 5) + 5))
    se = 5 * 0.5 / np.sqrt(u.shape[0])
    assert np.all(np.abs(draws.mean(0) - x) < 5 * se)  # unbiased (5 standard errors at most)
    assert np.array_equal(draws[:, 0], np.zeros(u.shape[0])) and np.all(draws[:, 5] == 5)


def test_random_rounding_draws_from_the_noise_source():
    c = cohort(np.arange(1, 31), np.ones(30, int))
    pub = public(c, [0, 10, 20, 30])
    a = RandomRound(5).compute(c, pub, SimulationNoise(1), trials=3).counts.cells()
    b = RandomRound(5).compute(c, pub, SimulationNoise(1), trials=3).counts.cells()
    assert np.array_equal(a, b) and a.shape[0] == 3
    with pytest.raises(ParameterError):
        RandomRound(5).compute(c, pub, None)


def test_random_rounding_to_zero_events_still_gets_a_band():
    """A group with a few events per bin, all released as 0: the curve stays at 1, but the truth may hold up to
    b - 1 events in each bin, so the bootstrap draws those hidden events (P(x | 0) proportional to b - x) and
    the band and the RMST interval reach below 1 and below the horizon (a world built from the zeros gave
    width 0)."""
    from dpsurv_core.cli.km import band_curves, conf_bands
    from dpsurv_core.curves.intervals import rmst_interval

    time = np.concatenate([np.arange(1.0, 41.0), [5.0, 15.0, 25.0, 35.0]])
    event = np.concatenate([np.zeros(40, int), np.ones(4, int)])  # one event in each of four bins, 44 subjects
    c = cohort(time, event)
    pub = public(c, [0, 10, 20, 30, 40])
    rel = next(r for r in (RandomRound(5).compute(c, pub, SimulationNoise(s)) for s in range(40))
               if r.counts.events.sum() == 0 and np.all(r.counts.at_risk() > 0))  # every bin still open
    curves = band_curves(rel)
    assert np.all(curves.survival == 1.0)
    lower, upper = conf_bands(curves, "log", True)  # R's default type, as km prints it
    assert lower[0, 0, -1] < 0.97 and upper[0, 0, -1] == 1.0
    value, lo, up = (x[0, 0] for x in rmst_interval(curves, 40.0, True))
    assert value == 40.0 and lo < 39.0 and up == 40.0
    tables = RandomRound(5).plugin_draws(rel.counts, 400, np.random.default_rng(0))
    hidden = tables.events[..., 0, :]
    assert set(np.unique(hidden)) <= {0.0, 1.0, 2.0, 3.0, 4.0}
    assert abs(hidden.mean() - 4 / 3) < 0.1  # the posterior mean (b - 1) / 3
    assert np.array_equal(tables.censored, np.repeat(rel.counts.censored, 400, axis=0))


def test_the_cell_key_perturbs_the_same_cell_the_same_way_twice():
    rng = np.random.default_rng(5)
    c = cohort(rng.integers(1, 50, 60).astype(float), rng.integers(0, 2, 60), rng.choice(["x", "y"], 60))
    pub = public(c, np.linspace(0, 50, 6))
    mech = CellKey(SECRET)
    a = mech.compute(c, pub, None).counts.cells()
    b = CellKey(SECRET).compute(c, pub, None).counts.cells()
    order = rng.permutation(c.n)  # the same records in another order: the same keys, the same table
    shuffled = Cohort(c.time[order], c.event[order], c.group[order], name="hand-made")
    d = CellKey(SECRET).compute(shuffled, pub, None).counts.cells()
    assert np.array_equal(a, b) and np.array_equal(a, d)
    exact = exact_counts(c, pub.grid, pub).cells()
    a = a[0]
    assert np.all(np.abs(a - exact) <= 2) and np.all(a >= 0) and np.all(a[exact == 0] == 0)
    # record keys: fixed per record, uniform-looking, unchanged for the others when one record leaves
    keys = record_keys(c, SECRET)
    keep = np.arange(c.n) != 7
    assert np.array_equal(record_keys(c.subset(keep), SECRET), keys[keep])
    assert 0 <= keys.min() and keys.max() < 1 and not np.array_equal(keys, record_keys(c, b"another secret, longer"))


def test_the_published_table_is_unbiased_and_never_negative():
    k = (np.arange(100_000) + 0.5) / 100_000
    for count in (0, 1, 2, 3, 10):
        p = perturbation(np.full(k.size, count), k)
        assert p.mean() == pytest.approx(0.0, abs=1e-9) and np.all(count + p >= 0)


def test_step_smoothing_leaves_at_least_k_events_per_step():
    rng = np.random.default_rng(2)
    c = cohort(rng.integers(1, 100, 80).astype(float), (rng.random(80) < 0.7).astype(int))
    pub = public(c, np.linspace(0, 100, 21))
    rel = SmoothSteps(5).compute(c, pub, None)
    d = rel.counts.events_total[0, 0]
    assert np.all((d == 0) | (d >= 5)) and d.sum() == exact_counts(c, pub.grid, pub).events_total.sum()
    s = rel.curves.survival[0, 0]
    assert np.count_nonzero(np.diff(np.concatenate([[1.0], s]))) == np.count_nonzero(d)


def test_too_few_events_for_one_step_are_withheld():
    c = cohort([1, 2, 6, 8], [1, 1, 0, 1])
    pub = public(c, [0, 5, 10])
    rel = SmoothSteps(5).compute(c, pub, None)
    assert rel.counts.events_total.sum() == 0 and np.all(rel.curves.survival == 1.0)


# ------------------------------------------------------------------------------------------- differencing
def test_differencing_finds_the_removed_subjects_bin():
    # 13 subjects (15 rounded) vs 12 (10); the removed subject's event makes bin 2 hold 3 events (5) instead of 2 (0)
    c = cohort([1, 1, 2, 2, 3, 3, 6, 7, 8, 11, 12, 13, 14], [1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0])
    pub = public(c, [0, 5, 10, 15])
    d = differencing(Round(5), c, pub, row=8)
    assert d.revealed["kind"] == "event" and d.revealed["bin"] == [5.0, 10.0] and d.revealed["matches_truth"]
    assert "had an event between 5 and 10" in d.sentence
    same = differencing(Round(5), c, pub, row=0)  # bin 1: 6 -> 5 events, both round to 5; n 13 -> 12 does change
    assert [ch["cell"] for ch in same.changes] == ["subjects"]


def test_differencing_a_random_release_claims_nothing_certain():
    c = cohort(np.arange(1, 41), np.ones(40, int))
    pub = public(c, [0, 10, 20, 30, 40])
    d = differencing(catalogue.get("curves", "laplace-counts").build(1.0), c, pub, row=3)
    assert "does not say with certainty" in d.sentence and d.revealed["presence"] is None


def test_differencing_randomized_response_says_the_pooled_table_reveals_the_person():
    """Randomized response randomizes the group label only: summed over the groups the table is exact, so removing a
    person shows with certainty that they left, and when; only the group stays hidden."""
    rng = np.random.default_rng(2)
    c = cohort(np.arange(1, 41), np.ones(40, int), rng.choice(["a", "b"], 40))
    pub = public(c, [0, 10, 20, 30, 40])
    from dpsurv_core.curves.result import context

    d = differencing(catalogue.get("curves", "rrr").build(1.0, **context(c, pub)), c, pub, row=3)
    assert d.revealed["presence"] is True and d.revealed["bin"] == [0.0, 10.0] and d.revealed["group"] is None
    assert "shows with certainty that a person left" in d.sentence and "had an event between 0 and 10" in d.sentence


# ------------------------------------------------------------------------------------------- ledger
def test_a_cost_with_no_epsilon_is_only_disclosure_control():
    cost = SuppressSmallCells().cost
    assert cost.epsilon is None and not cost.formal and cost.protects == DISCLOSURE_CONTROL
    assert "no epsilon" in cost.sentence()
    with pytest.raises(ParameterError):
        PrivacyCost(None)
    with pytest.raises(ParameterError):
        PrivacyCost(0.0, guarantee=NO_FORMAL)


def test_ledger_refuses_disclosure_control_under_a_cap_until_allowed(tmp_path):
    store = LedgerStore(tmp_path / "l.sqlite3")
    store.set_cap("fp", 2.0, "d")
    entry = Round().ledger_entry("d")
    with pytest.raises(BudgetExceededError, match="allow-disclosure-control"):
        with store.transaction("fp") as tx:
            tx.charge(entry)
    store.allow_disclosure_control("fp", "the board compares today's practice with DP", "d")
    with store.transaction("fp") as tx:
        tx.charge(Round().ledger_entry("d"))
    ledger = store.ledger("fp")
    assert ledger.spent() == 0.0 and ledger.totals() == {} and len(ledger.disclosure_control()) == 1
    assert ledger.subject_guarantee().startswith("none:") and "no formal guarantee" in ledger.subject_guarantee()
    assert Ledger.from_json(ledger.to_json()).disclosure_control()[0].cost.epsilon is None


# ------------------------------------------------------------------------------------------- CLI and catalogue
def test_catalogue_json_lists_the_methods_with_no_epsilon(capsys):
    table = {e["id"]: e for e in run(capsys, "mechanisms", "--family", "curves")}
    for i in SDC_IDS:
        assert table[i]["guarantee"] == "no formal guarantee" and table[i]["epsilon_applies"] is False
        assert table[i]["formal_guarantee"] is False and "km" in table[i]["commands"]
    assert table["laplace-counts"]["epsilon_applies"] is True
    assert table["suppress-small-cells"]["options"] == {"threshold": 5} and table["smooth-steps"]["options"] == {"k": 5}


def test_km_and_logrank_cli_with_disclosure_control(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("DPSURV_LEDGER", str(tmp_path / "ledger.sqlite3"))
    monkeypatch.setenv("DPSURV_CELL_KEY_SECRET", str(tmp_path / "secret"))
    out = run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "suppress-small-cells", "--horizon", "1100")
    assert out["epsilon_spent"] is None and out["guarantee"] == "no formal guarantee" and out["release"] is True
    assert out["spent"] is None and any(r["events"] == "<5" for r in out["released_table"])
    assert out["number_at_risk"]["rows"][0]["at_risk"][0] == 138.0
    lr = run(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "cell-key", "--horizon", "1100")
    assert lr["epsilon_spent"] is None and 0 <= lr["tests"][0]["p_value"] <= 1
    budget = run(capsys, "budget", "show", "--data", "lung")
    assert budget["disclosure_control_releases"] == 2 and budget["totals"] == {}
    err = fails(capsys, "km", "--data", "veteran", "--mechanism", "round", "--cap", "1", "--horizon", "1000")
    assert "allow-disclosure-control" in err
    assert "has no epsilon" in fails(capsys, "km", "--data", "lung", "--mechanism", "round", "--epsilon", "inf")
    ten = run(capsys, "km", "--data", "lung", "--mechanism", "suppress-small-cells", "--threshold", "10", "--seed", "1")
    assert ten["parameters"]["threshold"] == 10 and "<10" in [r["events"] for r in ten["released_table"]]
    assert "at least 2" in fails(capsys, "km", "--data", "lung", "--mechanism", "round", "--base", "1")
    sim = run(capsys, "km", "--data", "lung", "--mechanism", "random-round", "--seed", "4", "--repeat", "3")
    assert sim["simulation"] is True and sim["epsilon_spent"] is None and sim["trials"] == 3


def test_audit_cli_reports_exposure_differencing_and_certainty(capsys):
    out = run(capsys, "audit", "--analysis", "km", "--mechanism", "suppress-small-cells", "--data", "lung",
              "--group", "sex", "--trials", "40")
    assert out["epsilon_charged"] is None and out["formal_guarantee"] is False and out["within_charge"] is None
    assert 0 <= out["exposed_share"] <= 1 and out["exposure"]["subjects"] == 228
    assert out["distinguishable_with_certainty"] is True and out["empirical_epsilon_lower"] is None
    assert out["differencing"]["sentence"] and out["advantage_bound"] is None
    rr = run(capsys, "audit", "--analysis", "km", "--mechanism", "random-round", "--data", "lung", "--trials", "40")
    assert rr["exposed_share"] == 0.0 and rr["distinguishable_with_certainty"] is False
    assert isinstance(rr["empirical_epsilon_lower"], float)


def test_audit_of_a_deterministic_rule_targets_a_subject_it_exposes(capsys):
    """Rounding leaves the table unchanged for some subjects: the attack targets one whose removal changes it, so the
    headline is the certain distinction the exposure shows, not a reassuring 0% advantage."""
    out = run(capsys, "audit", "--analysis", "km", "--mechanism", "round", "--data", "lung", "--grid", "0:1100:20",
              "--trials", "40", "--seed", "1")
    assert out["exposed_share"] > 0.5
    assert "changes the released table" in out["target"]["why"]
    assert out["distinguishable_with_certainty"] is True and out["advantage"] == 1.0 and out["auc"] == 1.0


# ------------------------------------------------------------------------------------------- property
@given(times=hs.lists(hs.integers(1, 40), min_size=2, max_size=30), data=hs.data(),
       rule=hs.sampled_from(["round", "suppress", "smooth", "cell-key"]), size=hs.integers(2, 6))
def test_exposure_is_exact_on_any_small_cohort(times, data, rule, size):
    n = len(times)
    events = data.draw(hs.lists(hs.integers(0, 1), min_size=n, max_size=n))
    groups = data.draw(hs.lists(hs.sampled_from(["a", "b"]), min_size=n, max_size=n))
    c = cohort(times, events, groups)
    pub = public(c, np.linspace(0, 40, 5))
    mech = {"round": Round(size), "suppress": SuppressSmallCells(size), "smooth": SmoothSteps(size),
            "cell-key": CellKey(SECRET)}[rule]
    e = exposure(mech, c, pub)
    assert np.array_equal(e.mask, brute_force_exposure(mech, c, pub))


def test_differencing_random_rounding_still_claims_nothing_certain():
    """Random rounding is random but protects no label: its differencing pair mixes the removal with the rounding."""
    c = cohort(np.arange(1, 41), np.ones(40, int), np.array(["a", "b"] * 20))
    pub = public(c, [0, 10, 20, 30, 40])
    d = differencing(RandomRound(5), c, pub, row=3)
    assert "does not say with certainty" in d.sentence and d.revealed["presence"] is None


def test_random_perturbations_read_the_draws_mean_squared_error_about_the_release():
    """Random rounding's band: var(log S) = (var(S*) + (mean S* - S)^2) / S^2 from its bootstrap draws (the world drawn
    from rounded counts sits off the release late in follow-up); the method says so."""
    from dpsurv_core.data.cohort import load_bundled

    c = load_bundled("lung")
    pub = PublicParameters.derive(c, horizon=1100, bins=20)
    curves = RandomRound(5).compute(c, pub, SimulationNoise(2)).curves
    s, draws = curves.survival[0], curves.rmst_draws[0]
    mse = draws.var(axis=0, ddof=1) + (draws.mean(axis=0) - s) ** 2
    live = s > 0
    np.testing.assert_allclose(curves.interval_variance[0][live], (mse / s**2)[live], rtol=1e-10)
    assert np.any((draws.mean(axis=0) - s)[live] ** 2 > 0.05 * draws.var(axis=0, ddof=1)[live])  # the offset counts
    assert "mean squared error" in curves.interval_method
