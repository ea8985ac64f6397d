"""Coverage of the cumulative incidence's intervals on simulated competing risks.

Constant cause-specific hazards 0.02 (type 1) and 0.01 (type 2) and exponential censoring 0.01, so the truth is
I_1(t) = 2/3 (1 - exp(-0.03 t)). Non-private: R's interval (infinitesimal jackknife variance, conf.type on I) on the
distinct event times, at t = 10, 30 and 60. Private (laplace-counts on a public grid of 20 bins to t = 100): the
bootstrap variance with the formulas on 1 - I (in use) and on I, at the grid points 20, 40 and 70.

    .venv/bin/python -m benchmarks.coverage_incidence --replicates 1000
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from dpsurv_core.curves.counts import count
from dpsurv_core.curves.intervals import incidence_band, incidence_limits
from dpsurv_core.curves.kaplan_meier import CONF_TYPES, estimate
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import event_times_grid
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy.noise import SimulationNoise

H1, H2, HC = 0.02, 0.01, 0.01


def truth(t: np.ndarray) -> np.ndarray:
    return H1 / (H1 + H2) * (1.0 - np.exp(-(H1 + H2) * np.asarray(t, float)))


def cohort(n: int, rng: np.random.Generator) -> Cohort:
    t_event = rng.exponential(1 / (H1 + H2), n)
    kind = np.where(rng.random(n) < H1 / (H1 + H2), 1, 2)
    t_cens = rng.exponential(1 / HC, n)
    etype = np.where(t_event <= t_cens, kind, 0)
    return Cohort(np.minimum(t_event, t_cens), (etype > 0).astype(np.int64), event_type=etype,
                  event_type_labels=("a", "b"))


def nonprivate(n: int, replicates: int, seed: int) -> dict[str, np.ndarray]:
    """Coverage per conf.type at t = 10, 30, 60."""
    times = np.array([10.0, 30.0, 60.0])
    rng = np.random.default_rng(seed)
    hits = {k: np.zeros(times.size) for k in CONF_TYPES}
    for _ in range(replicates):
        c = cohort(n, rng)
        cur = estimate(count(c, event_times_grid(c, competing=True), competing=True))
        j = np.searchsorted(cur.time, times, side="right") - 1
        for kind in CONF_TYPES:
            lo, up = incidence_limits(cur.cumulative_incidence, cur.incidence_variance, kind)
            hits[kind] += (lo[0, 0, j] <= truth(times)) & (truth(times) <= up[0, 0, j])
    return {k: v / replicates for k, v in hits.items()}


def private(n: int, eps: float, replicates: int, seed: int) -> dict[str, np.ndarray]:
    """laplace-counts' log interval: coverage at grid points 20, 40, 70 of the published band (the formulas on 1 - I,
    from the last lower limit to 1 where the released counts leave nobody at risk: :func:`incidence_band`) and of
    the formulas on I."""
    grid = TimeGrid(np.linspace(0.0, 100.0, 21), "equal", False)
    public = PublicParameters(100.0, grid)
    idx = np.array([3, 7, 13])
    t = grid.points[idx]
    rng = np.random.default_rng(seed)
    hits = {"on 1 - I": np.zeros(3), "on I": np.zeros(3)}
    for r in range(replicates):
        cur = LaplaceCounts(eps).compute(cohort(n, rng), public, SimulationNoise([seed, r]), competing=True).curves
        value, var = cur.cumulative_incidence[0, 0, 0], cur.incidence_variance[0, 0, 0]
        band = incidence_band(cur, "log")
        for key, (lo, up) in (("on 1 - I", (band[0][0, 0, 0], band[1][0, 0, 0])),
                              ("on I", incidence_limits(value, var, "log", complement=False))):
            hits[key] += (lo[idx] <= truth(t)) & (truth(t) <= up[idx])
    return {k: v / replicates for k, v in hits.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args(argv)
    pct = lambda a: " / ".join(f"{100 * x:.1f}%" for x in a)  # noqa: E731
    print("| non-private, n | " + " | ".join(CONF_TYPES) + " |\n|---|" + "---|" * len(CONF_TYPES))
    for n in (100, 500):
        cov = nonprivate(n, args.replicates, args.seed)
        print(f"| {n} | " + " | ".join(pct(cov[k]) for k in CONF_TYPES) + " |", flush=True)
    print("\n| laplace-counts, n | epsilon | log on 1 - I (in use) | log on I |\n|---|---|---|---|")
    for n, eps in ((200, 0.5), (200, 1.0), (2000, 1.0)):
        cov = private(n, eps, args.replicates, args.seed)
        print(f"| {n} | {eps:g} | {pct(cov['on 1 - I'])} | {pct(cov['on I'])} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
