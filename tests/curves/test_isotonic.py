"""The rows' isotonic fits are SciPy's byte for byte, and laplace-counts' reading pools without SciPy's per-row calls
(the planner's simulated releases spent most of their time in them)."""

from __future__ import annotations

import numpy as np
import pytest

from dpsurv_core.curves.clamping import monotone_increments
from dpsurv_core.curves.isotonic import isotonic_rows


def _rows(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows of 0 to 24 values: normal, running sums of small integers (ties), of counts with laplace-counts' fill
    of -1.54 for a released 0, repeated small integers, and sorted both ways."""
    rng = np.random.default_rng(seed)
    width, out, lengths = 24, [], []
    for k in range(3000):
        m = int(rng.integers(0, width + 1))
        kind = k % 6
        if kind == 0:
            v = rng.normal(size=m)
        elif kind == 1:
            v = np.cumsum(rng.integers(-2, 4, m)).astype(float)
        elif kind == 2:
            v = np.cumsum(np.where(rng.random(m) < 0.3, -1.5414940825367982, rng.integers(0, 5, m)))
        elif kind == 3:
            v = rng.integers(0, 3, m).astype(float)
        elif kind == 4:
            v = np.sort(rng.normal(size=m))[::-1]
        else:
            v = np.sort(rng.normal(size=m))
        row = np.zeros(width)
        row[:m] = v
        out.append(row)
        lengths.append(m)
    return np.array(out), np.array(lengths)


@pytest.mark.parametrize("seed", [1, 2])
def test_isotonic_rows_are_scipys_fits_byte_for_byte(seed):
    from scipy.optimize import isotonic_regression

    values, lengths = _rows(seed)
    got = isotonic_rows(values, lengths)
    for row, m, fit in zip(values, lengths, got):
        if m:
            assert fit[:m].tobytes() == isotonic_regression(row[:m]).x.tobytes()
        assert not fit[m:].any()


def test_monotone_increments_is_the_per_row_scipy_reading():
    """The reading as it was written with SciPy, row by row, on rows shaped as a bootstrap's (draws, groups, bins)
    with a stop (``keep`` a prefix)."""
    from scipy.optimize import isotonic_regression

    rng = np.random.default_rng(5)
    x = np.where(rng.random((300, 2, 20)) < 0.3, -1.5414940825367982, rng.integers(0, 6, (300, 2, 20))).astype(float)
    keep = np.arange(20) < rng.integers(1, 21, (300, 2, 1))
    expected = np.where(keep, x, 0.0)
    cum = np.cumsum(expected, axis=-1)
    for idx in np.ndindex(*x.shape[:-1]):
        if ((expected[idx] < 0) & keep[idx]).any():
            m = int(keep[idx].sum())
            fit = np.maximum.accumulate(np.maximum(isotonic_regression(cum[idx][:m]).x, 0.0))
            expected[idx][:m] = np.diff(np.concatenate([[0.0], fit]))
    assert monotone_increments(x, keep).tobytes() == expected.tobytes()


def test_laplace_counts_reading_calls_no_scipy_isotonic_regression(monkeypatch):
    """A noisy laplace-counts release (its curve and its bootstrap's worlds read without clamping's bias) pools its
    running sums without one SciPy call per row: the speed of the planner's simulated releases rests on it."""
    import scipy.optimize

    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.planning import Study, Survival
    from dpsurv_core.planning.study import simulate
    from dpsurv_core.privacy.noise import SimulationNoise

    calls = []
    real = scipy.optimize.isotonic_regression
    monkeypatch.setattr(scipy.optimize, "isotonic_regression", lambda *a, **k: calls.append(1) or real(*a, **k))
    study = Study((100, 100), 1825.0, (0.0, 1825.0, 20), 0.2, Survival.exponential(730.0))
    cohort = simulate(study, 1, 3).cohort(0)
    rel = LaplaceCounts(0.5).compute(cohort, study.public(), SimulationNoise(4))
    assert rel.extra.get("unclamped")
    assert calls == []
