"""The Weibull parameters page through Streamlit's AppTest, with real values."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.data.cohort import ColumnMap, load_bundled
from dpsurv_core.weibull.model import sample_from_cohort, weibull_mle
from ui.session import DataChoice, bundled_choice

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "4_Weibull_parameters.py")


def run(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=90)
    state.setdefault("wb_trials", 50)
    for k, v in state.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def table(at: AppTest) -> pd.DataFrame:
    return at.dataframe[0].value


def test_default_page_on_lung():
    at = run()
    t = table(at)
    mle = weibull_mle(sample_from_cohort(load_bundled("lung"), 1100.0))
    assert len(t) == 3 and t["Estimate"].iloc[2].startswith("LSP + TLL")
    assert t["Shape p"].iloc[1] == pytest.approx(mle.shape, rel=1e-12)
    assert t["Shape p"].iloc[0] == pytest.approx(mle.shape, rel=1e-6)  # lifelines
    assert t["Scale (days)"].iloc[1] == pytest.approx(mle.scale, rel=1e-12)
    p, lam = t["Shape p"].iloc[2], t["Scale (days)"].iloc[2]
    assert 0 <= p <= 10 and np.isfinite(lam) and lam > 0
    assert t["Scale / T_max"].iloc[2] == pytest.approx(lam / 1100.0)
    led = at.session_state["ledger"]
    assert led.spent() == pytest.approx(1.0) and len(led.entries) == 1
    assert led.entries[0].mechanism == "lsp-tll" and led.entries[0].analysis == "weibull"
    text = " ".join(m.value for m in at.markdown)
    assert "protecting the subject, neighbours: add/remove one subject" in text
    assert any("What am I looking at?" in e.label for e in at.expander)
    assert len(at.get("plotly_chart")) == 3
    # the study: one row per mechanism and epsilon, not charged
    study = at.dataframe[1].value
    assert set(study["mechanism"].str[:3]) == {"LSP", "Lap", "Sam"} and (study["trials"] == 50).all()
    lsp = study[study["mechanism"].str.startswith("LSP")].sort_values("epsilon")
    assert lsp["mdae_shape"].iloc[-1] < lsp["mdae_shape"].iloc[0]
    # a rerun shows the same release at no extra cost
    at.run()
    assert not at.exception
    assert at.session_state["ledger"].spent() == pytest.approx(1.0)
    assert table(at)["Shape p"].iloc[2] == p


def test_all_mechanisms_are_each_charged():
    at = run(wb_mechanisms=["lsp-tll", "laplace", "saa"], wb_epsilon=0.4)
    t = table(at)
    assert len(t) == 5
    led = at.session_state["ledger"]
    assert led.spent() == pytest.approx(1.2) and {e.mechanism for e in led.entries} == {"lsp-tll", "laplace", "saa"}
    warnings = " ".join(w.value for w in at.warning)
    # SAA's number of blocks derived from n sets its noise scale: flagged as not DP
    assert "Not differentially private (blocks)" in warnings


def test_refused_past_the_cap():
    at = run(budget_cap=0.5)
    assert at.session_state["ledger"].spent() == 0
    assert any("refused" in w.value for w in at.warning)
    assert len(table(at)) == 2  # only the non-private rows


def test_flchain_with_declared_horizon():
    choice = bundled_choice("flchain")
    choice.horizon = 5300.0
    at = run(data_choice=choice, wb_trials=50, wb_mechanisms=["lsp-tll"])
    t = table(at)
    assert t["Shape p"].iloc[1] == pytest.approx(0.96160775, abs=1e-7)
    assert abs(t["Shape p"].iloc[2] - 0.9616) < 0.3
    assert not any("horizon" in i.value for i in at.info)  # declared: no disclosure


def test_bad_data_gives_a_sentence():
    frame = pd.DataFrame({"t": [5.0] * 12, "e": [1] * 12})
    choice = DataChoice("equal", frame, ColumnMap(time="t", event="e"), "days", False, horizon=10.0)
    at = run(data_choice=choice)
    assert at.error and "same" in at.error[0].value
