"""Ledger and report: the current data set's persistent ledger (shared with the command line), its cap, and the
reports and exports of the releases the user chooses.

Reports (HTML and PDF) and exports are built only when their button is clicked (a callable given to the download
button), never on a rerun of the page, so the page's first view reads the ledger and draws it, nothing more."""

import json

import pandas as pd
import streamlit as st

from dpsurv_app import capacity, releases, session
from dpsurv_app.downloads import CONFIDENTIAL_SUFFIX, record_figure_downloads, show_figure, table_download
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, terms
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy.ledger import (
    ALLOW_DISCLOSURE_CONTROL,
    ALLOW_LABEL_ONLY,
    CAP_LOWER,
    CAP_RAISE,
    CAP_SET,
    RELEASE,
    SUBJECT,
    as_run,
    entry_from_body,
)
from dpsurv_core.privacy.roles import CHANGE_CAP, SEE_DATA
from dpsurv_core.report.figures import ledger_figure
from dpsurv_core.report.html import export_bundle, ledger_report
from dpsurv_core.report.pdf import html_to_pdf, pdf_problem
from dpsurv_core.report.text import markdown_code, markdown_literal, markdown_literal_frame

guard(__file__)  # before anything is drawn: the page may be reached by its own address

st.title("Ledger and report")

explainer(
    "ledger",
    "Every **release** of a private result spends some of the data set's privacy budget *epsilon*. This page is "
        "the bookkeeping: one record per release, saying which method was used, how much epsilon it cost, what it "
        "protects (a whole patient, or only the patient's group label) and which pairs of data sets it treats as "
        "neighbours (by default: the same data with or without one patient).\n\n"
        "**The budget belongs to the data set**, recognised by its content (a fingerprint of the values, whatever the "
        "file name, row order or column names). It is kept in a ledger database on this machine, shared by every "
        "browser tab and by the command line (`python -m dpsurv_core budget show --data ...` lists the same records), "
        "and it survives reloads and restarts. Records are append-only and chained by hashes, so an edited or deleted "
        "record is detected.\n\n"
        "**Previews** on the analysis pages use simulation noise, cost nothing and are never recorded. Only a click on "
        "a button whose label begins with *Release* draws fresh noise and writes a record here.\n\n"
        "Costs add up (*sequential composition*): two releases of epsilon 1 are as revealing as one of epsilon 2. "
        "Releases on separate groups of patients only cost the largest of them (*parallel composition*). A **cap** "
        "refuses any release that would take the total past it; raising a cap is a separate recorded act with a "
        "reason.\n\n"
        "**Exports.** Choose which releases go into the reports and the exports; they are built from the numbers "
        "each release published (kept in its record), never from a new draw. The *release report* and the "
        "*released numbers* contain private outputs only: they are what may leave the hospital once approved. The "
        "*review report* also compares with the exact, non-private analysis for the ethics board: it says "
        "CONFIDENTIAL on every page and must not be released.",
)
terms("ledger", "release", "preview", "epsilon", "budget cap", "add/remove neighbours", "change-one-label",
      "disclosure", "disclosure control")

choice = session.data_choice()
fp = choice.fingerprint
name = choice.name
me = session.actor()
if not me.may(SEE_DATA):  # a reviewer chooses among the ledger's data sets by key: no data is loaded
    try:
        known = session.store().datasets()
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        st.stop()
    if not known:
        st.info("The ledger holds no record yet.")
        st.stop()
    fp = st.selectbox("Data set", list(known), key="review_dataset",
                      format_func=lambda k: f"{', '.join(known[k]) or 'unnamed'} (key {k[:12]})")
    name = ", ".join(known[fp]) or "unnamed"
try:
    store = session.store()
    ds_key = store.key(fp)  # what leaves and what the screen shows: the ledger's key, never the content fingerprint
    records = store.records(fp)
    led = store.ledger(fp)
    verification = store.verify()
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()

release_records = [r for r in records if r.kind == RELEASE]
cap_records = [r for r in records if r.kind in (CAP_SET, CAP_RAISE, CAP_LOWER, ALLOW_LABEL_ONLY,
                                                ALLOW_DISCLOSURE_CONTROL)]

st.markdown(f"**Data set:** {markdown_literal(name)} · data set key {markdown_code(ds_key[:16])} · ledger database "
            f"{markdown_code(store.path)}")
st.caption(f"The command line reads and writes the same ledger: {markdown_code(session.cli_budget_command('show'))}.")
if verification.ok:
    st.success(f"Ledger chain: {verification.message}.", icon=":material/verified:")
else:
    st.error(f"**The ledger chain is broken**: {verification.message}. Records may have been edited or deleted "
             "outside dpsurv; the totals below cannot be trusted. Stop releasing from this data set and ask the "
             "ledger's keeper to restore the database from a backup (`python -m dpsurv_core budget verify` names the "
             "first broken record).", icon=":material/gpp_bad:")

cols = st.columns(3)
spent = led.spent()
cols[0].metric("Spent (protecting the subject)", f"ε = {spent:.3g}",
               help="Sequential composition; parallel over disjoint groups. Every release of this data set counts, "
                    "whichever tab or command made it.")
cols[1].metric("Budget cap", f"ε = {led.cap:g}" if led.cap is not None else "none")
cols[2].metric("Left", f"ε = {led.remaining():.3g}" if led.cap is not None else "—")
if led.cap is not None and spent > led.cap + 1e-12:
    st.warning(f"**The releases already made spend ε = {spent:.3g}, {spent - led.cap:.3g} more than the cap of "
               f"{led.cap:g}.** Lowering the cap refuses every new release of this data set; it does not undo the "
               "earlier ones, which stay published and count in full. Say so in the report.",
               icon=":material/warning:")
reasons = led.void_reasons()
if reasons:
    st.error("**The patients have no differential-privacy guarantee from this data set's releases**, whatever the "
             "epsilon above says:\n\n" + "\n".join(f"- {r}" for r in dict.fromkeys(reasons))
             + "\n\nDo not describe these releases as differentially private; future releases should use a "
             "differentially private mechanism.")
sdc = led.disclosure_control()
if sdc:
    st.warning(f"**{len(sdc)} release(s) used statistical disclosure control** (small-cell suppression, rounding, "
               "random rounding, cell keys or step smoothing). They have **no epsilon and no formal guarantee**, so "
               "they are not in the total above: a patient whose removal changes such a table is revealed to anyone "
               "who knows the other patients' records. The Privacy audit page measures how many: run it before "
               "publishing them, and say in the report that they carry no formal guarantee.")
for unit, tot in led.totals().items():
    if unit != SUBJECT:
        st.info(f"Label-only releases: ε = {tot['epsilon']:.3g} protecting {unit}. This is not a guarantee for the "
                "patient's times and events, which such releases publish as they are: publish them only where the "
                "times and events may be shown, and say so in the report.")

# ---------------------------------------------------------------------------------------------- the cap
st.subheader("Budget cap")
flash = st.session_state.pop("ledger_flash", None)
if flash:
    st.success(flash)


def _act(do, done: str) -> None:
    """Run one recorded act on the cap; on success note it and rerun, so the sidebar and totals follow."""
    try:
        rid = do()
    except DpsurvError as exc:
        st.error(markdown_literal(exc))
        return
    st.session_state["ledger_flash"] = f"{done} (record {rid})."
    st.rerun()


def _allowance(allowed: bool, allowed_text: str, title: str, explain: str, keys: tuple[str, str], button: str,
               needs_reason: str, do, done: str) -> None:
    """A recorded allowance under the cap (label-only or disclosure-control releases): a warning once given, else an
    expander asking for the reason and recording the act."""
    if allowed:
        st.warning(allowed_text)
        return
    with st.expander(title):
        st.markdown(explain)
        why = st.text_input("Reason (required)", key=keys[0])
        if st.button(button, key=keys[1]):
            if not why.strip():
                st.error(needs_reason)
            else:
                _act(lambda: do(why), done)


if not me.may(CHANGE_CAP):
    st.caption(f"Cap: {'none set' if led.cap is None else f'epsilon {led.cap:g}'}. Only the data set's custodian sets, "
               f"raises or lowers it, or allows other kinds of release; you are signed in as "
               f"{markdown_literal(me.name)} ({me.role}).")
elif led.cap is None:
    st.info("No cap is set for this data set: its releases are recorded but not limited. Setting a cap is a recorded "
            "act; afterwards it can be lowered at any time, and raised only with a reason (another recorded act). "
            f"From the command line: {markdown_code(session.cli_budget_command('set', '--cap C'))}.")
    c1, c2 = st.columns([1, 2])
    new_cap = c1.number_input("Cap (total epsilon for this data set)", min_value=0.01, max_value=1000.0, value=5.0,
                              step=0.5, key="cap_set_value")
    note = c2.text_input("Note (optional): who decided the cap, and why", key="cap_set_note")
    if st.button("Set cap", key="cap_set", type="primary"):
        _act(lambda: store.set_cap(fp, float(new_cap), name, reason=note.strip()), f"Cap set to ε {new_cap:g}")
else:
    c1, c2 = st.columns(2)
    with c1:
        st.markdown("**Raise the cap** (a recorded act that needs a reason)")
        higher = st.number_input("New, higher cap", min_value=float(led.cap), value=float(led.cap) * 2, step=0.5,
                                 key=f"cap_raise_value-{led.cap}")
        reason = st.text_input("Reason for raising (required)", key=f"cap_raise_reason-{led.cap}",
                               placeholder="e.g. the ethics board approved a second analysis on 12 May")
        if st.button("Raise cap", key="cap_raise"):
            if not reason.strip():
                st.error("Raising the cap needs a reason: the ledger records who spends more and why.")
            else:
                _act(lambda: store.raise_cap(fp, float(higher), reason, name),
                     f"Cap raised from ε {led.cap:g} to ε {higher:g}")
    with c2:
        st.markdown("**Lower the cap** (always allowed)")
        lower = st.number_input("New, lower cap", min_value=min(0.01, float(led.cap)), max_value=float(led.cap),
                                value=float(led.cap), step=0.5, key=f"cap_lower_value-{led.cap}")
        why = st.text_input("Reason (optional)", key=f"cap_lower_reason-{led.cap}")
        if st.button("Lower cap", key="cap_lower"):
            _act(lambda: store.lower_cap(fp, float(lower), why.strip(), name),
                 f"Cap lowered from ε {led.cap:g} to ε {lower:g}")
    _allowance(led.disclosure_control_allowed,
               "Disclosure-control releases (suppression, rounding, cell keys, step smoothing) are allowed for this "
               "data set: they have no epsilon and no formal guarantee, and are not counted against the cap.",
               "Allow disclosure-control releases (no formal guarantee) under this cap",
               "Small-cell suppression, rounding, random rounding, cell keys and step smoothing have no "
               "epsilon: no cap on epsilon accounts for them. Under a cap they are refused unless you allow "
               "them here, a recorded act with a reason.",
               ("allow_sdc_reason", "allow_sdc"), "Allow disclosure-control releases",
               "Allowing disclosure-control releases needs a reason: the ledger records who decided and why.",
               lambda why: store.allow_disclosure_control(fp, why, name), "Disclosure-control releases allowed")
    _allowance(led.label_only_allowed,
               "Label-only releases (randomized response on the group label) are allowed for this data set: they "
               "publish every patient's times and events as they are, so once one is released the patient has no "
               "differential-privacy guarantee at all.",
               "Allow label-only releases (randomized response) under this cap",
               "A label-only release protects only the group label: every patient's times and events are "
               "published as they are, which no cap on epsilon for the patient accounts for. Under a cap "
               "such releases are refused unless you allow them here, a recorded act with a reason.",
               ("allow_label_reason", "allow_label_only"), "Allow label-only releases",
               "Allowing label-only releases needs a reason: the ledger records who decided and why.",
               lambda why: store.allow_label_only(fp, why, name), "Label-only releases allowed")
if cap_records:
    st.markdown("**Cap history**")
    history = [{"id": r.id, "time (UTC)": r.time.replace("T", " ")[:19],
                "act": {CAP_SET: "set", CAP_RAISE: "raised", CAP_LOWER: "lowered",
                        ALLOW_LABEL_ONLY: "label-only releases allowed",
                        ALLOW_DISCLOSURE_CONTROL: "disclosure-control releases allowed"}[r.kind],
                "cap": "—" if r.body.get("cap") is None else f"{r.body['cap']:g}",
                "previous": "—" if r.body.get("previous") is None else f"{r.body['previous']:g}",
                "reason": r.body.get("reason") or "—"} for r in cap_records]
    st.table(markdown_literal_frame(pd.DataFrame(history).set_index("id")), width="stretch")
    table_download(pd.DataFrame(history), f"cap-history-{name}", "dl_cap_history_csv")

# ---------------------------------------------------------------------------------------------- releases
st.subheader("Releases")
entries = {r.id: entry_from_body(r.body, r.id, r.time) for r in release_records}
entries_by = {r.id: str(r.body.get("by") or "—") for r in release_records}  # who made it (records since sign-in)
if not release_records:
    st.info("No release of this data set yet. Previews on the analysis pages cost nothing and are never recorded; a "
            "click on a button whose label begins with 'Release' records one here.")
else:
    rows = [{"id": rid, "time (UTC)": e.time.replace("T", " ")[:19], "mechanism": e.mechanism, "analysis": e.analysis,
             "data": e.dataset, "by": entries_by.get(rid, "—"), "ε": "none (no formal guarantee)" if e.cost.epsilon is None else f"{e.cost.epsilon:.4g}", "δ": f"{e.cost.delta:.3g}",
             "guarantee": as_run(e.cost, e.disclosures)["guarantee"], "protects": as_run(e.cost, e.disclosures)["protects"],
             "neighbouring": e.cost.neighbouring,
             "not DP": "; ".join(d["message"] for d in e.disclosures if not d.get("dp", True)) or "—",
             "reproduce command": e.command or "—"} for rid, e in entries.items()]
    # a plain table: every cell in full, wrapped, none cut off, shown as typed (st.table reads cells as Markdown)
    st.table(markdown_literal_frame(pd.DataFrame(rows).set_index("id")), width="stretch")
    table_download(pd.DataFrame(rows), f"ledger-{name}", "dl_ledger_csv")
    from dpsurv_app import curves_view as cv  # only for the figure: an empty ledger's first view does without it

    show_figure(cv.recolour(ledger_figure(led)), f"ledger-{name}", "ledger_fig", width="stretch")

# ---------------------------------------------------------------------------------------------- reports and exports
st.subheader("Reports and exports")
ids = list(entries)
key = f"report_records-{fp}"
seen_key = f"{key}-seen"


def _label(rid: int) -> str:
    e = entries[rid]
    eps = "no ε (disclosure control)" if e.cost.epsilon is None else f"ε {e.cost.epsilon:.3g}"
    return f"{rid}: {e.mechanism} ({e.analysis}), {eps}"


if key in st.session_state:  # keep the user's choice; releases recorded since the last run join it
    seen = set(st.session_state.get(seen_key, ()))
    st.session_state[key] = [i for i in st.session_state[key] if i in ids] + [i for i in ids if i not in seen]
    chosen_ids = st.multiselect("Releases in the reports and exports", ids, key=key, format_func=_label,
                                help="Every release is chosen by default. Previews are never recorded, so they "
                                     "cannot be chosen.")
else:
    chosen_ids = st.multiselect("Releases in the reports and exports", ids, default=ids, key=key, format_func=_label,
                                help="Every release is chosen by default. Previews are never recorded, so they "
                                     "cannot be chosen.")
st.session_state[seen_key] = ids
chosen = [r for r in release_records if r.id in set(chosen_ids)]
audit_items = releases.audits()
# read here (the download's callable runs outside the page's session); a reviewer's page loads no data
cohort = session.validated()[0] if me.may(SEE_DATA) else None
chain = {"ok": verification.ok, "records": verification.records, "head": store.head(), "message": verification.message}
st.caption(f"The reports and exports hold {len(chosen)} of {len(release_records)} release(s), built from the numbers "
           "each published; their ledger table lists the chosen releases and the totals of the whole data set.")


cap_history = [r for r in records if r.kind in (CAP_SET, CAP_RAISE, CAP_LOWER)]  # the board's summary lists them


def _release_html() -> str:
    return ledger_report(f"dpsurv release: {name}", name, led, chosen, [], "release", time_unit=choice.time_unit,
                         cap_history=cap_history)


def _review_html() -> str:
    # the review refits the non-private analyses on the data as mapped now: only when asked for
    return ledger_report(f"dpsurv review: {name}", name, led, chosen, audit_items, "review", cohort, choice.time_unit,
                         cap_history)


# a record's numbers are not part of the accounts; its "kind" names its reader ("reader" here, beside the record's kind)
PUBLISHED = ("outputs", "released", "public_inputs", "derived", "kind")


def _accounts() -> str:
    accounts = {"dataset": name, "fingerprint": ds_key, "ledger_path": str(store.path), "chain": chain,
                "cap": led.cap, "totals": led.totals(), "subject_guarantee": led.subject_guarantee(),
                "records": [{"id": r.id, "time": r.time, "kind": r.kind, "hash": r.hash,
                             **({"reader": r.body["kind"]} if "kind" in r.body else {}),
                             **{k: v for k, v in r.body.items() if k not in PUBLISHED}} for r in records]}
    return json.dumps(accounts, indent=2, default=str)


# reports (several MB with plotly.js inlined; the review refits the non-private analyses; a PDF starts a browser)
# and exports (each record's numbers and figure) are built only when their button is clicked, not on every rerun
# (the reports under a slot of the server's work, dpsurv_app.capacity: busy, the HTML says so in one sentence)
pdf_missing = pdf_problem()
PDF_HELP = "The same report printed to A4 by the server's Chromium browser (takes a few seconds)."
c1, c2 = st.columns(2)
with c1:
    st.markdown("**Release report** (private outputs only)")
    st.download_button("Download release report (HTML)", capacity.deferred(_release_html, capacity.busy_html),
                       on_click="ignore", key="dl_release",
                       file_name=f"dpsurv-release-{name}.html", mime="text/html")
    st.download_button("Download release report (PDF)", capacity.deferred(lambda: html_to_pdf(_release_html())),
                       on_click="ignore", key="dl_release_pdf", file_name=f"dpsurv-release-{name}.pdf", mime="application/pdf",
                       disabled=pdf_missing is not None, help=PDF_HELP)
    st.download_button("Released numbers (CSV)", lambda: export_bundle(chosen, led, name, ds_key, chain)[0],
                       file_name=f"dpsurv-{name}-released.csv", mime="text/csv", key="dl_csv", on_click="ignore",
                       disabled=not chosen)
    st.download_button("Released numbers (JSON)", lambda: export_bundle(chosen, led, name, ds_key, chain)[1],
                       file_name=f"dpsurv-{name}-released.json", mime="application/json", key="dl_json",
                       on_click="ignore", disabled=not chosen)
with c2:
    if me.may(SEE_DATA):  # the review refits the non-private analyses: not for a reviewer, who sees no data
        st.markdown("**Review report** (CONFIDENTIAL: includes non-private comparisons and audits)")
        st.download_button("Download review report (HTML)", capacity.deferred(_review_html, capacity.busy_html),
                           on_click="ignore", key="dl_review",
                           file_name=f"dpsurv-review-{name}{CONFIDENTIAL_SUFFIX}.html", mime="text/html")
        st.download_button("Download review report (PDF)", capacity.deferred(lambda: html_to_pdf(_review_html())),
                           on_click="ignore", key="dl_review_pdf", file_name=f"dpsurv-review-{name}{CONFIDENTIAL_SUFFIX}.pdf",
                           mime="application/pdf", disabled=pdf_missing is not None, help=PDF_HELP)
        st.caption(f"{len(chosen)} release(s) and {len(audit_items)} audit(s) of this session will be included.")
    st.download_button("Ledger accounts (JSON)", _accounts, file_name=f"dpsurv-{name}-ledger.json",
                       mime="application/json", key="dl_ledger", on_click="ignore",
                       help="Every record of this data set (caps included) with its hash, for an auditor: the "
                            "accounting only, without the released numbers.")
if pdf_missing is not None:
    st.caption(f"The PDF buttons are off: {pdf_missing} The HTML reports print to PDF from any browser.")
st.caption("Reports are built in memory from the ledger records; nothing is written on the server.")

# ---------------------------------------------------------------------------------------------- reproduce
if release_records:
    st.subheader("Reproduce a release")
    rid = st.selectbox("Release", ids, index=len(ids) - 1, format_func=_label, key=f"reproduce-{fp}")
    record = next(r for r in release_records if r.id == rid)
    st.caption("The command line runs the same plan again: a **new** release with fresh noise, charged again (its "
               "numbers differ from the recorded ones). The Python script prints the recorded numbers and can run "
               "the command again.")
    st.code(entries[rid].command or releases.NO_COMMAND, language="bash")
    python = releases.reproduce_python(record, store.path)
    with st.expander("Python script"):
        st.code(python, language="python")
    d1, d2 = st.columns(2)
    d1.download_button("Reproduce script (shell)", releases.reproduce_shell(record),
                       file_name=f"dpsurv-release-{rid}.sh", mime="text/x-shellscript", key="dl_repro_sh")
    d2.download_button("Reproduce script (Python)", python, file_name=f"dpsurv-release-{rid}.py",
                       mime="text/x-python", key="dl_repro_py")
    record_figure_downloads(record.body, rid, f"dpsurv-figure-{name}-record-{rid}", f"dl_figure-{rid}")
