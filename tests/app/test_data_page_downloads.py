"""Downloads: figures as PNG and SVG through kaleido (or a disabled button saying why), tables as formula-safe CSV;
the Okabe-Ito palette."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import downloads, palette
from dpsurv_app.data_view import summary_display


def test_table_csv_is_formula_safe():
    table = pd.DataFrame({"group": ["=HYPERLINK(\"http://x\")", "Male (1)"], "Subjects": [3, 4]})
    text = downloads.table_csv(table)
    assert text.splitlines()[1].startswith("\"'=HYPERLINK") and "Male (1),4" in text


def test_summary_table_csv_keeps_the_labels():
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.labels import bundled
    from dpsurv_core.data.summary import cohort_summary

    shown = summary_display(cohort_summary(load_bundled("lung", group="sex")), "days", "sex", False, bundled("lung"))
    lines = downloads.table_csv(shown).splitlines()
    assert lines[0].startswith("sex,Subjects,Events,Censored") and lines[2].startswith("Male (1),138,")


def test_file_stem():
    assert downloads.file_stem("Survival: lung / sex") == "survival-lung-sex"
    assert downloads.file_stem("../../etc") == "etc" and downloads.file_stem("***") == "dpsurv"


def _buttons() -> None:
    import pandas as pd
    import plotly.graph_objects as go

    from dpsurv_app.downloads import figure_downloads, table_download

    figure_downloads(go.Figure(go.Scatter(x=[1, 2], y=[1, 0])), "km lung", key="fig")
    table_download(pd.DataFrame({"a": [1]}), "t", key="tab")


def _page_pieces() -> None:
    import pandas as pd
    import plotly.graph_objects as go

    from dpsurv_app.downloads import show_figure, show_table

    show_figure(go.Figure(go.Scatter(x=[1, 2], y=[1, 0])), "curve", key="km")
    show_table(pd.DataFrame({"group": ["=1+1"], "n": [3]}), "numbers", key="tbl", hide_index=True)


def test_show_figure_and_table_draw_with_their_buttons(monkeypatch):
    monkeypatch.setattr(downloads, "static_export_problem", lambda: None)
    at = AppTest.from_function(_page_pieces)
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1 and at.dataframe[0].value["n"].tolist() == [3]
    assert [b.label for b in at.get("download_button")] == ["Figure as PNG", "Figure as SVG", "Table as CSV"]


def test_figure_buttons_are_drawn_without_exporting(monkeypatch):
    monkeypatch.setattr(downloads, "static_export_problem", lambda: None)
    monkeypatch.setattr(downloads, "figure_bytes", lambda *a: pytest.fail("exported while drawing the page"))
    at = AppTest.from_function(_buttons)
    at.run()
    assert not at.exception
    assert [b.label for b in at.get("download_button")] == ["Figure as PNG", "Figure as SVG", "Table as CSV"]
    assert not any(b.proto.disabled for b in at.get("download_button"))


def test_figure_buttons_say_why_when_static_export_cannot_run(monkeypatch):
    import sys

    downloads.static_export_problem.cache_clear()
    monkeypatch.setitem(sys.modules, "kaleido", None)  # import kaleido now fails
    try:
        problem = downloads.static_export_problem()
    finally:
        downloads.static_export_problem.cache_clear()
    assert problem is not None and "pip install kaleido" in problem
    monkeypatch.setattr(downloads, "static_export_problem", lambda: problem)
    at = AppTest.from_function(_buttons)
    at.run()
    assert not at.exception
    figs = [b for b in at.get("download_button") if b.label.startswith("Figure")]
    assert len(figs) == 2 and all(b.proto.disabled for b in figs)
    assert any("pip install kaleido" in c.value for c in at.caption)


@pytest.mark.slow
def test_png_and_svg_are_real_images():
    if downloads.static_export_problem() is not None:
        pytest.skip(downloads.static_export_problem())
    fig = go.Figure(go.Scatter(x=[0, 1, 2], y=[1.0, 0.7, 0.4], name="Male (1)", showlegend=True))
    png = downloads.figure_bytes(fig, "png")
    svg = downloads.figure_bytes(fig, "svg")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and int.from_bytes(png[16:20], "big") == 2 * downloads.EXPORT_SIZE[0]
    assert svg.lstrip().startswith(b"<svg") and b"Male (1)" in svg
    with pytest.raises(ValueError):
        downloads.figure_bytes(fig, "gif")


def test_okabe_ito_palette():
    assert palette.OKABE_ITO[1:4] == ("#E69F00", "#56B4E9", "#009E73")
    assert set(palette.COLOURS) <= set(palette.OKABE_ITO) and palette.BLACK not in palette.COLOURS
    assert palette.colour(0) == palette.colour(len(palette.COLOURS)) == palette.BLUE
    assert palette.rgba("#0072B2", 0.2) == "rgba(0,114,178,0.2)"
    import plotly.io as pio

    before = pio.templates.default
    try:
        palette.register_default()
        assert list(go.Figure().layout.template.layout.colorway) == list(palette.COLOURS)
    finally:
        pio.templates.default = before
