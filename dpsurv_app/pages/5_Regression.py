"""Regression: private discrete-time survival regression (Nguyen & Hui 2017, regression) next to the non-private fit and Cox."""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import cox_view, glossary, palette, session
from dpsurv_app import curves_view as cv
from dpsurv_app import regression_view as rv
from dpsurv_app.cache import by_data, digest, session_cache
from dpsurv_app.downloads import show_figure
from dpsurv_app.gate import guard
from dpsurv_core.data import datasets
from dpsurv_core.data import labels as value_labels
from dpsurv_core.data.cohort import build_cohort
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import APPROXIMATE_MCMC, EXACT, NO_NOISE
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.privacy.release import Plan
from dpsurv_core.publication import undeclared
from dpsurv_core.regression import readout
from dpsurv_core.regression.cautions import row_cautions
from dpsurv_core.regression.inference import (
    RATIO_KIND,
    coefficient_inference,
    inference_table,
    nonprivate_fit,
    plain_number,
)
from dpsurv_core.regression.levels import declared_levels
from dpsurv_core.regression.mechanisms import OutputPerturbation, lambda_study, mre_study
from dpsurv_core.regression.model import fit_cox, maximum_likelihood, minimise
from dpsurv_core.regression.person_period import PersonPeriod, person_period
from dpsurv_core.report.text import markdown_code, markdown_literal

guard(__file__)  # before anything is drawn: the page may be reached by its own address

ENTRIES = catalogue.entries(catalogue.REGRESSION, "regression")  # the catalogue's order: the fits, then mechanisms
PRIVATE = [e for e in ENTRIES if e.private]
FIT, COX = [e for e in ENTRIES if not e.private]  # the non-private discrete-time fit and Cox regression
LABELS = {e.id: e.name if e.guarantee == EXACT else f"{e.name} (approximate DP, MCMC)" for e in PRIVATE}
COLOURS = dict(zip([e.id for e in ENTRIES], [palette.BLACK, palette.GREY, *palette.COLOURS], strict=False))
CHAIN = next(e for e in PRIVATE if e.guarantee == APPROXIMATE_MCMC)  # the sampler whose chains are diagnosed below
EPSILONS = [0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0]
STUDY_EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0]
LAMBDAS = [0.0001, 0.001, 0.01, 0.1, 1.0]


st.title("Regression")
st.caption("How do covariates (age, sex, ...) change the risk of the event? A discrete-time survival model fitted "
           "with differential privacy ('Differentially Private Regression for Discrete-Time Survival "
           "Analysis'), next to the usual non-private fit and Cox regression.")

glossary.explainer("regression",
    """
**The model.** Follow-up up to a public *horizon* is cut into T equal intervals (default 20). Each patient
contributes one row per interval they were followed in, labelled 1 in the interval where the event happened and 0
otherwise (the *person-period* data). A logistic regression on those rows gives, for each covariate, an **odds
ratio**: how much the risk of the event in any interval is multiplied per unit of the covariate (or versus the
reference category). For rare events it is close to the **hazard ratio** of Cox regression, shown next to it. The
baseline risk over time is a smooth curve (a natural cubic spline with q knots, default 5).

**Privacy.** To bound what one patient can change, covariates are rescaled into a ball of radius 1 using public
ranges and the fit is *regularised*: a penalty Lambda/2 times the squared size of the coefficients keeps it from
chasing single patients.
- **Output perturbation** fits the model, then adds a random vector whose size is proportional to
  2 T R / (n Lambda epsilon): the most one patient can move the fit, divided by epsilon.
- **Objective perturbation** adds the random vector to the quantity being minimised instead, and then fits.
- **pSGLD** draws the coefficients at random from a "posterior" in which the data count only as much as epsilon
  allows (the exponential mechanism), using a Markov chain. A chain only *approximates* that distribution, so its
  guarantee is **approximate DP (MCMC)**, not a proof.

**Lambda is your choice** (the paper picks the best per data set, which itself looks at the data): larger Lambda
means less noise but coefficients pulled towards 0. The trade-off chart below shows it.

**Epsilon** is the privacy budget of one release: whatever is published, its probability changes by at most a
factor e^epsilon whether or not any one patient is in the data (neighbouring data sets differ by adding or removing
one patient). The private rows first show a *preview* (simulation noise: free, never exported); each fit's Release
button publishes it once: fresh noise, charged to the data set's ledger, labelled *released* with its record id.

**For your eyes only.** The non-private fit, Cox regression, the error study and the chain diagnostics use the raw
data and are not private.

**Categories.** A covariate marked categorical on the Data page (sex, ECOG score, ...) enters as one indicator per
category against a *reference level* (the first category, or the one chosen on the Data page), in the private fits
and in Cox alike; its odds ratio compares that category with the reference.

**Where dpsurv settles what the paper lost**: the bounds used are ||gradient|| <= T R per
patient and the Hessian trace <= T R^2 / 4 with det(I + A/(n Lambda)) <= exp(tr A/(n Lambda)); objective
perturbation adds extra ridge only when epsilon - T R^2/(4 n Lambda) <= 0; the normaliser n of the objective is a
public number (the cohort size, shown as a disclosure unless declared).

**The fits and their sources:**
""" + "\n".join(f"- **{e.name}** ({e.paper}): {e.summary}" for e in ENTRIES))
glossary.terms("odds ratio", "hazard ratio", "reference level", "output perturbation", "objective perturbation",
               "pSGLD", "sanitizer bound", "Wald test", "calibrated p-value", "epsilon", "preview", "release")

choice = session.data_choice()
session.require_rows("a regression")  # a server table kept in DuckDB: one sentence, what works instead
base = session.require_cohort()
mapping = choice.mapping
roles = {mapping.time, mapping.event, mapping.id, mapping.event_type}
candidates = [c for c in choice.frame.columns if c not in roles]
if choice.bundled and choice.name in datasets.DATASETS:
    suggested = list(datasets.info(choice.name).covariates[:2])
else:
    suggested = list(mapping.covariates[:2])
default_covs = [c for c in (list(mapping.covariates) or suggested) if c in candidates][:3] or candidates[:1]

c1, c2, c3 = st.columns([1.6, 1, 1])
_labels = session.value_labels(choice)


def _covariate_name(c: str) -> str:
    """A covariate as the reader knows it: its column, its description and, if categorical, that it is."""
    desc = _labels.describe(c)
    kind = " (categorical)" if _labels.is_categorical(c, choice.frame[c]) else ""
    return f"{c}: {desc}{kind}" if desc else f"{c}{kind}"


covs = c1.multiselect("Covariates", candidates, default=default_covs, key="rg_covs", format_func=_covariate_name,
                      help="Numeric columns are rescaled with public ranges; columns marked categorical on the Data "
                           "page (or holding text) enter as indicators against a reference level.")
epsilon = c2.select_slider("Epsilon per private fit", EPSILONS, value=1.0, key="rg_eps",
                           help="Smaller = more private = noisier. Previews are free; each release is charged "
                                "epsilon.")
lam = c3.select_slider("Lambda (ridge penalty of the perturbation methods)", LAMBDAS, value=0.01, key="rg_lam",
                       format_func=lambda v: f"{v:g}")
chosen = st.multiselect("Private fits to preview", list(LABELS),
                        default=[e.id for e in PRIVATE if e.guarantee == EXACT], format_func=LABELS.__getitem__,
                        key="rg_mechs", help="Previews are free; each fit has its own Release button, and each "
                                             "release is charged epsilon.")
with st.expander("Model and sampler settings (public)"):
    m1, m2, m3, m4 = st.columns(4)
    intervals = int(m1.number_input("Intervals T", 2, 100, 20, 1, key="rg_T"))
    knots = int(m2.number_input("Spline knots q", 2, 20, 5, 1, key="rg_q"))
    epochs = int(m3.number_input("pSGLD epochs", 4, 400, 60, 4, key="rg_epochs"))
    burn_in = int(m4.number_input("pSGLD burn-in epochs", 0, 399, 30, 2, key="rg_burn"))
    p1, p2, p3, p4 = st.columns(4)
    step = float(p1.number_input("pSGLD step a", 0.1, 100.0, 8.0, 0.5, key="rg_step"))
    prior_sd = float(p2.number_input("pSGLD prior sd s", 0.5, 1000.0, 20.0, 1.0, key="rg_prior"))
    bound_in = float(p3.number_input("Sanitizer bound B (0 = T log 2)", 0.0, 1000.0, 0.0, 1.0, key="rg_B",
                                     help=glossary.help_text("sanitizer bound")))
    psgld_draws = int(st.number_input("pSGLD draws released (epsilon split between them)", 1, 20, 1, 1,
                                      key="rg_draws",
                                      help="One draw (the published mechanism) has no interval narrower than the "
                                           "prior; several draws give one from their spread at no extra cost. 5 is "
                                           "the measured choice (about 94% coverage); 10 needs a chain three times as "
                                           "long."))
    info_share = float(st.select_slider("Objective perturbation: share of epsilon on a noisy information matrix",
                                        [0.0, 0.1, 0.2, 0.3], value=0.0, key="rg_info_share",
                                        help="Narrower honest intervals for the same total epsilon (0.2 is the measured "
                                             "choice for a few thousand patients); the coefficients get the rest."))
    published_n = datasets.published_size(choice.name) if choice.bundled and choice.name in datasets.DATASETS \
        else None
    n_input = p4.number_input("Public cohort size n (declared)", min_value=1, max_value=10**9, value=published_n,
                              step=1, key=f"rg_n_{choice.name}", placeholder="from the study design",
                              help="The noise is scaled by 1/n, so n must be public: declare it from the study design "
                                   "(e.g. the number enrolled). For a bundled data set it is the size published with "
                                   "the R package. Left empty, previews count it in the data (not DP) and a release "
                                   "is refused unless you accept publishing the count below.")
    n_declared = int(n_input) if n_input is not None else 0
    ties = cox_view.ties_choice(st)

if not covs:
    st.info("Choose at least one covariate above (for example age) to fit the model.")
    st.stop()
if burn_in >= epochs:
    st.error("The pSGLD burn-in must be shorter than the chain: lower the burn-in or raise the epochs.")
    st.stop()

DESIGN = "rg_design"


def _design(key: tuple, build: Callable[[], tuple[PersonPeriod, PersonPeriod]]
            ) -> tuple[PersonPeriod, PersonPeriod, dict[float, np.ndarray]]:
    """The person-period designs for ``key`` (the private fits' and the non-private fits') and the penalised fits
    w*(Lambda) found on the private one, kept for this session's latest design only: none depends on epsilon, so
    moving the epsilon slider reuses the designs (and their distinct-row compression, the slow part of the fit on
    flchain) and output perturbation's w*(Lambda) (the same L-BFGS call on the same design, so the same numbers)."""
    held = st.session_state.get(DESIGN)
    if held is None or held[0] != key:
        held = (key, *build(), {})
        st.session_state[DESIGN] = held
    return held[1], held[2], held[3]


def _designs(cohort, found, private) -> tuple[PersonPeriod, PersonPeriod]:
    """(private design, reference design): the private fits take the declared categories (every documented code a
    level, whether or not anyone has it: the release's shape must not depend on who is in the data); the
    non-private fit and Cox, for the data holder's eyes, take the categories that occur. One design when they
    agree."""
    def build(cats) -> PersonPeriod:
        data = dataclasses.replace(cohort, covariates=cats.frame) if cats.columns else cohort
        return person_period(data, covs, horizon=public.horizon, intervals=intervals, knots=knots, ranges=declared,
                             levels=cats.levels, n_public=n_declared or None)

    pp = build(private.categories)
    same = private.categories.levels == found.levels and not private.left_out
    return pp, (pp if same else build(found))


try:
    raw = build_cohort(choice.frame, dataclasses.replace(mapping, covariates=tuple(covs)), choice.name,
                       choice.time_unit)
    found = value_labels.encode_categories(
        raw.covariates, dict.fromkeys(value_labels.categorical_columns(raw.covariates, covs, _labels)), _labels)
    levels = declared_levels(raw.covariates, found, _labels)
    cats = levels.categories  # the private fits' categories
    cohort = dataclasses.replace(raw, covariates=found.frame) if found.columns else raw  # as the data has them
    public = session.public_parameters(base)
    declared = {k: v for k, v in choice.covariate_ranges.items() if k in covs}
    # the categories by their names (the labels and reference levels in use), as the fits and caches see them
    data_key = hashlib.sha1(raw.time.tobytes() + raw.event.tobytes()
                            + pd.util.hash_pandas_object(found.frame, index=False).values.tobytes()).hexdigest()[:16]
    pp, pp_ref, fits = _design((choice.name, choice.fingerprint, data_key, repr(raw.mapping), raw.rows_per_subject,
                                tuple(covs), intervals, knots, public.horizon, repr(sorted(declared.items())),
                                repr(sorted(cats.levels.items())), repr(sorted(found.levels.items())), n_declared),
                               lambda: _designs(raw, found, levels))
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
disclosures = [d for d in public.disclosures() if d.parameter == "horizon"] + cats.disclosures + pp.disclosures
psgld_kw = dict(epochs=epochs, burn_in=burn_in, step=step, prior_sd=prior_sd, bound_B=bound_in or None)
unit = cohort.time_unit


# Process-wide caches hold bundled (public) data only; an upload's results stay in this session (dpsurv_app.cache).
def _baselines_compute(_cohort, _pp):
    fit = nonprivate_fit(_pp)  # kept on the design: the previews' non-private p-values reuse it
    # R's coxph (the ties chosen; with a subject id its cluster = id robust variance): a category with no event is NA
    cox = fit_cox(_cohort, _pp, ties, robust=cox_view.robust_wanted(mapping.id))
    return fit.table(), fit.beta, cox.table, tuple(cox.warnings), cox.model.clusters if cox.model else None


@st.cache_data(show_spinner=False, max_entries=16)
def _baselines_shared(name: str, key: str, _cohort, _pp):
    return _baselines_compute(_cohort, _pp)


def _baselines(key: str, _cohort, _pp):
    return by_data(choice.bundled, ("rg_baselines", key), lambda: _baselines_compute(_cohort, _pp),
                   lambda: _baselines_shared(choice.name, key, _cohort, _pp))


try:
    np_table, beta_star, cox_table, cox_warnings, clusters = _baselines(
        (data_key, tuple(covs), intervals, knots, public.horizon, repr(sorted(declared.items())), ties,
         mapping.id).__repr__(), cohort, pp_ref)
    # the non-private fit on the private design (its coefficient of a declared level nobody has is 0): the chains'
    # and the error study's reference
    beta_private = beta_star if pp is pp_ref else maximum_likelihood(pp)[: pp.p]
    # regression mechanisms (compute, publication; the catalogue's base type has neither)
    mechs: dict[str, Any] = {k: catalogue.get(catalogue.REGRESSION, k).build(
        epsilon, pp=pp, lam=lam, information_share=info_share, **psgld_kw) for k in chosen}
    for m in mechs.values():
        if psgld_draws > 1 and hasattr(m, "set_draws"):  # the sampler: several draws, epsilon in total
            m.set_draws(psgld_draws)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()

# ------------------------------------------------------------------------------------------------ preview or release
CLI_NAMES = {"bound_B": "sanitizer_bound"}  # the sampler settings whose command-line option is named otherwise
# categories named by labels the command line does not ship (set on the Data page): it reads them from a file
relabelled = session.relabelled(cats.columns, choice)
LABELS_FILE = session.labels_file(choice)


def draw_inference(kind: str, mech, draw, preview: bool):
    """Noise-aware intervals and tests of one draw: post-processing, deterministic given it, so kept for the session
    (a rerun showing the same draw, and the record of a release and its display, compute it once)."""
    return session_cache(
        ("coefficient-inference", choice.fingerprint, kind, repr(mech.parameters()), preview,
         tuple(draw.pp.encoding.names), repr(sorted(cats.names.items())),
         digest(draw.W, draw.pp.encoding.to_original, draw.diagnostics.get("information", 0),
                draw.diagnostics.get("draws_W", 0))),
        lambda: coefficient_inference(mech, draw, nonprivate=preview, labels=cats.names))


def display_name(name: str) -> str:
    """A coefficient's name as a reader says it (``sex: Female vs Male``, ``age``), as plain text: escaped where it is
    drawn (:func:`plain_label` in a figure, ``markdown_literal`` in Markdown)."""
    return cats.names.get(name, name)


def regression_plan(kind: str) -> Plan:
    """The release plan of one private fit, as ``python -m dpsurv_core regression`` builds it."""
    entry, mech = catalogue.get(catalogue.REGRESSION, kind), mechs[kind]
    command = {**cv.data_options(choice, covariates=covs), "mechanism": kind, "epsilon": epsilon,
               **cv.grid_options(choice, public, grid=False), "intervals": intervals, "knots": knots,
               "lambda": lam if "lam" in entry.options else None, "n_public": n_declared or None}
    command.update({CLI_NAMES.get(k, k): psgld_kw[k] for k in entry.options if k in psgld_kw})
    command["categorical"] = cats.option()
    command["information_share"] = info_share if "information_share" in entry.options and info_share else None
    command["labels"] = LABELS_FILE if relabelled else None
    command["draws"] = psgld_draws if psgld_draws > 1 and hasattr(mech, "set_draws") else None
    ranges = [f"{k}:{lo:.10g}:{hi:.10g}" for k, (lo, hi) in sorted(declared.items())]

    def compute(noise, trials):
        if isinstance(mech, OutputPerturbation):  # w*(Lambda) + noise: the minimiser is kept with the design
            if mech.lam not in fits:
                fits[mech.lam] = minimise(pp, mech.lam)
            return mech.compute(pp, noise, trials=trials, w_star=fits[mech.lam])
        return mech.compute(pp, noise, trials=trials)

    names = {n: display_name(n) for n in pp.encoding.names}
    return Plan(entry, mech, cohort.name, choice.fingerprint, compute, disclosures=list(disclosures),
                command=cv.command_line("regression", command, {"range": ranges}), analysis="regression",
                kind=readout.KIND, publish=lambda rel: readout.publication(kind, mech, rel, names))


NEXT_STEP = "spend more epsilon, raise Lambda or use a larger cohort before reading this number"
NEXT_STEP_NO_LAMBDA = "spend more epsilon or use a larger cohort before reading this number"  # pSGLD's


def readable(sentence: str, kind: str = "") -> str:
    """A warning of the core (its coefficients already named as readers say them, ``sex: Female vs Male``) ending
    with what to do next (this page releases one pSGLD draw: several draws are the command line's --draws)."""
    sentence = sentence.replace("(--draws, epsilon split", "(pSGLD draws released, in the model settings above; "
                                                        "--draws on the command line; epsilon split")
    if not any(w in sentence for w in ("spend", "raise", "use a larger", "choose", "remove", "declare")):
        has_lambda = not kind or "lam" in catalogue.get(catalogue.REGRESSION, kind).options
        sentence = sentence.rstrip(".") + f": {NEXT_STEP if has_lambda else NEXT_STEP_NO_LAMBDA}."
    return sentence


# values read off the data (the horizon, a range, the categories, n): the Release button stays off until each is
# declared, or ticked to publish it as read (dpsurv_app.release_panel; the release is then not DP as run, and says so)
pending = undeclared(disclosures)

shown, labels, infs = {}, {}, {}
for kind in chosen:
    with st.container(border=True):
        try:
            plan = regression_plan(kind)
            shown[kind], rel, labels[kind] = cv.explore_or_release(plan, f"regression-{kind}",
                                                                   f"Release {LABELS[kind]}")
        except DpsurvError as exc:
            st.error(f"{LABELS[kind]}: {markdown_literal(exc)}")
            continue
        mech = mechs[kind]
        kind_word = "exact DP" if mech.cost.guarantee == EXACT else \
            "approximate DP (MCMC): the chain only approximates the sampling distribution the proof needs"
        if any(not d.dp for d in disclosures):
            kind_word = "none: not DP, because of the disclosure marked not DP below"
        if pending and rel is None:
            kind_word += (f" (a release needs {markdown_literal(', '.join(u.name for u in pending))} declared, or published as read "
                          "off the data by ticking below: then not DP as run)")
        extra = ""
        if hasattr(mech, "sensitivity"):
            extra = f"; sensitivity 2 c1/(n Lambda) = {plain_number(mech.sensitivity)}"
        elif hasattr(mech, "epsilon_prime"):
            extra = f"; epsilon' = {plain_number(mech.epsilon_prime)} for the noise" + \
                (f", extra ridge {plain_number(mech.extra_ridge)}" if mech.extra_ridge else "")
        if rel is not None:
            head = f"**{LABELS[kind]}** released as record {rel.record_id}, charged: {rel.entry.cost.sentence()}."
        else:
            head = (f"**{LABELS[kind]}**, preview (not charged, not for publication). A release would charge: "
                    f"{mech.cost.sentence()}.")
        st.markdown(f"{head} Guarantee: {kind_word}{extra}.")
        # noise-aware intervals and tests (the non-private p in previews only)
        infs[kind] = draw_inference(kind, mech, shown[kind], rel is None)
        if infs[kind].warnings:  # the sentences are gathered after the table; each row says its own in short
            st.caption(f"{len(infs[kind].warnings)} sentence(s) to read with care: see 'Read with care' after the "
                       "table.")
        st.caption(f"95% intervals and p-values of this fit carry the privacy noise: {infs[kind].method}.")
        st.caption("Reproduce on the command line (a new release, charged again): " + markdown_code(plan.command))
        if relabelled:
            st.caption(f"The command reads the category names of {markdown_literal(', '.join(relabelled))} from "
                       f"{markdown_code(LABELS_FILE)}: save "
                       "it with 'Labels as JSON' on the Data page, next to where you run the command.")
box = st.container(border=True)
if not chosen:
    box.markdown("No private fit chosen: choose one above to preview it.")
for disc in disclosures:
    if disc.dp:
        box.info(f"Disclosure ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)}")
    else:
        box.warning(f"Disclosure ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)} To keep the guarantee, declare "
                    "this value (the public cohort size in the settings above, ranges and the horizon on the Data "
                    "page).")
if pp.dropped:
    box.caption(f"{pp.dropped} subject(s) with a missing covariate value were left out (complete cases).")

# ------------------------------------------------------------------------------------------------ table
if cats.references:
    st.markdown("**Reference levels** (odds and hazard ratios of a category are against it): " + "; ".join(
        f"{markdown_literal(c)}: {markdown_literal(r)}" for c, r in cats.references.items()) + ".")
glossary.terms("reference level", title="Categories enter as indicators against a reference level")


st.subheader("Coefficient table")
parts = [np_table.assign(estimate=FIT.name, ratio=RATIO_KIND, epsilon=f"none ({NO_NOISE})"),
         cox_table.assign(estimate=COX.name, ratio="hazard ratio", epsilon=f"none ({NO_NOISE})")]
for kind, rel in shown.items():
    charged = "charged" if labels[kind] != "preview" else "if released; preview: none"
    parts.append(inference_table(infs[kind]).assign(estimate=f"{LABELS[kind]}, {labels[kind]}", ratio=RATIO_KIND,
                                           epsilon=f"{rel.cost.sentence()} ({charged})",
                                           caution=row_cautions(infs[kind])))
table = pd.concat(parts, ignore_index=True)
show = rv.coefficient_table(table, display_name)
cv.show_table(show, f"regression-{cohort.name}", "rg_table")
for sentence in cox_warnings:
    st.warning(f"{COX.name}: " + markdown_literal(sentence), icon="⚠️")
robust = cox_view.robust_table(cox_table, display_name)
if robust is not None and mapping.id:
    st.markdown(f"**{markdown_literal(COX.name)} with robust (cluster) standard errors**")
    cv.show_table(robust, f"cox-robust-{cohort.name}", "rg_robust_table", confidential=True)
    st.caption(cox_view.robust_caption(mapping.id, clusters, len(cohort.time), ties))
gathered = [(kind, sentence) for kind in shown for sentence in infs[kind].warnings]
if gathered:
    with st.container(border=True):
        st.markdown("**Read with care**")
        for kind, sentence in gathered:
            st.warning(f"{LABELS[kind]}: " + markdown_literal(readable(sentence, kind)), icon="⚠️")
if ((table.odds_ratio > 1e3) | (table.odds_ratio < 1e-3)).any():
    st.caption("A ratio shown as below 0.001 or above 1,000 means, in a private row, that the noise swamped the "
               "estimate at this epsilon and Lambda: raise epsilon or Lambda, or use more patients, before reading it "
               "clinically.")
st.caption(f"n = {pp.n} subjects, {pp.y.size} person-period rows, T = {intervals} intervals of "
           f"{pp.horizon / intervals:.4g} {unit} up to the horizon {pp.horizon:.4g} {unit}; the non-private discrete-time "
           f"fit has Lambda = 0 (maximum likelihood), Cox is fitted as R's coxph ({ties.capitalize()} ties). Ratios are per unit of a numeric "
           "covariate, or of a category against its reference level. 95% intervals and p-values of the non-private "
           "fits are Wald's; those of the private rows carry the privacy noise (drawn from its public law) on top of "
           "the sampling error, and their p-value is a Wald test calibrated for that noise; previews also show the "
           "non-private p of the maximum-likelihood fit beside it (never in a release). p is given to two "
           "significant digits, and as < 0.001 below that.")

# ------------------------------------------------------------------------------------------------ forest plot
st.subheader("Forest plot")
groups = [(FIT.id, parts[0]), (COX.id, parts[1])] + [(k, p) for k, p in zip(shown, parts[2:])]
ypos = {c: i for i, c in enumerate(dict.fromkeys([*pp_ref.encoding.names, *pp.encoding.names]))}
ffig, off_scale = rv.forest_figure(parts, groups, ypos, COLOURS, display_name)
show_figure(ffig, f"regression-forest-{cohort.name}", "rg_forest", width="stretch")
if off_scale:
    st.caption("Off the scale (drawn as triangles at the edge): " + "; ".join(off_scale) + ". At this epsilon and "
               "Lambda the noise swamps the estimate; try a larger epsilon or Lambda (see the trade-off below).")

# ------------------------------------------------------------------------------------------------ simulation settings
st.subheader("Simulations on this data (for the data holder's eyes)")
q1, q2 = st.columns(2)
trials = int(q1.select_slider("Simulated fits per point (pSGLD: at most 10 chains)", [10, 20, 50], value=20,
                              key="rg_trials"))
seed = int(q2.number_input("Seed", 0, 2**31 - 1, 2024, 1, key="rg_seed"))
design_key = (data_key, tuple(covs), intervals, knots, public.horizon, repr(sorted(declared.items())),
              repr(sorted(cats.levels.items())), pp.n_public)


# ------------------------------------------------------------------------------------------------ chain diagnostics
st.subheader(f"{CHAIN.name}: chain diagnostics (simulation)")


def _chains_compute(eps: float, seed: int, psgld: tuple, _pp, beta_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mech: Any = CHAIN.build(eps, pp=_pp, **dict(psgld))  # the sampler (compute with beta_ref; the base type has none)
    rel = mech.compute(_pp, SimulationNoise(seed), trials=4, beta_ref=beta_ref)
    return rel.diagnostics["trace"], rel.diagnostics["mre_by_epoch"]


@st.cache_data(show_spinner=False, max_entries=32)
def _chains_shared(name: str, key: tuple, eps: float, seed: int, psgld: tuple, _pp,
                   beta_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return _chains_compute(eps, seed, psgld, _pp, beta_ref)


def _chains(key: tuple, eps: float, seed: int, psgld: tuple, _pp, beta_ref: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return by_data(choice.bundled, ("rg_chains", key, eps, seed, psgld),
                   lambda: _chains_compute(eps, seed, psgld, _pp, beta_ref),
                   lambda: _chains_shared(choice.name, key, eps, seed, psgld, _pp, beta_ref))


run_chains = st.toggle("Run four pSGLD chains (several seconds)", value=False, key="rg_run_chains")
if math.isinf(epsilon):
    st.caption("No chain at epsilon = inf.")
elif not run_chains:
    st.info("Switch on the chains above to see whether the pSGLD sampler settles at this epsilon and these settings.")
else:
    with st.spinner("Running four seeded chains ..."):
        trace, mre_ep = _chains(design_key, float(epsilon), seed, tuple(sorted(psgld_kw.items())), pp, beta_private)
    tfig = rv.chains_figure(trace, mre_ep, pp.encoding.names, pp.encoding.to_original, beta_private, burn_in,
                            COLOURS[CHAIN.id], display_name)
    show_figure(tfig, f"regression-chains-{cohort.name}", "rg_chains", width="stretch")
    st.caption(f"Four seeded chains at epsilon {epsilon:g} (simulation, not charged): each coefficient in original "
               f"units against the epochs, the non-private value dashed, the burn-in ({burn_in} epochs) shaded. The "
               "chains should settle around a common level; MRE by epoch should flatten. A release is the state of one "
               "chain at a random epoch after the burn-in; its guarantee is approximate DP (MCMC).")


# ------------------------------------------------------------------------------------------------ study
st.subheader("Error against epsilon (simulation)")
st.caption("Repeated simulated fits on the current data with seeded noise, for the data holder's eyes, to choose a "
           "mechanism, epsilon and Lambda. They are not releases and are not charged to the ledger. MRE = mean over "
           "draws of ||beta - beta*|| / ||beta*||, beta* the non-private fit (rescaled covariates).")


def _mre_compute(kind: str, eps: float, lam: float, trials: int, seed: int, psgld: tuple, _pp) -> dict:
    cell_seed = seed * 1000 + list(LABELS).index(kind) * 100 + int(round(eps * 10))
    return mre_study(_pp, [eps], lam, trials, cell_seed, (kind,), dict(psgld))[0]


@st.cache_data(show_spinner=False, max_entries=512)
def _mre_shared(name: str, key: tuple, kind: str, eps: float, lam: float, trials: int, seed: int, psgld: tuple,
                _pp) -> dict:
    return _mre_compute(kind, eps, lam, trials, seed, psgld, _pp)


def _mre_cell(key: tuple, kind: str, eps: float, lam: float, trials: int, seed: int, psgld: tuple, _pp) -> dict:
    return by_data(choice.bundled, ("rg_mre", key, kind, eps, lam, trials, seed, psgld),
                   lambda: _mre_compute(kind, eps, lam, trials, seed, psgld, _pp),
                   lambda: _mre_shared(choice.name, key, kind, eps, lam, trials, seed, psgld, _pp))


run_study = st.toggle("Run the error study (about half a minute on lung; the pSGLD chains are the slow part)",
                      value=False, key="rg_run_study",
                      help="Off by default so the page answers at once; once run, the results are kept for this "
                           "session and redraws are instant.")
if not run_study:
    st.info("The error study is off: switch it on above to simulate each fit's error against epsilon and the Lambda "
            "trade-off on this data (the points appear as they are computed).")
    st.stop()
cells = [(k, e) for k in LABELS for e in STUDY_EPSILONS]
bar = st.progress(0.0, text="Simulating ...")
chart = st.empty()
rows = []
for i, (kind, e) in enumerate(cells):
    n_trials = min(trials, 10) if kind == CHAIN.id else trials
    rows.append(_mre_cell(design_key, kind, e, lam, n_trials, seed, tuple(sorted(psgld_kw.items())), pp))
    bar.progress((i + 1) / len(cells), text=f"Simulating {LABELS[kind]} at epsilon {e:g} ({i + 1}/{len(cells)})")
    if kind != cells[min(i + 1, len(cells) - 1)][0] or i + 1 == len(cells):  # a mechanism's line is complete
        part = pd.DataFrame(rows)
        partial = rv.error_figure(part, LABELS, COLOURS)
        if i + 1 < len(cells):
            chart.plotly_chart(partial, width="stretch", key=f"rg_partial_{i}")
bar.empty()
chart.empty()
study = pd.DataFrame(rows)
show_figure(partial, f"regression-error-{cohort.name}", "rg_study", width="stretch")
cv.show_table(study.assign(mechanism=study.mechanism.map(LABELS)), f"regression-error-{cohort.name}", "rg_study_table")


@st.cache_data(show_spinner=False, max_entries=64)
def _lambda_shared(name: str, key: tuple, eps: float, trials: int, seed: int, _pp) -> list[dict]:
    return lambda_study(_pp, LAMBDAS, [eps], trials, seed)


def _lambda_curve(key: tuple, eps: float, trials: int, seed: int, _pp) -> list[dict]:
    return by_data(choice.bundled, ("rg_lambda", key, eps, trials, seed),
                   lambda: lambda_study(_pp, LAMBDAS, [eps], trials, seed),
                   lambda: _lambda_shared(choice.name, key, eps, trials, seed, _pp))


with st.spinner("Simulating the Lambda trade-off ..."):
    lam_rows = pd.DataFrame(_lambda_curve(design_key, float(epsilon), trials, seed, pp))
lfig = rv.lambda_figure(lam_rows, LABELS, COLOURS, lam, epsilon)
show_figure(lfig, f"regression-lambda-{cohort.name}", "rg_lambda", width="stretch")

