"""Download buttons: every figure as PNG and SVG, every table as CSV.

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


def start_run() -> None:
    """A new run of the app: no preview shown yet (``app.py`` calls it before the page runs)."""
    st.session_state[PREVIEWS_SHOWN] = False


def mark_previews() -> None:
    """The page shows a preview: every figure and table it exports from here on says so, in its file name and (a
    figure) on the image, so a file saved from a preview is not mistaken for a release."""
    st.session_state[PREVIEWS_SHOWN] = True


def _previews() -> bool:
    return bool(st.session_state.get(PREVIEWS_SHOWN, False))


def _stem(name: str) -> str:
    return file_stem(name) + ("-preview-not-for-publication" if _previews() else "")


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


def _exporter(fig: go.Figure, fmt: str):
    frozen = go.Figure(fig)  # a copy: later changes to the page's figure do not leak into the file
    if _previews():  # above the plot, in a top margin made tall enough for it
        top = frozen.layout.margin.t if frozen.layout.margin.t is not None else 80
        frozen.update_layout(margin=dict(t=max(top, 60) + (30 if frozen.layout.title.text else 0)))
        frozen.add_annotation(text=PREVIEW_MARK, xref="paper", yref="paper", x=0.5, y=1.0, yanchor="bottom",
                              yshift=8, showarrow=False, font=dict(size=14, color="#D55E00"))

    def make() -> bytes:
        return figure_bytes(frozen, fmt)

    return make


def figure_downloads(fig: go.Figure, name: str, key: str) -> None:
    """Two buttons, PNG and SVG, for ``fig`` (file ``<name>.png`` / ``.svg``); disabled with a caption saying why
    when static export cannot run here."""
    problem = static_export_problem()
    stem = _stem(name)
    c1, c2, c3 = st.columns([1, 1, 4])
    for col, fmt, mime in ((c1, "png", "image/png"), (c2, "svg", "image/svg+xml")):
        with col:
            st.download_button(f"Figure as {fmt.upper()}", data=_exporter(fig, fmt) if problem is None else b"",
                               file_name=f"{stem}.{fmt}", mime=mime, key=f"{key}-{fmt}", on_click="ignore",
                               disabled=problem is not None, icon=":material/image:")
    if problem is not None:
        c3.caption(problem)


def show_figure(fig: go.Figure, name: str, key: str, **plotly_kwargs) -> None:
    """Draw ``fig`` (``st.plotly_chart``) with its PNG and SVG buttons underneath: the one call a page needs."""
    st.plotly_chart(fig, key=f"{key}-chart", **plotly_kwargs)
    figure_downloads(fig, name, key)


def show_table(table: pd.DataFrame, name: str, key: str, label: str = "Table as CSV", **dataframe_kwargs) -> None:
    """Draw ``table`` (``st.dataframe``, which never truncates: it scrolls) with its CSV button underneath."""
    st.dataframe(table, key=f"{key}-table", **dataframe_kwargs)
    table_download(table, name, key=f"{key}-csv", label=label)


def table_csv(table: pd.DataFrame, index: bool = False) -> str:
    """``table`` as CSV text that spreadsheets will not run as formulas (:func:`safe_csv`)."""
    return safe_csv(table.reset_index() if index else table)


def table_download(table: pd.DataFrame, name: str, key: str, label: str = "Table as CSV", index: bool = False) -> None:
    """A button downloading ``table`` as ``<name>.csv`` (formula-safe)."""
    st.download_button(label, data=table_csv(table, index=index), file_name=f"{_stem(name)}.csv", mime="text/csv",
                       key=key, on_click="ignore", icon=":material/download:")
