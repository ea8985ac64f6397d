"""The curves' two-sided normal quantile is SciPy's ``ndtri(1 - alpha / 2)`` bit for bit, for the levels kept as
numbers (no SciPy import on a release) and for any other level (computed by SciPy)."""

from __future__ import annotations

import pytest
from scipy.special import ndtri

from dpsurv_core.curves.normal import Z_TWO_SIDED, two_sided_z


@pytest.mark.parametrize("alpha", sorted(Z_TWO_SIDED))
def test_the_kept_levels_are_scipys_values(alpha):
    assert two_sided_z(alpha) == float(ndtri(1 - alpha / 2))  # exactly, not approximately


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_a_numpy_level_reads_the_table(alpha):
    import numpy as np

    assert two_sided_z(np.float64(alpha)) == Z_TWO_SIDED[alpha]


@pytest.mark.parametrize("alpha", [0.001, 0.15, 0.32])
def test_other_levels_are_computed_by_scipy(alpha):
    assert alpha not in Z_TWO_SIDED
    assert two_sided_z(alpha) == float(ndtri(1 - alpha / 2))
