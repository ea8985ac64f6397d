"""Browser: the Survival curves page redraws the private release when epsilon changes."""

from __future__ import annotations

import time

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser

PRIVATE_ROW = "All patients, private"


def _private_row(page) -> str:
    return page.locator("[data-testid='stTable'] tr", has_text=PRIVATE_ROW).first.inner_text()


def test_epsilon_change_redraws_the_private_curve(page, app_url, artifacts):
    start = time.monotonic()
    page.set_viewport_size({"width": 1500, "height": 2300})  # the whole page in one screenshot
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_role("link", name="Survival curves").click()
    page.get_by_text("Number at risk").wait_for()
    wait_for_app(page)
    page.locator("[data-testid='stPlotlyChart']").first.wait_for()
    before = _private_row(page)
    median_before = page.locator("[data-testid='stTable'] tr", has_text="All patients").nth(2).inner_text()
    assert "310 (284 to 361)" in median_before  # the non-private median on lung
    page.screenshot(path=str(artifacts / "survival_curves_eps1.png"), full_page=True)

    slider = page.get_by_role("slider").first
    assert slider.get_attribute("aria-valuetext") in {"1.0", "1"}
    slider.focus()
    slider.press("ArrowLeft")  # 1.0 -> 0.75 (each step is a release charged to the ledger)
    page.wait_for_function(
        "([sel, old]) => { const r = [...document.querySelectorAll(sel)].find(e => e.innerText.includes("
        f"'{PRIVATE_ROW}')); return r && r.innerText !== old; }}",
        arg=["[data-testid='stTable'] tr", before], timeout=30_000)
    wait_for_app(page)
    after = _private_row(page)
    assert after != before
    assert "epsilon = 0.75, protecting the subject" in page.locator("[data-testid='stMain']").inner_text()
    page.screenshot(path=str(artifacts / "survival_curves_eps0.75.png"), full_page=True)
    assert time.monotonic() - start < 40
