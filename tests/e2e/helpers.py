"""Helpers shared by the browser tests and tools/screenshots.py: open a page of the app, pick an option, check a page
drew without an exception or a cut-off table, download a file. Every function takes a Playwright page."""

from __future__ import annotations

import re
from pathlib import Path

from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.conftest import wait_for_app

MAIN = "[data-testid='stMain']"
SIDEBAR = "[data-testid='stSidebar']"
TABLE = "[data-testid='stTable']"
# the eight pages in the order of the sidebar, with the file stem used for their screenshots
PAGES = [("Data", "1-data"), ("Survival curves", "2-survival-curves"), ("Group comparison", "3-group-comparison"),
         ("Weibull parameters", "4-weibull-parameters"), ("Regression", "5-regression"),
         ("Privacy audit", "6-privacy-audit"), ("Trade-off explorer", "7-tradeoff-explorer"),
         ("Ledger and report", "8-ledger-and-report")]
# what each page shows once its first view is drawn (not a spinner): a heading, a chart or a button
READY = {"Data": "text=Number of time bins", "Survival curves": "text=Number at risk",
         "Group comparison": "text=Number at risk", "Weibull parameters": "text=Parameter table",
         "Regression": "text=Coefficient table", "Privacy audit": "role=button[name=\"Run the audit\"]",
         "Trade-off explorer": "[data-testid='stPlotlyChart'] .main-svg",
         "Ledger and report": "role=button[name=\"Download review report (HTML)\"]"}


def fresh_session(browser, url: str, timeout: float = 60_000, width: int = 1400):
    """A new browser session (its own context, so its own Streamlit session) on the app at ``url``, ``width`` x 1400
    px, downloads accepted, once the app has drawn: (context, page)."""
    ctx = browser.new_context(viewport={"width": width, "height": 1400}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(timeout)
    pg.goto(url)
    wait_for_app(pg)
    return ctx, pg


def choose(pg, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    box = pg.get_by_role("combobox", name=label, exact=True)
    box.scroll_into_view_if_needed()
    wanted = pg.get_by_role("option", name=option, exact=True)
    for _ in range(3):  # a rerun still drawing the page can close the list as it opens: open it again
        box.click()
        try:
            wanted.wait_for(timeout=5_000)
            break
        except PlaywrightTimeout:
            wait_for_app(pg)
    wanted.click()


COHORT_INPUT = "input[type=file][accept*='.parquet']"  # the cohort's uploader (the labels' one takes .json)


def open_page(pg, name: str, timeout: float = 90_000) -> None:
    """Click ``name`` in the sidebar and wait until the page's first view is drawn."""
    pg.locator("[data-testid='stSidebarNav']").get_by_role("link", name=name, exact=True).click()
    pg.get_by_role("heading", name=name, exact=True).first.wait_for(timeout=timeout)
    wait_for_app(pg)
    pg.locator(MAIN).locator(READY[name]).first.wait_for(timeout=timeout)
    wait_for_app(pg)


def no_exception(pg, where: str) -> None:
    errors = pg.locator("[data-testid='stException']")
    assert errors.count() == 0, f"{where}: {errors.first.inner_text()[:1500]}"
    assert "Traceback" not in pg.locator(MAIN).inner_text(), where


def untruncated_tables(pg, where: str) -> int:
    """Every static table on the page shows its cells whole: no cell ends in an ellipsis and no cell is clipped
    (its text wider than its box while overflow hides it). Returns the number of tables checked."""
    bad = pg.evaluate(
        """(sel) => {
          const out = [];
          for (const td of document.querySelectorAll(sel + ' td, ' + sel + ' th')) {
            const t = td.innerText.trim();
            const style = getComputedStyle(td);
            if (/(\\u2026|\\.\\.\\.)$/.test(t)) out.push('ellipsis: ' + t.slice(0, 80));
            else if (style.textOverflow === 'ellipsis' && td.scrollWidth > td.clientWidth + 1)
              out.push('clipped: ' + t.slice(0, 80));
          }
          return out;
        }""", TABLE)
    assert not bad, f"{where}: truncated table cells {bad[:5]}"
    return pg.locator(TABLE).count()


def download(pg, button: str | re.Pattern, into: Path) -> Path:
    """Click the download button named ``button`` (the first one) and save the file in ``into``; returns its path."""
    target = pg.locator(MAIN).get_by_role("button", name=button).first
    target.scroll_into_view_if_needed()
    with pg.expect_download(timeout=60_000) as dl:
        target.click()
    path = into / dl.value.suggested_filename
    dl.value.save_as(path)
    return path


def legend(pg, nth: int = 0) -> list[str]:
    """The legend entries of the ``nth`` plotly chart of the main block."""
    chart = pg.locator(f"{MAIN} [data-testid='stPlotlyChart']").nth(nth)
    chart.locator(".main-svg").first.wait_for()
    return chart.locator(".legendtext").all_text_contents()


def declare_on_data_page(page, horizon: str = "1100", censoring: str | None = None) -> None:
    """Declare the horizon (and the censoring share) on the Data page, as a data holder does from the study design:
    left undeclared they would be read off the data, and a release that uses them stays off until accepted."""
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Data", exact=True).click()
    wait_for_app(page)
    page.get_by_text("Declare the horizon").click()
    wait_for_app(page)
    box = page.get_by_label(re.compile(r"^Horizon \("))
    box.fill(horizon)
    box.press("Enter")
    wait_for_app(page)
    if censoring is not None:
        share = page.get_by_label("Censoring share (declared, 0 to 1)", exact=True).and_(page.locator("input"))
        share.fill(censoring)
        share.press("Enter")
        wait_for_app(page)
