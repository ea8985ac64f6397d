"""laplace-counts (docs/mechanisms.md): L1 sensitivity of the released cells, the noise scale, and a
distinguishing test (D vs D minus one subject) that a correct mechanism passes and a broken one fails."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.audit.attack import clopper_pearson, empirical_epsilon, epsilon_lower_bound, laplace_score
from dpsurv_core.curves.counts import count
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import exact_counts
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy.noise import ReleaseNoise, SimulationNoise

GROUPS = ("a", "b", "c")


@st.composite
def multi_row_cohorts(draw):
    """Subjects with 1..m rows (kidney-style), tied integer times, one group per subject, event types 0..2."""
    m = draw(st.integers(1, 3))
    n_sub = draw(st.integers(1, 25))
    rows = draw(st.lists(st.integers(1, m), min_size=n_sub, max_size=n_sub))
    subject = np.repeat(np.arange(n_sub), rows)
    total = subject.size
    time = np.array(draw(st.lists(st.integers(0, 12), min_size=total, max_size=total)), dtype=float)
    etype = np.array(draw(st.lists(st.integers(0, 2), min_size=total, max_size=total)), dtype=np.int16)
    sub_group = np.array(draw(st.lists(st.sampled_from(GROUPS), min_size=n_sub, max_size=n_sub)))
    edges = np.unique(np.array(draw(st.lists(st.integers(-1, 14), min_size=2, max_size=8)), dtype=float))
    if edges.size < 2:
        edges = np.array([0.0, 10.0])
    cohort = Cohort(time, (etype == 2).astype(np.int8), sub_group[subject], subject, etype, ("one", "two"),
                    pd.DataFrame(), None, m)
    return cohort, TimeGrid(edges, "custom"), m, int(draw(st.integers(0, n_sub - 1)))


@given(multi_row_cohorts(), st.booleans())
def test_sensitivity_never_exceeds_2m(case, competing):
    cohort, grid, m, target = case
    d = count(cohort, grid, GROUPS, competing).cells()
    d_minus = count(cohort.subset(cohort.subject != target), grid, GROUPS, competing).cells()
    diff = int(np.abs(d - d_minus).sum())
    assert diff <= 2 * m == LaplaceCounts(1.0, rows_per_subject=m).sensitivity
    # exact: every row changes its group's n, and one d/c cell if it falls inside the grid
    mine = cohort.subject == target
    etype = cohort.event_type[mine] if competing else cohort.event[mine]
    t = cohort.time[mine]
    inside = np.where(etype > 0, t <= grid.edges[-1], t < grid.edges[-1])
    assert diff == mine.sum() + inside.sum()


def test_scale_cost_and_parameters():
    mech = LaplaceCounts(0.5, rows_per_subject=2)
    assert mech.sensitivity == 4 and mech.scale == 8
    assert mech.cost.epsilon == 0.5 and mech.cost.neighbouring.startswith("add/remove")
    assert mech.parameters()["noise"] == "discrete Laplace"
    assert LaplaceCounts(math.inf).scale == 0


def test_release_noise_is_integer_and_kidney_uses_2m():
    cohort = load_bundled("kidney", group="sex")
    public = PublicParameters.derive(cohort, horizon=600, grid=TimeGrid.equal(0, 600, 10))
    mech = LaplaceCounts(1.0, rows_per_subject=cohort.rows_per_subject)
    assert mech.scale == 4.0
    exact = exact_counts(cohort, public.grid, public)
    noisy = mech.noisy_counts(exact, ReleaseNoise(), trials=2)
    assert np.all(noisy.cells() == np.round(noisy.cells()))
    assert not np.array_equal(noisy.cells()[0], noisy.cells()[1])
    # empirical spread of the simulation noise matches the declared scale (Var of discrete Laplace ~ 2 b^2)
    sim = mech.noisy_counts(exact, SimulationNoise(3), trials=4000).cells() - exact.cells()
    b = mech.scale
    p = 1 - math.exp(-1 / b)
    var = 2 * (1 - p) / p**2
    assert abs(sim.var() / var - 1) < 0.05


def test_clopper_pearson_and_bound():
    lo, hi = clopper_pearson(0, 10)
    assert lo == 0 and 0.30 < hi < 0.31  # 1 - 0.025 ** (1/10)
    lo, hi = clopper_pearson(50, 100)
    assert 0.39 < lo < 0.41 and 0.59 < hi < 0.61
    assert epsilon_lower_bound(0.5, 0.5, 0.5, 0.5) == 0
    assert math.isclose(float(epsilon_lower_bound(0.8, 0.8, 0.2, 0.2)), math.log(4))
    # each term divides a lower confidence bound by an upper one (the optimistic reading would give ln 12)
    assert math.isclose(float(epsilon_lower_bound(0.9, 0.95, 0.4, 0.5)), math.log(0.5 / 0.1))


class HalfNoise(LaplaceCounts):
    """Deliberately broken: half the noise scale for the same charge."""

    @property
    def scale(self) -> float:
        return super().scale / 2


def _audit(mech_cls, epsilon=1.0, runs=4000, seed=11):
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, grid=TimeGrid.equal(0, 1100, 20),
                                     group_categories=("1", "2"))
    # target: the last event inside the grid (events near the end sit in small cells)
    inside = np.flatnonzero((cohort.event == 1) & (cohort.time <= 1100))
    target = inside[np.argmax(cohort.time[inside])]
    keep = np.ones(cohort.n, bool)
    keep[target] = False
    neighbour = cohort.subset(keep)
    mech = mech_cls(epsilon)
    ex_in = exact_counts(cohort, public.grid, public).cells().astype(float)
    ex_out = exact_counts(neighbour, public.grid, public).cells().astype(float)
    cells = np.flatnonzero(ex_in != ex_out)
    assert cells.size == 2
    rel_in = mech.compute(cohort, public, SimulationNoise(seed), trials=runs).counts.cells()[:, cells]
    rel_out = mech.compute(neighbour, public, SimulationNoise(seed + 1), trials=runs).counts.cells()[:, cells]
    score = lambda x: laplace_score(x, ex_in[cells], ex_out[cells], mech.scale)  # noqa: E731
    return empirical_epsilon(score(rel_in), score(rel_out)), mech.cost.epsilon


def test_distinguishing_attack_stays_below_the_charge():
    audit, charged = _audit(LaplaceCounts)
    assert audit.epsilon_lower <= charged
    assert audit.epsilon_lower > 0.3  # the attack has power: it is not vacuous


def test_distinguishing_attack_catches_half_the_noise():
    audit, charged = _audit(HalfNoise)
    assert audit.epsilon_lower > charged


def test_nonprivate_counts_are_distinguished():
    audit, _ = _audit(lambda eps: LaplaceCounts(math.inf), runs=1000)
    assert audit.epsilon_lower > 4  # limited only by the number of runs
