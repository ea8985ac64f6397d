"""Hostile inputs meet their limit before any work: row and column bombs, releases too large for memory, files that are
not what their role needs, and a damaged or rewritten ledger. Each is refused with one sentence (exit 2 on the command
line, no traceback), and the ones that would take the machine down run their victim in a subprocess under an
address-space limit, with sizes that finish in a second once the check fires first."""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dpsurv_app.data_view import read_upload
from dpsurv_core import limits
from dpsurv_core.data.io import read_table
from dpsurv_core.errors import DataError, ParameterError
from tests.cli_run import fails, run
from tests.conftest import _free_port

ROOT = Path(__file__).resolve().parents[1]
LUNG = ("--data", "lung", "--horizon", "1000")


def victim(body: str, limit_mb: int = 1536, env: dict[str, str] | None = None, timeout: float = 120) -> dict:
    """Run ``body`` in a fresh interpreter whose address space is capped at ``limit_mb``; it leaves its result as JSON
    in the variable ``out``. Returns that dict (or the failure, when the victim dies)."""
    code = textwrap.dedent(f"""
        import json, resource, sys, time
        resource.setrlimit(resource.RLIMIT_AS, ({limit_mb} << 20, {limit_mb} << 20))
        out = {{}}
    """) + textwrap.dedent(body) + "\nprint(json.dumps(out))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                       env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    assert r.returncode == 0 and r.stdout.strip(), (r.returncode, r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


CLI_VICTIM = """
    import contextlib, io
    from dpsurv_core.cli import main
    err = io.StringIO()
    t = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main({argv!r})
    out = {{"rc": rc, "err": err.getvalue(), "seconds": time.perf_counter() - t}}
"""


def cli_victim(*argv: str, env: dict[str, str] | None = None, limit_mb: int = 1536) -> dict:
    """``python -m dpsurv_core ARGV --json`` in a capped subprocess: exit status, stderr and seconds inside main."""
    return victim(CLI_VICTIM.format(argv=[*argv, "--json"]), limit_mb, env)


def one_sentence(result: dict, *words: str) -> str:
    """The refusal's one line, checked: exit 2, ``error: ...``, no traceback, the ``words`` present."""
    lines = result["err"].strip().splitlines()
    assert result["rc"] == 2 and len(lines) == 1 and lines[0].startswith("error: "), result
    assert "Traceback" not in result["err"] and all(w in lines[0] for w in words), lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------------------ rows and columns
def test_rows_are_counted_at_every_line_end_the_parser_splits_at(monkeypatch):
    from dpsurv_core.data.io import _count_lines

    assert _count_lines(b"time,status\n" + b"12,1\r" * 7) == 7  # old Mac line ends after a \n header
    assert _count_lines(b"time,status\r\n12,1\r\n12,1") == 2
    assert _count_lines(b"time,status\r12,1\r12,1\r") == 2
    monkeypatch.setenv(limits.ROWS_ENV, "1000")
    bomb = b"time,status\n" + b"12,1\r" * 5_000
    assert len(pd.read_csv(io.BytesIO(bomb))) == 5_000  # what the parser would have built
    t = time.perf_counter()
    res = read_upload(bomb, "cr.csv")  # the Data page's upload path, after check_upload
    assert res.frame is None and "about 5,000 rows, more than the 1,000" in res.error
    assert time.perf_counter() - t < 0.5


def test_a_carriage_return_bomb_is_refused_at_the_default_row_limit():
    out = victim("""
        from dpsurv_core.limits import check_upload
        from dpsurv_app.data_view import read_upload
        bomb = b"time,status\\n" + b"12,1\\r" * 5_100_000  # 24 MB, 5.1 million rows on old Mac line ends
        check_upload(len(bomb), "bomb.csv")
        t = time.perf_counter()
        res = read_upload(bomb, "bomb.csv")
        out = {"error": res.error, "frame": res.frame is not None, "seconds": time.perf_counter() - t}
    """, limit_mb=1024)
    assert not out["frame"] and "5,100,000 rows, more than the 5,000,000" in out["error"], out
    assert out["seconds"] < 1.0


def test_too_many_columns_are_refused_from_the_header(monkeypatch):
    wide = (",".join(f"c{i}" for i in range(1_200)) + "\n" + ",".join("1" * 1_200) + "\n").encode()
    calls = []
    monkeypatch.setattr(pd, "read_csv", lambda *a, **k: calls.append(1))
    with pytest.raises(DataError, match=r"1,200 columns, more than the 1,000 .*DPSURV_MAX_COLUMNS"):
        read_table(wide, "wide.csv")
    assert not calls  # refused before the parser ran


def test_a_parquet_column_bomb_is_refused_from_its_metadata(tmp_path):
    path = tmp_path / "bomb.parquet"
    block = pa.table({f"c{i}": pa.array(np.zeros(10_000, np.int8)) for i in range(302)})
    with pq.ParquetWriter(path, block.schema) as writer:
        for _ in range(11):  # 110,000 rows x 302 columns = 33.2 million cells in a small file
            writer.write_table(block)
    assert path.stat().st_size < 8 * 2**20
    out = victim(f"""
        from pathlib import Path
        from dpsurv_app.data_view import read_upload
        raw = Path({str(path)!r}).read_bytes()
        t = time.perf_counter()
        res = read_upload(raw, "bomb.parquet")
        out = {{"error": res.error, "seconds": time.perf_counter() - t}}
    """)
    assert "110,000 rows x 302 columns = 33,220,000 values, more than the 30,000,000" in out["error"], out
    assert out["seconds"] < 0.5


def test_an_excel_sheet_past_the_column_limit_is_refused_from_its_dimension(monkeypatch):
    buf = io.BytesIO()
    pd.DataFrame({f"c{i}": [1, 2, 3] for i in range(8)}).to_excel(buf, index=False)
    monkeypatch.setenv(limits.COLUMNS_ENV, "5")
    full_reads = []
    real = pd.read_excel

    def spy(*args, **kwargs):
        if kwargs.get("nrows") is None:
            full_reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(pd, "read_excel", spy)
    with pytest.raises(DataError, match=r"8 columns, more than the 5"):
        read_table(buf.getvalue(), "wide.xlsx")
    assert not full_reads  # only the header row was read


def test_nested_parquet_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"time": [5.0, 8.0, 13.0, 21.0], "status": [1, 0, 1, 1],
                             "visits": [[1], [2, 3], [], [4]], "info": [{"a": 1}, {"a": 2}, {"a": 3}, {"a": 4}]}), path)
    res = read_upload(path.read_bytes(), "nested.parquet")
    assert res.frame is None and "nested columns ('visits', 'info'" in res.error
    line = fails(capsys, "km", "--data", str(path), "--time", "time", "--event", "status", "--seed", "1")
    assert "nested columns" in line and "flat table" in line


# ------------------------------------------------------------------------------------------------ memory
def test_a_time_indexed_grid_too_fine_for_memory_is_refused_before_work():
    out = cli_victim("km", *LUNG, "--mechanism", "time-indexed", "--grid", "0:1100:2000", "--seed", "1")
    line = one_sentence(out, "time-indexed on 2,000 bins", "more than the 1,500 MB", "DPSURV_MAX_MEMORY_MB")
    assert "fewer bins" in line and out["seconds"] < 5


def test_an_event_time_grid_is_counted_in_the_estimate():
    out = cli_victim("km", *LUNG, "--mechanism", "time-indexed", "--grid", "event-times", "--seed", "1",
                     env={limits.MEMORY_MB_ENV: "50"})
    one_sentence(out, "time-indexed on 139 bins", "more than the 50 MB")
    assert out["seconds"] < 5


def test_a_bootstrap_of_many_trials_is_refused_before_work():
    # 2,000 trials x 2 groups x 500 bins is within the simulation cap, but its bootstrap bands are not within memory
    out = cli_victim("km", *LUNG, "--group", "sex", "--grid", "0:1100:500", "--repeat", "2000", "--seed", "1")
    one_sentence(out, "laplace-counts on 500 bins x 2 group(s) x 2,000 trials", "fewer trials")
    assert out["seconds"] < 5


def test_log_rank_null_draws_are_counted_before_the_release():
    out = cli_victim("logrank", *LUNG, "--group", "sex", "--grid", "event-times", "--null-draws", "999", "--seed", "1",
                     env={limits.MEMORY_MB_ENV: "20"})
    one_sentence(out, "with 999 null draws", "fewer null draws")


def test_a_preview_is_refused_by_the_mechanism_itself(monkeypatch):
    """The app's previews and releases call ``compute``: the estimate comes first there too."""
    from dpsurv_core.curves.time_indexed import TimeIndexed
    from dpsurv_core.data.cohort import load_bundled
    from dpsurv_core.data.public import PublicParameters, TimeGrid
    from dpsurv_core.privacy.noise import SimulationNoise

    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, grid=TimeGrid.equal(0, 1000, 500))
    monkeypatch.setenv(limits.MEMORY_MB_ENV, "100")
    t = time.perf_counter()
    with pytest.raises(ParameterError, match=r"time-indexed on 500 bins x 2 group\(s\) would need about 380 MB"):
        TimeIndexed(500).compute(cohort, public, SimulationNoise(1))
    assert time.perf_counter() - t < 0.2


# ------------------------------------------------------------------------------------------------ bad input
def test_an_all_empty_group_column_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "empty_group.csv"
    pd.DataFrame({"time": [3.0, 5.0, 8.0, 13.0], "status": [1, 0, 1, 1], "arm": [None] * 4}).to_csv(path, index=False)
    for engine in ("pandas", "duckdb"):
        line = fails(capsys, "km", "--data", str(path), "--time", "time", "--event", "status", "--group", "arm",
                     "--engine", engine, "--seed", "1")
        assert "Column 'arm' is empty in every row" in line


def test_a_file_that_is_not_a_duckdb_database_is_one_sentence(tmp_path, capsys):
    path = tmp_path / "cohort.duckdb"
    path.write_text("time,status\n1,1\n")
    line = fails(capsys, "km", "--data", f"duckdb:{path}:cohort", "--time", "time", "--event", "status", "--seed", "1")
    assert "could not be opened as a DuckDB database" in line


@pytest.mark.parametrize("master, words", [
    ("bogus", "is not a Spark master URL"),
    ("spark://127.0.0.1:{free}", "No Spark master answered"),  # a port nobody listens on, chosen when the test runs
])
def test_a_bogus_spark_master_fails_fast_without_java(master, words):
    pytest.importorskip("pyspark")
    master = master.format(free=_free_port())  # (in the test, so every test process collects the same test ids)
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", *LUNG, "--engine", "spark", "--spark-master", master,
                        "--seed", "1", "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and words in lines[0], r.stderr[-2000:]
    assert time.perf_counter() - t < 10  # Spark's own client retried for about 65 s


def test_a_spark_session_that_does_not_start_is_time_limited(monkeypatch):
    from dpsurv_core.engines import spark

    class Hanging:
        def getOrCreate(self):  # noqa: N802 - PySpark's name
            time.sleep(30)

    monkeypatch.setenv(spark.START_ENV, "0.3")
    t = time.perf_counter()
    with pytest.raises(DataError, match=r"did not start with master 'spark://h:7077' within 0 s"):
        spark._start(Hanging(), "spark://h:7077")
    assert time.perf_counter() - t < 2


@pytest.mark.parametrize("flag, value", [("--epsilon", "1_0"), ("--cap", "2_0"), ("--seed", "1_0"),
                                         ("--epsilon", " 1"), ("--epsilon", "nan")])
def test_numbers_are_plain_decimals(capsys, flag, value):
    line = fails(capsys, "km", *LUNG, flag, value)
    assert f"argument {flag}: {value!r} is not" in line
    assert run(capsys, "km", *LUNG, "--epsilon", "1e-1", "--seed", "1")["epsilon_spent"] == 0.1


# ------------------------------------------------------------------------------------------------ the ledger
def _foreign(path: Path) -> bytes:
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (body TEXT)")
    con.execute("INSERT INTO notes VALUES ('someone else''s data')")
    con.commit()
    con.close()
    return path.read_bytes()


def test_a_ledger_path_that_holds_no_ledger_is_refused_never_taken_for_a_new_one(tmp_path, capsys):
    empty, text, foreign = tmp_path / "empty.sqlite3", tmp_path / "notes.sqlite3", tmp_path / "other.sqlite3"
    empty.touch()
    text.write_text("not a ledger\n")
    before = _foreign(foreign)
    cases = {"/dev/null": "not a regular file", str(tmp_path): "not a regular file", str(empty): "empty file",
             str(text): "not an SQLite database", str(foreign): "without the ledger's records table"}
    for path, words in cases.items():
        for argv in (("km", *LUNG, "--epsilon", "0.5"), ("budget", "verify")):
            assert words in fails(capsys, *argv, "--ledger", path)
    assert empty.stat().st_size == 0 and foreign.read_bytes() == before  # nothing written into either
    assert not list(tmp_path.glob("*-wal")) and not list(tmp_path.glob(".*.new"))
    new = tmp_path / "sub" / "new.sqlite3"  # a path with nothing there: a new ledger, as before
    assert run(capsys, "km", *LUNG, "--epsilon", "0.5", "--ledger", str(new))["record_id"] == 1


def _ledger(path: Path, releases: int, capsys) -> str:
    for _ in range(releases):
        run(capsys, "km", *LUNG, "--epsilon", "0.1", "--ledger", str(path))
    return run(capsys, "budget", "verify", "--ledger", str(path))["head"]


def test_a_damaged_ledger_file_is_never_intact(tmp_path, capsys):
    path = tmp_path / "ledger.sqlite3"
    _ledger(path, 12, capsys)
    pages = path.stat().st_size // 4096
    assert pages >= 6
    with path.open("r+b") as fh:  # garbage over a page in the middle, the header left as it was
        fh.seek(pages // 2 * 4096)
        fh.write(np.random.default_rng(0).bytes(4096))
    code = __import__("dpsurv_core.cli", fromlist=["main"]).main(["budget", "verify", "--ledger", str(path), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False and "integrity check" in out["message"] and out["head"] is None
    line = fails(capsys, "km", *LUNG, "--epsilon", "0.1", "--ledger", str(path))
    assert "ledger" in line and "DatabaseError" not in line and "restore the ledger" in line


def test_verify_head_detects_a_consistent_rewrite_or_truncation(tmp_path, capsys):
    path, earlier = tmp_path / "ledger.sqlite3", tmp_path / "two.sqlite3"
    two = _ledger(path, 2, capsys)
    earlier.write_bytes(path.read_bytes())
    three = _ledger(path, 1, capsys)
    ok = run(capsys, "budget", "verify", "--ledger", str(path), "--head", three)
    assert ok["ok"] and ok["head_matches"] and "the head is the one noted down" in ok["message"]
    assert run(capsys, "budget", "verify", "--ledger", str(path), "--head", three[:16])["head_matches"]
    from dpsurv_core.cli import main

    path.write_bytes(earlier.read_bytes())  # truncated to its first two records: the chain itself is intact
    assert run(capsys, "budget", "verify", "--ledger", str(path))["ok"]
    assert main(["budget", "verify", "--ledger", str(path), "--head", three, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and "rewritten or truncated" in out["message"]
    _ledger(path, 1, capsys)  # rewritten: a different third record on the same first two
    assert main(["budget", "verify", "--ledger", str(path), "--head", three, "--json"]) == 1
    assert "rewritten or truncated" in json.loads(capsys.readouterr().out)["message"]
    assert main(["budget", "verify", "--ledger", str(path), "--head", two, "--json"]) == 1
    assert "1 record(s) were added after it" in json.loads(capsys.readouterr().out)["message"]
    assert "is not a head hash" in fails(capsys, "budget", "verify", "--ledger", str(path), "--head", "xyz")


def test_the_threat_model_states_what_file_access_allows():
    text = (ROOT / "docs" / "threat-model.md").read_text()
    assert "budget verify --head" in text and "consistent rewrite" in text
