"""The Data page with value labels, upload guessing and its confirmation, the glossary and the summary's CSV."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.tables import shown
from tests.data.test_guess import months_trial

APP = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "app.py")


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def start() -> AppTest:
    return run(AppTest.from_file(APP, default_timeout=90))


def upload(at: AppTest, name: str, frame: pd.DataFrame) -> AppTest:
    at.radio(key="data_source").set_value("Upload a file")
    run(at)
    at.file_uploader(key="upload_file").set_value((name, frame.to_csv(index=False).encode(), "text/csv"))
    return run(at)


def by_label(widgets, label: str):
    (w,) = [w for w in widgets if w.label == label]
    return w


def label_sex(at: AppTest) -> AppTest:
    """On the Data page of the months trial: open the labels of 'sex' (guessed categorical), name 1 Male, 2 Female."""
    by_label(at.selectbox, "Column").set_value("sex")
    run(at)
    assert by_label(at.radio, "'sex' holds").value == "categorical"
    key = next(d.key for d in at.dataframe if d.key and d.key.endswith("-labels-sex"))
    at.session_state[key] = {"edited_rows": {"0": {"Label": "Male"}, "1": {"Label": "Female"}}, "added_rows": [],
                             "deleted_rows": []}
    return run(at)


def test_lung_summary_shows_the_r_labels_and_offers_a_csv(ledger_path):
    at = start()
    stored = at.session_state["value_labels"] if "value_labels" in at.session_state else {}
    assert stored == {}  # viewing a bundled data set keeps no labels of its own: only changes are kept
    table = shown(at.table[0].value)
    assert table.iloc[:, 0].tolist() == ["All subjects", "Male (1)", "Female (2)"]
    assert table["Subjects"].tolist() == ["228", "138", "90"]
    (button,) = [b for b in at.get("download_button") if b.label == "Summary as CSV"]
    assert button.proto.default is False and not button.proto.disabled
    # the explainer is open on the first visit, with the glossary terms beside it
    assert [(e.label, e.proto.expanded) for e in at.expander][0] == ("What am I looking at?", True)
    assert "censored" in [p.proto.popover.label for p in at.get("popover")]
    # the preview shows labels, and the raw codes on request
    preview = at.dataframe[-1].value
    assert set(preview["sex"]) <= {"Male", "Female"} and preview["status"].iloc[0] == "Dead"
    at.toggle(key="b-lung-preview-labels").set_value(False)
    run(at)
    assert set(at.dataframe[-1].value["sex"]) <= {1, 2}


def test_ecog_as_group_and_relabelling_a_bundled_column(ledger_path):
    at = start()
    by_label(at.selectbox, "Group (e.g. treatment arm; compared on later pages)").set_value("ph.ecog")
    run(at)
    assert shown(at.table[0].value).iloc[1:, 0].tolist() == [
        "ECOG 0: asymptomatic (0)", "ECOG 1: symptomatic, fully ambulatory (1)", "ECOG 2: in bed < 50% of the day (2)",
        "ECOG 3: in bed > 50% of the day, not bedbound (3)"]
    by_label(at.selectbox, "Column").set_value("sex")
    run(at)
    editor = next(d for d in at.dataframe if d.key == "b-lung-labels-sex")
    assert editor.value["Label"].tolist() == ["Male", "Female"]
    at.session_state["b-lung-labels-sex"] = {"edited_rows": {"0": {"Label": "Men"}}, "added_rows": [],
                                             "deleted_rows": []}
    run(at)
    stored = next(iter(v for v in at.session_state["value_labels"].values() if v.has_labels("ph.ecog")))
    assert stored.label("sex", 1) == "Men" and stored.label("sex", 2) == "Female"


def test_months_upload_is_guessed_shown_and_must_be_confirmed(ledger_path):
    at = upload(start(), "trial.csv", months_trial())
    choice = at.session_state["data_choice"]
    m = choice.mapping
    assert (m.time, m.event, m.group, m.id) == ("os_months", "os_status", "arm", "patient_id")
    assert (choice.source_unit, choice.time_unit) == ("months", "months")
    assert by_label(at.selectbox, "Times in the file are in").value == "months"
    assert any("Guessed: months, because the column name" in c.value for c in at.caption)
    guess = at.dataframe[0].value
    assert guess["Role"].tolist() == ["Time", "Event", "Group", "Subject id", "Time unit"]
    assert guess["Column"].tolist() == ["os_months", "os_status", "arm", "patient_id", "months"]
    # the summary is per arm, in months
    table = shown(at.table[0].value)
    assert table.iloc[:, 0].tolist() == ["All subjects", "Chemo", "Chemo + RT"]
    assert table["Longest follow-up"].iloc[0].endswith("months")
    # coded sex is marked as categories; the user names its codes
    label_sex(at)
    by_label(at.selectbox, "Group (e.g. treatment arm; compared on later pages)").set_value("sex")
    run(at)
    assert shown(at.table[0].value).iloc[:, 0].tolist() == ["All subjects", "Male (1)", "Female (2)"]
    # analysis pages wait for the confirmation
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    assert any("were guessed from the file" in i.value for i in at.info)
    at.switch_page("pages/1_Data.py")
    run(at)
    by_label(at.button, "Confirm these columns").click()
    run(at)
    assert not [b for b in at.button if b.label == "Confirm these columns"]
    assert any(c.value.startswith("Columns confirmed") for c in at.caption)
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    assert not any("were guessed from the file" in i.value for i in at.info)


def test_marking_a_column_numeric_is_kept_for_other_pages(ledger_path):
    at = upload(start(), "trial.csv", months_trial())
    by_label(at.selectbox, "Column").set_value("sex")
    run(at)
    by_label(at.radio, "'sex' holds").set_value("numeric")
    run(at)
    fp = at.session_state["data_choice"].fingerprint
    assert at.session_state["value_labels"][fp].kind("sex") == "numeric"
    assert not [d for d in at.dataframe if d.key and d.key.endswith("-labels-sex")]  # no label editor for numbers


def test_labels_saved_as_json_load_again_and_bad_files_say_why(ledger_path):
    import json

    at = upload(start(), "trial.csv", months_trial())
    (uploader,) = [u for u in at.file_uploader if u.label == "Load labels from a JSON file"]
    codebook = {"values": {"sex": {"1": "Male", "2": "Female"}, "smoker": {"0": "No"}}, "kinds": {"age": "numeric"}}
    uploader.set_value(("codebook.json", json.dumps(codebook).encode(), "application/json"))
    run(at)
    fp = at.session_state["data_choice"].fingerprint
    assert at.session_state["value_labels"][fp].label("sex", 2) == "Female"
    (ok,) = [re.sub(r"\\(.)", r"\1", s.value) for s in at.success if "Loaded labels" in s.value]
    assert "2 column(s)" in ok and "smoker" in ok  # sex and age used; smoker ignored
    uploader = next(u for u in at.file_uploader if u.label == "Load labels from a JSON file")
    uploader.set_value(("bad.json", b"{not json", "application/json"))
    run(at)
    assert any("not JSON text" in e.value for e in at.error)
    assert at.session_state["value_labels"][fp].label("sex", 2) == "Female"  # the labels in use are kept


def test_load_labels_json_sentences():
    from dpsurv_app.data_view import load_labels_json

    assert load_labels_json(b'{"values": {"x": {"1": "a"}}}', ["y"])[0] is None
    labels, text = load_labels_json(b'{"kinds": {"y": "numeric"}}', ["y"])
    assert labels is not None and labels.kind("y") == "numeric" and text.startswith("Loaded labels for 1 column(s)")
    assert "mark it" in load_labels_json(b'{"kinds": {"y": "ordinal"}}', ["y"])[1]
    assert "larger than 1 MB" in load_labels_json(b" " * 1_000_001, ["y"])[1]


def test_labels_saved_on_the_data_page_name_the_regression_on_the_page_and_the_cli_alike(ledger_path, tmp_path,
                                                                                        monkeypatch):
    """An upload's coded sex labelled on the Data page (women the reference), its 'Labels as JSON' file saved, the
    Regression page's command run with that file: the command line names the coefficients as the page does and
    gives the page's numbers."""
    import json

    from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
    from streamlit.testing.v1 import app_test

    from tests.cli.test_regression_categorical import (
        assert_page_table_is_the_cli_fit,
        cli_json,
        nonprivate,
        page_command,
    )

    stores: list[MemoryMediaFileStorage] = []

    class KeptStorage(MemoryMediaFileStorage):  # the download buttons' bytes, kept to read after the run
        def __init__(self, *args) -> None:
            super().__init__(*args)
            stores.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", KeptStorage)
    trial = months_trial(n=120)
    at = upload(start(), "trial.csv", trial)
    label_sex(at)
    by_label(at.selectbox, "Reference level (what the other categories are compared with)").set_value("2")
    run(at)
    by_label(at.button, "Confirm these columns").click()
    run(at)
    (button,) = [b for b in at.get("download_button") if b.label == "Labels as JSON"]
    saved = stores[-1].get_file(button.proto.url.rsplit("/", 1)[1]).content
    assert json.loads(saved)["values"]["sex"] == {"1": "Male", "2": "Female"}
    assert json.loads(saved)["references"]["sex"] == "2"
    (tmp_path / "trial.csv-labels.json").write_bytes(saved)  # the name the Data page saves under
    (tmp_path / "trial.csv").write_bytes(trial.to_csv(index=False).encode())  # the uploaded file

    at.switch_page("pages/5_Regression.py")
    at.session_state["rg_covs"] = ["age", "sex"]
    at.session_state["rg_mechs"] = ["output"]
    at.session_state["rg_trials"] = 10
    run(at)
    argv = page_command(at)
    assert argv[argv.index("--labels") + 1] == "trial.csv-labels.json" and argv[argv.index("--categorical") + 1] == "sex:2"
    out = cli_json(nonprivate(argv), cwd=tmp_path)  # run where the labels file and the data were saved
    assert out["covariates"] == ["age", "sex=Male"] and out["reference_levels"] == {"sex": "Female"}
    assert out["categories"]["sex"]["reference_label"] == "Female"
    assert_page_table_is_the_cli_fit(at, out, ["age", "sex: Male vs Female"])


def test_labels_survive_leaving_and_returning_to_the_data_page(ledger_path):
    """The label editor's starting table was fixed at the first visit: returning to the page (its edits gone with the
    widget) re-applied that table over the labels kept since, wiping them ("sex 1 = Men" back to blank)."""
    at = start()
    by_label(at.selectbox, "Column").set_value("sex")
    run(at)
    at.session_state["b-lung-labels-sex"] = {"edited_rows": {"0": {"Label": "Men"}}, "added_rows": [],
                                             "deleted_rows": []}
    run(at)
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    at.switch_page("pages/1_Data.py")
    run(at)
    run(at)
    stored = next(iter(at.session_state["value_labels"].values()))
    assert stored.label("sex", 1) == "Men" and stored.label("sex", 2) == "Female"
    editor = next(d for d in at.dataframe if d.key == "b-lung-labels-sex")
    assert editor.value["Label"].tolist() == ["Men", "Female"]
