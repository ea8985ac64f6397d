"""Browser: the Survival curves page previews freely and charges the ledger only when Release is clicked.
How long the page, the redraw and the release take is measured by benchmarks/app_timing.py."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_for_app
from tests.e2e.helpers import declare_on_data_page

pytestmark = pytest.mark.browser

PREVIEW_ROW = "All patients, preview"
ROW_SELECTOR = "[data-testid='stTable'] tr"


def _row(page, label: str) -> str:
    return page.locator(ROW_SELECTOR, has_text=label).first.inner_text()


def _releases_in_sidebar(page) -> int:
    text = page.locator("[data-testid='stSidebar']").inner_text()
    found = re.search(r"(\d+) release\(s\)", text)
    assert found, text
    return int(found.group(1))


def test_epsilon_change_redraws_the_preview_and_release_charges_once(page, app_url, artifacts):
    page.set_viewport_size({"width": 1500, "height": 2300})  # the whole page in one screenshot
    page.goto(app_url)
    wait_for_app(page)
    declare_on_data_page(page)  # lung's horizon from the study design: a release reads nothing off the data
    page.get_by_role("link", name="Survival curves").click()
    page.get_by_text("Number at risk").first.wait_for()
    wait_for_app(page)
    page.locator("[data-testid='stPlotlyChart']").first.wait_for()
    main = page.locator("[data-testid='stMain']")
    before = _row(page, PREVIEW_ROW)
    median_before = page.locator(ROW_SELECTOR, has_text="All patients").nth(2).inner_text()
    assert "310 (285 to 363)" in median_before  # the non-private median on lung
    assert "Preview, not for publication" in main.inner_text()
    charged = _releases_in_sidebar(page)
    page.screenshot(path=str(artifacts / "survival_curves_eps1.png"), full_page=True)

    slider = page.get_by_role("slider").first
    assert slider.get_attribute("aria-valuetext") in {"1.0", "1"}
    slider.focus()
    slider.press("ArrowLeft")  # 1.0 -> 0.75: a new preview, charged nothing
    page.wait_for_function(
        "([sel, old]) => { const r = [...document.querySelectorAll(sel)].find(e => e.innerText.includes("
        f"'{PREVIEW_ROW}')); return r && r.innerText !== old; }}",
        arg=[ROW_SELECTOR, before], timeout=30_000)
    wait_for_app(page)
    assert _row(page, PREVIEW_ROW) != before
    assert "Releasing this plan would charge epsilon = 0.75, protecting the subject" in main.inner_text()
    assert _releases_in_sidebar(page) == charged  # browsing and moving sliders charge nothing
    page.screenshot(path=str(artifacts / "survival_curves_eps0.75.png"), full_page=True)

    page.get_by_role("button", name=re.compile(r"^Release these curves")).click()
    page.get_by_role("button", name=re.compile(r"^Confirm: release")).first.click()  # the confirmation box
    page.get_by_text("Released as record").first.wait_for(timeout=30_000)
    wait_for_app(page)
    text = main.inner_text()
    record = re.search(r"Released as record (\d+): epsilon = 0.75, protecting the subject", text)
    assert record, text
    assert page.locator(ROW_SELECTOR, has_text=f"All patients, released, record {record.group(1)}").count() == 1
    assert _releases_in_sidebar(page) == charged + 1
    page.screenshot(path=str(artifacts / "survival_curves_released.png"), full_page=True)
