"""End to end in Debian chromium: pick a bundled data set, upload a CSV, read the summary, save a screenshot; the
sidebar and the Data page show the budget of the data set in use, read from the app's ledger database."""

from __future__ import annotations

import pytest

from dpsurv_app.session import bundled_choice
from dpsurv_core.privacy.ledger import LedgerStore
from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _upload_csv() -> bytes:
    rows = ["followup_days,dead,arm"]
    for i in range(40):
        rows.append(f"{30 + 17 * i},{1 if i % 3 else 0},{'surgery' if i % 2 else 'radiotherapy'}")
    return ("\n".join(rows) + "\n").encode()


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    box = page.get_by_role("combobox", name=label, exact=True)
    box.scroll_into_view_if_needed()
    page.mouse.wheel(0, 300)  # room below the box for its list of options
    box.click()
    page.get_by_role("option", name=option, exact=True).click()


def _summary_text(page) -> str:
    table = page.locator("[data-testid='stTable']").first
    table.wait_for()
    return table.inner_text()


def test_pick_bundled_then_upload_csv(page, app_url, app_ledger_path, artifacts):
    # veteran's cap, set as the command line sets it (`budget set`): the app shows it once veteran is in use
    store = LedgerStore(app_ledger_path)
    veteran = bundled_choice("veteran").fingerprint
    if store.ledger(veteran).cap is None:
        store.set_cap(veteran, 3.25, "veteran")
    cap = store.ledger(veteran).cap
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_text("In use: lung").wait_for()
    assert "228" in _summary_text(page)
    assert "This data set's budget" in page.locator("[data-testid='stMain']").inner_text()

    # pick a bundled data set other than lung
    _choose(page, "Bundled data set", "veteran: Veterans' Administration lung cancer trial")
    page.get_by_text("In use: veteran").wait_for()
    wait_for_app(page)
    text = _summary_text(page)
    assert "137" in text and "128" in text  # subjects, deaths
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert "veteran (137 rows)" in sidebar
    assert f"Spent: epsilon {store.ledger(veteran).spent():.3g} of {cap:g}" in sidebar
    assert "budget set" not in sidebar and page.locator("[data-testid='stSidebar'] input").count() == 0
    assert f"of {cap:g} in" in page.locator("[data-testid='stMain']").inner_text()

    # upload a CSV through the file input
    page.get_by_text("Upload a file", exact=True).click()
    wait_for_app(page)
    page.set_input_files("input[type=file]", files=[{"name": "my_cohort.csv", "mimeType": "text/csv",
                                                    "buffer": _upload_csv()}])
    page.get_by_text("In use: my_cohort.csv").wait_for()
    wait_for_app(page)
    # choose the arm as group, so the summary is per group
    _choose(page, "Group (e.g. treatment arm; compared on later pages)", "arm")
    wait_for_app(page)
    page.locator("[data-testid='stTable']").filter(has_text="radiotherapy").wait_for()
    text = _summary_text(page)
    assert "All subjects" in text and "40" in text and "26" in text  # 40 subjects, 26 deaths
    assert "surgery" in text and "radiotherapy" in text
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert "my_cohort.csv (40 rows)" in sidebar
    # a new data set has its own budget: none set yet, and the command that sets one names the file
    assert "no cap set" in sidebar and "budget set --data PATH/TO/my_cohort.csv --cap C" in sidebar
    assert page.locator("[data-testid='stException']").count() == 0

    # Streamlit scrolls inside its main block: a tall viewport shows the whole page in one picture
    page.set_viewport_size({"width": 1400, "height": 3600})
    page.get_by_role("heading", name="Data", exact=True).click()  # move the focus off the last select box
    wait_for_app(page)
    page.screenshot(path=str(artifacts / "data_page.png"), full_page=True)
    assert (artifacts / "data_page.png").stat().st_size > 10_000
