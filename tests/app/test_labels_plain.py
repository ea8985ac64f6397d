"""AppTest: an upload whose file name, column name and group labels carry markup shows them as plain text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.data.cohort import ColumnMap

ROOT = Path(__file__).resolve().parents[2]
APP_DIR = ROOT / "dpsurv_app"  # the pages are named as the app names them, next to app.py
LINK = '<a href="https://example.org/x">click</a>'
MD_LINK = "[x](https://example.org)"
LIVE_MARKDOWN = re.compile(r"(?<!\\)\]\((?!\s)|(?<!\\)<a\b|(?<!\\)!\[", re.I)  # a link, a tag, an image


def injected() -> session.DataChoice:
    rng = np.random.default_rng(5)
    n = 150
    frame = pd.DataFrame({"t": np.round(rng.exponential(300, n) + 1, 1), "e": rng.integers(0, 2, n),
                          MD_LINK: rng.choice([LINK, MD_LINK], n), "![i](https://example.org/i.png)": rng.normal(size=n)})
    return session.DataChoice(MD_LINK, frame, ColumnMap(time="t", event="e", group=MD_LINK), "days", False,
                              horizon=900.0)


def texts(at: AppTest) -> list[str]:
    """The markdown of the text elements, code spans (which markdown shows literally) left out."""
    shown = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "error", "success")
             for e in getattr(at, kind)]
    shown += [str(w.label) for kind in ("checkbox", "multiselect", "number_input", "selectbox", "radio")
              for w in getattr(at, kind)]  # widget labels render markdown links and images too
    return [re.sub(r"`[^`]*`", "", t) for t in shown]


@pytest.mark.parametrize("page", ["app.py", "pages/1_Data.py", "pages/2_Survival_curves.py",
                                  "pages/3_Group_comparison.py", "pages/8_Ledger_and_report.py"])
def test_labels_reach_markdown_and_charts_as_plain_text(page):
    at = AppTest.from_file(str(APP_DIR / page), default_timeout=60)
    at.session_state["data_choice"] = injected()
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    live = [t for t in texts(at) if LIVE_MARKDOWN.search(t)]
    assert not live, live
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        names = [str(tr.get("name", "")) + str(tr.get("hovertemplate", "")) for tr in spec.get("data", [])]
        assert not any("<a" in n for n in names), names
