"""Browser, a clinician's afternoon: the bundled lung data, then an uploaded CSV in months with an `arm`
column and sex coded 1/2, walked through every page (1 to 8) at 1400 px wide. The guessed column mapping is shown
and confirmed (unit: months), value labels are shown (sex as Male/Female on the Data page and in a legend), a figure
(PNG) and tables (CSV) are downloaded with a body, no table is cut off, no page raises an exception. Nothing here
releases: the walk is free, so the ledger stays empty."""

from __future__ import annotations

import csv
import json
import re

import numpy as np
import pytest

from dpsurv_core.privacy.ledger import LedgerStore
from tests.conftest import launch_app, wait_for_app
from tests.e2e.helpers import (
    COHORT_INPUT,
    MAIN,
    PAGES,
    SIDEBAR,
    download,
    fresh_session,
    legend,
    no_exception,
    open_page,
    untruncated_tables,
)

pytestmark = pytest.mark.browser

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def months_csv(n: int = 120, seed: int = 15) -> bytes:
    """A two-arm trial in months: os_months, dead (1 = died), arm, sex (1 = male, 2 = female), age."""
    rng = np.random.default_rng(seed)
    arm = np.where(np.arange(n) % 2 == 0, "Chemo", "Chemo+RT")
    sex = 1 + (rng.random(n) < 0.4).astype(int)
    months = np.round(rng.exponential(np.where(arm == "Chemo", 14.0, 22.0)), 1) + 0.5
    follow = np.round(rng.uniform(6.0, 60.0, n), 1)
    dead = (months <= follow).astype(int)
    time = np.minimum(months, follow)
    age = rng.integers(38, 86, n)
    rows = ["os_months,dead,arm,sex,age"] + [f"{t:.1f},{d},{a},{s},{g}" for t, d, a, s, g in
                                             zip(time, dead, arm, sex, age, strict=True)]
    return ("\n".join(rows) + "\n").encode()


SEX_LABELS = {"values": {"sex": {"1": "Male", "2": "Female"}}, "kinds": {"sex": "categorical"},
              "descriptions": {"sex": "Sex"}, "references": {"sex": "1"}}


@pytest.fixture(scope="module")
def app(tmp_path_factory, browser):
    """The app on its own server and empty ledger: the walk must record nothing."""
    ledger = tmp_path_factory.mktemp("walkthrough") / "ledger.sqlite3"
    with launch_app(ledger) as url:
        yield url, ledger


def _split_by(pg, column: str) -> list[str]:
    """Tick "Separate curves for each <column>" on the Survival curves page; the words of the first chart's legend."""
    box = pg.get_by_role("checkbox", name=f"Separate curves for each {column}")
    if not box.is_checked():
        pg.locator(MAIN).get_by_text(f"Separate curves for each {column}").click()
        wait_for_app(pg)
        pg.get_by_text("Number at risk").first.wait_for()
        wait_for_app(pg)
    return " ".join(legend(pg)).replace("(", " ").replace(")", " ").split()


def _walk(pg, where: str, visit=None) -> None:
    """Open every page 1 to 8 in turn: no exception, no cut-off table; ``visit(pg, name)`` checks more."""
    for name, _ in PAGES:
        open_page(pg, name)
        no_exception(pg, f"{where}, {name}")
        untruncated_tables(pg, f"{where}, {name}")
        if visit is not None:
            visit(pg, name)
            no_exception(pg, f"{where}, {name} after the checks")


def test_lung_and_a_months_upload_through_every_page(app, browser, tmp_path, artifacts):
    url, ledger = app
    ctx, pg = fresh_session(browser, url)
    main = pg.locator(MAIN)

    # ---- the bundled lung data: sex is labelled on the Data page and in the curves' legend
    pg.get_by_text("In use: lung").wait_for()
    assert "Female" in pg.locator("[data-testid='stTable']").first.inner_text()  # the summary, per labelled group

    def lung_checks(pg, name: str) -> None:
        text = main.inner_text()
        if name != "Data":  # the first visit of each page opens its explainer (the Data page was opened at start)
            main.get_by_text("What am I looking at?").first.wait_for(timeout=30_000)  # drawn after the page's marker
            opened = pg.evaluate("() => [...document.querySelectorAll('details')].filter(d => "
                                 "d.querySelector('summary')?.innerText.includes('What am I looking at?')).map(d => d.open)")
            assert opened == [True], f"{name}: explainer open = {opened}"
        if name == "Survival curves":
            assert {"Male", "Female"} <= set(_split_by(pg, "sex"))
            png = download(pg, "Figure as PNG", tmp_path)  # made by kaleido on click
            assert png.suffix == ".png" and png.read_bytes()[:8] == PNG_MAGIC and png.stat().st_size > 5_000
            at_risk = download(pg, "Table as CSV", tmp_path)
            rows = list(csv.reader(at_risk.open()))
            assert len(rows) > 2 and any("Female" in c for r in rows for c in r), rows[:3]
        elif name == "Group comparison":
            assert "Male" in text and "Female" in text
        elif name == "Regression":
            assert "0.60 (95% CI 0.43 to 0.83)" in text  # R coxph on lung: HR for sex, as a clinician writes it
        elif name == "Ledger and report":
            assert "no cap set" in pg.locator(SIDEBAR).inner_text()

    _walk(pg, "lung", lung_checks)
    pg.screenshot(path=str(artifacts / "walkthrough_lung_ledger.png"), full_page=True)

    # ---- an uploaded CSV in months: the guess is shown, months guessed, confirmed; sex labelled from a file
    open_page(pg, "Data")
    pg.get_by_text("Upload a file", exact=True).click()
    wait_for_app(pg)
    pg.locator(COHORT_INPUT).wait_for(state="attached")  # the bundled data set's labels uploader comes first
    pg.set_input_files(COHORT_INPUT,
        files=[{"name": "trial_months.csv", "mimeType": "text/csv", "buffer": months_csv()}])
    pg.get_by_text("In use: trial_months.csv").wait_for()
    wait_for_app(pg)
    pg.get_by_text("dpsurv guessed what the columns mean").wait_for()
    assert "Guessed: months, because the column name 'os_months' says months" in main.inner_text()
    grid = main.locator("[data-testid='stDataFrame']").first  # the guess, role by role, with its reasons
    grid.wait_for()
    guess = " | ".join(grid.locator("[data-testid^='glide-cell-']").all_text_contents())
    for role, column in (("Time", "os_months"), ("Event", "dead"), ("Group", "arm"), ("Time unit", "months")):
        assert role in guess and column in guess, guess
    assert pg.get_by_role("combobox", name="Times in the file are in", exact=True).input_value() == "months"
    # before confirming, the analysis pages wait and say so
    pg.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Survival curves", exact=True).click()
    pg.get_by_text("check and confirm them on the Data page").wait_for()
    wait_for_app(pg)
    assert pg.locator("[data-testid='stPlotlyChart']").count() == 0
    open_page(pg, "Data")
    pg.get_by_role("button", name="Confirm these columns").click()
    pg.get_by_text("Columns confirmed").wait_for()
    wait_for_app(pg)

    # sex: labelled from a labels file (as saved by 'Labels as JSON'), then taken as a covariate
    labels_file = tmp_path / "labels.json"
    labels_file.write_text(json.dumps(SEX_LABELS))
    pg.locator("[data-testid='stFileUploader']", has_text="Load labels from a JSON file").locator(
        "input[type=file]").set_input_files(str(labels_file))
    pg.get_by_text("Loaded labels for 1 column(s): sex.").wait_for()
    wait_for_app(pg)
    cells = main.locator("[data-testid='stDataFrame'] [data-testid^='glide-cell-']")
    for _ in range(40):  # the grids redraw with the labels a moment after the rerun ends
        grids = cells.all_text_contents()
        if "1 = Male; 2 = Female" in grids and {"Male", "Female"} <= set(grids):
            break
        pg.wait_for_timeout(500)
    assert "1 = Male; 2 = Female" in grids  # the labels table of the Data page
    assert {"Male", "Female"} <= set(grids)  # the preview shows sex by its labels
    covs = pg.get_by_role("combobox", name="Covariates (for regression)", exact=True)
    for c in ("sex", "age"):
        covs.click()
        pg.get_by_role("option", name=c, exact=True).click()
        wait_for_app(pg)
    pg.keyboard.press("Escape")  # close the list of options
    wait_for_app(pg)
    pg.screenshot(path=str(artifacts / "walkthrough_upload_data.png"), full_page=True)
    summary = pg.locator("[data-testid='stTable']").first.inner_text()
    assert "Chemo+RT" in summary and "120" in summary
    # the time axis is read in the file's months (a months file read as days would end near 60 days)
    assert re.search(r"Time grid: \d+ bins from 0 to \d+(\.\d+)? months; horizon", main.inner_text())
    summary_csv = download(pg, "Summary as CSV", tmp_path)
    assert "Chemo+RT" in summary_csv.read_text()
    assert "trial_months.csv (120 rows)" in pg.locator(SIDEBAR).inner_text()

    def upload_checks(pg, name: str) -> None:
        text = main.inner_text()
        assert "check and confirm them on the Data page" not in text, name
        if name == "Survival curves":
            assert {"Chemo", "Chemo+RT"} <= set(_split_by(pg, "arm"))
            assert "months" in text
        elif name == "Regression":
            assert "Female" in text  # sex enters as an indicator, named by its label against Male
        elif name == "Ledger and report":
            assert "trial_months.csv" in pg.locator(SIDEBAR).inner_text()

    _walk(pg, "upload", upload_checks)
    pg.set_viewport_size({"width": 1400, "height": 2400})
    open_page(pg, "Survival curves")
    pg.screenshot(path=str(artifacts / "walkthrough_upload_curves.png"), full_page=True)
    assert not ledger.exists() or LedgerStore(ledger).records() == []  # the walk released nothing, set no cap
    ctx.close()
