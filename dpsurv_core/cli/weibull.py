"""``weibull``: Weibull shape and scale, non-private (mle) or private (lsp-tll, laplace, saa); docs/mechanisms.md"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from dpsurv_core.cli.common import (
    add_data_options,
    add_release_options,
    check,
    cohort_from_args,
    dataset_fingerprint,
    needs_fingerprint,
    positive_float,
    positive_int,
    public_from_args,
    reproduce_command,
    run_plan,
)
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.release import Plan
from dpsurv_core.weibull.inference import (
    WALD_METHOD,
    censoring_disclosure,
    censoring_share,
    check_share,
    release_record,
    wald_intervals,
    weibull_intervals,
)
from dpsurv_core.weibull.mechanisms import BLOCK_SIZE, WeibullEstimates
from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS, survival_curve

NAME = "weibull"
HELP = "Weibull shape and scale: non-private MLE, LSP + TLL, Laplace or sample-and-aggregate"
CURVE_POINTS = 21
MAX_INTERVAL_TRIALS = 3  # noise-aware intervals are simulated (about a second each): for the first trials only


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=False)
    add_release_options(p, catalogue.ids(catalogue.WEIBULL, "weibull"))
    g = p.add_argument_group("Weibull public parameters")
    g.add_argument("--omega", type=positive_float, default=OMEGA, help="times are clipped below at e^-omega (default 6)")
    g.add_argument("--gamma", type=positive_float, default=GAMMA, help="upper bound of shape and scale (default 10)")
    g.add_argument("--rungs", type=positive_int, default=RUNGS, metavar="K", help="rungs of the LSP ladder (default 500)")
    g.add_argument("--blocks", type=positive_int, metavar="M",
                   help="saa: number of blocks (default: records / block size, disclosed)")
    g.add_argument("--block-size", type=positive_int, default=BLOCK_SIZE, help="saa: records per block (default 500)")
    g.add_argument("--censoring", type=float, default=None, metavar="SHARE",
                   help="public share of subjects censored (0 to 1) used to simulate the noise-aware intervals "
                        "(default: read off the data, rounded to 5%%, disclosed)")


def run(args: argparse.Namespace) -> dict:
    cohort = cohort_from_args(args)
    public = public_from_args(args, cohort)
    check(not catalogue.get(catalogue.WEIBULL, args.mechanism).private or args.epsilon > 0, "--epsilon must be positive.")
    entry = catalogue.get(catalogue.WEIBULL, args.mechanism)
    mech = entry.build(args.epsilon, horizon=public.horizon, omega=args.omega, gamma=args.gamma, rungs=args.rungs,
                       rows_per_subject=cohort.rows_per_subject, blocks=args.blocks, block_size=args.block_size)
    sample = mech.prepare(cohort)
    share = censoring_share(sample) if args.censoring is None else check_share(args.censoring)
    extra = [censoring_disclosure(share)] if entry.private and args.censoring is None else []
    kept: dict[int, Any] = {}  # the record's intervals of the release (trial 0), reused below

    def record(est: WeibullEstimates) -> dict[str, Any]:
        kept[id(est)] = weibull_intervals(mech, est, cohort.n_subjects, share, trial=0)
        return release_record(est, kept[id(est)].to_dict())

    plan = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
                lambda noise, trials: mech.release_many(sample, noise if entry.private else None, trials),
                record, [d for d in public.disclosures() if d.parameter == "horizon"]
                + list(mech.disclosures(sample)) + extra, reproduce_command(args), analysis="Weibull parameters")
    est, fields = run_plan(args, plan)
    cost = mech.cost
    times = np.linspace(0.0, public.horizon, CURVE_POINTS)
    notes = list(est.notes)
    notes.append("Times were normalised as t / horizon, clipped to [e^-omega, 1]: follow-up ends at the horizon (a time "
                 "beyond it counts as censored at the horizon) and times near 0 count as e^-omega.")
    if fields.get("simulation"):
        notes.append(f"{args.repeat} simulated release(s) with seeded noise: for study, not for publication; each "
                     f"would cost epsilon {cost.epsilon:g}.")
    inference: dict = {}
    if plan.private:
        infs = [kept[id(est)] if i == 0 and id(est) in kept else weibull_intervals(mech, est, cohort.n_subjects, share,
                                                                                     trial=i)
                for i in range(min(est.trials, MAX_INTERVAL_TRIALS))]
        if est.trials > MAX_INTERVAL_TRIALS:
            notes.append(f"Noise-aware intervals are given for the first {MAX_INTERVAL_TRIALS} trials only (each is a "
                         "simulation of its own).")
        inference = {"interval_includes_noise": True, "interval_method": infs[0].method, "censoring_share": share,
                     "intervals": [{"trial": i, **inf.to_dict()} for i, inf in enumerate(infs)],
                     "warnings": list(dict.fromkeys(w for inf in infs for w in inf.warnings))}
    else:  # no noise: the fit's Wald intervals (sampling error only)
        walds = [wald_intervals(sample, float(est.shape[i]), float(est.scale_normalised[i]), public.horizon)
                 for i in range(est.trials)]
        inference = {"interval_includes_noise": False, "warnings": [],
                     "interval_method": WALD_METHOD if all(walds) else
                     "no interval: the fit sits on a bound of (0, gamma], where the likelihood gives no information",
                     "intervals": [{"trial": i, **w.to_dict()} for i, w in enumerate(walds) if w is not None]}
    return fields | inference | {
        "command": NAME,
        "data": cohort.name,
        "n": cohort.n_subjects,
        "mechanism": mech.name,
        "private": bool(mech.private and cost.private),
        "epsilon_spent": cost.epsilon if mech.private else None,
        "protects": cost.protects,
        "neighbouring": cost.neighbouring if mech.private else None,
        "guarantee": cost.guarantee if mech.private else None,
        "privacy": cost.sentence() if mech.private else "not differentially private",
        "horizon": public.horizon,
        "horizon_from_data": public.horizon_from_data,
        "time_unit": cohort.time_unit,
        "parameters": mech.parameters(),
        "disclosures": [d.to_dict() for d in public.disclosures() if d.parameter == "horizon"]
        + [d.to_dict() for d in mech.disclosures(sample)] + [d.to_dict() for d in extra],
        "noise": ("none" if not plan.private else f"simulation: numpy Generator, seed {args.seed}" if fields["simulation"]
                  else entry.noise),
        "estimates": est.records(),
        "curve": {"time": times, "survival": survival_curve(times, est.shape, est.scale).reshape(est.trials, -1)},
        "notes": notes,
    }
