"""rrr (De Faveri et al. 2024, docs/mechanisms.md): the k-ary keep probability and epsilon (both directions), the
label-only claim, de-biasing, and a distinguishing test on its own neighbouring definition
(change one subject's label) that the slides' epsilon formula fails for k > 2."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.audit.attack import empirical_epsilon
from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.curves.result import event_times_grid, exact_counts
from dpsurv_core.curves.rrr import RandomizedResponse, epsilon_of, keep_probability, response_matrix, slides_epsilon
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import CHANGE_LABEL, GROUP_LABEL
from dpsurv_core.privacy.noise import SimulationNoise


@given(st.floats(0.01, 8.0), st.integers(2, 12))
def test_keep_probability_and_epsilon_both_directions(eps, k):
    p = keep_probability(eps, k)
    assert math.isclose(p, (math.exp(eps) - 1) / (math.exp(eps) - 1 + k), rel_tol=1e-12)
    assert math.isclose(epsilon_of(p, k), eps, rel_tol=1e-9)
    # the worst-case likelihood ratio of the response matrix is e^eps
    m = response_matrix(p, k)
    assert np.allclose(m.sum(axis=1), 1.0)
    assert math.isclose(math.log(m.max() / m.min()), eps, rel_tol=1e-9)
    mech = RandomizedResponse(eps, [str(i) for i in range(k)])
    assert mech.parameters()["keep_probability"] == p
    if k > 2:  # the slides' formula understates the loss for more than two categories
        assert slides_epsilon(p, k) < eps
    else:
        assert math.isclose(slides_epsilon(p, k), eps, rel_tol=1e-9)


def test_cost_says_label_only():
    mech = RandomizedResponse(1.0, ["a", "b", "c"])
    assert mech.cost.protects == GROUP_LABEL and mech.cost.neighbouring == CHANGE_LABEL
    cohort = load_bundled("lung", group="sex")
    rel = mech.__class__(1.0, ["1", "2"]).compute(cohort, PublicParameters.derive(cohort), SimulationNoise(0))
    assert any("group label only" in d.message and not d.dp for d in rel.disclosures)
    assert "group label only" in rel.parameters["protects"]
    with pytest.raises(ParameterError):
        RandomizedResponse(1.0, ["only"])


def test_times_and_events_are_published_unchanged_and_report_rates_match():
    cohort = load_bundled("veteran", group="celltype")
    public = PublicParameters.derive(cohort, horizon=1000, grid=TimeGrid.equal(0, 1000, 10))
    mech = RandomizedResponse(1.0, public.group_categories)
    rel = mech.compute(cohort, public, SimulationNoise(2), trials=3000)
    pooled = exact_counts(cohort, public.grid, public).pooled()
    assert np.all(rel.counts.pooled().events == pooled.events)  # only labels move
    assert np.all(rel.counts.n.sum(-1) == cohort.n)
    # E[reported n] = P^T n
    exact_n = exact_counts(cohort, public.grid, public).n
    np.testing.assert_allclose(rel.counts.n.mean(0), mech.matrix.T @ exact_n, rtol=0.02)


def test_debiased_counts_are_unbiased_before_clamping():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, grid=TimeGrid.equal(0, 1100, 5))
    mech = RandomizedResponse(2.0, public.group_categories)
    rel = mech.compute(cohort, public, SimulationNoise(4), trials=4000)
    exact = exact_counts(cohort, public.grid, public)
    deb = rel.extra["debiased_counts"]
    np.testing.assert_allclose(deb.n.mean(0), exact.n, rtol=0.02)
    raw_err = np.abs(rel.curves.survival.mean(0) - _km(exact)).max()
    deb_err = np.abs(rel.extra["debiased_curves"].survival.mean(0) - _km(exact)).max()
    assert deb_err < raw_err


def _km(counts):
    from dpsurv_core.curves.kaplan_meier import actuarial_share, estimate
    from dpsurv_core.curves.result import tile_trials

    return estimate(tile_trials(counts, 1), actuarial=actuarial_share(counts.grid)).survival[0]


def test_subjects_report_one_label_for_all_their_rows():
    cohort = load_bundled("kidney", group="disease")
    public = PublicParameters.derive(cohort, grid=event_times_grid(cohort))
    rel = RandomizedResponse(0.5, public.group_categories).compute(cohort, public, SimulationNoise(1), trials=500)
    # each subject has 2 rows: every reported group has an even number of rows
    assert np.all(rel.counts.n % 2 == 0)
    rows = np.flatnonzero(cohort.subject == cohort.subject[0])
    assert rows.size == 2
    group = cohort.group.copy()
    group[rows] = ["AN", "GN"]
    with pytest.raises(ParameterError, match="one label per subject"):
        RandomizedResponse(0.5, public.group_categories).compute(replace(cohort, group=group), public,
                                                                 SimulationNoise(1))


class SlidesFormula(RandomizedResponse):
    """Deliberately broken: p chosen with the slides' eps(n, p) for the charged epsilon."""

    def __init__(self, epsilon, categories):
        super().__init__(epsilon, categories)
        e, k = math.exp(epsilon), self.k
        # solve ln((kp + 1 - p) / (k - 1 - kp + p)) = eps for p
        self.p = (e * (k - 1) - 1) / ((k - 1) * (1 + e))


def _audit(cls, epsilon=1.0, runs=4000, seed=7):
    """D vs D with subject 4's label changed (Other -> AN); kidney, k = 4, event-times grid where
    the subject's two events sit alone in their cells."""
    cohort = load_bundled("kidney", group="disease")
    public = PublicParameters.derive(cohort, grid=event_times_grid(cohort))
    target = cohort.subject == 4
    assert set(cohort.group[target]) == {"Other"}
    neighbour = replace(cohort, group=np.where(target, "AN", cohort.group))
    mech = cls(epsilon, public.group_categories)
    if cls is SlidesFormula:
        assert math.isclose(slides_epsilon(mech.p, mech.k), epsilon) and epsilon_of(mech.p, mech.k) > 2 * epsilon
    cells = np.searchsorted(public.grid.points, cohort.time[target & (cohort.event == 1)])
    a, b = public.group_categories.index("Other"), public.group_categories.index("AN")

    def score(c):
        ev = c.events[:, :, 0, :][:, :, cells].sum(-1)
        return ev[:, a] - ev[:, b]

    def released(data):  # the reported counts as compute() reads them, without its bands (4,000 runs: 1.6 GB)
        drawn = mech.draw(data, public, SimulationNoise(seed if data is cohort else seed + 1), trials=runs)
        return BinnedCounts.from_released(drawn["counts"], public.grid)

    s_in = score(released(cohort))
    s_out = score(released(neighbour))
    return empirical_epsilon(s_in, s_out), mech.cost.epsilon


def test_distinguishing_attack_stays_below_the_charge():
    audit, charged = _audit(RandomizedResponse)
    assert 0.5 < audit.epsilon_lower <= charged


def test_distinguishing_attack_catches_the_slides_formula():
    audit, charged = _audit(SlidesFormula)
    assert audit.epsilon_lower > charged
