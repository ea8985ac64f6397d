"""Uploaded data stay in the session that uploaded them.

``st.cache_data`` / ``st.cache_resource`` are process-wide: a value cached there is served to every other session of
the server. Pages may use them for bundled (public) data sets only; anything derived from an upload is cached in the
session's ``st.session_state``. Two AppTest sessions: the first analyses an upload carrying a marker value; no
process-wide cached function may run (or store a value) for it, and the second session, on bundled data, renders
nothing of it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import streamlit as st
from streamlit.runtime.caching import cache_utils
from streamlit.testing.v1 import AppTest

from dpsurv_app import session
from dpsurv_core.data.cohort import ColumnMap

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"curves": "2_Survival_curves.py", "weibull": "4_Weibull_parameters.py", "regression": "5_Regression.py",
         "tradeoff": "7_Trade-off_explorer.py"}
MARKER = "zq7731marker"
SETTINGS = {"weibull": {"wb_trials": 10}, "regression": {"rg_trials": 10, "rg_covs": [f"{MARKER}_x"]},
            "tradeoff": {"to_trials": 50}}


def upload() -> session.DataChoice:
    rng = np.random.default_rng(7731)
    n = 160
    frame = pd.DataFrame({"t": np.round(rng.weibull(1.3, n) * 400 + 1, 1), "e": rng.integers(0, 2, n),
                          "arm": rng.choice([f"{MARKER}-A", f"{MARKER}-B"], n), f"{MARKER}_x": rng.normal(60, 8, n)})
    mapping = ColumnMap(time="t", event="e", group="arm", covariates=(f"{MARKER}_x",))
    return session.DataChoice(f"{MARKER}.csv", frame, mapping, "days", False, horizon=800.0)


@pytest.fixture
def shared_calls(monkeypatch):
    """Every call of a process-wide cached function (st.cache_data or st.cache_resource), by function name."""
    calls: list[str] = []
    original = cache_utils.CachedFunc._get_or_create_cached_value

    def spy(self, func_args, func_kwargs, *rest, **kw):
        calls.append(self._info.func.__qualname__)
        return original(self, func_args, func_kwargs, *rest, **kw)

    monkeypatch.setattr(cache_utils.CachedFunc, "_get_or_create_cached_value", spy)
    st.cache_data.clear()
    st.cache_resource.clear()
    yield calls
    st.cache_data.clear()
    st.cache_resource.clear()


def run(page: str, **state) -> AppTest:
    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / PAGES[page]), default_timeout=180)
    for k, v in {**SETTINGS.get(page, {}), **state}.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def rendered(at: AppTest) -> str:
    """Everything the session shows: text elements, tables, charts (as their JSON)."""
    parts = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "error", "metric", "title",
                                       "subheader", "header") for e in getattr(at, kind)]
    parts += [e.value.to_csv() for e in at.dataframe]
    parts += [str(e.proto) for e in at.get("plotly_chart")]
    return "\n".join(parts)


def test_upload_results_stay_in_the_session(shared_calls):
    for page in PAGES:
        first = run(page, data_choice=upload())
        assert page == "tradeoff" or MARKER in rendered(first), page  # the upload was analysed (labels shown)
        assert shared_calls == [], f"{page}: process-wide cache used for an upload: {shared_calls}"
        assert page == "curves" or first.session_state["_session_cache"]
        assert page != "tradeoff" or any(k[0] == "tradeoff-context" for k in first.session_state["_session_cache"]
                                         if isinstance(k, tuple))  # the study ran on the upload, in the session

    for page in PAGES:
        second = run(page, data_choice=session.bundled_choice("lung"),
                     **({"rg_covs": ["age"]} if page == "regression" else {}))
        assert MARKER not in rendered(second), page
        assert "_session_cache" not in second.session_state or not any(
            MARKER in repr(k) for k in second.session_state["_session_cache"])
    assert shared_calls  # bundled data may use the process-wide caches
