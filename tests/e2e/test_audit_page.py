"""Browser: the Privacy audit page runs the audit on bundled data and shows the empirical epsilon next to the charged one."""

from __future__ import annotations

import re

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']", has_text=label).first
    return box.locator("[data-testid='stMetricValue']").inner_text().strip()


def test_audit_shows_empirical_next_to_charged_epsilon(page, app_url, artifacts):
    page.set_viewport_size({"width": 1500, "height": 2400})
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_role("link", name="Privacy audit").click()
    page.get_by_role("button", name="Run the audit").wait_for()
    wait_for_app(page)
    main = page.locator("[data-testid='stMain']")
    assert "not charged to the privacy ledger" in main.inner_text()
    page.get_by_role("button", name="Run the audit").click()
    page.locator("[data-testid='stMetric']", has_text="Empirical epsilon").first.wait_for(timeout=60_000)
    wait_for_app(page)
    page.locator("[data-testid='stPlotlyChart']").nth(2).wait_for()
    charged = _metric(page, "Charged epsilon")
    empirical = _metric(page, "Empirical epsilon lower bound")
    assert charged == "1"
    assert re.fullmatch(r"\d+\.\d\d", empirical) and float(empirical) <= 1.0
    text = main.inner_text()
    assert re.search(r"could tell whether this patient is in the data with at most \d+% advantage", text)
    assert "could tell whether this patient is in the data with at most 46% advantage." in text  # the guarantee
    assert "was chosen as the most exposed subject" in text
    page.screenshot(path=str(artifacts / "privacy_audit.png"), full_page=True)
