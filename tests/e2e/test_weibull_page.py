"""End to end in Debian chromium: open the Weibull parameters page on bundled data and read the parameter table."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def test_weibull_page_shows_parameter_table(page, app_url, artifacts):
    page.goto(app_url)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav']").get_by_text("Weibull parameters").click()
    page.get_by_role("heading", name="Parameter table").wait_for(timeout=60_000)
    wait_for_app(page)
    grid = page.locator("[data-testid='stDataFrame']").first
    grid.wait_for()
    text = page.locator("[data-testid='stMain']").inner_text()
    assert "Weibull parameters" in text
    assert "epsilon = 1, protecting the subject, neighbours: add/remove one subject" in text
    assert "Simulating" not in text  # the progress bar is gone once the study is done

    def cell(col: int, row: int) -> str:
        return grid.locator(f"[data-testid='glide-cell-{col}-{row}']").text_content()

    assert cell(0, 0).startswith("Maximum likelihood, lifelines") and cell(0, 2).startswith("LSP + TLL")
    assert abs(float(cell(1, 1)) - 1.3168402) < 1e-6  # lung, horizon 1100 days
    assert 0.0 <= float(cell(1, 2)) <= 10.0 and float(cell(2, 2)) > 0
    assert cell(4, 2).startswith("1 (protects the subject")
    page.screenshot(path=str(artifacts / "weibull_page.png"), full_page=True)
