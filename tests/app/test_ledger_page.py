"""The Ledger and report page through Streamlit's AppTest, over the persistent ledger database.

Every test has its own database (the autouse ``ledger_path`` fixture sets ``DPSURV_LEDGER``); records are written the
way the command line writes them (``LedgerStore``, or the command line itself), and the page must show them."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dpsurv_app.session import bundled_choice
from dpsurv_core.cli.km import released_numbers
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import CAP_RAISE, CAP_SET, GROUP_LABEL, RELEASE, LedgerEntry, LedgerStore, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report.html import AuditItem
from tests.app.apptest import release as click_release
from tests.app.tables import shown

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "dpsurv_app" / "pages" / "8_Ledger_and_report.py")
LUNG = bundled_choice("lung").fingerprint
KM = "python -m dpsurv_core km --data lung --group sex --mechanism laplace-counts --epsilon 0.5 --json"


@pytest.fixture(scope="module")
def curve_outputs():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    return released_numbers(LaplaceCounts(0.5).compute(cohort, public, SimulationNoise(3)))


@pytest.fixture(scope="module")
def curve_record():
    """A curve release's three parts as the command line records them (``km --horizon 1100 --group sex``)."""
    from dpsurv_core.curves import readout
    from dpsurv_core.curves.result import context
    from dpsurv_core.privacy import catalogue
    from dpsurv_core.publication import publish

    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, group_categories=("1", "2"))
    build = context(cohort, public)
    rel = catalogue.get(catalogue.CURVES, "laplace-counts").build(0.5, **build).compute(cohort, public,
                                                                                       SimulationNoise(3))
    reading = {"conf_type": "log", "names": {"1": "Male", "2": "Female"}, "time_unit": "days"}
    return publish("curves", rel.released, readout.public_inputs("laplace-counts", 0.5, build, public, False, reading))


def release(store: LedgerStore, outputs, eps: float = 0.5, mechanism: str = "laplace-counts",
            analysis: str = "survival curves", command: str = KM, protects: str = "the subject") -> int:
    """A release record as the command line writes it: checked against the cap and appended in one transaction."""
    entry = LedgerEntry(mechanism, analysis, "lung", {"epsilon": eps}, PrivacyCost(eps, protects=protects),
                        command=command)
    with store.transaction(LUNG) as tx:
        return tx.charge(entry, outputs)


def run(at: AppTest | None = None, **state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=90) if at is None else at
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def buttons(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


def releases_table(at: AppTest):
    return next(shown(t.value) for t in at.table if "reproduce command" in t.value.columns)


@pytest.fixture
def downloads(monkeypatch) -> dict:
    """What each download button of the page would hand the browser, by label (callables are built on demand)."""
    got: dict = {}
    original = st.download_button

    def spy(label, data, *args, **kwargs):
        got[label] = data
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", spy)
    return got


def content(data) -> str:
    data = data() if callable(data) else data
    return data.decode() if isinstance(data, bytes) else data


# ------------------------------------------------------------------------------------------- the cap

def test_empty_ledger_says_so_and_offers_to_set_a_cap(ledger_path):
    at = run()
    assert [m.value for m in at.metric] == ["ε = 0", "none", "—"]
    assert any("No release of this data set yet" in i.value for i in at.info)
    assert any("No cap is set" in i.value and "budget set --data lung --cap C" in i.value for i in at.info)
    assert "Set cap" in buttons(at) and "Raise cap" not in buttons(at)
    assert any(s.value.startswith("Ledger chain: 0 record(s), chain intact") for s in at.success)
    assert LedgerStore(ledger_path).records() == []  # opening the page wrote nothing


def test_set_cap_once_then_only_raise_or_lower(ledger_path):
    at = run()
    at.number_input(key="cap_set_value").set_value(2.0)
    at.text_input(key="cap_set_note").set_value("study protocol v2")
    at.button(key="cap_set").click()
    run(at)
    (rec,) = LedgerStore(ledger_path).records(LUNG)
    assert (rec.kind, rec.body["cap"], rec.body["reason"], rec.body["dataset"]) == (CAP_SET, 2.0, "study protocol v2", "lung")
    assert at.metric[1].value == "ε = 2" and at.metric[2].value == "ε = 2"
    assert any(s.value == "Cap set to ε 2 (record 1)." for s in at.success)
    # a second set is not offered: the cap can only be raised (with a reason) or lowered
    assert "Set cap" not in buttons(at) and {"Raise cap", "Lower cap"} <= set(buttons(at))
    history = next(t.value for t in at.table if "act" in t.value.columns)
    assert history["act"].tolist() == ["set"] and history["reason"].tolist() == ["study protocol v2"]


def test_raising_needs_a_reason_and_is_its_own_record(ledger_path):
    store = LedgerStore(ledger_path)
    store.set_cap(LUNG, 2.0, "lung")
    at = run()
    at.number_input(key="cap_raise_value-2.0").set_value(3.0)
    at.button(key="cap_raise").click()
    run(at)
    assert any("Raising the cap needs a reason" in e.value for e in at.error)
    assert [r.kind for r in store.records(LUNG)] == [CAP_SET] and at.metric[1].value == "ε = 2"
    at.text_input(key="cap_raise_reason-2.0").set_value("ethics board approved a second analysis")
    at.button(key="cap_raise").click()
    run(at)
    raised = store.records(LUNG)[-1]
    assert (raised.kind, raised.body["cap"], raised.body["previous"]) == (CAP_RAISE, 3.0, 2.0)
    assert raised.body["reason"] == "ethics board approved a second analysis"
    assert at.metric[1].value == "ε = 3"
    history = next(t.value for t in at.table if "act" in t.value.columns)
    assert history["act"].tolist() == ["set", "raised"]
    assert history["reason"].tolist()[-1] == "ethics board approved a second analysis"


def test_lowering_is_always_allowed_even_below_what_was_spent(ledger_path, curve_outputs):
    store = LedgerStore(ledger_path)
    store.set_cap(LUNG, 2.0, "lung")
    release(store, curve_outputs, eps=1.0)
    at = run()
    at.number_input(key="cap_lower_value-2.0").set_value(0.5)
    at.button(key="cap_lower").click()
    run(at)
    assert store.ledger(LUNG).cap == 0.5
    assert [m.value for m in at.metric] == ["ε = 1", "ε = 0.5", "ε = 0"]
    # a cap below what was spent says that the earlier releases stay and count in full
    assert any("0.5 more than the cap of 0.5" in w.value and "does not undo" in w.value for w in at.warning)


# ------------------------------------------------------------------------------------------- the records

def test_records_written_outside_the_app_appear_in_full(ledger_path, curve_outputs):
    store = LedgerStore(ledger_path)
    store.set_cap(LUNG, 3.0, "lung")
    release(store, curve_outputs, eps=0.5)
    store.allow_label_only(LUNG, "labels only, board minute 3", "lung")  # a label-only release under a cap needs it
    release(store, None, eps=1.0, mechanism="rrr", command="", protects=GROUP_LABEL)
    at = run()
    table = releases_table(at)
    assert table.index.tolist() == [2, 4]
    assert table["mechanism"].tolist() == ["laplace-counts", "rrr"]
    assert table["ε"].tolist() == ["0.5", "1"] and table["δ"].tolist() == ["0", "0"]
    assert table["protects"].tolist() == ["the subject", GROUP_LABEL]
    assert table["neighbouring"].tolist() == ["add/remove one subject"] * 2
    assert table["guarantee"].tolist() == ["exact"] * 2
    assert table["reproduce command"].tolist() == [KM, "—"]  # the whole command, not cut off
    assert all(len(t) == 19 for t in table["time (UTC)"])
    assert [m.value for m in at.metric] == ["ε = 0.5", "ε = 3", "ε = 2.5"]
    assert any("Label-only releases: ε = 1" in i.value for i in at.info)
    assert any("no differential-privacy guarantee" in e.value for e in at.error)


@pytest.mark.slow
def test_a_release_by_the_command_line_appears_on_the_page(ledger_path):
    done = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--group", "sex", "--horizon",
                           "1100", "--epsilon", "0.7", "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["record_id"] == 1
    at = run()
    table = releases_table(at)
    assert table.index.tolist() == [1] and table["ε"].tolist() == ["0.7"]
    assert table["reproduce command"].tolist() == [
        "python -m dpsurv_core km --data lung --group sex --horizon 1100 --epsilon 0.7 --json"]
    assert at.metric[0].value == "ε = 0.7"
    # and `budget show` on the command line lists the same record
    show = subprocess.run([sys.executable, "-m", "dpsurv_core", "budget", "show", "--data", "lung", "--json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert [r["id"] for r in json.loads(show.stdout)["releases"]] == [1]


def test_a_broken_chain_is_shown(ledger_path, curve_outputs):
    import sqlite3

    store = LedgerStore(ledger_path)
    release(store, curve_outputs)
    release(store, curve_outputs)
    with sqlite3.connect(ledger_path) as con:  # tamper: drop the guard, edit the first record's epsilon
        con.execute("DROP TRIGGER records_no_update")
        con.execute("UPDATE records SET body = replace(body, '\"epsilon\":0.5', '\"epsilon\":0.1') WHERE id = 1")
    at = run()
    assert any("The ledger chain is broken" in e.value and "record 1 was edited" in e.value for e in at.error)


# ------------------------------------------------------------------------------------------- exports

def test_chosen_records_decide_what_the_exports_hold(ledger_path, curve_outputs, downloads):
    store = LedgerStore(ledger_path)
    release(store, curve_outputs, eps=0.5)
    weibull = [{"trial": 1, "shape": 1.31, "scale": 419.9, "scale_normalised": 0.38}]
    release(store, weibull, eps=1.0, mechanism="lsp-tll", analysis="Weibull parameters",
            command="python -m dpsurv_core weibull --data lung --mechanism lsp-tll --epsilon 1 --json")
    at = run()
    chooser = at.multiselect(key=f"report_records-{LUNG}")
    assert chooser.value == [1, 2]  # every release by default
    rows = list(csv.DictReader(io.StringIO(content(downloads["Released numbers (CSV)"]))))
    assert {r["record"] for r in rows} == {"1", "2"}
    assert {r["quantity"] for r in rows if r["record"] == "2"} == {"shape", "scale", "scale_normalised"}

    chooser.set_value([2])
    run(at)
    rows = list(csv.DictReader(io.StringIO(content(downloads["Released numbers (CSV)"]))))
    assert {r["record"] for r in rows} == {"2"}
    assert {(r["quantity"], r["value"]) for r in rows} >= {("shape", "1.31"), ("scale", "419.9")}
    payload = json.loads(content(downloads["Released numbers (JSON)"]))
    assert payload["records"] == [2] and [r["id"] for r in payload["releases"]] == [2]
    assert payload["releases"][0]["outputs"] == weibull and payload["releases"][0]["command"].startswith("python -m")
    # the totals are the whole data set's, whatever was chosen
    assert payload["data_set_ledger"]["totals"]["the subject"]["epsilon"] == 1.5
    assert payload["data_set_ledger"]["releases"] == 2 and payload["chain"]["ok"] is True
    release_html = content(downloads["Download release report (HTML)"])
    assert "Release 2: Weibull parameters (lsp-tll)" in release_html
    assert "Release 1:" not in release_html and "CONFIDENTIAL" not in release_html
    assert "This report lists 1 of the data set" in release_html and "2 release(s); the totals below" in release_html

    at.multiselect(key=f"report_records-{LUNG}").set_value([])
    run(at)
    assert content(downloads["Released numbers (CSV)"]).strip() == "record,analysis,mechanism,trial,group,quantity,time,value"
    assert json.loads(content(downloads["Released numbers (JSON)"]))["releases"] == []


def test_a_release_recorded_later_joins_the_choice(ledger_path, curve_outputs, downloads):
    store = LedgerStore(ledger_path)
    release(store, curve_outputs)
    release(store, curve_outputs)
    at = run()
    at.multiselect(key=f"report_records-{LUNG}").set_value([2])
    run(at)
    release(store, curve_outputs)  # e.g. from another tab
    run(at)
    assert at.multiselect(key=f"report_records-{LUNG}").value == [2, 3]
    assert json.loads(content(downloads["Released numbers (JSON)"]))["records"] == [2, 3]


def test_review_report_is_confidential_and_keeps_the_audits(ledger_path, curve_outputs, downloads):
    store = LedgerStore(ledger_path)
    release(store, curve_outputs, eps=0.5)
    audit = AuditItem("Survival curves, laplace-counts", {"empirical epsilon": 0.31, "charged epsilon": 0.5})
    run(stored_audits=[audit])
    review = content(downloads["Download review report (HTML)"])
    assert review.count("CONFIDENTIAL") >= 3
    assert "Privacy audit: Survival curves, laplace-counts" in review and "empirical epsilon" in review
    # the curve released on lung by sex is compared with the exact curve at the same time points
    assert "Release 1: survival curves (laplace-counts): comparison with the non-private analysis" in review
    assert "RMSE" in review
    release_html = content(downloads["Download release report (HTML)"])
    assert "CONFIDENTIAL" not in release_html and "Privacy audit" not in release_html
    assert "Released numbers" in release_html and KM in release_html


# ------------------------------------------------------------------------------------------- reproduce

def test_each_release_offers_its_reproduce_scripts(ledger_path, curve_record, downloads):
    store = LedgerStore(ledger_path)
    release(store, curve_record, eps=0.5)
    release(store, None, eps=1.0, mechanism="rrr", command="", protects=GROUP_LABEL)
    at = run()
    chooser = at.selectbox(key=f"reproduce-{LUNG}")
    assert chooser.value == 2  # the latest release
    assert chooser.options == ["1: laplace-counts (survival curves), ε 0.5", "2: rrr (survival curves), ε 1"]
    assert "recorded no command line" in at.code[0].value
    at.selectbox(key=f"reproduce-{LUNG}").set_value(1)
    run(at)
    assert at.code[0].value == KM
    python = at.code[1].value
    assert f"COMMAND = {KM!r}" in python and "r.id == 1" in python and "RUN_AGAIN = False" in python
    # the Python script runs as downloaded: it checks the chain and prints the numbers the release published
    done = subprocess.run([sys.executable, "-c", python], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "chain intact" in done.stdout
    printed = json.loads(done.stdout.split("\n", 1)[1])
    assert printed == json.loads(json.dumps({k: v for k, v in curve_record.to_dict().items() if k != "kind"}))
    assert len(store.records()) == 2  # reading the record released nothing
    assert any(r.kind == RELEASE for r in store.records())


def test_reproduce_shell_script_runs_the_command_again():
    from dpsurv_app.releases import reproduce_shell
    from dpsurv_core.privacy.ledger import Record

    body = LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(0.5), command=KM).to_dict()
    script = reproduce_shell(Record(4, "2026-01-02T03:04:05+00:00", LUNG, RELEASE, body, "h"))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/sh" and lines[-1] == KM
    assert "NEW release" in script and "budget show --data lung" in script


# ------------------------------------------------------------------------------------------- from an analysis page

def test_a_release_on_the_curves_page_reaches_the_ledger_page_and_its_exports(ledger_path, downloads):
    import dataclasses

    from dpsurv_core.privacy.ledger import record_outputs

    # the Data page declares the time grid (lung's default: 20 bins up to 1,100 days), so nothing is read off the data
    lung = dataclasses.replace(bundled_choice("lung"), grid="0:1100:20")
    curves = run(AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "2_Survival_curves.py"), default_timeout=90), data_choice=lung)
    assert LedgerStore(ledger_path).records() == []  # the page previews; it records nothing until the click
    (button,) = [b for b in curves.button if b.label.startswith("Release")]
    click_release(curves, button.key)
    run(curves)
    (record,) = LedgerStore(ledger_path).release_records(LUNG)
    assert record_outputs(record.body)["survival"] and record.body["command"].startswith("python -m dpsurv_core km")
    at = run()  # another session (a tab) opening the Ledger page
    table = releases_table(at)
    assert table.index.tolist() == [record.id] and table["mechanism"].tolist() == [record.body["mechanism"]]
    assert table["reproduce command"].tolist() == [record.body["command"]]
    rows = list(csv.DictReader(io.StringIO(content(downloads["Released numbers (CSV)"]))))
    survival = [float(r["value"]) for r in rows if r["quantity"] == "survival" and r["group"] == "all"]
    assert survival == record_outputs(record.body)["survival"][0]
    assert at.code[0].value == record.body["command"]


def test_label_only_allowance_is_a_recorded_act_with_a_reason(ledger_path):
    from dpsurv_core.privacy.ledger import ALLOW_LABEL_ONLY

    store = LedgerStore(ledger_path)
    store.set_cap(LUNG, 2.0, "lung")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.button(key="allow_label_only").click().run()
    assert any("needs a reason" in e.value for e in at.error)
    assert not store.ledger(LUNG).label_only_allowed
    at.text_input(key="allow_label_reason").input("board minute 7: labels only").run()
    at.button(key="allow_label_only").click().run()
    assert store.ledger(LUNG).label_only_allowed
    assert store.records(LUNG)[-1].kind == ALLOW_LABEL_ONLY


# ------------------------------------------------------------------------------------------- PDF and a cheap first view

def download_buttons(at: AppTest) -> dict[str, bool]:
    """Each download button's label and whether it is disabled."""
    return {b.proto.label: b.proto.disabled for b in at.get("download_button")}


def test_reports_and_exports_are_built_only_when_their_button_is_clicked(ledger_path, curve_outputs, downloads,
                                                                         monkeypatch):
    import dpsurv_core.report.html as html

    built = []
    monkeypatch.setattr(html, "record_item", lambda *a, **k: built.append(a) or pytest.fail("built on a rerun"))
    store = LedgerStore(ledger_path)
    release(store, curve_outputs)
    run()
    # every report and export is a callable the download runs; drawing the page built none of them
    for label in ("Download release report (HTML)", "Download release report (PDF)", "Released numbers (CSV)",
                  "Released numbers (JSON)", "Download review report (HTML)", "Download review report (PDF)",
                  "Ledger accounts (JSON)"):
        assert callable(downloads[label]), label
    assert built == []
    monkeypatch.undo()
    assert json.loads(content(downloads["Ledger accounts (JSON)"]))["records"][0]["mechanism"] == "laplace-counts"


def test_pdf_buttons_follow_the_html_ones_and_say_why_when_off(ledger_path, monkeypatch):
    import dpsurv_core.report.pdf as pdf

    pytest.importorskip("playwright", reason="playwright (requirements.txt) prints the PDF")
    monkeypatch.setattr(pdf, "chromium_path", lambda: sys.executable)  # a browser is found: the buttons are on
    states = download_buttons(run())
    assert states["Download release report (PDF)"] is False and states["Download review report (PDF)"] is False
    labels = list(states)
    assert labels.index("Download release report (PDF)") == labels.index("Download release report (HTML)") + 1
    monkeypatch.setattr(pdf, "chromium_path", lambda: None)
    at = run()
    states = download_buttons(at)
    assert states["Download release report (PDF)"] is True and states["Download release report (HTML)"] is False
    assert any(c.value.startswith("The PDF buttons are off: A PDF needs a Chromium browser")
               and "apt-get install chromium" in c.value for c in at.caption)


@pytest.mark.slow
@pytest.mark.skipif(__import__("dpsurv_core.report.pdf", fromlist=["pdf_problem"]).pdf_problem() is not None,
                    reason="no chromium (or no playwright) to print a PDF with here")
def test_the_pdf_button_gives_the_release_report_as_pdf(ledger_path, curve_outputs, downloads):
    pypdf = pytest.importorskip("pypdf", reason="pypdf (requirements-dev.txt) reads the PDF's text")
    release(LedgerStore(ledger_path), curve_outputs)
    run()
    data = downloads["Download release report (PDF)"]()
    assert data.startswith(b"%PDF-")
    text = " ".join(" ".join(p.extract_text() for p in pypdf.PdfReader(io.BytesIO(data)).pages).split())
    assert "dpsurv release: lung" in text and "Release 1: survival curves (laplace-counts)" in text
    assert "Released numbers" in text and "CONFIDENTIAL" not in text
