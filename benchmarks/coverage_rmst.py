"""Coverage of the private RMST intervals on simulated cohorts: the area read linearly between grid points
against the step curve's area.

The cohorts, grid and truth are those of :mod:`benchmarks.coverage_curves` (Weibull shape 1.3, two groups with
hazard ratio 1.5, about 30% censoring, 20 public bins). The RMST is asked to a time half a bin after the grid
point nearest group A's 75% quantile, so the time asked is off the grid. The true RMST is the integral of the
true survival curve. One release per cohort; coverage and bias are pooled over the two groups.

    .venv/bin/python -m benchmarks.coverage_rmst --replicates 200
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import numpy as np
from scipy.integrate import quad

from benchmarks.coverage_curves import GROUPS, TRUTH, build, cohort, setting
from dpsurv_core.cli.km import band_curves
from dpsurv_core.curves.intervals import rmst_interval
from dpsurv_core.privacy.noise import SimulationNoise

CELLS = (("nonprivate", float("inf")), ("laplace-counts", 0.5), ("laplace-counts", 1.0), ("laplace-counts", 2.0),
         ("adaptive-km", 0.5), ("adaptive-km", 1.0), ("adaptive-km", 2.0), ("rrr", 1.0))


def target() -> tuple[float, np.ndarray]:
    """(the time asked, the true RMST of each group to it)."""
    public, idx, _, _ = setting()
    points = public.grid.points
    tau = float(points[idx[2]]) + 0.5 * float(points[1] - points[0])
    truth = np.array([quad(lambda t, g=g: float(TRUTH.survival(np.array([t]), g)[0]), 0.0, tau)[0] for g in GROUPS])
    return tau, truth


def measure(mech_id: str, eps: float, n: int, replicates: int, seed: int = 1) -> dict[str, Any]:
    """Coverage, mean bias and mean width of the RMST interval, read linearly (``linear``) and as a step
    (``step``), over ``replicates`` cohorts."""
    public = setting()[0]
    tau, truth = target()
    out: dict[str, Any] = {}
    values = {lin: [] for lin in (False, True)}
    for r in range(replicates):
        data = cohort(n, seed + r)
        rel = build(mech_id, eps, data, public, n).compute(data, public, SimulationNoise([seed, r]), trials=1)
        curves = band_curves(rel)
        for lin in (False, True):
            values[lin].append(np.stack([a[0] for a in rmst_interval(curves, tau, lin)]))
    for lin, key in ((False, "step"), (True, "linear")):
        v, lo, up = np.stack(values[lin], axis=1)  # (replicates, G) each
        out[key] = {"coverage": float(np.mean((lo <= truth) & (truth <= up))), "bias": float(np.mean(v - truth)),
                    "width": float(np.mean(up - lo))}
    return {"tau": tau, "truth": truth.tolist(), **out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    print("| n | mechanism | epsilon | coverage, linear | bias, linear | width, linear | coverage, step | bias, step |\n"
          "|---|---|---|---|---|---|---|---|")
    for n in (200, 2000):
        for mech_id, eps in CELLS:
            m = measure(mech_id, eps, n, args.replicates, args.seed)
            lin, step = m["linear"], m["step"]
            print(f"| {n} | {mech_id} | {'-' if not np.isfinite(eps) else format(eps, 'g')} | "
                  f"{100 * lin['coverage']:.1f}% | {lin['bias']:+.1f} | {lin['width']:.1f} | "
                  f"{100 * step['coverage']:.1f}% | {step['bias']:+.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
