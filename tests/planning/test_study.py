"""The declared study: sizes, the censoring share its simulated cohorts have, the public curve, refusals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpsurv_core.errors import ParameterError
from dpsurv_core.planning.study import Study, Survival, parse_grid, simulate, sizes_of


def study(**kw) -> Study:
    args = dict(sizes=(200, 200), horizon=1825.0, grid=(0.0, 1825.0, 20), censoring=0.3,
                survival=Survival.exponential(730.0))
    args.update(kw)
    return Study(**args)


@pytest.mark.parametrize("share", [0.2, 0.3, 0.6])
@pytest.mark.parametrize("hr", [1.0, 0.6])
def test_simulated_cohorts_censor_the_declared_share(share, hr):
    s = study(censoring=share)
    sim = simulate(s, 50, seed=3, hazard_ratio=hr)
    # under an alternative the horizon alone may censor more than declared (no drop-outs are then simulated)
    expected = max(share, s.pooled_survival_at_horizon(hr))
    assert abs(1.0 - sim.event.mean() - expected) < 0.01
    assert sim.time.max() <= 1825.0 and sim.time.min() >= 0.0


def test_group_survival_follows_the_hazard_ratio():
    sim = simulate(study(sizes=(4000, 4000), censoring=0.18, horizon=1825.0), 1, seed=1, hazard_ratio=0.5)
    t, e = sim.time[0], sim.event[0]
    # uncensored before 365 days almost everywhere: the share with an event by then is 1 - S(365)^HR
    for g, hr in (("A", 1.0), ("B", 0.5)):
        mine = sim.group == g
        early = np.mean((t[mine] <= 365) & (e[mine] == 1))
        assert abs(early - (1 - 2 ** (-365 / 730 * hr))) < 0.03


def test_a_share_below_the_survivors_at_the_horizon_is_refused():
    with pytest.raises(ParameterError, match="event-free at the horizon"):
        study(censoring=0.05)  # S(1825) = 0.177 are censored at the horizon whatever happens before


def test_sizes_and_grid():
    assert sizes_of(401, 2, None) == (201, 200)
    assert sizes_of(None, None, "100,300") == (100, 300)
    with pytest.raises(ParameterError, match="not the sum"):
        sizes_of(401, None, "100,300")
    with pytest.raises(ParameterError, match="--n N"):
        sizes_of(None, 2, None)
    assert parse_grid("0:1825:20") == (0.0, 1825.0, 20)
    with pytest.raises(ParameterError, match="event-times"):
        parse_grid("event-times")
    with pytest.raises(ParameterError, match="after the horizon"):
        study(grid=(0.0, 2000.0, 20))


def test_public_curve_from_csv(tmp_path):
    f = tmp_path / "curve.csv"
    f.write_text("time,survival\n365,80%\n730,60%\n1825,25%\n")
    law = Survival.read_csv(str(f))
    assert law.times[0] == 0.0 and law.survival[0] == 1.0
    assert float(law.survival_at(np.array([730.0]))[0]) == pytest.approx(0.6)
    assert float(law.survival_at(np.array([2000.0]))[0]) < 0.25  # the last hazard carries on
    assert law.median() == pytest.approx(730 + 1095 * math.log(0.6 / 0.5) / math.log(0.6 / 0.25), rel=1e-9)
    bad = tmp_path / "bad.csv"
    bad.write_text("time,survival\n365,0.8\n730,0.9\n")
    with pytest.raises(ParameterError, match="never rises"):
        Survival.read_csv(str(bad))


def test_round_trip():
    s = study(survival=Survival.weibull(1.3, 1000.0))
    assert Study.from_dict(s.to_dict()) == s
