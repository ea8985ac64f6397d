"""The Ledger and report page offers each curve release's publication figure (SVG, PNG, PDF), made from its record
only when a button is clicked; a release that is not a curve release offers none."""

from __future__ import annotations

from pathlib import Path

import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from dpsurv_core.cli import main
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.report import publication_figure as pf

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "8_Ledger_and_report.py")
LABELS = ("Publication figure (SVG)", "Publication figure (PNG)", "Publication figure (PDF)")


@pytest.fixture
def downloads(monkeypatch) -> dict:
    """What each download button would hand the browser, by label (callables are not called)."""
    got: dict = {}
    original = st.download_button

    def spy(label, data, *args, **kwargs):
        got[label] = (data, kwargs.get("file_name"), kwargs.get("disabled"))
        return original(label, data, *args, **kwargs)

    monkeypatch.setattr(st, "download_button", spy)
    return got


def page() -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=90)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_a_curve_release_offers_its_figure_built_from_the_record_on_click(ledger_path, downloads, monkeypatch,
                                                                         capsys):
    assert main(["km", "--data", "lung", "--group", "sex", "--grid", "0:1000:10", "--horizon", "1000",
                 "--epsilon", "1", "--json"]) == 0
    capsys.readouterr()
    built = []
    real = pf.publication_figure
    monkeypatch.setattr(pf, "publication_figure", lambda *a, **k: built.append(a) or real(*a, **k))
    monkeypatch.setattr(pf, "figure_file", lambda fig, fmt, stamp="": fig.to_json().encode())  # no browser here
    page()
    assert set(LABELS) <= set(downloads) and built == []  # drawing the page made no figure
    data, name, disabled = downloads["Publication figure (SVG)"]
    assert name == "dpsurv-figure-lung-record-1.svg" and callable(data) == (pf.export_problem() is None)
    if pf.export_problem() is None:
        (record,) = LedgerStore(ledger_path).records()
        assert data() == real(record.body, 1).to_json().encode()  # the figure of the stored record, nothing else


def test_a_release_that_is_not_a_curve_release_offers_no_figure(ledger_path, downloads, capsys):
    assert main(["weibull", "--data", "lung", "--mechanism", "laplace", "--epsilon", "1", "--horizon", "1000",
                 "--censoring", "0.3", "--json"]) == 0
    capsys.readouterr()
    at = page()
    shown = [b.proto.label for b in at.get("download_button")]
    assert "Reproduce script (shell)" in shown and not set(LABELS) & set(shown)
