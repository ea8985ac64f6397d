"""Trade-off explorer: utility against epsilon for every applicable mechanism, from seeded simulations."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import capacity, session
from dpsurv_app import curves_view as cv
from dpsurv_app import tradeoff_view as tv
from dpsurv_app.cache import session_cache
from dpsurv_app.downloads import show_figure, show_table
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, terms
from dpsurv_core import tradeoff
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import build_cohort
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy.ledger import GROUP_LABEL, SUBJECT
from dpsurv_core.report.files import safe_csv
from dpsurv_core.report.text import markdown_literal
from dpsurv_core.weibull.model import GAMMA, OMEGA, RUNGS

guard(__file__)  # before anything is drawn: the page may be reached by its own address

ANALYSIS_NAMES = {"curves": "Survival curves (RMSE)", "logrank": "Log-rank tests (significance flips)",
                  "weibull": "Weibull parameters (median error)", "regression": "Regression coefficients (relative error)"}
EPSILON_CHOICES = sorted({*cv.EPSILONS, 0.4, 0.8, 1.6, 3.2})
OTHER_PAGE_EPSILON = {"curves": "sc_epsilon", "logrank": "gc_epsilon", "weibull": "wb_epsilon", "regression": "rg_eps"}
SLOW_CHAINS = 50  # simulated releases per point for the slow Markov-chain sampler
SHOW_EPSILONS = (0.1, 1.0, 10.0)
CACHE_ENTRIES = 2048  # the session cache's bound while this page adds to it (a point is a few rows)

st.title("Trade-off explorer")
st.caption("How much does privacy cost in accuracy? For the current data, the error of each private mechanism at "
           "every epsilon from 0.05 to 10, from many simulated releases.")
explainer_box = st.container()
st.info("**Simulations for the data holder's eyes only.** Every point below comes from repeated *simulated* releases "
        "on your data with seeded random noise and is compared with the exact, non-private analysis. Nothing here is "
        "a release: nothing may be published from this page and nothing is charged to the privacy ledger (nothing "
        "here is ever recorded there). To publish a number, release it on its analysis page.", icon="🔒")

session.require_rows("the trade-off simulations")  # a server table kept in DuckDB: one sentence, what works instead
cohort, choice, public = session.analysis_inputs()
unit = cohort.time_unit
group_col = choice.mapping.group if cohort.group is not None else None
# regression covariates as the Regression page picks them: the mapped ones, else the data set's first two
mapping = choice.mapping
candidates = [c for c in choice.frame.columns if c not in {mapping.time, mapping.event, mapping.id, mapping.event_type}]
suggested = list(datasets.info(choice.name).covariates[:2]) if choice.bundled and choice.name in datasets.DATASETS \
    else list(mapping.covariates[:2])
default_covs = [c for c in (list(mapping.covariates) or suggested) if c in candidates][:3] or candidates[:1]

# ------------------------------------------------------------------------------------------ controls
available = {"curves": True, "logrank": group_col is not None and len(cohort.groups) >= 2,
             "weibull": True, "regression": bool(candidates)}
c1, c2, c3, c4 = st.columns([1.4, 1.4, 1, 0.8])
with c1:
    analysis = st.selectbox("Analysis", [a for a in tradeoff.ANALYSES if available[a]], key="to_analysis",
                            format_func=ANALYSIS_NAMES.__getitem__)
    missing = [ANALYSIS_NAMES[a] for a in tradeoff.ANALYSES if not available[a]]
    if missing:
        st.caption(f"Not available on these data: {', '.join(missing)}. Log-rank tests need a group column, regression "
                   "needs covariates: map them on the Data page.")
with c2:
    other = OTHER_PAGE_EPSILON.get(analysis)
    default_eps = float(st.session_state[other]) if other and other in st.session_state else 1.0
    options = sorted({*EPSILON_CHOICES, default_eps})
    current = float(st.select_slider("Your epsilon (marked on the chart)", options=options, value=default_eps,
                                     key="to_epsilon", help="The epsilon you are considering for a release."))
with c3:
    trials = int(st.select_slider("Simulated releases per point", [50, 100, 200, 500], value=200, key="to_trials",
                                  help="Of the full study: more releases give smoother lines and take longer."))
with c4:
    seed = int(st.number_input("Seed", 0, 2**31 - 1, 2024, 1, key="to_seed",
                               help="The same seed gives the same simulations."))

settings: dict = {}
log_default = analysis in ("weibull", "regression")
with st.expander("More settings", expanded=False):
    m1, m2 = st.columns(2)
    fine = m1.checkbox("Finer epsilon grid (20 log-spaced points from 0.05 to 10 in addition)", value=False,
                       key="to_fine", help="Smoother lines; takes about three times as long.")
    log_y = m2.checkbox("Logarithmic error axis", value=log_default, key=f"to_log_{analysis}",
                        disabled=analysis == "logrank",
                        help="Useful when the errors span several orders of magnitude.") and analysis != "logrank"
    if analysis == "curves" and group_col is not None:
        settings["by_group"] = st.checkbox(f"Separate curves for each {markdown_literal(group_col)} (needed for randomized response)",
                                           value=True, key="to_by_group")
    elif analysis == "curves":
        settings["by_group"] = False
    if analysis == "weibull":
        settings.update(omega=float(st.session_state.get("wb_omega", OMEGA)),
                        gamma=float(st.session_state.get("wb_gamma", GAMMA)),
                        rungs=int(st.session_state.get("wb_rungs", RUNGS)))
        st.caption(f"Weibull settings as on the Weibull page: omega {settings['omega']:g}, gamma {settings['gamma']:g}, "
                   f"{settings['rungs']} rungs; horizon {public.horizon:g} {unit}.")
    if analysis == "regression":
        r1, r2 = st.columns([2, 1])
        covs = r1.multiselect("Covariates", candidates, default=default_covs, key="to_covariates")
        settings["covariates"] = tuple(covs)
        settings["lam"] = float(r2.number_input("Ridge penalty Lambda (output and objective perturbation)", 0.0001,
                                                10.0, 0.01, 0.005, format="%.4f", key="to_lambda"))
        st.caption(f"Discrete-time model with 20 intervals and 5 spline knots up to the horizon "
                   f"({public.horizon:g} {unit}), as on the Regression page.")

covariates = tuple(settings.get("covariates", ()))
if analysis == "regression":
    if not covariates:
        st.warning("Choose at least one covariate under More settings.")
        st.stop()
    try:
        cohort = build_cohort(choice.frame, dataclasses.replace(mapping, covariates=covariates), choice.name, unit)
        public = session.public_parameters(cohort)
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        st.stop()
try:
    applicable = tradeoff.applicable(analysis, cohort, public, covariates, settings.get("by_group", True))
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
slow_ones = [tv.mechanism_label(m, analysis) for m in applicable if m in tradeoff.SLOW]
chosen = st.multiselect("Mechanisms", applicable, default=tradeoff.defaults(applicable), key=f"to_mechanisms_{analysis}",
                        format_func=lambda m: tv.mechanism_label(m, analysis),
                        help=(f"{' and '.join(slow_ones)} is slow (a Markov chain per simulated release): add it here "
                              "when you need it.") if slow_ones else None)
for m in chosen:
    if m in tradeoff.SLOW:
        minutes = " On a few thousand patients expect minutes." if cohort.n > 2000 else ""
        st.caption(f"{tv.mechanism_label(m, analysis)} runs {min(trials, SLOW_CHAINS)} chains per point (it is slow) "
                   f"and its guarantee is {tradeoff.entry(m, analysis).guarantee}: the chain only approximates the "
                   f"exact private distribution.{minutes}")
if not chosen:
    st.warning("Choose at least one mechanism to compare.")
    st.stop()


# ------------------------------------------------------------------------------------------ caching
def data_key() -> str:
    extra = repr(sorted(settings.items()))
    return f"{analysis}|{cv.data_key(cohort, public)}|{choice.mapping}|{extra}"


@st.cache_resource(max_entries=8, show_spinner=False)
def _context_shared(key: str, _make: Callable[[], tradeoff.Context]) -> tradeoff.Context:
    return _make()


@st.cache_data(max_entries=5000, show_spinner=False)
def _cell_shared(key: str, mechanism: str, epsilon: float, trials: int, seed: int,
                 _context: Callable[[], tradeoff.Context], _computed: list) -> list[dict]:
    _computed.append(1)  # runs only on a cache miss
    return tradeoff.evaluate(_context(), mechanism, epsilon, trials, seed)


def context() -> tradeoff.Context:
    """The data-only part of the study: bundled (public) data share a process-wide cache, anything else stays in
    this browser session (dpsurv_app.cache)."""
    key = data_key()
    make = lambda: tradeoff.prepare(analysis, cohort, public, **settings)  # noqa: E731
    if choice.bundled:
        return _context_shared(key, make)
    return session_cache(("tradeoff-context", key), make, max_entries=CACHE_ENTRIES)


def cell(mechanism: str, epsilon: float, n: int) -> list[dict]:
    """One mechanism at one epsilon from ``n`` seeded simulated releases, computed once per data, settings and seed."""
    if choice.bundled:
        return _cell_shared(data_key(), mechanism, epsilon, n, seed, context, computed)

    def compute() -> list[dict]:
        computed.append(1)
        return tradeoff.evaluate(context(), mechanism, epsilon, n, seed)

    return session_cache(("tradeoff-cell", data_key(), mechanism, epsilon, n, seed), compute, max_entries=CACHE_ENTRIES)


# ------------------------------------------------------------------------------------------ quick look, then the study
# The first view draws a quick look at once: the first chosen mechanism (the catalogue's first is the cheapest) at
# every epsilon. The others run when asked for, under a progress bar, and then stay on for these data and settings;
# the quick look's points are the study's own (same releases, same seed), so they are reused.
epsilons = sorted({*tradeoff.DEFAULT_EPSILONS, *(tradeoff.epsilon_grid(0.05, 10.0, 20).tolist() if fine else []),
                   current})
quick = [m for m in chosen if m not in tradeoff.SLOW][:1]
study_key = repr((data_key(), trials, seed, fine))
full = st.session_state.get("to_full_study") == study_key or quick == list(chosen)
if not full:
    offer = st.empty()
    with offer.container(border=True):
        q1, q2 = st.columns([3, 1], vertical_alignment="center")
        rest = [tv.mechanism_label(m, analysis) for m in chosen if m not in quick]
        first = (f"{tv.mechanism_label(quick[0], analysis)} only, the first of the chosen mechanisms"
                 if quick else "nothing yet")
        q1.markdown(f"**Quick look:** {first}. Run the study to add {', '.join(rest)} ({len(rest) * len(epsilons)} "
                    "more points, under a progress bar); it then stays on for these data and settings.")
        if q2.button("Run the full study", key="to_run", type="primary", width="stretch"):
            st.session_state["to_full_study"] = study_key
            full = True
    if full:
        offer.empty()
shown = list(chosen) if full else quick
if not shown:
    st.stop()


def releases_per_point(m: str) -> int:
    return min(trials, SLOW_CHAINS) if m in tradeoff.SLOW else trials


# ------------------------------------------------------------------------------------------ run
cells = [(m, e) for m in shown for e in epsilons]
computed: list = []
bar = st.progress(0.0, text="Simulating ...")
t0 = time.perf_counter()
rows: list[dict] = []
try:
    with capacity.heavy():  # a slot of the server's work; busy: one sentence (a DpsurvError), nothing run
        ctx = context()
        for i, (m, e) in enumerate(cells):
            bar.progress(i / len(cells), text=f"Simulating {tv.mechanism_label(m, analysis)} at epsilon {e:.3g} "
                                              f"({i + 1} of {len(cells)} points)")
            rows += cell(m, e, releases_per_point(m))
except DpsurvError as exc:
    bar.empty()
    st.error(markdown_literal(exc))
    st.stop()
seconds = time.perf_counter() - t0
bar.empty()
table = pd.DataFrame(rows, columns=tradeoff.COLUMNS)

# ------------------------------------------------------------------------------------------ chart
st.subheader(tv.ANALYSIS_LABELS[analysis])
guides = tradeoff.guides(ctx, shown)
fig = tv.tradeoff_figure(table, ctx.reference, ctx.reference_label, current, unit, log_y, guides=guides)
show_figure(fig, f"tradeoff-{analysis}-{cohort.name}", "to_chart", width="stretch")

protects = dict(zip(table["mechanism"], table["protects"]))
sentence = ("Every epsilon on this chart protects the whole patient (neighbouring data sets: add or remove one "
            "patient)")
others = [tv.mechanism_label(m, analysis) for m, p in protects.items() if p == GROUP_LABEL]
rules = [tv.mechanism_label(m, analysis) for m, p in protects.items() if p not in (SUBJECT, GROUP_LABEL)]
if others:
    sentence += (f", except {' and '.join(others)}: there epsilon protects the group label only (neighbours: "
                 "change one patient's group label); survival times and deaths are used as they are")
if rules:
    sentence += (f". {' and '.join(rules)} {'have' if len(rules) > 1 else 'has'} no epsilon and no formal guarantee "
                 "(statistical disclosure control): the same at every epsilon, drawn for comparison")
st.caption(sentence + ". Each point: the " + {"curves": "median over the simulated releases; band: 8 in 10 releases",
                                              "logrank": "share of simulated releases; band: its 95% interval",
                                              "weibull": "median over the simulated releases; band: 8 in 10 releases",
                                              "regression": "mean over the simulated releases; band: 8 in 10 releases"}[
    analysis] + f". Dashed line: the non-private analysis, {ctx.reference_label}. Diamonds: your epsilon.")
for note in tradeoff.notes(ctx, shown):
    st.caption(note)
if log_y and all(v == 0 for v in ctx.reference.values()):
    st.caption("The non-private analysis has no error (0), which a logarithmic axis cannot show.")

# the numbers at your epsilon
now = table[np.isclose(table["epsilon"], current)]
parts = []
for _, r in now.iterrows():
    style = tv.metric_style(r["metric"], unit)
    what = "" if table["metric"].nunique() == 1 else f" ({style.title.lower()})"
    parts.append(f"{tv.mechanism_label(r['mechanism'], analysis)}{what}: {r['value'] * style.factor:{style.fmt}}{style.suffix}")
if parts:
    st.markdown(f"**At your epsilon {current:g}:** " + "; ".join(parts) + ".")

show = [e for e in dict.fromkeys([*SHOW_EPSILONS, current]) if any(np.isclose(epsilons, e))]
cv.show_table(tv.summary_table(table, show, unit), f"tradeoff-summary-{analysis}-{cohort.name}", "to_summary")
reused = len(cells) - len(computed)
cached = f" ({reused} point{'s' if reused != 1 else ''} reused from earlier runs)" if reused else ""
st.caption(f"{len(cells)} points, {trials} simulated releases each"
           + "".join(f" ({releases_per_point(m)} for {tv.mechanism_label(m, analysis)})" for m in shown
                     if m in tradeoff.SLOW)
           + ("" if full else " (quick look)")
           + f", seed {seed}: {seconds:.1f} s{cached}.")

with st.expander("All numbers (for the data holder only)"):
    st.dataframe(table, hide_index=True, width="stretch")
    st.download_button("Download as CSV", safe_csv(table).encode(), file_name=f"tradeoff_{analysis}.csv",
                       mime="text/csv", key="to_csv")
with st.expander("The non-private reference (confidential: exact numbers from the data)"):
    ref = tv.reference_table(ctx.reference_values, session.group_label)
    show_table(ref, f"tradeoff-reference-{analysis}-{cohort.name}", "to_reference", hide_index=True, width="stretch")

# ------------------------------------------------------------------------------------------ explainer
WHAT = {
    "curves": "how far the private Kaplan-Meier curve is from the real one, as a typical gap in percentage points of "
              "survival (the RMSE over the points of the public time grid). Even without noise, counting deaths in time "
              "bins costs a little accuracy: that is the dashed line.",
    "logrank": "how often the private log-rank test reaches the opposite conclusion at the 5% level to the exact test "
               "on the same public time grid (a *flip*: significant becomes not significant, or the reverse). The "
               "private p-values are calibrated for the noise, so they keep their 5% false-alarm rate; with much noise "
               "the private test mostly loses the power to see a real difference. 0% means the private release never "
               "changes the story; the exact test on the same grid is the dashed line at 0%.",
    "weibull": "how far the private Weibull shape and scale are from the ordinary maximum-likelihood fit, as the median "
               "absolute error over the simulated releases.",
    "regression": "how far the private regression coefficients are from the ordinary (non-private) fit, relative to "
                  "their size: 10% means the private coefficients are typically off by a tenth of their length.",
}
text = f"""
**The question.** Differential privacy adds random noise so that no single patient can be recognised in a published
result. **Epsilon** is the privacy budget: a small epsilon (0.1) means strong privacy and much noise; a large one
(10) means little noise and weak privacy. Which epsilon still tells the clinical story?

**The chart.** The horizontal axis is epsilon (on a log scale: each step multiplies it). The vertical axis shows
{WHAT[analysis]} Each line is one privacy mechanism; its shaded band shows how much the error varies from one
release to the next. The diamonds mark the epsilon you are considering. Lower is better: a good mechanism reaches
low error at a small epsilon.

**How it is computed.** For each mechanism and epsilon, the app pretends to publish the result many times on your
data with fresh random noise each time (a simulation with a fixed seed, so it is reproducible), and compares each
with the exact analysis. These simulations use the real data, so they are **for the data holder only**: nothing is
released and nothing is charged to the ledger.

**Where the mechanisms come from** (each line: what the mechanism does and what its epsilon protects):
"""
for m in dict.fromkeys(tradeoff.base(m) for m in tradeoff.mechanisms(analysis)):
    e = tradeoff.entry(m, analysis)
    guarantee = "" if e.guarantee == "exact" else f" Its guarantee is {e.guarantee}."
    text += f"\n- **{e.name}** ({e.paper}): {e.summary} Protects {e.protects}.{guarantee}"
with explainer_box:
    explainer("tradeoff", text)
    terms("epsilon", "add/remove neighbours", "change-one-label", "log-rank", "Kaplan-Meier", "calibrated test",
          "disclosure control")
