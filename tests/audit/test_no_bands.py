"""The audit and the trade-off simulations build laplace-counts and adaptive-km without noise-aware bands (they read
curves and counts only): the curves drawn are the same as with bands, the bands are simply not computed."""

from __future__ import annotations

import numpy as np
import pytest

from dpsurv_core import tradeoff
from dpsurv_core.audit import runner
from dpsurv_core.curves.result import context
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise


@pytest.mark.parametrize("name", ["laplace-counts", "adaptive-km"])
def test_same_curves_without_bands(name):
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort)
    banded = catalogue.get(catalogue.CURVES, name).build(1.0, **context(cohort, public))
    for mech in (runner.curve_mechanism(name, 1.0, cohort, public), tradeoff._curve_mechanism(name, 1.0, cohort, public)):
        assert mech.noise_in_bands is False and mech.cost == banded.cost
        a = banded.compute(cohort, public, SimulationNoise(7), trials=5)
        b = mech.compute(cohort, public, SimulationNoise(7), trials=5)
        np.testing.assert_array_equal(a.curves.survival, b.curves.survival)
        np.testing.assert_array_equal(a.counts.n, b.counts.n)


def test_other_mechanisms_untouched():
    cohort = load_bundled("lung", group="sex")
    mech = runner.curve_mechanism("time-indexed", 1.0, cohort, PublicParameters.derive(cohort))
    assert not hasattr(mech, "noise_in_bands")
