"""The Data page's first view: what it defers (the server-data helpers) and what it caches (a bundled data set's
summary, process-wide, keyed by the data set, the column map and the units), checked against the summary computed
afresh so a stale cache entry cannot hide."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd

from dpsurv_app import session
from dpsurv_app.data_view import summary_display
from dpsurv_core.data.summary import cohort_summary
from tests.app.tables import shown
from tests.app.test_app_shell import APP, ROOT, rerun, start  # the app's AppTest start, shared with the shell tests


def fresh_summary(choice: session.DataChoice) -> pd.DataFrame:
    """The summary table as the page draws it, computed now from the session's choice (no cache)."""
    from dpsurv_core.data.cohort import validate

    cohort, _ = validate(choice.frame, choice.mapping)
    cohort.name, cohort.time_unit = choice.name, choice.time_unit
    labels = choice_labels(choice)
    return summary_display(cohort_summary(cohort), choice.time_unit, choice.mapping.group, cohort.subject is not None,
                           labels)


def choice_labels(choice: session.DataChoice):
    from dpsurv_core.data import datasets

    return datasets.info(choice.name).labels


def test_first_view_does_not_import_the_server_data_helpers():
    """The bundled first view needs neither DuckDB's engine layer nor dpsurv_app.server_data (imported on the server branch)."""
    code = ("import sys\n"
            f"sys.path.insert(0, {str(ROOT)!r})\n"
            "from streamlit.testing.v1 import AppTest\n"
            f"at = AppTest.from_file({APP!r}, default_timeout=90)\n"
            "at.run()\n"
            "assert not at.exception, [e.value for e in at.exception]\n"
            "assert at.table[0].value.iloc[0].tolist()[:3] == ['All subjects', '228', '165']\n"
            "print(sorted(m for m in ('dpsurv_app.server_data', 'dpsurv_core.engines', 'duckdb') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_cached_summary_follows_the_unit_and_the_column_map_across_sessions():
    at = start()
    days = shown(at.table[0].value)
    pd.testing.assert_frame_equal(days, fresh_summary(at.session_state["data_choice"]))
    assert days["Median follow-up (reverse KM)"].tolist() == ["588 days", "840 days", "529 days"]

    at.selectbox(key="b-lung-unit").set_value("months")
    rerun(at)
    months = shown(at.table[0].value)
    pd.testing.assert_frame_equal(months, fresh_summary(at.session_state["data_choice"]))
    assert months["Longest follow-up"].tolist()[0] == "33.6 months"  # 1022 days

    at.selectbox(key="b-lung-group").set_value("(none)")
    rerun(at)
    ungrouped = shown(at.table[0].value)
    assert ungrouped.iloc[:, 0].tolist() == ["All subjects"]
    pd.testing.assert_frame_equal(ungrouped, fresh_summary(at.session_state["data_choice"]))

    # another session in the same server process: its own unit and map, whatever the first session cached
    other = start()
    pd.testing.assert_frame_equal(shown(other.table[0].value), days)
    other.selectbox(key="b-lung-group").set_value("ph.ecog")
    rerun(other)
    by_ecog = shown(other.table[0].value)
    pd.testing.assert_frame_equal(by_ecog, fresh_summary(other.session_state["data_choice"]))
    from dpsurv_core.data.cohort import validate

    ecog = validate(other.session_state["data_choice"].frame, other.session_state["data_choice"].mapping)[0]
    assert by_ecog.iloc[0, 0] == "All subjects" and len(by_ecog) == 1 + len(ecog.groups) >= 4  # one row per score
