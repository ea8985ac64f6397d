"""Each survival-curve page's release :class:`~dpsurv_core.privacy.release.Plan` with the command line that
reproduces it (the data, grid, event-type and reading options as ``dpsurv km`` / ``logrank`` read them), and a
curve release rebuilt from its record alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from dpsurv_app import session
from dpsurv_app.curve_format import group_name
from dpsurv_app.curve_mechanisms import has_groups
from dpsurv_core.curves import readout
from dpsurv_core.curves.result import CURVE_PARAMETERS, CurveResult, context, with_follow_up_end
from dpsurv_core.data import datasets, event_types
from dpsurv_core.data.cohort import Cohort, default_mapping
from dpsurv_core.data.public import Disclosure, PublicParameters
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.release import Plan, Released, cli_command


# ----------------------------------------------------------------------------------------- plans (CLI reproducible)
def _num(v: float) -> str:
    return f"{float(v):.10g}"


def data_options(choice: session.DataChoice, group: str | None = None, covariates: Sequence[str] = ()
                 ) -> dict[str, Any]:
    """The CLI's data options for the Data page's choice: --data, --time, --event (with its codes when they are
    not the bundled data set's own), --group (and --labels when its value labels are the session's own), --id,
    --max-rows-per-subject, --covariates."""
    m = choice.mapping
    out: dict[str, Any] = {"data": choice.name, "time": m.time, "event": m.event}
    codes = tuple(m.event_codes), tuple(m.censor_codes)
    if choice.bundled and choice.name in datasets.DATASETS:
        d = default_mapping(choice.name)
        if m.event == d.event and codes == (tuple(d.event_codes), tuple(d.censor_codes)):
            codes = ((), ())
    if codes[0]:
        out["event_codes"] = list(codes[0])
        out["censor_codes"] = list(codes[1]) or None
    out["group"] = group
    # categories declared on the Data page that the command line would not know: --categories (a bundled data set's
    # documented codes it declares itself)
    declared = choice.categories.get(group) if group else None
    documented = (tuple(datasets.info(choice.name).labels.values.get(group) or ())
                  if group is not None and choice.bundled and choice.name in datasets.DATASETS else ())
    out["categories"] = f"{group}:{','.join(declared)}" if declared and tuple(declared) != documented else None
    # group names set on the Data page travel in the file its 'Labels as JSON' saves
    out["labels"] = session.labels_file(choice) if session.relabelled([group], choice) else None
    out["id"] = m.id
    out["max_rows_per_subject"] = m.max_rows_per_subject if m.max_rows_per_subject > 1 else None
    out["covariates"] = list(covariates) or None
    return out


def timefix_option(choice: session.DataChoice) -> dict[str, Any]:
    """``--no-timefix`` (km and logrank) when the Data page keeps near-tied times apart, else nothing."""
    return {} if choice.mapping.timefix else {"no_timefix": True}


def event_type_options(choice: session.DataChoice) -> dict[str, Any]:
    """--event-type, --event-types and --type-censor-codes of the Data page's event-type column, for a competing-risks
    command line: none for a bundled data set's documented column (the command line declares it itself)."""
    m = choice.mapping
    if not m.event_type:
        return {}
    info = datasets.info(choice.name) if choice.bundled and choice.name in datasets.DATASETS else None
    documented = tuple((str(k), str(v)) for k, v in info.event_types.items()) if info is not None else ()
    if info is not None and m.event_type == info.event_type and tuple(m.event_type_names) == documented:
        return {}
    censor = tuple(str(c) for c in m.type_censor_codes)
    default = tuple(str(c) for c in event_types.DEFAULT_CENSOR_CODES)
    return {"event_type": m.event_type, "event_types": event_types.text(m.event_type_names) or None,
            "type_censor_codes": None if set(censor) == set(default) else list(censor)}


def grid_options(choice: session.DataChoice, public: PublicParameters, grid: bool = True) -> dict[str, Any]:
    """--grid and --horizon as the CLI needs them to use the same public time axis, in the unit the file stores
    (the command line reads the file's own unit): nothing when both were read off the data with the default 20 bins
    (the CLI reads them off the same way, with the same disclosures)."""
    f = session.source_factor(choice)
    out: dict[str, Any] = {"horizon": _num(public.horizon * f) if choice.horizon is not None else None}
    g = public.grid
    if not grid:
        return out
    if g.kind == "event-times":
        out["grid"] = "event-times"
    elif not (public.horizon_from_data and g.kind == "equal" and g.bins == 20):
        out["grid"] = f"{_num(g.edges[0] * f)}:{_num(g.edges[-1] * f)}:{g.bins}"
    return out


def command_line(command: str, options: dict[str, Any], repeated: dict[str, Sequence[str]] | None = None) -> str:
    """``cli_command(command, options)`` with options the CLI takes once per value (``--range A --range B``)."""
    import shlex

    line = cli_command(command, options)
    extra = [part for name, values in (repeated or {}).items() for v in values
             for part in ("--" + name.replace("_", "-"), str(v))]
    if not extra:
        return line
    head, tail = line.rsplit(" --json", 1)
    return f"{head} {shlex.join(extra)} --json{tail}"


def reading_names(groups: Sequence[str], group_column: str | None) -> dict[str, str]:
    """code -> the name the page shows a group by (:func:`group_name`: its value label); a single pooled curve keeps
    "all", which the core's sentences call "the curve"."""
    return {str(g): str(g) if g == "all" else group_name(g, group_column) for g in groups}


def pooled(public: PublicParameters, cohort: Cohort) -> PublicParameters:
    """``public`` as a release of ``cohort`` uses it: a cohort without groups (one pooled curve) publishes no group
    categories, so none is read off the data for it (as ``km`` without ``--group``)."""
    if has_groups(cohort) or not public.group_categories:
        return public
    return replace(public, group_categories=(), categories_from_data=False)


def curve_plan(entry: Entry, epsilon: float | None, cohort: Cohort, public: PublicParameters, command: str,
               options: dict[str, Any], mechanism_options: dict[str, Any] | None = None, competing: bool = False,
               analysis: str = "survival curves", extra: Sequence[Disclosure] = (), group_column: str | None = None,
               reading: dict[str, Any] | None = None, tests: dict[str, Any] | None = None) -> Plan:
    """The release plan of a curve mechanism on the page's cohort, as ``python -m dpsurv_core <command>`` builds it
    (``options``: the command line's options). The catalogue builds the mechanism from the release's context and
    ``mechanism_options`` (the page's settings; None values left out), and exactly these parameters go into the
    record's public inputs, so that its reader rebuilds the same mechanism. Its disclosures are the public
    parameters the curves use.

    The record is of kind ``curves`` (``logrank`` with ``tests``, the log-rank options ``{"null_draws": B}``): its
    ``released`` part is the mechanism's noisy output and its ``public_inputs`` are
    :func:`dpsurv_core.curves.readout.public_inputs` with ``reading`` (``conf_type``, ``time_unit``, ``landmarks``,
    ``rmst``) and the groups' names as the page shows them (``group_column``'s value labels)."""
    public = pooled(public, cohort)
    build = {**context(cohort, public), **{k: v for k, v in (mechanism_options or {}).items() if v is not None}}
    mechanism: Any = entry.build(epsilon, **build)  # a curve mechanism (compute; the base type has none)
    types: list[Disclosure] = []
    if competing:  # the event types: declared on the Data page (or documented), else read off the data (refused)
        types = event_types.disclosures(cohort)
        options = {**options, **event_type_options(session.data_choice())}

    def compute(noise: Any, trials: int) -> CurveResult:
        rel = with_follow_up_end(mechanism.compute(cohort, public, noise, trials if entry.private else 1,
                                                   competing=competing), cohort, public)
        rel.disclosures = [*extra, *rel.disclosures, *types]
        return rel

    def publish(rel: CurveResult) -> tuple[dict[str, Any], dict[str, Any]]:
        asked = {"conf_type": "log", "time_unit": cohort.time_unit, "landmarks": None, "rmst": None, **(reading or {})}
        asked["names"] = reading_names(rel.curves.groups, group_column)
        inputs = readout.public_inputs(entry.id, epsilon, build, public, competing, asked)
        if competing:
            inputs.update(event_types.public_inputs(cohort))
        if tests is not None:
            inputs["tests"] = dict(tests)
        return dict(rel.released or {}), inputs

    used = CURVE_PARAMETERS if has_groups(cohort) else tuple(p for p in CURVE_PARAMETERS if p != "groups")
    return Plan(entry, mechanism, cohort.name, session.data_choice().fingerprint, compute,
                [*extra, *public.disclosures(used), *types], cli_command(command, options), analysis=analysis,
                kind="curves" if tests is None else "logrank", publish=publish)


def reading_options(choice: session.DataChoice, conf_type: str, landmarks: Sequence[float], rmst: float | None
                    ) -> dict[str, Any]:
    """--conf-type, --landmarks and --rmst as the page reads the release (times in the file's unit, as the command
    line reads them): how the numbers printed beside it are read, not what is released."""
    f = session.source_factor(choice)
    return {"conf_type": None if conf_type == "log" else conf_type,
            "landmarks": [_num(t * f) for t in landmarks] or None, "rmst": None if rmst is None else _num(rmst * f)}


def record_curves(released: Released) -> CurveResult:
    """A curve release as its record holds it: the mechanism, rebuilt from the record's public inputs, reads the
    record's noisy output (:func:`dpsurv_core.curves.readout.curve_release`, the reader that made the record's
    ``derived`` part), so that every number the page shows after a release is a function of the record alone. Kept
    for this session by record id."""
    pub = released.publication
    if pub is None:  # a release made without a reader (not through curve_plan): its result as computed
        return released.result
    kept = st.session_state.setdefault("record_curves", {})
    if released.record_id not in kept:
        if len(kept) > 8:
            kept.clear()
        rel = readout.curve_release(pub.released, pub.public_inputs)
        rel.disclosures = [Disclosure(str(d.get("parameter", "")), str(d.get("message", "")), bool(d.get("dp", True)))
                           for d in released.entry.disclosures]
        kept[released.record_id] = rel
    return kept[released.record_id]


def reading_mechanism(plan: Plan, released: Released | None) -> Any:
    """The mechanism that reads what the page shows: after a release, the one its record names, rebuilt with the
    reading rules it was published with (:func:`dpsurv_core.curves.readout.mechanism_of`), so that a record read again
    gives the tests and sentences its derived part and reports hold; before one, the plan's."""
    if released is None or released.publication is None:
        return plan.mechanism
    return readout.mechanism_of(released.publication.public_inputs)
