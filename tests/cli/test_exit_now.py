"""The command line ends its process without the interpreter's teardown (:func:`dpsurv_core.__main__.exit_now`), and
nothing a normal exit does for the user is lost: the exit status, every byte written to both streams, the exit
handlers (a release's ledger and background scan close in them), and the wait for a non-daemon thread."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _run(body: str, stdout: int | None = subprocess.PIPE, env: dict[str, str] | None = None
         ) -> subprocess.CompletedProcess:
    code = "from dpsurv_core.__main__ import exit_now\n" + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code], stdout=stdout, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                          timeout=60, env=env)


def _buffered() -> dict[str, str]:
    """The environment without PYTHONUNBUFFERED: output is buffered, as on a user's machine."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}


def test_status_streams_and_exit_handlers_are_kept() -> None:
    done = _run("""
        import atexit, sys
        atexit.register(lambda: print("handler ran", flush=False))
        sys.stdout.write("x" * 200_000)
        sys.stderr.write("warned\\n")
        exit_now(3)
    """)
    assert done.returncode == 3
    assert done.stdout == "x" * 200_000 + "handler ran\n"
    assert done.stderr == "warned\n"


def test_a_running_non_daemon_thread_is_waited_for() -> None:
    done = _run("""
        import threading, time
        def late():
            time.sleep(0.5)
            print("thread finished", flush=False)
        threading.Thread(target=late).start()
        exit_now(0)
    """)
    assert done.returncode == 0
    assert done.stdout == "thread finished\n"


def test_a_stream_that_cannot_be_written_is_not_a_success() -> None:
    done = _run("""
        import os, sys
        os.close(1)
        sys.stdout.write("lost")
        exit_now(0)
    """)
    assert done.returncode != 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("size", [100, 5_682, 8_190])
def test_output_that_a_full_disk_refuses_is_an_error_in_one_sentence(size: int) -> None:
    """A write that fails when the buffer is flushed at the end (a full disk) exits non-zero with one sentence, never
    0: the buffered bytes are dropped by the first failed flush, so the interpreter's own flush would find nothing
    to complain about."""
    with open("/dev/full", "w") as full:
        done = _run(f"""
            import sys
            sys.stdout.write("x" * {size})
            exit_now(0)
        """, stdout=full, env=_buffered())
    assert done.returncode == 120
    assert done.stderr.startswith("error: the output could not be written") and "Traceback" not in done.stderr


@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_stream_closed_from_the_start_is_no_traceback(closed: str) -> None:
    """With its standard output or error closed by the caller (``>&-``), a command ends with the exit status it
    chose, without a traceback."""
    redirect = ">&-" if closed == "stdout" else "2>&-"
    code = "from dpsurv_core.__main__ import exit_now; import sys; print('x', file=sys.stderr if sys.stderr else None); exit_now(2)"
    done = subprocess.run(["sh", "-c", f'exec "$0" -c "$1" {redirect}', sys.executable, code], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr


def test_rows_duckdb_spilled_to_disk_are_removed(tmp_path: Path) -> None:
    """An engine whose temporary table outgrew its memory limit spilled rows to DuckDB's temporary directory; ending
    the process through ``exit_now`` closes the connection first, so DuckDB removes them (subject-level rows must
    not stay on disk)."""
    from benchmarks.engines import generate

    data = generate(tmp_path / "c.parquet", 20_000)
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = _run(f"""
        import os, sys
        from dpsurv_core.engines.duckdb import DuckDBEngine
        from dpsurv_core.engines.source import Source
        engine = DuckDBEngine(Source("parquet", {str(data)!r}), memory_limit="10MB")
        engine.con.execute("CREATE TEMP TABLE big AS SELECT range AS i, repeat('x', 60) || range::VARCHAR AS s "
                           "FROM range(1000000)")
        spilled = os.listdir(os.path.join({str(temp)!r}, "dpsurv_duckdb"))
        print(len(spilled))
        exit_now(0)
    """, env={**os.environ, "TMPDIR": str(temp)})
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 1  # it did spill (the owner file and storage files)
    assert [p for p in temp.rglob("*") if p.is_file()] == []


def test_the_command_line_uses_it() -> None:
    """``python -m dpsurv_core`` and the ``dpsurv`` script (``console``) end through it: a refused command line
    still exits 2 with its one sentence, and a km run prints its whole JSON."""
    bad = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--epsilon", "-1", "--seed",
                          "1", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and bad.stderr.strip()
    good = subprocess.run([sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--epsilon", "1", "--seed",
                           "1", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert good.returncode == 0 and good.stdout.rstrip().endswith("}")
    script = (ROOT / "pyproject.toml").read_text()
    assert 'dpsurv = "dpsurv_core.__main__:console"' in script


def test_the_scans_connections_are_closed_by_an_exit_handler(tmp_path: Path) -> None:
    """The command line's one scan keeps its distinct rows in an in-memory DuckDB database; an exit handler closes
    its connection (after the scan thread is waited for), so nothing it spilled outlives the process."""
    import duckdb

    from benchmarks.engines import generate
    from dpsurv_core.privacy import fingerprint_prefetch as pre
    from dpsurv_core.privacy import fingerprint_scan

    path = generate(tmp_path / "c.parquet", 20_000)
    pre.start(["km", "--data", str(path), "--engine", "duckdb", "--seed", "1"])
    shared = pre.projection(path)
    assert shared is not None and fingerprint_scan._ACTIVE
    con = shared[0]
    pre._wait()
    pre._close_scans()
    assert not fingerprint_scan._ACTIVE
    with pytest.raises(duckdb.ConnectionException):
        con.execute("SELECT 1")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_release_whose_json_cannot_be_written_says_it_was_charged(tmp_path: Path) -> None:
    """A JSON larger than the output buffer fails inside the command: a simulation says its output could not be
    written, a release that its record was charged and how to read it again (never "check the path", exit 2)."""
    env = {**_buffered(), "DPSURV_LEDGER": str(tmp_path / "ledger.sqlite3")}
    base = [sys.executable, "-m", "dpsurv_core", "km", "--data", "lung", "--group", "sex", "--epsilon", "1", "--grid",
            "0:1100:20", "--json"]
    with open("/dev/full", "w") as full:
        seeded = subprocess.run([*base, "--seed", "1"], stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                env=env, timeout=120)
        charged = subprocess.run([*base, "--cap", "5"], stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                                 env=env, timeout=120)
    assert seeded.returncode == 120
    assert seeded.stderr.strip() == "error: the output could not be written (No space left on device)."
    assert charged.returncode == 120
    assert "recorded and charged as ledger record 2" in charged.stderr
    assert "do not run this command again" in charged.stderr and len(charged.stderr.strip().splitlines()) == 1
    closed = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *base, "--seed", "1"], capture_output=True, text=True,
                            cwd=ROOT, env=env, timeout=120)
    assert closed.returncode == 120 and "standard output is closed" in closed.stderr


def test_the_scans_spill_to_dpsurvs_temporary_folder_and_the_engine_shares_it(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The one scan's database spills where the engine's does (the system's temporary folder, not DuckDB's default
    ./.tmp in the working directory), and an engine on that database after it spilled does not try to move it."""
    from dpsurv_core.engines.duckdb import DuckDBEngine
    from dpsurv_core.engines.source import Source
    from dpsurv_core.privacy import fingerprint_prefetch as pre
    from dpsurv_core.privacy import fingerprint_scan

    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    con = fingerprint_scan.connect()
    con.execute("SET memory_limit = '10MB'")
    con.execute("CREATE TEMP TABLE big AS SELECT range AS i, repeat('x', 60) || range::VARCHAR AS s FROM range(1000000)")
    assert list((tmp_path / "tmp" / "dpsurv_duckdb").iterdir())
    assert not (tmp_path / ".tmp").exists()
    from benchmarks.engines import generate

    path = generate(tmp_path / "c.parquet", 1000)
    monkeypatch.setattr(pre, "projection", lambda p: (con, "big"))
    engine = DuckDBEngine(Source("parquet", str(path)))
    assert engine.distinct_rows == "big"
    fingerprint_scan.close_all()


def test_no_duckdb_connection_draws_a_progress_bar(tmp_path: Path) -> None:
    """DuckDB draws a progress bar on standard output for any query over 2 s (a registry's scan), which would put it
    before the command's JSON: every connection dpsurv opens has it off, the one scan's, an engine's own and an
    engine's cursor on the scan's database."""
    from benchmarks.engines import generate
    from dpsurv_core.engines.duckdb import DuckDBEngine
    from dpsurv_core.engines.source import Source
    from dpsurv_core.privacy import fingerprint_prefetch as pre
    from dpsurv_core.privacy import fingerprint_scan

    setting = "SELECT current_setting('enable_progress_bar')"
    path = generate(tmp_path / "c.parquet", 2_000)
    scan = fingerprint_scan.connect()
    assert scan.execute(setting).fetchone()[0] is False
    own = DuckDBEngine(Source("parquet", str(path)))
    assert own.distinct_rows is None and own.con.execute(setting).fetchone()[0] is False
    pre.start(["km", "--data", str(path), "--engine", "duckdb", "--seed", "1"])
    shared = DuckDBEngine(Source("parquet", str(path)))
    assert shared.distinct_rows is not None and shared.con.execute(setting).fetchone()[0] is False
    pre._wait()
    fingerprint_scan.close_all()
