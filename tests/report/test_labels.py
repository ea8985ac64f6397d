"""Data-derived labels (group labels, column names, file names) are plain text in figures, markdown and reports."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.cli.km import released_numbers
from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.data.cohort import ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import LedgerEntry, LedgerStore, PrivacyCost
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report.figures import curves_figure, outputs_figure
from dpsurv_core.report.html import ledger_report
from dpsurv_core.report.text import markdown_literal, plain_label

LINK = '<a href="https://example.org/x">click</a>'
MD_LINK = "[x](https://example.org)"
LIVE_HTML = re.compile(r"<a\b|<b>|<img", re.I)


def injected_cohort():
    rng = np.random.default_rng(3)
    n = 120
    frame = pd.DataFrame({"t": np.round(rng.exponential(300, n) + 1, 1), "e": rng.integers(0, 2, n),
                          "arm": rng.choice([LINK, MD_LINK], n)})
    return build_cohort(frame, ColumnMap(time="t", event="e", group="arm"), name=MD_LINK)


def test_plain_label_escapes_html_markup():
    assert plain_label(LINK) == '&lt;a href="https://example.org/x"&gt;click&lt;/a&gt;'
    assert plain_label("a & <b>b</b>") == "a &amp; &lt;b&gt;b&lt;/b&gt;"
    assert plain_label("arm = 1") == "arm = 1"


@pytest.mark.parametrize("label", [MD_LINK, "![img](https://example.org/i.png)", LINK, "# heading", "*bold*",
                                   "a | b", "`code`", "www.example.org", "line\nbreak"])
def test_markdown_literal_leaves_no_live_markup(label):
    text = markdown_literal(label)
    assert not re.search(r"(?<!\\)[\[\]()<>*`#|]", text)  # every special character escaped
    assert "](" not in text and "www.example" not in text and "\n" not in text
    assert re.sub(r"\\(.)", r"\1", text).replace("\u200b", "") == label.replace("\n", " ")  # shows the label, literally


def test_figures_show_injected_group_labels_as_text():
    cohort = injected_cohort()
    public = PublicParameters.derive(cohort)
    private = LaplaceCounts(1.0).compute(cohort, public, SimulationNoise(1))
    fig = curves_figure({"private": private.curves, "non-private": NonPrivate().compute(cohort, public).curves},
                        "days", title=LINK)
    names = [tr.name for tr in fig.data] + [tr.hovertemplate or "" for tr in fig.data] + [fig.layout.title.text]
    assert not any(LIVE_HTML.search(n) for n in names), names
    assert any("&lt;a href=" in n for n in names)
    out = outputs_figure({"groups": [LINK, MD_LINK], "time": [1.0, 2.0], "survival": [[0.9, 0.8], [0.7, 0.6]]})
    assert not any(LIVE_HTML.search(tr.name) for tr in out.data)


def test_html_report_holds_no_live_link_from_a_label(tmp_path):
    cohort = injected_cohort()
    public = PublicParameters.derive(cohort)
    mech = LaplaceCounts(1.0)
    release = mech.compute(cohort, public, SimulationNoise(1))
    store = LedgerStore(tmp_path / "l.sqlite3")
    fp = "e" * 64
    with store.transaction(fp) as tx:
        tx.charge(LedgerEntry("laplace-counts", "survival curves", LINK, {}, PrivacyCost(1.0)),
                  released_numbers(release))
    records = store.release_records(fp)
    for kind in ("release", "review"):
        html = ledger_report(LINK, LINK, store.ledger(fp), records, kind=kind,
                             cohort=cohort if kind == "review" else None, time_unit="days")
        assert '<a href="https://example.org' not in html
        assert r'\u003ca href=\"https:\u002f\u002fexample.org' not in html  # nor in a figure's JSON
        assert "&lt;a href=" in html  # the label is shown, as text
