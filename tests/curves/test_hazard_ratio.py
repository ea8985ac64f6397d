"""The log-rank (Peto) hazard ratio from released counts: the formula, Cox's estimate on exact counts, an interval that
holds the exact-count ratio under Laplace noise, and a sentence where no ratio would be honest."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxPHFitter

from dpsurv_core.curves.hazard_ratio import Z95, hazard_ratios, peto_hazard_ratio
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.curves.rrr import RandomizedResponse
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.disclosure.rounding import Round
from dpsurv_core.privacy.noise import SimulationNoise


@pytest.fixture(scope="module")
def lung():
    cohort = load_bundled("lung", group="sex")
    return cohort, PublicParameters.derive(cohort, horizon=1000, grid=TimeGrid.equal(0, 1000, 25))


def test_the_formula():
    hr = peto_hazard_ratio(10, 15, 6, group="B", reference="A")
    assert hr.estimate == pytest.approx(math.exp(-5 / 6))
    assert (hr.lower, hr.upper) == pytest.approx((math.exp(-5 / 6 - Z95 / math.sqrt(6)),
                                                  math.exp(-5 / 6 + Z95 / math.sqrt(6))))
    noisy = peto_hazard_ratio(10, 15, 6, noise_variance=3)
    assert noisy.estimate == hr.estimate and noisy.upper == pytest.approx(math.exp(-5 / 6 + Z95 * 3 / 6))
    assert peto_hazard_ratio(3, 3, 0) is None and peto_hazard_ratio(math.nan, 1, 1) is None


def test_on_exact_counts_it_is_close_to_cox(lung):
    cohort, public = lung
    (hr,), why = hazard_ratios(NonPrivate().compute(cohort, public), NonPrivate())
    assert why is None and hr.noise_variance == 0 and (hr.group, hr.reference) == ("2", "1")
    frame = pd.DataFrame({"time": cohort.time, "event": cohort.event,
                          "female": (np.asarray(cohort.group).astype(str) == "2").astype(int)})
    cox = CoxPHFitter().fit(frame, "time", "event")
    assert hr.estimate == pytest.approx(float(np.exp(cox.params_["female"])), rel=0.05)


def test_under_laplace_noise_the_interval_holds_the_exact_count_ratio(lung):
    cohort, public = lung
    (exact,), _ = hazard_ratios(NonPrivate().compute(cohort, public), NonPrivate())
    mech = LaplaceCounts(1.0)
    rel = mech.compute(cohort, public, SimulationNoise(4), trials=200)
    held = [h[0].lower <= exact.estimate <= h[0].upper for h in (hazard_ratios(rel, mech, t)[0] for t in range(200))
            if h]
    assert len(held) >= 190 and np.mean(held) >= 0.9
    assert hazard_ratios(rel, mech, 0)[0][0].noise_variance > 0


def test_label_private_and_disclosure_control_releases_get_a_sentence(lung):
    cohort, public = lung
    rr = RandomizedResponse(1.0, public.group_categories)
    ratios, why = hazard_ratios(rr.compute(cohort, public, SimulationNoise(1)), rr)
    assert ratios == [] and "reported group labels" in why
    rounding = Round(5)
    ratios, why = hazard_ratios(rounding.compute(cohort, public, SimulationNoise(1)), rounding)
    assert ratios == [] and "no variance model" in why
