"""The Data page's third source: a Parquet file in a folder the server shares (DPSURV_SERVER_DATA), checked and
counted in place by DuckDB, then analysed by the other pages (issue 14, the app picker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_core.data import datasets

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
pytest.importorskip("duckdb")


def run(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


@pytest.fixture
def shared(tmp_path, monkeypatch, ledger_path):
    folder = tmp_path / "registry"
    folder.mkdir()
    datasets.load("lung").to_parquet(folder / "lung_registry.parquet", index=False)
    monkeypatch.setenv("DPSURV_SERVER_DATA", str(folder))
    return folder


def text(at: AppTest) -> str:
    return " ".join([m.value for m in at.markdown] + [c.value for c in at.caption] + [i.value for i in at.info])


def test_a_parquet_file_on_the_server_is_counted_in_place_then_analysed(shared):
    at = run(AppTest.from_file(APP, default_timeout=90))
    at.radio(key="data_source").set_value("A file on the server")
    run(at)
    (picker,) = [s for s in at.selectbox if s.key == "server_data_file"]
    assert [str(o) for o in picker.options] == ["registry/lung_registry.parquet"]
    picker.set_value(shared / "lung_registry.parquet")
    run(at)
    # columns come from DuckDB; the roles are guessed by name and content
    name = str(shared / "lung_registry.parquet")
    assert at.selectbox(key=f"server_time-{name}").value == "time"
    assert at.selectbox(key=f"server_event-{name}").value == "status"
    words = text(at)
    lung = datasets.load("lung")
    assert f"{len(lung):,} rows" in words and f"{int(lung.status.sum()):,} events" in words
    at.selectbox(key=f"server_group-{name}").set_value("sex")
    run(at)
    assert "groups 1, 2" in text(at)
    at.button(key="server_use").click()
    run(at)
    assert "on the server" in text(at)
    assert at.session_state["data_choice"].name == name
    assert at.session_state["data_choice"].mapping.group == "sex"
    assert len(at.session_state["data_choice"].frame) == len(lung)
    # an analysis page takes that cohort
    at.switch_page("pages/4_Weibull_parameters.py")
    run(at)
    assert any("Maximum likelihood" in str(v) for v in at.dataframe[0].value.Estimate)


def test_no_shared_folder_says_how_to_share_one(monkeypatch, ledger_path):
    monkeypatch.delenv("DPSURV_SERVER_DATA", raising=False)
    at = run(AppTest.from_file(APP, default_timeout=90))
    at.radio(key="data_source").set_value("A file on the server")
    run(at)
    assert "DPSURV_SERVER_DATA" in text(at)
    assert at.session_state["data_choice"].name == "lung"


def test_a_duckdb_table_past_the_row_limit_is_counted_but_not_loaded(tmp_path, monkeypatch, ledger_path):
    import duckdb

    folder = tmp_path / "tre"
    folder.mkdir()
    lung = datasets.load("lung")  # noqa: F841 - read by the DuckDB statement below
    con = duckdb.connect(str(folder / "registry.duckdb"))
    con.execute("CREATE TABLE deaths AS SELECT * FROM lung")
    con.close()
    monkeypatch.setenv("DPSURV_SERVER_DATA", str(folder))
    monkeypatch.setenv("DPSURV_MAX_CLI_CELLS", "100")  # fewer cells than lung has: reading it must be refused
    at = run(AppTest.from_file(APP, default_timeout=90))
    at.radio(key="data_source").set_value("A file on the server")
    run(at)
    at.selectbox(key="server_data_file").set_value(folder / "registry.duckdb")
    run(at)
    assert at.selectbox(key="server_data_table").value == "deaths"
    assert f"{len(datasets.load('lung')):,} rows" in text(at)  # counted inside DuckDB at any size
    at.button(key="server_use").click()
    run(at)
    (err,) = at.error
    assert "rows" in err.value and "DPSURV_MAX_CLI_CELLS" in err.value.replace("\\", "")
    assert at.session_state["data_choice"].name == "lung"  # nothing was loaded; the data in use is unchanged
