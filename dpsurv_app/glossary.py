"""Words a clinician uses: a glossary of the technical terms on the pages, and the page explainers.

* :data:`GLOSSARY`: one or two plain sentences per term (no formulas: docs/mechanisms.md has those).
* :func:`term` draws a term as a small popover button that opens its definition; :func:`help_text` gives the same
  sentence for a widget's ``help=`` tooltip; :func:`terms` draws a row of them ("Words on this page").
* :func:`explainer` draws a page's "What am I looking at?" box, expanded on the page's first visit in this browser
  session and collapsed on later visits (``app.py`` calls :func:`start_run` so a visit is told from a rerun).
"""

from __future__ import annotations

import streamlit as st

GLOSSARY: dict[str, str] = {
    "Kaplan-Meier": "The usual survival curve: at each time, the share of patients still event-free, estimated so "
                    "that censored patients count for as long as they were followed.",
    "censored": "A patient whose event was not seen: follow-up stopped first (end of study, lost to follow-up). "
                "They are known to have survived at least that long.",
    "number at risk": "Patients still followed and event-free just before a time point: the people a curve's next "
                      "step is estimated from. Where it reaches zero, the curve says nothing more.",
    "Greenwood": "The standard formula for the uncertainty of a Kaplan-Meier curve (Greenwood, 1926), from which its "
                 "confidence band is drawn.",
    "confidence band": "The range around a curve that would contain the true survival 95 times out of 100 in repeated "
                       "studies. Private curves say whether their band also carries the privacy noise.",
    "life-table rule": "On a grid of time bins, patients censored within a bin are counted as at risk for half of it, "
                       "as actuarial life tables do; with exact event times no such rule is needed.",
    "median survival": "The time by which half the patients have had the event: where the curve crosses 50%. "
                       "'Not reached' when the curve stays above 50%.",
    "RMST": "Restricted mean survival time: the average event-free time up to a chosen horizon, the area under the "
            "survival curve. It is defined even when the median is not reached.",
    "log-rank": "The standard test of whether survival differs between groups: it compares the events seen in each "
                "group with those expected if the groups were alike.",
    "p-value": "How surprising the observed difference would be if the groups truly did not differ. Small values "
               "(say below 0.05) suggest a real difference; it does not measure how large it is.",
    "hazard ratio": "How much faster events happen in one group than in the reference group: 0.5 halves the risk at "
                    "every moment, 2 doubles it, 1 means no difference.",
    "reference level": "The category every other category of a variable is compared with (for sex, say, Male); its "
                       "hazard ratio is 1 by definition.",
    "Weibull": "A two-number model of survival (shape and scale): the shape says whether the risk rises, falls or "
               "stays constant over time, the scale how long patients typically survive.",
    "Cox model": "The usual regression for survival: it estimates a hazard ratio for each covariate (age, sex, ...) "
                 "without assuming a shape for the survival curve.",
    "differential privacy": "A promise about what is published: any single patient's data changes the published "
                            "numbers' probabilities only a little, so nobody can tell from them whether that patient "
                            "took part.",
    "epsilon": "The privacy budget of a release: smaller is more private and noisier. Releases add up, so a data "
               "set's total epsilon is what its cap limits.",
    "budget cap": "The most epsilon the data holder allows to be spent on a data set over all its releases; a release "
                  "that would pass it is refused before any noise is drawn.",
    "ledger": "The permanent record of every release: what was published, at which epsilon and when. It is "
              "tamper-evident: editing or deleting a record is detected.",
    "release": "Numbers drawn once with fresh privacy noise, charged to the budget and recorded, meant to be "
               "published. Previews are not releases.",
    "preview": "A draw with practice noise to see what a release would look like. It costs nothing, is never "
               "recorded and must not be published.",
    "add/remove neighbours": "The usual privacy unit: two data sets that differ by one whole patient (added or taken "
                             "away). An epsilon under this rule protects whether a patient took part at all.",
    "change-one-label": "A weaker privacy unit: two data sets that differ only in one patient's group label. Such an "
                        "epsilon protects the label (say, which arm), not the patient's participation or times.",
    "public parameters": "Settings that shape the output and must be fixed from the study design, not the data: time "
                         "axis, horizon, group names, covariate ranges. Anything read off the data is disclosed.",
    "disclosure": "A value read off the data rather than declared (a horizon, the group names, a range). It is shown "
                  "beside every release, because it is not protected by the noise.",
    "LSP rung": "The private Weibull shape is chosen from a ladder of nested intervals around the true value; each "
                "interval is a rung, and rungs further from the truth are drawn with exponentially smaller chance.",
    "sanitizer bound": "In the private Bayesian regression (pSGLD), each patient's contribution to the likelihood is "
                       "squashed to at most this size, which limits what one patient can change.",
    "pSGLD": "A sampler that draws regression coefficients from a noisy posterior distribution; its privacy comes "
             "from the sampling itself and holds only approximately.",
    "membership inference": "An attack that tries to tell, from the published numbers, whether a given patient was "
                            "in the data. The privacy audit runs it to check the promise in practice.",
    "time-indexed": "A private curve that adds noise to the survival probability at each grid time directly, instead "
                    "of to the counts of events and patients at risk.",
    # tests and p-values
    "calibrated test": "A private test whose p-value is read against what noise alone would produce (simulated from "
                       "the release and the public noise law, at no privacy cost), so that a p below 0.05 still means "
                       "a 5% false-alarm rate.",
    "disclosure control": "Traditional protections (suppressing small counts, rounding, smoothing): they make "
                          "re-identification harder but have no epsilon and no formal guarantee.",
    "exposure": "How much of its epsilon a release could reveal about one patient in the worst case seen by the "
                "audit's attacks; lower is better, and it should never exceed the epsilon charged.",
    "empirical epsilon": "The epsilon an attack actually achieves in simulation: a lower bound on the true privacy "
                         "loss, to compare with the epsilon charged.",
    # Weibull page
    "omega": "A public setting: survival times are divided by the horizon and kept above e^-omega of it, so no "
             "single very short time can move the private sums much.",
    "clipped MLE": "The maximum-likelihood Weibull fit on times kept above e^-omega of the horizon: the number the "
                   "private mechanisms estimate, so they are compared with it. R's survreg fits the times as they are; "
                   "the two differ only when a time lies below that floor.",
    "gamma": "A public upper bound on the Weibull shape and scale (scale as a share of the horizon). The private "
             "mechanisms search and clip within [0, gamma]; the Laplace baseline's noise is sized by it.",
    "TLL": "The private Weibull scale of Nguyen & Hui: noise is added to the number of events and to the sum of the "
           "times raised to the private shape, and the scale is recomputed from the two noisy sums.",
    "sample and aggregate": "Split the patients at random into blocks, fit the model in each block, and add noise "
                            "to the average of the blocks' fits: one patient changes only one block.",
    "global sensitivity": "The most one patient could change a number in any data set whatsoever. Noise sized for it "
                          "(as the Laplace baseline's) does not shrink with a larger or better-behaved cohort.",
    # Regression page
    "odds ratio": "How much the odds of the event in any interval are multiplied per unit of a covariate (or in a "
                  "category against the reference level). For rare events it is close to the hazard ratio.",
    "output perturbation": "Fit the model as usual, then add random noise to the coefficients, sized for the most one "
                           "patient can move the fit.",
    "objective perturbation": "Add random noise to the quantity being minimised, then fit: the noise enters before "
                              "the fit instead of after it, and is usually smaller.",
    "Wald test": "The usual test that a coefficient is zero: the estimate divided by its standard error, read on a "
                 "normal curve. It gives the p-value of the non-private fits.",
    "calibrated p-value": "A p-value of a private fit whose reference distribution includes the privacy noise (whose "
                          "law is public), so that it is not too small just because the noise moved the estimate.",
}


def _lookup(name: str) -> tuple[str, str]:
    for key, text in GLOSSARY.items():
        if key.lower() == name.lower():
            return key, text
    raise KeyError(f"{name!r} is not in the glossary: add it to dpsurv_app/glossary.py")


def define(name: str) -> str:
    """The definition of a glossary term (case-insensitive)."""
    return _lookup(name)[1]


def help_text(name: str) -> str:
    """The definition, for a widget's ``help=`` tooltip."""
    key, text = _lookup(name)
    return f"**{key}**: {text}"


def term(name: str, label: str | None = None, key: str | None = None) -> None:
    """A popover button showing ``label`` (default the term) that opens the term's definition."""
    k, text = _lookup(name)
    with st.popover(label or k, type="tertiary", icon=":material/help:", key=key):
        st.markdown(f"**{k}**")
        st.markdown(text)


def terms(*names: str, title: str = "Words on this page") -> None:
    """A row of :func:`term` popovers (wrapping on narrow screens), under a short caption."""
    st.caption(title)
    with st.container(horizontal=True, wrap=True, gap="small"):
        for name in names:
            term(name)


# ---------------------------------------------------------------------- explainers
_VISIT, _PAGE, _SEEN = "_glossary_visit", "_glossary_page", "_glossary_seen"


def start_run(page: str) -> None:
    """Called by ``app.py`` on every run with the current page: a change of page starts a new visit."""
    if st.session_state.get(_PAGE) != page:
        st.session_state[_PAGE] = page
        st.session_state[_VISIT] = st.session_state.get(_VISIT, 0) + 1


def first_visit(page_key: str) -> bool:
    """True during the first visit of ``page_key`` in this session (every rerun of that visit included)."""
    visit = st.session_state.get(_VISIT, 0)
    seen: dict = st.session_state.setdefault(_SEEN, {})
    first = seen.setdefault(page_key, visit)
    return first == visit


def explainer(page_key: str, text: str, title: str = "What am I looking at?") -> None:
    """The page's explainer: expanded on the page's first visit in this session, collapsed afterwards."""
    with st.expander(title, expanded=first_visit(page_key), icon=":material/school:"):
        st.markdown(text)
