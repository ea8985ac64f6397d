"""Planning: from the precision a study needs to the epsilon of each release, before any data are read.

The page reads the declaration and the targets at once; it simulates nothing until "Simulate and plan" is pressed for
the declaration. Then it calls :func:`dpsurv_core.planning.make_plan` (its progress in a status box) and draws the
plan; the simulated releases are kept per declaration (``st.cache_resource``) and, once the plan is drawn, filled in
at every epsilon searched (:func:`dpsurv_core.planning.plan.prefill`, with a progress bar), so a changed target, cap
or mechanism re-plans at once from releases already made, with the same answer as ``python -m dpsurv_core plan``."""

from __future__ import annotations

import json
import threading

import pandas as pd
import streamlit as st

from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer
from dpsurv_core.errors import DpsurvError
from dpsurv_core.planning import Study, Survival, parse_target
from dpsurv_core.planning.document import document, target_rows
from dpsurv_core.planning.study import sizes_of
from dpsurv_core.planning.targets import FORMS, MECHANISMS
from dpsurv_core.report.text import markdown_literal

guard(__file__)  # before anything is drawn: the page may be reached by its own address

LAWS = ("Median (exponential)", "Weibull shape and scale", "Public curve (CSV of time,survival)")
ALL_MECHANISMS = tuple(dict.fromkeys(m for ms in MECHANISMS.values() for m in ms))
DEFAULT_TARGETS = "survival:365:0.08\nmedian:200\nlogrank-power:0.6:0.8"

st.title("Planning")
st.caption("How much epsilon does the study need? Declare it from public knowledge, say what precision you need, and "
           "read the smallest epsilon that delivers it, before touching the data.")
explainer(
    "planning",
    "**Nothing here reads your data or spends budget.** The study is declared as a protocol would state it: the "
    "number of subjects per group, the follow-up, the public time grid, the share of subjects you expect censored "
    "and the survival you expect (from the literature or a registry). dpsurv simulates cohorts from that "
    "declaration, releases each one with the mechanism's own code at many epsilons (with seeded simulation noise) "
    "and reads every release as a published one is read.\n\n"
    "**Targets**, one per line: `survival:T:H` (the 95% interval of survival at time T within +-H in every group), "
    "`median:H`, `rmst:T:H`, `logrank-power:HR:P` (the private log-rank test finds a hazard ratio HR with "
    "probability P), `weibull-shape:H`, `coefficient:H`. A target is met when the median simulated release meets it; "
    "the table also shows the 10th and 90th percentiles, since a real release varies around the median.\n\n"
    "**The plan** names, for each analysis, the mechanism and epsilon to release with; the epsilons add up "
    "(sequential composition). Download it as JSON for `budget set --plan`, or as a document for an ethics "
    "application.",
)

# ------------------------------------------------------------------------------------------ the declaration
st.subheader("The study, as declared")
c1, c2, c3, c4 = st.columns(4)
n = int(c1.number_input("Subjects in all", 10, 1_000_000, 400, 10, key="pl_n"))
groups = int(c2.number_input("Groups of equal size", 1, 8, 2, 1, key="pl_groups"))
horizon = float(c3.number_input("Follow-up (horizon)", 1.0, 1e6, 1825.0, 1.0, key="pl_horizon"))
unit = c4.text_input("Time unit", "days", key="pl_unit")
c1, c2, c3, c4 = st.columns(4)
bins = int(c1.number_input("Public grid: equal bins to the horizon", 1, 500, 20, 1, key="pl_bins"))
censoring = float(c2.number_input("Share censored by the horizon", 0.0, 0.95, 0.2, 0.05, key="pl_censoring",
                                  help="Drop-outs (uniform in time) and everyone still event-free at the horizon."))
law = c3.selectbox("Expected survival", LAWS, key="pl_law")
curve_text = None
with c4:
    if law == LAWS[0]:
        median = float(st.number_input(f"Expected median ({unit})", 1.0, 1e6, 730.0, 1.0, key="pl_median"))
    elif law == LAWS[1]:
        shape = float(st.number_input("Shape", 0.05, 20.0, 1.2, 0.05, key="pl_shape"))
        scale = float(st.number_input(f"Scale ({unit})", 1.0, 1e6, 900.0, 1.0, key="pl_scale"))
    else:
        upload = st.file_uploader("Public curve", type=["csv", "txt"], key="plan-curve-file")
        curve_text = upload.getvalue().decode("utf-8-sig", errors="replace") if upload is not None else None

st.subheader("What precision the study needs")
t1, t2 = st.columns([2, 1])
spec = t1.text_area("Targets, one per line", DEFAULT_TARGETS, height=120, key="pl_targets",
                    help="Forms: " + ", ".join(FORMS.values()) + ".")
with t2:
    chosen = st.multiselect("Mechanisms", ALL_MECHANISMS, default=["laplace-counts"], key="pl_mechanisms",
                            help="Each target is planned for every chosen mechanism that can serve it; the plan takes, "
                                 "per analysis, the one needing the least epsilon. rrr protects the group label only.")
    cap = float(st.number_input("Cap to share (0: none)", 0.0, 100.0, 0.0, 0.1, key="pl_cap"))
    cohorts = int(st.select_slider("Simulated cohorts per epsilon", [5, 8, 16, 32], value=16, key="pl_cohorts",
                                   help="For half-width targets (power targets simulate 240)."))

try:
    if law == LAWS[0]:
        survival = Survival.exponential(median)
    elif law == LAWS[1]:
        survival = Survival.weibull(shape, scale)
    elif curve_text is None:
        st.info("Upload a public curve (rows of time,survival) to plan with it.")
        st.stop()
    else:
        survival = Survival.from_csv_text(curve_text, "uploaded curve")
    study = Study(sizes_of(n, groups, None), horizon, (0.0, horizon, bins), censoring, survival, unit or "days")
    targets = [parse_target(line) for line in spec.splitlines() if line.strip()]
    if not targets:
        st.warning("Give at least one target.")
        st.stop()
    if not chosen:
        st.warning("Choose at least one mechanism.")
        st.stop()
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()


@st.cache_resource(max_entries=4, show_spinner=False)
def simulated(declaration: str, cohorts: int) -> tuple[dict, threading.Lock]:
    """The simulated releases of one declaration, shared by every target asked of it (and a lock: sessions share
    them)."""
    return {}, threading.Lock()


# the first view simulates nothing: the cohorts are simulated when asked, once per declaration; after that a changed
# target, mechanism or cap re-plans at once from the releases kept for it
declaration = json.dumps(study.to_dict(), sort_keys=True)
asked_for = f"{declaration}|{cohorts}"
if st.session_state.get("pl_asked") != asked_for:
    changed = "pl_asked" in st.session_state
    st.info(("The declaration has changed since the last plan. " if changed else "")
            + "**Simulate and plan** simulates the declared study and releases it at the epsilons searched (a few "
              "seconds for each mechanism; nothing is read or charged). After that, changed targets are answered at "
              "once from the kept simulations.", icon=":material/science:")
    if not st.button("Simulate and plan", key="plan-run", type="primary", icon=":material/play_arrow:"):
        st.stop()
    st.session_state["pl_asked"] = asked_for

# the planner (its search imports SciPy) only once a plan is asked: the first view does not load it
from dpsurv_core.planning.plan import kept_releases, make_plan, prefill  # noqa: E402

cache, lock = simulated(declaration, cohorts)
made = kept_releases(cache)
with st.status("Planning: simulating the declared study and releasing it at the epsilons searched",
               expanded=False) as status:

    def told(line: str) -> None:
        """Each step of the plan: the status's label (seen while it runs) and a line inside it (kept)."""
        status.update(label=f"Planning: {line}")
        status.write(line)

    try:
        with lock:
            plan = make_plan(study, targets, chosen, cap=cap or None, cohorts=cohorts, cache=cache, progress=told)
    except DpsurvError as exc:
        status.update(label="Planning stopped", state="error")
        st.error(markdown_literal(exc))
        st.stop()
    new = kept_releases(cache) - made
    status.update(state="complete", label=(
        f"Simulated: the cohorts released at {new} new epsilons in {plan['seconds']:g} s" if new
        else f"Read from the simulations kept for this declaration in {plan['seconds']:g} s"))

# ------------------------------------------------------------------------------------------ the plan
st.subheader("The plan")
total = plan["epsilon"]
if plan["reachable"]:
    st.success(f"Every target is met with a total epsilon of **{total:g}**"
               + (f" (cap {cap:g})." if cap else "."), icon=":material/check_circle:")
else:
    st.warning(f"Not every target can be met below epsilon 10: the plan shows the best it reaches (total "
               f"{total:g}). Notes in the table say what would reach them.", icon=":material/warning:")
st.dataframe(pd.DataFrame(target_rows(plan)), hide_index=True, key="plan-table")
releases = pd.DataFrame([{"Release": i + 1, "Analysis": r["analysis"], "Mechanism": r["mechanism"],
                          "Epsilon": r["epsilon"], "Targets": ", ".join(r["targets"]),
                          "Guarantee": r["guarantee"]["in_words"]} for i, r in enumerate(plan["releases"])])
st.dataframe(releases, hide_index=True, key="plan-releases")
st.caption(f"Total epsilon {plan['budget']['total']:g}: {plan['budget']['composition']}. Planned in "
           f"{plan['seconds']:g} s; nothing was read from any data set and nothing was charged.")
d1, d2, _ = st.columns([1, 1, 2])
d1.download_button("Plan as JSON", json.dumps(plan, indent=1, allow_nan=False, default=str), "plan.json",
                   "application/json", key="plan-json", on_click="ignore", icon=":material/download:",
                   help="The plan file: `python -m dpsurv_core budget set --plan plan.json` sets the cap from it.")
d2.download_button("Plan as a document (Markdown)", document(plan, "md"), "plan.md", "text/markdown", key="plan-md",
                   on_click="ignore", icon=":material/download:",
                   help="For an ethics application: the declaration, each release, the total and the guarantees.")

# after the plan is drawn: the declaration's remaining epsilons, so that a changed target is read from stored releases
PREFILL = ("Preparing for quick changes: releasing the simulated cohorts at the remaining epsilons (once per "
           "declaration and log-rank scenario)")
KEPT = ("Kept for quick changes: the simulated releases at every epsilon searched. A changed half-width or power, a "
        "new time or a cap is answered from them; a new hazard ratio or mechanism simulates anew.")
slot = st.empty()  # the progress bar while something is released, then the sentence saying it is done


def prefill_progress(fraction: float) -> None:
    slot.progress(fraction, text=PREFILL)


prefill(study, targets, chosen, cohorts, cache=cache, around=[t["epsilon"] or 10.0 for t in plan["targets"]],
        progress=prefill_progress, lock=lock)
slot.caption(KEPT)
