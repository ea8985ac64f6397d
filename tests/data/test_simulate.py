import numpy as np

from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort


def test_censoring_share_and_group_split_are_as_asked():
    d = weibull_cohort(4000, WeibullTruth(hazard_ratio=1.5, censoring=0.3), seed=3)
    assert abs((1 - d.status.mean()) - 0.3) < 0.03
    assert (d.group == "B").sum() == 2000 and set(d.x) == {0, 1}
    assert d.time.min() >= 1


def test_truth_matches_the_simulated_law_without_censoring():
    truth = WeibullTruth(shape=1.3, scale=1000.0, hazard_ratio=2.0, censoring=0.01)
    d = weibull_cohort(40_000, truth, seed=4)
    t = truth.quantile(0.5, "B")
    b = d[d.group == "B"]
    assert abs(np.mean(b.time > t) - 0.5) < 0.02
    assert abs(float(truth.survival(t, "B")) - 0.5) < 1e-12
