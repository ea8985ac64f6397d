"""Coverage of the noise-aware intervals of the private Weibull parameters and regression coefficients.

``python -m benchmarks.coverage_models [--weibull-trials R] [--regression-trials R] [--quick] [--markdown]``

Cohorts from :func:`dpsurv_core.data.simulate.weibull_cohort` (two equal groups, about 30% uniform
censoring; column ``x`` = 1 in group B), n = 200 and 2,000, epsilon 0.5, 1 and 2; every release is a
seeded simulation (``SimulationNoise``), one release per simulated cohort, and its 95% interval comes
from :mod:`dpsurv_core.weibull.inference` or :mod:`dpsurv_core.regression.inference`.

* Weibull (lsp-tll, laplace, saa): truth = ``WeibullTruth`` (shape 1.3, scale 1000 days, hazard ratio 1 so
  the pooled times are exactly Weibull), normalised as the code normalises times (scale / horizon, the
  horizon = the censoring limit, declared). Coverage of shape and scale; mean width against the
  non-private Wald interval of lifelines ``WeibullFitter`` on the same normalised data.
* Regression (output, objective, psgld; Lambda 0.01, T = 20, 5 knots, range of x declared [0, 1], n
  public): truth = the non-private discrete-time fit (Lambda = 0) on one simulated cohort of 100,000
  (the logistic discrete-time coefficient is not the log hazard ratio). Hazard ratio 1.5 for coverage
  and width (against the non-private Wald interval of the same cohort); hazard ratio 1 for the type-I
  error of the noise-calibrated Wald test at alpha 0.05.

Monte Carlo standard error of a coverage c over R trials: sqrt(c (1 - c) / R), printed beside it.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from typing import Any

import numpy as np

from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.simulate import WeibullTruth, weibull_cohort
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.regression.inference import coefficient_inference
from dpsurv_core.regression.mechanisms import build_mechanism
from dpsurv_core.regression.model import Z95, fit_nonprivate, minimise
from dpsurv_core.regression.person_period import person_period
from dpsurv_core.weibull.inference import weibull_intervals
from dpsurv_core.weibull.mechanisms import make_mechanism
from dpsurv_core.weibull.model import WeibullSample, normalise

EPSILONS = (0.5, 1.0, 2.0)
SIZES = (200, 2000)
WEIBULL_MECHANISMS = ("lsp-tll", "laplace", "saa")
REGRESSION_MECHANISMS = ("output", "objective", "psgld")
LAMBDA = 0.01
LARGE_N = 200_000  # Weibull intervals above 5,000 subjects come from the record law (no cohort of n is simulated)
TRUTH_N = 100_000


def _se(c: float, r: int) -> float:
    return math.sqrt(max(c * (1 - c), 0.0) / r)


def weibull_cell(n: int, epsilon: float, mechanism: str, trials: int, seed: int = 0) -> dict[str, Any]:
    """Coverage and mean width of the 95% shape and scale intervals over ``trials`` simulated cohorts."""
    from lifelines import WeibullFitter

    truth = WeibullTruth()
    horizon = truth.censoring_limit
    p0, l0 = truth.shape, truth.scale / horizon
    hit_p = hit_l = 0
    wp, wl, np_p, np_l = [], [], [], []
    seeds = np.random.SeedSequence([seed, n, int(epsilon * 100), WEIBULL_MECHANISMS.index(mechanism)]).spawn(trials)
    for r in range(trials):
        rng = np.random.default_rng(seeds[r])
        df = weibull_cohort(n, truth, rng=rng)
        s = WeibullSample(normalise(df["time"].to_numpy(float), horizon), df["status"].to_numpy(), horizon)
        mech = make_mechanism(mechanism, epsilon, horizon)
        est = mech.compute(s, SimulationNoise(rng.integers(2 ** 63)))
        inf = weibull_intervals(mech, est, n, 0.3)
        hit_p += inf.shape.lower <= p0 <= inf.shape.upper
        hit_l += inf.scale_normalised.lower <= l0 <= inf.scale_normalised.upper
        wp.append(inf.shape.upper - inf.shape.lower)
        wl.append(inf.scale_normalised.upper - inf.scale_normalised.lower)
        sm = WeibullFitter().fit(s.t, s.d).summary  # Wald intervals of lambda_ and rho_
        np_p.append(float(sm.loc["rho_", "coef upper 95%"] - sm.loc["rho_", "coef lower 95%"]))
        np_l.append(float(sm.loc["lambda_", "coef upper 95%"] - sm.loc["lambda_", "coef lower 95%"]))
    cp, cl = float(hit_p) / trials, float(hit_l) / trials
    return {"model": "weibull", "mechanism": mechanism, "n": n, "epsilon": epsilon, "trials": trials,
            "coverage_shape": cp, "coverage_shape_se": _se(cp, trials), "coverage_scale": cl,
            "coverage_scale_se": _se(cl, trials), "width_shape": float(np.mean(wp)),
            "width_ratio_shape": float(np.mean(wp) / np.mean(np_p)), "width_scale": float(np.mean(wl)),
            "width_ratio_scale": float(np.mean(wl) / np.mean(np_l))}


def _cohort(n: int, hazard_ratio: float, rng: np.random.Generator) -> Cohort:
    df = weibull_cohort(n, WeibullTruth(hazard_ratio=hazard_ratio), rng=rng)
    return Cohort(df["time"].to_numpy(float), df["status"].to_numpy(), covariates=df[["x"]])


def regression_truth(hazard_ratio: float = 1.5, n: int = TRUTH_N, seed: int = 20261123) -> float:
    """The non-private discrete-time coefficient of x (Lambda = 0) on one very large simulated cohort."""
    horizon = WeibullTruth(hazard_ratio=hazard_ratio).censoring_limit
    pp = person_period(_cohort(n, hazard_ratio, np.random.default_rng(seed)), ["x"], horizon=horizon,
                       ranges={"x": (0.0, 1.0)})
    return float(minimise(pp, 0.0)[0] * pp.encoding.to_original[0])


def regression_cell(n: int, epsilon: float, kind: str, trials: int, truth: float, hazard_ratio: float = 1.5,
                    seed: int = 0, draws: int = 1, information_share: float = 0.0) -> dict[str, Any]:
    """Coverage and width of the 95% interval of the x coefficient and the rejection rate of the calibrated Wald
    test at alpha 0.05 (its type-I error when ``hazard_ratio`` = 1, with truth 0). ``draws``: pSGLD's K released
    draws (epsilon/K each); ``information_share``: objective perturbation's share rho of epsilon spent on a noisy
    information matrix. The cohorts depend on the seed, n, epsilon, the mechanism and the hazard ratio only, so
    variants of one mechanism are compared on the same cohorts."""
    horizon = WeibullTruth(hazard_ratio=hazard_ratio).censoring_limit
    hits = rejections = 0
    widths, np_widths = [], []
    seeds = np.random.SeedSequence([seed, n, int(epsilon * 100), REGRESSION_MECHANISMS.index(kind),
                                    int(hazard_ratio * 10)]).spawn(trials)
    for r in range(trials):
        rng = np.random.default_rng(seeds[r])
        pp = person_period(_cohort(n, hazard_ratio, rng), ["x"], horizon=horizon, ranges={"x": (0.0, 1.0)}, n_public=n)
        mech = build_mechanism(kind, epsilon, pp, lam=LAMBDA, information_share=information_share)
        if draws > 1:
            mech.set_draws(draws)
        rel = mech.compute(pp, SimulationNoise(rng.integers(2 ** 63)))
        inf = coefficient_inference(mech, rel)
        hits += inf.lower[0] <= truth <= inf.upper[0]
        rejections += inf.p_value[0] < 0.05
        widths.append(inf.upper[0] - inf.lower[0])
        fit = fit_nonprivate(pp, 0.0)
        np_widths.append(2 * Z95 * fit.se[0] * pp.encoding.to_original[0])
    c, rej = float(hits) / trials, float(rejections) / trials
    label = kind if draws == 1 else f"{kind} ({draws} draws)"
    label = label if not information_share else f"{kind} (rho {information_share:g})"
    return {"model": "regression", "mechanism": label, "n": n,
            "epsilon": epsilon, "hazard_ratio": hazard_ratio, "trials": trials, "coverage": c,
            "coverage_se": _se(c, trials), "rejection_rate": rej, "rejection_rate_se": _se(rej, trials),
            "width": float(np.median(widths)), "width_ratio": float(np.median(widths) / np.median(np_widths))}


def run(weibull_trials: dict[int, int], regression_trials: int, psgld_trials: int, null_trials: int,
        sizes: tuple[int, ...] = SIZES, epsilons: tuple[float, ...] = EPSILONS, progress: bool = True,
        psgld_draws: tuple[int, ...] = (), information_shares: tuple[float, ...] = (),
        weibull_mechanisms: tuple[str, ...] = WEIBULL_MECHANISMS) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()

    def say(row: dict[str, Any]) -> None:
        rows.append(row)
        if progress:
            print(f"[{time.perf_counter() - t0:6.0f}s] {row}", file=sys.stderr, flush=True)

    for n in sizes:
        for eps in epsilons:
            for m in weibull_mechanisms:
                if weibull_trials.get(n):
                    say(weibull_cell(n, eps, m, weibull_trials[n]))
    truth = regression_truth(1.5)
    for n in sizes:
        for eps in epsilons:
            variants = [(k, {}) for k in REGRESSION_MECHANISMS]
            variants += [("psgld", {"draws": k}) for k in psgld_draws]
            variants += [("objective", {"information_share": rho}) for rho in information_shares]
            for kind, extra in variants:
                r = psgld_trials if kind == "psgld" else regression_trials
                if r:
                    row = regression_cell(n, eps, kind, r, truth, **extra)
                    if null_trials:
                        null = regression_cell(n, eps, kind, min(r, null_trials), 0.0, hazard_ratio=1.0, **extra)
                        row["type_i_error"], row["type_i_error_se"] = null["rejection_rate"], null["rejection_rate_se"]
                    say(row)
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    w = [r for r in rows if r["model"] == "weibull"]
    g = [r for r in rows if r["model"] == "regression"]
    out = []
    if w:
        out += ["| mechanism | n | epsilon | trials | coverage shape | coverage scale | width shape (x non-private) "
                "| width scale (x non-private) |", "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['mechanism']} | {r['n']} | {r['epsilon']:g} | {r['trials']} | {r['coverage_shape']:.0%} "
                f"(± {r['coverage_shape_se']:.0%}) | {r['coverage_scale']:.0%} (± {r['coverage_scale_se']:.0%}) | "
                f"{r['width_shape']:.3g} ({r['width_ratio_shape']:.3g}x) | {r['width_scale']:.3g} "
                f"({r['width_ratio_scale']:.3g}x) |" for r in w]
        out.append("")
    if g:
        out += ["| mechanism | n | epsilon | trials | coverage of beta_x | median width (x non-private) | power at HR 1.5 "
                "| type-I error at HR 1 |", "|---|---|---|---|---|---|---|---|"]
        out += [f"| {r['mechanism']} | {r['n']} | {r['epsilon']:g} | {r['trials']} | {r['coverage']:.0%} "
                f"(± {r['coverage_se']:.0%}) | {r['width']:.3g} ({r['width_ratio']:.3g}x) | {r['rejection_rate']:.0%} | "
                + (f"{r['type_i_error']:.1%} (± {r['type_i_error_se']:.1%})" if "type_i_error" in r else "-") + " |"
                for r in g]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.coverage_models", description=__doc__.splitlines()[0])
    ap.add_argument("--weibull-trials", type=int, nargs=2, default=(40, 25), metavar=("N200", "N2000"))
    ap.add_argument("--regression-trials", type=int, default=100)
    ap.add_argument("--psgld-trials", type=int, default=60)
    ap.add_argument("--null-trials", type=int, default=100)
    ap.add_argument("--psgld-draws", type=int, nargs="*", default=(), metavar="K",
                    help="also pSGLD releasing K draws at epsilon/K each (for example 5 10)")
    ap.add_argument("--information-shares", type=float, nargs="*", default=(), metavar="RHO",
                    help="also objective perturbation spending RHO of epsilon on a noisy information matrix")
    ap.add_argument("--sizes", type=int, nargs="*", default=SIZES, help="cohort sizes (default 200 2000)")
    ap.add_argument("--epsilons", type=float, nargs="*", default=EPSILONS, help="epsilons (default 0.5 1 2)")
    ap.add_argument("--weibull-large", type=int, default=0, metavar="R",
                    help=f"also lsp-tll at n = {LARGE_N:,}, R trials per epsilon (its intervals simulate no cohort "
                         "of that size)")
    ap.add_argument("--weibull-mechanisms", nargs="*", default=WEIBULL_MECHANISMS, choices=WEIBULL_MECHANISMS,
                    help="Weibull mechanisms to measure (default all three; each keeps its own seeds)")
    ap.add_argument("--quick", action="store_true", help="n = 200, epsilon 1, a few trials (a smoke run)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    if a.quick:
        rows = run({200: 6}, 20, 10, 20, sizes=(200,), epsilons=(1.0,))
    else:
        rows = run(dict(zip(SIZES, a.weibull_trials)), a.regression_trials, a.psgld_trials, a.null_trials,
                   sizes=tuple(a.sizes), epsilons=tuple(a.epsilons), psgld_draws=tuple(a.psgld_draws),
                   information_shares=tuple(a.information_shares),
                   weibull_mechanisms=tuple(a.weibull_mechanisms))
    if a.weibull_large:
        rows += [weibull_cell(LARGE_N, eps, "lsp-tll", a.weibull_large) for eps in a.epsilons]
    print(markdown(rows) if a.markdown else rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
