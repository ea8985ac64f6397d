"""Browser: explore freely, release once. Opening every page, moving sliders, reloading and opening a second tab
record nothing in the ledger database; one click on a Release button records exactly one release, which the other
tab's Ledger and report page shows after a reload.

The app runs on its own server with its own, empty ledger database (other browser tests release into theirs), so
"nothing was recorded" is checked against the database itself, read the way the command line reads it."""

from __future__ import annotations

import re

import pytest

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.conftest import launch_app, wait_for_app
from tests.e2e import helpers
from tests.e2e.helpers import choose, no_exception, open_page

pytestmark = pytest.mark.browser

PAGES = [name for name, _ in helpers.PAGES]
MAIN = "[data-testid='stMain']"


@pytest.fixture(scope="module")
def app(tmp_path_factory, browser):
    ledger = tmp_path_factory.mktemp("release-model") / "ledger.sqlite3"
    with launch_app(ledger) as url:
        yield url, ledger


def releases(ledger) -> list:
    if not ledger.exists():
        return []
    return [r for r in LedgerStore(ledger).records() if r.kind == RELEASE]


SLIDERS = {"Survival curves", "Group comparison", "Weibull parameters", "Regression", "Privacy audit",
           "Trade-off explorer"}


def touch_a_setting(pg, name: str) -> None:
    """Move the page's first slider one step (its epsilon, where it has one) or change a setting; click nothing."""
    if name in SLIDERS:
        slider = pg.locator(MAIN).get_by_role("slider").first
        slider.wait_for(timeout=60_000)
        slider.focus()
        slider.press("ArrowRight")
    elif name == "Data":
        choose(pg, "Show times in", "months")
    elif name == "Ledger and report":  # typing a cap sets nothing until "Set cap" is clicked
        box = pg.get_by_label("Cap (total epsilon for this data set)")
        box.fill("3")
        box.press("Enter")
    pg.wait_for_timeout(500)
    wait_for_app(pg)


def test_exploring_records_nothing_and_one_click_records_one_release(app, browser, artifacts):
    url, ledger = app
    ctx, first = helpers.fresh_session(browser, url)

    for name in PAGES:
        open_page(first, name)
        no_exception(first, name)
        touch_a_setting(first, name)
        no_exception(first, f"{name} after a change")
        assert releases(ledger) == [], f"opening or changing {name} recorded a release"
    assert LedgerStore(ledger).records() == []  # not even a cap

    first.reload()  # a new session of the same tab, back on the page it showed
    wait_for_app(first)
    no_exception(first, "reload")
    second = ctx.new_page()  # a second tab: a second session on the same data set
    second.set_default_timeout(60_000)
    second.goto(url)
    wait_for_app(second)
    open_page(second, "Survival curves")
    no_exception(second, "second tab")
    assert "no cap set" in second.locator("[data-testid='stSidebar']").inner_text()
    assert releases(ledger) == [], "a reload or a second tab recorded a release"

    # one click on a Release button: exactly one record (the horizon declared first, as the study design gives it)
    helpers.declare_on_data_page(first)
    open_page(first, "Survival curves")
    button = first.get_by_role("button", name=re.compile(r"^Release")).first
    button.click()
    first.get_by_role("button", name=re.compile(r"^Confirm: release")).first.click()  # the confirmation box
    first.get_by_text(re.compile(r"Released as record \d+")).first.wait_for(timeout=90_000)
    wait_for_app(first)
    no_exception(first, "release")
    (record,) = releases(ledger)
    assert record.body["analysis"] and record.body["released"] and record.body["derived"]  # the three parts are kept
    assert f"Released as record {record.id}" in first.locator(MAIN).inner_text()
    assert "1 release(s) of this data set" in first.locator("[data-testid='stSidebar']").inner_text()

    # the other tab sees it on the Ledger and report page after a reload
    open_page(second, "Ledger and report")
    second.reload()
    wait_for_app(second)
    second.get_by_role("heading", name="Releases", exact=True).wait_for()
    table = second.locator(f"{MAIN} [data-testid='stTable']", has_text="reproduce command")
    text = table.text_content() or ""
    assert record.body["mechanism"] in text and f"{record.body['cost']['epsilon']:.4g}" in text
    assert "chain intact" in second.locator(MAIN).inner_text()
    assert "1 release(s) of this data set" in second.locator("[data-testid='stSidebar']").inner_text()
    assert len(releases(ledger)) == 1  # reading the ledger recorded nothing
    second.screenshot(path=str(artifacts / "ledger_second_tab.png"), full_page=True)
    ctx.close()
    squeeze = lambda t: "".join(t.split())  # noqa: E731 (the table may wrap the command anywhere)
    # st.table reads cells as Markdown, so the page escapes them: the command shows as typed
    assert squeeze(record.body["command"]) in squeeze(text)
