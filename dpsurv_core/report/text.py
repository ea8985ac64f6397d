"""Data-derived labels as plain text.

Group labels, column names and data set or file names come from the data holder's file. Plotly renders a subset of
HTML in trace names, legends, hover text and titles (``<a href=...>`` becomes a live link, ``<b>`` bold ...), and
Streamlit's markdown elements render markdown links, images and HTML-like syntax. These helpers make such a label
show literally, as the text it is:

* :func:`plain_label` for plotly: ``&``, ``<`` and ``>`` as HTML entities (plotly shows them as the characters);
* :func:`markdown_literal` for ``st.markdown`` / ``st.caption`` / ``st.info`` ...: every markdown special character
  backslash-escaped (and ``<``/``>`` too, so no HTML tag can form).
"""

from __future__ import annotations

import re

_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
MARKDOWN_SPECIAL = "\\`*_[](){}#+-.!<>|~$:"
_MARKDOWN = re.compile("([" + re.escape(MARKDOWN_SPECIAL) + "])")


def plain_label(value: object) -> str:
    """``value`` as text that plotly shows literally (no tag, link or entity of the label is interpreted)."""
    return "".join(_HTML.get(c, c) for c in str(value))


def markdown_literal(value: object) -> str:
    """``value`` as markdown that shows literally: markdown special characters backslash-escaped, line breaks as
    spaces (a label cannot start a heading, list, link, image, table or HTML tag)."""
    text = " ".join(str(value).splitlines())
    return _MARKDOWN.sub(r"\\\1", text)
