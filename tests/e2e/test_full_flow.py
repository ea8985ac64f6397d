"""Browser, the whole flow: bundled data -> survival curves -> change epsilon on flchain (a preview, free)
-> Release (one record) -> privacy audit -> Ledger and report: the record is listed, the downloaded reports
and exports hold it and open on their own.
How fast the curve redraws after the epsilon change is measured by benchmarks/app_timing.py."""

from __future__ import annotations

import csv
import json
import re

import pytest

from dpsurv_core.data import datasets
from dpsurv_core.privacy.fingerprint import fingerprint
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.conftest import wait_for_app
from tests.e2e.helpers import declare_on_data_page

pytestmark = pytest.mark.browser

PREVIEW_ROW = "All patients, preview"
ROWS = "[data-testid='stTable'] tr"
MAIN = "[data-testid='stMain']"


def _choose(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label, exact=True).click()
    page.get_by_role("option", name=option, exact=True).click()


def _row(page, label: str) -> str:
    return page.locator(ROWS, has_text=label).first.inner_text()


def _releases(path, fp: str) -> list:
    return [r for r in LedgerStore(path).records(fp) if r.kind == RELEASE] if path.exists() else []


def test_data_curves_epsilon_release_audit_report(page, app_url, app_ledger_path, artifacts, tmp_path):
    flchain = fingerprint(datasets.load("flchain"))
    before = _releases(app_ledger_path, flchain)
    page.set_viewport_size({"width": 1500, "height": 2300})
    page.goto(app_url)
    wait_for_app(page)
    _choose(page, "Bundled data set", "flchain: Serum free light chain (Olmsted County)")
    page.get_by_text("In use: flchain").wait_for()
    wait_for_app(page)
    declare_on_data_page(page, "5300")  # flchain's horizon from the study design, as a data holder declares it

    page.get_by_role("link", name="Survival curves").click()
    page.get_by_text("Number at risk").first.wait_for()
    wait_for_app(page)
    page.locator(ROWS, has_text=PREVIEW_ROW).first.wait_for()
    old = _row(page, PREVIEW_ROW)
    slider = page.locator(MAIN).get_by_role("slider").first
    slider.focus()
    slider.press("ArrowLeft")  # epsilon 1 -> 0.75: a new preview, free
    page.wait_for_function(
        "([sel, row, old]) => { const r = [...document.querySelectorAll(sel)].find(e => e.innerText.includes(row));"
        " return r && r.innerText !== old; }", arg=[ROWS, PREVIEW_ROW, old], timeout=30_000, polling=20)
    wait_for_app(page)
    assert "would charge epsilon = 0.75, protecting the subject" in page.locator(MAIN).inner_text()
    assert _releases(app_ledger_path, flchain) == before  # previews are never recorded

    page.get_by_role("button", name=re.compile(r"^Release")).first.click()
    page.get_by_role("button", name=re.compile(r"^Confirm: release")).first.click()  # the confirmation box
    page.get_by_text(re.compile(r"Released as record \d+")).first.wait_for(timeout=90_000)
    wait_for_app(page)
    after = _releases(app_ledger_path, flchain)
    assert len(after) == len(before) + 1
    record = after[-1]
    assert record.body["mechanism"] == "laplace-counts" and record.body["cost"]["epsilon"] == 0.75
    page.locator(ROWS, has_text=f"All patients, released, record {record.id}").first.wait_for()
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    spent = sum(r.body["cost"]["epsilon"] for r in after)
    assert f"spent epsilon {spent:.3g}" in sidebar and f"{len(after)} release(s) of this data set" in sidebar

    page.get_by_role("link", name="Privacy audit").click()
    page.get_by_role("button", name="Run the audit").wait_for()
    wait_for_app(page)
    page.get_by_role("button", name="Run the audit").click()
    page.locator("[data-testid='stMetric']", has_text="Empirical epsilon").first.wait_for(timeout=90_000)
    wait_for_app(page)
    assert len(_releases(app_ledger_path, flchain)) == len(after)  # an audit is a simulation, never a release

    page.get_by_role("link", name="Ledger and report").click()
    page.get_by_role("button", name="Download review report (HTML)").wait_for()
    wait_for_app(page)
    table = page.locator(f"{MAIN} [data-testid='stTable']", has_text="reproduce command").inner_text()
    assert "laplace-counts" in table and record.body["command"] in table.replace("\n", " ")
    downloads = {}
    for label, name in [("Download release report (HTML)", "release.html"), ("Download review report (HTML)",
                        "review.html"), ("Released numbers (CSV)", "released.csv"),
                        ("Released numbers (JSON)", "released.json")]:
        with page.expect_download() as dl:
            page.get_by_role("button", name=label).click()
        downloads[name] = tmp_path / name
        dl.value.save_as(downloads[name])

    release_html, review_html = downloads["release.html"].read_text(), downloads["review.html"].read_text()
    for html in (release_html, review_html):
        assert "Privacy ledger" in html and "flchain" in html
        assert f"Release {record.id}: survival curves (laplace-counts)" in html
        assert "epsilon = 0.75" in html
    assert "CONFIDENTIAL" not in release_html
    assert "CONFIDENTIAL" in review_html and "Privacy audit" in review_html
    assert "comparison with the non-private analysis" in review_html
    rows = list(csv.DictReader(downloads["released.csv"].open()))
    assert list(rows[0]) == ["record", "analysis", "mechanism", "trial", "group", "quantity", "time", "value"]
    assert {int(r["record"]) for r in rows} == {r.id for r in after}
    assert "nonprivate" not in {r["mechanism"] for r in rows}
    payload = json.loads(downloads["released.json"].read_text())
    assert payload["records"] == [r.id for r in after]
    assert payload["releases"][-1]["derived"] == json.loads(json.dumps(record.body["derived"]))

    # the downloaded report opens on its own (no network) and draws its charts
    page.goto(downloads["release.html"].as_uri())
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    assert "Privacy ledger" in page.locator("body").inner_text()
    page.screenshot(path=str(artifacts / "release_report.png"), full_page=False)
