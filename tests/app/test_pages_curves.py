"""AppTest of the Survival curves and Group comparison pages (run from the repository root)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.curves.release import available
from ui import session

ROOT = Path(__file__).resolve().parents[2]
CURVES = str(ROOT / "pages" / "2_Survival_curves.py")
GROUPS = str(ROOT / "pages" / "3_Group_comparison.py")


def run(path: str, dataset: str | None = None, cap: float | None = None) -> AppTest:
    at = AppTest.from_file(path, default_timeout=30)
    if dataset is not None:
        at.session_state["data_choice"] = session.bundled_choice(dataset)
    if cap is not None:
        at.session_state["budget_cap"] = cap
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def table(at: AppTest, first_column: str, value: str | None = None) -> pd.DataFrame:
    """The first st.table whose first column (or index) is ``first_column``."""
    for t in at.table:
        df = t.value
        if df.columns[0] == first_column or (value is not None and value in df.index):
            return df
    raise AssertionError(f"no table starting with {first_column!r}: {[t.value.columns[0] for t in at.table]}")


def private_numbers(at: AppTest) -> list[str]:
    """The private at-risk row and the private landmark column, as shown."""
    risk = table(at, "0", "All patients, private")
    return risk.loc["All patients, private"].tolist() + table(at, "Group").iloc[:, -1].tolist()


def ledger_entries(at: AppTest) -> int:
    return len(at.session_state["ledger"].entries)


def test_default_lung_page_shows_private_and_exact_numbers():
    at = run(CURVES)
    med = table(at, "Group")
    assert med.loc[0, "Non-private (days)"] == "310 (284 to 361)"
    assert med.loc[0, "Private (days)"] != ""
    risk = table(at, "0", "All patients, non-private")
    assert risk.loc["All patients, non-private", "0"] == "228"
    assert risk.loc["All patients, non-private", "110"] == "191"
    landmark = [t.value for t in at.table if "Time" in t.value.columns][0]
    assert landmark.loc[0, "Time"] == "1 year (365 days)"
    assert landmark.loc[0, "Non-private (95% CI)"] == "40.9% (33.9% to 47.8%)"
    rmst = [t.value for t in at.table if "Difference" in t.value.columns][0]
    assert rmst.loc[0, "Non-private (days)"] == "380"
    text = " ".join(m.value for m in at.markdown)
    assert "epsilon = 1, protecting the subject, neighbours: add/remove one subject" in text
    assert "Gondara" in text  # the explainer cites paper 003
    assert "horizon 1100 was read off the data" in text  # disclosure in view
    assert ledger_entries(at) == 1


def test_epsilon_change_redraws_and_charges_once_per_release():
    at = run(CURVES)
    before = private_numbers(at)
    at.run()  # a rerun shows the same release and charges nothing
    assert private_numbers(at) == before and ledger_entries(at) == 1
    at.select_slider(key="sc_epsilon").set_value(0.2).run()
    after = private_numbers(at)
    assert after != before and ledger_entries(at) == 2
    assert at.session_state["ledger"].spent() == pytest.approx(1.2)
    at.select_slider(key="sc_epsilon").set_value(1.0).run()  # back to a released input: same numbers, no charge
    assert private_numbers(at) == before and ledger_entries(at) == 2
    at.button(key="sc_new").click().run()  # a new release draws again and charges again
    assert ledger_entries(at) == 3


def test_budget_refusal_shows_a_sentence_and_no_private_numbers():
    at = run(CURVES, cap=0.5)
    assert any("only 0.5 of the cap 0.5 is left" in e.value for e in at.error)
    assert "Private (days)" not in table(at, "Group").columns
    assert ledger_entries(at) == 0


@pytest.mark.skipif("time-indexed" not in available(), reason="time-indexed is not installed")
def test_time_indexed_releases_no_counts():
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value("time-indexed").run()
    assert not at.exception
    risk = table(at, "0", "All patients, private")
    assert set(risk.loc["All patients, private"]) == {"not released"}
    assert "no CI" in table(at, "Group").loc[0, "Private (days)"]
    assert at.session_state["ledger"].entries[-1].mechanism == "time-indexed"
    at.radio(key="sc_ti_mode").set_value("as published").run()  # base e = 0.008 on 20 points, alpha 0.5
    assert at.session_state["ledger"].entries[-1].cost.epsilon == pytest.approx(0.008 * 20 * (1 + 0.5 * 21 / 2))
    assert any("epsilon = 1, protecting the subject" in m.value for m in at.markdown)
    at.number_input(key="sc_ti_tau1").set_value(1.0).run()
    at.number_input(key="sc_ti_tau0").set_value(0.5).run()  # tau start below tau end: one sentence, no traceback
    assert not at.exception and any("tau" in e.value for e in at.error)


@pytest.mark.parametrize("name", [n for n in ("adaptive-km", "rrr") if n in available()])
def test_other_mechanisms_render(name):
    at = run(CURVES)
    at.selectbox(key="sc_mechanism").set_value(name).run()
    assert not at.exception
    if name == "rrr":
        text = " ".join(m.value for m in at.markdown)
        assert "protects the group label only" in text.lower()
        assert table(at, "Group")["Group"].tolist() == ["sex = 1", "sex = 2"]


def test_cumulative_incidence_on_pbc():
    at = run(CURVES, dataset="pbc")
    at.radio(key="sc_estimand").set_value("cumulative incidence").run()
    assert not at.exception
    landmark = [t.value for t in at.table if "Time" in t.value.columns][0]
    assert {"All patients: transplant", "All patients: death"} <= set(landmark["Group"])


def test_group_page_lung_log_rank():
    at = run(GROUPS)
    lr = table(at, "Test")
    assert lr.loc[0, "Test"] == "sex = 1 vs sex = 2"
    assert lr.loc[0, "Chi² non-private"] == "10.33"  # paper 003 Table 3, "No privacy": 10.3
    assert lr.loc[0, "p non-private"] == "0.0013"
    assert lr.loc[0, "Flip?"] in {"same conclusion", "FLIPPED: significant → not significant"}
    assert ledger_entries(at) == 1
    if "rrr" in available():
        at.selectbox(key="gc_mechanism").set_value("rrr").run()
        assert not at.exception
        assert len([t for t in at.table if t.value.columns[0] == "Test"]) == 2  # raw and de-biased
        assert any("group label only" in m.value for m in at.markdown)
    if "time-indexed" in available():
        at.selectbox(key="gc_mechanism").set_value("time-indexed").run()
        assert any("not available from a time-indexed release" in w.value for w in at.warning)


def test_group_page_without_a_group_explains_and_offers_a_numeric_split():
    at = run(GROUPS, dataset="stanford2")
    assert any("No group column is mapped" in i.value for i in at.info)
    assert not at.table
    at.selectbox(key="gc_split_col").set_value("age").run()
    at.number_input(key="gc_split_cut").set_value(44.0).run()
    assert not at.exception
    lr = table(at, "Test")
    assert lr.loc[0, "Test"] == "age <= 44 vs age > 44"
    assert lr.loc[0, "Chi² non-private"] == "6.58"  # paper 003 Table 3: stanford2 by age, 6.6
