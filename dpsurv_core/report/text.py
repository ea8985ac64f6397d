"""Data-derived labels as plain text.

Group labels, column names and data set or file names come from the data holder's file. Plotly renders a subset of
HTML in trace names, legends, hover text and titles (``<a href=...>`` becomes a live link, ``<b>`` bold ...), and
Streamlit's markdown elements render markdown links, images and HTML-like syntax. These helpers make such a label
show literally, as the text it is:

* :func:`plain_label` for plotly: ``&``, ``<`` and ``>`` as HTML entities (plotly shows them as the characters);
* :func:`markdown_literal` for ``st.markdown`` / ``st.caption`` / ``st.info`` ...: every markdown special character
  backslash-escaped (and ``<``/``>`` too, so no HTML tag can form);
* :func:`markdown_code` for a command line or path shown as code: a code span no backtick of the label can close;
* :func:`markdown_literal_frame` for a table drawn by ``st.table``.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime
from typing import Any

from dpsurv_core.plain_numbers import (  # noqa: F401 (re-exported: the app (dpsurv_app) and tests read them from here)
    DASH,
    _missing,
    format_ratio,
    format_ratio_ci,
    p_value,
    plain_number,
)

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
MARKDOWN_SPECIAL = "\\`*_[](){}#+-.!<>|~$:"
_MARKDOWN = re.compile("([" + re.escape(MARKDOWN_SPECIAL) + "])")


def plain_label(value: object) -> str:
    """``value`` as text that plotly shows literally (no tag, link or entity of the label is interpreted)."""
    return "".join(_HTML.get(c, c) for c in str(value))


def markdown_literal(value: object) -> str:
    """``value`` as markdown that shows literally: markdown special characters backslash-escaped, line breaks as
    spaces (a label cannot start a heading, list, link, image, table or HTML tag). GitHub-flavoured Markdown also
    links bare addresses (``http://...``, ``www.``) whatever is escaped, so a zero-width space is put inside each."""
    text = " ".join(str(value).splitlines())
    text = _AUTOLINK.sub(lambda m: m.group(1) + "\u200b" + m.group(2) if m.group(1) else m.group(3) + "\u200b" + m.group(4), text)
    return _MARKDOWN.sub(r"\\\1", text)


_AUTOLINK = re.compile(r"(?i)(:)(//)|(?<![\w.])(www)(\.)")


def markdown_code(value: object) -> str:
    """``value`` as an inline code span that shows it literally whatever it holds (a command line naming an uploaded
    file or column, say): a label's own backtick cannot close the span, since the fence is one backtick longer than
    the longest run of backticks inside (CommonMark), with a space inside each fence when the text begins or ends with
    a backtick; line breaks become spaces."""
    text = " ".join(str(value).splitlines())
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def markdown_literal_frame(frame: Any) -> Any:
    """A copy of a pandas table whose text cells, index and column names show literally where a table renders
    Markdown (Streamlit's ``st.table``): a command's ``--grid 0:1100:20`` or an uploaded label's ``![x](url)`` is shown
    as typed, never read as Markdown. Numbers stay numbers."""
    def cell(x: object) -> object:
        return markdown_literal(x) if isinstance(x, str) else x

    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object or str(out[col].dtype) in ("string", "category"):
            out[col] = out[col].map(cell)
    out.index = out.index.map(cell)
    out.columns = out.columns.map(cell)
    return out


# ---------------------------------------------------------------------- numbers as clinicians write them
def percent(p: float | None, digits: int = 0) -> str:
    """A proportion as a percentage: ``percent(0.523) == "52%"``, ``percent(0.5234, 1) == "52.3%"``; a missing value
    is a dash. Values outside [0, 1] (a private estimate can be) are shown as they are, not clipped."""
    if _missing(p):
        return DASH
    return f"{100 * float(p):.{digits}f}%"  # type: ignore[arg-type]


def hazard_ratio_ci(hr: float, lower: float, upper: float, digits: int = 2, level: float = 0.95) -> str:
    """A hazard ratio with its interval as in a clinical paper: ``0.59 (95% CI 0.42 to 0.82)``. A missing bound
    shows as a dash; an infinite bound as ``inf``."""
    def fmt(x: float) -> str:
        if _missing(x):
            return DASH
        x = float(x)
        return "inf" if math.isinf(x) else f"{x:.{digits}f}"

    return f"{fmt(hr)} ({level * 100:g}% CI {fmt(lower)} to {fmt(upper)})"


def time_in(value: float | None, unit: str, from_unit: str | None = None, digits: int = 3) -> str:
    """A time as clinicians read it, converted from ``from_unit`` (default: already in ``unit``): ``588 days``,
    ``19.3 months``; infinite is ``not reached``, missing a dash. Whole numbers and values of 100 or more show no
    decimals; others ``digits`` significant digits (a month is 365.25/12 days, as everywhere in dpsurv)."""
    if _missing(value):
        return DASH
    x = float(value)  # type: ignore[arg-type]
    if math.isinf(x):
        return "not reached"
    if from_unit is not None and from_unit != unit:
        from dpsurv_core.data.summary import time_factor

        x *= time_factor(from_unit, unit)
    if abs(x) >= 100 or x.is_integer():
        return f"{x:,.0f} {unit}"
    return f"{x:.{digits}g} {unit}"


def percent_ci(p: float | None, lower: float | None, upper: float | None, digits: int = 0) -> str:
    """A survival probability with its interval, as clinicians write it: ``52% (45% to 59%)``."""
    return f"{percent(p, digits)} ({percent(lower, digits)} to {percent(upper, digits)})"


def time_ci(value: float | None, lower: float | None, upper: float | None, unit: str,
            from_unit: str | None = None) -> str:
    """A time (a median survival, say) with its interval in one unit: ``310 days (285 to 363)``; an infinite upper
    bound reads ``not reached``, as in R's print of a survfit."""
    def bare(x: float | None) -> str:
        return time_in(x, unit, from_unit).removesuffix(f" {unit}")

    return f"{time_in(value, unit, from_unit)} ({bare(lower)} to {bare(upper)})"


def timestamp(iso: str | None) -> str:
    """A ledger time (ISO 8601, UTC) as people read it: ``2026-11-23 16:25:04 UTC``; other text unchanged."""
    try:
        t = datetime.fromisoformat(str(iso))
    except (TypeError, ValueError):
        return "" if iso is None else str(iso)
    if t.tzinfo is not None:
        t = t.astimezone(UTC)
    return t.strftime("%Y-%m-%d %H:%M:%S UTC")
