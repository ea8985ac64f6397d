"""Survival curves: non-private vs private Kaplan-Meier, Nelson-Aalen and cumulative incidence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import curves_view as cv
from dpsurv_app import preview_spread, session
from dpsurv_app.downloads import show_figure
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, help_text, terms
from dpsurv_core.cli.km import rmst_curves, rmst_on_grid
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.result import released_at_risk
from dpsurv_core.data.cohort import NO_EVENTS
from dpsurv_core.data.summary import TIME_UNITS, factor_or_one
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.report.text import markdown_literal

guard(__file__)  # before anything is drawn: the page may be reached by its own address

st.title("Survival curves")
st.caption("The Kaplan-Meier curve of the cohort next to a differentially private version of it: pick a mechanism "
           "and a privacy budget, preview what the noise does to the curve, the medians and the landmark survival "
           "(free), and release once you are satisfied (charged).")
explainer_box = st.container()

cohort, choice, public = session.analysis_inputs()
unit = cohort.time_unit
group_col = choice.mapping.group if cv.has_groups(cohort) else None
names = cv.mechanism_choices("km", has_group=group_col is not None)
engine_left_out: list[str] = []
if cv.in_engine(cohort):  # a server table kept in DuckDB: the mechanisms that run from its counts, as the CLI does
    names, engine_left_out = cv.engine_mechanisms(names)
comp_cohort = cv.competing_cohort(cohort)
if cohort.n_events == 0:  # every subject censored: analysed as R's survfit does (S = 1, no quantile reached)
    st.info(NO_EVENTS)

# ------------------------------------------------------------------------------------------ controls
c1, c2, c3 = st.columns([1.3, 1, 1])
with c1:
    mech_name = st.selectbox("Privacy mechanism", names, format_func=cv.mechanism_name, key="sc_mechanism")
    entry = cv.mechanism_entry(mech_name)
    options: dict = {}
    as_published = False
    if not entry.formal:  # disclosure control: no epsilon, no formal guarantee
        st.caption("**No formal guarantee**: this disclosure-control method has no epsilon and nothing bounds what a "
                   "release reveals about a patient. Its settings are under *Options* below.")
    elif "base_epsilon" in entry.options:
        as_published = st.radio("Epsilon means", ["fixed total", "as published"], horizontal=True, key="sc_eps_mode",
                                help="Fixed total: you set what the release costs. As published: you set the "
                                     "paper's per-step base epsilon e; the ledger charges the true total.") \
            == "as published"
    if not entry.formal:
        epsilon = None
    elif as_published:
        options["base_epsilon"] = st.number_input("Base epsilon e per grid point (the paper's label)",
                                                  min_value=0.0001, max_value=1.0, value=0.008, step=0.001,
                                                  format="%.4f", key="sc_base_eps")
        epsilon = None
    else:
        epsilon = st.select_slider("Privacy budget epsilon (smaller = more private, noisier)", options=cv.EPSILONS,
                                   value=1.0, key="sc_epsilon", help=help_text("epsilon"))
    if "sample_size" in entry.options:
        options["sample_size"] = cv.declared_sizes_input("sc")
    if "censoring" in entry.options:
        options["censoring"] = cv.declared_censoring_input("sc", options.get("sample_size"))
with c2:
    estimands = [cs.SURVIVAL, cs.HAZARD] + ([cs.INCIDENCE] if comp_cohort is not None and cv.releases_counts(entry)
                                            else [])
    estimand = st.radio("Show", estimands, key="sc_estimand", format_func={
        cs.SURVIVAL: "Survival (Kaplan-Meier)", cs.HAZARD: "Cumulative hazard (Nelson-Aalen)",
        cs.INCIDENCE: "Cumulative incidence (competing risks)"}.get)
    if comp_cohort is None and not cv.in_engine(cohort):
        st.caption("Cumulative incidence needs a competing-event type column: map one on the Data page "
                   "(pbc and transplant have one).")
    split = False
    label_only = cv.label_only(entry)
    if group_col is not None:
        split = st.checkbox(f"Separate curves for each {markdown_literal(group_col)}", value=label_only, key="sc_split",
                            disabled=label_only,
                            help="Randomized response only makes sense per group." if label_only else None)
        split = split or label_only
with c3:
    layout = st.radio("Layout", ["overlaid", "side by side"], horizontal=True, key="sc_layout")
    conf_type = st.selectbox("Confidence band", list(cv.CONF_TYPES), index=list(cv.CONF_TYPES).index("log"),
                             format_func=cv.CONF_TYPE_NAMES.__getitem__, key="sc_conf_type",
                             help="Pointwise 95% interval as R survfit's conf.type: log is R's default, log-log "
                                  "lifelines'; plain is estimate ± 1.96 standard errors. Used for the bands, the "
                                  "medians' and the landmarks' intervals.")
    band_kind = conf_type

options.update(cv.option_widgets(entry, "sc"))
if cv.in_engine(cohort):
    st.caption(f"{cv.engine_note(engine_left_out)} {cv.ENGINE_BASELINE}")

competing = estimand == cs.INCIDENCE
work = comp_cohort if competing and comp_cohort is not None else cohort  # competing: offered with one only
if not split:
    work = (session.engine_cohort(replace(work.mapping, group=None)) if cv.in_engine(work)
            else replace(work, group=None))

# the RMST time and the landmark times the widgets further down hold (their keys and defaults), read here so that a
# release's record keeps the numbers the page prints beside it
horizon = float(public.horizon)
RMST_KEY = f"sc_rmst_{cohort.name}_{unit}"
LM_DEFAULTS, LM_DEFAULT_UNIT = cs.default_landmarks(  # none before the public grid's first point
    horizon, unit, 0.0 if public.grid.kind == "event-times" else float(public.grid.points[0]))
LM_UNIT_KEY = f"sc_lm_unit_{cohort.name}_{unit}"


def landmark_keys(lm_unit: str) -> tuple[str, str, str]:
    """(the typed times' key, their default text, the grid picker's key) in ``lm_unit``: another unit has its own
    defaults, not a reread (1, 2, 3 years become 365.25, 730.5, 1,095.75 days, not 1, 2, 3 days)."""
    to_lm = factor_or_one(LM_DEFAULT_UNIT, lm_unit)
    return (f"sc_lm_{cohort.name}_{unit}_{lm_unit}", ", ".join(f"{v * to_lm:.6g}" for v in LM_DEFAULTS),
            f"sc_lm_pick_{cohort.name}_{unit}_{lm_unit}")


def asked_now() -> tuple[float, list[float]]:
    """The RMST time and the landmark times (in the page's unit) the widgets hold now (their defaults before they
    are first drawn); no landmarks while the typed text cannot be read."""
    ss = st.session_state
    lm_unit = ss.get(LM_UNIT_KEY, LM_DEFAULT_UNIT if LM_DEFAULT_UNIT in TIME_UNITS else TIME_UNITS[0])
    text_key, default_text, pick_key = landmark_keys(lm_unit)
    try:
        times = cs.landmark_request(ss.get(text_key, default_text), ss.get(pick_key) or [], public.grid.points, unit,
                                    lm_unit)[1]
    except DpsurvError:
        times = np.array([])
    return float(ss.get(RMST_KEY, horizon)), [float(t) for t in times]


# ------------------------------------------------------------------------------------------ preview or release
try:
    fine, on_grid = cv.exact_results(work, public, competing)
    rmst_asked, lm_asked = asked_now()
    command = {**cv.data_options(choice, group=group_col if split else None), **cv.timefix_option(choice),
               "mechanism": mech_name,
               "epsilon": epsilon, **cv.grid_options(choice, public),
               "estimand": "cumulative-incidence" if competing else None,  # the hazard is read off the same release
               **options, **cv.reading_options(choice, conf_type, lm_asked, rmst_asked)}
    # the record keeps the readings the page prints beside the release (band type, landmarks, RMST time)
    plan = cv.curve_plan(entry, epsilon, work, public, "km", command, mechanism_options=options, competing=competing,
                         group_column=group_col if split else None,
                         reading={"conf_type": conf_type, "time_unit": unit, "landmarks": lm_asked or None,
                                  "rmst": rmst_asked})
    result, released, private_label = cv.explore_or_release(plan, "curves", "Release these curves",
                                                             disclosures=lambda r: r.disclosures,
                                                             reread=cv.record_curves)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()

for note in fine.notes:  # a table kept on the server: how its non-private baseline was counted, when it differs
    st.caption(markdown_literal(note))
cv.empty_groups_warning(on_grid, group_col if split else None)
priv = result.curves
read = cv.reading_curves(result)  # the curves the numbers are read from (rrr: the de-biased ones)
debiased = "debiased_curves" in result.extra
priv_bands = not np.all(np.isnan(read.lower))
noise_band = cv.noise_in_band(result)
inverted_band = noise_band and bool(np.all(np.isnan(read.greenwood)))  # time-indexed: no variance, no conf.type
coarse = cv.read_on_grid(result, public)
has_counts = result.counts is not None
type_labels = list(fine.curves.event_types) if competing else []
Private = private_label[0].upper() + private_label[1:]

cv.privacy_card(result, plan, released)
st.caption("Moving a setting redraws the preview at no cost; only the Release button charges the ledger. The "
           "budget of this data set is in the sidebar and on the Ledger and report page. The non-private curve and "
           "columns are the exact numbers (no noise: not private), shown to the data holder for comparison only.")

# the figure draws the non-private curve beside the private one: its files are marked confidential, and after a
# release the "Figure" buttons save the released curves alone
if debiased and estimand == cs.SURVIVAL:
    show_figure(cv.rrr_figure(priv, result.extra["debiased_curves"], fine.curves, unit, horizon, group_col,
                              conf_type, private_label=private_label), f"survival-{cohort.name}-{mech_name}", "sc_fig",
                publishable=None if released is None else cv.rrr_figure(
                    priv, result.extra["debiased_curves"], None, unit, horizon, group_col, conf_type,
                    private_label=private_label),
                confidential=True, width="stretch")
    st.caption(f"Solid: {private_label}. Randomized response mixes the group labels, which pulls the groups' curves "
               "towards each other (raw). The mixing probabilities are public, so it can be undone on the counts "
               f"(de-biased), at no extra cost. Shaded (de-biased): {cv.band_caption(result, conf_type)}.")
else:
    # rrr: the hazard and the incidence are drawn from the de-biased curves, as the tables read them
    def figure(exact):
        return cv.curve_figure(exact, read, estimand, band_kind, layout, unit, horizon, group_col,
                               private_label=private_label + (" (de-biased)" if debiased else ""),
                               private_bands=priv_bands, type_labels=type_labels,
                               private_noise_band=noise_band,
                               private_band_kind="inverted from its noise law" if inverted_band else None)

    show_figure(figure(fine.curves), f"{estimand}-{cohort.name}-{mech_name}", "sc_fig",
                publishable=None if released is None else figure(None), confidential=True, width="stretch")
    if estimand == cs.SURVIVAL:
        st.caption(f"Shaded: pointwise 95% confidence band of type {conf_type} (R survfit conf.type = \"{conf_type}\"). "
                   f"{Private}: {cv.band_caption(result, conf_type)}.")
    elif estimand == cs.INCIDENCE:
        st.caption(cv.incidence_caption(read, conf_type, Private, exact_shaded=layout == "side by side"))
    elif estimand == cs.HAZARD:
        shaded = "Shaded" + (" (non-private: side by side only)" if layout != "side by side" else "")
        st.caption(f"{shaded}: pointwise 95% band of type {conf_type} on the cumulative hazard; non-private from the "
                   "Nelson-Aalen variance (R's plot.survfit with cumhaz = TRUE), "
                   + (f"{private_label}: -log of its survival band ({cv.band_caption(result, conf_type)})"
                      if priv_bands else f"{private_label}: none (the mechanism releases no band)")
                   + ". No band is drawn where the survival band reaches 0 (no upper limit on the hazard) or nobody "
                   "is left at risk."
                   + (" R applies this type to the cumulative hazard as if it were a probability, so once it passes 1 "
                      "the non-private hazard has no interval (R's NA), while the private band, read from survival, "
                      "still has one." if conf_type in ("log-log", "logit", "arcsin") else ""))
for note in cv.figure_notes(fine.curves, read, estimand, estimand in (cs.SURVIVAL, cs.INCIDENCE) and bool(band_kind), unit,
                            group_col if split else None):
    st.caption(markdown_literal(note))

# -------------------------------------------------------------------------------------- number at risk
st.markdown("**Number at risk**")
times = cs.table_times(public.grid)
grid_counts = cv.counts_of_exact(on_grid)
exact_risk = cv.exact_at_risk(work, grid_counts, times)
priv_risk = released_at_risk(result, times, grid_counts.groups)
cv.comparison_table(cv.at_risk_table(times, exact_risk, priv_risk, grid_counts.groups, group_col if split else None,
                                    unit, private_label=private_label), f"number-at-risk-{cohort.name}", "sc_risk",
                    released, index=True)
if not has_counts:
    st.caption(f"'{cv.NOT_RELEASED}': this mechanism publishes the curve only, not the counts.")
else:
    st.caption(f"Times in {unit}. The rows marked '{private_label}' are computed from the "
               + ("de-biased " if debiased else "") + "released counts, rounded to whole patients, never below zero "
               "and never rising over time (free post-processing of the release).")
    suppressed = any(isinstance(v, str) and v.startswith("<") for row in result.extra.get("table", []) or []
                     for v in row.values())
    if suppressed:
        st.caption(f"Suppressed cells (\"<k\" in the released table) count as 0 here, so the {private_label} number "
                   "at risk does not fall for the events and censorings they hide and overstates it from the first "
                   "such cell on.")

groups = fine.curves.groups
gname = lambda g: cv.group_name(g, group_col if split else None)  # noqa: E731

# ------------------------------------------------------------------------------------------ median, RMST
col_a, col_b = st.columns(2)
with col_a:
    st.subheader("Median survival (95% CI)")
    # the non-private curve up to the public horizon too: a median after it is 'not reached' in both columns
    q_e = {p: [a[0] for a in v] for p, v in cv.quantiles(fine.curves.up_to(horizon), conf_type).items()}
    q_p = {p: [a[0] for a in v] for p, v in cv.quantiles(read, conf_type, noise_band, coarse).items()}
    rows = []
    for gi, g in enumerate(groups):
        m_e = q_e[0.5]
        row = {"Group": gname(g), f"Non-private ({unit})": cv.fmt_ci_time(m_e[0][gi], m_e[1][gi], m_e[2][gi], unit)}
        pi = list(read.groups).index(g) if g in read.groups else None
        m_p = q_p[0.5]
        if pi is None:
            row[f"{Private} ({unit})"] = "—"
        elif priv_bands and cv.uninformative(m_p[1][pi], m_p[2][pi], public):
            row[f"{Private} ({unit})"] = (f"{cv.fmt_time(m_p[0][pi], unit)} (no CI: the band allows anything from the "
                                          "start to not reached)")
        elif priv_bands:
            row[f"{Private} ({unit})"] = cv.fmt_ci_time(m_p[0][pi], m_p[1][pi], m_p[2][pi], unit)
        else:
            row[f"{Private} ({unit})"] = f"{cv.fmt_time(m_p[0][pi], unit)} (no CI)"
        row["Quartiles 25%, 75% non-private"] = ", ".join(cv.fmt_time(q_e[p][0][gi], unit) for p in (0.25, 0.75))
        row[f"Quartiles 25%, 75% {private_label}"] = "—" if pi is None else ", ".join(
            cv.fmt_time(q_p[p][0][pi], unit) for p in (0.25, 0.75))
        rows.append(row)
    cv.comparison_table(pd.DataFrame(rows), f"median-survival-{cohort.name}", "sc_median", released)
    st.caption(f"Medians and quartiles by R's rule (quantile.survfit): the first time the curve is at or below "
               f"50% (25%, 75% of patients had the event: the curve at 75%, 25%), the midpoint where it is flat at "
               f"exactly that value; the median's 95% CI is read off the {conf_type} band the same way.")
    if public.grid.kind == "equal":
        st.caption(f"Private medians are read on the public grid (a point every {cv.fmt_time(public.grid.edges[1] - public.grid.edges[0], unit)} {unit}), "
                   "so they move in steps of that size.")
    if competing:
        st.caption("With competing risks shown, the survival curve counts any event (event-free survival).")
    if released is None:
        preview_spread.curve_spread_panel(plan, "curves", unit, coarse, gname)
with col_b:
    st.subheader("Restricted mean survival time")
    rmst_h = st.number_input(f"Up to ({unit})", min_value=float(public.grid.edges[1]), max_value=horizon, value=horizon,
                             key=RMST_KEY,
                             help="The average time lived without the event up to this horizon: the area under the "
                                  "survival curve.")
    r_e, r_e_lo, r_e_up = cv.rmst_with_ci(fine.curves, rmst_h)
    r_p, r_p_lo, r_p_up = cv.rmst_with_ci(rmst_curves(result), rmst_h, rmst_on_grid(result, public))
    rows = []
    for gi, g in enumerate(groups):
        row = {"Group": gname(g), f"Non-private ({unit})": cv.fmt_time(r_e[gi], unit),
               "Non-private 95% CI": cv.fmt_interval(r_e_lo[gi], r_e_up[gi], unit)}
        if g in read.groups:
            pi = list(read.groups).index(g)
            row[f"{Private} ({unit})"] = cv.fmt_time(r_p[pi], unit)
            row[f"{Private} 95% CI"] = cv.fmt_interval(r_p_lo[pi], r_p_up[pi], unit)
            # the error of the private RMST, not a difference between groups
            row[f"{Private} minus non-private ({unit})"] = cv.fmt_time(r_p[pi] - r_e[gi], unit, difference=True)
        rows.append(row)
    cv.comparison_table(pd.DataFrame(rows), f"rmst-{cohort.name}", "sc_rmst", released)
    st.caption("Computed to the time asked (the area under the curve needs no grid point there"
               + ("; the private curve is known at the grid points only and is read linearly between them"
                  if rmst_on_grid(result, public) else "") + "). "
               + ("The private interval carries the noise." if noise_band else ""))

# ------------------------------------------------------------------------------------------ landmarks
st.subheader(f"Landmark {estimand}")
l1, l2 = st.columns([2, 1])
lm_unit = l2.selectbox("Unit of the landmark times", list(TIME_UNITS), index=list(TIME_UNITS).index(LM_DEFAULT_UNIT)
                       if LM_DEFAULT_UNIT in TIME_UNITS else 0, key=LM_UNIT_KEY)
lm_factor = factor_or_one(unit, lm_unit)
grid_offer = ", ".join(f"{t * lm_factor:.4g}" for t in public.grid.points)
lm_text_key, lm_default_text, lm_pick_key = landmark_keys(lm_unit)
lm_text = l1.text_input("Landmark times (comma-separated)", value=lm_default_text, key=lm_text_key,
                        help=f"The public grid's times, in {lm_unit}: {grid_offer}. A time between them is read at "
                             "the last grid time before it.")
grid_pick = l1.multiselect(f"Or pick public grid times ({lm_unit}), read exactly where asked",
                           [float(f"{t * lm_factor:.6g}") for t in public.grid.points], key=lm_pick_key,
                           help="These replace the typed times: on a grid time the private curve is read at the time "
                                "itself.")
st.caption(f"Times of the public grid ({lm_unit}): {grid_offer}. The private curve is read on this grid: a time "
           "between grid times is read at the grid time before it, and the table says which.")
lm_used = lm_times = np.array([])
try:
    lm_values, lm_times = cs.landmark_request(lm_text, grid_pick, public.grid.points, unit, lm_unit)
    on_event_grid = public.grid.kind == "event-times"
    lm_used = np.array(cv.landmark_times_used(priv, lm_times, on_event_grid))  # where the private curve is read
    n_types = len(type_labels) if competing else 1
    survival_lm = estimand == cs.SURVIVAL
    if survival_lm:
        lm_se = cv.survival_landmarks(fine.curves, lm_used, conf_type, True)
        lm_sp = cv.survival_landmarks(read, lm_used, conf_type, on_event_grid, noise_band)
    else:  # the hazard or the incidence, with the limits km prints (read from the de-biased curves for rrr)
        lm_e = [cv.estimand_landmarks(fine.curves, lm_used, estimand, k, conf_type) for k in range(n_types)]
        lm_p = [cv.estimand_landmarks(read, lm_used, estimand, k, conf_type, noise_band) for k in range(n_types)]
    pct = estimand != cs.HAZARD

    def cell(g: str, gi: int, k: int, ti: int, private: bool) -> str:
        if survival_lm:
            e = (lm_sp if private else lm_se)[(g, ti)]
            text = cv.fmt_pct(e["survival"])
            if e["lower"] is not None and (priv_bands or not private):
                text += f" ({cv.fmt_pct(e['lower'])} to {cv.fmt_pct(e['upper'])})"
            elif e["lower"] is None and (priv_bands or not private):
                text += " (no interval)"
            return text
        v, lo, up = (a[gi, ti] for a in (lm_p if private else lm_e)[k])
        show = (lambda x: cv.fmt_pct(x)) if pct else (lambda x: f"{x:.3f}")  # noqa: E731
        if np.isfinite(lo) and np.isfinite(up):
            return f"{show(v)} ({show(lo)} to {show(up)})"
        if np.isfinite(lo) and up == np.inf:  # the survival band reaches 0: no upper limit on the hazard
            return f"{show(v)} ({show(lo)} to no upper limit)"
        return f"{show(v)} (no interval)"

    exact_col, priv_col = "Non-private (95% CI)", f"{Private} (95% CI)"
    rows = []
    for gi, g in enumerate(groups):
        for k in range(n_types):
            for ti, (v, t, used) in enumerate(zip(lm_values, lm_times, lm_used, strict=True)):
                beyond = t > horizon
                asked = f"{v:g} {lm_unit[:-1] if v == 1 else lm_unit}"
                if abs(used - t) > 1e-9 and not beyond:
                    when = f"{asked}, read at {cv.fmt_time(used, unit)} {unit}"
                else:
                    when = asked + (f" ({cv.fmt_time(t, unit)} {unit})" if lm_unit != unit else "")
                row = {"Group": gname(g) + (f": {type_labels[k]}" if competing else ""), "Time": when,
                       exact_col: "beyond the horizon" if beyond else cell(g, gi, k, ti, False)}
                if g in read.groups:
                    pi = list(read.groups).index(g)
                    row[priv_col] = "beyond the horizon" if beyond else cell(g, pi, k, ti, True)
                rows.append(row)
    cv.comparison_table(pd.DataFrame(rows), f"landmark-{estimand}-{cohort.name}", "sc_landmarks", released)
    if np.any(np.abs(lm_used - lm_times) > 1e-9):
        st.caption("A time between grid times is read at the grid time before it, for both columns, so that they "
                   "compare the same time.")
    if inverted_band:
        st.caption("Non-private: 95% CI of type " + conf_type + f" (R survfit conf.type). {Private}: "
                   + cv.band_caption(result, conf_type) + ".")
    else:
        st.caption(f"95% CI of type {conf_type} (R survfit conf.type)"
                   + ("; the non-private cumulative hazard's from its Nelson-Aalen variance (as R draws it), the "
                      "private one's -log of the survival band" if estimand == cs.HAZARD else "")
                   + ("; the private interval carries the noise." if noise_band else "."))
    if any(t > horizon for t in lm_times):
        st.caption(f"Times past the public horizon ({cv.fmt_time(horizon, unit)} {unit}) are not estimated.")
    first = float(public.grid.points[0])
    if not on_event_grid and any(t < first for t in lm_times):
        st.caption(f"Times before the first grid time ({cv.fmt_time(first, unit)} {unit}) are read at time 0, where "
                   "survival is 100% by definition: they are not estimates; choose a later time or a finer grid.")
except DpsurvError as exc:
    st.error(markdown_literal(exc))

# ------------------------------------------------------------------------------------------ readability
warn_at = list(lm_times) if estimand == cs.SURVIVAL and len(lm_times) else None  # as asked, as the record names them
warnings = cv.readability_warnings(result, conf_type, warn_at, coarse, unit, gname)
if warnings:
    st.subheader("Can these private numbers be read?")
    for sentence in warnings:  # they name the groups by their labels
        st.warning(markdown_literal(sentence))

# ------------------------------------------------------------------------------------------ errors
st.subheader(f"How far is the {private_label} curve from the non-private one?")
n_types = len(type_labels) if competing else 1
rows = []
for k in range(n_types):
    err_rmse, err_sup = cs.curve_errors(read, fine.curves, estimand, k)
    for pi, g in enumerate(read.groups):
        scale, suffix = (100.0, " points") if estimand != cs.HAZARD else (1.0, "")
        rows.append({"Group": gname(g) + (f": {type_labels[k]}" if competing else ""),
                     "RMSE": f"{scale * err_rmse[0, pi]:.2f}{suffix}",
                     "Largest gap (sup-norm)": f"{scale * err_sup[0, pi]:.2f}{suffix}"})
cv.show_table(pd.DataFrame(rows), f"curve-errors-{cohort.name}", "sc_errors", confidential=True)  # comparison only
st.caption(f"Measured at the {public.grid.points.size} points of the public grid"
           + (" on the de-biased curves" if debiased else "")
           + (" in percentage points of survival." if estimand == cs.SURVIVAL else ".")
           + " These comparisons use the non-private data: they are for the data holder, not for publication.")

# ------------------------------------------------------------------------------------------ explainer
# corrections dpsurv makes to a paper, by the paper (the catalogue names each mechanism's source)
CORRECTIONS = {
    catalogue.TIME_INDEXED: "**Correction to the paper:** the paper's Theorem 1 sums the per-point costs from i = 0; "
                            "the exact total is e·n·(1 + alpha(n+1)/2). The paper's plots are labelled by the base e, "
                            "not this total.",
    catalogue.DE_FAVERI: "**Correction to the slides:** they give eps = log((np + 1 - p)/(n - 1 - np + p)), which "
                         "understates the privacy loss; dpsurv uses eps = ln((kp + 1 - p)/(1 - p)) for k groups.",
}
if entry.formal:
    this = (f"**This mechanism: {entry.name}.** {entry.summary} Its epsilon protects {entry.protects} (neighbours: "
            f"{entry.neighbouring}). From {entry.paper}.")
else:
    this = (f"**This method: {entry.name}.** {entry.summary} It is statistical disclosure control: no epsilon and no "
            f"formal guarantee (nothing bounds what a release reveals about one patient). From {entry.paper}.")
text = f"""
**The Kaplan-Meier curve** shows, at each time, the percentage of patients still alive (or free of the event).
It steps down whenever someone has the event; patients lost to follow-up (*censored*) leave the count without a
step. The grey dashed curve (or the left panel) uses the real data; the solid coloured one is what could be
published with privacy. *Cumulative hazard* (Nelson-Aalen) adds up the risk of the event over time; *cumulative
incidence* shows, when patients can have one of several events (say transplant or death), the percentage who had
each kind by each time.

**Differential privacy** adds carefully sized random noise so that the published curve would look almost the
same whether or not any single patient was in the data. **Epsilon** is the privacy budget: small epsilon (0.1)
means strong privacy and a noisier curve; large epsilon (10) means a curve close to the real one and weaker
privacy. What you see while you choose is a *preview*: a draw with simulation noise that costs nothing and is
never exported. Only the Release button publishes: it draws fresh noise and charges the data set's ledger (left
sidebar); the charges add up, and each release gets a record id.

{this}

**The tables.** *Median survival* is the time when the curve crosses 50% ("not reached" if it never does);
*landmark survival* is the percentage alive at chosen times, like 1-year survival; *restricted mean survival
time* is the average time lived without the event up to a horizon. The shaded bands and the numbers in brackets
are 95% confidence intervals. RMSE and the largest gap measure how far the private curve is from the real one.
"""
if entry.paper in CORRECTIONS:
    text += "\n\n" + CORRECTIONS[entry.paper]
with explainer_box:
    explainer("curves", text)
    terms("Kaplan-Meier", "censored", "number at risk", "Greenwood", "confidence band", "life-table rule",
          "median survival", "RMST", "epsilon", "add/remove neighbours", "change-one-label", "preview", "release")
