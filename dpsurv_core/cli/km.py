"""``km``: private survival curves per group (Kaplan-Meier with bands, Nelson-Aalen, cumulative incidence).

One JSON entry per trial and group on the public grid's points. Mechanisms (docs/mechanisms.md):
nonprivate, laplace-counts, time-indexed, rrr (and adaptive-km when present). ``--repeat R
--seed S`` runs R releases through the seeded simulation path in one vectorised call.

Confidence intervals follow R survival's ``conf.type`` (``--conf-type``, default ``log``, R's survfit
default, so that the numbers with noise off match R's print/summary out of the box; dpsurv used
log-log, lifelines' default, before): every curve's ``lower``/``upper``, the median's and quartiles'
limits and the landmarks use that type; ``lower_linear``/``upper_linear`` stay the plain band.
The median and quartiles follow R's quantile.survfit (midpoint of an interval where S equals the
quantile exactly). The band is the sampling (Greenwood) band only, except for adaptive-km, whose
bands add the noise's variance (``interval_includes_noise``).
"""

from __future__ import annotations

import argparse
import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core.cli import disclosure_options
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
from dpsurv_core.curves.kaplan_meier import CONF_TYPES, SurvivalCurves, confidence_limits, cumhaz_limits, quantile_r
from dpsurv_core.curves.release import (
    CurveRelease,
    NonPrivate,
    context,
    event_times_grid,
    risk_counts,
    with_follow_up_end,
)
from dpsurv_core.curves.summary import at_risk_at, at_risk_exact, parse_times, risk_table, table_times
from dpsurv_core.curves.time_indexed import EDGE_MODES, parse_shares, parse_sizes
from dpsurv_core.curves.uncertainty import (
    RULES,
    ClampingBias,
    carry_upper,
    curve_warnings,
    incidence_band,
    laplace_clamping,
    monotone_band,
    quantile_limits,
    rmst_interval,
    rrr_clamping,
    widen_between,
)
from dpsurv_core.data import datasets, grouping
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.labels import ValueLabels, code_key
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import PrivacyCost
from dpsurv_core.privacy.release import Plan

NAME = "km"
HELP = "private survival curves per group: Kaplan-Meier with 95% bands, cumulative hazard, cumulative incidence"
ESTIMANDS = ("survival", "cumulative-hazard", "cumulative-incidence")
GROUP_HELP = "group column, or COL:median (cut at the data's median, disclosed) or COL:VALUE (public cut)"




def mechanism_help(choices: Sequence[str]) -> str:
    """The --mechanism help of a command: each mechanism it offers, by the catalogue's name (default laplace-counts)."""
    curves = set(catalogue.ids(catalogue.CURVES))
    names = "; ".join(f"{i}: {catalogue.get(catalogue.CURVES, i).name}" for i in choices if i in curves)
    return names + f" (default {catalogue.default_id(catalogue.CURVES)})"


def set_group_help(p: argparse.ArgumentParser, required: bool = False) -> None:
    for action in p._actions:
        if action.dest == "group":
            action.help = GROUP_HELP
            action.required = required
        if action.dest == "mechanism" and action.choices:
            action.help = mechanism_help(list(action.choices)).replace("%", "%%")


def add_mechanism_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("time-indexed (Veeraragavan et al. 2024)")
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
    g.add_argument("--sample-size", type=declared_sizes, metavar="N[,N...]",
                   help="declared group size(s), one per group in order: a public number (for example from the study "
                        "design), never read off the data; with it the band carries the sampling error as well as "
                        "the noise")
    g.add_argument("--censoring", type=declared_shares, metavar="Q[,Q...]",
                   help="declared censoring share(s) with --sample-size, one per group in order or one for all (for "
                        "example 0.3 or 30%%): a public number (the study design's expected share), never read off "
                        "the data; the band's simulated cohorts are censored at it, without it they are uncensored "
                        "and the band is too narrow late in a censored study")
    disclosure_options.add_arguments(p)


LABELS_HELP = ("value labels as JSON (the file the Data page saves with 'Labels as JSON': {\"values\": {COLUMN: "
               "{CODE: LABEL}}}); they name the group codes in group_label (and, for regression, the categories and "
               "their reference level), over a bundled data set's own labels")
MAX_LABELS_BYTES = 1_000_000


def add_labels_option(p: argparse.ArgumentParser) -> None:
    """``--labels FILE.json``: the value labels that name the group codes (``group_label`` in the JSON)."""
    p.add_argument("--labels", metavar="FILE.json", default=None, help=LABELS_HELP)


def value_labels(args: argparse.Namespace) -> ValueLabels:
    """The labels of ``--data``'s values: a bundled data set's R documentation labels (:attr:`DatasetInfo.labels`),
    overridden by ``--labels FILE.json``; a file that cannot be read is one sentence (exit status 2)."""
    import json
    from pathlib import Path

    cached = getattr(args, "_value_labels", None)
    if cached is not None:  # read and checked once per command (main), before anything is released
        return cached
    data = getattr(args, "data", None)
    labels = datasets.info(data).labels if data in datasets.DATASETS else ValueLabels()
    path = getattr(args, "labels", None)
    if not path:
        return labels
    file = Path(path)
    if not file.is_file():
        raise DataError(f"--labels {path!r} is not a file: give the JSON file saved by the Data page's 'Labels as JSON'.")
    if file.stat().st_size > MAX_LABELS_BYTES:
        raise DataError(f"--labels {path!r} is larger than 1 MB: a labels file holds only codes and names; check it.")
    try:
        document = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DataError(f"--labels {path!r} is not JSON text: give the file saved by the Data page's 'Labels as "
                        "JSON'.") from None
    return labels.merged(ValueLabels.from_json(document))


def group_labels_of(args: argparse.Namespace, groups: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``{code: label}`` for the groups of the output: the labels of the ``--group`` column's codes (a numeric split,
    ``COL:median`` or ``COL:VALUE``, names its groups itself: they are kept as they are)."""
    spec = getattr(args, "group", None)
    column = None if spec is None or grouping.parse(spec) is not None else spec
    labels = value_labels(args) if column is not None else ValueLabels()
    return {str(g): labels.label(column, g) if column is not None else code_key(g) for g in groups}


def named_groups(obj: Any, names: dict[str, str] | None) -> Any:
    """``obj`` (curves or counts) with its groups called by ``names`` (code -> label), for sentences a reader can
    follow; the numbers are unchanged."""
    return obj if not names else replace(obj, groups=tuple(names.get(str(g), str(g)) for g in obj.groups))


def add_group_labels(out: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """Put ``group_label`` beside every ``group`` code of ``out``'s entries (curves, landmarks, rmst, the number at
    risk), ``group_a_label``/``group_b_label`` beside a test's groups, and the mapping as ``group_labels``. No existing
    field is changed."""
    def name(code: Any) -> Any:
        return names.get(str(code), code_key(code)) if code is not None else None

    out["group_labels"] = dict(names)
    risk = out.get("number_at_risk")
    entries = [*(risk["rows"] if isinstance(risk, dict) else [])]
    for key in ("curves", "landmarks", "rmst", "tests"):
        value = out.get(key)
        if isinstance(value, list):
            entries += [e for e in value if isinstance(e, dict)]
    for e in entries:
        if "group" in e:
            e["group_label"] = name(e["group"])
        for side in ("group_a", "group_b"):
            if side in e:
                e[f"{side}_label"] = name(e[side])
    return out


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
    if getattr(args, "grid", None) is None and getattr(args, "mechanism", None) == "nonprivate":
        # nothing is private, so no public grid is needed: R's curve at every event time (R's median and RMST)
        args.grid = "event-times"
    public = public_from_args(args, cohort)
    if competing and getattr(args, "grid", None) == "event-times":
        public = replace(public, grid=event_times_grid(cohort, competing=True))
    if split is not None:
        public = replace(public, group_categories=cats, categories_from_data=False)
    return cohort, public, extra


def _declared(parse: Callable[[str], tuple | None], what: str) -> Callable[[str], tuple]:
    """An argparse type reading comma-separated declared (public) values with ``parse``; blank is refused."""
    def read(text: str) -> tuple:
        try:
            values = parse(text)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
        if values is None:
            raise argparse.ArgumentTypeError(f"give at least one {what}")
        return values

    return read


# --sample-size: whole numbers of subjects; --censoring: censoring shares from 0 up to 1
declared_sizes = _declared(parse_sizes, "group size, for example 120 or 120,108")
declared_shares = _declared(parse_shares, "censoring share, for example 0.3 or 0.34,0.25")


TIME_INDEXED_OPTIONS = ("alpha", "tau_start", "tau_end", "window", "edge_mode", "base_epsilon", "sample_size",
                        "censoring")
MECHANISM_OPTIONS = TIME_INDEXED_OPTIONS + disclosure_options.OPTIONS


def build_mechanism(name: str, args: argparse.Namespace, cohort: Cohort, public: PublicParameters):
    """The catalogue entry and mechanism object for ``name`` with the command-line parameters."""
    entry = catalogue.get(catalogue.CURVES, name)
    options = {k: getattr(args, k) for k in MECHANISM_OPTIONS if getattr(args, k, None) is not None}
    return entry, entry.build(args.epsilon, **context(cohort, public), **options)


def readings(rel: CurveRelease, conf_type: str = "log", names: dict[str, str] | None = None, time_unit: str = "",
             more_warnings: Sequence[str] = (), landmarks: Sequence[float] | None = None, rmst: float | None = None,
             rmst_coarse: bool = False, exact_grid: bool | None = None, raw_labels_shown: bool = True
             ) -> dict[str, Any]:
    """How ``km`` reads a curve release, the same in its printout, its ledger record and its report: the
    ``conf_type`` band, whether it carries the noise and how it was made, the survival at the ``landmarks`` (at the
    time itself on an ``exact_grid``, the event-times grid), the RMST to ``rmst`` when asked, and the warnings
    (groups called by ``names``; ``more_warnings`` after them; rrr's reported-label curves are warned about where
    they are shown, ``raw_labels_shown``)."""
    if exact_grid is None:  # the public grid's kind, read off the released counts (time-indexed has none: pass it)
        exact_grid = rel.counts is not None and rel.counts.grid.kind == "event-times"
    coarse = not exact_grid and not no_noise(rel.cost.epsilon)  # as km reads its quantiles
    main = band_curves(rel)
    noisy = includes_noise(rel)
    lo, up = conf_bands(main, conf_type, noisy)
    # a band without a variance (time-indexed's inversion) is no conf.type: null, as its interval_method says
    applies = not (main.interval_method is not None and np.all(np.isnan(main.greenwood)))
    out: dict[str, Any] = {"conf_type": conf_type if applies else None, "interval_includes_noise": noisy,
                           "interval_method": interval_method(rel, conf_type)}
    exact = every_event_time(rel)
    if landmarks:
        out["landmarks"] = (landmark_entries(main, list(landmarks), conf_type, exact_grid, noisy) if exact is None
                            else landmark_entries(exact, list(landmarks), conf_type, True))
    if rmst is not None:
        out["rmst"] = rmst_entries(rmst_curves(rel), float(rmst), rmst_coarse)
    out["warnings"] = curve_warnings(named_groups(main, names), lo, up, rel.mechanism,
                                     list(landmarks) if landmarks else None, coarse, time_unit,
                                     private=not no_noise(rel.cost.epsilon),
                                     raw_label_curves=raw_labels_shown and "debiased_curves" in rel.extra,
                                     clamping=clamping_of(rel)) + list(more_warnings)
    return out


def reading_options(args: argparse.Namespace, rel: CurveRelease, cohort: Cohort, public: PublicParameters
                    ) -> dict[str, Any]:
    """The options of :func:`readings` as ``km``'s command line gives them."""
    landmarks, rmst = getattr(args, "landmarks", None), getattr(args, "rmst", None)
    names = group_labels_of(args, rel.curves.groups)
    return {"conf_type": getattr(args, "conf_type", "log"), "names": names, "time_unit": cohort.time_unit,
            "more_warnings": beyond_follow_up(public, landmarks or [], rmst, cohort.time_unit,
                                              follow_up_ends(rel, names)),
            "landmarks": landmarks, "rmst": rmst, "rmst_coarse": rmst_on_grid(rel, public),
            "exact_grid": public.grid.kind == "event-times"}


def released_numbers(rel: CurveRelease, conf_type: str = "log", names: dict[str, str] | None = None,
                     time_unit: str = "", more_warnings: Sequence[str] = (),
                     landmarks: Sequence[float] | None = None, rmst: float | None = None,
                     rmst_coarse: bool = False, exact_grid: bool | None = None) -> dict[str, Any]:
    """What a curve release publishes, kept with its ledger record: the noisy counts where the mechanism releases
    counts, else the curves (everything else is post-processing of these). Beside them, so that a report built from
    the record shows what ``km`` printed: the medians and quartiles with their intervals and :func:`readings` (the
    RMST's interval needs the release's bootstrap draws, which the record does not keep)."""
    out: dict[str, Any] = {"groups": list(rel.curves.groups), "time": rel.curves.time.tolist(),
                           "survival": rel.curves.survival[0].tolist()}
    if names:
        out["group_labels"] = [names.get(str(g), str(g)) for g in rel.curves.groups]
    if rel.counts is not None:
        c = rel.counts
        out.update({"edges": c.grid.edges.tolist(), "at_risk": c.n[0].tolist(), "events": c.events[0].tolist(),
                    "censored": c.censored[0].tolist()})
    main = band_curves(rel)
    noisy = includes_noise(rel)
    lo, up = conf_bands(main, conf_type, noisy)
    debiased = "debiased_curves" in rel.extra
    if not np.all(np.isnan(lo)):
        prefix = "debiased_" if debiased else ""
        if debiased:
            out["debiased_survival"] = main.survival[0].tolist()
        out.update({prefix + "lower": _none_where_nan(lo[0]), prefix + "upper": _none_where_nan(up[0])})
    if exact_grid is None:
        exact_grid = rel.counts is not None and rel.counts.grid.kind == "event-times"
    coarse = not exact_grid and not no_noise(rel.cost.epsilon)
    # NaN (not reached) and infinite limits as null, as km prints them (the record is strict JSON)
    if len(main.event_types) > 1:  # competing events: the curve, its medians and landmarks are event-free survival
        out["event_free"] = True
    out["medians"] = [e | {k: _finite_or_none(e[k]) for k in ("median", "median_lower", "median_upper")
                           if e[k] is not None}
                      for e in read_quantiles(main, quantile_curves(rel, main), conf_type, noisy, coarse)]
    return out | readings(rel, conf_type, names, time_unit, more_warnings, landmarks, rmst, rmst_coarse, exact_grid)


def plan(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves", min_groups: int = 1,
         tests: Callable[[CurveRelease, Any], dict[str, Any]] | None = None
         ) -> tuple[Plan, Cohort, PublicParameters, list[Disclosure]]:
    """The release plan of --mechanism on --data: the catalogue builds the mechanism, which knows its cost. A cohort
    with fewer than ``min_groups`` groups is refused here, before anything is released. ``tests(release,
    mechanism)``: more post-processed numbers for the ledger record (the log-rank tests)."""
    cohort, public, extra = load(args, competing)
    if min_groups > 1 and len(cohort.groups) < min_groups:
        raise ParameterError(f"A {analysis[:-1] if analysis.endswith('s') else analysis} needs at least {min_groups} "
                             "groups: choose a --group column with two or more values.")
    entry, mech = build_mechanism(args.mechanism, args, cohort, public)

    def compute(noise, trials: int) -> CurveRelease:
        rel = with_follow_up_end(mech.release(cohort, public, noise, trials if entry.private else 1,
                                              competing=competing), cohort, public)
        rel.disclosures = [*extra, *rel.disclosures]
        return rel

    def outputs(rel: CurveRelease) -> dict[str, Any]:
        out = released_numbers(rel, **reading_options(args, rel, cohort, public))
        return out | (tests(rel, mech) if tests is not None else {})

    p = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
             compute, outputs, [*extra, *public.disclosures()], reproduce_command(args), analysis=analysis)
    return p, cohort, public, extra


def release(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves", min_groups: int = 1,
            tests: Callable[[CurveRelease, Any], dict[str, Any]] | None = None
            ) -> tuple[CurveRelease, Cohort, PublicParameters, list[Disclosure], dict[str, Any]]:
    """Run the plan as the options say (simulation, non-private, or a release through the protocol)."""
    p, cohort, public, extra = plan(args, competing, analysis, min_groups, tests)
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
    out = {"mechanism": rel.mechanism, "epsilon_spent": rel.cost.epsilon, "delta": rel.cost.delta,
           "protects": rel.cost.protects, "neighbouring": rel.cost.neighbouring, "guarantee": rel.cost.guarantee,
           "cost": rel.cost.sentence(), "privacy": rel.cost.sentence(), "parameters": rel.parameters,
           "disclosures": unique, "noise": rel.noise,
            "notes": rel.notes, "dataset": cohort.name, "time_unit": cohort.time_unit,
            "n_subjects": cohort.n_subjects, "rows_per_subject": cohort.rows_per_subject,
           "groups": list(rel.curves.groups), "grid": {"kind": public.grid.kind, "from_data": public.grid.from_data,
                                                        "bins": public.grid.bins, "points": public.grid.points},
           "trials": rel.trials}
    if no_noise(rel.cost.epsilon):
        out.update(NO_NOISE_FIELDS)
        out["noise"] = "none" if rel.noise == "none" else "none (epsilon = inf: nothing is drawn)"
    return out


_NO_NOISE_COST = PrivacyCost(math.inf)  # the ledger's labels for epsilon = inf
NO_NOISE_FIELDS = {"protects": _NO_NOISE_COST.protects, "neighbouring": _NO_NOISE_COST.neighbouring,
                   "guarantee": _NO_NOISE_COST.guarantee, "cost": _NO_NOISE_COST.sentence()}


def no_noise(epsilon: float | None) -> bool:
    """True for the nonprivate mechanism and for any mechanism run with ``--epsilon inf``: nothing is protected.
    None is disclosure control (no epsilon, but the counts are altered): not "no noise"."""
    return epsilon is not None and not math.isfinite(epsilon)


def _nullable(a: np.ndarray) -> list | None:
    """Nested lists, or None when the mechanism has no such quantity (all NaN)."""
    return None if np.all(np.isnan(a)) else a.tolist()


def _pick(nested: list | None, t: int, g: int) -> list | None:
    return None if nested is None else nested[t][g]


NOISE_BAND_NOTE = "add the noise's variance"
QUANTILE_PROBS = (0.25, 0.5, 0.75)


def band_curves(rel: CurveRelease) -> SurvivalCurves:
    """The curves whose band the release stands behind: rrr's de-biased curves, else the curves."""
    return rel.extra.get("debiased_curves", rel.curves)


def clamping_of(rel: CurveRelease) -> ClampingBias | None:
    """What clamping negative released counts at 0 adds to each event and censoring cell of the first trial (which the
    warnings read) of the curves the band stands behind, for the sentence on its bias: laplace-counts (Laplace noise on
    every cell) and rrr's de-biased counts; None for the other mechanisms and without noise."""
    if no_noise(rel.cost.epsilon):
        return None
    if rel.mechanism == "laplace-counts" and rel.counts is not None and rel.parameters.get("scale"):
        # the first trial only: the warnings read it (a --repeat simulation need not de-clamp every trial)
        return laplace_clamping(rel.counts.events[:1], float(rel.parameters["scale"]),
                                rel.parameters.get("noise") == "discrete Laplace", rel.counts.censored[:1])
    if "debiased_counts" in rel.extra and "matrix" in rel.extra:
        return rrr_clamping(rel.extra["debiased_counts"].events[:1], np.asarray(rel.extra["matrix"], float),
                            rel.extra["debiased_counts"].censored[:1])
    return None


def follow_up_ends(rel: CurveRelease, names: dict[str, str] | None = None) -> dict[str, float] | None:
    """Each group's last time under observation (at most the horizon), known without noise only (None for a noisy
    release); groups called by ``names``."""
    exact = every_event_time(rel)
    if exact is None or exact.follow_up_end is None:
        return None
    names = names or {}
    return {names.get(str(g), str(g)): float(exact.follow_up_end[0, k]) for k, g in enumerate(exact.groups)
            if np.isfinite(exact.follow_up_end[0, k])}


def every_event_time(rel: CurveRelease) -> SurvivalCurves | None:
    """A release without noise keeps the curves at every event time (R's survfit): its medians, quartiles, landmarks
    and RMST are read there, as R reads them, so that switching the noise off reproduces the non-private numbers.
    None for a noisy release, which is known at the public grid's points only."""
    return rel.extra.get("event_time_curves")


def quantile_curves(rel: CurveRelease, curves: SurvivalCurves) -> SurvivalCurves | None:
    """Where ``curves``' medians and quartiles are read instead of on themselves: every event time without noise
    (:func:`every_event_time`); None for a noisy release."""
    exact = every_event_time(rel)
    return None if exact is None or exact.survival.shape[:2] != curves.survival.shape[:2] else exact


def rmst_curves(rel: CurveRelease) -> SurvivalCurves:
    """The curves an RMST integrates: the non-private release's at every event time (its grid curve's step area would
    overstate the area by about half a bin times each bin's drop), else those the release's numbers are read from."""
    return rel.extra.get("event_time_curves", band_curves(rel))


def rmst_on_grid(rel: CurveRelease, public: PublicParameters) -> bool:
    """True when the RMST integrates a curve known at a coarse public grid's points only, read linearly between them,
    with or without noise (so that noise switched off is the limit of a smaller and smaller noise); False for a
    curve at every event time (the non-private release's own, or an event-time grid), whose step area is R's."""
    return public.grid.kind != "event-times" and "event_time_curves" not in rel.extra


def incidence_method(curves: SurvivalCurves, conf_type: str, debiased: bool = False, altered: bool = False) -> str:
    """One phrase naming how the cumulative incidence's limits were computed (:func:`incidence_band`); ``debiased``:
    rrr, whose reported-label curves have none; ``altered``: a deterministic disclosure-control rule changed the
    counts the formula reads."""
    if curves.incidence_variance is None:
        return "no interval: the release carries no variance for the cumulative incidence"
    if curves.interval_method is None:
        return (f"pointwise 95% {conf_type} interval on the incidence (R survfit conf.type on a multi-state curve) from "
                "the infinitesimal jackknife variance, as R's survfit computes it: the sampling error only"
                + ("; it reads the altered counts as exact and ignores what the rule did, so it is too narrow"
                   if altered else ""))
    return (("de-biased curves only (the reported-label curves have no interval): " if debiased else "")
            + f"pointwise 95% {conf_type} interval (R's conf.type formulas on 1 - incidence) from the bootstrap variance, "
            f"which includes the noise: {curves.interval_method}; where nobody is left at risk, from the last lower "
            "limit to 1")


def includes_noise(rel: CurveRelease) -> bool:
    """True when the release's bands carry its noise (dpsurv_core.curves.uncertainty, or adaptive-km's delta method)."""
    return band_curves(rel).interval_method is not None or any(NOISE_BAND_NOTE in n for n in rel.notes)


def interval_method(rel: CurveRelease, conf_type: str) -> str:
    """One phrase naming how the intervals were computed."""
    curves = band_curves(rel)
    method = curves.interval_method
    if method is None and np.all(np.isnan(curves.lower)):
        return ("no interval: the mechanism releases no counts, so there is no variance to build one from (a private "
                "time-indexed release inverts its noise law; without noise there is none)")
    if method is None:
        return (f"pointwise 95% {conf_type} interval (R survfit conf.type) from Greenwood's variance only: the sampling "
                "band, it does not include the privacy noise")
    if np.all(np.isnan(curves.greenwood)):
        return f"pointwise 95% band by {method} (the conf.type does not apply: no variance is released)"
    return f"pointwise 95% {conf_type} interval (R survfit conf.type) from a variance that includes the noise: {method}"


def log_variance(curves: SurvivalCurves, with_noise: bool = False) -> np.ndarray:
    """var(log S) behind the bands: the noise-aware variance the release carries (``interval_variance``), else
    Greenwood's. (``with_noise`` is kept for callers; the curves now say themselves.)"""
    if curves.interval_variance is not None:
        return curves.interval_variance
    return curves.greenwood


def hazard_limits(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The band of the cumulative hazard H = -log S from the survival band: (-log upper, -log lower); inf where the
    survival's lower limit is 0 (no upper limit on H), NaN where the survival band is NaN."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return -np.log(np.asarray(upper, float)) + 0.0, -np.log(np.asarray(lower, float)) + 0.0  # + 0.0: no "-0"


def hazard_band(curves: SurvivalCurves, conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The cumulative hazard's ``conf_type`` band: R's (plot.survfit with cumhaz = TRUE) from the Nelson-Aalen variance
    for exact counts (:func:`cumhaz_limits`); for a noisy release -log of its noise-aware survival band
    (:func:`hazard_limits`); NaN where the release has no band."""
    if curves.interval_method is None and curves.cumhaz_variance is not None and not np.all(np.isnan(curves.lower)):
        return cumhaz_limits(curves.cumulative_hazard, curves.cumhaz_variance, conf_type, curves.alpha)
    return hazard_limits(*conf_bands(curves, conf_type, with_noise))


def conf_bands(curves: SurvivalCurves, conf_type: str, with_noise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The curves' pointwise band of R's ``conf.type``; NaN where R gives NA (S = 0; S = 1 for log-log, logit,
    arcsin) and everywhere when the mechanism releases no band. A noisy release's [0, 1] band where nobody is
    left at risk has lower limit 0 (exact counts: [0, 1]); a noise-aware band is made non-increasing (:func:`monotone_band`; where the noisy
    curve has dropped to 0 the upper limit carries the last one before).
    A band with no variance behind it (time-indexed's inversion band) is returned as it is."""
    if np.all(np.isnan(curves.lower)):
        return curves.lower, curves.upper
    if np.all(np.isnan(curves.greenwood)) and curves.interval_variance is None:
        return curves.lower, curves.upper
    lo, up = confidence_limits(curves.survival, log_variance(curves, with_noise), conf_type, curves.alpha)
    # nobody left at risk: the estimator's band there is [0, 1] ([0, the last upper limit] for a noise-aware band)
    marked = (curves.upper == 1) | (curves.interval_method is not None)
    stopped = np.logical_or.accumulate(curves.at_risk <= 0, axis=-1) & (curves.lower == 0) & marked
    lo, up = np.where(stopped, 0.0, lo), np.where(stopped, 1.0, up)
    if curves.interval_method is not None:
        lo, up = monotone_band(np.where(curves.survival <= 0, 0.0, lo), carry_upper(curves.survival, up))
    if curves.known_at is not None:
        lo, up = widen_between(lo, up, curves.known_at)
    return lo, up


def _none_where_nan(a: np.ndarray) -> list:
    a = np.asarray(a, float)
    return np.where(np.isfinite(a), a, None).tolist()


def _finite_or_none(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def quantile_entries(curves: SurvivalCurves, conf_type: str = "log", with_noise: bool = False,
                     coarse_grid: bool = False) -> list[dict[str, Any]]:
    """One dict per trial and group: the median and the quartiles by R's rule (quantile.survfit: the first time the
    curve is <= 1 - p, the midpoint where it equals 1 - p over an interval; NaN: not reached), each with its limits
    from the ``conf_type`` band (null without a band; on a coarse public grid read linearly between the points)."""
    lo, up = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    end = curves.follow_up_end
    quant = {p: (quantile_r(curves.time, curves.survival, 1 - p, last=end),
                 *quantile_limits(curves.time, lo, up, 1 - p, coarse_grid, curves.survival, end))
             for p in QUANTILE_PROBS}
    med, med_lo, med_up = quant[0.5]
    trials, groups = curves.survival.shape[:2]
    return [{"trial": t, "group": curves.groups[g], "median": float(med[t, g]),
             "median_lower": None if no_band else float(med_lo[t, g]),
             "median_upper": None if no_band else float(med_up[t, g]),
             "quantiles": [{"probability": p, "time": _finite_or_none(q[0][t, g]),
                            "lower": None if no_band else _finite_or_none(q[1][t, g]),
                            "upper": None if no_band else _finite_or_none(q[2][t, g])} for p, q in quant.items()]}
            for t in range(trials) for g in range(groups)]


def read_quantiles(curves: SurvivalCurves, exact: SurvivalCurves | None, conf_type: str, with_noise: bool,
                   coarse_grid: bool) -> list[dict[str, Any]]:
    """:func:`quantile_entries` of ``curves``, or of ``exact`` (the curves at every event time, without noise) where
    there are such curves: there the quantiles are R's."""
    if exact is None:
        return quantile_entries(curves, conf_type, with_noise, coarse_grid)
    return quantile_entries(exact, conf_type)


def curve_entries(curves: SurvivalCurves, estimand: str, conf_type: str = "log", with_noise: bool = False,
                  coarse_grid: bool = False, quantiles_from: SurvivalCurves | None = None, **flags: Any
                  ) -> list[dict[str, Any]]:
    """One dict per trial and group (arrays are (trials, G, J)); quantities the mechanism does not
    release (bands, at-risk and event counts of time-indexed) are null, and so are limits where R gives NA.
    ``coarse_grid``: the curve is known at public grid points only, so a quantile's limits are where the bands, read
    linearly between the grid points, cross (:func:`dpsurv_core.curves.uncertainty.quantile_limits`).
    ``quantiles_from``: curves without noise at every event time, where the medians and quartiles are read instead."""
    s = curves.survival.tolist()
    lo_arr, up_arr = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    lo = None if no_band else np.where(np.isnan(lo_arr), None, lo_arr).tolist()
    up = None if no_band else np.where(np.isnan(up_arr), None, up_arr).tolist()
    if with_noise or no_band:
        lol, upl = _nullable(curves.lower_linear), _nullable(curves.upper_linear)
    else:  # Greenwood's plain band as R gives it (no interval where S = 0), as --conf-type plain prints it
        lol, upl = (_nullable(a) for a in conf_bands(curves, "plain", False))
    risk, ev = _nullable(curves.at_risk), _nullable(curves.events)
    summaries = read_quantiles(curves, quantiles_from, conf_type, with_noise, coarse_grid)
    hazard = curves.cumulative_hazard.tolist() if estimand == "cumulative-hazard" else None
    haz_lo = haz_up = None
    if hazard is not None and not no_band:
        h_lo, h_up = hazard_band(curves, conf_type, with_noise)
        haz_lo, haz_up = _none_where_nan(h_lo), _none_where_nan(h_up)
    cif = curves.cumulative_incidence.tolist() if estimand == "cumulative-incidence" else None
    cif_lo = cif_up = None
    band_i = incidence_band(curves, conf_type) if cif is not None else None
    if band_i is not None:
        cif_lo, cif_up = _none_where_nan(band_i[0]), _none_where_nan(band_i[1])
    time = curves.time.tolist()
    out = []
    trials, groups = curves.survival.shape[:2]
    for t in range(trials):
        for g in range(groups):
            e = {"trial": t, "group": curves.groups[g], "time": time, "survival": s[t][g], "lower": _pick(lo, t, g),
                 "upper": _pick(up, t, g), "lower_linear": _pick(lol, t, g), "upper_linear": _pick(upl, t, g),
                 "at_risk": _pick(risk, t, g), "events": _pick(ev, t, g),
                 **{k: v for k, v in summaries[t * groups + g].items() if k not in ("trial", "group")}, **flags}
            if hazard is not None:
                e["cumulative_hazard"] = hazard[t][g]
                e["cumulative_hazard_lower"] = _pick(haz_lo, t, g)
                e["cumulative_hazard_upper"] = _pick(haz_up, t, g)
            if cif is not None:
                e["cumulative_incidence"] = {name: cif[t][g][k] for k, name in enumerate(curves.event_types)}
                e["cumulative_incidence_lower"] = (None if cif_lo is None else
                                                   {name: cif_lo[t][g][k] for k, name in enumerate(curves.event_types)})
                e["cumulative_incidence_upper"] = (None if cif_up is None else
                                                   {name: cif_up[t][g][k] for k, name in enumerate(curves.event_types)})
            out.append(e)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=True)
    add_release_options(p, catalogue.ids(catalogue.CURVES, "km"), default=catalogue.default_id(catalogue.CURVES), grid=True, horizon=True)
    set_group_help(p)
    p.add_argument("--estimand", choices=ESTIMANDS, default="survival",
                   help="what to report besides the survival curve (cumulative incidence needs competing events: "
                        "pbc, transplant)")
    p.add_argument("--conf-type", choices=CONF_TYPES, default="log",
                   help="pointwise 95%% interval as R survfit's conf.type (default log, R's default; log-log was "
                        "dpsurv's earlier default): plain, log, log-log, logit, arcsin")
    p.add_argument("--rmst", type=positive_time, metavar="T",
                   help="restricted mean survival time to T with its 95%% interval (noise-aware for private releases)")
    p.add_argument("--landmarks", type=parse_landmarks, metavar="T1,T2",
                   help="report survival and its interval at these times, e.g. 365,730 (on a public grid: the last "
                        "grid point at or before each time)")
    add_mechanism_options(p)
    add_labels_option(p)


def number_at_risk(groups: tuple[str, ...], cohort: Cohort, public: PublicParameters, counts, epsilon: float | None,
                   trials: int) -> dict[str, Any] | None:
    """Number at risk (time >= t, R's convention) on a coarse table of grid edges, shared by km and logrank: from the
    data when nothing is private (no noise), else from the released counts (null when the mechanism has none)."""
    times = table_times(public.grid)
    times = times[times <= float(public.horizon) + 1e-9] if np.any(times <= float(public.horizon)) else times
    # R counts rows (several per subject too: kidney's two infections each); a table kept in an engine keeps its
    # earlier rule (rows read only with one row per subject)
    if no_noise(epsilon) and (not hasattr(cohort, "time_table") or cohort.rows_per_subject == 1):
        values = np.broadcast_to(at_risk_exact(cohort, groups, times), (trials, len(groups), times.size))
        return risk_table(times, groups, values, exact=True)
    return risk_table(times, groups, None if counts is None else at_risk_at(counts, times), exact=False,
                      altered=not no_noise(epsilon))


def positive_time(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time: give a positive number, e.g. 365.") from None
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"The RMST horizon must be a positive time, e.g. 365, got {text}.")
    return value


def parse_landmarks(text: str) -> list[float]:
    try:
        return parse_times(text)
    except ParameterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def landmark_entries(curves: SurvivalCurves, times: list[float], conf_type: str, exact_grid: bool,
                     with_noise: bool = False) -> list[dict[str, Any]]:
    """One entry per trial, group and requested time: the step curve at ``time_used`` (the requested time itself on
    the event-times grid or when it is a grid point, else the last grid point before it; 0 before the first)."""
    lo, up = conf_bands(curves, conf_type, with_noise)
    no_band = bool(np.all(np.isnan(curves.lower)))
    start_lo, start_up = confidence_limits(np.ones(1), np.zeros(1), conf_type, curves.alpha)
    grid = np.asarray(curves.time, float)
    out = []
    trials, groups = curves.survival.shape[:2]
    for t in range(trials):
        for g in range(groups):
            for when in times:
                on = np.flatnonzero(np.isclose(grid, when, rtol=0, atol=1e-9))
                k = int(on[0]) if on.size else int(np.searchsorted(grid, when, side="right")) - 1
                if k < 0:
                    used, s, lo_v, up_v = (when if exact_grid else 0.0), 1.0, start_lo[0], start_up[0]
                else:
                    used = when if (exact_grid or on.size) else float(grid[k])
                    s, lo_v, up_v = curves.survival[t, g, k], lo[t, g, k], up[t, g, k]
                out.append({"trial": t, "group": curves.groups[g], "time_requested": when, "time_used": float(used),
                            "survival": float(s), "lower": None if no_band else _finite_or_none(lo_v),
                            "upper": None if no_band else _finite_or_none(up_v)})
    return out


def counts_definition(exact_grid: bool, has_counts: bool, noisy: bool, from_rows: bool = False) -> str:
    """What ``at_risk`` and ``events`` beside each curve point are (``km`` JSON ``counts_definition``); ``from_rows``:
    the non-private curve, whose number at risk is read off the rows at each time."""
    if not has_counts:
        return "the mechanism releases no counts: at_risk and events are null"
    source = "from the released (noisy, post-processed) counts; " if noisy else ""
    if exact_grid:
        return (source + "at_risk and events at each curve time are R's n.risk (subjects with time >= t) and n.event "
                "at that time")
    if from_rows:
        return ("at_risk at each curve time is R's n.risk there (subjects with time >= t, as summary(fit, times = t)); "
                "events are the bin's, from the previous grid point to this one")
    return (source + "at_risk and events at each curve time are its bin's, from the previous grid point to this one: "
            "the bin's events, and its effective number at risk (at risk at the bin's start less half the bin's "
            "censorings, the life-table rule that the curve uses); the number at risk at a time (time >= t, R's "
            "convention) is number_at_risk")


def rmst_entries(curves: SurvivalCurves, horizon: float, coarse_grid: bool = False) -> list[dict[str, Any]]:
    """Restricted mean survival time to ``horizon`` per trial and group with its 95% interval (null where the
    mechanism has none): the area under the curve up to the time asked (no grid rounding is needed); on a coarse
    public grid the curve is read linearly between its points (:func:`rmst_interval`)."""
    value, lo, up = rmst_interval(curves, horizon, coarse_grid)
    trials, groups = curves.survival.shape[:2]
    return [{"trial": t, "group": curves.groups[g], "time_requested": horizon, "time_used": horizon,
             "rmst": float(value[t, g]), "lower": _finite_or_none(lo[t, g]), "upper": _finite_or_none(up[t, g])}
            for t in range(trials) for g in range(groups)]


def run(args: argparse.Namespace) -> dict[str, Any]:
    competing = args.estimand == "cumulative-incidence"
    rel, cohort, public, extra, fields = release(args, competing)
    out = header(rel, cohort, public, extra)
    out.update(fields)
    out["estimand"] = args.estimand
    conf_type = getattr(args, "conf_type", "log")
    noisy_band = includes_noise(rel)
    coarse = public.grid.kind != "event-times" and not no_noise(rel.cost.epsilon)
    out["median_note"] = ("median and quartiles as R's quantile.survfit: first time the curve is <= 1 - p, the midpoint "
                          "where it equals 1 - p over an interval (null: not reached); their CI from the band the "
                          "same way" + ("; on the public grid the curve is known at grid points only, so each limit "
                                        "is where its band, read linearly between grid points, reaches 1 - p (the "
                                        "upper limit at least the estimate)" if coarse else ""))
    if competing:
        out["incidence_interval_method"] = incidence_method(band_curves(rel), conf_type, "debiased_curves" in rel.extra,
                                                            rel.mechanism in RULES)
        if len(rel.curves.event_types) > 1:
            out["survival_definition"] = ("with competing events, survival, its median, quartiles, events and number "
                                          "at risk count every event type: the probability of being free of all of "
                                          "them (R's pstate of the starting state), not survival from one cause")
    if "table" in rel.extra:  # disclosure control: the released table as published ("<5" for suppressed cells)
        out["released_table"] = rel.extra["table"]
    if "debiased_curves" in rel.extra:
        debiased = rel.extra["debiased_curves"]
        out["curves"] = (curve_entries(rel.curves, args.estimand, conf_type, noisy_band, coarse,
                                       quantile_curves(rel, rel.curves), debiased=False, interval_includes_noise=False)
                         + curve_entries(debiased, args.estimand, conf_type, noisy_band, coarse,
                                         quantile_curves(rel, debiased), debiased=True,
                                         interval_includes_noise=noisy_band))
    else:
        out["curves"] = curve_entries(rel.curves, args.estimand, conf_type, noisy_band, coarse,
                                      quantile_curves(rel, rel.curves))
    out["number_at_risk"] = number_at_risk(rel.curves.groups, cohort, public, risk_counts(rel), rel.cost.epsilon,
                                           rel.trials)
    # without noise every count mechanism's curves are the non-private ones (read off the rows at each time)
    from_rows = rel.mechanism == NonPrivate.name or "event_time_curves" in rel.extra
    out["counts_definition"] = counts_definition(public.grid.kind == "event-times", rel.counts is not None,
                                                 not no_noise(rel.cost.epsilon), from_rows)
    options = reading_options(args, rel, cohort, public)
    out.update(readings(rel, **options))
    names = options["names"]
    return add_group_labels(out, names)


def beyond_follow_up(public: PublicParameters, landmarks: list[float], rmst: float | None, unit: str,
                     ends: dict[str, float] | None = None) -> list[str]:
    """Sentences for a landmark before the public grid's first point or after its horizon, or an RMST time after the
    horizon, where the curve is not estimated. ``ends``: without noise, each group's last time under observation
    (:func:`follow_up_ends`): the curve is read at every event time, so no landmark is early, and one is late after
    its group's own end of follow-up (R's summary(fit, times = t) gives no row there)."""
    end = float(public.horizon)
    fmt = lambda t: f"{t:.4g} {unit}".strip()  # noqa: E731
    out = []
    if ends is not None:
        said_horizon = False
        for g, last in ends.items():
            late = [t for t in landmarks if t > last]
            at_horizon = last >= float(public.horizon) - 1e-9
            if not late or (at_horizon and said_horizon):  # the horizon ends every group's follow-up: said once
                continue
            said_horizon = said_horizon or at_horizon
            whose = "The data are" if g == "all" else f"Group {g} is"
            out.append((f"Follow-up ends at the horizon ({fmt(last)})" if at_horizon
                        else f"{whose} last followed at {fmt(last)}") + ", so the survival shown at "
                       f"{', '.join(fmt(t) for t in late)} is the curve carried on past its end of follow-up, not "
                       f"an estimate at that time (R's summary gives no row there); choose landmarks up to "
                       f"{fmt(last)}.")
        past = {g: last for g, last in ends.items() if rmst is not None and rmst > last}
        if past and len(past) < len(ends):  # some groups' follow-up ends before the time asked, not every group's
            named = ", ".join(f"group {g} ({fmt(last)})" for g, last in past.items())
            its = "its curve is" if len(past) == 1 else "each such curve is"
            out.append(f"The RMST to {fmt(rmst)} runs past the last follow-up of {named}: {its} held at its last value "
                       f"after it, so that part of its area is an assumption, not an estimate; choose a time up to "
                       f"{fmt(min(past.values()))}.")
        end = max(ends.values(), default=end)
        if rmst is not None and rmst > end:
            what = "the horizon" if end >= float(public.horizon) - 1e-9 else "the last time under observation"
            out.append(f"The RMST to {fmt(rmst)} runs past {what} ({fmt(end)}): the curve is "
                       f"held flat after it, so that part of the area is an assumption, not an estimate; choose a time "
                       f"up to {fmt(end)}.")
        return out
    first = float(public.grid.points[0])
    # 0 is the start: a private curve there is 1 (events at time 0, if any, are in the first bin)
    early = [t for t in landmarks if 0 < t < first] if public.grid.kind != "event-times" else []
    if early:
        out.append(f"The landmark time {', '.join(fmt(t) for t in early)} is before the first point of the public grid "
                   f"({fmt(first)}), so the survival shown is the curve at time 0 (100%, with no uncertainty), not an "
                   f"estimate at that time; choose landmarks from {fmt(first)} on, or a finer grid.")
    late = [t for t in landmarks if t > end]
    if late:
        out.append(f"The landmark time {', '.join(fmt(t) for t in late)} is after the end of follow-up on the public grid "
                   f"({fmt(end)}), so the survival shown is the curve's last value, not an estimate at that time; "
                   f"choose landmarks up to {fmt(end)}.")
    if rmst is not None and rmst > end:
        out.append(f"The RMST to {fmt(rmst)} runs past the end of follow-up on the public grid ({fmt(end)}): the curve "
                   f"is held flat after it, so that part of the area is an assumption, not an estimate; choose a time up "
                   f"to {fmt(end)}.")
    return out
