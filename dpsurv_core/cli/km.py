"""``km``: private survival curves per group (Kaplan-Meier with bands, Nelson-Aalen, cumulative incidence).

One JSON entry per trial and group on the public grid's points. Mechanisms (spec sections 1-3):
nonprivate, laplace-counts, time-indexed, rrr (and adaptive-km when present). ``--repeat R
--seed S`` runs R releases through the seeded simulation path in one vectorised call.
"""

from __future__ import annotations

import argparse
import copy
from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.cli.common import (
    add_data_options,
    add_release_options,
    cohort_from_args,
    dataset_fingerprint,
    epsilon_value,
    needs_fingerprint,
    non_negative,
    positive_int,
    public_from_args,
    reproduce_command,
    run_plan,
    unit_float,
)
from dpsurv_core.curves.kaplan_meier import SurvivalCurves
from dpsurv_core.curves.release import CurveRelease, context, event_times_grid
from dpsurv_core.curves.time_indexed import EDGE_MODES
from dpsurv_core.data import grouping
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.release import Plan

NAME = "km"
HELP = "private survival curves per group: Kaplan-Meier with 95% bands, cumulative hazard, cumulative incidence"
ESTIMANDS = ("survival", "cumulative-hazard", "cumulative-incidence")
GROUP_HELP = "group column, or COL:median (cut at the data's median, disclosed) or COL:VALUE (public cut)"




MECHANISM_HELP = ("nonprivate: exact, not DP; laplace-counts: noisy counts on public bins (paper 003); "
                  "time-indexed: noise on the curve (paper 004); rrr: randomized response on the group label "
                  "(paper 002), protects the group label only; adaptive-km: when installed (default laplace-counts)")


def set_group_help(p: argparse.ArgumentParser, required: bool = False) -> None:
    for action in p._actions:
        if action.dest == "group":
            action.help = GROUP_HELP
            action.required = required
        if action.dest == "mechanism":
            action.help = MECHANISM_HELP


def add_mechanism_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("time-indexed (paper 004)")
    g.add_argument("--alpha", type=non_negative, default=0.5, help="noise decay: step i has scale 1/(e(1 + alpha i)) "
                   "(default 0.5)")
    g.add_argument("--tau-start", type=unit_float, default=1.0, help="clipping threshold at the start (default 1.0)")
    g.add_argument("--tau-end", type=unit_float, default=0.6, help="clipping threshold at the end (default 0.6)")
    g.add_argument("--window", type=positive_int, default=5, help="rolling-mean window in grid points (default 5)")
    g.add_argument("--edge-mode", choices=EDGE_MODES, default="mean",
                   help="rolling mean at the edges: mean of the values in the window (default) or as published "
                        "(divide by the window even at the edges)")
    g.add_argument("--base-epsilon", type=epsilon_value, metavar="E",
                   help="as published: the paper's per-step base epsilon e (replaces --epsilon; the ledger charges "
                        "the true total e n (1 + alpha (n + 1) / 2))")


def load(args: argparse.Namespace, competing: bool = False) -> tuple[Cohort, PublicParameters, list[Disclosure]]:
    """Cohort (with a numeric split if --group is COL:median / COL:VALUE) and public parameters."""
    split = grouping.parse(getattr(args, "group", None))
    extra: list[Disclosure] = []
    if split is not None:
        inner = copy.copy(args)
        inner.group, inner.covariates = None, split.column
        cohort = cohort_from_args(inner, competing)
        cohort, cats, extra = grouping.split_cohort(cohort, split)
    else:
        cohort = cohort_from_args(args, competing)
    if competing and cohort.event_type is None:
        raise ParameterError(f"Cumulative incidence needs competing events, which {args.data!r} does not have: use "
                             "pbc (transplant vs death) or transplant (ltx vs death).")
    public = public_from_args(args, cohort)
    if competing and getattr(args, "grid", None) == "event-times":
        public = replace(public, grid=event_times_grid(cohort, competing=True))
    if split is not None:
        public = replace(public, group_categories=cats, categories_from_data=False)
    return cohort, public, extra


TIME_INDEXED_OPTIONS = ("alpha", "tau_start", "tau_end", "window", "edge_mode", "base_epsilon")


def build_mechanism(name: str, args: argparse.Namespace, cohort: Cohort, public: PublicParameters):
    """The catalogue entry and mechanism object for ``name`` with the command-line parameters."""
    entry = catalogue.get(catalogue.CURVES, name)
    options = {k: getattr(args, k) for k in TIME_INDEXED_OPTIONS if getattr(args, k, None) is not None}
    return entry, entry.build(args.epsilon, **context(cohort, public), **options)


def released_numbers(rel: CurveRelease) -> dict[str, Any]:
    """What a curve release publishes, kept with its ledger record: the noisy counts where the mechanism releases
    counts, else the curves (everything else is post-processing of these)."""
    out: dict[str, Any] = {"groups": list(rel.curves.groups), "time": rel.curves.time.tolist(),
                           "survival": rel.curves.survival[0].tolist()}
    if rel.counts is not None:
        c = rel.counts
        out.update({"edges": c.grid.edges.tolist(), "at_risk": c.n[0].tolist(), "events": c.events[0].tolist(),
                    "censored": c.censored[0].tolist()})
    return out


def plan(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves"
         ) -> tuple[Plan, Cohort, PublicParameters, list[Disclosure]]:
    """The release plan of --mechanism on --data: the catalogue builds the mechanism, which knows its cost."""
    cohort, public, extra = load(args, competing)
    entry, mech = build_mechanism(args.mechanism, args, cohort, public)

    def compute(noise, trials: int) -> CurveRelease:
        rel = mech.release(cohort, public, noise, trials if entry.private else 1, competing=competing)
        rel.disclosures = [*extra, *rel.disclosures]
        return rel

    p = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
             compute, released_numbers, [*extra, *public.disclosures()], reproduce_command(args), analysis=analysis)
    return p, cohort, public, extra


def release(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves"
            ) -> tuple[CurveRelease, Cohort, PublicParameters, list[Disclosure], dict[str, Any]]:
    """Run the plan as the options say (simulation, non-private, or a release through the protocol)."""
    p, cohort, public, extra = plan(args, competing, analysis)
    rel, fields = run_plan(args, p)
    return rel, cohort, public, extra, fields


def header(rel: CurveRelease, cohort: Cohort, public: PublicParameters, extra: list[Disclosure]) -> dict[str, Any]:
    disclosures = [d.to_dict() for d in [*extra, *rel.disclosures, *public.disclosures()]]
    seen, unique = set(), []
    for d in disclosures:
        key = (d["parameter"], d["message"])
        if key not in seen:
            seen.add(key)
            unique.append(d)
    return {"mechanism": rel.mechanism, "epsilon_spent": rel.cost.epsilon, "delta": rel.cost.delta,
            "protects": rel.cost.protects, "neighbouring": rel.cost.neighbouring, "guarantee": rel.cost.guarantee,
            "cost": rel.cost.sentence(), "parameters": rel.parameters, "disclosures": unique, "noise": rel.noise,
            "notes": rel.notes, "dataset": cohort.name, "time_unit": cohort.time_unit,
            "n_subjects": cohort.n_subjects, "rows_per_subject": cohort.rows_per_subject,
            "groups": list(rel.curves.groups), "grid": {"kind": public.grid.kind, "from_data": public.grid.from_data,
                                                         "bins": public.grid.bins, "points": public.grid.points},
            "trials": rel.trials}


def _nullable(a: np.ndarray) -> list | None:
    """Nested lists, or None when the mechanism has no such quantity (all NaN)."""
    return None if np.all(np.isnan(a)) else a.tolist()


def _pick(nested: list | None, t: int, g: int) -> list | None:
    return None if nested is None else nested[t][g]


def curve_entries(curves: SurvivalCurves, estimand: str, **flags: Any) -> list[dict[str, Any]]:
    """One dict per trial and group (arrays are (trials, G, J)); quantities the mechanism does not
    release (bands, at-risk and event counts of time-indexed) are null."""
    s = curves.survival.tolist()
    lo, up = _nullable(curves.lower), _nullable(curves.upper)
    lol, upl = _nullable(curves.lower_linear), _nullable(curves.upper_linear)
    risk, ev = _nullable(curves.at_risk), _nullable(curves.events)
    med, med_lo, med_up = curves.median()
    no_band = lo is None
    hazard = curves.cumulative_hazard.tolist() if estimand == "cumulative-hazard" else None
    cif = curves.cumulative_incidence.tolist() if estimand == "cumulative-incidence" else None
    time = curves.time.tolist()
    out = []
    trials, groups = curves.survival.shape[:2]
    for t in range(trials):
        for g in range(groups):
            e = {"trial": t, "group": curves.groups[g], "time": time, "survival": s[t][g], "lower": _pick(lo, t, g),
                 "upper": _pick(up, t, g), "lower_linear": _pick(lol, t, g), "upper_linear": _pick(upl, t, g),
                 "at_risk": _pick(risk, t, g), "events": _pick(ev, t, g),
                 "median": float(med[t, g]), "median_lower": None if no_band else float(med_lo[t, g]),
                 "median_upper": None if no_band else float(med_up[t, g]), **flags}
            if hazard is not None:
                e["cumulative_hazard"] = hazard[t][g]
            if cif is not None:
                e["cumulative_incidence"] = {name: cif[t][g][k] for k, name in enumerate(curves.event_types)}
            out.append(e)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=True)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "km"), default=catalogue.default_id(catalogue.CURVES), grid=True, horizon=True)
    set_group_help(p)
    p.add_argument("--estimand", choices=ESTIMANDS, default="survival",
                   help="what to report besides the survival curve (cumulative incidence needs competing events: "
                        "pbc, transplant)")
    add_mechanism_options(p)


def run(args: argparse.Namespace) -> dict[str, Any]:
    competing = args.estimand == "cumulative-incidence"
    rel, cohort, public, extra, fields = release(args, competing)
    out = header(rel, cohort, public, extra)
    out.update(fields)
    out["estimand"] = args.estimand
    out["median_note"] = "median: first grid point where the curve is <= 0.5 (null: not reached); its CI from the log-log band"
    if "debiased_curves" in rel.extra:
        out["curves"] = (curve_entries(rel.curves, args.estimand, debiased=False)
                         + curve_entries(rel.extra["debiased_curves"], args.estimand, debiased=True))
    else:
        out["curves"] = curve_entries(rel.curves, args.estimand)
    return out
