"""Browser, a clinician's and a board's path with an uploaded CSV: map it, label sex from a file, visit every page,
return to the Data page (labels kept), release grouped curves once on Survival curves (after confirming what is
published), read that same release on Group comparison (no new record, nothing charged, its hazard ratio shown),
download the release's publication figure (released numbers only) and the review report, whose first section is the
board's summary. Also: no table runs off the page at 1024 and 1400 px, and at 390 px the sidebar is out of the way."""

from __future__ import annotations

import json
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.conftest import launch_app, wait_for_app
from tests.e2e.helpers import COHORT_INPUT, MAIN, PAGES, SIDEBAR, download, fresh_session, no_exception, open_page
from tests.e2e.test_clinician_walkthrough import SEX_LABELS, months_csv

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def app(tmp_path_factory, browser):
    ledger = tmp_path_factory.mktemp("release-once") / "ledger.sqlite3"
    with launch_app(ledger) as url:
        yield url, ledger


def _releases(ledger) -> list:
    return [r for r in LedgerStore(ledger).records() if r.kind == RELEASE] if ledger.exists() else []


def _labels_shown(pg) -> bool:
    cells = pg.locator(f"{MAIN} [data-testid='stDataFrame'] [data-testid^='glide-cell-']")
    for _ in range(40):  # the grids redraw with the labels a moment after the rerun ends
        if "1 = Male; 2 = Female" in cells.all_text_contents():
            return True
        pg.wait_for_timeout(500)
    return False


def _clipped_tables(pg) -> list[str]:
    """Tables whose right edge runs past the main block while nothing scrolls them into view."""
    return pg.evaluate(
        """() => {
          const main = document.querySelector("[data-testid='stMain']").getBoundingClientRect();
          const out = [];
          for (const t of document.querySelectorAll("[data-testid='stMain'] [data-testid='stTable'] table")) {
            let scrolls = false;
            for (let e = t.parentElement; e && e !== document.body; e = e.parentElement) {
              const o = getComputedStyle(e).overflowX;
              if ((o === 'auto' || o === 'scroll') && e.scrollWidth > e.clientWidth) { scrolls = true; break; }
            }
            const r = t.getBoundingClientRect();
            if (r.right > main.right + 2 && !scrolls) out.push(t.innerText.slice(0, 60));
          }
          return out;
        }""")


def test_upload_label_release_once_read_on_group_comparison_and_report(app, browser, tmp_path, artifacts):
    url, ledger = app
    ctx, pg = fresh_session(browser, url, width=1400)
    main = pg.locator(MAIN)
    # ---- upload, confirm the mapping, label sex from a file, declare what a release uses
    open_page(pg, "Data")
    pg.get_by_text("Upload a file", exact=True).click()
    wait_for_app(pg)
    pg.locator(COHORT_INPUT).wait_for(state="attached")  # the bundled data set's labels uploader comes first
    pg.set_input_files(COHORT_INPUT,
        files=[{"name": "trial.csv", "mimeType": "text/csv", "buffer": months_csv()}])
    pg.get_by_text("In use: trial.csv").wait_for()
    wait_for_app(pg)
    pg.get_by_role("button", name="Confirm these columns").click()
    pg.get_by_text("Columns confirmed").wait_for()
    wait_for_app(pg)
    labels_file = tmp_path / "labels.json"
    labels_file.write_text(json.dumps(SEX_LABELS))
    pg.locator("[data-testid='stFileUploader']", has_text="Load labels from a JSON file").locator(
        "input[type=file]").set_input_files(str(labels_file))
    pg.get_by_text("Loaded labels for 1 column(s): sex.").wait_for()
    wait_for_app(pg)
    assert _labels_shown(pg)
    pg.get_by_text("Declare the horizon").click()
    wait_for_app(pg)
    box = pg.get_by_label(re.compile(r"^Horizon \("))
    box.fill("60")
    box.press("Enter")
    wait_for_app(pg)
    pg.get_by_text("Declare the categories of 'arm'").click()
    wait_for_app(pg)
    cats = pg.get_by_label("Group categories, comma-separated")
    cats.fill("Chemo, Chemo+RT")
    cats.press("Enter")
    wait_for_app(pg)

    # ---- every page, then back to the Data page: the labels are still there
    for name, _ in PAGES:
        open_page(pg, name)
        no_exception(pg, name)
    open_page(pg, "Data")
    assert _labels_shown(pg), "the value labels were lost on returning to the Data page"
    assert _releases(ledger) == []

    # ---- release grouped curves once: the confirmation says what is published and what it costs
    open_page(pg, "Survival curves")
    pg.locator(MAIN).get_by_text("Separate curves for each arm").click()
    wait_for_app(pg)
    pg.get_by_role("button", name=re.compile(r"^Release these curves")).click()
    confirm = pg.get_by_role("button", name=re.compile(r"^Confirm: release"))
    confirm.wait_for()
    said = main.inner_text()
    assert "Confirm this release" in said and "Budget after" in said and "Guarantee as run" in said
    assert _releases(ledger) == []  # nothing until confirmed
    confirm.click()
    pg.get_by_text(re.compile(r"Released as record \d+")).first.wait_for(timeout=90_000)
    wait_for_app(pg)
    (record,) = _releases(ledger)

    # ---- Group comparison reads that release: no new record, the hazard ratio beside the calibrated p
    open_page(pg, "Group comparison")
    pg.get_by_text(f"Reading release #{record.id}").first.wait_for(timeout=90_000)
    wait_for_app(pg)
    no_exception(pg, "Group comparison reading the release")
    assert len(_releases(ledger)) == 1
    assert "HR (95% CI)" in main.inner_text() and "Nothing more is charged" in main.inner_text()
    # the sidebar's budget block counts the one release. In two full-suite runs under heavy load (the stress test's ten
    # browsers beside it) the block was missing from the sidebar for 30 s while the page body had finished; that is
    # kept for diagnosis (artifacts) and the page is opened once more in the same session, where the block must show
    block = pg.locator(SIDEBAR).get_by_text("1 release(s) of this data set").first
    try:
        block.wait_for(timeout=30_000)
    except PlaywrightTimeout:
        artifacts.joinpath("release_once_sidebar_missing.txt").write_text(pg.locator(SIDEBAR).inner_text())
        pg.screenshot(path=str(artifacts / "release_once_sidebar_missing.png"), full_page=True)
        open_page(pg, "Group comparison")
        block.wait_for(timeout=60_000)
    assert "1 release(s) of this data set" in pg.locator(SIDEBAR).inner_text()
    for width in (1024, 1400):
        pg.set_viewport_size({"width": width, "height": 1600})
        wait_for_app(pg)
        assert _clipped_tables(pg) == [], f"a table runs off the page at {width} px"

    # ---- the board's path: the figure holds released numbers only; the review report opens with the summary
    open_page(pg, "Ledger and report")
    svg = download(pg, re.compile(r"^Publication figure \(SVG\)"), tmp_path).read_text()
    assert "<svg" in svg and "non-private" not in svg.lower() and "epsilon" in svg
    review = download(pg, "Download review report (HTML)", tmp_path).read_text()
    first = review.find("<h2")
    assert "Summary for the board" in review[first:first + 200]
    assert "a 50% guess becomes at most" in review
    ctx.close()


def test_the_sidebar_is_out_of_the_way_on_a_phone(app, browser):
    url, _ = app
    ctx, pg = fresh_session(browser, url, width=390)
    open_page_box = pg.locator("[data-testid='stSidebar']")
    wait_for_app(pg)
    box = open_page_box.bounding_box()
    expanded = open_page_box.get_attribute("aria-expanded")
    assert expanded == "false" or box is None or box["x"] + box["width"] <= 1, (expanded, box)
    ctx.close()
