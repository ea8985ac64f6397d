"""Survival curves: non-private vs private Kaplan-Meier, Nelson-Aalen and cumulative incidence."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_core.curves import summary as cs
from dpsurv_core.data.summary import TIME_UNITS, time_factor
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy.noise import ReleaseNoise
from ui import curves_view as cv
from ui import session

st.title("Survival curves")
st.caption("The Kaplan-Meier curve of the cohort next to a differentially private release of it: pick a mechanism "
           "and a privacy budget, and see what the noise does to the curve, the medians and the landmark survival.")
explainer = st.container()

cohort, choice, public = session.analysis_inputs()
unit = cohort.time_unit
group_col = choice.mapping.group if cohort.group is not None else None
names = cv.mechanism_choices(has_group=group_col is not None)
if not names:
    st.error("No private curve mechanism is installed in this copy of dpsurv.")
    st.stop()
comp_cohort = cv.competing_cohort(cohort)

# ------------------------------------------------------------------------------------------ controls
c1, c2, c3 = st.columns([1.3, 1, 1])
with c1:
    mech_name = st.selectbox("Privacy mechanism", names, format_func=lambda n: cv.LABELS.get(n, n), key="sc_mechanism",
                             index=names.index("laplace-counts") if "laplace-counts" in names else 0)
    options: dict = {}
    if mech_name == "time-indexed":
        options["mode"] = st.radio("Epsilon means", ["fixed total", "as published"], horizontal=True, key="sc_ti_mode",
                                   help="Fixed total: you set what the release costs. As published: you set the "
                                        "paper's per-step base epsilon e; the ledger charges the true total.")
    if options.get("mode") == "as published":
        epsilon = st.number_input("Base epsilon e per grid point (the paper's label)", min_value=0.0001, max_value=1.0,
                                  value=0.008, step=0.001, format="%.4f", key="sc_base_eps")
    else:
        epsilon = st.select_slider("Privacy budget epsilon (smaller = more private, noisier)", options=cv.EPSILONS,
                                   value=1.0, key="sc_epsilon")
with c2:
    estimands = [cs.SURVIVAL, cs.HAZARD] + ([cs.INCIDENCE] if comp_cohort is not None and mech_name != "time-indexed"
                                            else [])
    estimand = st.radio("Show", estimands, key="sc_estimand", format_func={
        cs.SURVIVAL: "Survival (Kaplan-Meier)", cs.HAZARD: "Cumulative hazard (Nelson-Aalen)",
        cs.INCIDENCE: "Cumulative incidence (competing risks)"}.get)
    if comp_cohort is None:
        st.caption("Cumulative incidence needs a competing-event type column: map one on the Data page "
                   "(pbc and transplant have one).")
    split = False
    if group_col is not None:
        split = st.checkbox(f"Separate curves for each {group_col}", value=mech_name == "rrr", key="sc_split",
                            disabled=mech_name == "rrr",
                            help="Randomized response only makes sense per group." if mech_name == "rrr" else None)
        split = split or mech_name == "rrr"
with c3:
    layout = st.radio("Layout", ["overlaid", "side by side"], horizontal=True, key="sc_layout")
    band_choice = st.radio("95% confidence bands", ["log-log", "linear", "none"], horizontal=True, key="sc_bands",
                           help="Log-log (the default of R and lifelines) stays inside 0-100%; linear is "
                                "estimate ± 1.96 standard errors.")
    band_kind = None if band_choice == "none" else band_choice

if mech_name == "time-indexed":
    d = cv.option_defaults(mech_name)
    with st.expander("Time-indexed options (arXiv 2412.05164, 2024)", expanded=False):
        o1, o2, o3, o4 = st.columns(4)
        options["alpha"] = o1.number_input("Decay alpha", 0.0, 5.0, float(d.get("alpha", 0.5)), 0.1, key="sc_ti_alpha",
                                           help="Later grid points get less noise: step i spends e(1 + alpha i).")
        options["tau_start"] = o2.number_input("Clip at start (tau start)", 0.0, 1.0, float(d.get("tau_start", 1.0)),
                                               0.05, key="sc_ti_tau0")
        options["tau_end"] = o3.number_input("Clip at end (tau end)", 0.0, 1.0, float(d.get("tau_end", 0.6)), 0.05,
                                             key="sc_ti_tau1")
        options["window"] = int(o4.number_input("Smoothing window (grid points)", 1, 15, int(d.get("window", 5)), 1,
                                                key="sc_ti_window"))
        options["edge_mode"] = st.radio("Smoothing at the edges", ["mean", "as-published"], horizontal=True,
                                        key="sc_ti_edge", help="mean: average of the values in the window; "
                                        "as-published: the paper divides by the full window even at the ends.")

if mech_name == "adaptive-km":
    d = cv.option_defaults(mech_name)
    with st.expander("Adaptive options", expanded=False):
        a1, a2, a3 = st.columns(3)
        share_default = d.get("selection_share")
        auto = share_default is None and a1.checkbox("Automatic share of epsilon for choosing the bins", value=True,
                                                     key="sc_ad_auto", help="The mechanism's own rule for how much "
                                                     "of the budget to spend choosing the bins.")
        if not auto:
            options["selection_share"] = a1.number_input(
                "Share of epsilon spent choosing the bins", 0.0, 0.9, float(share_default or 0.2), 0.05,
                key="sc_ad_share", help="0 keeps the public bins as they are.")
        options["events_per_bin"] = a2.number_input(
            "Merge bins until they hold this many noise scales of events", 0.0, 50.0,
            float(d.get("events_per_bin", 4.0)), 0.5, key="sc_ad_events")
        options["actuarial"] = a3.checkbox("Half of a bin's censorings at risk (life table)",
                                           value=bool(d.get("actuarial", True)), key="sc_ad_actuarial")

competing = estimand == cs.INCIDENCE
work = comp_cohort if competing else cohort
if not split:
    work = replace(work, group=None)

# ------------------------------------------------------------------------------------------ releases
try:
    mechanism = cv.build_mechanism(mech_name, epsilon, options, cohort, public)
    fine, on_grid = cv.exact_results(work, public, competing)
    key = ("curves", cv.data_key(work, public), mech_name, repr(sorted(mechanism.parameters().items())), split,
           competing)
    new = st.button("New release", key="sc_new", help="Draw fresh noise: a new release, charged to the ledger again.")
    release = cv.private_release(
        key, lambda: mechanism.release(work, public, ReleaseNoise(), trials=1, competing=competing), mechanism,
        cohort.name, new)
except DpsurvError as exc:
    st.error(str(exc))
    st.stop()

private_label = "private"
priv = release.curves if release is not None else None
priv_bands = priv is not None and not np.all(np.isnan(priv.lower))
has_counts = release is not None and release.counts is not None
type_labels = list(fine.curves.event_types) if competing else []
horizon = float(public.horizon)

if release is None:
    st.warning("The private release was refused, so no private numbers are shown: raise the budget cap in the "
               "sidebar, lower epsilon, or start a new session.")
else:
    cv.privacy_card(release)
led = session.ledger()
st.caption(f"Ledger: epsilon {led.spent():.3g} spent of the cap {led.cap:g} (protecting the subject). Changing an "
           "input draws and charges a new release; going back to inputs already released shows that release again "
           "at no cost.")

if priv is not None and release.mechanism == "rrr" and "debiased_curves" in release.extra \
        and estimand == cs.SURVIVAL:
    st.plotly_chart(cv.rrr_figure(priv, release.extra["debiased_curves"], fine.curves, unit, horizon, group_col),
                    width="stretch")
    st.caption("Randomized response mixes the group labels, which pulls the groups' curves towards each other "
               "(raw). The mixing probabilities are public, so it can be undone on the counts (de-biased), at no "
               "extra cost.")
else:
    fig = cv.curve_figure(fine.curves, priv, estimand, band_kind, layout, unit, horizon, group_col,
                          private_label=private_label, private_bands=priv_bands, type_labels=type_labels)
    st.plotly_chart(fig, width="stretch")
    if priv is not None and estimand == cs.SURVIVAL and band_kind and not priv_bands:
        st.caption("This mechanism releases the curve only, no counts: it has no confidence band.")

# -------------------------------------------------------------------------------------- number at risk
st.markdown("**Number at risk**")
times = cs.table_times(public.grid)
exact_risk = cs.at_risk_at(on_grid.counts, times)[0]
priv_risk = cs.at_risk_at(release.counts, times)[0] if has_counts else None
if has_counts and release.counts.groups != on_grid.counts.groups:
    priv_risk = None
st.table(cv.at_risk_table(times, exact_risk, priv_risk, on_grid.counts.groups, group_col if split else None, unit,
                          show_private=release is not None), width="stretch")
if release is not None and not has_counts:
    st.caption(f"'{cv.NOT_RELEASED}': this mechanism publishes the curve only, not the counts.")
elif release is not None:
    st.caption(f"Times in {unit}. Private rows are computed from the noisy released counts.")

groups = fine.curves.groups
gname = lambda g: cv.group_name(g, group_col if split else None)  # noqa: E731

# ------------------------------------------------------------------------------------------ median, RMST
col_a, col_b = st.columns(2)
with col_a:
    st.subheader("Median survival (95% CI)")
    m_e = [a[0] for a in fine.curves.median()]
    rows = []
    for gi, g in enumerate(groups):
        row = {"Group": gname(g), f"Non-private ({unit})": cv.fmt_ci_time(m_e[0][gi], m_e[1][gi], m_e[2][gi], unit)}
        if priv is not None:
            m_p = [a[0] for a in priv.median()]
            pi = list(priv.groups).index(g) if g in priv.groups else None
            if pi is None:
                row[f"Private ({unit})"] = "—"
            elif priv_bands:
                row[f"Private ({unit})"] = cv.fmt_ci_time(m_p[0][pi], m_p[1][pi], m_p[2][pi], unit)
            else:
                row[f"Private ({unit})"] = f"{cv.fmt_time(m_p[0][pi], unit)} (no CI: no counts released)"
        rows.append(row)
    st.table(pd.DataFrame(rows), hide_index=True, width="stretch")
    if priv is not None and public.grid.kind == "equal":
        st.caption(f"Private medians are read on the public grid (a point every {cv.fmt_time(public.grid.edges[1] - public.grid.edges[0], unit)} {unit}), "
                   "so they move in steps of that size.")
    if competing:
        st.caption("With competing risks shown, the survival curve counts any event (event-free survival).")
with col_b:
    st.subheader("Restricted mean survival time")
    rmst_h = st.number_input(f"Up to ({unit})", min_value=float(public.grid.edges[1]), max_value=horizon, value=horizon,
                             key=f"sc_rmst_{cohort.name}_{unit}",
                             help="The average time lived without the event up to this horizon: the area under the "
                                  "survival curve.")
    r_e = cs.rmst(fine.curves, rmst_h)[0]
    rows = []
    for gi, g in enumerate(groups):
        row = {"Group": gname(g), f"Non-private ({unit})": cv.fmt_time(r_e[gi], unit)}
        if priv is not None and g in priv.groups:
            r_p = cs.rmst(priv, rmst_h)[0][list(priv.groups).index(g)]
            row[f"Private ({unit})"] = cv.fmt_time(r_p, unit)
            row["Difference"] = cv.fmt_time(r_p - r_e[gi], unit)
        rows.append(row)
    st.table(pd.DataFrame(rows), hide_index=True, width="stretch")

# ------------------------------------------------------------------------------------------ landmarks
st.subheader(f"Landmark {estimand}")
defaults, default_unit = cs.default_landmarks(horizon, unit)
l1, l2 = st.columns([2, 1])
lm_unit = l2.selectbox("Unit of the landmark times", list(TIME_UNITS), index=list(TIME_UNITS).index(default_unit)
                       if default_unit in TIME_UNITS else 0, key=f"sc_lm_unit_{cohort.name}_{unit}")
lm_text = l1.text_input("Landmark times (comma-separated)", value=", ".join(f"{v:g}" for v in defaults),
                        key=f"sc_lm_{cohort.name}_{unit}")
try:
    lm_values = cs.parse_times(lm_text)
    factor = time_factor(lm_unit, unit) if unit in TIME_UNITS else 1.0
    lm_times = np.array(lm_values) * factor
    n_types = len(type_labels) if competing else 1
    lm_e = [cs.landmarks(fine.curves, lm_times, estimand, band_kind or "log-log", k) for k in range(n_types)]
    lm_p = [cs.landmarks(priv, lm_times, estimand, band_kind or "log-log", k) for k in range(n_types)] if priv else None
    pct = estimand != cs.HAZARD

    def cell(lm: cs.Landmarks, gi: int, ti: int, bands_ok: bool) -> str:
        v = lm.value[0, gi, ti]
        text = cv.fmt_pct(v) if pct else f"{v:.3f}"
        if lm.lower is not None and bands_ok:
            text += f" ({cv.fmt_pct(lm.lower[0, gi, ti])} to {cv.fmt_pct(lm.upper[0, gi, ti])})"
        return text

    has_ci = lm_e[0].lower is not None  # survival has Greenwood bands; cumulative incidence/hazard do not here
    exact_col, priv_col = ("Non-private (95% CI)", "Private (95% CI)") if has_ci else ("Non-private", "Private")
    rows = []
    for gi, g in enumerate(groups):
        for k in range(n_types):
            for ti, (v, t) in enumerate(zip(lm_values, lm_times, strict=True)):
                beyond = t > horizon
                row = {"Group": gname(g) + (f": {type_labels[k]}" if competing else ""),
                       "Time": f"{v:g} {lm_unit[:-1] if v == 1 else lm_unit}" + (f" ({cv.fmt_time(t, unit)} {unit})" if lm_unit != unit else ""),
                       exact_col: "beyond the horizon" if beyond else cell(lm_e[k], gi, ti, True)}
                if lm_p is not None and g in priv.groups:
                    pi = list(priv.groups).index(g)
                    row[priv_col] = "beyond the horizon" if beyond else cell(lm_p[k], pi, ti, priv_bands)
                rows.append(row)
    st.table(pd.DataFrame(rows), hide_index=True, width="stretch")
    if any(t > horizon for t in lm_times):
        st.caption(f"Times past the public horizon ({cv.fmt_time(horizon, unit)} {unit}) are not estimated.")
except DpsurvError as exc:
    st.error(str(exc))

# ------------------------------------------------------------------------------------------ errors
if priv is not None:
    st.subheader("How far is the private curve from the non-private one?")
    n_types = len(type_labels) if competing else 1
    rows = []
    for k in range(n_types):
        err_rmse, err_sup = cs.curve_errors(priv, fine.curves, estimand, k)
        for pi, g in enumerate(priv.groups):
            scale, suffix = (100.0, " points") if estimand != cs.HAZARD else (1.0, "")
            rows.append({"Group": gname(g) + (f": {type_labels[k]}" if competing else ""),
                         "RMSE": f"{scale * err_rmse[0, pi]:.2f}{suffix}",
                         "Largest gap (sup-norm)": f"{scale * err_sup[0, pi]:.2f}{suffix}"})
    st.table(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(f"Measured at the {public.grid.points.size} points of the public grid"
               + (" in percentage points of survival." if estimand == cs.SURVIVAL else ".")
               + " These comparisons use the non-private data: they are for the data holder, not for publication.")

# ------------------------------------------------------------------------------------------ explainer
PAPERS = {
    "laplace-counts": "Gondara L. & Wang K., *Differentially Private Survival Function Estimation*",
    "time-indexed": "*A Differentially Private Kaplan-Meier Estimator for Privacy-Preserving Survival Analysis*, "
                    "arXiv 2412.05164, 2024",
    "rrr": "De Faveri F. L., Faggioli G., Ferro N. & Spizzo R., *\"Dead or Alive, we can deny it\". A Differentially "
           "Private Approach to Survival Analysis*, SEBD 2024",
    "adaptive-km": "dpsurv's own design, building on Gondara & Wang",
}
HOW = {
    "laplace-counts": "It counts, on a fixed public time axis, how many patients there are at the start and how many "
                      "die or are censored in each time bin, adds random noise to every count, and draws the "
                      "Kaplan-Meier curve from the noisy counts. One patient changes at most two counts by one, so "
                      "noise of size about 2/epsilon hides any single patient.",
    "time-indexed": "It computes the exact curve at each point of the public time axis, adds random noise to each "
                    "point (less noise later on), then clips, smooths and forces the curve to never go up. Each point "
                    "spends part of the budget, and the parts add up: the ledger charges the true total, which is "
                    "much larger than the per-point epsilon the paper labels its plots with.",
    "rrr": "Each patient's group label is randomly swapped with a known probability before the curves are drawn, so "
           "nobody can be sure which group a patient was in. Survival times and deaths are published as they are: "
           "this protects the group label only, not the patient's outcome.",
    "adaptive-km": "It spends a small part of the budget choosing time bins that hold similar numbers of patients, "
                   "then adds noise to the counts in those bins and tidies the result so it behaves like a survival "
                   "curve.",
}
with explainer.expander("What am I looking at?"):
    st.markdown(f"""
**The Kaplan-Meier curve** shows, at each time, the percentage of patients still alive (or free of the event).
It steps down whenever someone has the event; patients lost to follow-up (*censored*) leave the count without a
step. The grey dashed curve (or the left panel) uses the real data; the solid coloured one is what could be
published with privacy. *Cumulative hazard* (Nelson-Aalen) adds up the risk of the event over time; *cumulative
incidence* shows, when patients can have one of several events (say transplant or death), the percentage who had
each kind by each time.

**Differential privacy** adds carefully sized random noise so that the published curve would look almost the
same whether or not any single patient was in the data. **Epsilon** is the privacy budget: small epsilon (0.1)
means strong privacy and a noisier curve; large epsilon (10) means a curve close to the real one and weaker
privacy. Every release is charged to the session's ledger (left sidebar), and the charges add up.

**This mechanism.** {HOW.get(mech_name, "")} From {PAPERS.get(mech_name, "dpsurv")}.

**The tables.** *Median survival* is the time when the curve crosses 50% ("not reached" if it never does);
*landmark survival* is the percentage alive at chosen times, like 1-year survival; *restricted mean survival
time* is the average time lived without the event up to a horizon. The shaded bands and the numbers in brackets
are 95% confidence intervals. RMSE and the largest gap measure how far the private curve is from the real one.
""")
    if mech_name == "time-indexed":
        st.markdown("**Correction to the paper:** the paper's Theorem 1 sums the per-point costs from i = 0; the exact "
                    "total is e·n·(1 + alpha(n+1)/2). The paper's plots are labelled by the base e, not this total.")
    if mech_name == "rrr":
        st.markdown("**Correction to the slides:** they give eps = log((np + 1 - p)/(n - 1 - np + p)), which "
                    "understates the privacy loss; dpsurv uses eps = ln((kp + 1 - p)/(1 - p)) for k groups.")
