"""Benchmark: the privacy audit (docs/mechanisms.md) on lung.

1. Timing of 2 x 2000 runs of laplace-counts on lung (releases + attack), best of 5.
2. The empirical epsilon (95% lower bound) of every mechanism at epsilon 0.5, 1 and 2, with larger trial
   counts than the test suite, next to the charged epsilon; the non-private releases; and the
   deliberately broken half-noise variants (laplace-counts on lung, time-indexed on its worst case:
   one subject, one grid point, alpha 0, no clipping below 1, window 1; the Weibull Laplace baseline on its
   worst case: gamma 2, one event at e^-6 plus the target censored at the horizon), which must exceed
   their charge.

Prints a table and saves it as benchmarks/results/audit_bench.csv / .json. Seeded simulation, not a release.
Run: .venv/bin/python benchmarks/audit_bench.py [--scale 1.0]   (--scale multiplies every trial count)
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from dpsurv_core.audit import runner as A  # noqa: E402
from dpsurv_core.curves.laplace_counts import LaplaceCounts  # noqa: E402
from dpsurv_core.data.cohort import Cohort, load_bundled  # noqa: E402
from dpsurv_core.data.public import PublicParameters, TimeGrid  # noqa: E402

EPSILONS = (0.5, 1.0, 2.0)
COVARIATES = ("age", "sex")
# (analysis, mechanism, runs per data set)
CASES = [("km", "laplace-counts", 5000), ("km", "time-indexed", 5000), ("km", "rrr", 5000),
         ("km", "adaptive-km", 5000), ("logrank", "laplace-counts", 5000), ("logrank", "rrr", 5000),
         ("weibull", "lsp-tll", 4000), ("weibull", "laplace", 4000), ("weibull", "saa", 4000),
         ("regression", "output", 4000), ("regression", "objective", 400), ("regression", "psgld", 100)]
NON_PRIVATE = [("km", "nonprivate", 1000), ("logrank", "nonprivate", 1000), ("weibull", "mle", 1000),
               ("regression", "nonprivate", 1000)]


class HalfNoiseCounts(LaplaceCounts):
    """BROKEN on purpose: half the Laplace scale (really 2 eps-DP)."""

    @property
    def scale(self) -> float:
        return 0.5 * super().scale


def _half_time_indexed(eps: float):
    from dpsurv_core.curves.time_indexed import TimeIndexed

    class HalfNoiseTimeIndexed(TimeIndexed):
        @property
        def scales(self) -> np.ndarray:
            return 0.5 * super().scales

    return HalfNoiseTimeIndexed(1, epsilon=eps, alpha=0.0, tau_start=1.0, tau_end=1.0, window=1)


def _row(label: str, analysis: str, res: A.AuditResult, seconds: float) -> dict:
    a = res.attack
    return {"case": label, "analysis": analysis, "mechanism": res.mechanism, "epsilon_charged": res.cost.epsilon,
            "empirical_epsilon_lower": round(a.epsilon_lower, 3),
            "point_estimate": round(a.epsilon_point, 3) if math.isfinite(a.epsilon_point) else math.inf,
            "tpr": round(a.tpr, 4), "fpr": round(a.fpr, 4), "runs_per_dataset": res.trials, "held_out": a.runs,
            "within_charge": bool(res.within_charge), "target_row": res.target.row, "seconds": round(seconds, 2),
            "score": a.score}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every trial count (default 1)")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args(argv)
    lung = load_bundled("lung", group="sex", covariates=COVARIATES)
    public = PublicParameters.derive(lung, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))
    lung1 = load_bundled("lung")
    public1 = PublicParameters.derive(lung1, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))

    times = []
    for rep in range(5):
        start = time.perf_counter()
        A.audit(A.CurveAdapter(LaplaceCounts(1.0), lung1, public1), trials=2000, seed=rep)
        times.append(time.perf_counter() - start)
    print(f"2 x 2000 runs of laplace-counts on lung (target, releases, influential points, attack): best "
          f"{min(times):.3f} s, median {sorted(times)[2]:.3f} s of 5")

    rows = []
    scale = lambda r: max(int(round(r * args.scale)), 20)  # noqa: E731
    for analysis, mech, runs in CASES:
        if mech not in A.mechanisms_for(analysis):
            print(f"skipped {analysis}/{mech}: module not present")
            continue
        for eps in EPSILONS:
            start = time.perf_counter()
            opts = {"covariates": COVARIATES} if analysis == "regression" else {}
            res = A.audit(A.make_adapter(analysis, mech, eps, lung, public, **opts), trials=scale(runs), seed=args.seed)
            rows.append(_row(mech, analysis, res, time.perf_counter() - start))
            print(f"  {analysis:10s} {mech:15s} eps {eps:<4g} eps_lo {res.attack.epsilon_lower:.3f}", flush=True)
    for analysis, mech, runs in NON_PRIVATE:
        start = time.perf_counter()
        opts = {"covariates": COVARIATES} if analysis == "regression" else {}
        res = A.audit(A.make_adapter(analysis, mech, 1.0, lung, public, **opts), trials=scale(runs), seed=args.seed)
        rows.append(_row(f"{mech} (not private)", analysis, res, time.perf_counter() - start))
    one = Cohort(np.array([5.0]), np.array([1], dtype=np.int8), name="one subject")
    public_one = PublicParameters.derive(one, horizon=10.0, grid=TimeGrid.equal(0.0, 10.0, 1))
    for eps in EPSILONS:
        start = time.perf_counter()
        res = A.audit(A.CurveAdapter(HalfNoiseCounts(eps), lung1, public1), trials=scale(5000), seed=args.seed)
        rows.append(_row("BROKEN laplace-counts, half noise (lung)", "km", res, time.perf_counter() - start))
        if "time-indexed" in A.mechanisms_for("km"):
            from dpsurv_core.curves.time_indexed import TimeIndexed

            start = time.perf_counter()
            res = A.audit(A.CurveAdapter(TimeIndexed(1, epsilon=eps, alpha=0.0, tau_start=1.0, tau_end=1.0, window=1),
                                         one, public_one), trials=scale(2000), seed=args.seed)
            rows.append(_row("time-indexed, worst case (one subject)", "km", res, time.perf_counter() - start))
            start = time.perf_counter()
            res = A.audit(A.CurveAdapter(_half_time_indexed(eps), one, public_one), trials=scale(2000), seed=args.seed)
            rows.append(_row("BROKEN time-indexed, half noise (one subject)", "km", res, time.perf_counter() - start))

    from dpsurv_core.privacy.ledger import PrivacyCost
    from dpsurv_core.weibull.mechanisms import LaplaceWeibull

    class HalfNoiseWeibullLaplace(LaplaceWeibull):
        """BROKEN on purpose: noise for eps per parameter (half the scale), charging eps in total."""

        @property
        def epsilon_shape(self) -> float:
            return self.epsilon

        @property
        def epsilon_scale(self) -> float:
            return self.epsilon

        @property
        def cost(self) -> PrivacyCost:
            return PrivacyCost(self.epsilon)

    two = Cohort(np.array([np.exp(-6.0), 1.0]), np.array([1, 0], dtype=np.int8), name="two subjects")
    public_two = PublicParameters.derive(two, horizon=1.0, grid=TimeGrid.equal(0.0, 1.0, 10))
    for eps in EPSILONS:
        for label, mech in (("Weibull laplace, worst case (gamma 2)", LaplaceWeibull(eps, 1.0, gamma=2.0)),
                            ("BROKEN Weibull laplace, half noise (worst case)", HalfNoiseWeibullLaplace(eps, 1.0, gamma=2.0))):
            start = time.perf_counter()
            res = A.audit(A.WeibullAdapter(mech, two, public_two), trials=scale(4000), seed=args.seed, target_row=1)
            rows.append(_row(label, "weibull", res, time.perf_counter() - start))

    frame = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_rows", 200, "display.max_colwidth", 48):
        print(frame.drop(columns=["score"]).to_string(index=False))
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "audit_bench.csv", index=False)
    (out / "audit_bench.json").write_text(json.dumps({"timing_2x2000_laplace_counts_lung_s": {"best": min(times),
                                                                                              "all": times},
                                                      "rows": rows}, indent=2, default=str))
    bad = frame[~frame["within_charge"] & ~frame["case"].str.startswith("BROKEN")
                & np.isfinite(frame["epsilon_charged"].astype(float))]
    caught = frame[frame["case"].str.startswith("BROKEN")]
    print(f"correct mechanisms above their charge: {len(bad)}; broken variants caught: "
          f"{int((~caught['within_charge']).sum())} of {len(caught)}")
    return 1 if len(bad) else 0


if __name__ == "__main__":
    sys.exit(main())
