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

from dpsurv_core.cli import disclosure_options, reading
from dpsurv_core.cli.common import (
    add_data_options,
    add_event_type_options,
    add_release_options,
    add_timefix_option,
    cohort_from_args,
    dataset_fingerprint,
    decimal,
    epsilon_value,
    needs_fingerprint,
    public_from_args,
    reproduce_command,
    run_plan,
)
from dpsurv_core.curves import readout
from dpsurv_core.curves.curve_warnings import RULES
from dpsurv_core.curves.kaplan_meier import CONF_TYPES
from dpsurv_core.curves.memory import check_release
from dpsurv_core.curves.readings import (  # noqa: F401 (re-exported: the app and the tests read them from here)
    NOISE_BAND_NOTE,
    QUANTILE_PROBS,
    band_curves,
    beyond_follow_up,
    clamping_of,
    conf_bands,
    counts_definition,
    curve_entries,
    every_event_time,
    follow_up_ends,
    hazard_band,
    hazard_limits,
    incidence_method,
    includes_noise,
    interval_method,
    landmark_entries,
    log_variance,
    named_groups,
    no_noise,
    quantile_curves,
    quantile_entries,
    read_quantiles,
    rmst_curves,
    rmst_entries,
    rmst_on_grid,
)
from dpsurv_core.curves.readout import readings, released_numbers  # noqa: F401 (re-exported)
from dpsurv_core.curves.result import (
    CurveResult,
    NonPrivate,
    context,
    event_times_grid,
    groups_of,
    risk_counts,
    with_follow_up_end,
)
from dpsurv_core.curves.summary import at_risk_at, at_risk_exact, parse_times, risk_table, table_times
from dpsurv_core.curves.time_indexed import parse_shares, parse_sizes
from dpsurv_core.curves.timefix import timefixed
from dpsurv_core.data import datasets, event_types, grouping
from dpsurv_core.data.categories import unmatched, unmatched_warning
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.labels import ValueLabels, code_key
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import PrivacyCost
from dpsurv_core.privacy.options import TIME_INDEXED
from dpsurv_core.privacy.release import Plan

NAME = "km"
HELP = "private survival curves per group: Kaplan-Meier with 95% bands, cumulative hazard, cumulative incidence"
ESTIMANDS = ("survival", "cumulative-hazard", "cumulative-incidence")
GROUP_HELP = "group column, or COL:median (cut at the data's median, disclosed) or COL:VALUE (public cut)"


def _mechanism_help(choices: Sequence[str]) -> str:
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
            action.help = _mechanism_help(list(action.choices)).replace("%", "%%")


def add_mechanism_options(p: argparse.ArgumentParser) -> None:
    disclosure_options.add_arguments(p)  # every specified option (time-indexed's and disclosure control's)
    g = next(a for a in p._action_groups if a.title == TIME_INDEXED)
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
    if getattr(args, "mechanism", None) in catalogue.ids(catalogue.CURVES, private=False):
        cohort = timefixed(cohort)  # exact curves and tests count near-tied times as one, as R's timefix does
    if competing and not event_types.has_types(cohort):
        raise ParameterError(f"Cumulative incidence needs competing events, which {args.data!r} does not have: name "
                             "the event types with --event-codes A,B (each code of the event column its own type, "
                             "--censor-codes for censoring), or a separate type column with --event-type COL (and "
                             "its declared types with --event-types A,B), or use pbc (transplant vs death) or transplant (ltx vs death).")
    if getattr(args, "grid", None) is None and getattr(args, "mechanism", None) == "nonprivate":
        # nothing is private, so no public grid is needed: R's curve at every event time (R's median and RMST)
        args.grid = "event-times"
    public = public_from_args(args, cohort)
    if competing and getattr(args, "grid", None) == "event-times":
        public = replace(public, grid=event_times_grid(cohort, competing=True))
    if split is not None:
        public = replace(public, group_categories=cats, categories_from_data=False)
    elif public.group_categories and not public.categories_from_data:
        # a declared category no row holds: said to the data holder (confidential), never in the record
        note = unmatched_warning(args.group, unmatched(public.group_categories, cohort.groups), cohort.groups)
        if note:
            args._data_warnings = [*getattr(args, "_data_warnings", []), note]
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


def mechanism_build(args: argparse.Namespace, cohort: Cohort, public: PublicParameters) -> dict[str, Any]:
    """The parameters a curve mechanism is built with: the release's context (rows per subject, grid points, public
    categories) and the command line's mechanism options. All public: they go into the record's public inputs."""
    options = {k: getattr(args, k) for k in MECHANISM_OPTIONS if getattr(args, k, None) is not None}
    return {**context(cohort, public), **options}


def build_mechanism(name: str, args: argparse.Namespace, cohort: Cohort, public: PublicParameters):
    """The catalogue entry and mechanism object for ``name`` with the command-line parameters."""
    entry = catalogue.get(catalogue.CURVES, name)
    return entry, entry.build(args.epsilon, **mechanism_build(args, cohort, public))


def reading_options(args: argparse.Namespace, rel: CurveResult, cohort: Cohort, public: PublicParameters
                    ) -> dict[str, Any]:
    """The options of :func:`readings` as ``km``'s command line gives them."""
    landmarks, rmst = getattr(args, "landmarks", None), getattr(args, "rmst", None)
    names = group_labels_of(args, rel.curves.groups)
    return {"conf_type": getattr(args, "conf_type", "log"), "names": names, "time_unit": cohort.time_unit,
            "more_warnings": beyond_follow_up(public, landmarks or [], rmst, cohort.time_unit,
                                              follow_up_ends(rel, names)),
            "landmarks": landmarks, "rmst": rmst, "rmst_coarse": rmst_on_grid(rel, public),
            "exact_grid": public.grid.kind == "event-times"}


def plan(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves", min_groups: int = 1,
         tests: dict[str, Any] | None = None) -> tuple[Plan, Cohort, PublicParameters, list[Disclosure]]:
    """The release plan of --mechanism on --data: the catalogue builds the mechanism, which knows its cost. A cohort
    with fewer than ``min_groups`` groups is refused here, before anything is released: the declared categories are
    counted when there are some (a refusal decided by the groups that occur would itself depend on the data), else
    the groups read off the data. ``tests`` (the log-rank options, ``{"null_draws": B}``): the record is a log-rank
    release, whose reader adds the calibrated tests."""
    cohort, public, extra = load(args, competing)
    if min_groups > 1 and len(groups_of(cohort, public) or ()) < min_groups:
        raise ParameterError(f"A {analysis[:-1] if analysis.endswith('s') else analysis} needs at least {min_groups} "
                             "groups: choose a --group column with two or more values.")
    build = mechanism_build(args, cohort, public)
    entry = catalogue.get(catalogue.CURVES, args.mechanism)
    mech: Any = entry.build(args.epsilon, **build)  # a curve mechanism
    types = event_types.disclosures(cohort) if competing else []  # read off the data: refused unless accepted
    # the memory of the release and its tests, before the data set is fingerprinted or anything is drawn
    check_release(mech, cohort, public, getattr(args, "repeat", 1) if getattr(args, "seed", None) is not None else 1,
                  competing, None if tests is None else int(tests.get("null_draws") or 0))

    def compute(noise, trials: int) -> CurveResult:
        rel = with_follow_up_end(mech.compute(cohort, public, noise, trials if entry.private else 1,
                                              competing=competing), cohort, public)
        rel.disclosures = [*extra, *rel.disclosures, *types]
        return rel

    def publish(rel: CurveResult) -> tuple[dict[str, Any], dict[str, Any]]:
        reading = {"conf_type": getattr(args, "conf_type", "log"), "names": group_labels_of(args, rel.curves.groups),
                   "time_unit": cohort.time_unit, "landmarks": getattr(args, "landmarks", None),
                   "rmst": getattr(args, "rmst", None)}
        inputs = readout.public_inputs(args.mechanism, args.epsilon, build, public,
                                       competing, reading)
        if competing:
            inputs.update(event_types.public_inputs(cohort))
        if tests is not None:
            inputs["tests"] = dict(tests)
        return dict(rel.released or {}), inputs

    p = Plan(entry, mech, cohort.name, dataset_fingerprint(args) if needs_fingerprint(args, entry) else "",
             compute, [*extra, *public.disclosures(), *types], reproduce_command(args), analysis=analysis,
             kind="curves" if tests is None else "logrank", publish=publish)
    return p, cohort, public, extra


def release(args: argparse.Namespace, competing: bool = False, analysis: str = "survival curves", min_groups: int = 1,
            tests: dict[str, Any] | None = None
            ) -> tuple[CurveResult, Cohort, PublicParameters, list[Disclosure], dict[str, Any]]:
    """Run the plan as the options say (simulation, non-private, or a release through the protocol)."""
    p, cohort, public, extra = plan(args, competing, analysis, min_groups, tests)
    rel, fields = run_plan(args, p)
    return rel, cohort, public, extra, fields


def header(rel: CurveResult, cohort: Cohort, public: PublicParameters, extra: list[Disclosure]) -> dict[str, Any]:
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


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_data_options(p, group=True)
    add_event_type_options(p)
    add_timefix_option(p)
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
    reading.add_from_record(p)


def number_at_risk(groups: tuple[str, ...], cohort: Cohort, public: PublicParameters, counts, epsilon: float | None,
                   trials: int) -> dict[str, Any] | None:
    """Number at risk (time >= t, R's convention) on a coarse table of grid edges, shared by km and logrank: from the
    data when nothing is private (no noise), else from the released counts (null when the mechanism has none)."""
    times = table_times(public.grid)
    times = times[times <= float(public.horizon) + 1e-9] if np.any(times <= float(public.horizon)) else times
    # R counts rows (several per subject too: kidney's two infections each); a table kept in an engine counts them there
    if no_noise(epsilon):
        values = np.broadcast_to(at_risk_exact(cohort, groups, times), (trials, len(groups), times.size))
        return risk_table(times, groups, values, exact=True)
    return risk_table(times, groups, None if counts is None else at_risk_at(counts, times), exact=False,
                      altered=not no_noise(epsilon))


def positive_time(text: str) -> float:
    try:
        value = decimal(text)
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


ROBUST_NOTE = ("several rows per subject: robust_se is the standard error of S by the infinitesimal jackknife over "
               "subjects, and robust_lower/robust_upper its limits (same conf_type), as R's survfit(..., id = id) "
               "gives them; lower and upper treat the rows as independent (Greenwood)")


def _add_robust_errors(curves: list[dict[str, Any]], cohort: Any, conf_type: str) -> bool:
    """With several rows for some subject (rows in memory), each curve entry gets ``robust_se``, ``robust_lower`` and
    ``robust_upper`` at its times: R's survfit(..., id = id) robust standard error of S, sqrt(sum_k U_k(t)^2) over the
    subjects' influences U_k (:mod:`dpsurv_core.curves.km_robust`; Therneau & Grambsch 2000), and its limits. False
    (nothing added) otherwise, as R computes no robust variance without repeated ids."""
    import pandas as pd

    from dpsurv_core.curves.km_robust import robust_km
    from dpsurv_core.data.labels import code_keys

    if not isinstance(cohort, Cohort) or (hasattr(cohort, "binned_counts") and cohort.rows_per_subject == 1):
        return False  # one row per subject (kept in an engine: known without reading the rows)
    if cohort.subject is None or not pd.Series(cohort.subject).duplicated().any():
        return False
    keys = None if cohort.group is None else code_keys(pd.Series(cohort.group)).to_numpy()
    for entry in curves:
        rows = np.ones(cohort.time.size, bool) if keys is None else keys == str(entry["group"])
        fit = robust_km(cohort.time[rows], cohort.event[rows], np.asarray(cohort.subject)[rows])
        times = np.asarray(entry["time"], dtype=float)
        _, se = fit.at(times)
        lower, upper = fit.limits(times, conf_type)
        entry.update({k: [None if not math.isfinite(v) else float(v) for v in a]
                      for k, a in (("robust_se", se), ("robust_lower", lower), ("robust_upper", upper))})
    return True


def run(args: argparse.Namespace) -> dict[str, Any]:
    reading.check(args, "km")
    if args.from_record is not None:
        return reading.from_record(args, "curves")
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
    if rel.mechanism == NonPrivate.name and not competing and "debiased_curves" not in rel.extra \
            and _add_robust_errors(out["curves"], cohort, conf_type):
        out["robust_note"] = ROBUST_NOTE
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


