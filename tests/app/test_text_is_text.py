"""Text is text: labels, column names and data set names from an upload are shown literally everywhere Markdown is
read (text, alerts, captions, widget labels, ``st.table`` cells), and every table export is formula-safe.

The labels are the two classic payloads: a Markdown image (``![x](http://...)``, which made the browser fetch the
URL) and a spreadsheet formula (``=HYPERLINK(...)``); the data set name also carries backticks, so that a command line
shown as code cannot be closed early by the name inside it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest, app_test

from dpsurv_app import session
from dpsurv_core.data.cohort import ColumnMap
from dpsurv_core.report.files import FORMULA_START
from tests.app.apptest import release as release_click

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "dpsurv_app"  # the pages are named as the app names them, next to app.py
IMAGE = "![x](http://example.invalid/x.png)"
FORMULA = '=HYPERLINK("http://x")'
ARM = f"{FORMULA} arm"  # a categorical covariate whose name a spreadsheet would run
NAME = "n`![y](http://example.invalid/y.png)`"  # a data set (file) name that would close a one-backtick code span
LIVE = re.compile(r"(?<!\\)!\[|(?<!\\)\]\((?!\s)|<a\b|<img\b", re.I)  # an image, a link, an HTML link or image
_RUN = re.compile(r"(?<!`)(`+)(?!`)")


def outside_code(text: str) -> str:
    """``text`` without its code spans, found as CommonMark finds them (a run of n backticks closes at the next run of
    exactly n): what is left is what Markdown interprets."""
    out, i = [], 0
    while (m := _RUN.search(text, i)) is not None:
        close = re.compile(r"(?<!`)" + "`" * len(m.group(1)) + r"(?!`)").search(text, m.end())
        if close is None:  # an unmatched run is literal text
            out.append(text[i:m.end()])
            i = m.end()
            continue
        out.append(text[i:m.start()])
        i = close.end()
    return "".join(out + [text[i:]])


def interpreted(at: AppTest) -> list[tuple[str, str]]:
    """Every piece of Markdown the page drew: text elements, alerts, widget labels, expander labels and st.table
    cells, headers and index (which st.table reads as Markdown)."""
    out = [(kind, str(e.value)) for kind in ("markdown", "caption", "info", "warning", "error", "success", "title",
                                             "header", "subheader") for e in getattr(at, kind)]
    out += [(kind, str(w.label)) for kind in ("checkbox", "toggle", "radio", "multiselect", "selectbox",
                                              "number_input", "text_input", "select_slider", "button", "expander")
            for w in getattr(at, kind)]
    out += [("metric", str(m.label)) for m in at.metric]
    for t in at.table:
        df = t.value
        out += [("table", str(v)) for v in [*df.columns, *df.index, *df.astype(str).to_numpy().ravel()]]
    return out


def live(at: AppTest) -> list[tuple[str, str]]:
    return [(kind, text) for kind, text in interpreted(at) if LIVE.search(outside_code(text))]


def injected() -> session.DataChoice:
    """An upload whose group column is named by the formula payload and holds both payloads as group labels, with a
    numeric covariate named by the image payload and a categorical one (its name a formula too) labelled by both;
    everything a release needs declared, so the pages can release."""
    rng = np.random.default_rng(11)
    n = 300
    frame = pd.DataFrame({"t": np.round(rng.exponential(300, n) + 1, 1), "e": rng.integers(0, 2, n),
                          FORMULA: rng.choice([IMAGE, FORMULA], n), IMAGE: np.round(rng.normal(size=n), 2),
                          ARM: rng.choice([IMAGE, FORMULA], n)})
    return session.DataChoice(NAME, frame, ColumnMap(time="t", event="e", group=FORMULA, covariates=(IMAGE, ARM)),
                              "days", False, horizon=900.0, group_categories=(IMAGE, FORMULA),
                              categories={FORMULA: (IMAGE, FORMULA), ARM: (IMAGE, FORMULA)},
                              covariate_ranges={IMAGE: (-5.0, 5.0)}, n_public=n, censoring=0.5)


@pytest.fixture
def downloads(monkeypatch) -> list[MemoryMediaFileStorage]:
    """The media stores of the AppTest runs: every download button's bytes, to read after the run."""
    stores: list[MemoryMediaFileStorage] = []

    class Kept(MemoryMediaFileStorage):
        def __init__(self, *args) -> None:
            super().__init__(*args)
            stores.append(self)

    monkeypatch.setattr(app_test, "MemoryMediaFileStorage", Kept)
    return stores


def csv_downloads(at: AppTest, stores: list[MemoryMediaFileStorage]) -> dict[str, list[list[str]]]:
    """The CSV files the page's download buttons hold (label -> rows)."""
    out = {}
    for b in at.get("download_button"):
        url = b.proto.url
        if not url.endswith(".csv"):
            continue
        data = stores[-1].get_file(url.rsplit("/", 1)[1]).content
        out[f"{b.proto.label} ({b.proto.id[-12:]})"] = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    return out


def formula_cells(files: dict[str, list[list[str]]]) -> list[tuple[str, str]]:
    """Cells a spreadsheet would evaluate: text beginning with =, +, -, @, tab or CR that is not a plain number."""
    bad = []
    for name, rows in files.items():
        for cell in (c for row in rows for c in row):
            if cell.startswith(FORMULA_START):
                try:
                    float(cell)
                except ValueError:
                    bad.append((name, cell))
    return bad


def run(page: str, choice: session.DataChoice, **state) -> AppTest:
    at = AppTest.from_file(str(APP_DIR / page), default_timeout=300)
    at.session_state["data_choice"] = choice
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.mark.parametrize(("page", "release", "state"), [
    ("pages/5_Regression.py", "release-regression-output", {"rg_trials": 5}),
    ("pages/3_Group_comparison.py", "release-logrank", {}),
    ("pages/2_Survival_curves.py", "release-curves", {"sc_split": True}),
])
def test_uploaded_labels_stay_text_before_and_after_a_release_and_exports_are_formula_safe(page, release, state,
                                                                                          downloads, ledger_path):
    at = run(page, injected(), **state)
    assert not live(at), live(at)
    # the payloads did reach the page (as escaped text), so the check above looked at them
    shown = " ".join(text for _, text in interpreted(at))
    assert (r"\!\[x\]\(http\://example\.invalid/x\.png\)".replace("://", ":\u200b//")) in shown
    for box in at.checkbox:  # values still read off the data (a covariate's categories): published as read
        if str(box.key).startswith("accept-" + release.removeprefix("release-") + "-"):
            box.check()
    at.run()
    assert not live(at), live(at)  # the boxes' labels name the column
    release_click(at, release).run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(s.value.startswith("Released as record") for s in at.success), [e.value for e in at.error]
    assert not live(at), live(at)
    files = csv_downloads(at, downloads)
    assert files, "the page offers its tables as CSV"
    assert not formula_cells(files), formula_cells(files)
    cells = {c for rows in files.values() for row in rows for c in row}
    assert any(c.startswith("'" + FORMULA) for c in cells), sorted(cells)[:20]  # exported, as text
    for chart in at.get("plotly_chart"):  # legends, hover text, titles and ticks draw no HTML link or image
        spec = json.loads(chart.proto.spec)
        words = json.dumps([spec.get("data", []), spec.get("layout", {})])
        assert not re.search(r"<a\b|<img\b", words, re.I)


def test_the_ledger_page_shows_names_and_reasons_as_typed(ledger_path):
    choice = injected()
    at = run("pages/8_Ledger_and_report.py", choice)
    at.text_input(key="cap_set_note").input(f"{IMAGE} {FORMULA}")
    at.button(key="cap_set").click().run()
    assert not at.exception
    assert not live(at), live(at)
    reasons = [str(v) for t in at.table for v in t.value.to_numpy().ravel() if "HYPERLINK" in str(v)]
    assert reasons and all(r"\!\[x\]" in r for r in reasons)  # the reason, shown as typed in the cap history


def test_an_uploaded_file_keeps_its_column_names_and_labels_as_typed_up_to_the_regression_table(ledger_path,
                                                                                                 downloads):
    """Through the upload itself: a CSV whose group column is named by the image payload and holds both payloads,
    with a numeric covariate named by the formula payload, mapped and confirmed on the Data page, then the Regression
    page of the same session (where uploaded labels had reached the tables and alerts as live Markdown)."""
    rng = np.random.default_rng(3)
    n = 80
    frame = pd.DataFrame({"time": np.round(rng.exponential(200, n) + 1, 1), "status": rng.integers(0, 2, n),
                          IMAGE: rng.choice([IMAGE, FORMULA], n), FORMULA: np.round(rng.normal(size=n), 2)})
    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "app.py"), default_timeout=300)
    at.run()
    at.radio(key="data_source").set_value("Upload a file").run()
    at.file_uploader(key="upload_file").set_value(("trial.csv", frame.to_csv(index=False).encode(), "text/csv")).run()
    (group,) = [s for s in at.selectbox if s.label.startswith("Group")]
    group.set_value(IMAGE).run()
    (covariates,) = [m for m in at.multiselect if m.label.startswith("Covariates")]
    covariates.set_value([FORMULA, IMAGE]).run()
    (confirm,) = [b for b in at.button if b.label == "Confirm these columns"]
    confirm.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not live(at), live(at)
    assert any(IMAGE in str(v) for d in at.dataframe for v in d.value.columns)  # the preview has the column
    at.switch_page("pages/5_Regression.py")
    at.session_state["rg_trials"] = 5
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert not live(at), live(at)
    covariate = at.table[0].value["Covariate"]
    assert (r'=HYPERLINK\("http\://x"\)'.replace("://", ":\u200b//")) in set(covariate)  # the numeric covariate, named as typed
    assert any(c.startswith(r"\!\[x\]") for c in covariate)  # the categorical one, against its reference
    files = csv_downloads(at, downloads)
    assert not formula_cells(files), formula_cells(files)
    assert any(c == "'" + FORMULA for rows in files.values() for row in rows for c in row)


def test_streamlits_own_table_export_is_off():
    """st.dataframe's toolbar would download cells as they are (an =HYPERLINK(...) label stays a formula): the
    project's configuration switches Streamlit's data export off, and the app's CSV buttons neutralise formulas."""
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["disableDataExport"] is True
    from streamlit import config as st_config

    assert st_config.get_option("client.disableDataExport") is True  # read from the project folder, as `make run`
