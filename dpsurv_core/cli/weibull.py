"""``weibull``: Weibull shape and scale, non-private (mle) or private (lsp-tll, laplace, saa); docs/mechanisms.md

A release publishes three parts (:mod:`dpsurv_core.publication`): the noisy estimates, the declared public inputs
(the horizon, the number of subjects ``--n-public`` and the censoring share ``--censoring`` that size the simulated
cohorts of the noise-aware intervals, the mechanism's settings) and what the reader
(:mod:`dpsurv_core.weibull.readout`) computes from those two alone: the intervals, their warnings and the fitted
curves. A value not declared would be read off the data: such a release is refused unless accepted with
``--accept-disclosure NAME`` (and is then not DP as run). The printed intervals and warnings of a release are the
reader's; exact values about the data (the cohort's size, the censoring share read off it) are kept apart under
``confidential``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

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
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.release import Plan
from dpsurv_core.publication import derive
from dpsurv_core.weibull import readout
from dpsurv_core.weibull.inference import (
    WALD_METHOD,
    censoring_disclosure,
    censoring_share,
    check_share,
    n_disclosure,
    wald_intervals,
)
from dpsurv_core.weibull.mechanisms import BLOCK_SIZE, WeibullEstimates, WeibullMechanism
from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS, WeibullSample
from dpsurv_core.weibull.readout import CURVE_POINTS, MAX_INTERVAL_TRIALS  # noqa: F401 (re-exported)

NAME = "weibull"
HELP = "Weibull shape and scale: non-private MLE (R's survreg, or clipped), LSP + TLL, Laplace or sample-and-aggregate"
CONFIDENTIAL_NOTE = "exact values for the data holder's eyes only: not part of the release"
HORIZON_NOTE = ("Times were normalised as t / horizon, clipped to [e^-omega, 1]: follow-up ends at the horizon (a time "
                "beyond it counts as censored at the horizon) and times near 0 count as e^-omega.")
MLE_NOTE = ("The maximum-likelihood fit of R's survreg (shape = 1 / survreg's scale, scale = exp(intercept)) on the times "
            "as they are: follow-up ends at the horizon (a time beyond it counts as censored at the horizon), no time "
            "is clipped. The private mechanisms estimate the clipped MLE instead (--mechanism clipped-mle).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=False)
    add_release_options(p, catalogue.ids(catalogue.WEIBULL, "weibull"))
    g = p.add_argument_group("Weibull public parameters")
    g.add_argument("--omega", type=positive_float, default=OMEGA,
                   help="times are clipped below at e^-omega (default 6; not by --mechanism mle)")
    g.add_argument("--gamma", type=positive_float, default=GAMMA, help="upper bound of shape and scale (default 10)")
    g.add_argument("--rungs", type=positive_int, default=RUNGS, metavar="K", help="rungs of the LSP ladder (default 500)")
    g.add_argument("--blocks", type=positive_int, metavar="M",
                   help="saa: number of blocks (default: records / block size, read off the data: a release then "
                        "needs --accept-disclosure blocks)")
    g.add_argument("--block-size", type=positive_int, default=BLOCK_SIZE, help="saa: records per block (default 500)")
    g.add_argument("--n-public", type=positive_int, default=None, metavar="N",
                   help="declared number of subjects (from the study design) whose cohorts the noise-aware intervals "
                        "simulate (default: a bundled data set's published size; otherwise counted in the data, and a "
                        "release then needs --accept-disclosure n)")
    g.add_argument("--censoring", type=float, default=None, metavar="SHARE",
                   help="declared share of subjects censored (0 to 1) used to simulate the noise-aware intervals "
                        "(default: read off the data, rounded to 5%%: a release then needs --accept-disclosure "
                        "censoring)")


@dataclass
class WeibullRun:
    """One ``weibull`` plan with what it was built from: the cohort and its normalised sample (for the data holder's
    eyes), the public parameters, the mechanism, and the values the intervals simulate (``n``, ``share``) with where
    each came from."""

    entry: Entry
    mechanism: WeibullMechanism
    cohort: Cohort
    sample: WeibullSample
    public: PublicParameters
    n: int
    share: float
    n_from_data: bool
    share_from_data: bool
    disclosures: list[Disclosure]
    plan: Plan = field(init=False)

    def public_inputs(self) -> dict[str, Any]:
        """The record's declared values (:func:`dpsurv_core.weibull.readout.public_inputs`)."""
        mech: Any = self.mechanism  # n_blocks: sample-and-aggregate's only
        blocks_from_data = hasattr(mech, "n_blocks") and getattr(mech, "blocks", None) is None
        blocks = mech.n_blocks(self.sample) if blocks_from_data else getattr(mech, "blocks", None)
        return readout.public_inputs(mech, self.n, self.share, self.cohort.time_unit, blocks=blocks,
                                     horizon_from_data=self.public.horizon_from_data, n_from_data=self.n_from_data,
                                     censoring_from_data=self.share_from_data, blocks_from_data=blocks_from_data)

    def publish(self, est: WeibullEstimates) -> tuple[dict[str, Any], dict[str, Any]]:
        """The plan's ``publish``: (released, public inputs) of a result. Nothing counted in the data goes in unless
        a disclosure names it (and the release protocol refuses it unless a person accepted it)."""
        return readout.released_of(est), self.public_inputs()


def _declared_n(args: argparse.Namespace) -> int | None:
    """``--n-public``, else a bundled data set's published size (documented with its R package: public), else None."""
    if getattr(args, "n_public", None) is not None:
        return int(args.n_public)
    if args.data in datasets.DATASETS:
        return datasets.published_size(args.data)
    return None


def build(args: argparse.Namespace) -> WeibullRun:
    """The plan of this command line: the mechanism, the values the intervals simulate and every value read off the
    data as a disclosure (the release protocol refuses those unless accepted)."""
    cohort = cohort_from_args(args)
    public = public_from_args(args, cohort)
    entry = catalogue.get(catalogue.WEIBULL, args.mechanism)
    check(not entry.private or args.epsilon > 0, "--epsilon must be positive.")
    n_declared = _declared_n(args)
    mech = entry.build(args.epsilon, horizon=public.horizon, omega=args.omega, gamma=args.gamma, rungs=args.rungs,
                       rows_per_subject=cohort.rows_per_subject, blocks=args.blocks, block_size=args.block_size,
                       n_public=n_declared)
    assert isinstance(mech, WeibullMechanism)  # the Weibull family's factory makes one
    sample = mech.prepare(cohort)
    n = cohort.n_subjects if n_declared is None else n_declared
    share = censoring_share(sample) if args.censoring is None else check_share(args.censoring)
    noisy = entry.private and mech.cost.private  # intervals simulated from n and the share (none without noise)
    extra = []
    if noisy and n_declared is None:
        extra.append(n_disclosure(cohort.n_subjects))
    if noisy and args.censoring is None:
        extra.append(censoring_disclosure(share))
    disclosures = [*public.disclosures(("horizon",)), *mech.disclosures(sample), *extra]
    blocks = mech.n_blocks(sample) if hasattr(mech, "n_blocks") else 0
    if n_declared is not None and blocks > sample.n // 2:  # checked against the declared n: the holder alone is told
        args._data_warnings = [*getattr(args, "_data_warnings", []),
                               f"{blocks} blocks for the {sample.n} records read leave fewer than two records in some "
                               f"blocks (their fits sit at the bound gamma): the declared number of subjects "
                               f"({n_declared}) allows them, but check it against the study."]
    run_ = WeibullRun(entry, mech, cohort, sample, public, n, share, n_declared is None, args.censoring is None,
                      disclosures)
    run_.plan = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
                     # None only for the non-private MLE, whose compute_many takes no noise (the base class types
                     # the private mechanisms' signature)
                     lambda noise, trials: mech.compute_many(sample, noise if entry.private else None,  # type: ignore[arg-type]
                                                             trials),
                     disclosures, reproduce_command(args), analysis="Weibull parameters", kind=readout.KIND,
                     publish=run_.publish)
    return run_


def run(args: argparse.Namespace) -> dict:
    wb = build(args)
    plan, mech, cohort, sample, public = wb.plan, wb.mechanism, wb.cohort, wb.sample, wb.public
    est, fields = run_plan(args, plan)
    cost = mech.cost
    common = {
        "command": NAME,
        "data": cohort.name,
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
    }
    if "publishable" in fields:  # a release: what people read is the reader's, computed from the record alone
        pub = fields["publishable"]
        derived = pub["derived"]
        as_read = [d.to_dict() for d in wb.disclosures]
        return fields | common | {
            "interval_includes_noise": derived["interval_includes_noise"],
            "interval_method": derived["interval_method"], "censoring_share": pub["public_inputs"]["censoring"],
            "n_public": pub["public_inputs"]["n"], "intervals": derived["intervals"], "warnings": derived["warnings"],
            "disclosures": list(pub["disclosures"]), "noise": plan.entry.noise,
            "estimates": pub["released"]["estimates"], "curve": derived["curve"],
            "notes": [HORIZON_NOTE, *derived["notes"]],
            # exact values about the data: moved to ``confidential`` (dpsurv_core.cli.split_publishable)
            "n": cohort.n_subjects, "censoring_read": censoring_share(sample),
            "confidential": {"note": CONFIDENTIAL_NOTE, "n": cohort.n_subjects, "records": sample.n,
                             "events": sample.n_events, "censoring_read": censoring_share(sample),
                             "disclosures_as_read": as_read, "mechanism_notes": list(est.notes)},
        }
    notes = [*est.notes, MLE_NOTE if mech.name == "mle" else HORIZON_NOTE]
    if fields.get("simulation"):
        notes.append(f"{args.repeat} simulated release(s) with seeded noise: for study, not for publication; each "
                     f"would cost epsilon {cost.epsilon:g}.")
        released, inputs = wb.publish(est)  # the reader a release would use, on the simulated draws
        derived = derive(readout.KIND, released, inputs)
        inference = {"interval_includes_noise": True, "interval_method": derived["interval_method"],
                     "censoring_share": inputs["censoring"], "n_public": inputs["n"],
                     "intervals": derived["intervals"], "warnings": derived["warnings"], "curve": derived["curve"]}
        notes += derived["notes"]
        noise = f"simulation: numpy Generator, seed {args.seed}"
    else:  # no noise: the fit's Wald intervals (sampling error only)
        walds = [wald_intervals(sample, float(est.shape[i]), float(est.scale_normalised[i]), public.horizon)
                 for i in range(est.trials)]
        inference = {"interval_includes_noise": False, "warnings": [],
                     "interval_method": WALD_METHOD if all(walds) else
                     "no interval: the fit sits on a bound of (0, gamma], where the likelihood gives no information",
                     "intervals": [{"trial": i, **w.to_dict()} for i, w in enumerate(walds) if w is not None],
                     "curve": readout.curve(est.records(), public.horizon)}
        noise = "none"
    return fields | common | inference | {
        "n": cohort.n_subjects,
        "disclosures": [d.to_dict() for d in wb.disclosures],
        "noise": noise,
        "estimates": est.records(),
        "notes": notes,
    }
