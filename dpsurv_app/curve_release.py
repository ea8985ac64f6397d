"""The glue of "explore freely, release once" for the survival-curve pages: the plan's preview (seeded simulation
noise, no charge, never exported) kept for the session, the release button, the mechanism's option widgets and
the privacy card. The ledger is charged only through ``release_panel.release_button``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from dpsurv_app import downloads, release_panel, session
from dpsurv_app.curve_mechanisms import in_engine
from dpsurv_core.curves.result import CurveResult
from dpsurv_core.curves.time_indexed import parse_shares, parse_sizes
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort, validate
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import options as option_specs
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.ledger import GROUP_LABEL
from dpsurv_core.privacy.release import Plan, Released, charge_phrase
from dpsurv_core.publication.reading import READABLE
from dpsurv_core.report.text import markdown_code, markdown_literal


# ----------------------------------------------------------------------------------------- explore, then release
def cached_preview(plan: Plan, key: str) -> Any:
    """``release_panel.preview(plan)`` (seeded simulation noise: no charge, recorded nowhere), kept for this session
    so that a rerun with the same plan does not compute it again. Never exported."""
    cache = st.session_state.setdefault("preview_cache", {})
    pk = (release_panel.plan_key(plan, key), release_panel.preview_seed(plan))
    if pk not in cache:
        if len(cache) > 24:
            cache.clear()
        cache[pk] = release_panel.preview(plan)
    return cache[pk]


def preview_spread_of(plan: Plan, key: str) -> Any:
    """The plan previewed over PREVIEW_SPREAD_DRAWS draws of simulation noise (free, recorded nowhere, never exported),
    kept for this session like the preview; None when the mechanism cannot draw several at once."""
    from dpsurv_core.privacy.release import PREVIEW_SPREAD_DRAWS

    cache = st.session_state.setdefault("preview_spread_cache", {})
    pk = (release_panel.plan_key(plan, key), release_panel.preview_seed(plan))
    if pk not in cache:
        if len(cache) > 24:
            cache.clear()
        try:
            cache[pk] = release_panel.preview(plan, PREVIEW_SPREAD_DRAWS)
        except DpsurvError:
            cache[pk] = None
    return cache[pk]


def explore_or_release(plan: Plan, key: str, label: str = "Release",
                       disclosures: Callable[[Any], Sequence[Disclosure]] | None = None,
                       reread: Callable[[Released], Any] | None = None) -> tuple[Any, Released | None, str]:
    """The preview caption and the Release button (``release-<key>``) of ``plan``; returns what to show (the released
    result after a click, else the preview), the release (or None) and its label ("released, record N", "record N read
    anew" once the reading options differ from the recorded ones, or "preview"). ``disclosures(preview)``: what the
    release will disclose, read off the preview (a mechanism's disclosures follow from its parameters, not from its
    noise), recorded with the release. ``reread(released)``: the result to show after a release, read from its record
    (:func:`record_curves`), instead of the result as computed."""
    deterministic = bool(getattr(plan.mechanism, "deterministic", False))
    if plan.private and not deterministic and not release_panel.read_from_ledger(plan, key):
        release_panel.another_draw_button(plan, key)  # before the preview is drawn, so a click shows the next one
    preview = cached_preview(plan, key)
    if disclosures is not None:
        plan.disclosures = list(disclosures(preview))
    slot = st.empty()  # the preview's caption, taken away once this plan is released
    with slot.container():
        release_panel.preview_caption(plan)
    inputs = None
    if plan.publish is not None and plan.kind in READABLE:
        try:  # the public inputs its record would hold (they follow from the plan; the preview only names the groups)
            inputs = plan.publish(preview)[1]
        except Exception:  # noqa: BLE001 - no match to look for; the release itself reports any problem
            inputs = None
    rel = release_panel.release_button(plan, key, label, inputs)
    if rel is not None:
        slot.empty()
        shown = rel.result if reread is None else reread(rel)
        if release_panel.read_from_ledger(plan, key):  # a release of this plan made earlier, read again
            return shown, rel, f"released, record {rel.record_id}"
        if rel.entry.command and plan.command and not release_panel.same_command(rel.entry.command, plan.command):
            # the reading options (band type, landmarks, RMST time) moved after the click: the same released numbers
            # read another way, which its record and the report do not hold (release_panel's note says so)
            return shown, rel, f"record {rel.record_id} read anew"
        return shown, rel, f"released, record {rel.record_id}"
    downloads.mark_previews()  # files saved from this page say they hold a preview
    return preview, None, "preview"


def declared_sizes_input(key_prefix: str) -> tuple[int, ...] | None:
    """The time-indexed band's declared group sizes (public numbers, e.g. from the study design); None when blank."""
    text = st.text_input("Declared group size (optional, public)", key=f"{key_prefix}_sample_size",
                         placeholder="e.g. 120 or 120,108",
                         help="The number of patients per group as already published (the study design, a trial "
                              "report), one per group in the legend's order. It is not read off the data. With it "
                              "the band also carries the sampling error; without it the band covers the noise only.")
    try:
        return parse_sizes(text)
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} The band below covers the noise only until this is fixed.",
                 icon=":material/error:")
        return None


def declared_censoring_input(key_prefix: str, sizes: tuple[int, ...] | None) -> tuple[float, ...] | None:
    """The time-indexed band's declared censoring shares (public, e.g. the design's expected share); None when blank
    or when no group size is declared (the share censors the band's simulated cohorts of that size)."""
    text = st.text_input("Declared censoring share (optional, public)", key=f"{key_prefix}_censoring",
                         placeholder="e.g. 0.3 or 30%", disabled=sizes is None,
                         help="The share of patients censored as the study design expects it (or as already "
                              "published), one per group in the legend's order or one for all. It is not read off the "
                              "data. With a declared group size it censors the band's simulated cohorts; without it "
                              "they are uncensored and the band is too narrow late in a censored study.")
    if sizes is None:
        return None
    try:
        return parse_shares(text)
    except DpsurvError as exc:
        st.error(f"{markdown_literal(exc)} The band below treats the cohort as uncensored until this is fixed.",
                 icon=":material/error:")
        return None


def option_widgets(entry: Entry, key_prefix: str, skip: Sequence[str] = ("base_epsilon",)) -> dict[str, Any]:
    """A widget per option the catalogue entry declares (seeded with its defaults), in an expander; their values. Each
    is made from the option's one specification (:data:`dpsurv_core.privacy.options.OPTIONS`), as its flag is."""
    specified = option_specs.widgets(entry.options, skip)
    values: dict[str, Any] = {}
    if not specified:
        return values
    with st.expander(f"Options of {entry.name}", expanded=not entry.formal):
        cols = st.columns(min(4, len(specified)))
        for i, w in enumerate(specified):
            col, key = cols[i % len(cols)], f"{key_prefix}_opt_{w.name}"
            if w.kind == "choice":
                values[w.name] = col.radio(w.label, w.choices, index=w.choices.index(w.value), key=key, help=w.help)
            else:
                values[w.name] = w.read(col.number_input(w.label, w.low, w.high, w.value, w.step, key=key,
                                                         help=w.help))
    return values


def privacy_card(result: CurveResult, plan: Plan, released: Released | None, bands: bool = True) -> None:
    """What the release charges (or charged) and protects, every disclosure (not-DP ones as warnings), and notes
    (``bands`` False: the page draws no bands, so the notes about them are left out)."""
    with st.container(border=True):
        cost = plan.cost
        if released is not None:
            st.markdown(f"**Released as record {released.record_id}**, "
                        f"{markdown_literal(charge_phrase(released.entry.cost, True, released.entry.disclosures))}.")
        else:
            st.markdown(f"**Preview** (not charged, not for publication). A release "
                        f"{markdown_literal(charge_phrase(cost, False, plan.disclosures))}.")
        if cost.protects == GROUP_LABEL:
            st.markdown("**Protects the group label only**: survival times and events are published as they are "
                        "(label-DP, not record-level DP).")
        disclosures = list(result.disclosures)
        for d in disclosures:
            if not d.dp:
                st.warning(f"**Not differentially private** ({d.parameter}): {markdown_literal(d.message)}", icon="⚠️")
        dp_ones = [d for d in disclosures if d.dp]
        if dp_ones:
            st.markdown("**Disclosures** (public parameters read off the data, published as they are):\n"
                        + "\n".join(f"- ℹ️ *{d.parameter}*: {markdown_literal(d.message)}" for d in dp_ones))
        if not disclosures:
            st.caption("Disclosures: none (the horizon, grid and groups were declared on the Data page).")
        if released is not None:
            st.caption("Files saved with 'Figure as' and 'Table as CSV' hold the released numbers only, as the record "
                       "has them; the 'Comparison (confidential)' files add the non-private numbers and say so in "
                       "their name and on the image: they are not for publication.")
        for note in result.notes:
            if bands or "bands" not in note.lower():
                st.caption(markdown_literal(note))
        st.caption("Reproduce this plan on the command line (a new release, charged again): "
                   + markdown_code(plan.command))


def competing_cohort(cohort: Cohort) -> Cohort | None:
    """The cohort with its competing-event types: as mapped, or for a bundled data set that declares them (none for
    a server table kept in an engine: its Data page maps no event type)."""
    if in_engine(cohort):
        return cohort if cohort.has_event_type else None
    if cohort.event_type is not None:
        return cohort
    choice = session.data_choice()
    if not choice.bundled:
        return None
    info = datasets.info(choice.name)
    if not info.event_type:
        return None
    mapping = replace(choice.mapping, event_type=info.event_type,
                      event_type_names=tuple((str(k), v) for k, v in info.event_types.items()))
    comp, _ = validate(choice.frame, mapping)
    if comp is None:
        return None
    comp.name, comp.time_unit = cohort.name, cohort.time_unit
    return comp
