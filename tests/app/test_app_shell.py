"""The app shell (sidebar) and the Data page through Streamlit's AppTest, with real values."""

from __future__ import annotations

import io
import re
import time
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app.session import bundled_choice
from dpsurv_core.privacy.ledger import LedgerEntry, LedgerStore, PrivacyCost
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dpsurv_app" / "app.py")


def start(**state) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=90)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def flat(node) -> list:
    """Every element of the page in the order it is drawn."""
    out = []
    for ch in getattr(node, "children", {}).values():
        out.append(ch)
        out += flat(ch)
    return out


def widget(at: AppTest, kind: str, label_start: str):
    matches = [w for w in getattr(at, kind) if w.label.startswith(label_start)]
    assert matches, f"no {kind} labelled {label_start!r}"
    return matches[0]


def summary(at: AppTest) -> pd.DataFrame:
    return shown(at.table[0].value)


def messages(at: AppTest, kind: str = "error") -> list[str]:
    """The messages as shown: data-derived parts are markdown-escaped (backslashes the reader does not see)."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in getattr(at, kind)]


def upload(at: AppTest, name: str, data: bytes) -> AppTest:
    if at.radio(key="data_source").value != "Upload a file":
        at.radio(key="data_source").set_value("Upload a file")
        rerun(at)
    at.file_uploader(key="upload_file").set_value((name, data, "application/octet-stream"))
    return rerun(at)


def cohort_csv(n: int = 30, status=None) -> bytes:
    status = status or [i % 2 for i in range(n)]
    df = pd.DataFrame({"months": [3 + i for i in range(n)], "status": status, "arm": ["A", "B"] * (n // 2)})
    return df.to_csv(index=False).encode()


# ------------------------------------------------------------------------------------------- sidebar

def sidebar_text(at: AppTest) -> list[str]:
    out = []
    for e in flat(at.sidebar):
        if getattr(e, "type", "") == "progress":
            out.append(e.proto.text)
        elif hasattr(e, "value") and isinstance(e.value, str):
            out.append(e.value)
    return out


def charge(store: LedgerStore, fp: str, eps: float, protects: str = "the subject", mechanism: str = "laplace-counts",
           dataset: str = "veteran") -> int:
    """A release record as the command line (or another tab) writes it."""
    with store.transaction(fp) as tx:
        return tx.charge(LedgerEntry(mechanism, "survival curves", dataset, {}, PrivacyCost(eps, protects=protects)))


def test_sidebar_has_no_editable_cap_and_says_when_there_is_none(ledger_path):
    at = start()
    assert at.sidebar.markdown[0].value == "**Data:** lung (228 rows)"
    assert not at.sidebar.number_input and not at.sidebar.button  # the cap is set on the Ledger page, not here
    text = sidebar_text(at)
    assert "**Budget:** no cap set · spent epsilon 0 (protecting the subject)" in text
    assert any("Set a cap on the Ledger and report page" in t and "budget set --data lung --cap C" in t for t in text)
    assert any("0 release(s) of this data set" in t for t in text)
    assert LedgerStore(ledger_path).records() == []


def test_sidebar_shows_the_data_sets_persistent_cap_and_spent(ledger_path):
    store = LedgerStore(ledger_path)
    vet = bundled_choice("veteran").fingerprint
    store.set_cap(vet, 2.0, "veteran")
    charge(store, vet, 0.5)
    store.allow_label_only(vet, "labels only, board minute 4", "veteran")  # needed under a cap
    charge(store, vet, 1.0, "the group label only", "rrr")
    charge(store, bundled_choice("lung").fingerprint, 0.25, dataset="lung")  # another data set's budget
    at = start(data_choice=bundled_choice("veteran"))
    assert at.sidebar.markdown[0].value == "**Data:** veteran (137 rows)"
    text = sidebar_text(at)
    assert "Spent: epsilon 0.5 of 2 (protecting the subject)" in text
    assert any("Label-only releases: epsilon 1 (protects the group label only), counted apart" in t for t in text)
    assert any("no DP guarantee" in t for t in text)  # the label-only release voids the subject's guarantee
    assert any("2 release(s) of this data set" in t for t in text)
    # lung has its own budget: no cap, its one release
    text = sidebar_text(start())
    assert "**Budget:** no cap set · spent epsilon 0.25 (protecting the subject)" in text
    assert any("1 release(s) of this data set" in t for t in text)


def test_sidebar_follows_records_written_by_another_process(ledger_path):
    store = LedgerStore(ledger_path)
    lung = bundled_choice("lung").fingerprint
    at = start()
    assert not any(t.startswith("Spent:") for t in sidebar_text(at))
    store.set_cap(lung, 4.0, "lung")
    charge(store, lung, 1.5, dataset="lung")
    at = start(data_choice=at.session_state["data_choice"])
    assert "Spent: epsilon 1.5 of 4 (protecting the subject)" in sidebar_text(at)
    assert [r.kind for r in store.records()] == ["cap-set", "release"]  # drawing the sidebar recorded nothing


def test_data_set_budget_is_keyed_by_content_not_by_name(ledger_path):
    """An upload holding lung's numbers under other column names and row order shares lung's budget."""
    from dpsurv_core.data import datasets

    store = LedgerStore(ledger_path)
    lung = bundled_choice("lung").fingerprint
    store.set_cap(lung, 3.0, "lung")
    charge(store, lung, 1.0, dataset="lung")
    frame = datasets.load("lung").sample(frac=1.0, random_state=1).rename(columns=lambda c: f"col_{c}")
    at = upload(start(), "renamed.csv", frame.to_csv(index=False).encode())
    assert at.session_state["data_choice"].fingerprint == lung
    assert any("this data set's budget" in c.value.lower() and "spent epsilon 1 of 3" in c.value for c in at.caption)


# ------------------------------------------------------------------------------------------- Data page

def test_data_page_default_is_lung_with_summary_and_disclosures():
    at = start()
    assert at.title[0].value == "Data"
    assert any(e.label == "What am I looking at?" for e in at.expander)
    assert at.selectbox(key="bundled_name").value == "lung"
    table = summary(at)
    assert table.iloc[0].tolist()[:3] == ["All subjects", "228", "165"]
    assert table["Censored"].tolist()[0] == "63 (27.6%)"
    assert table["Median follow-up (reverse KM)"].tolist()[0] == "588 days"
    assert table.iloc[:, 0].tolist() == ["All subjects", "Male (1)", "Female (2)"]  # per group (sex), labelled
    warnings = messages(at, "warning")
    assert any(w.startswith("Disclosed (horizon): The horizon 1100") for w in warnings)
    # lung's R documentation lists the codes of sex: they declare its groups, which are then not read off the data
    assert widget(at, "text_input", "Group categories, comma-separated").value == "1, 2"
    assert not any(w.startswith("Disclosed (groups)") for w in warnings)
    assert len(at.selectbox(key="bundled_name").options) == 12


def test_switch_bundled_data_set_updates_choice_and_summary():
    # (AppTest drops the sidebar on reruns of a st.navigation app; the browser test checks the sidebar follows)
    at = start()
    at.selectbox(key="bundled_name").set_value("pbc")
    rerun(at)
    assert at.session_state["data_choice"].name == "pbc"
    table = summary(at)
    assert (table["Subjects"][0], table["Events"][0]) == ("418", "161")  # deaths; transplant counts as censored
    widget(at, "selectbox", "Competing-event type").set_value("status")
    rerun(at)
    assert any("transplant: 25" in c.value and "death: 161" in c.value for c in at.caption)


@pytest.mark.slow
def test_every_bundled_data_set_loads_on_the_page():
    from dpsurv_core.cli.datasets import describe
    from dpsurv_core.data.datasets import names

    at = start()
    for name in names():
        at.selectbox(key="bundled_name").set_value(name)
        rerun(at)
        assert at.session_state["data_choice"].name == name
        assert not messages(at), (name, messages(at))
        expected = describe(name)
        table = summary(at)
        assert (table["Subjects"][0], table["Events"][0]) == (f"{expected['n']:,}", f"{expected['events']:,}"), name


def test_kidney_subject_bound_warning_sits_beside_the_bound():
    at = start()
    at.selectbox(key="bundled_name").set_value("kidney")
    rerun(at)
    table = summary(at)
    assert table.columns.tolist()[1:3] == ["Subjects", "Rows"] and table.iloc[0].tolist()[1:4] == ["38", "76", "58"]
    widget(at, "number_input", "At most this many rows per subject").set_value(1)
    rerun(at)
    elements = flat(at.main)
    bound_at = next(i for i, e in enumerate(elements) if getattr(e, "label", "").startswith("At most this many"))
    warn_at = next(i for i, e in enumerate(elements)
                   if type(e).__name__ == "Warning" and "38 row(s) were dropped" in shown_text(e.value))
    assert 0 < warn_at - bound_at <= 3
    assert summary(at).iloc[0].tolist()[1:3] == ["38", "38"]


def test_time_unit_choice_converts_the_summary():
    at = start()
    widget(at, "selectbox", "Show times in").set_value("months")
    rerun(at)
    assert summary(at)["Longest follow-up"].tolist()[0] == "33.6 months"  # 1022 days
    assert at.session_state["data_choice"].time_unit == "months"


def test_upload_csv_then_bad_file_keeps_the_previous_data():
    at = upload(start(), "trial.csv", cohort_csv())
    assert at.session_state["data_choice"].name == "trial.csv"
    assert at.session_state["data_choice"].mapping.time == "months"
    assert summary(at).iloc[0].tolist()[:3] == ["All subjects", "30", "15"]
    upload(at, "broken.csv", b"")
    errors = messages(at)
    assert errors == ["'broken.csv' is empty: upload a file with a header row and one row per subject. "
                      "The data in use is still 'trial.csv'."]
    assert at.session_state["data_choice"].name == "trial.csv"
    assert summary(at).iloc[0].tolist()[:2] == ["All subjects", "30"]


def test_switching_source_back_to_upload_restores_the_upload():
    at = upload(start(), "trial.csv", cohort_csv())
    at.radio(key="data_source").set_value("Bundled data set")
    rerun(at)
    assert at.session_state["data_choice"].name == "lung"
    at.radio(key="data_source").set_value("Upload a file")
    rerun(at)
    assert at.session_state["data_choice"].name == "trial.csv"
    assert summary(at)["Subjects"][0] == "30"


@pytest.mark.parametrize("fmt", ["tsv", "parquet"])
def test_upload_tsv_and_parquet(fmt):
    df = pd.read_csv(io.BytesIO(cohort_csv(24)))
    if fmt == "tsv":
        data = df.to_csv(index=False, sep="\t").encode()
    else:
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        data = buf.getvalue()
    at = upload(start(), f"trial.{fmt}", data)
    assert at.session_state["data_choice"].name == f"trial.{fmt}"
    table = summary(at)
    assert (table["Subjects"][0], table["Events"][0]) == ("24", "12")


@pytest.mark.parametrize(("name", "data", "fragment"), [
    ("dup.csv", b"time,status,time\n1,1,2\n", "'time' appears 2 times"),
    ("noheader.csv", b"5,1\n8,0\n", "holds numbers, not column names"),
    ("fake.xlsx", b"not a workbook", "not a readable Excel workbook"),
])
def test_bad_uploads_give_one_sentence_and_lung_stays(name, data, fragment):
    at = upload(start(), name, data)
    (err,) = messages(at)
    assert fragment in err and err.endswith("The data in use is still 'lung'.")
    assert at.session_state["data_choice"].name == "lung"


def test_problem_is_shown_beside_the_widget_it_concerns():
    bad = b"time,status\n5,1\nsoon,0\n9,1\n"
    at = upload(start(), "bad_time.csv", bad)
    elements = flat(at.main)
    labels = [getattr(e, "label", None) for e in elements]
    time_at = labels.index("Time (follow-up until event or censoring)")
    unit_at = labels.index("Times in the file are in")
    errs = [i for i, e in enumerate(elements) if type(e).__name__ == "Error"]
    beside = [i for i in errs if time_at < i < unit_at]
    assert beside and "must hold numbers, but row 3 has 'soon'" in elements[beside[0]].value
    assert not at.table  # no summary while the data has errors
    assert any("Fix the red messages" in m for m in messages(at))


def test_an_id_column_is_mapped_so_rows_are_not_silently_patients():
    data = b"time,status,patient_id\n5,1,p1\n7,0,p1\n9,1,p2\n4,1,p3\n"
    at = upload(start(), "repeated.csv", data)
    assert at.session_state["data_choice"].mapping.id == "patient_id"
    assert any(w.startswith("1 row(s) were dropped") for w in messages(at, "warning"))
    widget(at, "number_input", "At most this many rows per subject").set_value(2)
    rerun(at)
    table = summary(at)
    assert (table["Subjects"][0], table["Rows"][0]) == ("3", "4")


def test_event_codes_declared_on_the_page():
    r_coding = cohort_csv(status=[1 + (i % 3 == 0) for i in range(30)])  # R's 1 = censored, 2 = dead
    at = upload(start(), "rcoded.csv", r_coding)
    assert any("besides 0 and 1" in m and "declare event code 2" in m for m in messages(at))
    widget(at, "multiselect", "Values of 'status' that mean the event happened").set_value(["2"])
    rerun(at)
    assert not [m for m in messages(at) if "besides" in m]
    assert summary(at).iloc[0].tolist()[:3] == ["All subjects", "30", "10"]


def test_excel_with_several_sheets_asks_which():
    buf = io.BytesIO()
    with pd.ExcelWriter(buf, engine="openpyxl") as w:
        pd.DataFrame({"about": ["codebook"]}).to_excel(w, sheet_name="readme", index=False)
        pd.read_csv(io.BytesIO(cohort_csv(20))).to_excel(w, sheet_name="cohort", index=False)
    at = upload(start(), "book.xlsx", buf.getvalue())
    sheet = widget(at, "selectbox", "The workbook has 2 sheets")
    assert sheet.options == ["readme", "cohort"] and at.session_state["data_choice"].name == "lung"
    sheet.set_value("cohort")
    rerun(at)
    assert at.session_state["data_choice"].name == "book.xlsx [cohort]"
    assert summary(at).iloc[0].tolist()[:2] == ["All subjects", "20"]


def test_latin1_upload_warns_and_works():
    raw = "time,status,centre\n" + "".join(f"{i},{i % 2},{'Besançon' if i % 2 else 'Québec'}\n" for i in range(1, 21))
    at = upload(start(), "latin.csv", raw.encode("latin-1"))
    assert any("not UTF-8" in w for w in messages(at, "warning"))
    widget(at, "selectbox", "Group").set_value("centre")
    rerun(at)
    assert summary(at).iloc[:, 0].tolist() == ["All subjects", "Besançon", "Québec"]


def test_declaring_public_parameters_removes_disclosures():
    at = start()
    widget(at, "checkbox", "Declare the horizon").check()
    rerun(at)
    # ticking the box pre-fills nothing from the data: the horizon stays read off the data (and disclosed)
    assert at.session_state["data_choice"].horizon is None
    assert any("horizon" in w for w in messages(at, "warning"))
    widget(at, "number_input", "Horizon (days)").set_value(1000.0)
    # lung's documented codes declare the categories of sex; undeclared, they are read off the data (disclosed)
    assert at.session_state["data_choice"].group_categories == ("1", "2")
    widget(at, "checkbox", "Declare the categories of 'sex'").uncheck()
    rerun(at)
    assert at.session_state["data_choice"].group_categories is None
    assert any("(groups)" in w for w in messages(at, "warning"))
    widget(at, "checkbox", "Declare the categories of 'sex'").check()
    rerun(at)
    # nothing is pre-filled from the data: until typed, the categories stay read off the data (disclosed)
    assert at.session_state["data_choice"].group_categories is None
    assert widget(at, "text_input", "Group categories, comma-separated").value == ""
    widget(at, "text_input", "Group categories, comma-separated").set_value("1, 2")
    rerun(at)
    choice = at.session_state["data_choice"]
    assert choice.horizon == 1000.0 and choice.group_categories == ("1", "2")
    warnings = messages(at, "warning")
    assert not any("horizon" in w for w in warnings) and not any("(groups)" in w for w in warnings)
    widget(at, "checkbox", "Event-time grid (not DP)").check()
    rerun(at)
    assert any(e.startswith("Not DP (grid)") for e in messages(at))


def test_uploaded_bytes_are_not_written_to_disk(tmp_path):
    marker = f"zz_private_marker_{time.time_ns()}"
    data = cohort_csv().replace(b"arm", marker.encode())
    t0 = time.time()
    upload(start(), "secret.csv", data)
    import tempfile

    hits = []
    for base in (ROOT, Path(tempfile.gettempdir())):
        for p in base.rglob("*"):
            try:
                if ".venv" in p.parts or ".git" in p.parts or not p.is_file() or p.stat().st_mtime < t0:
                    continue
                if p.stat().st_size < 5_000_000 and marker.encode() in p.read_bytes():
                    hits.append(p)
            except OSError:
                continue
    assert hits == []


def test_showing_months_changes_no_number_and_the_command_speaks_the_files_unit():
    """The horizon read off the data is rounded in the file's unit (lung: 1,100 days, shown as 36.1 months), so the
    grid, the curves and the command line are those of the days view; a horizon declared in months reaches the
    command line in days."""
    from dataclasses import replace

    from dpsurv_app import curves_view as cv
    from dpsurv_app import session
    from dpsurv_core.data.cohort import validate

    at = start()
    widget(at, "selectbox", "Show times in").set_value("months")
    rerun(at)
    choice = at.session_state["data_choice"]
    assert choice.time_unit == "months" and choice.source_unit == "days"
    cohort = validate(choice.frame, choice.mapping)[0]
    public = session.PublicParameters.derive(cohort, bins=choice.bins, source_factor=session.source_factor(choice))
    assert public.horizon * 365.25 / 12 == pytest.approx(1100.0)
    assert cv.grid_options(choice, public) == {"horizon": None}  # the CLI derives the same 1,100 days itself
    declared = replace(choice, horizon=36.0)
    public = session.PublicParameters.derive(cohort, horizon=36.0, bins=10)
    assert cv.grid_options(declared, public) == {"horizon": "1095.75", "grid": "0:1095.75:10"}
