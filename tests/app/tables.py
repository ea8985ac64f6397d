"""Tables and text as a reader sees them: ``st.table`` reads cells as Markdown, so the pages escape text cells
(:func:`dpsurv_core.report.text.markdown_literal_frame`), and sentences naming data values go to Markdown escaped
(:func:`dpsurv_core.report.text.markdown_literal`); tests compare the text shown."""

from __future__ import annotations

import re

import pandas as pd

from dpsurv_core.report.text import MARKDOWN_SPECIAL

_ESCAPED = re.compile(r"\\([" + re.escape(MARKDOWN_SPECIAL) + "])")


def _shown(x: object) -> object:
    return _ESCAPED.sub(r"\1", x).replace("\u200b", "") if isinstance(x, str) else x


def shown_text(text: str) -> str:
    """Markdown (an alert, a caption, a table cell) as its text is displayed: each escaped character as itself."""
    return _ESCAPED.sub(r"\1", text).replace("\u200b", "")


def shown(frame: pd.DataFrame) -> pd.DataFrame:
    """The table with each escaped character as it is displayed."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object:
            out[col] = out[col].map(_shown)
    out.index = out.index.map(_shown)
    out.columns = out.columns.map(_shown)
    return out
