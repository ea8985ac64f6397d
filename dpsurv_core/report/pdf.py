"""The HTML report as PDF, printed by a real browser: Debian's chromium driven by Playwright.

:func:`html_to_pdf` loads the report's HTML into a headless chromium page (``page.set_content``: from memory, no
file), waits until every plotly figure has drawn its SVG, and prints the page to A4 (``page.pdf()`` with no path
returns the bytes), numbered "page N of M" in the footer. A review report's CONFIDENTIAL banner goes into the header
of every printed page (the HTML's fixed banner would cover the top lines of each page). Nothing is written to disk by dpsurv: a report may hold numbers released from uploaded data, and
the PDF's bytes go to the caller (the app's download button, or the command line's ``--out FILE.pdf``).

The browser is found as the tests find it (:func:`chromium_path`): ``$DPSURV_CHROMIUM``, ``/usr/bin/chromium``,
then ``chromium`` on the ``PATH``. Playwright cannot download a browser of its own here, so it is given that one
(``executable_path``). Where none is found, :func:`pdf_problem` says so in one sentence and the HTML report remains.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from dpsurv_core.errors import DpsurvError

if TYPE_CHECKING:  # Playwright is optional (the pdf extra)
    from playwright.sync_api import PdfMargins, ViewportSize

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]
PAGE_MM = (210.0, 297.0)  # A4
MARGIN_MM = 12.0
# the browser window is as wide as the printable width of the page, so plotly sizes each figure to the paper
VIEWPORT: ViewportSize = {"width": round((PAGE_MM[0] - 2 * MARGIN_MM) / 25.4 * 96), "height": 1000}
# for the PDF only: wide tables wrap inside the page instead of running off its edge; a figure is not cut in two
PRINT_CSS = """
body{max-width:none;margin:0;padding:0;font-size:11px}
table{font-size:9px} th,td{padding:.15em .3em} td{overflow-wrap:anywhere}
.plotly-graph-div,table{break-inside:avoid} .modebar-container{display:none}
"""
BANNER = """() => { const b = document.querySelector('.confidential.page');
    if (!b) return null; b.style.display = 'none'; return b.innerText; }"""
FIGURES_DRAWN = """() => [...document.querySelectorAll('.plotly-graph-div')]
    .every(d => d._fullLayout !== undefined && d.querySelector('.main-svg') !== null)"""
INSTALL = ("install Debian's chromium (`apt-get install chromium`) or set DPSURV_CHROMIUM to a Chromium executable, "
           "and the Python package playwright (`pip install 'dpsurv[pdf]'`)")


FOOTER = ('<div style="font-size:8px;color:#555;width:100%;text-align:center">'
          'page <span class="pageNumber"></span> of <span class="totalPages"></span></div>')


def _header(banner: str | None) -> str:
    """The header of every printed page: the review's CONFIDENTIAL banner, or nothing."""
    if not banner:
        return "<span></span>"
    return ('<div style="font-size:10px;font-weight:700;letter-spacing:.08em;color:#fff;background:#b91c1c;'
            '-webkit-print-color-adjust:exact;width:100%;margin:0 12mm;padding:4px;text-align:center">'
            f"{escape(banner)}</div>")


class PdfUnavailable(DpsurvError):
    """No browser (or no Playwright) to print the report with here."""


def chromium_path() -> str | None:
    """The chromium executable to print with: ``$DPSURV_CHROMIUM``, ``/usr/bin/chromium`` or ``chromium`` on the
    ``PATH`` (the first that exists), else None."""
    for cand in (os.environ.get("DPSURV_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).exists():
            return cand
    return None


def pdf_problem() -> str | None:
    """None when a PDF can be printed here; otherwise one sentence saying what is missing and what to install.
    Starts no browser (cheap enough for every run of a page)."""
    if importlib.util.find_spec("playwright") is None:  # found, not imported: imported only to print
        return f"A PDF needs the Python package playwright, which is not installed: {INSTALL}."
    if chromium_path() is None:
        return f"A PDF needs a Chromium browser, and none was found: {INSTALL}."
    return None


def html_to_pdf(html: str, timeout_s: float = 60.0) -> bytes:
    """``html`` (a self-contained page, such as :meth:`Report.to_html`) printed to A4 by headless chromium, as the
    bytes of a PDF file. Waits for every plotly figure to draw before printing. Raises :class:`PdfUnavailable`
    when no browser or no Playwright is found, or when the browser fails.

    Parameters
    ----------
    html : str
        The page.
    timeout_s : float, default 60.0
        Seconds the browser may take.

    Returns
    -------
    bytes
        The PDF file's bytes.

    Raises
    ------
    PdfUnavailable
        When no browser or no Playwright is found, or the browser fails.
    """
    problem = pdf_problem()
    if problem is not None:
        raise PdfUnavailable(problem)
    # Playwright's sync API refuses a thread whose asyncio loop is running (a notebook, an async server, another
    # Playwright session): print in a thread of its own, which has none.
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpsurv-pdf") as pool:
        return pool.submit(_print, html, timeout_s).result()


def _print(html: str, timeout_s: float) -> bytes:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    ms = timeout_s * 1000
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.set_default_timeout(ms)
                page.set_content(html, wait_until="load")
                page.add_style_tag(content=PRINT_CSS)
                page.wait_for_function(FIGURES_DRAWN, timeout=ms)
                page.evaluate("() => document.fonts.ready")
                banner = page.evaluate(BANNER)
                side = f"{MARGIN_MM:g}mm"
                margin: PdfMargins = {"top": side, "right": side, "bottom": side, "left": side}
                if banner:
                    margin["top"] = f"{MARGIN_MM + 8:g}mm"
                return page.pdf(format="A4", print_background=True, margin=margin, display_header_footer=True,
                                header_template=_header(banner), footer_template=FOOTER)
            finally:
                browser.close()
    except PlaywrightError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise PdfUnavailable(f"Chromium could not print the report ({first}): the HTML report is unaffected; "
                             f"check the browser at {chromium_path()} runs (`{chromium_path()} --version`).") from exc
