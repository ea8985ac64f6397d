"""The release report as PDF: printed by Debian's chromium through Playwright, figures drawn, nothing on disk.

The printing tests are skipped with a reason where no chromium is found (as tests/conftest.py does for the browser
tests); the sentence a user gets without one is checked everywhere."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import DpsurvError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report import pdf
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.html import Report

needs_chromium = pytest.mark.skipif(pdf.pdf_problem() is not None,
                                    reason=f"no PDF can be printed here: {pdf.pdf_problem()}")


def pdf_text(data: bytes) -> tuple[int, tuple[float, float], str]:
    """Pages, the first page's size in points, and the text of every page (pypdf)."""
    pypdf = pytest.importorskip("pypdf", reason="pypdf (requirements-dev.txt) reads the PDF's text")
    reader = pypdf.PdfReader(io.BytesIO(data))
    box = reader.pages[0].mediabox
    return len(reader.pages), (float(box.width), float(box.height)), "\n".join(p.extract_text() for p in reader.pages)


def test_chromium_is_found_as_the_tests_find_it(tmp_path, monkeypatch):
    exe = tmp_path / "my-chromium"
    exe.write_text("")
    monkeypatch.setenv("DPSURV_CHROMIUM", str(exe))
    assert pdf.chromium_path() == str(exe)
    monkeypatch.setenv("DPSURV_CHROMIUM", str(tmp_path / "missing"))  # a path that does not exist is passed over
    debian = Path("/usr/bin/chromium")
    assert pdf.chromium_path() == (str(debian) if debian.exists() else shutil.which("chromium"))


def test_without_a_browser_one_sentence_says_what_to_install(monkeypatch):
    monkeypatch.setattr(pdf, "chromium_path", lambda: None)
    problem = pdf.pdf_problem()
    assert problem.startswith("A PDF needs a Chromium browser") and problem.endswith(".")
    assert "apt-get install chromium" in problem and "DPSURV_CHROMIUM" in problem
    with pytest.raises(pdf.PdfUnavailable, match="apt-get install chromium") as err:
        pdf.html_to_pdf("<p>x</p>")
    assert isinstance(err.value, DpsurvError)  # the command line turns it into exit 2 and one line


@pytest.fixture(scope="module")
def release_html() -> str:
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    mech = LaplaceCounts(1.0)
    ledger = Ledger(cap=3.0)
    ledger.charge(mech.ledger_entry("lung"))
    release = mech.compute(cohort, public, SimulationNoise(7))
    rep = Report("Lung survival, private", "lung", ledger, "release")
    rep.add_section("Private survival curves")
    rep.add_figure(curves_figure({"private": release.curves}, "days"))
    return rep.to_html()


@needs_chromium
@pytest.mark.slow
def test_release_report_prints_to_an_a4_pdf_with_its_figures(release_html, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = pdf.html_to_pdf(release_html)
    assert isinstance(data, bytes) and data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert list(tmp_path.iterdir()) == []  # bytes to the caller: no file written
    pages, (width, height), text = pdf_text(data)
    assert 1 <= pages <= 4
    assert width == pytest.approx(595.3, abs=1.5) and height == pytest.approx(841.9, abs=1.5)  # A4 in points
    flat = " ".join(text.split())
    for words in ("Lung survival, private", "release report (private outputs only)", "Private survival curves",
                  "Privacy ledger", "Methods", "Gondara"):
        assert words in flat, words
    # the plotly figures were drawn before printing: their axis titles and legends are text in the PDF
    for words in ("Time (days)", "Survival (%)", "private: 1", "private: 2",  # the curves
                  "running total (sequential)", "cap 3"):  # the ledger's figure
        assert words in flat, words
    assert "CONFIDENTIAL" not in flat


@needs_chromium
@pytest.mark.slow
def test_review_pdf_says_confidential_at_the_top_of_every_page():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    release = LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(7))
    rep = Report("Lung review", "lung", Ledger(), "review")
    for title in ("Private curves", "Comparison", "Again"):  # three figures: more than one page
        rep.add_section(title, confidential=title != "Private curves")
        rep.add_figure(curves_figure({"private": release.curves}, "days"))
    pypdf = pytest.importorskip("pypdf", reason="pypdf (requirements-dev.txt) reads the PDF's text")
    reader = pypdf.PdfReader(io.BytesIO(pdf.html_to_pdf(rep.to_html())))
    pages = [" ".join(p.extract_text().split()) for p in reader.pages]
    assert len(pages) >= 2
    for i, text in enumerate(pages, start=1):
        assert "CONFIDENTIAL: contains non-private results; do not release" in text, i  # the header of each page
        assert f"page {i} of {len(pages)}" in text


def test_prints_from_a_thread_whose_asyncio_loop_is_running():
    """Playwright's sync API refuses a thread with a running asyncio loop (another Playwright session, a notebook, an
    async server): the report is printed in a thread of its own, so it still works there."""
    import asyncio

    from dpsurv_core.report import pdf

    if pdf.pdf_problem() is not None:
        pytest.skip(pdf.pdf_problem())

    async def inside_a_loop() -> bytes:
        return pdf.html_to_pdf("<html><body><h1>dpsurv</h1></body></html>")

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # a fresh thread: this one may hold the browser tests' own loop
        assert pool.submit(asyncio.run, inside_a_loop()).result().startswith(b"%PDF")
