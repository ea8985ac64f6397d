"""Resource limits (dpsurv_core/limits.py) hold before work starts: one pathological input per limit."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dpsurv_app.data_view import read_upload
from dpsurv_core import limits
from dpsurv_core.cli import main as cli_main
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.io import read_columns, read_table
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.regression import person_period as pp_module

ROOT = Path(__file__).resolve().parents[1]


def _csv(rows: int) -> bytes:
    return ("time,status,age\n" + "".join(f"{i % 50 + 1},{i % 2},{40 + i % 30}\n" for i in range(rows))).encode()


def test_defaults_and_env_override(monkeypatch):
    for env in (limits.UPLOAD_MB_ENV, limits.ROWS_ENV, limits.PERSON_PERIOD_ENV, limits.SIMULATION_ENV):
        monkeypatch.delenv(env, raising=False)
    assert (limits.max_upload_mb(), limits.max_rows(), limits.max_person_period_rows(), limits.max_simulation_cells()) \
        == (200, 5_000_000, 10_000_000, 50_000_000)
    monkeypatch.setenv(limits.ROWS_ENV, "1_000")
    monkeypatch.setenv(limits.UPLOAD_MB_ENV, "not a number")
    assert limits.max_rows() == 1000 and limits.max_upload_mb() == 200


def test_streamlit_upload_cap_is_at_most_the_core_cap():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] <= limits.DEFAULT_MAX_UPLOAD_MB


def test_upload_over_the_cap_is_refused(monkeypatch):
    monkeypatch.setenv(limits.UPLOAD_MB_ENV, "1")
    data = _csv(200_000)  # about 1.9 MB
    assert len(data) > 2**20
    with pytest.raises(DataError, match=r"more than the 1 MB an upload may be.*--data PATH"):
        read_table(data, "big.csv")
    res = read_upload(data, "big.csv")
    assert res.frame is None and "1 MB" in res.error
    assert read_upload(_csv(10), "small.csv").frame is not None


def test_csv_over_the_row_cap_is_refused_before_parsing(monkeypatch):
    monkeypatch.setenv(limits.ROWS_ENV, "100")
    calls = []
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: calls.append(1))
    with pytest.raises(DataError, match=r"about 101 rows, more than the 100 read into memory.*--data PATH"):
        read_table(_csv(101), "rows.csv")
    assert not calls  # refused from the newline count, before pandas built anything
    monkeypatch.undo()
    monkeypatch.setenv(limits.ROWS_ENV, "100")
    assert len(read_table(_csv(100), "rows.csv")[0]) == 100
    assert len(read_table(_csv(100).replace(b"\n", b"\r\n"), "rows.csv")[0]) == 100


def test_parquet_over_the_row_cap_is_refused_from_metadata(monkeypatch, tmp_path):
    path = tmp_path / "rows.parquet"
    pd.DataFrame({"time": np.arange(1, 51), "status": np.ones(50, int)}).to_parquet(path)
    monkeypatch.setenv(limits.ROWS_ENV, "49")
    with pytest.raises(DataError, match="50 rows"):
        read_table(path.read_bytes(), "rows.parquet")
    # the command line's column reader is the larger-data path: no row cap there
    assert len(read_columns(path, ["time", "status"])[0]) == 50


def test_csv_read_from_bytes_keeps_encodings_and_line_ends():
    df, warnings = read_table("time;status;name\r\n1,5;1;Jos\xe9\r\n2;0;Ana\r\n".encode("cp1252"), "latin.csv")
    assert list(df["time"]) == [1.5, 2.0] and df["name"][0] == "Jos\xe9"
    assert any("Windows-1252" in w for w in warnings)
    df, warnings = read_table("\ufefftime,status\r1,1\r2,0\r".encode(), "mac.csv")
    assert list(df.columns) == ["time", "status"] and len(df) == 2 and not warnings


def _cohort(n: int):
    from dpsurv_core.data.cohort import ColumnMap, build_cohort

    frame = pd.DataFrame({"time": np.arange(1, n + 1, dtype=float), "status": np.arange(n) % 2,
                          "age": 40 + np.arange(n) % 30})
    return build_cohort(frame, ColumnMap(time="time", event="status", covariates=("age",)), "t")


def test_person_period_over_budget_is_refused_before_allocating(monkeypatch):
    monkeypatch.setenv(limits.PERSON_PERIOD_ENV, "1000")
    allocated = []
    real_repeat = np.repeat
    monkeypatch.setattr(pp_module.np, "repeat", lambda *a, **k: allocated.append(1) or real_repeat(*a, **k))
    with pytest.raises(ParameterError, match=r"100 subjects x 20 intervals is 2,000 person-period rows.*fewer intervals"):
        pp_module.person_period(_cohort(100), ["age"], horizon=100, intervals=20, knots=3, ranges={"age": (40, 70)})
    with pytest.raises(ParameterError, match="fewer intervals"):
        pp_module.expand(np.ones(100), np.ones(100), np.zeros((100, 1)), 1.0, 20, 3)
    assert not allocated
    pp = pp_module.person_period(_cohort(100), ["age"], horizon=100, intervals=10, knots=3, ranges={"age": (40, 70)})
    assert pp.y.size <= 1000


def test_intervals_capped():
    with pytest.raises(ParameterError, match=f"between 2 and {limits.MAX_INTERVALS}"):
        pp_module.person_period(_cohort(10), ["age"], horizon=10, intervals=limits.MAX_INTERVALS + 1, knots=3)


@pytest.fixture
def lung():
    return load_bundled("lung", group="sex")


def test_tradeoff_over_simulation_budget_is_refused(monkeypatch, lung):
    from dpsurv_core import tradeoff
    from dpsurv_core.data.public import PublicParameters

    public = PublicParameters.derive(lung)
    ctx = tradeoff.prepare("curves", lung, public, by_group=False)
    assert len(lung.groups) == 2
    monkeypatch.setenv(limits.SIMULATION_ENV, str(public.grid.bins * 10))
    with pytest.raises(ParameterError, match=r"11 simulated releases x .* bins x 1 group\(s\).*use fewer simulated releases"):
        tradeoff.run(ctx, ["laplace-counts"], [1.0], trials=11)
    assert len(tradeoff.run(ctx, ["laplace-counts"], [1.0], trials=10))


def test_audit_over_simulation_budget_is_refused(monkeypatch, lung):
    from dpsurv_core.audit import runner
    from dpsurv_core.data.public import PublicParameters

    public = PublicParameters.derive(lung)
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, lung, public)
    monkeypatch.setenv(limits.SIMULATION_ENV, str(public.grid.bins * 2 * 4))
    ran = []
    monkeypatch.setattr(adapter, "releases", lambda *a, **k: ran.append(1))
    with pytest.raises(ParameterError, match=r"5 runs x .* bins x 2 group\(s\).*use fewer runs"):
        runner.audit(adapter, trials=5)
    assert not ran


def _cli(capsys, *argv):
    code = cli_main(list(argv))
    return code, capsys.readouterr().err.strip().splitlines()


def test_cli_repeat_over_simulation_budget(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(limits.SIMULATION_ENV, "100")
    monkeypatch.setenv("DPSURV_LEDGER", str(tmp_path / "ledger.json"))
    code, err = _cli(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "1",
                     "--repeat", "1000")
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "use fewer repeats" in err[0]


def test_cli_regression_intervals(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("DPSURV_LEDGER", str(tmp_path / "ledger.json"))
    code, err = _cli(capsys, "regression", "--data", "lung", "--covariates", "age", "--intervals", "201")
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "T must be between 2 and 200" in err[0]
    monkeypatch.setenv(limits.PERSON_PERIOD_ENV, "1000")
    code, err = _cli(capsys, "regression", "--data", "lung", "--covariates", "age", "--intervals", "50",
                     "--mechanism", "nonprivate")
    assert code == 2 and len(err) == 1 and err[0].startswith("error:") and "fewer intervals" in err[0]


def test_command_line_reading_stops_past_its_cell_budget(tmp_path, monkeypatch):
    frame = pd.DataFrame({"t": np.arange(1, 2001, dtype=float), "e": np.tile([0, 1], 1000), "x": 1.0})
    csv_path, pq_path = tmp_path / "c.csv", tmp_path / "c.parquet"
    frame.to_csv(csv_path, index=False)
    frame.to_parquet(pq_path)
    monkeypatch.setenv("DPSURV_MAX_CLI_CELLS", "4000")  # 2000 rows x 2 columns fits exactly
    assert len(read_columns(csv_path, ["t", "e"])[0]) == 2000
    assert len(read_columns(pq_path, ["t", "e"])[0]) == 2000
    for path in (csv_path, pq_path):
        with pytest.raises(DataError, match="values dpsurv reads into memory"):
            read_columns(path, ["t", "e", "x"])
    r = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", str(csv_path), "--time", "t", "--event",
                        "e", "--group", "x", "--seed", "1", "--json"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "DPSURV_MAX_CLI_CELLS": "4000"})
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1 and "reads into memory" in r.stderr


def test_an_excel_workbook_that_unpacks_too_large_is_refused_before_reading(monkeypatch, tmp_path):
    import io

    import pandas as pd

    from dpsurv_core.data.io import read_table
    from dpsurv_core.errors import DataError

    buf = io.BytesIO()
    pd.DataFrame({"time": range(1, 20_001), "status": [1, 0] * 10_000}).to_excel(buf, index=False)
    raw = buf.getvalue()
    assert len(read_table(raw, "cohort.xlsx")[0]) == 20_000  # within the default limit
    monkeypatch.setenv(limits.EXCEL_MB_ENV, "1")  # the sheet unpacks to more than 1 MB
    with pytest.raises(DataError, match=r"unpacks to .* MB, more than the 1 MB .*DPSURV_MAX_EXCEL_MB.*CSV or Parquet"):
        read_table(raw, "cohort.xlsx")
