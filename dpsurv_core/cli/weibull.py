"""``weibull``: Weibull shape and scale, non-private (mle) or private (lsp-tll, laplace, saa); spec section 4."""

from __future__ import annotations

import argparse
import math

import numpy as np

from dpsurv_core.cli.common import (
    add_data_options,
    add_release_options,
    check,
    cohort_from_args,
    noise_from_args,
    positive_float,
    positive_int,
    public_from_args,
)
from dpsurv_core.weibull.mechanisms import BLOCK_SIZE, MECHANISMS, make_mechanism
from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS, survival_curve

NAME = "weibull"
HELP = "Weibull shape and scale: non-private MLE, LSP + TLL, Laplace or sample-and-aggregate"
CURVE_POINTS = 21


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=False)
    add_release_options(p, list(MECHANISMS))
    g = p.add_argument_group("Weibull public parameters")
    g.add_argument("--omega", type=positive_float, default=OMEGA, help="times are clipped below at e^-omega (default 6)")
    g.add_argument("--gamma", type=positive_float, default=GAMMA, help="upper bound of shape and scale (default 10)")
    g.add_argument("--rungs", type=positive_int, default=RUNGS, metavar="K", help="rungs of the LSP ladder (default 500)")
    g.add_argument("--blocks", type=positive_int, metavar="M",
                   help="saa: number of blocks (default: records / block size, disclosed)")
    g.add_argument("--block-size", type=positive_int, default=BLOCK_SIZE, help="saa: records per block (default 500)")


def run(args: argparse.Namespace) -> dict:
    cohort = cohort_from_args(args)
    public = public_from_args(args, cohort)
    check(args.mechanism == "mle" or args.epsilon > 0, "--epsilon must be positive.")
    mech = make_mechanism(args.mechanism, args.epsilon, public.horizon, args.omega, args.gamma, args.rungs,
                          cohort.rows_per_subject, args.blocks, args.block_size)
    sample = mech.prepare(cohort)
    noise = None if args.mechanism == "mle" else noise_from_args(args)
    est = mech.release_many(sample, noise, args.repeat)
    cost = mech.cost
    times = np.linspace(0.0, public.horizon, CURVE_POINTS)
    notes = list(est.notes)
    notes.append("Times were normalised as t / horizon, clipped to [e^-omega, 1]: times beyond the horizon count as "
                 "the horizon (their events are kept) and times near 0 as e^-omega.")
    if noise is not None and not noise.is_release:
        notes.append(f"{args.repeat} simulated release(s) with seeded noise: for study, not for publication; each "
                     f"would cost epsilon {cost.epsilon:g}.")
    return {
        "command": NAME,
        "data": cohort.name,
        "n": cohort.n_subjects,
        "mechanism": mech.name,
        "private": mech.private,
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
        + [d.to_dict() for d in mech.disclosures(sample)],
        "noise": "none" if noise is None or math.isinf(args.epsilon) else noise.describe(),
        "estimates": est.records(),
        "curve": {"time": times, "survival": survival_curve(times, est.shape, est.scale).reshape(est.trials, -1)},
        "notes": notes,
    }
