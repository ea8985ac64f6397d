"""Weibull parameters: LSP + TLL vs Laplace vs sample-and-aggregate vs the maximum-likelihood fit (Nguyen & Hui 2017, Weibull)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from dpsurv_app import curves_view as cv
from dpsurv_app import glossary, palette, release_panel, session
from dpsurv_app import weibull_view as wv
from dpsurv_app.cache import background_started, by_data, digest, prefetch, prefetched, session_cache
from dpsurv_app.downloads import show_figure, show_table, table_download
from dpsurv_app.gate import guard
from dpsurv_core.data import datasets
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import NO_NOISE, SUBJECT, as_run, charged_sentence
from dpsurv_core.privacy.release import PREVIEW_SPREAD_DRAWS, Plan, cli_command, preview_spread
from dpsurv_core.publication.declared import UndeclaredValueError, enforce, undeclared
from dpsurv_core.report.text import markdown_code, markdown_literal, time_in
from dpsurv_core.weibull import readout
from dpsurv_core.weibull.baselines import SampleAggregateWeibull
from dpsurv_core.weibull.inference import (
    censoring_disclosure,
    censoring_share,
    n_disclosure,
    release_intervals,
    wald_intervals,
)
from dpsurv_core.weibull.lsp import Ladder, compute_ladder
from dpsurv_core.weibull.mechanisms import BLOCK_SIZE, mdae_study
from dpsurv_core.weibull.model import (
    GAMMA,
    OMEGA,
    RUNGS,
    WeibullFit,
    WeibullSample,
    kaplan_meier,
    lifelines_fit,
    weibull_mle,
)

guard(__file__)  # before anything is drawn: the page may be reached by its own address

PRIVATE = catalogue.entries(catalogue.WEIBULL, "weibull", private=True)  # the mechanisms, in the catalogue's order
# the private mechanisms' reference: the clipped MLE, the estimator they estimate (not R's survreg fit)
FIT = catalogue.get(catalogue.WEIBULL, catalogue.reference_id(catalogue.WEIBULL))
SURVREG = catalogue.get(catalogue.WEIBULL, catalogue.SURVREG)  # the times as they are, as R's survreg fits them
IDS = [e.id for e in PRIVATE]
LABELS = {e.id: e.name for e in PRIVATE}
COLOURS = dict(zip(IDS, palette.COLOURS, strict=False))
EPSILONS = [0.1, 0.2, 0.4, 0.5, 0.8, 1.0, 1.6, 2.0, 3.2, 5.0, 10.0]
STUDY_EPSILONS = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2]

st.title("Weibull parameters")
st.caption("Fit a Weibull survival model, S(t) = exp(-(t/scale)^shape), and publish its two numbers with "
           "differential privacy: the LSP + TLL mechanisms of Nguyên & Hui next to two simple baselines.")

glossary.explainer("weibull",
    """
**The model.** A Weibull model summarises a whole survival curve with two numbers. The **shape** says how
the risk changes over time (shape < 1: the risk falls with time, = 1: constant risk, > 1: the risk rises, as with
ageing). The **scale** is a typical survival time: about 63% of patients have had the event by then. The
maximum-likelihood fit (the usual, non-private one, as in lifelines' `WeibullFitter`) uses every patient's
exact time, so publishing it can leak something about individual patients.

**The private mechanisms** (their sources are listed at the end) publish noisy versions instead. Times are first divided
by a public *horizon* and squeezed into the range e^-omega to 1, so no single patient can move the sums much.
- **LSP** (shape): it works out how far the shape could move if 1, 2, 3, ... patients were added or removed;
  these bounds form a *ladder* of nested intervals around the true shape (drawn below). It then picks a value
  at random, favouring the rungs close to the true value: a rung k steps away is exp(k epsilon / 4) times
  less likely. Large cohorts have very narrow rungs, so the published shape is very close to the truth.
- **TLL** (scale): adds Laplace noise to the number of events and to the sum of t^shape, then recomputes the scale.
- **Baselines**: *Laplace* adds noise sized for the worst case to each parameter; *sample-and-aggregate*
  fits the model on random blocks of about 500 patients and adds noise to the average.

**Epsilon** is the privacy budget of one release: whatever is published, the chance of seeing it changes by a
factor of at most e^epsilon whether or not any one patient is in the data (neighbouring data sets differ by
adding or removing one patient). Each mechanism spends epsilon/2 on the shape and epsilon/2 on the scale; the
ledger charges epsilon per release. Smaller epsilon = more privacy = more noise.

**Preview, then release.** The private rows first show a *preview*: a draw with simulation noise that costs
nothing and is never exported. Only a mechanism's Release button publishes: it draws fresh noise, charges the data
set's ledger epsilon and labels the numbers *released* with their record id.

**For your eyes only.** The maximum-likelihood row, the Kaplan-Meier curve and the error study below are
computed on the raw data and are *not* private: they are there to judge the private numbers, not to publish.
**Where dpsurv settles what the paper leaves open**: a missing root of the ladder
equations is clamped to the end of the search range (0, gamma]; rungs at k >= the number of events are the whole
range [0, gamma]; the rungs are forced to nest (running min and max); a non-positive noisy sum in TLL is clamped
(to one event, or one patient at the earliest time) and the result says so; times beyond the horizon count as
the horizon; the number of sample-and-aggregate blocks is a public setting (derived from the cohort size only
with a disclosure).

**The mechanisms and their sources:**
""" + "\n".join(f"- **{e.name}** ({e.paper}): {e.summary}" for e in PRIVATE))
glossary.terms("Weibull", "LSP rung", "TLL", "sample and aggregate", "global sensitivity", "omega", "clipped MLE",
               "gamma", "epsilon", "preview", "release", "Kaplan-Meier")

cohort, choice, public = session.analysis_inputs()
unit = cohort.time_unit
horizon = float(public.horizon)
# data source: a server table kept in DuckDB offers the mechanisms that read its table of distinct times (as the CLI)
in_engine = cv.in_engine(cohort)
OFFERED, engine_left_out = cv.engine_mechanisms(IDS, catalogue.WEIBULL) if in_engine else (IDS, [])
if in_engine:
    st.caption(f"{cv.engine_note(engine_left_out)} The fits below come from the table's distinct times and events, "
               "computed by DuckDB, as the command line does. The lifelines fit needs the rows: the maximum-likelihood "
               "row is dpsurv's own (Equations 4-5), which agrees with lifelines to about 1e-6 on the same data, and "
               "the Kaplan-Meier curve is the exact one from the engine's counts.")

# ------------------------------------------------------------------------------------------------ controls
c1, c2 = st.columns([1, 1.4])
with c1:
    epsilon = st.select_slider("Privacy budget epsilon per release (smaller = more private, noisier)",
                               options=EPSILONS, value=1.0, key="wb_epsilon")
with c2:
    chosen = st.multiselect("Preview with", OFFERED, default=OFFERED[:1], key="wb_mechanisms",
                            format_func=LABELS.__getitem__,
                            help="Previews are free; each mechanism has its own Release button, and each release is "
                                 "charged epsilon.")
with st.expander("Public settings of the Weibull mechanisms", expanded=False):
    s1, s2, s3, s4 = st.columns(4)
    omega = s1.number_input("omega (times are kept above e^-omega of the horizon)", 0.5, 20.0, OMEGA, 0.5,
                            key="wb_omega", help=glossary.help_text("omega"))
    gamma = s2.number_input("gamma (upper bound of shape and scale)", 1.0, 100.0, GAMMA, 1.0, key="wb_gamma",
                            help=glossary.help_text("gamma"))
    rungs = int(s3.number_input("Rungs K of the LSP ladder", 1, 2000, RUNGS, 50, key="wb_rungs"))
    blocks_in = int(s4.number_input("SAA blocks (0 = records / 500, disclosed)", 0, 1000, 0, 1, key="wb_blocks"))
    # declared on the Data page (a bundled data set's published size is its n); these fields override them here
    data_n = getattr(choice, "n_public", None) or (datasets.published_size(choice.name) if choice.bundled else None)
    data_share = getattr(choice, "censoring", None)
    n1, n2 = st.columns(2)
    share_field = n1.number_input(
        "Censoring share used to simulate the intervals (empty = "
        + (f"{data_share:g}, as declared on the Data page)" if data_share is not None
           else "read off the data, rounded to 5%, disclosed)"), 0.0, 0.95, None, 0.05, key="wb_censoring",
        help="The share of patients censored in the study design: the noise-aware intervals simulate cohorts with it. "
             "Read off the data it is not covered by epsilon, so a release then needs your tick beside its button.")
    n_field = int(n2.number_input(
        "Number of patients n the intervals simulate (0 = "
        + (f"{data_n:,}, as declared on the Data page)" if data_n else "counted in the data, disclosed)"),
        0, 10**9, 0, 1, key="wb_n",
        help="The number of patients whose cohorts the noise-aware intervals simulate: declare it from the study "
             "design (e.g. the number enrolled). Counted in the data, the intervals would reveal it, so a release then "
             "needs your tick beside its button. For a bundled data set it is the size published with the R package."))
    share_in = share_field if share_field is not None else data_share  # declared here or on the Data page, or None
    n_in = n_field or data_n or 0  # declared here or on the Data page (0: counted in the data)
    st.caption(f"Horizon T_max = {horizon:g} {unit} (set on the Data page). Follow-up ends there: an event after "
               "it is censored at the horizon; times near 0 count as e^-omega of it.")
blocks = blocks_in or None


def _span(lower: float, upper: float) -> str:
    """A scale interval as clinicians read times: "0 to 11,000 days", not "0 to 1.1e+04"."""
    return f"{time_in(lower, unit).removesuffix(' ' + unit)} to {time_in(upper, unit)}"


# Process-wide caches hold bundled (public) data only; an upload's results stay in this session (dpsurv_app.cache).
@st.cache_data(show_spinner=False, max_entries=32)
def _lifelines_shared(name: str, t: np.ndarray, d: np.ndarray, horizon: float, omega: float):
    return lifelines_fit(WeibullSample(t, d, horizon, omega))


def _per_subject(s: WeibullSample) -> tuple[np.ndarray, np.ndarray]:
    """The sample's times and events per subject: a sample read into memory has them (one from an engine's table of
    distinct times does not)."""
    if s.t is None or s.d is None:
        raise ValueError("This Weibull sample holds no per-subject times (it was read from an engine's table).")
    return s.t, s.d


def _lifelines(t: np.ndarray, d: np.ndarray, horizon: float, omega: float):
    return by_data(choice.bundled, ("wb_lifelines", digest(t, d, horizon, omega)),
                   lambda: lifelines_fit(WeibullSample(t, d, horizon, omega)),
                   lambda: _lifelines_shared(choice.name, t, d, horizon, omega))


try:
    fit_mech = wv.weibull_mechanism(FIT, horizon=horizon, omega=omega, gamma=gamma, rungs=rungs,
                                    rows_per_subject=cohort.rows_per_subject)
    # a table kept on the server: its table of distinct times is one query, kept in this session per source and map
    sample = (session_cache(("wb_engine_sample", cv.data_key(cohort, public), horizon, omega),
                            lambda: fit_mech.prepare(cohort)) if in_engine else fit_mech.prepare(cohort))
    mle = weibull_mle(sample)
    survreg: WeibullFit | None
    try:  # R's survreg fit on the times as they are (refused when a time is 0, as survreg refuses it)
        _sr = wv.weibull_mechanism(SURVREG, horizon=horizon, rows_per_subject=cohort.rows_per_subject)
        survreg, survreg_refused = weibull_mle(
            session_cache(("wb_engine_survreg", cv.data_key(cohort, public), horizon), lambda: _sr.prepare(cohort))
            if in_engine else _sr.prepare(cohort)), ""
    except DpsurvError as exc:
        survreg, survreg_refused = None, str(exc)
    ll = None if in_engine else _lifelines(*_per_subject(sample), horizon, omega)  # lifelines reads each subject
    mechs = {name: wv.weibull_mechanism(
        catalogue.get(catalogue.WEIBULL, name), epsilon, horizon=horizon, omega=omega, gamma=gamma, rungs=rungs,
        rows_per_subject=cohort.rows_per_subject, blocks=blocks, block_size=BLOCK_SIZE) for name in chosen}
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()


@st.cache_data(show_spinner=False, max_entries=32)
def _ladder_shared(name: str, t: np.ndarray, d: np.ndarray, horizon: float, omega: float, gamma: float,
                   rungs: int) -> Ladder:
    return compute_ladder(WeibullSample(t, d, horizon, omega), rungs, gamma)


def _ladder(t: np.ndarray, d: np.ndarray, horizon: float, omega: float, gamma: float, rungs: int) -> Ladder:
    return by_data(choice.bundled, ("wb_ladder", digest(t, d, horizon, omega, gamma, rungs)),
                   lambda: compute_ladder(WeibullSample(t, d, horizon, omega), rungs, gamma),
                   lambda: _ladder_shared(choice.name, t, d, horizon, omega, gamma, rungs))


ladder = (session_cache(("wb_ladder_engine", digest(sample.lt_u, sample.c_u, sample.e_u, horizon, omega, gamma, rungs)),
                        lambda: compute_ladder(sample, rungs, gamma)) if in_engine
          else _ladder(*_per_subject(sample), horizon, omega, gamma, rungs))
horizon_disclosures = [d for d in public.disclosures() if d.parameter == "horizon"]  # the only public input used
share = censoring_share(sample) if share_in is None else float(share_in)
if not 0.0 <= share < 1.0:  # a share declared on the Data page may be 1: no event to simulate
    st.error(f"The declared censoring share is {share:g}: the noise-aware intervals simulate cohorts with events, so "
             "declare a share below 1 (in the public settings above or on the Data page).")
    st.stop()
share_disclosures = [censoring_disclosure(share)] if share_in is None else []
# the number of patients the intervals simulate: declared, or counted in the data (disclosed); previews use it too
n_used = n_in or cohort.n_subjects
n_disclosures = [] if n_in else [n_disclosure(cohort.n_subjects)]
# values a release would read off the data: each Release button stays off until they are declared or ticked beside it
pending = undeclared([*share_disclosures, *n_disclosures, *(d for m in mechs.values() for d in m.disclosures(sample))])
if pending and chosen:
    st.caption(f"Read off the data: {markdown_literal(', '.join(u.what for u in pending))}. Declare the number of subjects and the "
               "censoring share on the Data page or in the public settings above (which override it here), the SAA "
               "blocks above; read off the data, epsilon does not cover them, so a release needs your tick beside its "
               "Release button and its record says it is not DP as run.")


def _intervals_compute(name: str, eps: float, shape: float, scale_normalised: float, n: int, share: float,
                       horizon: float, omega: float, gamma: float, rungs: int, rows: int, blocks: int | None,
                       clamped: bool) -> dict:
    """Noise-aware intervals of one release: post-processing of the released numbers and public inputs (and the
    disclosed censoring share)."""
    return release_intervals(name, eps, shape, scale_normalised, n, share, horizon, omega, gamma, rungs, rows, blocks,
                             BLOCK_SIZE, clamped)


@st.cache_data(show_spinner=False, max_entries=256)
def _intervals_shared(data: str, *args) -> dict:
    return _intervals_compute(*args)


def _intervals(*args) -> dict:
    """Cached process-wide for a bundled data set, in this session only otherwise (its n and share come from it); a
    result this session started in the background (:func:`_prefetch_neighbours`) is picked up, waiting if needed.
    The intervals depend on ``args`` only (released numbers and public inputs), so the key needs no data name."""
    return prefetched("wb_intervals", args, lambda: by_data(
        choice.bundled, ("wb_intervals", args), lambda: _intervals_compute(*args),
        lambda: _intervals_shared(choice.name, *args)))


def _interval_args(name: str, eps: float, est) -> tuple:
    """The arguments of :func:`_intervals` for the first release of ``est`` (whether TLL clamped it included, as the
    command line's intervals read it)."""
    clamped = est.clamped is not None and bool(est.clamped[0])
    return (name, float(eps), float(est.shape[0]), float(est.scale_normalised[0]), n_used, share, horizon,
            omega, gamma, rungs, cohort.rows_per_subject, blocks, clamped)


def _prefetch_neighbours(names: list[str]) -> None:
    """Start, in a background process, the intervals of the previews one slider step either side of the current
    epsilon (the same previews, seed and arguments the page computes when the slider moves there), so that the redraw
    after one step finds them ready or under way; the current epsilon's own job is kept if it is under way. The
    previews themselves are cheap and computed here. The worker takes the newest job first, so the smaller epsilon is
    submitted last: it runs first (its simulation is the slower one, with more LSP rungs)."""
    i = EPSILONS.index(float(epsilon)) if float(epsilon) in EPSILONS else -1
    jobs: dict[Hashable, tuple[Callable[..., Any], tuple]] = {}
    keep: list[tuple] = []
    for j in (i, i + 1, i - 1):
        if i < 0 or not 0 <= j < len(EPSILONS):
            continue
        for name in names:
            try:
                est = release_panel.preview(weibull_plan(name, None if j == i else EPSILONS[j]))
            except DpsurvError:
                continue
            args = _interval_args(name, EPSILONS[j], est)
            if j == i:
                keep.append(args)
            else:
                jobs[args] = (release_intervals, (*args[:-1], BLOCK_SIZE, args[-1]))
    prefetch("wb_intervals", jobs, keep)


def next_step(sentence: str, name: str) -> str:
    """A warning of the core ending with what to do next (the default mechanism's own warnings do not point to it)."""
    if any(w in sentence for w in ("spend", "raise", "use a larger", "choose", "declare", "set ", "lower")):
        return sentence
    best = catalogue.default_id(catalogue.WEIBULL)
    other = "" if name == best else f" use {LABELS[best]},"
    return sentence.rstrip(".") + f": raise epsilon,{other} or use a larger cohort before reading it."


def weibull_plan(name: str, eps: float | None = None) -> Plan:
    """The release plan of one mechanism, as ``python -m dpsurv_core weibull`` builds it (at the page's epsilon, or at
    ``eps``)."""
    entry = catalogue.get(catalogue.WEIBULL, name)
    mech = mechs[name] if eps is None else wv.weibull_mechanism(
        entry, eps, horizon=horizon, omega=omega, gamma=gamma, rungs=rungs, rows_per_subject=cohort.rows_per_subject,
        blocks=blocks, block_size=BLOCK_SIZE)
    kw = {"ladder": ladder} if hasattr(mech, "ladder") else {}  # LSP reuses the page's ladder (same rungs, gamma)
    values = {"omega": omega, "gamma": gamma, "rungs": rungs, "blocks": blocks, "block_size": BLOCK_SIZE}
    disclosures = [*horizon_disclosures, *mech.disclosures(sample), *share_disclosures, *n_disclosures]
    command = {**cv.data_options(choice), "mechanism": name, "epsilon": epsilon if eps is None else eps, "censoring": share_in,
               "n_public": n_in or None, **cv.grid_options(choice, public, grid=False),
               **{k: values[k] for k in entry.options if k in values}}
    saa_blocks = mech.n_blocks if isinstance(mech, SampleAggregateWeibull) and blocks is None else None
    from_data = saa_blocks is not None  # SAA's number of blocks read off the data

    def publish(est) -> tuple[dict, dict]:
        """(released, public inputs) of a release: the noisy estimates and the declared values (or, accepted, the
        values read off the data); the record's intervals are computed from these two alone (weibull.readout)."""
        return readout.released_of(est), readout.public_inputs(
            mech, n_used, share, unit, blocks=saa_blocks(sample) if saa_blocks is not None else None,
            horizon_from_data=public.horizon_from_data, n_from_data=not n_in, censoring_from_data=share_in is None,
            blocks_from_data=from_data)

    return Plan(entry, mech, cohort.name, choice.fingerprint,
                lambda noise, trials: mech.compute_many(sample, noise, trials, **kw), disclosures,
                cli_command("weibull", command), analysis="Weibull parameters", kind=readout.KIND, publish=publish)


# ------------------------------------------------------------------------------------------------ preview or release
early = background_started()
if early:
    _prefetch_neighbours(chosen)
results, labels, records, intervals, guarantees = {}, {}, {}, {}, {}
for name in chosen:
    with st.container(border=True):
        try:
            plan = weibull_plan(name)
            results[name], rel, labels[name] = cv.explore_or_release(plan, f"weibull-{name}", f"Release {LABELS[name]}")
        except DpsurvError as exc:
            st.error(f"{LABELS[name]}: {markdown_literal(exc)}")
            continue
        mech = mechs[name]
        if rel is None and mech.cost.epsilon is not None:  # how much the noise moves a preview: 20 draws, free
            spread = cv.preview_spread_of(plan, f"weibull-{name}")
            if spread is not None:
                (s10, s50, s90), (c10, c50, c90) = (preview_spread(spread.shape), preview_spread(spread.scale))
                st.caption(f"Across {PREVIEW_SPREAD_DRAWS} preview draws (simulation noise, free, never exported): "
                           f"shape {s10:.3g} to {s90:.3g} (10th to 90th percentile; median {s50:.3g}), scale "
                           f"{c10:.4g} to {c90:.4g} {unit} (median {c50:.4g}).")
        split = f"(epsilon/2 = {mech.epsilon_shape:g} for the shape, {mech.epsilon_scale:g} for the scale)"
        # what a release would record: a value read off the data only once ticked beside the Release button
        # (dpsurv_app.release_panel.accept_boxes), and then not DP as run; until then the button is off
        ticked = [u.name for u in undeclared(plan.disclosures)
                  if st.session_state.get(f"accept-weibull-{name}-{u.name}")]
        would: Sequence[Any]
        try:
            would = rel.entry.disclosures if rel is not None else enforce(plan.disclosures, ticked)
        except UndeclaredValueError:
            would = plan.disclosures
        guarantee = as_run(mech.cost, would)
        cost = rel.entry.cost if rel is not None else mech.cost
        charge = markdown_literal(f"{charged_sentence(cost, would)} {split}")
        if rel is not None:
            records[name] = rel.record_id
            st.markdown(f"**{LABELS[name]}** released as record {rel.record_id}, charged to this data set's ledger: "
                        f"{charge}.")
        else:
            st.markdown(f"**{LABELS[name]}**, preview (not charged, not for publication). A release would charge: "
                        f"{charge}.")
        guarantees[name] = guarantee
        for note in results[name].notes:
            st.caption(markdown_literal(note))
        caveat = getattr(mech, "caveat", None)  # the Laplace baseline's
        if caveat and caveat():
            st.info(caveat(unit), icon=":material/lightbulb:")
        est0 = results[name]
        if rel is not None and rel.publication is not None:  # a release: the intervals its record derives
            intervals[name] = rel.publication.derived["intervals"][0]
        else:
            with st.spinner("Simulating the noise-aware intervals ..."):
                intervals[name] = _intervals(*_interval_args(name, epsilon, est0))
        iv = intervals[name]
        st.markdown(f"95% intervals carrying the privacy noise: shape {iv['shape']['lower']:.3g} to "
                    f"{iv['shape']['upper']:.3g}; scale {_span(iv['scale']['lower'], iv['scale']['upper'])}.")
        for sentence in iv["warnings"]:
            st.warning(markdown_literal(next_step(sentence, name)), icon="⚠️")
        st.caption(f"How: {iv['method']}.")
        for disc in mech.disclosures(sample):
            if disc.dp:
                st.info(f"Disclosure ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)}", icon="ℹ️")
            else:
                st.warning(f"Not differentially private ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)} "
                           "To make it private, declare this value in the public settings above.", icon="⚠️")
        st.caption("Reproduce on the command line (a new release, charged again): " + markdown_code(plan.command))
if not chosen:
    st.markdown("No private mechanism chosen: choose one above (LSP + TLL is the recommended one) to preview it.")
for disc in horizon_disclosures:
    st.info(f"Disclosure ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)}", icon="ℹ️")
for disc in [*share_disclosures, *n_disclosures] if chosen else []:
    st.info(f"Disclosure ({markdown_literal(disc.parameter)}): {markdown_literal(disc.message)}", icon="ℹ️")
if chosen and not horizon_disclosures:
    st.caption("Disclosures of the horizon: none (it was declared on the Data page).")


# ------------------------------------------------------------------------------------------------ study (cached)
def _study_compute(t: np.ndarray, d: np.ndarray, horizon: float, omega: float, rows: int, name: str, eps: float,
                   trials: int, seed: int, gamma: float, rungs: int, blocks: int | None) -> dict:
    s = WeibullSample(t, d, horizon, omega, rows)
    lad = _ladder(t, d, horizon, omega, gamma, rungs)  # used by the mechanisms that draw from the ladder
    cell_seed = [int(seed), IDS.index(name), int(round(eps * 1000))]
    return mdae_study(s, [eps], trials, cell_seed, (name,), gamma, rungs, blocks, BLOCK_SIZE, ladder=lad)[0]


@st.cache_data(show_spinner=False, max_entries=512)
def _study_shared(data: str, *args) -> dict:
    return _study_compute(*args)


def _study_cell(*args) -> dict:
    return by_data(choice.bundled, ("wb_study", digest(*args)), lambda: _study_compute(*args),
                   lambda: _study_shared(choice.name, *args))


# ------------------------------------------------------------------------------------------------ table
st.subheader("Parameter table")
fmt_scale = "{:,.1f}" if unit == "days" else "{:,.2f}"
rows = [
    *([] if ll is None else [
        {"Estimate": "Maximum likelihood, lifelines WeibullFitter, clipped times (not private)", "Shape p": ll.shape,
         f"Scale ({unit})": ll.scale, "Scale / T_max": ll.scale_normalised, "Epsilon": f"none ({NO_NOISE})"}]),
    {"Estimate": "Maximum likelihood, Equations 4-5, clipped times: the private rows' reference (not private)",
     "Shape p": mle.shape, f"Scale ({unit})": mle.scale,
     "Scale / T_max": mle.scale_normalised, "Epsilon": f"none ({NO_NOISE})",
     **({} if (wald := wald_intervals(sample, mle.shape, mle.scale_normalised, horizon)) is None else {
         "Shape 95% interval": f"{wald.shape.lower:.3g} to {wald.shape.upper:.3g}",
         "Scale 95% interval": _span(wald.scale.lower, wald.scale.upper)})},
]
for name, est in results.items():
    protects = guarantees[name]["protects"]
    charge_text = f"{mechs[name].cost.epsilon:g} (" + (f"protects {protects}; add/remove one" if protects == SUBJECT
                                                       else "not DP as run: protects nothing formally") + ")"
    iv = intervals.get(name)
    rows.append({"Estimate": f"{LABELS[name]}, {labels[name]}", "Shape p": float(est.shape[0]),
                 "Shape 95% interval": "" if iv is None else f"{iv['shape']['lower']:.3g} to {iv['shape']['upper']:.3g}",
                 f"Scale ({unit})": float(est.scale[0]),
                 "Scale 95% interval": "" if iv is None else _span(iv["scale"]["lower"], iv["scale"]["upper"]),
                 "Scale / T_max": float(est.scale_normalised[0]),
                 "Epsilon": (f"{charge_text}, charged" if name in records
                             else f"{charge_text} if released; preview: none")})
table = pd.DataFrame(rows)
st.dataframe(table.style.format({"Shape p": "{:.4f}", f"Scale ({unit})": fmt_scale, "Scale / T_max": "{:.4f}"},
                                na_rep="–"), hide_index=True, width="stretch")
table_download(table, f"weibull-{cohort.name}", "wb_table-csv")
st.caption(f"n = {sample.n} records, {sample.n_events} events, horizon T_max = {horizon:g} {unit}. "
           + ("The maximum-likelihood row is" if ll is None else "The two maximum-likelihood rows agree to about 1e-6; "
              "they are") + " for the data holder's eyes only. Preview rows are "
           "not for publication; released rows are the published numbers. The private rows' 95% intervals carry the "
           "privacy noise and the sampling error together (a parametric bootstrap from the released numbers, inverted "
           "over the true shape: no second look at the data); the maximum-likelihood row's is the Wald interval on "
           "the log scale (the sampling error only, as R's survreg).")
# which reference the table shows: the clipped MLE (what the private mechanisms estimate), and R's survreg beside it
if survreg is None:
    _survreg = f"R's survreg on the times as they are gives no fit here: {survreg_refused}"
elif math.isclose(survreg.shape, mle.shape, rel_tol=1e-12) and math.isclose(survreg.scale, mle.scale, rel_tol=1e-12):
    _survreg = "R's survreg on the times as they are gives the same fit here: no time lies below the floor."
else:
    _survreg = (f"R's survreg on the times as they are (weibull --mechanism mle) gives shape {survreg.shape:.4f} and "
                f"scale {time_in(survreg.scale, unit)}: some times lie below the floor.")
st.caption(f"**Reference: the clipped MLE** ({FIT.id}), the maximum-likelihood fit on times kept above e^-omega of "
           f"the horizon ({math.exp(-omega) * horizon:.3g} {unit}): the private mechanisms estimate it, so their rows "
           "are compared with it. " + markdown_literal(_survreg))

# ------------------------------------------------------------------------------------------------ curves
st.subheader("Fitted survival curves over the Kaplan-Meier curve")
if cv.in_engine(cohort):  # the exact Kaplan-Meier from the engine's counts at every event time (no row read)
    km_exact = cv.exact_results(session.engine_cohort(dataclasses.replace(cohort.mapping, group=None)), public)[0]
    km_t, km_s = np.append(0.0, km_exact.curves.time), np.append(1.0, km_exact.curves.survival[0, 0])
    for note in km_exact.notes:
        st.caption(markdown_literal(note))
else:
    km_t, km_s = kaplan_meier(cohort.time, cohort.event)
grid = np.linspace(0.0, horizon, 300)
fig, invalid = wv.curves_figure(km_t, km_s, grid, mle, results, labels, LABELS, COLOURS, unit)
show_figure(fig, f"weibull-curves-{cohort.name}", "wb_curves", width="stretch")
if results:
    st.caption("The private Weibull curves are drawn without a band: their uncertainty is given per parameter (the "
               "shape's and the scale's 95% intervals in the table above, which carry the noise); no joint band for "
               "the curve is computed, so read the curve's distance from the Kaplan-Meier curve with those intervals.")
if invalid:
    st.caption(f"No curve for {', '.join(invalid)}: the noise made the shape or the scale non-positive, which is no "
               "Weibull distribution. That is what the baselines' worst-case noise does at this epsilon: raise epsilon or use "
               "LSP + TLL.")

# ------------------------------------------------------------------------------------------------ ladder
st.subheader("The LSP ladder (a teaching view of the paper's Figure 1)")
k_show = st.slider("Rungs shown", 3, min(80, rungs + 1), min(15, rungs + 1), key="wb_kshow")
lfig = wv.ladder_figure(ladder, k_show, epsilon, results, mechs, labels, LABELS, cohort.rows_per_subject)
show_figure(lfig, f"weibull-lsp-ladder-{cohort.name}", "wb_ladder", width="stretch")
st.caption(f"Rung k holds every shape that the data could produce if up to k patients were added or removed, "
           f"minus the shapes of rung k-1. Here rung 1 spans {ladder.lower[1]:.4f} to {ladder.upper[1]:.4f} around "
           f"p* = {ladder.p_star:.4f}. LSP draws a rung with probability proportional to its width times "
           f"exp(-k epsilon/4), then a shape uniformly inside it. With {sample.n_events} events, rungs at "
           f"k >= {sample.n_events} would be the whole range [0, gamma].")

# the next redraw: the intervals one epsilon step either side start in another process; the first time on this server
# once this view is drawn (starting the worker would slow the first view down), later while it is drawn
if not early:
    _prefetch_neighbours(list(results))

# ------------------------------------------------------------------------------------------------ study
st.subheader("Typical error vs epsilon (simulation)")
st.caption("Repeated simulated releases on the current data with seeded noise: for the data holder's eyes, to "
           "choose a mechanism and an epsilon. They are not releases and are not charged to the ledger.")
for _mech in mechs.values():
    _caveat = getattr(_mech, "caveat", None)  # the Laplace baseline's
    if _caveat and _caveat():
        st.markdown(_caveat(unit))
if in_engine:
    st.info("The error study is not run for a table kept on the server: this page's study simulates from each "
            "subject's time and event, which stay in DuckDB. The command line's `weibull --seed S --repeat R` "
            "simulates releases from the engine's table of times.")
    st.stop()
if not st.toggle("Run the error study (several seconds; kept for this session once run)", value=False,
                 key="wb_run_study"):
    st.info("The error study is off so the page answers at once: switch it on above to simulate each mechanism's "
            "typical error against epsilon on this data.")
    st.stop()
q1, q2 = st.columns(2)
trials = int(q1.select_slider("Simulated releases per point", [50, 100, 200, 500], value=200, key="wb_trials"))
seed = int(q2.number_input("Seed", 0, 2**31 - 1, 2024, 1, key="wb_seed"))
eps_grid = sorted(set(STUDY_EPSILONS) | {float(epsilon)})
cells = [(name, e) for name in IDS for e in eps_grid]
bar = st.progress(0.0, text="Simulating ...")
study_rows = []
try:
    for i, (name, e) in enumerate(cells):
        study_rows.append(_study_cell(sample.t, sample.d, horizon, omega, sample.rows_per_subject, name, e, trials,
                                      seed, gamma, rungs, blocks))
        bar.progress((i + 1) / len(cells), text=f"Simulating {LABELS[name]} at epsilon {e:g} ({i + 1}/{len(cells)})")
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
bar.empty()
study = pd.DataFrame(study_rows)
sfig = wv.error_figure(study, IDS, LABELS, COLOURS, unit)
show_figure(sfig, f"weibull-error-{cohort.name}", "wb_study", width="stretch")
now = study[study.epsilon == float(epsilon)].set_index("mechanism")
shape_err = ", ".join(f"{now.loc[n, 'mdae_shape']:.3g} for {LABELS[n]}" for n in IDS)
scale_err = ", ".join(f"{now.loc[n, 'mdae_scale']:,.0f} {unit} for {LABELS[n]}" if now.loc[n, "mdae_scale"] >= 100
                      else f"{now.loc[n, 'mdae_scale']:.3g} {unit} for {LABELS[n]}" for n in IDS)
st.caption(f"At epsilon {epsilon:g} over {trials} simulated releases, the median error of the shape is {shape_err}; "
           f"of the scale {scale_err}.")
with st.expander("Error table"):
    show = study.assign(mechanism=study.mechanism.map(LABELS))[
        ["mechanism", "epsilon", "epsilon_per_parameter", "mdae_shape", "mdae_scale", "mdae_scale_normalised",
         "trials"]]
    show_table(show, f"weibull-error-{cohort.name}", "wb_study_table", hide_index=True, width="stretch")
