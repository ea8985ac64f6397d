"""Browser: the Regression page opens on the bundled data and shows the coefficient table."""

from __future__ import annotations

import time

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def test_regression_page_shows_the_coefficient_table(page, app_url, artifacts):
    start = time.monotonic()
    page.set_viewport_size({"width": 1500, "height": 2600})
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_role("link", name="Regression").click()
    page.get_by_text("Coefficient table").wait_for()
    wait_for_app(page)
    rows = page.locator("[data-testid='stTable'] tr")
    rows.first.wait_for()
    main = page.locator("[data-testid='stMain']").inner_text()
    assert "Guarantee: exact DP" in main  # by default: one objective-perturbation fit with the published n
    assert "epsilon = 1, protecting the subject, neighbours: add/remove one subject" in main
    assert "Traceback" not in main
    texts = rows.all_inner_texts()
    cox = [t for t in texts if t.startswith("Cox regression") and "sex" in t]
    assert cox and "-0.5132" in cox[0] and "0.599" in cox[0]  # lifelines = R coxph on lung: HR 0.599 for sex
    assert any(t.startswith("Objective perturbation, released") for t in texts)
    page.get_by_text("Forest plot").wait_for()
    page.locator("[data-testid='stPlotlyChart']").first.wait_for()
    page.screenshot(path=str(artifacts / "regression_page.png"), full_page=True)
    assert time.monotonic() - start < 40
