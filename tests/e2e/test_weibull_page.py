"""End to end in Debian chromium: the Weibull parameters page shows the fits with a free preview, and its Release
button publishes the private row once."""

from __future__ import annotations

import re

import pytest

from dpsurv_core.privacy import catalogue
from tests.conftest import wait_for_app
from tests.e2e.helpers import declare_on_data_page

pytestmark = pytest.mark.browser

FIRST = catalogue.entries(catalogue.WEIBULL, "weibull", private=True)[0].name


def test_weibull_page_previews_then_releases(page, app_url, artifacts):
    page.goto(app_url)
    wait_for_app(page)
    declare_on_data_page(page, "1100", "0.3")  # the horizon and censoring share from the study design
    page.locator("[data-testid='stSidebarNav']").get_by_text("Weibull parameters").click()
    page.get_by_role("heading", name="Parameter table").wait_for(timeout=120_000)  # a busy shared server
    wait_for_app(page)
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    main = page.locator("[data-testid='stMain']")
    text = main.inner_text()
    assert "Weibull parameters" in text
    assert "A release would charge: epsilon = 1, protecting the subject, neighbours: add/remove one subject" in text
    assert "Preview, not for publication" in text
    assert "Simulating" not in text  # the progress bar is gone once the study is done

    def cell(col: int, row: int) -> str:
        return grid.locator(f"[data-testid='glide-cell-{col}-{row}']").text_content()

    assert cell(0, 0).startswith("Maximum likelihood, lifelines") and cell(0, 2) == f"{FIRST}, preview"
    assert abs(float(cell(1, 1)) - 1.3168402) < 1e-6  # lung, horizon 1100 days
    assert 0.0 <= float(cell(1, 2)) <= 10.0 and float(cell(2, 2)) > 0
    assert cell(4, 2).startswith("1 (protects the subject") and "preview: none" in cell(4, 2)
    page.screenshot(path=str(artifacts / "weibull_page.png"), full_page=True)

    page.get_by_role("button", name=re.compile(rf"^Release {re.escape(FIRST)}")).click()
    page.get_by_role("button", name=re.compile(r"^Confirm: release")).first.click()  # the confirmation box
    page.get_by_text("Released as record").first.wait_for(timeout=30_000)
    wait_for_app(page)
    record = re.search(r"Released as record (\d+): epsilon = 1, protecting the subject", main.inner_text())
    assert record
    grid = page.locator("[data-testid='stDataFrame']").first
    page.wait_for_function(
        "(want) => [...document.querySelectorAll(\"[data-testid='glide-cell-0-2']\")].some(e => e.textContent === want)",
        arg=f"{FIRST}, released, record {record.group(1)}", timeout=30_000)
    assert cell(4, 2).endswith("charged")
    page.screenshot(path=str(artifacts / "weibull_page_released.png"), full_page=True)
