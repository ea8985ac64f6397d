"""The curves reader: everything people read of a curve release, from its record alone.

``read(released, public_inputs)`` rebuilds the mechanism from the catalogue and its declared parameters, lets the
mechanism read its own noisy output (:meth:`read` of each curve mechanism: post-processing, no cohort in reach) and
reads the result the way ``km`` prints it (:func:`released_numbers`). ``public_inputs`` holds only declared values:
the mechanism and its parameters, the grid and horizon, the group categories and their labels, the time unit and
what the reader was asked (conf.type, landmarks, RMST time).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core.curves.curve_warnings import curve_warnings
from dpsurv_core.curves.readings import (
    _finite_or_none,
    _none_where_nan,
    band_curves,
    beyond_follow_up,
    clamping_of,
    conf_bands,
    every_event_time,
    includes_noise,
    interval_method,
    landmark_entries,
    named_groups,
    no_noise,
    quantile_curves,
    read_quantiles,
    rmst_curves,
    rmst_entries,
)
from dpsurv_core.curves.result import CurveResult
from dpsurv_core.errors import stored_version

if TYPE_CHECKING:  # value types only: this module reads no data
    from dpsurv_core.data.public import PublicParameters

READING_KEYS = ("conf_type", "names", "time_unit", "landmarks", "rmst")
VERSION = 4
"""The reading rules a record's ``public_inputs["reader_version"]`` names (a record without one: version 1).

1. adaptive-km's merged bins read by the life table's first order, d / (r - c/2), their censorings spread by width;
2. (2026-11-29) merged bins read by the life table's premise solved exactly
   (:func:`~dpsurv_core.curves.life_table.uniform_censoring_drop`), their censorings spread where it puts them;
3. (2026-11-29) the log-rank test's sentences say when its p-value is approximate: a weak test, an adaptive-km
   release merged into fewer than four bins, or one below epsilon 1 whose groups' released censoring differs widely
   (:func:`~dpsurv_core.curves.logrank_test.warnings_for`); the numbers are those of version 2;
4. (2026-11-30) and when the grid is too wide for how differently the groups are censored
   (:mod:`~dpsurv_core.curves.grid_timing`), or a noisy release on fewer than 10 bins has groups censored unequally;
   the numbers are those of version 2.

The log-rank reader reads the same curves, so its records follow the same versions.
"""


def public_inputs(mechanism: str, epsilon: float | None, build: dict[str, Any], public: PublicParameters,
                  competing: bool = False, reading: dict[str, Any] | None = None) -> dict[str, Any]:
    """The declared values a curve release was made and is read with (the record's ``public_inputs``): the catalogue
    id, epsilon and the parameters the mechanism was built with (``build``), the public grid, horizon and categories
    (with whether each was read off the data: such a release is only recorded once a person accepted it), whether
    competing events were counted, and ``reading`` (conf_type, group names, time unit, landmarks, RMST time)."""
    return {"mechanism": mechanism, "epsilon": epsilon, "build": dict(build), "competing": bool(competing),
            "horizon": float(public.horizon), "horizon_from_data": bool(public.horizon_from_data),
            "grid": public.grid.to_dict(), "categories": list(public.group_categories),
            "categories_from_data": bool(public.categories_from_data),
            "reading": {k: v for k, v in (reading or {}).items() if k in READING_KEYS}}


def public_parameters(inputs: dict[str, Any]) -> PublicParameters:
    """The public parameters of ``public_inputs`` (:func:`public_inputs`), rebuilt."""
    from dpsurv_core.data.public import PublicParameters, TimeGrid

    grid = inputs["grid"]
    return PublicParameters(float(inputs["horizon"]), TimeGrid(np.asarray(grid["edges"], float), grid["kind"],
                                                                bool(grid["from_data"])),
                            bool(inputs.get("horizon_from_data", False)), tuple(inputs.get("categories") or ()),
                            bool(inputs.get("categories_from_data", False)))


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def mechanism_of(inputs: dict[str, Any]) -> Any:
    """The curve mechanism the release used, built from the catalogue with its declared parameters."""
    from dpsurv_core.privacy import catalogue

    entry = catalogue.get(catalogue.CURVES, inputs["mechanism"])
    mechanism: Any = entry.build(inputs["epsilon"], **{k: _tuples(v) for k, v in inputs["build"].items()})
    version = reader_version(inputs)
    if version < 2 and hasattr(mechanism, "merged_rule"):
        mechanism.merged_rule = "life-table"
    if version < 3:  # a reading rule, read by logrank_test.warnings_for (True when absent)
        mechanism.test_level_warnings = False
    if version < 4:  # likewise
        mechanism.test_grid_warnings = False
    return mechanism


def reader_version(inputs: dict[str, Any]) -> int:
    """The reading rules' version a record names (:data:`VERSION`; 1 when it names none), refused in one sentence
    when this dpsurv does not have it: every reading of a stored record (its derived part, reports, figures, hazard
    ratios, audits) reads it by the rules it was published with."""
    return stored_version(inputs, VERSION, "curve reader")


def curve_release(released: dict[str, Any], inputs: dict[str, Any]) -> CurveResult:
    """The release as its mechanism reads its stored output (curves, bands, counts)."""
    rel = mechanism_of(inputs).read(released, public_parameters(inputs), bool(inputs.get("competing")))
    rel.released = released
    return rel


def reading_options(inputs: dict[str, Any], public: PublicParameters) -> dict[str, Any]:
    """The options of :func:`released_numbers` for a noisy release, from its public inputs alone."""
    reading = inputs.get("reading") or {}
    landmarks, rmst = reading.get("landmarks"), reading.get("rmst")
    unit = str(reading.get("time_unit") or "")
    exact_grid = public.grid.kind == "event-times"
    return {"conf_type": reading.get("conf_type") or "log", "names": dict(reading.get("names") or {}),
            "time_unit": unit, "more_warnings": beyond_follow_up(public, list(landmarks or []), rmst, unit),
            "landmarks": landmarks, "rmst": rmst, "rmst_coarse": not exact_grid, "exact_grid": exact_grid}


def read(released: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """``derived`` of a curve release: :func:`released_numbers` of the release its mechanism reads back."""
    rel = curve_release(released, inputs)
    return released_numbers(rel, **reading_options(inputs, public_parameters(inputs)))


def readings(rel: CurveResult, conf_type: str = "log", names: dict[str, str] | None = None, time_unit: str = "",
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


def released_numbers(rel: CurveResult, conf_type: str = "log", names: dict[str, str] | None = None,
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
