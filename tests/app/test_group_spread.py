"""Group comparison page: on request, the spread of the private log-rank p-value and hazard ratio over 20 preview
draws (the page's own preview, then the draws "Another draw" shows), each read as the page reads its preview; free,
recorded nowhere, never exported."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from streamlit.testing.v1 import AppTest

from tests.app.apptest import ok, releases
from tests.app.tables import shown

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "3_Group_comparison.py")
SPREAD = "p (10th to 90th percentile)"


def tables(at: AppTest, first: str) -> list[pd.DataFrame]:
    """The st.tables whose first column is ``first`` (text unescaped, as the page shows it)."""
    return [df for df in (shown(t.value) for t in at.table) if df.columns[0] == first]


def preview_p_and_hr(at: AppTest) -> tuple[str, str]:
    """The page's own preview p-value and hazard ratio (the first row of the log-rank table shown first)."""
    main = tables(at, "Test")[0]
    return main.loc[0, "p preview (calibrated)"], main.loc[0, "HR (95% CI) preview"].split(" (")[0]


def p_number(text: str) -> float:
    return 0.0005 if text.startswith("<") else float(text)


def test_the_spread_of_twenty_preview_draws_of_p_and_hazard_ratio_on_request():
    at = ok(AppTest.from_file(PAGE, default_timeout=120))
    assert not any(SPREAD in df.columns for df in tables(at, "Test"))  # drawn only on request
    p0, hr0 = preview_p_and_hr(at)
    buttons = len(at.get("download_button"))
    at.button(key="spread-logrank").click()
    ok(at)
    (spread,) = [df for df in tables(at, "Test") if SPREAD in df.columns]
    (draws,) = tables(at, "Draw")
    assert list(draws["Draw"].astype(int)) == list(range(1, 21))
    assert spread.loc[0, "Test"] == "Male vs Female"  # lung's default groups by sex, named by their labels
    # draw 1 is the page's own preview, read the same way: the same calibrated p and hazard ratio
    assert (draws.loc[0, "p Male vs Female"], draws.loc[0, "HR Male vs Female"]) == (p0, hr0)
    # the spread is of those 20 draws: the median, the significance count and the hazard ratios agree with them
    p = [p_number(v) for v in draws["p Male vs Female"]]
    assert len(set(p)) > 5  # each draw has its own noise
    sure = sum(v < 0.05 and t != "0.05" for v, t in zip(p, draws["p Male vs Female"], strict=True))
    said = int(spread.loc[0, "Significant at 0.05"].split(" of ")[0])
    assert sure <= said <= sure + list(draws["p Male vs Female"]).count("0.05")
    assert spread.loc[0, "Significant at 0.05"].endswith("of 20 draws")
    median = p_number(spread.loc[0, "p median"])
    assert abs(median - float(np.median(p))) <= 0.06 * max(median, 0.01) + 0.002
    hr = np.array([float(v) for v in draws["HR Male vs Female"]])
    text = spread.loc[0, "HR (10th to 90th percentile, median)"]
    lo, hi = (float(x) for x in text.split(" (")[0].split(" to "))
    assert lo <= float(np.median(hr)) <= hi and 0.2 < float(np.median(hr)) < 1.0  # lung: women's HR about 0.6
    assert releases() == []  # free: nothing charged
    # never exported: no download button beside the spread (the page's own tables keep theirs)
    assert len(at.get("download_button")) == buttons

    # the next preview ("Another draw") is the spread's draw 2
    at.button(key="another-draw-logrank").click()
    ok(at)
    assert preview_p_and_hr(at) == (draws.loc[1, "p Male vs Female"], draws.loc[1, "HR Male vs Female"])
    # kept for the plan: still shown without a click, the same numbers
    (again,) = tables(at, "Draw")
    assert again.equals(draws)


def test_another_plan_is_drawn_twenty_times_only_on_request_again():
    at = ok(AppTest.from_file(PAGE, default_timeout=120))
    at.button(key="spread-logrank").click()
    ok(at)
    (first,) = tables(at, "Draw")
    at.select_slider(key="gc_epsilon").set_value(0.5)
    ok(at)
    assert not tables(at, "Draw")  # a new plan: a redraw stays quick until asked
    at.button(key="spread-logrank").click()
    ok(at)
    (second,) = tables(at, "Draw")
    assert not second.equals(first)
    assert releases() == []
