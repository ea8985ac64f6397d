"""The Data page's third source: a Parquet file or DuckDB table in a folder the server shares (DPSURV_SERVER_DATA),
checked and counted in place by DuckDB, then analysed by the other pages (the app's picker).

Within the app's row limit the table is read into the session; past it (DPSURV_MAX_CLI_CELLS lowered here so that lung
counts as too large) the session keeps the engine cohort: the counting pages compute from the engine's counts and
show the numbers the command line and the core give on the same data, a release is charged to the table's fingerprint
(the CLI's), and the pages that need the rows say so in one sentence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dpsurv_app import curves_view as cv
from dpsurv_core import engines
from dpsurv_core.cli import main as cli
from dpsurv_core.curves import summary as cs
from dpsurv_core.curves.kaplan_meier import estimate
from dpsurv_core.curves.result import NonPrivate, exact_counts, tile_trials
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.weibull.model import OMEGA, sample_from_cohort, weibull_mle
from tests.app.apptest import release
from tests.app.tables import shown, shown_text

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "dpsurv_app" / "app.py")
pytest.importorskip("duckdb")
# lung has 228 rows of 10 columns: 600 cells is 60 rows when every column is read (the app's in-memory limit) and 200
# rows of the 3 mapped columns (so no page can read the rows through the bounded path either), while its 186 distinct
# times fit the Weibull table of times (600 / 3 = 200 values)
SMALL_LIMIT = "600"


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


@pytest.fixture
def big_table(tmp_path, monkeypatch, ledger_path) -> str:
    """A DuckDB table holding lung, past the app's (lowered) row limit; returns its --data name."""
    import duckdb

    folder = tmp_path / "tre"
    folder.mkdir()
    lung = datasets.load("lung")  # noqa: F841 - read by the DuckDB statement below
    con = duckdb.connect(str(folder / "registry.duckdb"))
    con.execute("CREATE TABLE deaths AS SELECT * FROM lung")
    con.close()
    monkeypatch.setenv("DPSURV_SERVER_DATA", str(folder))
    monkeypatch.setenv("DPSURV_MAX_CLI_CELLS", SMALL_LIMIT)
    return f"duckdb:{folder / 'registry.duckdb'}:deaths"


def text(at: AppTest) -> str:
    return " ".join(shown_text(e.value) for e in [*at.markdown, *at.caption, *at.info])


def cli_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert cli([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def open_kept_table(name: str, group: str | None = "sex") -> AppTest:
    """The app with the DuckDB table chosen on the Data page and 'Analyse this cohort' pressed."""
    at = run(AppTest.from_file(APP, default_timeout=120))
    at.radio(key="data_source").set_value("A file on the server")
    run(at)
    at.selectbox(key="server_data_file").set_value(Path(name.split(":")[1]))
    run(at)
    assert at.selectbox(key="server_data_table").value == "deaths"
    if group:
        at.selectbox(key=f"server_group-{name}").set_value(group)
        run(at)
    assert "keeps the table in DuckDB" in text(at) and "DPSURV_MAX_CLI_CELLS" in text(at)
    at.button(key="server_use").click()
    return run(at)


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
    assert "Within the app's row limit" in words  # below the limit: read into the session, as before
    at.selectbox(key=f"server_group-{name}").set_value("sex")
    run(at)
    assert "groups 1, 2" in text(at)
    at.button(key="server_use").click()
    run(at)
    assert "on the server" in text(at)
    assert at.session_state["data_choice"].name == name
    assert at.session_state["data_choice"].mapping.group == "sex"
    assert at.session_state["data_choice"].engine is None
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


def test_past_the_row_limit_the_counting_pages_compute_from_the_engine(big_table, capsys):
    at = open_kept_table(big_table)
    choice = at.session_state["data_choice"]
    assert choice.name == big_table and choice.engine is not None and len(choice.frame) == 0  # no row in the session
    assert choice.rows == 228 and "kept in DuckDB: 228 rows" in text(at)
    # the session's own DuckDB connection, not the process-wide one (a connection serves one query at a time)
    assert choice.engine.engine is not engines.connect("duckdb", choice.engine.engine.source)
    summary = shown(at.table[0].value)  # counted by DuckDB
    assert list(summary.Rows) == ["138", "90"] and list(summary.Events) == ["112", "53"]

    # 2 Survival curves: the non-private median and number at risk are the CLI's on the same data
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    assert "exact Kaplan-Meier computed from the counts DuckDB returns" in text(at)
    exact = cli_json(capsys, "km", "--data", "lung", "--mechanism", "nonprivate", "--grid", "event-times")["curves"][0]
    medians = next(t for t in (shown(x.value) for x in at.table) if "Non-private (days)" in t.columns)
    assert medians["Non-private (days)"].iloc[0] == cv.fmt_ci_time(exact["median"], exact["median_lower"],
                                                                   exact["median_upper"], "days") == "310 (285 to 363)"
    # the number at risk as the page reads it off the exact grid counts, by the core on the rows in memory
    rows = build_cohort(datasets.load("lung"), ColumnMap(time="time", event="status"), "lung")
    public = PublicParameters.derive(rows)
    risk = cs.at_risk_at(NonPrivate().compute(rows, public).counts, cs.table_times(public.grid))[0, 0]
    assert [int(v) for v in shown(at.table[0].value).loc["All patients, non-private"]] == risk.astype(int).tolist()
    offered = at.selectbox(key="sc_mechanism").options
    assert cv.mechanism_name("laplace-counts") in offered  # from the counts, as the CLI's km keeps it in the engine
    assert not {cv.mechanism_name(m) for m in ("time-indexed", "rrr", "cell-key")} & set(offered)  # they read rows
    (note,) = [c.value for c in at.caption if "not offered here" in c.value]
    assert cv.mechanism_name("time-indexed") in note and "DPSURV_MAX_CLI_CELLS" in note.replace("\\", "")

    # 3 Group comparison: the non-private log-rank test is the CLI's
    at.switch_page("pages/3_Group_comparison.py")
    run(at)
    test = cli_json(capsys, "logrank", "--data", "lung", "--group", "sex", "--mechanism", "nonprivate")["tests"][0]
    tests = next(t for t in (shown(x.value) for x in at.table) if "Chi² non-private" in t.columns)
    assert tests["Chi² non-private"].iloc[0] == cv.fmt_stat(test["statistic"]) == "10.33"
    assert tests["p non-private"].iloc[0] == cv.fmt_p(test["p_value"])

    # 4 Weibull: the maximum-likelihood row is the core's fit of the rows in memory (the page's comes from the engine's
    # table of distinct times, as the CLI's weibull keeps it)
    at.switch_page("pages/4_Weibull_parameters.py")
    run(at)
    fit = weibull_mle(sample_from_cohort(rows, public.horizon, OMEGA))
    table = at.dataframe[0].value
    mle = table[table.Estimate.str.startswith("Maximum likelihood, Equations")].iloc[0]
    assert mle["Shape p"] == pytest.approx(fit.shape, rel=1e-12)
    assert mle["Scale (days)"] == pytest.approx(fit.scale, rel=1e-12)
    assert not any("lifelines" in str(v) for v in table.Estimate)  # lifelines needs the rows
    (note,) = [c.value for c in at.caption if "not offered here" in c.value]
    assert "Sample and aggregate" in note and "lives on the server and is too large" in note
    assert "DPSURV_MAX_CLI_CELLS" in note.replace("\\", "")

    # 5-7 need each subject's values: one sentence naming the limit, and the app keeps working
    for page in ("pages/5_Regression.py", "pages/6_Privacy_audit.py", "pages/7_Trade-off_explorer.py"):
        at.switch_page(page)
        run(at)
        (info,) = [i.value for i in at.info if "lives on the server" in i.value]
        assert "too large" in info and "DPSURV_MAX_CLI_CELLS" in info.replace("\\", "") and "228 rows" in info
        assert "What works on it here" in text(at) and "LSP + TLL" in text(at)  # and what is possible instead
    assert at.session_state["data_choice"].engine is choice.engine  # nothing was read


def test_a_release_from_the_kept_table_is_charged_to_the_clis_fingerprint(big_table, ledger_path, capsys):
    at = open_kept_table(big_table, group=None)
    # the Data page declares the horizon (a release reads nothing off the data), as --horizon does below
    at.checkbox(key=f"srv-{big_table}-declare-h").check()
    run(at)
    at.number_input(key=f"srv-{big_table}-h").set_value(1100.0)
    run(at)
    assert at.session_state["data_choice"].horizon == 1100.0
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    release(at, "release-curves")
    run(at)
    assert "Released as record" in text(at)
    fingerprint = LedgerStore(ledger_path).key(at.session_state["data_choice"].fingerprint)
    shown = cli_json(capsys, "budget", "show", "--data", big_table)
    assert shown["fingerprint"] == fingerprint  # the CLI keys the same table to the same budget
    records = [r for r in LedgerStore(ledger_path).records() if r.kind == "release"]
    assert len(records) == 1 and records[0].fingerprint == fingerprint
    assert records[0].body["mechanism"] == "laplace-counts"
    # the CLI's release of the same table is charged to the same budget
    out = cli_json(capsys, "km", "--data", big_table, "--time", "time", "--event", "status", "--horizon", "1100",
                   "--mechanism", "laplace-counts", "--epsilon", "0.5")
    assert out["release"] is True
    records = [r for r in LedgerStore(ledger_path).records() if r.kind == "release"]
    assert [r.fingerprint for r in records] == [fingerprint, fingerprint]
    # the Ledger page lists both and names the table as the command line does
    at.switch_page("pages/8_Ledger_and_report.py")
    run(at)
    assert f"budget show --data {big_table}" in text(at).replace("\\", "")


def test_past_the_engines_event_time_limit_the_baseline_is_the_exact_curve_on_the_public_grid(big_table, monkeypatch):
    from dpsurv_core.engines import statistics

    monkeypatch.setattr(statistics, "MAX_BINS", 50)  # lung has 139 distinct event times
    at = open_kept_table(big_table, group=None)
    at.switch_page("pages/2_Survival_curves.py")
    run(at)
    assert "cannot be counted in the engine" in text(at), [e.value for e in at.error]
    assert not at.error
    rows = build_cohort(datasets.load("lung"), ColumnMap(time="time", event="status"), "lung")
    public = PublicParameters.derive(rows)
    # the estimate from the exact counts on the public grid, by the core on the rows in memory
    grid = estimate(tile_trials(exact_counts(rows, public.grid, public), 1))
    medians = next(t for t in (shown(x.value) for x in at.table) if "Non-private (days)" in t.columns)
    expected = cv.quantiles(grid, "log")[0.5]
    assert medians["Non-private (days)"].iloc[0] == cv.fmt_ci_time(expected[0][0][0], expected[1][0][0],
                                                                   expected[2][0][0], "days")
