"""Group comparison page: the private p-values are calibrated for the noise and sit beside the non-private ones,
on every event time and on the same public grid (the flips compare like with like)."""

from __future__ import annotations

import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.app.tables import shown

PAGE = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "3_Group_comparison.py")


def test_preview_shows_calibrated_private_p_beside_the_nonprivate_ones():
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    main, df = [t for t in (shown(x.value) for x in at.table) if t.columns[0] == "Test"][:2]
    # the table shown first: at most six columns, the hazard ratio with its interval among them; every other column
    # (statistics, the test on the public grid, the value needed) in the expander's table
    assert len(main.columns) <= 6 and "HR (95% CI) preview" in main.columns, list(main.columns)
    assert re.fullmatch(r"[0-9.]+ \(95% CI [0-9.]+ to [0-9.]+\)", main.loc[0, "HR (95% CI) preview"])
    assert re.fullmatch(r"[0-9.]+ \(95% CI [0-9.]+ to [0-9.]+\)", df.loc[0, "HR (95% CI) non-private"])
    for col in ("p non-private", "p non-private, public grid", "p preview (calibrated)",
                "Chi² needed at 5%"):
        assert col in df.columns, list(df.columns)
    assert df.loc[0, "p non-private"] == "0.0013"
    # laplace-counts tests the noise-adjusted statistic, whose 95% point has a scale of its own (not chi-square's)
    assert "Chi² preview (noise-adjusted)" in df.columns and float(df.loc[0, "Chi² needed at 5%"]) > 0
    assert any("Monte Carlo test" in c.value for c in at.caption)
    # like with like: the flip column judges the private test against the exact test on the same grid
    grid_sig = float(df.loc[0, "p non-private, public grid"]) < 0.05
    assert df.loc[0, "At 0.05 non-private, public grid"] == ("significant" if grid_sig else "not significant")
    assert [r for r in LedgerStore().records() if r.kind == RELEASE] == []


def test_rounding_says_what_it_does_to_the_number_at_risk():
    """Rounding to base 5: the number at risk rebuilt from rounded counts is off late in follow-up, and the page says
    so under its table (as the Survival curves page does)."""
    at = AppTest.from_file(PAGE, default_timeout=30)
    at.run()
    at.selectbox(key="gc_mechanism").set_value("round").run()
    assert not at.exception, [e.message for e in at.exception]
    assert any("rebuilt from rounded counts" in c.value for c in at.caption)
    df = next(t for t in (shown(x.value) for x in at.table) if t.columns[0] == "Test")
    assert any(c.endswith("(calibrated)") for c in df.columns)
