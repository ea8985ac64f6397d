"""Group comparison: log-rank tests between groups, private next to non-private, with significance flips."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.errors import StreamlitAPIException

from dpsurv_app import curves_view as cv
from dpsurv_app import logrank_spread, session
from dpsurv_app.downloads import show_figure
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, help_text, terms
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.hazard_ratio import METHOD as HR_METHOD
from dpsurv_core.curves.hazard_ratio import hazard_ratios
from dpsurv_core.curves.result import released_at_risk
from dpsurv_core.curves.uncertainty import at_risk_notes
from dpsurv_core.data.cohort import validate
from dpsurv_core.data.public import Disclosure
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.report.text import format_ratio_ci, markdown_literal

guard(__file__)  # before anything is drawn: the page may be reached by its own address

st.title("Group comparison")
st.caption("Do the groups survive differently? The log-rank test on the real data next to the same test on a "
           "private release, and whether the conclusion at the 5% level survives the noise.")
explainer_box = st.container()

cohort, choice, public = session.analysis_inputs()
unit = cohort.time_unit

group_col = choice.mapping.group if cv.has_groups(cohort) else None
group_spec = group_col  # the CLI's --group: the column, or COL:VALUE / COL:median for a numeric split
extra_disclosures: list[Disclosure] = []
if group_col is None:
    st.info("No group column is mapped for this data set, so there are no groups to compare. Choose a group column "
            "(for example a treatment arm) on the Data page.", icon="ℹ️")
    try:
        st.page_link("pages/1_Data.py", label="Go to the Data page", icon="➡️")
    except StreamlitAPIException:  # the page on its own (outside app.py's navigation) has no link targets
        pass
    from dpsurv_core.data import grouping

    if cv.in_engine(cohort):  # a server table kept in DuckDB: its rows are not read, so no split on a column
        st.stop()
    frame = choice.frame
    used = {choice.mapping.time, choice.mapping.event, choice.mapping.id}
    numeric = [c for c in frame.columns if c not in used and pd.api.types.is_numeric_dtype(frame[c])
               and frame[c].nunique() > 2]
    if not numeric:
        st.stop()
    st.markdown("**Or split the patients on a numeric column:**")
    n1, n2, n3 = st.columns(3)
    split_col = n1.selectbox("Numeric column", [None, *numeric], key="gc_split_col",
                             format_func=lambda c: "(choose a column)" if c is None else str(c))
    how = n2.radio("Cut at", ["a value I declare", "the data's median (not DP)"], key="gc_split_how",
                   help="A declared cut is public. The median is read off the data and published exactly: it is "
                        "listed as a disclosure next to the release.")
    cut = None
    if how == "a value I declare":
        cut = n3.number_input("Cut value (patients at or below it form the first group)", value=None,
                              placeholder="for example 60", key="gc_split_cut")
    if split_col is None or (how == "a value I declare" and cut is None):
        st.stop()
    try:
        mapped, _ = validate(frame, replace(choice.mapping, covariates=(split_col,)))
        if mapped is None:
            raise DpsurvError(f"Column {split_col!r} cannot be used to split the patients: choose another column.")
        mapped.name, mapped.time_unit = cohort.name, unit
        split = grouping.NumericSplit(str(split_col), None if cut is None else float(cut))
        cohort, cats, extra_disclosures = grouping.split_cohort(mapped, split)
        public = replace(public, group_categories=cats, categories_from_data=False)
        group_col = None
        group_spec = f"{split_col}:{'median' if cut is None else f'{float(cut):.10g}'}"
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        st.stop()

names = cv.mechanism_choices("logrank", has_group=True)
engine_left_out: list[str] = []
if cv.in_engine(cohort):  # a server table kept in DuckDB: the mechanisms that run from its counts, as the CLI does
    names, engine_left_out = cv.engine_mechanisms(names)
c1, c2 = st.columns([1.3, 1])
with c1:
    mech_name = st.selectbox("Privacy mechanism", names, format_func=cv.mechanism_name, key="gc_mechanism")
    entry = cv.mechanism_entry(mech_name)
epsilon: float | None
with c2:
    if entry.formal:
        epsilon = st.select_slider("Privacy budget epsilon (smaller = more private, noisier)", options=cv.EPSILONS,
                                   value=1.0, key="gc_epsilon", help=help_text("epsilon"))
    else:  # disclosure control: no epsilon, no formal guarantee
        epsilon = None
        st.caption("**No formal guarantee**: this disclosure-control method has no epsilon and nothing bounds what a "
                   "release reveals about a patient. Its settings are under *Options* below.")
sdc_options = cv.option_widgets(entry, "gc") if not entry.formal else {}
if cv.in_engine(cohort):
    st.caption(f"{cv.engine_note(engine_left_out)} {cv.ENGINE_BASELINE} The non-private log-rank tests are computed "
               "from the same counts.")
no_counts = cv.without_counts("km")
if no_counts:
    st.caption(f"Not offered here: {' and '.join(no_counts)}. It publishes only the smoothed curve of each group, not "
               "the numbers at risk and the events at each time that the test is built from.")

try:
    fine, on_grid = cv.exact_results(cohort, public)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
for note in fine.notes:  # a table kept on the server: how its non-private baseline was counted, when it differs
    st.caption(markdown_literal(note))
cv.empty_groups_warning(on_grid, group_col)
groups = cv.counts_of_exact(fine).groups
if len(groups) < 2:
    st.warning(f"Only one group ({markdown_literal(groups[0])}) is present: choose a column with two or more groups on the Data page.")
    st.stop()

# ------------------------------------------------------------------------------------------ preview or release
try:
    command = {**cv.data_options(choice, group=group_spec), **cv.timefix_option(choice), "mechanism": mech_name,
               "epsilon": epsilon,
               **cv.grid_options(choice, public), **sdc_options}
    # a log-rank record: its reader adds the calibrated tests (as many null draws as the page computes)
    plan = cv.curve_plan(entry, epsilon, cohort, public, "logrank", command, mechanism_options=sdc_options,
                         analysis="log-rank tests", extra=extra_disclosures, group_column=group_col,
                         reading={"time_unit": unit}, tests={"null_draws": None})
    result, released, private_label = cv.explore_or_release(plan, "logrank", "Release these tests",
                                                             disclosures=lambda r: r.disclosures,
                                                             reread=cv.record_curves)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
mechanism = cv.reading_mechanism(plan, released)
cv.privacy_card(result, plan, released, bands=False)

# ------------------------------------------------------------------------------------------ curves
horizon = float(public.horizon)
# the figure draws the non-private curves beside the private ones: its files are marked confidential, and after a
# release the "Figure" buttons save the released curves alone
if "debiased_curves" in result.extra:
    show_figure(cv.rrr_figure(result.curves, result.extra["debiased_curves"], fine.curves, unit, horizon,
                              group_col, private_label=private_label), f"group-curves-{cohort.name}-{mech_name}",
                "gc_fig", publishable=None if released is None else cv.rrr_figure(
                    result.curves, result.extra["debiased_curves"], None, unit, horizon, group_col,
                    private_label=private_label), confidential=True, width="stretch")
    st.caption(f"Left: Kaplan-Meier curves of the *reported* groups ({private_label}); randomly swapped labels pull "
               "them together. Right: the mixing undone on the counts (free post-processing). Dashed: non-private. "
               "No bands here: the Survival curves page draws the de-biased curves' intervals.")
else:
    show_figure(cv.curve_figure(fine.curves, result.curves, cs.SURVIVAL, None, "overlaid", unit, horizon,
                                group_col, private_label=private_label), f"group-curves-{cohort.name}-{mech_name}",
                "gc_fig", publishable=None if released is None else cv.curve_figure(
                    None, result.curves, cs.SURVIVAL, None, "overlaid", unit, horizon, group_col,
                    private_label=private_label), confidential=True, width="stretch")
    st.caption(f"Dashed: non-private; solid: {private_label}. No bands here: this page tests whether the groups "
               "differ; the Survival curves page draws each curve's interval.")
for note in cv.figure_notes(fine.curves, result.curves, cs.SURVIVAL, False, unit, group_col):
    st.caption(markdown_literal(note))
st.markdown("**Number at risk**")
risk_times = cs.table_times(public.grid)
grid_counts = cv.counts_of_exact(on_grid)
risk_private = released_at_risk(result, risk_times, grid_counts.groups)
cv.comparison_table(cv.at_risk_table(risk_times, cv.exact_at_risk(cohort, grid_counts, risk_times), risk_private,
                                    grid_counts.groups, group_col, unit, private_label=private_label),
                    f"number-at-risk-{cohort.name}", "gc_risk", released, index=True)
st.caption(f"Times in {unit}. The rows marked '{private_label}' are computed from the "
           + ("de-biased " if "debiased_counts" in result.extra else "") + "released counts, rounded to whole "
           "patients, never below zero and never rising over time (free post-processing of the release).")
for note in at_risk_notes(mech_name):
    st.caption(markdown_literal(note))

# ------------------------------------------------------------------------------------------ tests
try:
    tests = cv.group_tests(cohort, public, fine, result, mechanism, group_col, private_label)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
exact_tests, exact_overall, grid_tests = tests.exact, tests.exact_overall, tests.on_grid
tables, warnings = tests.private, tests.warnings

st.subheader("Log-rank tests")
if not tables:
    rows = [{"Test": f"{cv.group_name(r.group_a, group_col)} vs {cv.group_name(r.group_b, group_col)}", "Chi²": cv.fmt_stat(float(r.statistic[0])),
             "p": cv.fmt_p(float(r.p_value[0]))} for r in [*exact_tests]]
    rows.append({"Test": f"overall ({len(groups)} groups)", "Chi²": cv.fmt_stat(float(exact_overall.statistic[0])),
                 "p": cv.fmt_p(float(exact_overall.p_value[0]))})
    st.markdown("Non-private only:")
    cv.show_table(pd.DataFrame(rows), f"logrank-{cohort.name}", "gc_exact_tests", confidential=True)
first = groups[0]
ratios: list[Any] = []
why_none: str | None = None


def _hr(c: Any, table: dict[str, Any]) -> str:
    """A pair's hazard ratio (95% CI) of its second group against the first group, where the pair starts there."""
    if c.group_b is None or c.group_a != first or c.group_b not in table:
        return "–"
    hr = table[c.group_b]
    return format_ratio_ci(hr.estimate, hr.lower, hr.upper)


for label, (pair, overall, law) in tables.items():
    paired = cs.logrank_rows(exact_tests, exact_overall, grid_tests, pair, overall, len(groups))
    comparison = paired.on_grid  # flips: private against the exact test on the same grid
    df = cv.logrank_table(comparison, private_label=label, group_column=group_col)
    p_col = f"p {label} " + ("(calibrated)" if law.noisy else "(chi-square: no calibration needed)")
    df = df.rename(columns={"Chi² non-private": "Chi² non-private, public grid",
                            "p non-private": "p non-private, public grid",
                            "At 0.05 non-private": "At 0.05 non-private, public grid",
                            f"p {label}": p_col,
                            f"Chi² {label}": f"Chi² {label}" + (" (noise-adjusted)" if law.cell_variance > 0 else "")})
    df.insert(1, "Chi² non-private", [cv.fmt_stat(c.statistic_exact) for c in paired.every_time])
    df.insert(2, "p non-private", [cv.fmt_p(c.p_exact) for c in paired.every_time])
    df.insert(df.columns.get_loc(p_col) + 1, "Chi² needed at 5%",
              [cv.fmt_stat(n) if c.defined else "not defined" for c, n in zip(comparison, paired.needed, strict=True)])
    if label == private_label:  # the hazard ratio of each pair's second group against its first, from the counts
        ratios, why_none = hazard_ratios(result, mechanism)
        by_group = {hr.group: hr for hr in ratios}
        exact_mechanism = catalogue.get(catalogue.CURVES, catalogue.REFERENCES[catalogue.CURVES]).build(
            rows_per_subject=cohort.rows_per_subject)
        exact_ratios = {hr.group: hr for hr in hazard_ratios(fine, exact_mechanism)[0]}
        df.insert(1, f"HR (95% CI) {label}", [_hr(c, by_group) for c in comparison])
        df.insert(2, "HR (95% CI) non-private", [_hr(c, exact_ratios) for c in paired.every_time])
    if len(tables) > 1:
        st.markdown(f"**Non-private vs {label}** "
                    + ("(from the reported, randomized labels)" if label == private_label else "(mixing undone)"))
    main = [c for c in ("Test", f"HR (95% CI) {label}", p_col, "p non-private", f"At 0.05 {label}", "Flip?")
            if c in df.columns]
    cv.comparison_table(df[main], f"logrank-{cohort.name}-{label}", f"gc_tests_{len(label)}_{label[:12]}", released,
                        styled=cv.style_flips(df[main]), drop=["Flip?"])  # a flip compares with the non-private test
    with st.expander("Every column of the tests (statistics, the test on the public grid, the value needed at 5%)"):
        cv.comparison_table(df, f"logrank-all-{cohort.name}-{label}", f"gc_tests_all_{len(label)}_{label[:12]}",
                            released, styled=cv.style_flips(df), drop=["Flip?"])
    if label == private_label and why_none:
        st.caption(markdown_literal(why_none))
    elif label == private_label and ratios:
        st.caption(f"Hazard ratios of each group against {markdown_literal(cv.group_name(first, group_col))}: "
                   f"{HR_METHOD}.")
    st.caption(f"Private p-values: {overall.method}.")
    flips = [c for c in comparison if c.flipped]
    if flips:
        lost = [cv.test_label(c, group_col) for c in flips if c.significant_exact]
        found = [cv.test_label(c, group_col) for c in flips if not c.significant_exact]
        said = ([f"cannot confirm the difference the exact test finds for {', '.join(lost)}"] if lost else []) + (
            [f"finds a difference the exact test does not for {', '.join(found)}"] if found else [])
        st.error(markdown_literal(f"Conclusion FLIPPED at the 5% level ({label}): the private test "
                                  f"{' and '.join(said)}, on the same time grid."), icon="⚠️")
    elif any(not c.defined for c in comparison):
        st.warning("Some private tests cannot be computed from the released counts (a group has nobody left at risk "
                   "after the noise): no conclusion can be drawn from them. A larger epsilon or fewer groups helps.",
                   icon="⚠️")
    else:
        st.success(f"Every test reaches the same conclusion at the 5% level with the private numbers ({label}) as the "
                   "exact test on the same time grid.", icon="✅")
if released is None and tables:  # how much the noise alone moves the private p and hazard ratio: 20 draws, free
    logrank_spread.logrank_spread_panel(plan, "logrank", groups, lambda g: cv.group_name(g, group_col))
if warnings:
    with st.container(border=True):
        st.markdown("**Read with care**")
        for w in warnings:
            st.warning(markdown_literal(w), icon="⚠️")
st.caption("Chi² is the log-rank statistic (1 degree of freedom per pair; groups minus one for the overall test). "
           "Non-private tests use every event time, and the public grid's bins (the same bins as the private release: "
           "the flips compare like with like). A private p-value is *calibrated*: its Chi² is compared with the Chi² "
           "that pure noise produces (simulated from the release and the public noise law: free post-processing), "
           "so it keeps its 5% false-alarm rate; \"Chi² needed at 5%\" is the value it must exceed (3.84 without "
           "noise for a pair). A *noise-adjusted* Chi² (laplace-counts) adds to its denominator the variance the noise "
           "would give each bin's deaths, which discounts the bins where noise outweighs deaths; it has a scale of its "
           "own: compare it with \"Chi² needed at 5%\" beside it, not with the non-private columns. The non-private "
           "columns are for the data holder only, not for publication.")

text = """
**The log-rank test** asks whether two (or more) groups of patients have the same survival. At each time a patient
dies, it compares how many deaths each group had with how many it would have had if survival were the same in all
groups. The sum of these differences gives the statistic (Chi²); a p-value below 0.05 is conventionally read as
"the groups survive differently".

**Privacy.** The private version runs the same test on the published noisy counts: the test itself is free
post-processing, and the charge is the release of those counts. "Release these tests" releases fresh counts by sex
(or the group chosen) with their tests, charged like a curve release; where the Survival curves page already released
the same counts (the same mechanism, epsilon, grid and groups), this page reads that release and charges nothing.
Noise alone makes the plain statistic larger, so reading it against the usual chi-square table would
announce differences that are not there (at epsilon 1 on 20 bins, about half of all releases of two identical groups
would look "significant"). dpsurv therefore *calibrates* the private p-value: it simulates many releases of groups
that truly survive alike, with the released overall death rates and the public noise law, and asks how often they
give a statistic as large as the released one (see docs/coverage-logrank.md for the measured error rates). Noise can
still hide a real difference: such *flips* against the exact test on the same time grid are highlighted in red,
because a reader of the private release would draw the opposite conclusion. While you choose, the private columns come from a
*preview* (simulation noise: free, never exported); the Release button draws fresh noise once, charges the data
set's ledger and labels the numbers *released* with their record id.
"""
if entry.formal:
    text += (f"\n\n**{entry.name}** ({entry.paper}): {entry.summary} Its epsilon protects {entry.protects} "
             f"(neighbours: {entry.neighbouring}).")
else:
    text += (f"\n\n**{entry.name}** ({entry.paper}): {entry.summary} Disclosure control: no epsilon and no formal "
             "guarantee; the calibrated test still accounts for what the method does to the counts.")
if cv.label_only(entry):
    text += ("\n\n" + "It **protects the group label only**: survival times and deaths are published as they are. "
                    "Because the mixing probabilities are known, the mixing can be undone on the counts (the "
                    "*de-biased* curves and tests).")
if entry.paper == catalogue.DE_FAVERI:
    text += ("\n\ndpsurv uses the correct epsilon ln((kp + 1 - p)/(1 - p)) for k groups; the slides' formula "
                    "understates it.")
with explainer_box:
    explainer("groups", text)
    terms("log-rank", "p-value", "number at risk", "epsilon", "add/remove neighbours", "change-one-label", "preview",
          "release", "calibrated test", "disclosure control")
