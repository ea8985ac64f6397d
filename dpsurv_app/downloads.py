"""Download buttons: every figure as PNG and SVG, every table as CSV.

What leaves as a release holds the released numbers only: a figure or table that draws the non-private (exact)
numbers beside them is a separate download, marked confidential on the image and in its file name.

Figures are exported by plotly's static export (kaleido >= 1, which drives a Chromium-based browser: Debian's
``/usr/bin/chromium`` here). The image is made only when the button is clicked (Streamlit runs the callable then),
so drawing a page costs nothing. When static export cannot run (kaleido missing, no browser found), the buttons are
drawn disabled and a caption says why and what to install: they never fail.

Tables go through :func:`dpsurv_core.report.files.safe_csv`, so a cell such as ``=HYPERLINK(...)`` is written as
text a spreadsheet will not run as a formula.
"""

from __future__ import annotations

import re
from functools import cache

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from dpsurv_core.report.files import safe_csv

EXPORT_SCALE = 2  # PNG pixels per CSS pixel: sharp enough for a slide or a paper
EXPORT_SIZE = (1000, 600)  # width, height of an exported figure in CSS pixels
PREVIEWS_SHOWN = "_downloads_show_previews"  # this run's page shows a preview (seeded noise, not for publication)
PREVIEW_MARK = "Preview, not for publication: seeded simulation noise, no release"
# a figure or table beside which the non-private (exact) numbers are drawn: for the data holder's eyes only
CONFIDENTIAL_MARK = "Confidential, not for publication: holds the non-private (exact) numbers"
CONFIDENTIAL_SUFFIX = "-confidential-not-for-publication"


def start_run() -> None:
    """A new run of the app: no preview shown yet (``app.py`` calls it before the page runs)."""
    st.session_state[PREVIEWS_SHOWN] = False


def mark_previews() -> None:
    """The page shows a preview: every figure and table it exports from here on says so, in its file name and (a
    figure) on the image, so a file saved from a preview is not mistaken for a release."""
    st.session_state[PREVIEWS_SHOWN] = True


def _previews() -> bool:
    return bool(st.session_state.get(PREVIEWS_SHOWN, False))


def _stem(name: str, confidential: bool = False) -> str:
    return (file_stem(name) + ("-preview-not-for-publication" if _previews() else "")
            + (CONFIDENTIAL_SUFFIX if confidential else ""))


def file_stem(name: str) -> str:
    """A safe file name stem: letters, digits, dots, dashes and underscores only (``Survival: lung`` ->
    ``survival-lung``)."""
    stem = re.sub(r"[^0-9A-Za-z._-]+", "-", name.strip()).strip("-.").lower()
    return stem or "dpsurv"


@cache
def static_export_problem() -> str | None:
    """None when plotly can export static images here; otherwise one sentence saying why not and what to do.
    Checked once per process without starting a browser (kaleido importable, a Chromium-based browser found)."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return "PNG and SVG need the kaleido package: install it with `pip install kaleido` and restart the app."
    try:
        from choreographer.browsers.chromium import Chromium

        browser = Chromium.find_browser(skip_local=False)
    except Exception as exc:  # a broken install of kaleido's browser driver: still a sentence
        return f"PNG and SVG cannot be made here ({type(exc).__name__}): use the camera icon above the chart."
    if not browser:
        return ("PNG and SVG need a Chrome or Chromium browser on the server (on Debian: `apt-get install chromium`); "
                "until then use the camera icon above the chart.")
    return None


def figure_bytes(fig: go.Figure, fmt: str) -> bytes:
    """``fig`` as a PNG or SVG file (kaleido), at :data:`EXPORT_SIZE` with the figure's own title and legend."""
    if fmt not in ("png", "svg"):
        raise ValueError(f"{fmt!r} is not an image format dpsurv exports: use png or svg.")
    width = fig.layout.width or EXPORT_SIZE[0]
    height = fig.layout.height or EXPORT_SIZE[1]
    return fig.to_image(format=fmt, width=width, height=height, scale=EXPORT_SCALE if fmt == "png" else 1)


def marked(fig: go.Figure, confidential: bool = False) -> go.Figure:
    """A copy of ``fig`` as it is exported: later changes to the page's figure do not leak into the file, and the
    marks it must carry sit above the plot, in a top margin made tall enough for them (the preview's when the page
    shows a preview; :data:`CONFIDENTIAL_MARK` when it holds non-private numbers)."""
    frozen = go.Figure(fig)
    marks = ([(CONFIDENTIAL_MARK, "#000000")] if confidential else []) + ([(PREVIEW_MARK, "#D55E00")]
                                                                         if _previews() else [])
    if marks:
        top = frozen.layout.margin.t if frozen.layout.margin.t is not None else 80
        frozen.update_layout(margin=dict(t=max(top, 60) + (30 if frozen.layout.title.text else 0)
                                         + 24 * (len(marks) - 1)))
        for i, (text, colour) in enumerate(marks):
            frozen.add_annotation(text=text, xref="paper", yref="paper", x=0.5, y=1.0, yanchor="bottom",
                                  yshift=8 + 24 * i, showarrow=False, font=dict(size=14, color=colour))
    return frozen


def _exporter(fig: go.Figure, fmt: str, confidential: bool = False, frozen: go.Figure | None = None):
    """The download's data: a function making the file on click, from ``frozen`` (``marked(fig, confidential)``
    unless given: the PNG and the SVG button share one copy)."""
    frozen = marked(fig, confidential) if frozen is None else frozen

    def make() -> bytes:
        return figure_bytes(frozen, fmt)

    # what the file will hold (the tests read it without starting a browser); mypy does not model function attributes
    make.figure = frozen  # type: ignore[attr-defined]
    return make


def figure_downloads(fig: go.Figure, name: str, key: str, confidential: bool = False, label: str = "Figure") -> None:
    """Two buttons, PNG and SVG, for ``fig`` (file ``<name>.png`` / ``.svg``); disabled with a caption saying why
    when static export cannot run here. ``confidential``: the figure holds non-private numbers, so its image carries
    :data:`CONFIDENTIAL_MARK` and its file name ``-confidential-not-for-publication``."""
    problem = static_export_problem()
    stem = _stem(name, confidential)
    frozen = marked(fig, confidential) if problem is None else None  # one copy for both files
    c1, c2, c3 = st.columns([1, 1, 4])
    for col, fmt, mime in ((c1, "png", "image/png"), (c2, "svg", "image/svg+xml")):
        with col:
            st.download_button(f"{label} as {fmt.upper()}",
                               data=_exporter(fig, fmt, confidential, frozen) if problem is None else b"",
                               file_name=f"{stem}.{fmt}", mime=mime, key=f"{key}-{fmt}", on_click="ignore",
                               disabled=problem is not None, icon=":material/image:")
    if problem is not None:
        c3.caption(problem)


COMPARISON = "Comparison (confidential)"


def show_figure(fig: go.Figure, name: str, key: str, publishable: go.Figure | None = None, confidential: bool = False,
                **plotly_kwargs) -> None:
    """Draw ``fig`` (``st.plotly_chart``) with its PNG and SVG buttons underneath: the one call a page needs.

    ``confidential``: ``fig`` draws non-private numbers (an exact curve beside the private one), so its files are
    marked confidential (:func:`figure_downloads`). ``publishable``: after a release, the same figure with the
    released numbers only; the "Figure" buttons then export it, and ``fig`` is a separate, marked download."""
    st.plotly_chart(fig, key=f"{key}-chart", **plotly_kwargs)
    if publishable is None:
        figure_downloads(fig, name, key, confidential=confidential)
        return
    figure_downloads(publishable, name, key)
    figure_downloads(fig, name, f"{key}-confidential", confidential=True, label=COMPARISON)


def show_table(table: pd.DataFrame, name: str, key: str, label: str = "Table as CSV", **dataframe_kwargs) -> None:
    """Draw ``table`` (``st.dataframe``, which never truncates: it scrolls) with its CSV button underneath."""
    st.dataframe(table, key=f"{key}-table", **dataframe_kwargs)
    table_download(table, name, key=f"{key}-csv", label=label)


def table_csv(table: pd.DataFrame, index: bool = False) -> str:
    """``table`` as CSV text that spreadsheets will not run as formulas (:func:`safe_csv`)."""
    return safe_csv(table.reset_index() if index else table)


def table_download(table: pd.DataFrame, name: str, key: str, label: str = "Table as CSV", index: bool = False,
                   confidential: bool = False) -> None:
    """A button downloading ``table`` as ``<name>.csv`` (formula-safe); ``confidential``: it holds non-private
    numbers, and its file name says so (``-confidential-not-for-publication``)."""
    st.download_button(label, data=table_csv(table, index=index), file_name=f"{_stem(name, confidential)}.csv",
                       mime="text/csv", key=key, on_click="ignore", icon=":material/download:")


def table_downloads(table: pd.DataFrame, name: str, key: str, publishable: pd.DataFrame | None = None,
                    confidential: bool = False, index: bool = False) -> None:
    """The CSV buttons of a table drawn beside a release: ``publishable`` (its released numbers only) as "Table as
    CSV", and the whole ``table``, which holds non-private numbers, as a separate confidential file; without
    ``publishable``, ``table`` alone (marked when ``confidential``)."""
    if publishable is None:
        table_download(table, name, key, index=index, confidential=confidential)
        return
    table_download(publishable, name, key, index=index)
    table_download(table, name, f"{key}-confidential", label=f"{COMPARISON} as CSV", index=index, confidential=True)


FIGURE_FORMATS = (("svg", "image/svg+xml"), ("png", "image/png"), ("pdf", "application/pdf"))


def record_figure_downloads(body: dict, record_id: int, name: str, key: str) -> None:
    """The publication figure of a stored curve release (:mod:`dpsurv_core.report.publication_figure`: curves,
    noise-aware band, number-at-risk table), drawn from its record alone, as SVG, 300-dpi PNG and PDF buttons; each
    file is made only when its button is clicked. Nothing for a record that is not a curve release; disabled, with a
    caption saying what to install, where static export cannot run."""
    from dpsurv_core.report.publication_figure import export_problem, figure_file, is_curve_record, publication_figure

    if not is_curve_record(body):
        return
    problem = export_problem()
    stamp = str(body.get("time") or "")

    def make(fmt: str):
        return lambda: figure_file(publication_figure(body, record_id), fmt, stamp)

    st.markdown("**Publication figure** (curves with their noise-aware band, the number-at-risk table and the "
                "log-rank test, from the record alone)")
    cols = st.columns([1, 1, 1, 3])
    for col, (fmt, mime) in zip(cols, FIGURE_FORMATS):
        with col:
            st.download_button(f"Publication figure ({fmt.upper()})", data=make(fmt) if problem is None else b"",
                               file_name=f"{file_stem(name)}.{fmt}", mime=mime, key=f"{key}-{fmt}",
                               on_click="ignore", disabled=problem is not None, icon=":material/image:",
                               help="300 dots per inch" if fmt == "png" else None)
    if problem is not None:
        cols[3].caption(problem)
