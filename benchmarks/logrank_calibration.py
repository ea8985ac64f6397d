"""Calibration of the private log-rank tests: type-I error and power on simulated Weibull cohorts.

``python -m benchmarks.logrank_calibration [--replicates R] [--draws B] [--quick] [--markdown]``

Cohorts from :func:`dpsurv_core.data.simulate.weibull_cohort` (two equal groups, about 30% censoring),
n = 200 and 2,000, hazard ratio 1 (type-I error) and 1.5 (power). Public grid: 20 equal bins from 0 to
the censoring limit (declared, not read off the data). For each curve mechanism the ``logrank``
command serves, at epsilon 0.5, 1 and 2: one release per cohort, the calibrated test
(:mod:`dpsurv_core.curves.logrank_test`, B null draws) and the naive chi-square tail that ignores the
noise; the rejection rate at alpha 0.05 with its Monte Carlo standard error sqrt(p (1 - p) / R). The
non-private test on the same public grid is the reference for power.

Every release is a seeded simulation (``SimulationNoise``); the replicates of one cell go through the
calibration in one vectorised call.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np

from dpsurv_core.curves import logrank
from dpsurv_core.curves import logrank_test as lt
from dpsurv_core.curves.counts import BinnedCounts, count
from dpsurv_core.curves.result import context
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.noise import SimulationNoise

EPSILONS = (0.5, 1.0, 2.0)
SIZES = (200, 2000)
RATIOS = (1.0, 1.5)
GROUPS = ("A", "B")
BINS = 20
ALPHA = 0.05
# the mechanisms studied: every private curve mechanism the logrank command serves; rrr also read de-biased.
# Disclosure-control methods (no epsilon) are run once each, not per epsilon.
_SDC = set(getattr(catalogue, "disclosure_ids", lambda *a: [])(catalogue.CURVES, "logrank"))
STUDIED = [(m, False) for m in catalogue.ids(catalogue.CURVES, "logrank", private=True)]
STUDIED += [("rrr", True)] if any(m == "rrr" for m, _ in STUDIED) else []


def cohorts(n: int, hr: float, replicates: int, seed: int) -> tuple[list[Cohort], PublicParameters]:
    truth = WeibullTruth(hazard_ratio=hr)
    horizon = float(math.ceil(truth.censoring_limit))
    grid = TimeGrid(np.linspace(0.0, horizon, BINS + 1), "equal", False)
    out = []
    for r in range(replicates):
        d = weibull_cohort(n, truth, rng=np.random.default_rng([seed, n, int(hr * 100), r]))
        out.append(Cohort(d["time"].to_numpy(float), d["status"].to_numpy(np.int64), d["group"].to_numpy(str)))
    public = PublicParameters(horizon, grid, group_categories=GROUPS)
    return out, public


def stack(parts: list[BinnedCounts]) -> BinnedCounts:
    p0 = parts[0]
    join = np.concatenate if p0.n.ndim == 2 else np.stack  # released counts carry a trials axis, exact ones not
    cat = lambda name: join([np.asarray(getattr(p, name), float) for p in parts])  # noqa: E731
    return BinnedCounts(p0.grid, p0.groups, cat("n"), cat("events"), cat("censored"), p0.event_types)


def rate(reject: np.ndarray) -> tuple[float, float]:
    p = float(np.mean(reject))
    return p, math.sqrt(p * (1 - p) / reject.size)


def cell(mech_id: str, debiased: bool, eps: float | None, data: list[Cohort], public: PublicParameters, draws: int,
         seed: int) -> dict[str, Any]:
    """One release per cohort, then every release's calibrated test in one call."""
    mech = catalogue.get(catalogue.CURVES, mech_id).build(eps, **context(data[0], public))
    noise = SimulationNoise(np.random.SeedSequence([seed, int((eps or 0) * 1000), len(data[0].time)]))
    counts, kept, extra = [], [], {}
    for c in data:
        rel = mech.compute(c, public, noise, trials=1)
        counts.append(rel.extra["debiased_counts"] if debiased else rel.counts)
        if "kept" in rel.extra:
            kept.append(rel.extra["kept"])
            extra = {"actuarial": rel.extra["actuarial"]}
    if kept:
        extra["kept"] = np.concatenate(kept)
    released = stack(counts)
    law = lt.noise_law(mech, extra, debiased)
    t0 = time.perf_counter()
    res = lt.calibrated_tests(released, law, draws=draws, overall=False)[0]
    return {"calibrated": res.p_value < ALPHA, "naive": res.chi2_tail_ignoring_noise < ALPHA,
            "seconds": time.perf_counter() - t0}


def nonprivate(data: list[Cohort], public: PublicParameters) -> np.ndarray:
    exact = stack([count(c, public.grid, GROUPS) for c in data])
    return np.asarray(logrank.pairwise(exact)[0].p_value) < ALPHA


def run(replicates: int, draws: int, seed: int = 1, sizes=SIZES, epsilons=EPSILONS, studied=None,
        log=None) -> list[dict[str, Any]]:
    rows = []
    studied = STUDIED if studied is None else studied
    for n in sizes:
        data = {hr: cohorts(n, hr, replicates, seed) for hr in RATIOS}
        ref = {hr: rate(nonprivate(*data[hr])) for hr in RATIOS}
        for mech_id, deb in studied:
            for eps in ((None,) if mech_id in _SDC else epsilons):
                out = {hr: cell(mech_id, deb, eps, *data[hr], draws, seed) for hr in RATIOS}
                row = {"n": n, "mechanism": mech_id + (" (de-biased)" if deb else ""), "epsilon": eps,
                       "type1": rate(out[1.0]["calibrated"]), "type1_naive": rate(out[1.0]["naive"]),
                       "power": rate(out[1.5]["calibrated"]), "power_naive": rate(out[1.5]["naive"]),
                       "type1_nonprivate": ref[1.0], "power_nonprivate": ref[1.5],
                       "seconds": out[1.0]["seconds"] + out[1.5]["seconds"]}
                rows.append(row)
                if log:
                    log(row)
    return rows


def fmt(row: dict[str, Any]) -> str:
    pc = lambda v: f"{100 * v[0]:.1f}% ({100 * v[1]:.1f})"  # noqa: E731
    return (f"| {row['n']} | {row['mechanism']} | {'none' if row['epsilon'] is None else format(row['epsilon'], 'g')} | {pc(row['type1'])} | {pc(row['type1_naive'])} | "
            f"{pc(row['power'])} | {pc(row['power_nonprivate'])} |")


HEADER = ("| n | mechanism | epsilon | type-I, calibrated (MC s.e.) | type-I, naive chi-square | power at HR 1.5, "
          "calibrated | power, non-private (same grid) |\n|---|---|---|---|---|---|---|")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=1000)
    ap.add_argument("--draws", type=int, default=199)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="200 replicates, n = 200 only")
    args = ap.parse_args(argv)
    reps = 200 if args.quick else args.replicates
    sizes = (200,) if args.quick else SIZES
    t0 = time.perf_counter()
    print(f"replicates {reps}, null draws {args.draws}, alpha {ALPHA}, grid {BINS} equal bins", flush=True)
    print(HEADER, flush=True)
    run(reps, args.draws, args.seed, sizes, log=lambda r: print(fmt(r), flush=True))
    print(f"total {time.perf_counter() - t0:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
