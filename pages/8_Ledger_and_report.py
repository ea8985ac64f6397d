"""Ledger and report: every release of the session, the total against the cap, and exports."""

import pandas as pd
import streamlit as st

from dpsurv_core.report.figures import ledger_figure
from dpsurv_core.report.html import release_bundle, session_report
from ui import releases, session

st.title("Ledger and report")

with st.expander("What am I looking at?"):
    st.markdown(
        "Every time this app shows you a **private** result, it spends some of the privacy budget *epsilon*. "
        "This page is the bookkeeping: one line per release, saying which method was used, how much epsilon it "
        "cost, what it protects (a whole patient, or only the patient's group label) and which pairs of data sets "
        "it treats as neighbours (by default: the same data with or without one patient).\n\n"
        "Costs add up (*sequential composition*): two releases of epsilon 1 are as revealing as one of epsilon 2. "
        "Releases on separate groups of patients (e.g. men and women released separately) only cost the largest "
        "of them (*parallel composition*). The budget cap in the sidebar refuses any release that would go past it.\n\n"
        "**Exports.** The *release report* and the *released numbers* contain private outputs only: they are what "
        "may leave the hospital once approved. The *review report* also compares with the exact, non-private "
        "analysis for the ethics board: it says CONFIDENTIAL on every page and must not be released."
    )

led = session.ledger()
totals = led.totals()
cols = st.columns(3)
spent = led.spent()
cols[0].metric("Spent (protecting the subject)", f"ε = {spent:.3g}", help="Sequential composition; parallel over disjoint groups.")
cols[1].metric("Budget cap", f"ε = {led.cap:g}" if led.cap else "none")
cols[2].metric("Left", f"ε = {led.remaining():.3g}" if led.cap else "—")
reasons = led.void_reasons()
if reasons:
    st.error("**The patients have no differential-privacy guarantee from this session's releases**, whatever the "
             "epsilon above says:\n\n" + "\n".join(f"- {r}" for r in dict.fromkeys(reasons)))
for unit, tot in totals.items():
    if unit != "the subject":
        st.info(f"Label-only releases: ε = {tot['epsilon']:.3g} protecting {unit}. This is not a guarantee for the "
                "patient's times and events, which such releases publish as they are.")

if not led.entries:
    st.info("No release yet in this session. Private results on the analysis pages are charged here.")
else:
    rows = [{"#": i + 1, "time (UTC)": e.time.replace("T", " ")[:19], "analysis": e.analysis, "mechanism": e.mechanism,
             "data": e.dataset, "ε": e.cost.epsilon, "δ": e.cost.delta, "guarantee": e.cost.guarantee,
             "protects": e.cost.protects, "neighbours": e.cost.neighbouring,
             "not DP": "; ".join(d["message"] for d in e.disclosures if not d.get("dp", True)) or "",
             "parameters": ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in e.parameters.items())}
            for i, e in enumerate(led.entries)]
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.plotly_chart(ledger_figure(led), width="stretch")

st.subheader("Export")
items = releases.stored()
audit_items = releases.audits()
cohort, _ = session.validated()
public = session.public_parameters(cohort) if cohort is not None else None
name = session.data_choice().name

c1, c2 = st.columns(2)
with c1:
    st.markdown("**Release report** (private outputs only)")
    # reports (several MB with plotly.js inlined; the review refits the non-private analyses) are built only when
    # a button is clicked, not on every rerun of the page
    st.download_button("Download release report (HTML)",
                       lambda: session_report(f"dpsurv release: {name}", name, led, items, [], "release"),
                       file_name=f"dpsurv-release-{name}.html", mime="text/html", key="dl_release")
    records = [r for item in items for r in item.records]
    if records:
        csv_text, json_text = release_bundle(records, led, [d for item in items for d in item.disclosures])
        st.download_button("Released numbers (CSV)", csv_text, file_name=f"dpsurv-{name}-released.csv",
                           mime="text/csv", key="dl_csv")
        st.download_button("Released numbers (JSON)", json_text, file_name=f"dpsurv-{name}-released.json",
                           mime="application/json", key="dl_json")
    st.download_button("Ledger (JSON)", led.to_json(), file_name="dpsurv-ledger.json", mime="application/json",
                       key="dl_ledger")
with c2:
    st.markdown("**Review report** (CONFIDENTIAL: includes non-private comparisons and audits)")
    st.download_button("Download review report (HTML)",
                       lambda: session_report(f"dpsurv review: {name}", name, led, items, audit_items, "review", cohort,
                                              public),
                       file_name=f"dpsurv-review-{name}.html", mime="text/html", key="dl_review")
    st.caption(f"{len(items)} release(s) and {len(audit_items)} audit(s) of this session will be included.")
st.caption("Reports are built in memory from this session; nothing is written on the server.")
