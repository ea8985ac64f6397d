"""Benchmark: private discrete-time regression on flchain (age, sex), Nguyen & Hui 2017, regression Table 2/3 and Figure 5 design.

Prints and saves under benchmarks/results/:
* relative error of the non-private discrete-time coefficients (Lambda = 0, T = 20, q = 5) to lifelines Cox;
* MRE against the non-private MLE of output perturbation, objective perturbation and pSGLD at
  epsilon 0.1, 0.5, 1, 2, 5 (seeded simulation, not a release), table + plotly HTML;
* the Lambda trade-off of the two perturbation methods at epsilon 1 (Table 2 design);
* the timing ratio of the person-period fit (expansion + L-BFGS) to CoxPHFitter on the same data.

Run: .venv/bin/python benchmarks/regression_flchain.py [--trials 100] [--chains 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pandas as pd  # noqa: E402
import plotly.graph_objects as go  # noqa: E402

from dpsurv_core.data.cohort import load_bundled  # noqa: E402
from dpsurv_core.regression.mechanisms import lambda_study, mre_study  # noqa: E402
from dpsurv_core.regression.model import fit_cox, fit_nonprivate, relative_errors  # noqa: E402
from dpsurv_core.regression.person_period import person_period  # noqa: E402

EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0]
LAMBDAS = [1e-4, 1e-3, 1e-2, 1e-1, 1.0]
HORIZON = 5300.0  # declared: the study's follow-up (days), not read off the data
RANGES = {"age": (50.0, 105.0)}  # declared: the cohort enrolled residents aged 50 and over
LEVELS = {"sex": ("F", "M")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=100, help="draws per (mechanism, epsilon) for the perturbation methods")
    ap.add_argument("--chains", type=int, default=20, help="pSGLD chains per epsilon")
    ap.add_argument("--lam", type=float, default=0.01, help="Lambda of the perturbation methods")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args()
    out_dir = ROOT / "benchmarks" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)

    cohort = load_bundled("flchain", covariates=("age", "sex"))

    def build():
        return person_period(cohort, ["age", "sex"], horizon=HORIZON, intervals=20, knots=5, ranges=RANGES,
                             levels=LEVELS, n_public=cohort.n)

    pp = build()
    fit = fit_nonprivate(pp, 0.0)
    cox = fit_cox(cohort, pp)
    re = relative_errors(fit.coefficients, cox.coefficients)
    print(f"flchain: {pp.n} subjects, {pp.y.size} person-period rows, {int(pp.y.sum())} events within {HORIZON:g} days")
    print("\nNon-private discrete-time (logit, T = 20, q = 5, Lambda = 0) vs Cox (lifelines, Efron):")
    print(f"{'coefficient':12s} {'discrete':>10s} {'cox':>10s} {'rel. error':>10s}")
    for k in cox.coefficients:
        print(f"{k:12s} {fit.coefficients[k]:10.5f} {cox.coefficients[k]:10.5f} {100 * re[k]:9.2f}%")

    # timing: expansion + fit vs CoxPHFitter, median of 5
    t_pp, t_cox = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        fit_nonprivate(build(), 0.0)
        t_pp.append(time.perf_counter() - t0)
        t_cox.append(fit_cox(cohort, pp).seconds)
    ratio = statistics.median(t_pp) / statistics.median(t_cox)
    print(f"\nTiming (median of 5): person-period expansion + L-BFGS fit {statistics.median(t_pp):.3f} s, "
          f"CoxPHFitter {statistics.median(t_cox):.3f} s: ratio {ratio:.2f}")

    t0 = time.perf_counter()
    pert = mre_study(pp, EPSILONS, lam=args.lam, trials=args.trials, seed=args.seed, mechanisms=("output", "objective"))
    chains = mre_study(pp, EPSILONS, lam=args.lam, trials=args.chains, seed=args.seed + 1, mechanisms=("psgld",))
    rows = pd.DataFrame(pert + chains)
    print(f"\nMRE against the non-private MLE (Lambda = {args.lam:g} for the perturbation methods; "
          f"{args.trials} draws, {args.chains} pSGLD chains; {time.perf_counter() - t0:.0f} s):")
    table = rows.pivot(index="mechanism", columns="epsilon", values="mre")
    print(table.to_string(float_format=lambda v: f"{v:.3f}"))

    lam_rows = pd.DataFrame(lambda_study(pp, LAMBDAS, [1.0], trials=args.trials, seed=args.seed + 7))
    lam_table = lam_rows.pivot(index="mechanism", columns="lambda", values="mre")
    print("\nLambda trade-off at epsilon = 1 (MRE; Nguyen & Hui 2017, regression Table 2 design):")
    print(lam_table.to_string(float_format=lambda v: f"{v:.3f}"))

    fig = go.Figure()
    for kind, sub in rows.groupby("mechanism"):
        label = {"output": "output perturbation", "objective": "objective perturbation",
                 "psgld": "pSGLD (approximate DP, MCMC)"}[kind]
        fig.add_scatter(x=sub.epsilon, y=sub.mre, mode="lines+markers", name=label,
                        error_y=dict(type="data", array=1.96 * sub.mre_se))
    fig.update_layout(title="flchain (age, sex): MRE against the non-private fit", xaxis_title="epsilon",
                      yaxis_title="mean relative error", xaxis_type="log", yaxis_type="log", template="plotly_white")
    fig.write_html(out_dir / "regression_flchain.html", include_plotlyjs="cdn")
    summary = {"data": "flchain", "covariates": ["age", "sex"], "n": pp.n, "rows": int(pp.y.size),
               "horizon": HORIZON, "intervals": 20, "knots": 5, "discrete_time": fit.coefficients,
               "cox": cox.coefficients, "relative_error_to_cox": re, "timing_ratio_pp_over_cox": ratio,
               "seconds_pp": statistics.median(t_pp), "seconds_cox": statistics.median(t_cox),
               "lambda": args.lam, "mre": pert + chains, "lambda_tradeoff_eps1": lam_rows.to_dict("records")}
    (out_dir / "regression_flchain.json").write_text(json.dumps(summary, indent=2, default=str))
    print(f"\nSaved {out_dir / 'regression_flchain.html'} and {out_dir / 'regression_flchain.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
