"""End to end in Debian chromium: pick a bundled data set, upload a CSV, read the summary, save a screenshot."""

from __future__ import annotations

import pytest

from tests.conftest import wait_for_app

pytestmark = pytest.mark.browser


def _upload_csv() -> bytes:
    rows = ["followup_days,dead,arm"]
    for i in range(40):
        rows.append(f"{30 + 17 * i},{1 if i % 3 else 0},{'surgery' if i % 2 else 'radiotherapy'}")
    return ("\n".join(rows) + "\n").encode()


def _choose(page, label: str, option: str) -> None:
    """Pick ``option`` in the select box labelled ``label``."""
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def _summary_text(page) -> str:
    table = page.locator("[data-testid='stTable']").first
    table.wait_for()
    return table.inner_text()


def test_pick_bundled_then_upload_csv(page, app_url, artifacts):
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_text("In use: lung").wait_for()
    assert "228" in _summary_text(page)

    # pick a bundled data set other than lung
    _choose(page, "Bundled data set", "veteran: Veterans' Administration lung cancer trial")
    page.get_by_text("In use: veteran").wait_for()
    wait_for_app(page)
    text = _summary_text(page)
    assert "137" in text and "128" in text  # subjects, deaths
    assert "veteran (137 rows)" in page.locator("[data-testid='stSidebar']").inner_text()

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
    assert "my_cohort.csv (40 rows)" in page.locator("[data-testid='stSidebar']").inner_text()
    assert page.locator("[data-testid='stException']").count() == 0

    # Streamlit scrolls inside its main block: a tall viewport shows the whole page in one picture
    page.set_viewport_size({"width": 1400, "height": 3600})
    page.get_by_role("heading", name="Data", exact=True).click()  # move the focus off the last select box
    wait_for_app(page)
    page.screenshot(path=str(artifacts / "data_page.png"), full_page=True)
    assert (artifacts / "data_page.png").stat().st_size > 10_000
