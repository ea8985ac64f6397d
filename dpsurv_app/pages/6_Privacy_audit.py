"""Privacy audit: how much could an attacker learn about one patient from a proposed release?"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import capacity, releases, session
from dpsurv_app import curves_view as cv
from dpsurv_app.downloads import show_figure, show_table
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, terms
from dpsurv_core.audit.attack import advantage_bound
from dpsurv_core.audit.comparison import compare, paragraph
from dpsurv_core.audit.figures import (
    attacked_sentence,
    comparison_figure,
    epsilon_figure,
    influential_figure,
    roc_figure,
    summary_table,
)
from dpsurv_core.audit.runner import ANALYSES, FAMILIES, AuditResult, audit, make_adapter, mechanisms_for
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, GROUP_LABEL, charged_sentence
from dpsurv_core.report.text import markdown_code, markdown_literal

guard(__file__)  # before anything is drawn: the page may be reached by its own address

ANALYSIS_LABELS = {"km": "Survival curves (Kaplan-Meier)", "logrank": "Log-rank tests between groups",
                   "weibull": "Weibull parameters", "regression": "Discrete-time regression"}
# the other pages' widgets: the audit starts from the analysis and mechanism chosen there
FROM_PAGES = {"km": ("sc_mechanism", "sc_epsilon"), "logrank": ("gc_mechanism", "gc_epsilon"),
              "weibull": ("wb_mechanisms", "wb_epsilon"), "regression": ("rg_mechs", "rg_eps")}
OPTION_PREFIX = {"km": "sc", "logrank": "gc"}  # the key prefix of cv.option_widgets on the curve pages
RUNS = [40, 100, 200, 500, 1000, 2000, 5000]
DEFAULT_RUNS = {"km": 1000, "logrank": 1000, "weibull": 500, "regression": 500}
EPSILONS = [0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 5.0, 10.0]

st.title("Privacy audit")
st.caption("For a proposed release: how much could an attacker who knows everyone else's record learn about one "
           "patient? The audit simulates the release many times with and without that patient and attacks it.")
st.info("An audit is a simulation on your data for the data holder or an ethics board, not a release: it is **not "
        "charged to the privacy ledger**, and its numbers come from the raw data, so they must not be published.")

explainer(
    "audit",
    """
**The question.** Differential privacy promises that one patient's presence changes what is published only a
little: by a factor of at most e^epsilon in probability. The audit checks that promise on your data.

**How.** It picks a *target* patient (by default the most exposed one: the patient whose removal changes the
non-private result the most, often the last event on the curve) and builds two data sets: **D**, your data, and
**D'**, the same data without the target (for randomized response, which protects only the group label, D' gives
the target another group label instead). It runs the mechanism many times on each, exactly as a release would,
with seeded noise.

**Influential points** (section 6.6 of the time-indexed DP Kaplan-Meier paper, arXiv 2412.05164): pairing one run on D with one on D', the number of time points where the two
private curves differ by more than 0.05, 0.1, 0.5 or 0.7. Two noisy runs differ even on the same data, so the grey
boxes count the same between two runs on D (noise alone): where D against D' looks like D against D, one patient's
presence does not show through the noise; counts well above the grey ones mean the curve reacts visibly to one
patient.

**The attack.** On half of the runs the audit learns a likelihood-ratio score (which released numbers move when
the target is there, and by how much compared with the noise) and a threshold. On the other half it counts how
often it says "the target is in the data" when it is (true positive rate, TPR) and when it is not (false positive
rate, FPR). The ROC curve shows every threshold. What it attacks is the whole record a release would publish:
the mechanism's noisy numbers, everything computed from them (bands, medians, tests, intervals) and whether each
warning appears, since a leak around the noisy numbers (an interval computed from the exact number of patients) is
a leak too. A reader runs once per record, so the record is attacked on fewer runs (at most 200 per data set); the
mechanism's numbers alone are attacked on all the runs beside it. From the 95% confidence bounds of TPR and FPR,

  empirical epsilon = max( ln(TPR_lo / FPR_hi), ln((1 - FPR_hi) / (1 - TPR_lo)) ),

a number the true privacy loss is at least as large as (95% confidence). It must stay **at or below the charged
epsilon**; if it does not, the mechanism (or its accounting) has a bug. It is a lower bound: a small value does
not prove privacy, it only says this attack could not do better. A non-private release gives a large value, limited
only by the number of runs.

**Advantage.** TPR - FPR is the attacker's edge over a coin toss. epsilon-DP caps it at (e^eps - 1)/(e^eps + 1):
46% at epsilon 1, 76% at epsilon 2.

**Exposure.** The share of patients whose removal changes the released table at all: with disclosure control
(suppression, rounding) anyone who knows the other patients learns for certain that such a patient took part.
""",
)
terms("membership inference", "epsilon", "add/remove neighbours", "change-one-label", "differential privacy",
      "empirical epsilon", "exposure", "disclosure control")


def _cohort_hash(cohort: Cohort) -> str:
    """A short hash of the cohort's arrays and covariates: the audit cache is keyed by the data analysed."""
    h = hashlib.sha1()
    for a in (cohort.time, cohort.event, cohort.group, cohort.subject, cohort.event_type):
        if a is not None:
            h.update(np.ascontiguousarray(a).astype(str if a.dtype == object else a.dtype).tobytes())
    h.update(pd.util.hash_pandas_object(cohort.covariates, index=False).to_numpy().tobytes()
             if len(cohort.covariates.columns) else b"")
    return h.hexdigest()[:16]


session.require_rows("the membership-inference audit")  # a server table kept in DuckDB: one sentence, what works instead
cohort, choice, public = session.analysis_inputs()
tab_audit, tab_board = st.tabs(["Audit one release", "DP against today's disclosure control"])


def _comparison_key() -> str:
    return f"{cohort.name}|{_cohort_hash(cohort)}|{public.grid.edges.tolist()}|{public.group_categories}"


with tab_board:  # runs first: the audit tab below may stop the script
    st.markdown("What registries do today (small-cell suppression, rounding, random rounding, cell keys, step "
                "smoothing) next to differential privacy, on this data and grid, under the same audit. None of the "
                "disclosure-control methods has an epsilon or a formal guarantee.")
    b1, b2 = st.columns(2)
    board_eps = float(b1.select_slider("Epsilon of the DP mechanisms", options=EPSILONS, value=1.0, key="bd_epsilon"))
    board_runs = int(b2.select_slider("Runs on D and on D' (each)", options=[40, 100, 200, 500], value=200,
                                      key="bd_runs"))
    board_key = (_comparison_key(), board_eps, board_runs)
    boards = st.session_state.setdefault("board_comparisons", {})
    if st.button("Run the comparison", type="primary", key="bd_run"):
        bar = st.progress(0.0, text="starting")

        def board_progress(f: float, text: str) -> None:
            bar.progress(f, text=text)

        try:
            if len(boards) > 4:
                boards.clear()
            with capacity.heavy():  # a slot of the server's work; busy: one sentence (a DpsurvError), nothing run
                boards[board_key] = compare(cohort, public, board_eps, trials=board_runs,
                                            progress=board_progress)
        except DpsurvError as exc:
            st.error(markdown_literal(exc))
        finally:
            bar.empty()
    comp = boards.get(board_key)
    if comp is None:
        st.caption("Press **Run the comparison** (about ten seconds on a few hundred patients).")
    else:
        show_table(comp.table(), f"audit-comparison-{cohort.name}", "bd_table", hide_index=True, width="stretch")
        show_figure(cv.recolour(comparison_figure(comp)), f"audit-comparison-{cohort.name}", "bd_fig")
        st.markdown(paragraph(comp))
        with st.expander("What a differencing pair reveals, method by method"):
            for r in comp.rows:
                st.markdown(f"**{r.name}.** {markdown_literal(r.differencing_named(session.group_label))}")
        st.caption("Exposed share: patients whose removal changes the released table, so that anyone who knows the "
                   "others learns for certain they took part (computed exactly over every patient). Attack and "
                   "empirical epsilon: on the most exposed patient, attacking the whole record a release of the "
                   f"method makes (its released counts, everything derived from them and each warning, on "
                   f"{comp.record_trials} runs per data set: 'attacked'), beside the attack on the method's output "
                   f"alone on all {comp.trials} runs; 'within the charge' needs both. 'Infinite (certain)' means the "
                   "two releases never coincide. Error: against the non-private Kaplan-Meier curve on the public grid. "
                   "A simulation on the raw data: not charged, not for publication.")
        # one per epsilon, tied in the review to the releases made at it (and said so when none was)
        releases.store_audit(f"DP against today's disclosure control, epsilon {comp.epsilon:g}",
                             {"dataset": comp.dataset, "epsilon of the DP mechanisms": comp.epsilon,
                              "runs": comp.trials, "record runs": comp.record_trials, "subjects": comp.n_subjects},
                             [comparison_figure(comp)], tables=[comp.table()], texts=[paragraph(comp)],
                             mechanisms=tuple(r.method for r in comp.rows if r.epsilon is not None),
                             epsilon=comp.epsilon, analysis="board")

with tab_audit:
    has_group = cohort.group is not None
    covariates = list(cohort.covariates.columns)


    def _from_page(analysis: str) -> tuple[str | None, float | None]:
        mech_key, eps_key = FROM_PAGES[analysis]
        mech = st.session_state.get(mech_key)
        if isinstance(mech, (list, tuple)):
            mech = mech[0] if mech else None
        eps = st.session_state.get(eps_key)
        return mech, (float(eps) if isinstance(eps, (int, float)) and not math.isinf(eps) else None)


    analyses = [a for a in ANALYSES if (a != "logrank" or has_group) and (a != "regression" or covariates)]
    c1, c2, c3 = st.columns(3)
    with c1:
        analysis = st.selectbox("Analysis", analyses, format_func=ANALYSIS_LABELS.__getitem__, key="au_analysis",
                                help="What the release publishes. Log-rank tests need a group column, regression "
                                     "covariates (map them on the Data page).")
    page_mech, page_eps = _from_page(analysis)
    family = FAMILIES[analysis]
    entry_of = {m: catalogue.get(family, m) for m in mechanisms_for(analysis)}
    names = [m for m, e in entry_of.items() if e.protects != GROUP_LABEL or has_group]
    private_first = sorted(names, key=lambda m: not entry_of[m].private)
    with c2:
        default = page_mech if page_mech in private_first else private_first[0]
        mechanism = st.selectbox("Mechanism", private_first, index=private_first.index(default),
                                 format_func=lambda m: entry_of[m].name, key=f"au_mechanism_{analysis}")
    with c3:
        eps_default = page_eps if page_eps is not None else 1.0
        epsilon = float(st.select_slider("Epsilon of the release", options=sorted({*EPSILONS, eps_default}),
                                         value=eps_default, key=f"au_epsilon_{analysis}",
                                         disabled=not entry_of[mechanism].private))

    options: dict = {}
    d1, d2, d3 = st.columns(3)
    with d1:
        runs_default = entry_of[mechanism].audit_runs or DEFAULT_RUNS[analysis]
        trials = int(st.select_slider("Runs on D and on D' (each)", options=RUNS, value=runs_default,
                                      key=f"au_runs_{analysis}_{mechanism}",
                                      help="More runs give tighter bounds and take longer. Half fit the attack, half "
                                           "test it." + (" Each run of this mechanism is slow (a chain or an optimisation per run)."
                                                         if entry_of[mechanism].audit_runs else "")))
    with d2:
        pick = st.radio("Target", ["the most exposed patient", "a row I choose"], key="au_target_mode", horizontal=True)
        target_row = None
        if pick == "a row I choose":
            target_row = int(st.number_input("Row (0-based, as in the data table)", 0, max(cohort.n - 1, 0), 0, 1,
                                             key="au_target_row"))
    with d3:
        seed = int(st.number_input("Seed of the simulation", 0, 2**31 - 1, 0, 1, key="au_seed",
                                   help="The audit uses seeded noise so it can be reproduced."))
    split = True  # the survival curves page shows one pooled curve unless asked: audit the release it would make
    if analysis == "km" and has_group:
        split = st.checkbox("One curve per group", value=bool(st.session_state.get("sc_split", False)),
                            key="au_split", help="As on the Survival curves page (one pooled curve by default): the "
                                                 "audit attacks the release you would make there.")
    if analysis == "regression":
        r1, r2 = st.columns(2)
        page_covs = [c for c in st.session_state.get("rg_covs", []) if c in covariates]
        options["covariates"] = tuple(r1.multiselect("Covariates", covariates, default=page_covs or covariates[:2],
                                                     key="au_covariates"))
        options["lam"] = float(r2.number_input("Ridge penalty Lambda", 0.0001, 10.0,
                                               float(st.session_state.get("rg_lam", 0.01)), 0.01, format="%.4f",
                                               key="au_lambda"))
        if not options["covariates"]:
            st.warning("Choose at least one covariate.")
            st.stop()
    if analysis == "weibull":
        for key, name in (("wb_omega", "omega"), ("wb_gamma", "gamma"), ("wb_rungs", "rungs")):
            if key in st.session_state:
                options[name] = st.session_state[key]
    if analysis in OPTION_PREFIX:  # the mechanism's options as chosen on its page (time-indexed, disclosure control)
        for name in entry_of[mechanism].options:
            key = f"{OPTION_PREFIX[analysis]}_opt_{name}"
            if key in st.session_state:
                options[name] = st.session_state[key]
    if options and analysis != "regression":
        st.caption("Mechanism settings taken from its page: "
                   + markdown_literal(", ".join(f"{k} = {v}" for k, v in options.items())) + ".")

    settings = {"analysis": analysis, "mechanism": mechanism, "epsilon": epsilon, "trials": trials, "seed": seed,
                "target": target_row, "options": options, "split": split}
    settings_key = json.dumps(settings, sort_keys=True, default=str)
    data_key = f"{cohort.name}|{_cohort_hash(cohort)}|{public.grid.edges.tolist()}|{public.group_categories}"


    def _compute() -> AuditResult:
        """Run the audit with a progress bar (created here, so a cached result replays it finished)."""
        bar = st.progress(0.0, text="starting the audit")

        def audit_progress(f: float, text: str) -> None:
            bar.progress(f, text=text)

        try:
            pooled = not split  # one curve: the rows without their group, the public values without categories
            adapter = make_adapter(analysis, mechanism, epsilon, replace(cohort, group=None) if pooled else cohort,
                                   replace(public, group_categories=(), categories_from_data=False) if pooled
                                   else public, record=True, **options)
            return audit(adapter, trials=trials, seed=seed, target_row=target_row,
                           progress=audit_progress)
        finally:
            bar.empty()


    @st.cache_data(max_entries=32, show_spinner=False)
    def _cached(data: str, key: str) -> AuditResult:
        return _compute()


    def run_audit() -> AuditResult:
        """Bundled data: st.cache_data; uploads: this session only (nothing derived from them is shared)."""
        if choice.bundled:
            return _cached(data_key, settings_key)
        store = st.session_state.setdefault("audit_results", {})
        if (data_key, settings_key) not in store:
            if len(store) > 8:
                store.clear()
            store[(data_key, settings_key)] = _compute()
        return store[(data_key, settings_key)]


    requested = st.session_state.setdefault("audit_requested", set())
    if st.button("Run the audit", type="primary", key="au_run"):
        requested.add((data_key, settings_key))
    if (data_key, settings_key) not in requested:
        st.caption("Choose the release to audit and press **Run the audit**.")
        st.stop()

    try:
        with capacity.heavy():  # a slot of the server's work; busy: one sentence (a DpsurvError), nothing run
            result = run_audit()
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        st.stop()

    att = result.headline  # the attack on the whole release record when there is one, else on the mechanism's output
    st.subheader("Result")
    formal = result.cost.epsilon is not None
    eps = result.cost.epsilon if result.cost.epsilon is not None else math.nan  # read only where formal
    bounded = formal and math.isfinite(eps) and result.formal_guarantee
    no_bound = ("no formal guarantee" if not formal else "no noise: not private" if math.isinf(eps)
                else result.as_run["sentence"])  # a disclosure that is not DP voids the charge's guarantee
    allowed = (f"an epsilon-DP release allows at most {100 * advantage_bound(eps):.0f}%" if bounded
               else f"no bound: {no_bound}")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("Attacker's advantage (strongest attack)", f"{100 * max(att.advantage, 0):.0f}%",
              help=f"95% interval {100 * att.advantage_lower:.0f}% to {100 * att.advantage_upper:.0f}%. TPR - FPR of the "
                   "strongest distinguishing test, its threshold chosen on the fitting half and measured on the "
                   f"{att.runs} held-out runs per data set (TPR {att.adv_tpr:.3f}, FPR {att.adv_fpr:.3f}); "
                   f"{allowed}.")
    m1.caption(f"95% CI {100 * att.advantage_lower:.0f}% to {100 * att.advantage_upper:.0f}%; {allowed}")
    m2.metric("AUC of the attack", f"{att.auc:.2f}",
              help="Area under the held-out ROC of the strongest attack's score (the Mann-Whitney statistic): 0.5 is a "
                   "coin toss, 1 tells the two data sets apart every time.")
    m3.metric("Charged epsilon", "none: no formal guarantee" if not formal else "no noise: not private" if math.isinf(eps)
              else f"{eps:.3g}",
              help=charged_sentence(result.cost, result.disclosures))
    m4.metric("Empirical epsilon lower bound", "infinite" if result.certain else f"{att.epsilon_lower:.2f}",
              delta=None if result.within_charge is None else ("within the charge" if result.within_charge
                                                                 else "ABOVE the charge"),
              delta_color="off" if result.within_charge else "inverse",
              help="95% lower bound: the true privacy loss is at least this large (95% confidence). Point estimate of the "
                   "attack: " + ("none (its threshold labels every held-out run alike)" if result.uninformative_test
                                else "infinite" if math.isinf(att.epsilon_point) else f"{att.epsilon_point:.2f}")
                   + f". Its test (TPR {att.tpr:.3f}, FPR {att.fpr:.3f}, 95% intervals TPR {att.tpr_ci[0]:.3f} to "
                   f"{att.tpr_ci[1]:.3f}, FPR {att.fpr_ci[0]:.3f} to {att.fpr_ci[1]:.3f}) maximises the ratio, not the "
                   "advantage.")
    if result.epsilon_note:
        st.caption(result.epsilon_note)
    if result.record is not None:
        out_eps = "infinite" if result.certain else f"{result.attack.epsilon_lower:.2f}"
        st.caption(f"Attacked: the whole record a release would make, **{len(result.attacked_fields)} fields** "
                   f"({result.record.varying} of them varied between runs): the released numbers, everything derived "
                   f"from them (bands, medians, tests) and each warning's presence, on {result.record.trials} runs per "
                   f"data set (a reader runs once per record). The mechanism's output alone, on all {result.trials} "
                   f"runs: empirical epsilon lower bound {out_eps}; the release is within its charge only if both are.")
        if result.record.rederives is False:
            st.error("The release records do not re-derive from their released numbers and public inputs alone: what "
                     "people would read depends on something else, such as the data. This is a bug to fix.")
        if result.record.separating:
            st.warning("These fields never overlapped between the runs with and without the target: "
                       + ", ".join(markdown_code(f) for f in result.record.separating[:5])
                       + (" and more" if len(result.record.separating) > 5 else "") + ".")
    else:
        st.caption(f"Attacked: the mechanism's output only ({len(result.attacked_fields)} values): no reader makes this "
                   "mechanism's release record here, so what a release would publish around it is not attacked.")
    show_figure(cv.recolour(epsilon_figure(result)), f"audit-epsilon-{cohort.name}-{mechanism}", "au_eps_fig")
    if result.certain and (not formal or math.isinf(eps)):  # nothing hid the target: told apart every time
        st.error(result.sentence())
    elif formal and math.isfinite(eps) and not result.formal_guarantee:  # charged, but a not-DP disclosure voids it
        st.warning(result.sentence())
    elif not formal or math.isinf(eps) or result.within_charge:
        st.success(result.sentence())
    else:
        st.error(result.sentence() + " The empirical epsilon is above the charge: this is a bug to fix, not a result "
                 "to report.")
    if result.cost.protects != "the subject":
        st.warning(f"This mechanism protects {result.cost.protects}; neighbouring data sets: {result.cost.neighbouring}. "
                   "For a guarantee about whether a patient took part at all, audit a mechanism that protects the "
                   "subject (laplace-counts or adaptive-km).")
    elif formal and not math.isinf(eps):
        st.caption(f"Charged: {charged_sentence(result.cost, result.disclosures)}. The audit compares the data with and without the target patient, "
                   "the same neighbouring definition.")
    if result.cost.guarantee == APPROXIMATE_MCMC:
        st.warning(f"The guarantee is {result.cost.guarantee}: it holds only if the sampler has converged. Check the "
                   "sampler's diagnostics on the Regression page before relying on it, or audit the exact mechanisms.")

    if result.exposure is not None:
        e1, e2 = st.columns([1, 3])
        e1.metric("Exposed share", f"{100 * result.exposure.share:.0f}%",
                  help="Patients whose removal changes the released table, so that anyone who knows the others "
                       "learns for certain that they took part; computed exactly over every patient "
                       f"({result.exposure.exposed} of {result.exposure.units}). {result.exposure.method}.")
        if result.differencing is not None:
            e2.markdown(f"**Differencing pair** (the release with and without the target): "
                        f"{markdown_literal(result.differencing.named(session.group_label))}")
    if result.certain:
        st.error("The releases with and without the target never coincide: an attacker who knows everyone else is "
                 "right every time (empirical epsilon infinite). Do not publish this release as it is: choose a "
                 "differentially private mechanism, or one that changes less with one patient.")
    st.markdown(f"**Target.** {markdown_literal(result.target.why_named(session.group_label))}")
    f1, f2 = st.columns(2)
    with f1:
        show_figure(cv.recolour(influential_figure(result)), f"audit-influential-{cohort.name}-{mechanism}",
                    "au_infl_fig")
        if result.influential is not None:
            st.caption("Totals over all runs: " + ", ".join(f"> {t:g}: {c}" for t, c in result.influential.items())
                       + f" (of {result.trials} x {result.grid_points} grid points per group).")
    with f2:
        show_figure(cv.recolour(roc_figure(result)), f"audit-roc-{cohort.name}-{mechanism}", "au_roc_fig")
        st.caption(f"Strongest attack's score: {att.adv_score}; AUC {att.auc:.2f}. The diamond is the strongest attack, "
                   "the dot the test behind the empirical epsilon lower bound. The dotted line is the best any attack can "
                   "do against a release with the charged epsilon.")
    show_table(summary_table(result, session.group_label), f"audit-summary-{cohort.name}-{mechanism}", "au_summary", hide_index=True,
               width="stretch")
    for note in result.notes:
        st.caption(note)

    # the page's headline first (the strongest attack's advantage, its interval, the AUC), then the empirical epsilon
    # lower bound and the operating point of its own test, named as such
    full = result.to_dict()
    summary: dict[str, Any]  # the record's fields by name, and two more below
    summary = {k: full[k] for k in ("analysis", "mechanism", "epsilon_charged", "protects", "advantage",
                                    "advantage_lower", "advantage_upper", "advantage_tpr", "advantage_fpr", "auc",
                                    "advantage_bound", "empirical_epsilon_lower", "trials", "exposed_share",
                                    "distinguishable_with_certainty", "attacked", "attacked_fields_count",
                                    "record_trials", "within_charge", "sentence") if k in full}
    summary.update({"epsilon_test_tpr": full.get("tpr"), "epsilon_test_fpr": full.get("fpr")})
    summary["target_row"] = result.target.row
    # one per epsilon: the review shows the audit at the epsilon released (or says plainly that it ran at another)
    charged = result.cost.epsilon
    releases.store_audit(f"{ANALYSIS_LABELS[analysis]}, {mechanism}, "
                         + ("no epsilon" if charged is None else f"epsilon {charged:g}"), summary,
                         [roc_figure(result), influential_figure(result)],
                         tables=[summary_table(result, session.group_label)], texts=[attacked_sentence(result)],
                         mechanisms=(mechanism,), epsilon=charged, analysis=analysis)
