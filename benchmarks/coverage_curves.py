"""Coverage of the noise-aware 95% intervals of the private survival curves.

``python -m benchmarks.coverage_curves [--replicates R] [--quick] [--seed S]``

Cohorts from :func:`dpsurv_core.data.simulate.weibull_cohort` (Weibull shape 1.3, scale 1000 days, two equal
groups A and B with hazard ratio 1.5, about 30% censoring), n = 200 and 2,000. Public grid: 20 equal bins from 0
to group A's true 90% quantile (declared, not read off the data). Landmarks: the grid points nearest group A's true
25%, 50% and 75% quantiles; the truth there is each group's S at that grid point. For each curve mechanism at
epsilon 0.5, 1 and 2: one release per cohort (``SimulationNoise``), the interval ``km`` prints (R's default log
type; the de-biased curves for rrr; time-indexed's inversion band), and

- coverage of S at the three landmarks and of each group's true median (the band inverted as ``km`` does on a
  public grid), pooled over the two groups, with the Monte Carlo standard error sqrt(p (1 - p) / (2 R));
- the mean width at the landmarks relative to the non-private interval of the same cohorts on the same grid.

Targets (issue 12): coverage 93-97%. The non-private rows are the reference (Greenwood on the public grid).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from dpsurv_core.cli.km import band_curves, conf_bands
from dpsurv_core.curves.release import context
from dpsurv_core.curves.uncertainty import quantile_limits
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

TRUTH = WeibullTruth(hazard_ratio=1.5)
GROUPS = ("A", "B")
BINS = 20
SIZES = (200, 2000)
EPSILONS = (0.5, 1.0, 2.0)
MECHANISMS = ("laplace-counts", "adaptive-km", "rrr", "time-indexed")
CONF_TYPE = "log"


def setting() -> tuple[PublicParameters, np.ndarray, np.ndarray, np.ndarray]:
    """(public parameters, landmark indices (3,), true S at the landmarks (G, 3), true medians (G,))."""
    horizon = TRUTH.quantile(0.9)
    grid = TimeGrid(np.linspace(0.0, horizon, BINS + 1), "equal", False)
    public = PublicParameters(horizon, grid, group_categories=GROUPS)
    points = grid.points
    idx = np.array([int(np.argmin(np.abs(points - TRUTH.quantile(p)))) for p in (0.25, 0.5, 0.75)])
    s_true = np.array([TRUTH.survival(points[idx], g) for g in GROUPS])
    medians = np.array([TRUTH.quantile(0.5, g) for g in GROUPS])
    return public, idx, s_true, medians


def cohort(n: int, seed: int) -> Cohort:
    d = weibull_cohort(n, TRUTH, seed=seed)
    return Cohort(d["time"].to_numpy(float), d["status"].to_numpy(np.int64), d["group"].to_numpy(str))


def measure(mech_id: str, eps: float, n: int, replicates: int, seed: int) -> dict[str, Any]:
    """Coverage (landmarks 3 + median) and mean landmark width over ``replicates`` cohorts."""
    public, idx, s_true, medians = setting()
    points = public.grid.points
    hits = np.zeros(4)
    width = np.zeros(3)
    t0 = time.perf_counter()
    for r in range(replicates):
        data = cohort(n, seed + r)
        mech = catalogue.get(catalogue.CURVES, mech_id).build(eps, **context(data, public))
        rel = mech.release(data, public, SimulationNoise([seed, r]), trials=1)
        curves = band_curves(rel)
        lo, up = conf_bands(curves, CONF_TYPE)
        lo, up = np.nan_to_num(lo[0], nan=0.0), np.nan_to_num(up[0], nan=1.0)  # (G, J); R's NA read as no limit
        hits[:3] += ((lo[:, idx] <= s_true) & (s_true <= up[:, idx])).sum(0)
        width += (up[:, idx] - lo[:, idx]).sum(0)
        m_lo, m_up = quantile_limits(points, lo, up, 0.5, coarse=True)
        hits[3] += np.sum((m_lo <= medians) & (medians <= m_up))
    total = 2 * replicates
    return {"coverage": hits / total, "width": width / total, "seconds": time.perf_counter() - t0}


def run(replicates: int, seed: int = 1, sizes=SIZES, epsilons=EPSILONS, mechanisms=MECHANISMS,
        log=None) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        ref = measure("nonprivate", float("inf"), n, replicates, seed)
        ref_row = {"n": n, "mechanism": "nonprivate", "epsilon": None, **ref, "relative_width": np.ones(3),
                   "replicates": replicates}
        rows.append(ref_row)
        if log:
            log(ref_row)
        for mech_id in mechanisms:
            for eps in epsilons:
                out = measure(mech_id, eps, n, replicates, seed)
                row = {"n": n, "mechanism": mech_id + (" (de-biased)" if mech_id == "rrr" else ""), "epsilon": eps,
                       **out, "relative_width": out["width"] / ref["width"], "replicates": replicates}
                rows.append(row)
                if log:
                    log(row)
    return rows


HEADER = ("| n | mechanism | epsilon | S at q25 | S at q50 | S at q75 | median | width vs non-private (q25, q50, q75) "
          "| s |\n|---|---|---|---|---|---|---|---|---|")


def fmt(row: dict[str, Any]) -> str:
    se = lambda p: np.sqrt(p * (1 - p) / (2 * row["replicates"]))  # noqa: E731
    cov = " | ".join(f"{100 * p:.1f}% ({100 * se(p):.1f})" for p in row["coverage"])
    eps = "-" if row["epsilon"] is None else format(row["epsilon"], "g")
    rel = ", ".join(f"{w:.2f}" for w in row["relative_width"])
    return f"| {row['n']} | {row['mechanism']} | {eps} | {cov} | {rel} | {row['seconds']:.0f} |"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="150 replicates, n = 200, epsilon 1 only")
    args = ap.parse_args(argv)
    reps = 150 if args.quick else args.replicates
    sizes, epsilons = ((200,), (1.0,)) if args.quick else (SIZES, EPSILONS)
    t0 = time.perf_counter()
    print(f"replicates {reps} per cell (two groups each), grid {BINS} equal bins, {CONF_TYPE} intervals; "
          "coverage (Monte Carlo s.e.)", flush=True)
    print(HEADER, flush=True)
    run(reps, args.seed, sizes, epsilons, log=lambda r: print(fmt(r), flush=True))
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
