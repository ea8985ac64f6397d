"""End to end in Debian chromium: open the trade-off explorer on bundled data (a quick look at one mechanism), run
the full study, see the chart.
How long the page takes is measured by benchmarks/app_timing.py."""

from __future__ import annotations

import pytest

from dpsurv_core import tradeoff
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def test_tradeoff_page_draws_the_chart(page, app_url, artifacts):
    page.goto(app_url)
    wait_for_app(page)
    page.locator("[data-testid='stSidebarNav']").get_by_text("Trade-off explorer").click()
    page.get_by_role("heading", name="Survival curves: how far the private curve is from the real one").wait_for(
        timeout=30_000)
    wait_for_app(page)
    chart = page.locator("[data-testid='stPlotlyChart']").first
    chart.wait_for()
    chart.locator(".main-svg").first.wait_for()
    main = page.locator("[data-testid='stMain']")
    text = main.inner_text()
    assert "Trade-off explorer" in text and "Simulating" not in text  # the progress bar is gone when done
    assert "nothing is charged to the privacy ledger" in text
    # the first view is a quick look at the first chosen mechanism; the full study runs on the button
    assert set(chart.locator(".legendtext").all_text_contents()) == {tradeoff.label("laplace-counts", "curves")}
    page.get_by_role("button", name="Run the full study").click()
    page.wait_for_function(
        "(n) => document.querySelectorAll(\"[data-testid='stMain'] [data-testid='stPlotlyChart'] .legendtext\")"
        ".length >= n", arg=3, timeout=120_000)
    wait_for_app(page)
    chart = page.locator("[data-testid='stPlotlyChart']").first
    text = main.inner_text()
    assert "Simulating" not in text and "Run the full study" not in text
    assert "At your epsilon 1:" in text and f"{tradeoff.label('laplace-counts')}:" in text
    assert "protects the group label only" in text
    # one line per mechanism in the legend, the reference annotation and the epsilon marker
    legend = chart.locator(".legendtext").all_text_contents()
    assert {tradeoff.label(m, "curves") for m in ("laplace-counts", "time-indexed", "adaptive-km")} <= set(legend)
    annotations = " ".join(chart.locator(".annotation-text").all_text_contents())
    assert "non-private" in annotations and "your epsilon 1" in annotations
    # the summary table holds the three reference epsilons
    table = page.locator("[data-testid='stTable']").first.inner_text()
    assert "epsilon 0.1" in table and "epsilon 10" in table and "points" in table
    page.set_viewport_size({"width": 1400, "height": 2400})  # the whole page in one picture
    wait_for_app(page)
    page.screenshot(path=str(artifacts / "tradeoff_page.png"))
    chart.scroll_into_view_if_needed()
    chart.screenshot(path=str(artifacts / "tradeoff_chart.png"))
    # hover shows the numbers: the diamond of a mechanism at your epsilon
    marker = chart.locator(".scatterlayer .trace .points path").first
    marker.hover(force=True)
    hover = chart.locator(".hoverlayer")
    hover.locator("text").first.wait_for(timeout=5_000)
    assert "epsilon" in " ".join(hover.locator("text").all_text_contents())
    chart.screenshot(path=str(artifacts / "tradeoff_chart_hover.png"))
