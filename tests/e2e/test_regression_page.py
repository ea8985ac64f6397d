"""Browser: the Regression page opens on the bundled data with free previews of the exact-DP fits next to the
non-private fits, and a fit's Release button publishes it once (the horizon declared on the Data page first: read
off the data it would keep the button off). How long it takes is measured by benchmarks/app_timing.py."""

from __future__ import annotations

import re

import pytest

from dpsurv_core.privacy import catalogue
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

OBJECTIVE = catalogue.get(catalogue.REGRESSION, "objective").name
COX = catalogue.get(catalogue.REGRESSION, "cox").name


def test_regression_page_previews_then_releases(page, app_url, artifacts):
    page.set_viewport_size({"width": 1500, "height": 2600})
    page.goto(app_url)
    wait_for_app(page)
    # the horizon from the study design (lung: 1,100 days): nothing else a release uses is read off lung's data
    page.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Data", exact=True).click()
    wait_for_app(page)
    page.get_by_text("Declare the horizon").click()
    wait_for_app(page)
    box = page.get_by_label("Horizon (days)")
    box.fill("1100")
    box.press("Enter")
    wait_for_app(page)
    page.get_by_role("link", name="Regression").click()
    page.get_by_text("Coefficient table").wait_for()
    wait_for_app(page)
    rows = page.locator("[data-testid='stTable'] tr")
    rows.first.wait_for()
    main = page.locator("[data-testid='stMain']")
    text = main.inner_text()
    assert "Guarantee: exact DP" in text  # the published n is declared for lung: the fits keep exact DP
    assert "A release would charge: epsilon = 1, protecting the subject, neighbours: add/remove one subject" in text
    assert "Preview, not for publication" in text and "Traceback" not in text
    texts = rows.all_inner_texts()
    cox = [t for t in texts if t.startswith(COX) and "sex" in t]
    # lifelines = R coxph on lung: coefficient -0.5132, HR 0.599 (95% CI 0.431 to 0.831) for sex, written as clinicians do
    assert cox and "-0.5132" in cox[0] and "0.60 (95% CI 0.43 to 0.83)" in cox[0] and "Female vs Male" in cox[0]
    assert any(t.startswith(f"{OBJECTIVE}, preview") for t in texts)
    page.get_by_text("Forest plot").wait_for()
    page.locator("[data-testid='stPlotlyChart']").first.wait_for()
    page.screenshot(path=str(artifacts / "regression_page.png"), full_page=True)

    page.get_by_role("button", name=re.compile(rf"^Release {re.escape(OBJECTIVE)}")).click()
    page.get_by_role("button", name=re.compile(r"^Confirm: release")).first.click()  # the confirmation box
    page.get_by_text("Released as record").first.wait_for(timeout=60_000)
    wait_for_app(page)
    record = re.search(r"Released as record (\d+): epsilon = 1, protecting the subject", main.inner_text())
    assert record
    released = f"{OBJECTIVE}, released, record {record.group(1)}"
    page.locator("[data-testid='stTable'] tr", has_text=released).first.wait_for()
    assert any(t.startswith(released) for t in rows.all_inner_texts())
    page.screenshot(path=str(artifacts / "regression_page_released.png"), full_page=True)
