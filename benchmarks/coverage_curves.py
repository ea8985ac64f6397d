"""Coverage of the noise-aware 95% intervals of the private survival curves.

``python -m benchmarks.coverage_curves [--replicates R] [--quick] [--seed S]``

Cohorts from :func:`dpsurv_core.data.simulate.weibull_cohort` (Weibull shape 1.3, scale 1000 days, two equal
groups A and B with hazard ratio 1.5, about 30% censoring), n = 200 and 2,000. Public grid: 20 equal bins from 0
to group A's true 90% quantile (declared, not read off the data). Landmarks: the grid points nearest group A's true
25%, 50% and 75% quantiles; the truth there is each group's S at that grid point. For each curve mechanism at
epsilon 0.5, 1 and 2: one release per cohort (``SimulationNoise``), the interval ``km`` prints (R's default log
type; the de-biased curves for rrr; time-indexed's inversion band), and

- coverage of S at the three landmarks and of each group's true median (the band inverted as ``km`` does on a
  public grid: read linearly between grid points, the upper limit at least the estimate), pooled over the two groups, with the Monte Carlo standard error sqrt(p (1 - p) / (2 R)); the
  median's coverage again by R's rule read on the grid (where each band crosses 0.5), which shows what the grid's
  coarseness does to it;
- the share of landmark intervals with the truth below the lower limit and above the upper limit (a conservative
  cell that misses on one side only is shaped, not too wide);
- the mean width at the landmarks relative to the non-private interval of the same cohorts on the same grid.

time-indexed is run with the design's group size and censoring share declared (n / 2 per group, 30%, public), so
its band carries the sampling error, at the fixed totals above and as published at base e = 1, 2, 5 (totals 62.5 e), where its curve
carries information; at e = 2 and 5 also without the declared size (the noise-only band).

Target: coverage 93-97%. The non-private rows are the reference (Greenwood on the public grid).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from dpsurv_core.cli.km import band_curves, conf_bands
from dpsurv_core.curves.intervals import quantile_limits
from dpsurv_core.curves.result import context
from dpsurv_core.curves.time_indexed import TimeIndexed
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
MECHANISMS = ("laplace-counts", "adaptive-km", "rrr", "time-indexed+n")
# time-indexed where it carries information (as published, base e; total = 62.5 e on 20 points), with and without the
# declared group size that puts the sampling error in its band
EXTRA_ROWS = (("time-indexed/base+n", 1.0), ("time-indexed/base+n", 2.0), ("time-indexed/base+n", 5.0),
              ("time-indexed/base", 2.0), ("time-indexed/base", 5.0))
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


def build(mech_id: str, eps: float, data: Cohort, public: PublicParameters, n: int) -> Any:
    """The mechanism of a row. ``mech_id`` "time-indexed/base" is time-indexed as published (``eps`` is the paper's
    base e; the ledger charges e n (1 + alpha (n + 1) / 2)); a "+n" suffix declares each group's design size (n / 2,
    public) and the design's censoring share (30%, public) so that time-indexed's band carries the sampling error."""
    name, _, size = mech_id.partition("+")
    declared = {"sample_size": n // len(GROUPS), "censoring": TRUTH.censoring} if size else {}
    if name == "time-indexed/base":
        return TimeIndexed(public.grid.bins, base_epsilon=eps, **declared)
    if name == "time-indexed":
        return TimeIndexed(public.grid.bins, epsilon=eps, **declared)
    return catalogue.get(catalogue.CURVES, name).build(eps, **context(data, public))


def measure(mech_id: str, eps: float, n: int, replicates: int, seed: int) -> dict[str, Any]:
    """Coverage (landmarks 3 + median, then the median by R's rule on the grid), the share of landmark misses with
    the truth below and above the band, and the mean landmark width over ``replicates`` cohorts."""
    public, idx, s_true, medians = setting()
    points = public.grid.points
    hits = np.zeros(5)
    misses = np.zeros(2)
    width = np.zeros(3)
    t0 = time.perf_counter()
    for r in range(replicates):
        data = cohort(n, seed + r)
        mech = build(mech_id, eps, data, public, n)
        rel = mech.compute(data, public, SimulationNoise([seed, r]), trials=1)
        curves = band_curves(rel)
        lo, up = conf_bands(curves, CONF_TYPE)
        lo, up = np.nan_to_num(lo[0], nan=0.0), np.nan_to_num(up[0], nan=1.0)  # (G, J); R's NA read as no limit
        hits[:3] += ((lo[:, idx] <= s_true) & (s_true <= up[:, idx])).sum(0)
        misses += [(s_true < lo[:, idx]).sum(), (s_true > up[:, idx]).sum()]
        width += (up[:, idx] - lo[:, idx]).sum(0)
        m_lo, m_up = quantile_limits(points, lo, up, 0.5, coarse=True, curve=curves.survival[0])
        hits[3] += np.sum((m_lo <= medians) & (medians <= m_up))
        r_lo, r_up = quantile_limits(points, lo, up, 0.5, coarse=False)
        hits[4] += np.sum((r_lo <= medians) & (medians <= r_up))
    total = 2 * replicates
    return {"coverage": hits[:4] / total, "median_r_rule": hits[4] / total, "misses": misses / (3 * total),
            "width": width / total, "seconds": time.perf_counter() - t0}


def label(mech_id: str) -> str:
    name, _, size = mech_id.partition("+")
    text = {"rrr": "rrr (de-biased)", "time-indexed/base": "time-indexed, as published"}.get(name, name)
    if name.startswith("time-indexed"):
        text += ", declared n / 2 per group, 30% censoring" if size else ", noise only"
    return text


def run(replicates: int, seed: int = 1, sizes=SIZES, epsilons=EPSILONS, mechanisms=MECHANISMS,
        log=None, extra_rows=EXTRA_ROWS) -> list[dict[str, Any]]:
    rows = []
    for n in sizes:
        ref = measure("nonprivate", float("inf"), n, replicates, seed)
        ref_row = {"n": n, "mechanism": "nonprivate", "epsilon": None, **ref, "relative_width": np.ones(3),
                   "replicates": replicates}
        rows.append(ref_row)
        if log:
            log(ref_row)
        cells = [(m, e) for m in mechanisms for e in epsilons] + list(extra_rows)
        for mech_id, eps in cells:
            out = measure(mech_id, eps, n, replicates, seed)
            shown = eps if not mech_id.startswith("time-indexed/base") else f"e = {eps:g}"
            row = {"n": n, "mechanism": label(mech_id), "epsilon": shown, **out,
                   "relative_width": out["width"] / ref["width"], "replicates": replicates}
            rows.append(row)
            if log:
                log(row)
    return rows


HEADER = ("| n | mechanism | epsilon | S at q25 | S at q50 | S at q75 | median | median, R's rule | misses below / above "
          "| width vs non-private (q25, q50, q75) | s |\n|---|---|---|---|---|---|---|---|---|---|---|")


def fmt(row: dict[str, Any]) -> str:
    se = lambda p: np.sqrt(p * (1 - p) / (2 * row["replicates"]))  # noqa: E731
    cov = " | ".join(f"{100 * p:.1f}% ({100 * se(p):.1f})" for p in row["coverage"])
    eps = "-" if row["epsilon"] is None else format(row["epsilon"], "g") if not isinstance(row["epsilon"], str) \
        else row["epsilon"]
    rel = ", ".join(f"{w:.2f}" for w in row["relative_width"])
    below, above = (100 * m for m in row["misses"])
    return (f"| {row['n']} | {row['mechanism']} | {eps} | {cov} | {100 * row['median_r_rule']:.1f}% | "
            f"{below:.1f}% / {above:.1f}% | {rel} | {row['seconds']:.0f} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=300)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="150 replicates, n = 200, epsilon 1 only (laplace-counts, "
                    "rrr, and time-indexed as published at e = 2)")
    args = ap.parse_args(argv)
    reps = 150 if args.quick else args.replicates
    sizes, epsilons = ((200,), (1.0,)) if args.quick else (SIZES, EPSILONS)
    t0 = time.perf_counter()
    print(f"replicates {reps} per cell (two groups each), grid {BINS} equal bins, {CONF_TYPE} intervals; "
          "coverage (Monte Carlo s.e.)", flush=True)
    print(HEADER, flush=True)
    mechanisms = ("laplace-counts", "rrr") if args.quick else MECHANISMS
    run(reps, args.seed, sizes, epsilons, mechanisms, log=lambda r: print(fmt(r), flush=True),
        extra_rows=(("time-indexed/base+n", 2.0),) if args.quick else EXTRA_ROWS)
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
