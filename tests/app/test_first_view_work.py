"""Work a page's run does not need is not done: a log-rank table with no flipped row is drawn without pandas' Styler
(whose first use imports matplotlib), and a figure's PNG and SVG buttons share one frozen copy of it."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from dpsurv_app import curves_view, downloads


def test_a_table_without_flips_is_drawn_without_a_styler():
    same = pd.DataFrame({"Test": ["A vs B"], "Flip?": ["same conclusion"]})
    flipped = pd.DataFrame({"Test": ["A vs B", "A vs C"],
                            "Flip?": ["same conclusion", "FLIPPED: significant → not significant"]})
    assert curves_view.style_flips(same) is None
    painted = curves_view.style_flips(flipped)._compute().ctx  # the flipped row only is painted
    assert not any(painted.get((0, j)) for j in range(2)) and all(painted.get((1, j)) for j in range(2))


def test_the_png_and_svg_buttons_share_one_frozen_copy(monkeypatch):
    copies: list[go.Figure] = []
    real = downloads.marked

    def counting(fig: go.Figure, confidential: bool = False) -> go.Figure:
        copies.append(real(fig, confidential))
        return copies[-1]

    data: list = []
    monkeypatch.setattr(downloads, "marked", counting)
    monkeypatch.setattr(downloads, "static_export_problem", lambda: None)
    monkeypatch.setattr(downloads.st, "download_button", lambda *a, **k: data.append(k["data"]))
    monkeypatch.setattr(downloads.st, "session_state", {})
    fig = go.Figure(go.Scatter(x=[0, 1], y=[1, 0]))
    downloads.figure_downloads(fig, "curves", "k", confidential=True)
    assert len(copies) == 1 and len(data) == 2 and all(d.figure is copies[0] for d in data)
    assert any(a.text == downloads.CONFIDENTIAL_MARK for a in copies[0].layout.annotations)
    assert not fig.layout.annotations  # the page's figure is left as it is
