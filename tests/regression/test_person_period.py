"""Person-period expansion, spline basis and covariate encoding (docs/mechanisms.md)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.data.cohort import ColumnMap, build_cohort, load_bundled
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.regression.person_period import (
    build_encoding,
    expand,
    interval_basis,
    knots,
    natural_spline_basis,
    person_period,
)


def _cohort(time, event, **covs):
    df = pd.DataFrame({"t": time, "d": event, **covs})
    return build_cohort(df, ColumnMap("t", "d", covariates=tuple(covs)), "toy")


def test_expansion_by_hand():
    # horizon 10, T = 5: intervals (0,2], (2,4], ..., (8,10]
    c = _cohort([1.0, 4.0, 4.1, 12.0, 0.0, 10.0], [1, 0, 1, 1, 0, 1], x=[0.0, 1, 2, 3, 4, 5])
    pp = person_period(c, ["x"], horizon=10, intervals=5, knots=3, ranges={"x": (0, 5)}, n_public=6)
    assert pp.k.tolist() == [1, 2, 3, 5, 1, 5]
    assert pp.event.tolist() == [1, 0, 1, 0, 0, 1]  # followed past the horizon: censored at H
    assert pp.y.size == 17 and pp.offsets.tolist() == [0, 1, 3, 6, 11, 12, 17]
    assert pp.y.tolist() == [1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]
    assert pp.interval.tolist() == [1, 1, 2, 1, 2, 3, 1, 2, 3, 4, 5, 1, 1, 2, 3, 4, 5]
    assert pp.subject.tolist() == [0, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 4, 5, 5, 5, 5, 5]
    # covariate columns are the subject's x (scaled into [-1, 1]), spline columns the interval's s(j)
    np.testing.assert_allclose(pp.Z[:, 0], ((np.array([0, 1, 2, 3, 4, 5.0]) - 2.5) / 2.5)[pp.subject])
    np.testing.assert_allclose(pp.Z[:, 1:], pp.spline[pp.interval - 1])
    # subject_rows gathers rows without a loop
    assert pp.subject_rows(np.array([3, 0])).tolist() == [6, 7, 8, 9, 10, 0]


def test_natural_spline_is_linear_beyond_boundary_knots_and_spans_cubic_pieces():
    q = 5
    xi = knots(q)
    assert np.allclose(xi, [1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6])
    x = np.linspace(0, 1, 2001)
    N = natural_spline_basis(x, q)
    assert N.shape == (2001, q) and np.allclose(N[:, 0], 1) and np.allclose(N[:, 1], x)
    h = x[1] - x[0]
    second = (N[2:] - 2 * N[1:-1] + N[:-2]) / h ** 2
    mid = x[1:-1]
    outside = (mid < xi[0] - 2 * h) | (mid > xi[-1] + 2 * h)
    assert np.max(np.abs(second[outside])) < 1e-6  # natural: linear outside the boundary knots
    assert np.max(np.abs(second[~outside])) > 0.1  # but curved inside
    s = interval_basis(20, 5)
    assert s.shape == (20, 5) and np.isclose(np.linalg.norm(s, axis=1).max(), 1.0)
    assert np.linalg.matrix_rank(s) == 5
    # orthonormalisation keeps the space of natural splines at the midpoints
    mids = (np.arange(1, 21) - 0.5) / 20
    raw = natural_spline_basis(mids, 5)
    coef, *_ = np.linalg.lstsq(s, raw, rcond=None)
    assert np.allclose(s @ coef, raw)


def test_rows_in_unit_ball_and_public_R():
    c = load_bundled("lung", covariates=("age", "sex", "ph.ecog"))
    pp = person_period(c, ["age", "sex", "ph.ecog"], horizon=1100)
    X = pp.Z[:, : pp.p]
    assert np.max(np.linalg.norm(X, axis=1)) <= 1 + 1e-12
    assert np.max(np.linalg.norm(pp.Z, axis=1)) <= pp.R + 1e-12
    assert math.isclose(pp.R, math.sqrt(2)) and math.isclose(pp.c1, 20 * math.sqrt(2)) and math.isclose(pp.c2, 10)
    assert pp.dropped == 1  # ph.ecog is missing for one subject: complete cases
    assert pp.n == 227


def test_clamping_to_public_range_and_disclosures():
    c = _cohort([1, 2, 3, 4.0], [1, 0, 1, 1], age=[30, 50, 70, 120], grp=["a", "b", "a", "c"])
    pp = person_period(c, ["age", "grp"], horizon=5, intervals=4, knots=2, ranges={"age": (40, 100)},
                       levels={"grp": ("a", "b", "c")}, n_public=4)
    assert [d.parameter for d in pp.disclosures] == []  # everything declared
    x = pp.encoding.transform(c.covariates)
    r2 = math.sqrt(2)
    np.testing.assert_allclose(x[:, 0], np.array([-1, -2 / 3, 0, 1]) / r2)  # 30 and 120 clamped
    np.testing.assert_allclose(x[:, 1:] * r2, [[0, 0], [1, 0], [0, 0], [0, 1]])  # one-hot, 'a' the reference
    assert pp.encoding.names == ["age", "grp=b", "grp=c"]
    np.testing.assert_allclose(pp.encoding.to_original, [1 / (30 * r2), 1 / r2, 1 / r2])
    pp2 = person_period(c, ["age", "grp"], intervals=4, knots=2)
    params = {d.parameter for d in pp2.disclosures}
    assert params == {"horizon", "range:age", "levels:grp", "n"}


def test_vectorised_expansion_handles_many_subjects():
    """200,000 subjects in one vectorised expansion (the speed target is in benchmarks/timings.py)."""
    rng = np.random.default_rng(0)
    n = 200_000
    t = rng.exponential(1.0, n)
    d = rng.integers(0, 2, n)
    X = rng.uniform(-0.5, 0.5, (n, 2))
    Z, y, subject, interval, offsets, k, dd = expand(t, d, X, horizon=3.0, intervals=20, q=5)
    assert y.size == k.sum() and y.sum() == dd.sum() and Z.shape == (k.sum(), 7)


@pytest.mark.parametrize("frame,cov,error,words", [
    (pd.DataFrame({"x": [1.0, 1.0, 1.0]}), "x", ParameterError, "constant"),
    (pd.DataFrame({"x": [np.nan, np.nan, np.nan]}), "x", DataError, "missing for every subject"),
    (pd.DataFrame({"x": ["1", "2", "3", "4", "five"]}), "x", DataError, "numeric but row 6"),
    (pd.DataFrame({"x": [1.0, 2.0]}), "y", DataError, "no covariate column 'y'"),
    (pd.DataFrame({"x": [f"note {i}" for i in range(30)]}), "x", ParameterError, "free text"),
])
def test_bad_covariates_get_a_sentence(frame, cov, error, words):
    with pytest.raises(error) as exc:
        build_encoding(frame, [cov])
    msg = str(exc.value)
    assert words in msg and msg.endswith(".") and msg.count(". ") == 0


def test_bad_model_sizes():
    c = load_bundled("lung", covariates=("age",))
    with pytest.raises(ParameterError, match="knots"):
        person_period(c, ["age"], horizon=1100, intervals=4, knots=5)
    with pytest.raises(ParameterError, match="at least one covariate"):
        person_period(c, [], horizon=1100)
    with pytest.raises(ParameterError, match="horizon"):
        person_period(c, ["age"], horizon=-1)
