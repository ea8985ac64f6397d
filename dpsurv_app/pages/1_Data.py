"""Data: choose the cohort (bundled or uploaded), map its columns, check it, declare the public parameters."""

from __future__ import annotations

import dataclasses
import json
from functools import partial

import pandas as pd
import streamlit as st

from dpsurv_app import capacity, session
from dpsurv_app.cache import by_data
from dpsurv_app.data_view import (
    budget_caption,
    code_options,
    declared_in_unit,
    engine_frame,
    engine_sample,
    event_codes_box,
    event_types_box,
    guess_table,
    is_binary_like,
    load_labels_json,
    public_boxes,
    read_upload,
    show_problems,
    summary_display,
    timefix_box,
    with_time_unit,
)
from dpsurv_app.downloads import table_download
from dpsurv_app.gate import guard
from dpsurv_app.glossary import explainer, terms
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.data.event_types import disclosures as event_type_disclosures
from dpsurv_core.data.guess import guess_columns, guess_mapping, numeric_summary
from dpsurv_core.data.labels import CATEGORICAL, KINDS, NUMERIC, code_key
from dpsurv_core.data.summary import TIME_UNITS, cohort_summary, event_type_counts
from dpsurv_core.errors import DpsurvError
from dpsurv_core.limits import check_upload
from dpsurv_core.report.text import markdown_literal, markdown_literal_frame

guard(__file__)  # before anything is drawn: the page may be reached by its own address

NONE = "(none)"
BUNDLED, UPLOAD, SERVER = "Bundled data set", "Upload a file", "A file on the server"
SOURCES = [BUNDLED, UPLOAD, SERVER]

st.title("Data")
st.caption("Choose the cohort every other page analyses, tell dpsurv what each column means, and declare what "
           "may be treated as public.")

explainer(
    "data",
    """
**A survival data set** has one row per patient (a *subject*): how long they were followed (the **time**),
and whether the event of interest (say, death) was seen at that time (**event = 1**) or the patient was still
event-free when follow-up stopped (**censored**, event = 0). Censored patients are not lost information: they tell
us the patient survived *at least* that long.

**On this page** you pick a cohort (one of twelve classic teaching data sets from the R packages *survival*
and *MASS*, or your own file), say which column is the time, which is the event, and optionally which column
splits patients into groups (for example treatment arms), identifies patients with several rows, or holds
covariates (age, sex, lab values) for regression.

**Checks.** Problems with the data appear right under the column they concern: red ones must be fixed before
any analysis, yellow ones are worth reading but the data is kept.

**The summary table** counts subjects, events and censored patients, and gives the median follow-up by the
*reverse Kaplan-Meier* method (the usual way to describe how long patients were followed: it treats
censoring as the "event"). These numbers are exact, for your eyes only: they are **not** private and are not
part of any release.

**Public parameters.** Differential privacy (DP) protects each patient by adding calibrated random noise to
what is published. The guarantee only holds if everything *not* noised is fixed in advance, independently of
the patients: the time axis (horizon and number of bins), the list of groups, the plausible range of each
covariate. Declare them here from the study design. Whatever you leave undeclared is read off the data and
listed below as a **disclosure**: it will be shown next to every release so nobody mistakes it for private.

**Uploads.** dpsurv guesses which column is the time (and its unit, from the name or the range of the times),
the event, the group and the patient id, and shows the guess with its reasons: check it and press **Confirm**
before the other pages analyse the file. **Value labels** name the codes of a column (sex 1 = Male, 2 = Female)
and say whether it is a category or a number; they are shown in tables and legends and live only in this session.

**Privacy of uploads.** An uploaded file is kept only in this browser session's memory. It is never written
to disk, never logged, and no other user of the app can see it.
""",
)
terms("censored", "public parameters", "disclosure", "differential privacy", "epsilon", "reference level")

choice = session.data_choice()


def _token(c: session.DataChoice) -> str:
    """Identifies the current table, so widgets start afresh when the data changes."""
    if c.bundled:
        return f"b-{c.name}"
    return "u-" + st.session_state.get("upload_token", c.name)


def _raw_frame(c: session.DataChoice) -> pd.DataFrame:
    """The table as read (times in the file's unit)."""
    if c.bundled:
        return datasets.load(c.name)
    return st.session_state.get("upload_raw", c.frame)


def _store(c: session.DataChoice) -> None:
    session.set_data_choice(c)
    if not c.bundled:
        st.session_state["upload_choice"] = c


def _new_upload(name: str, frame: pd.DataFrame, token: str) -> None:
    guess = guess_columns(frame)
    st.session_state["upload_raw"] = frame
    st.session_state["upload_token"] = token
    st.session_state["upload_guess"] = guess
    new = session.DataChoice(name, frame, guess_mapping(frame), guess.time_unit, False, source_unit=guess.time_unit)
    _store(new)
    if not session.has_own_labels(new):  # the same table uploaded again keeps this session's labels
        session.set_value_labels(guess.labels, new)
    session.mark_unconfirmed(new)
    st.rerun()  # so the sidebar names the new data set


# ---------------------------------------------------------------- 1. where the data comes from
st.subheader("1. The cohort")
_from_server = not choice.bundled and st.session_state.get("server_source_name") == choice.name
source = st.radio("Where is the cohort?", SOURCES, index=0 if choice.bundled else 2 if _from_server else 1,
                  horizontal=True, key="data_source",
                  help="A file on the server: Parquet, CSV or a DuckDB table in the folders the administrator shares "
                       "(DPSURV_SERVER_DATA), checked and counted in place by DuckDB.")

if source == BUNDLED:
    names = datasets.names()
    current = choice.name if choice.bundled else st.session_state.get("last_bundled", session.DEFAULT_DATASET)
    picked = st.selectbox("Bundled data set", names, index=names.index(current), key="bundled_name",
                          format_func=lambda n: f"{n}: {datasets.info(n).title}")
    if not choice.bundled or choice.name != picked:
        _store(session.bundled_choice(picked))
        st.session_state["last_bundled"] = picked
        st.rerun()  # so the sidebar names the new data set
    d = datasets.info(picked)
    st.caption(f"Source: {d.source}. Time in {d.time_unit}. {d.notes}")
elif source == SERVER:
    # imported here: the server-data helpers pull in DuckDB's engine layer and the curve module (SciPy), which the
    # first view of a bundled data set or an upload does not need
    from dpsurv_app.server_data import (
        engine_fingerprint,
        open_server_cohort,
        server_caption,
        server_data_picker,
        server_fits_in_memory,
        session_engine,
    )

    src = server_data_picker()
    if src is None:
        st.info(f"No server file chosen: the data in use is still '{markdown_literal(session.data_choice().name)}'.")
    else:
        try:
            eng = session_engine(src)  # this session's own connection (DuckDB runs one query at a time)
            columns = list(eng.columns())  # the names and kinds, read by DuckDB without loading the rows
            sample_guess = guess_columns(engine_sample(eng))
        except DpsurvError as exc:
            st.error(f"{markdown_literal(str(exc))} Choose another file, or ask the administrator to check it.",
                     icon=":material/error:")
            st.stop()

        def _pick(options: list, value) -> int:
            return options.index(value) if value in options else 0

        s1, s2, s3, s4 = st.columns(4)
        t_col = s1.selectbox("Time column", columns, index=_pick(columns, sample_guess.time), key=f"server_time-{src.name}")
        e_col = s2.selectbox("Event column", columns, index=_pick(columns, sample_guess.event), key=f"server_event-{src.name}")
        groups = [NONE, *columns]
        grp = s3.selectbox("Group column", groups, index=_pick(groups, sample_guess.group), key=f"server_group-{src.name}")
        units = list(TIME_UNITS)
        s_unit = s4.selectbox("Time unit of the file", units, index=_pick(units, sample_guess.time_unit),
                              key=f"server_unit-{src.name}", help="Guessed from the column's name and range: check it.")
        server_map = ColumnMap(time=t_col, event=e_col, group=None if grp == NONE else grp,
                               timefix=timefix_box(ColumnMap(t_col, e_col), f"server_timefix-{src.name}"))
        try:
            server_cohort = open_server_cohort(src, eng, server_map, s_unit)  # checked and counted once per session
        except DpsurvError as exc:
            st.error(f"{markdown_literal(str(exc))} Choose the right columns above.", icon=":material/error:")
            st.stop()
        grp_text = (f"; groups {', '.join(map(str, server_cohort.groups))}" if server_cohort.has_group else "")
        st.markdown(f"Checked and counted in place by DuckDB: {server_cohort.n:,} rows, {server_cohort.n_subjects:,} "
                    f"subjects, {server_cohort.n_events:,} events{markdown_literal(grp_text)}.")
        in_memory = server_fits_in_memory(server_cohort)
        if st.button("Analyse this cohort", type="primary", key="server_use", icon=":material/check:"):
            kept = None
            try:
                if in_memory:
                    frame = engine_frame(server_cohort)
                else:  # kept in the engine: the session holds the engine cohort and the table's fingerprint, no rows
                    with st.spinner("Fingerprinting the table for its privacy budget (read once, inside DuckDB) ..."):
                        kept, fp = server_cohort, engine_fingerprint(src, eng)
                    frame = pd.DataFrame(columns=columns)
            except DpsurvError as exc:
                st.error(f"{markdown_literal(str(exc))}", icon=":material/error:")
                st.stop()
            st.session_state["server_source_name"] = src.name
            st.session_state["server_cohort"] = server_cohort  # the engine-side cohort, for counting pages
            st.session_state["upload_raw"] = frame
            st.session_state["upload_token"] = f"server-{src.name}"
            st.session_state["upload_guess"] = None
            new = session.DataChoice(src.name, frame, dataclasses.replace(server_map, covariates=()), s_unit, False,
                                     source_unit=s_unit, fingerprint="" if kept is None else fp, engine=kept)
            _store(new)
            if not session.has_own_labels(new):
                session.set_value_labels(sample_guess.labels, new)
            session.confirm()
            st.rerun()
        st.caption(server_caption(server_cohort, in_memory))
else:
    up = st.file_uploader("Upload a cohort table (CSV, TSV, Parquet or Excel)",
                          type=["csv", "tsv", "txt", "tab", "parquet", "pq", "xlsx", "xlsm", "xls"], key="upload_file",
                          help="Kept in this session's memory only: never written to disk or logged.")
    upload_box = st.container()
    if up is not None:
        token = f"{up.file_id}-{up.name}"
        pending = st.session_state.get("upload_pending")
        if pending is None or pending["token"] != token:
            try:
                check_upload(up.size, up.name)  # before the bytes are copied out of the upload
            except DpsurvError as exc:
                pending = {"token": token, "name": up.name, "error": str(exc), "sheets": [], "warnings": []}
                st.session_state["upload_pending"] = pending
            else:
                with capacity.heavy_or_stop():  # a slot of the server's work, shared by every session
                    data = up.getvalue()
                    res = read_upload(data, up.name)
                pending = {"token": token, "name": up.name, "error": res.error, "sheets": res.sheets,
                           "warnings": res.warnings}
                if res.sheets:
                    pending["bytes"] = data  # kept in memory until a sheet is chosen
                st.session_state["upload_pending"] = pending
                if res.frame is not None:
                    _new_upload(up.name, res.frame, token)
        with upload_box:
            if pending["error"]:
                keep = session.data_choice().name
                st.error(f"{markdown_literal(pending['error'])} The data in use is still '{markdown_literal(keep)}'.", icon=":material/error:")
            for w in pending["warnings"]:
                st.warning(markdown_literal(w), icon=":material/warning:")
            if pending["sheets"]:
                sheets = list(pending["sheets"])
                sheet = st.selectbox(f"The workbook has {len(sheets)} sheets: which one holds the cohort?", sheets,
                                     index=None, placeholder="Choose a sheet", key=f"sheet-{token}")
                if sheet is None:
                    st.info("Choose the sheet that holds the cohort (one row per subject, a header row).")
                else:
                    sheet_token = f"{token}-{sheet}"
                    if st.session_state.get("upload_token") != sheet_token:
                        with capacity.heavy_or_stop():
                            res = read_upload(pending["bytes"], up.name, sheet=sheet)
                        if res.frame is not None:
                            _new_upload(f"{up.name} [{sheet}]", res.frame, sheet_token)
                        else:
                            st.error(f"{markdown_literal(res.error or 'That sheet could not be read.')} The data in use is still "
                                     f"'{markdown_literal(session.data_choice().name)}'.", icon=":material/error:")
    elif session.data_choice().bundled:  # no file in the box: bring back this session's last upload, if any
        if "upload_choice" in st.session_state:
            _store(st.session_state["upload_choice"])
            st.rerun()
        st.info(f"No file uploaded yet: the data in use is still '{markdown_literal(session.data_choice().name)}'.")

choice = session.data_choice()
if session.in_engine(choice):  # a server table kept in the engine: no rows here, its own sections (dpsurv_app/server_data)
    from dpsurv_app.server_data import engine_sections

    engine_sections(choice)
    st.stop()
tok = _token(choice)
raw = _raw_frame(choice)
cols = [str(c) for c in raw.columns]
m = choice.mapping
st.markdown(f"**In use: {markdown_literal(choice.name)}** ({'bundled' if choice.bundled else 'on the server' if _from_server else 'uploaded'}, {len(raw):,} rows, "
            f"{len(cols)} columns)")
try:
    st.caption(budget_caption(session.ledger(), session.store().key(choice.fingerprint)))
except DpsurvError as exc:
    st.error(f"The ledger database cannot be read: {markdown_literal(exc)}")


def _index(options: list, value) -> int:
    return options.index(value) if value in options else 0


# ---------------------------------------------------------------- 2. column mapping
st.subheader("2. What each column means")
guess = st.session_state.get("upload_guess") if not choice.bundled else None
if session.needs_confirmation(choice) and guess is not None:
    with st.container(border=True):
        st.markdown("**dpsurv guessed what the columns mean.** Check the guess (change anything below), then confirm: "
                    "the other pages wait for it.")
        st.dataframe(guess_table(guess, raw), hide_index=True)
        if st.button("Confirm these columns", type="primary", icon=":material/check:", key=f"{tok}-confirm"):
            session.confirm()
            st.rerun()
elif not choice.bundled and guess is not None:
    st.caption("Columns confirmed: the other pages analyse this file with the mapping below.")
slots: dict = {}
left, right = st.columns(2)

with left:
    time_col = st.selectbox("Time (follow-up until event or censoring)", cols, index=_index(cols, m.time),
                            key=f"{tok}-time")
    slots.setdefault(time_col, st.container())
    u1, u2 = st.columns(2)
    source_unit = u1.selectbox("Times in the file are in", TIME_UNITS,
                               index=_index(list(TIME_UNITS), choice.source_unit or choice.time_unit),
                               key=f"{tok}-source-unit", disabled=choice.bundled,
                               help="Bundled data sets declare their unit." if choice.bundled else None)
    unit = u2.selectbox("Show times in", TIME_UNITS, index=_index(list(TIME_UNITS), choice.time_unit),
                        key=f"{tok}-unit", help="Every page reports times in this unit (a month is 365.25/12 days).")
    if guess is not None and guess.time == time_col and "time_unit" in guess.reasons:
        u1.caption(f"Guessed: {guess.time_unit}, because {markdown_literal(guess.reasons['time_unit'])}.")

    event_cols = [c for c in cols if c != time_col] or cols
    event_col = st.selectbox("Event (1 = event seen, 0 = censored)", event_cols, index=_index(event_cols, m.event),
                             key=f"{tok}-event")
    event_codes: tuple = ()
    censor_codes: tuple = ()
    code_type_pairs: tuple = ()  # several event codes, each its own event type (competing risks)
    if event_col in raw.columns and (not is_binary_like(raw[event_col]) or (m.event == event_col and m.event_codes)):
        opts = code_options(raw[event_col])
        default = [o for o in opts if o in {str(c) for c in m.event_codes}] if m.event == event_col else []
        picked_codes = st.multiselect(f"Values of '{markdown_literal(event_col)}' that mean the event happened", opts, default=default,
                                      key=f"{tok}-codes-{event_col}",
                                      help="Several values: each can be its own event type (competing risks).")
        if picked_codes:
            event_codes = tuple(picked_codes)
            censor_codes, code_type_pairs = event_codes_box(m, event_col, tok, opts, event_codes)
        else:
            st.caption(f"'{markdown_literal(event_col)}' is not coded 0/1: choose the value(s) that mean an event (for R's "
                       "1 = censored, 2 = dead coding, choose 2).")
    slots.setdefault(event_col, st.container())

    group_opts = [NONE] + [c for c in cols if c not in (time_col,)]
    group_col: str | None  # None when NONE is chosen
    group_col = st.selectbox("Group (e.g. treatment arm; compared on later pages)", group_opts,
                             index=_index(group_opts, m.group or NONE), key=f"{tok}-group")
    group_col = None if group_col == NONE else group_col
    if group_col:
        slots.setdefault(group_col, st.container())

with right:
    id_opts = [NONE] + [c for c in cols if c not in (time_col, event_col)]
    id_col: str | None  # None when NONE is chosen
    id_col = st.selectbox("Subject id (when a patient can have several rows)", id_opts,
                          index=_index(id_opts, m.id or NONE), key=f"{tok}-id")
    id_col = None if id_col == NONE else id_col
    if id_col is None and choice.bundled:
        design = datasets.info(choice.name)
        if design.id and design.rows_per_subject > 1:
            st.warning(f"{markdown_literal(choice.name)} has up to {design.rows_per_subject} rows per patient (column "
                       f"{design.id!r}): without a subject id every row is treated as a patient, which understates "
                       "the privacy loss of a patient with several rows. Map the subject id.")
    bound = 1
    if id_col:
        bound = int(st.number_input("At most this many rows per subject", min_value=1, max_value=100,
                                    value=int(m.max_rows_per_subject if m.id == id_col else 1), step=1,
                                    key=f"{tok}-bound-{id_col}",
                                    help="Extra rows are dropped. The privacy unit is the patient: every noise "
                                         "scale is multiplied by this bound."))
        slots.setdefault(id_col, st.container())

    type_opts = [NONE] + [c for c in cols if c != time_col]
    bundled_info = datasets.info(choice.name) if choice.bundled else None
    type_default = NONE if m.event_type == m.event else m.event_type or NONE  # the event column's codes: on the left
    type_col: str | None  # None when NONE is chosen
    type_col = st.selectbox("Competing-event type (optional: which kind of event ended follow-up)", type_opts,
                            index=_index(type_opts, type_default), key=f"{tok}-type")
    type_col = None if type_col == NONE else type_col
    type_censor: tuple = (0, "0", "censored")
    type_names: tuple = ()
    if type_col:
        topts = code_options(raw[type_col])
        tdefault = [o for o in topts if o.lower() in {str(c).lower() for c in m.type_censor_codes}]
        tc = st.multiselect(f"Values of '{markdown_literal(type_col)}' that mean censored", topts, default=tdefault,
                            key=f"{tok}-type-censor-{type_col}")
        type_censor = tuple(tc)
        documented = (tuple((str(k), str(v)) for k, v in bundled_info.event_types.items())
                      if bundled_info is not None and bundled_info.event_type == type_col else ())
        type_names = event_types_box(m, type_col, tok, documented)
        if not type_names:  # the data holder's view of what a release would read off the data
            st.caption("Event types found in the data: " + (markdown_literal(", ".join(
                map(str, (o for o in topts if o not in tc)))) or "none") + ".")
        slots.setdefault(type_col, st.container())

    cov_opts = [c for c in cols if c not in (time_col, event_col)]
    covs = st.multiselect("Covariates (for regression)", cov_opts, default=[c for c in m.covariates if c in cov_opts],
                          key=f"{tok}-covs")
    cov_slot = st.container()
    for c in covs:
        slots.setdefault(c, cov_slot)
    timefix = timefix_box(m, f"{tok}-timefix")

general_slot = st.container()

if code_type_pairs and type_col is None:  # the event column's codes are the event types, its censoring codes theirs
    type_col, type_names, type_censor = event_col, code_type_pairs, censor_codes
mapping = ColumnMap(time=time_col, event=event_col, group=group_col, id=id_col, event_type=type_col,
                    covariates=tuple(covs), event_codes=event_codes, censor_codes=censor_codes,
                    type_censor_codes=type_censor, event_type_names=type_names, max_rows_per_subject=bound,
                    timefix=timefix)

if (mapping != choice.mapping or unit != choice.time_unit or source_unit != (choice.source_unit or choice.time_unit)):
    old_unit = choice.time_unit
    frame = with_time_unit(raw, time_col, source_unit, unit)
    # the declared values follow the columns: a group column brings its own declared categories, and a declared
    # horizon or grid is the same time in the new unit
    declared = declared_in_unit(choice, old_unit, unit)
    choice = dataclasses.replace(choice, frame=frame, mapping=mapping, time_unit=unit, source_unit=source_unit,
                                 horizon=declared.horizon, grid=declared.grid,
                                 group_categories=choice.categories.get(mapping.group) if mapping.group else None,
                                 covariate_ranges={k: v for k, v in choice.covariate_ranges.items() if k in covs})
    _store(choice)

cohort, problems = session.validated()
for col, slot in slots.items():
    with slot:
        show_problems([p for p in problems if p.column == col])
with general_slot:
    show_problems([p for p in problems if p.column not in slots])

if cohort is None:
    st.error("Fix the red messages above to analyse this data: the other pages wait for a valid cohort.", icon=":material/error:")
    st.stop()

# ---------------------------------------------------------------- value labels and kinds
labels = session.value_labels(choice)
with st.expander("Value labels and column kinds", expanded=not choice.bundled, icon=":material/label:"):
    st.caption("Name the codes of a column (sex 1 = Male, 2 = Female) and say whether it is a category (groups, "
               "indicators against a reference level in a regression) or a number. "
               + ("This data set ships the labels of its R documentation; changes here" if choice.bundled
                  else "Labels") + " stay in this browser session only: never written to disk.")
    label_cols = [c for c in cols if c not in (time_col, id_col)]
    if label_cols:
        first = mapping.group if mapping.group in label_cols else (covs[0] if covs else label_cols[0])
        lab_col = st.selectbox("Column", label_cols, index=_index(label_cols, first), key=f"{tok}-lab-col",
                               format_func=lambda c: f"{c}: {labels.describe(c)}" if labels.describe(c) else c)
        kind_now = labels.kind(lab_col, raw[lab_col])
        kind = st.radio(f"'{markdown_literal(lab_col)}' holds", KINDS, index=KINDS.index(kind_now), horizontal=True,
                        key=f"{tok}-kind-{lab_col}",
                        format_func=lambda k: {CATEGORICAL: "categories (codes)", NUMERIC: "numbers"}[k])
        new_labels = labels if kind == kind_now else labels.with_kind(lab_col, kind)
        if kind == CATEGORICAL:
            codes = code_options(raw[lab_col], limit=31)
            if len(codes) > 30:
                st.warning(f"'{markdown_literal(lab_col)}' has more than 30 distinct values: only the first 30 can be "
                           "labelled here. If it is a number (an age, a lab value), mark it as numbers.")
                codes = codes[:30]
            base_key = f"{tok}-labels-base-{lab_col}"
            # the editor's starting table, fixed while its edits (its widget state) live so that they apply to it; a
            # new visit starts from the labels kept since, never from an earlier visit's table
            if base_key not in st.session_state or f"{tok}-labels-{lab_col}" not in st.session_state:
                st.session_state[base_key] = pd.DataFrame(
                    {"Value": codes, "Label": [labels.labels_for(lab_col).get(c, "") for c in codes]})
            edited = st.data_editor(st.session_state[base_key], disabled=["Value"], hide_index=True,
                                    key=f"{tok}-labels-{lab_col}", width="stretch")
            new_labels = new_labels.with_labels(lab_col, {code_key(v): str(lab or "") for v, lab in
                                                          zip(edited["Value"], edited["Label"], strict=True)})
            if codes:
                ref_now = new_labels.reference(lab_col, codes)
                ref = st.selectbox("Reference level (what the other categories are compared with)", codes,
                                   index=_index(codes, ref_now), key=f"{tok}-ref-{lab_col}",
                                   format_func=lambda c: new_labels.display(lab_col, c))
                if ref != ref_now:
                    new_labels = new_labels.with_reference(lab_col, ref)
        else:
            st.caption(f"Values of '{markdown_literal(lab_col)}': {markdown_literal(numeric_summary(raw[lab_col]))}.")
        if new_labels != labels:
            session.set_value_labels(new_labels, choice)
            labels = new_labels
    shown = [c for c in cols if labels.has_labels(c) or c in labels.kinds]
    if shown:
        st.dataframe(pd.DataFrame({
            "Column": shown,
            "Kind": [labels.kind(c, raw[c]) for c in shown],
            "Labels": ["; ".join(f"{k} = {v}" for k, v in labels.labels_for(c).items()) for c in shown],
        }), hide_index=True, width="stretch")
    j1, j2 = st.columns(2)
    j1.download_button("Labels as JSON", data=json.dumps(labels.to_json(), indent=2, ensure_ascii=False),
                       file_name=session.labels_file(choice), mime="application/json",
                       key=f"{tok}-labels-json", on_click="ignore", icon=":material/download:",
                       help="Keep your labels in a file: load it again here, next session or for the same study.")
    codebook = j2.file_uploader("Load labels from a JSON file", type=["json"], key=f"{tok}-labels-upload",
                                help="A file saved with 'Labels as JSON'. Columns this table does not have are "
                                     "ignored.")
    if codebook is not None and st.session_state.get(f"{tok}-labels-loaded") != codebook.file_id:
        st.session_state[f"{tok}-labels-loaded"] = codebook.file_id
        loaded, message = load_labels_json(codebook.getvalue(), cols)
        if loaded is None:
            st.session_state[f"{tok}-labels-message"] = ("error", message)
        else:
            session.set_value_labels(labels.merged(loaded), choice)
            for k in [k for k in st.session_state if str(k).startswith(f"{tok}-labels-") and
                      not str(k).startswith((f"{tok}-labels-loaded", f"{tok}-labels-upload", f"{tok}-labels-json"))]:
                del st.session_state[k]  # the label editors start again from the loaded labels
            st.session_state[f"{tok}-labels-message"] = ("success", message)
            st.rerun()
    kind_msg = st.session_state.get(f"{tok}-labels-message")
    if kind_msg is not None and codebook is not None:
        (st.error if kind_msg[0] == "error" else st.success)(markdown_literal(kind_msg[1]))

# ---------------------------------------------------------------- 3. summary
st.subheader("3. Summary")


@st.cache_data(show_spinner=False, max_entries=64)
def _bundled_summary(name: str, fingerprint: str, mapping: str, unit: str, source_unit: str, _cohort) -> pd.DataFrame:
    """A bundled (public) data set's summary, computed once per server process for each mapping and unit."""
    return cohort_summary(_cohort)


# the cohort is fixed by the table (its name and fingerprint), the column map and the units: the cache key
_summary_key = (choice.name, choice.fingerprint, repr(mapping), unit, source_unit)
try:
    table = by_data(choice.bundled, ("data_summary", *_summary_key), partial(cohort_summary, cohort),
                    lambda: _bundled_summary(*_summary_key, cohort))
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
shown_summary = summary_display(table, cohort.time_unit, mapping.group, cohort.subject is not None, labels)
st.table(markdown_literal_frame(shown_summary), hide_index=True)
table_download(shown_summary, f"{choice.name}-summary", key=f"{tok}-summary-csv", label="Summary as CSV")
st.caption("Exact numbers for the data holder (not private, never released). Censored: percentage of rows. "
           "Median follow-up by reverse Kaplan-Meier; 'not reached' when fewer than half the patients were censored "
           "before the last event.")
types = event_type_counts(cohort)
if types:
    st.caption("Rows by event type: " + ", ".join(f"{markdown_literal(k)}: {v:,}" for k, v in types.items()) + ".")

# ---------------------------------------------------------------- 4. public parameters
st.subheader("4. Public parameters")
st.caption("Declare these from the study design, not from the data. A release that needs a value left empty reads it "
           "off the data: it is shown as a disclosure, and a release is refused unless you publish it as read "
           "(the release is then not DP as run)."
           + (" This data set's documentation declares its covariates' bounds, the codes of its labelled columns and "
              "its size; nothing documents a horizon or a time grid." if choice.bundled else ""))
declared_now = public_boxes(choice, cohort, tok, labels)
if declared_now != choice:
    choice = declared_now
    _store(choice)

try:
    params = session.public_parameters(cohort)
except DpsurvError as exc:
    st.error(markdown_literal(exc))
    st.stop()
disclosures = [*params.disclosures(), *event_type_disclosures(cohort)]
if disclosures:
    st.markdown(f"**Disclosures ({len(disclosures)})**: shown next to every release made from this data.")
    for dsc in disclosures:
        if dsc.dp:
            st.warning(f"Disclosed ({markdown_literal(dsc.parameter)}): {markdown_literal(dsc.message)}",
                       icon=":material/visibility:")
        else:
            st.error(f"Not DP ({markdown_literal(dsc.parameter)}): {markdown_literal(dsc.message)}", icon=":material/error:")
else:
    st.success("Every public parameter is declared: nothing is read off the data.")
st.caption(f"Time grid: {params.grid.bins} bins from {params.grid.edges[0]:g} to {params.grid.edges[-1]:g} {unit}; "
           f"horizon {params.horizon:g} {unit}.")

# ---------------------------------------------------------------- 5. preview
st.subheader("5. Preview")
with_labels = st.toggle("Show value labels", value=True, key=f"{tok}-preview-labels")
st.caption(f"First 50 of {len(choice.frame):,} rows" + (f"; times in {unit}" if unit != source_unit else "")
           + ("; codes shown by their labels" if with_labels and labels.values else "") + ".")
head = choice.frame.head(50)
st.dataframe(labels.relabel(head) if with_labels else head, hide_index=True)
