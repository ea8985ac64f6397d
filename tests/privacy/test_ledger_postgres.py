"""The ledger in PostgreSQL: the same records and protocol as the SQLite file (run here over both backends), its
append-only triggers and the app role's privileges, `budget verify` finding a superuser's edit, and twenty
processes racing for one budget through one PostgreSQL ledger, half of them app sessions.

The server is a throw-away cluster (:mod:`tests.privacy.postgres`); without PostgreSQL's binaries these tests are
skipped with the reason printed.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dpsurv_core.cli import main
from dpsurv_core.errors import BudgetExceededError
from dpsurv_core.privacy import checkpoint
from dpsurv_core.privacy.ledger import (
    CAP_RAISE,
    CAP_SET,
    GENESIS,
    RELEASE,
    ChainBrokenError,
    LedgerEntry,
    LedgerStore,
    PrivacyCost,
    record_hash,
)
from dpsurv_core.privacy.ledger_file import LedgerFileError
from dpsurv_core.privacy.release import release
from tests.cli_run import fails, run
from tests.privacy import test_ledger_store as store_tests
from tests.privacy import test_release_protocol as protocol
from tests.privacy.postgres import APP_ROLE, Server, grant_app_role
from tests.privacy.test_release_protocol import FP as PLAN_FP
from tests.privacy.test_release_protocol import KM, Calls, make_plan

ROOT = Path(__file__).resolve().parents[2]
FP_A, FP_B = "a" * 64, "b" * 64
SQLITE_TRIGGERS = ("records_no_update", "records_no_delete", "records_no_replace")
PG_TRIGGERS = ("records_no_change", "records_no_truncate", "records_no_replace")


def entry(eps: float, dataset: str = "lung") -> LedgerEntry:
    return LedgerEntry("laplace-counts", "survival curves", dataset, {"epsilon": eps}, PrivacyCost(eps))


def charge(store: LedgerStore, fp: str, eps: float, outputs: object = None) -> int:
    with store.transaction(fp) as tx:
        return tx.charge(entry(eps), outputs)


class Backend:
    """One ledger location (an SQLite file or a PostgreSQL database) and what its owner can do to it behind the
    ledger's back."""

    def __init__(self, location: str, server: Server | None = None, database: str = "") -> None:
        self.location, self.server, self.database = location, server, database

    def tamper(self, *statements: str) -> None:
        """Drop the append-only triggers (what the file's owner or a superuser can do), then run ``statements``."""
        if self.server is None:
            con = sqlite3.connect(self.location, isolation_level=None)
            for trigger in SQLITE_TRIGGERS:
                con.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            for s in statements:
                con.execute(s)
            con.close()
            return
        drops = [f"DROP TRIGGER IF EXISTS {t} ON dpsurv.records" for t in PG_TRIGGERS]
        self.server.sql("SET search_path TO dpsurv", *drops, *statements, database=self.database)

    def rows(self) -> list[tuple]:
        query = "SELECT id, time, fingerprint, kind, body, prev_hash, hash FROM records ORDER BY id"
        if self.server is None:
            with sqlite3.connect(self.location) as con:
                return con.execute(query).fetchall()
        return [tuple(r) for r in self.server.sql("SET search_path TO dpsurv", query, database=self.database)]


@pytest.fixture(params=["sqlite", "postgresql"])
def backend(request, tmp_path, monkeypatch) -> Backend:
    """The ledger of this test on each backend, also as ``$DPSURV_LEDGER`` (what the CLI and the app open)."""
    if request.param == "sqlite":
        found = Backend(str(tmp_path / "ledger.sqlite3"))
    else:
        server = request.getfixturevalue("pg_server")
        database = server.new_database()
        found = Backend(server.url(database), server, database)
    monkeypatch.setenv("DPSURV_LEDGER", found.location)
    return found


@pytest.fixture
def filled(backend) -> LedgerStore:
    """Five records over two data sets: cap A, release A 0.25, release B 0.5, release A 0.125, raise A."""
    store = LedgerStore(backend.location)
    store.set_cap(FP_A, 1.0, "lung")
    charge(store, FP_A, 0.25, {"n": [1, 2]})
    charge(store, FP_B, 0.5)
    charge(store, FP_A, 0.125)
    store.raise_cap(FP_A, 2.0, "second study approved", "lung")
    return store


# ------------------------------------------------------------------------------------------ both backends
def test_the_environment_url_opens_the_backend(backend):
    store = LedgerStore()
    assert type(store).__name__ == ("LedgerStore" if backend.server is None else "PgLedgerStore")
    assert "app-secret" not in str(store.path)


def test_records_chain_from_genesis_and_each_hash_recomputes(filled, backend):
    rows = backend.rows()
    assert [r[0] for r in rows] == [1, 2, 3, 4, 5]
    assert [r[3] for r in rows] == [CAP_SET, RELEASE, RELEASE, RELEASE, CAP_RAISE]
    prev = GENESIS
    for rid, time_, fp, kind, body, prev_hash, h in rows:
        assert prev_hash == prev and record_hash(prev_hash, rid, time_, fp, kind, body) == h
        prev = h
    assert filled.head() == prev


def test_the_view_composes_one_data_set_and_the_cap_holds(filled):
    view = filled.ledger(FP_A)
    assert view.cap == 2.0 and view.spent() == pytest.approx(0.375) and len(view.entries) == 2
    assert filled.ledger(FP_B).spent() == pytest.approx(0.5)
    with pytest.raises(BudgetExceededError, match="exceed the cap"):
        charge(filled, FP_A, 1.7)
    assert len(filled.records()) == 5  # refused: nothing recorded


def test_a_refused_release_and_a_failed_compute_record_nothing(backend):
    store = LedgerStore(backend.location)
    store.set_cap(PLAN_FP, 0.5)
    calls = Calls()
    done = release(make_plan(calls, 0.4), store, calls.noise)
    with pytest.raises(BudgetExceededError):
        release(make_plan(calls, 0.4), store, calls.noise)
    plan = make_plan(calls, 0.05)

    def broken(noise, trials):
        raise RuntimeError("compute failed")

    with pytest.raises(RuntimeError):
        release(dataclasses.replace(plan, compute=broken), store, calls.noise)
    assert [r.id for r in store.records()] == [1, done.record_id] and len(calls.computed) == 1


def test_an_intact_ledger_verifies_and_an_edited_epsilon_is_named(filled, backend, capsys):
    assert run(capsys, "budget", "verify")["ok"] is True
    backend.tamper("UPDATE records SET body = replace(body, '\"epsilon\":0.25', '\"epsilon\":0.01') WHERE id = 2")
    code = main(["budget", "verify", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["ok"] is False and out["first_bad_record"] == 2 and "record 2 was edited" in out["message"]
    with pytest.raises(ChainBrokenError):
        charge(LedgerStore(backend.location), FP_A, 0.01)


def test_a_deleted_record_is_found(filled, backend):
    backend.tamper("DELETE FROM records WHERE id = 3")
    chain = LedgerStore(backend.location).verify()
    assert not chain.ok and chain.first_bad == 3 and "missing" in chain.message


def test_checkpoints_are_written_and_checked(backend, monkeypatch):
    monkeypatch.setattr(checkpoint, "EVERY", 4)
    store = LedgerStore(backend.location)
    for _ in range(9):
        charge(store, FP_A, 0.01)
    assert store.verify().ok and store.verify().records == 9
    # the newest checkpoint's record rewritten with its hash recomputed: the next write is refused
    rows = backend.rows()
    rid, time_, fp, kind, body, prev_hash, _ = rows[7]
    body = body.replace('"epsilon":0.01', '"epsilon":0.001')
    backend.tamper(f"UPDATE records SET body = '{body}', hash = '{record_hash(prev_hash, rid, time_, fp, kind, body)}' "
                   f"WHERE id = {rid}")
    with pytest.raises(ChainBrokenError):
        charge(LedgerStore(backend.location), FP_A, 0.01)


# the SQLite ledger's own tests that open the ledger only through LedgerStore and the CLI, run on PostgreSQL
ON_POSTGRES = [store_tests.test_cap_rules,
               protocol.test_a_release_that_fits_computes_once_charges_once_and_returns_its_record_id,
               protocol.test_a_refused_release_computes_nothing_draws_nothing_and_records_nothing,
               protocol.test_an_exhausted_cap_refuses_even_the_smallest_release,
               protocol.test_a_compute_that_fails_rolls_the_charge_back,
               protocol.test_a_release_with_no_cap_is_recorded_and_says_no_cap_is_set]
ON_POSTGRES_CLI = [protocol.test_a_seeded_run_is_a_simulation_and_records_nothing,
                   protocol.test_a_cli_release_is_charged_to_the_persistent_ledger]


@pytest.mark.parametrize("test", ON_POSTGRES + ON_POSTGRES_CLI, ids=lambda t: t.__name__)
def test_the_sqlite_ledgers_protocol_tests_hold_on_postgresql(test, pg_url, monkeypatch, capsys):
    monkeypatch.setenv("DPSURV_LEDGER", pg_url)
    if test in ON_POSTGRES_CLI:
        test(capsys, pg_url)
    else:
        test(pg_url)


# ------------------------------------------------------------------------------------------ PostgreSQL only
def test_the_triggers_refuse_update_delete_truncate_and_an_old_id_even_to_a_superuser(pg_server, pg_url):
    import psycopg

    store = LedgerStore(pg_url)
    charge(store, FP_A, 0.1)
    charge(store, FP_A, 0.1)
    database = pg_url.rsplit("/", 1)[1]
    for statement in ("UPDATE dpsurv.records SET kind = 'x'", "DELETE FROM dpsurv.records WHERE id = 2",
                      "TRUNCATE dpsurv.records", "TRUNCATE dpsurv.checkpoints", "DELETE FROM dpsurv.ledger_secret",
                      "INSERT INTO dpsurv.records SELECT 1, time, fingerprint, kind, body, prev_hash, hash "
                      "FROM dpsurv.records WHERE id = 2"):
        with pytest.raises(psycopg.Error, match="append-only|duplicate key"):
            pg_server.sql(statement, database=database)
    assert store.verify().ok and store.verify().records == 2


def test_the_app_role_may_read_and_append_but_never_change_even_without_the_triggers(pg_server, pg_url, capsys):
    import psycopg

    LedgerStore(pg_url).set_cap(FP_A, 1.0, "lung")  # the owner opens it first: the schema is made
    database = pg_url.rsplit("/", 1)[1]
    app_url = grant_app_role(pg_server, database)
    app = LedgerStore(app_url)
    assert charge(app, FP_A, 0.25) == 2 and app.ledger(FP_A).spent() == pytest.approx(0.25)
    assert run(capsys, "budget", "verify", "--ledger", app_url)["ok"] is True
    # the owner drops every trigger: the app's role is still refused by its privileges
    drops = [f"DROP TRIGGER {t} ON dpsurv.{table}" for table in ("records", "checkpoints", "ledger_secret")
             for t in (f"{table}_no_change", f"{table}_no_truncate")]
    pg_server.sql(*drops, database=database)
    with psycopg.connect(app_url, autocommit=True) as con:
        for statement in ("UPDATE dpsurv.records SET body = '{}' WHERE id = 2", "DELETE FROM dpsurv.records",
                          "TRUNCATE dpsurv.records", "UPDATE dpsurv.ledger_secret SET value = ''",
                          "DELETE FROM dpsurv.checkpoints", "DROP TABLE dpsurv.records",
                          "DROP TRIGGER records_no_replace ON dpsurv.records"):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                con.execute(statement)
    assert app.verify().ok and app.verify().records == 2


def test_the_app_role_cannot_make_the_schema_and_says_so_in_one_sentence(pg_server):
    database = pg_server.new_database()
    pg_server.sql(f"GRANT CONNECT ON DATABASE {database} TO {APP_ROLE}", "REVOKE CREATE ON SCHEMA public FROM PUBLIC",
                  database=database)
    pg_server.sql(f"REVOKE CREATE ON DATABASE {database} FROM PUBLIC")
    with pytest.raises(LedgerFileError, match="no dpsurv schema yet and this role may not make it"):
        LedgerStore(pg_server.url(database, APP_ROLE, "app-secret"))


def test_an_unreachable_server_and_a_missing_driver_are_one_sentence_and_exit_2(capsys, monkeypatch, pg_server):
    line = fails(capsys, "budget", "verify", "--ledger", "postgresql://nobody:pw@127.0.0.1:1/none")
    assert "could not be reached" in line and "pw" not in line
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    line = fails(capsys, "budget", "verify", "--ledger", pg_server.url("postgres"))
    assert "needs the psycopg driver" in line and "pip install 'dpsurv[postgres]'" in line


# ------------------------------------------------------------------------------------------ twenty processes
APP_SESSION = """
import json, sys, time
from pathlib import Path
from streamlit.testing.v1 import AppTest
from tests.app.test_pages_curves import CURVES, declared

at = AppTest.from_file(CURVES, default_timeout=300)
at.session_state["data_choice"] = declared("lung")
at.run()
at.select_slider(key="sc_epsilon").set_value(0.1).run()
at.button(key="release-curves").click().run()
confirm = at.button(key="confirm-release-curves")  # the session waits at its confirming click
print("ready", flush=True)
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.01)
confirm.click().run()
print(json.dumps({"errors": [e.value for e in at.error], "exceptions": [str(e.value) for e in at.exception]}))
"""


CLI_RUN = """
import sys, time
from pathlib import Path
from dpsurv_core.__main__ import main

print("ready", flush=True)
go = Path(sys.argv[1])
while not go.exists():
    time.sleep(0.01)
sys.exit(main(sys.argv[2:]))
"""


def _collect(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    results = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=600)
            results.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    return results


def _cli(url: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "dpsurv_core", *KM, "--epsilon", "0.1", "--ledger", url, "--json"]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "DPSURV_LEDGER": url})


def _settled(capsys, url: str, releases: int) -> None:
    show = run(capsys, "budget", "show", "--data", "lung", "--ledger", url)
    assert abs(show["spent"] - 1.0) <= 1e-9 and len(show["releases"]) == releases and show["cap"] == 1.0
    verify = run(capsys, "budget", "verify", "--ledger", url)
    assert verify["ok"] is True and verify["records"] == releases + 1


@pytest.mark.slow
def test_twenty_cli_processes_against_a_cap_of_one_get_exactly_ten(capsys, pg_url):
    assert run(capsys, "budget", "set", "--data", "lung", "--cap", "1", "--ledger", pg_url)["cap"] == 1.0
    results = _collect([_cli(pg_url) for _ in range(20)])
    ok = [json.loads(out) for code, out, _ in results if code == 0]
    refused = [err for code, _, err in results if code == 2]
    assert len(ok) == 10 and len(refused) == 10, [(c, e[-300:]) for c, _, e in results]
    assert sorted(o["record_id"] for o in ok) == list(range(2, 12))
    assert all("but only 0 of the cap 1 is left" in err for err in refused)
    _settled(capsys, pg_url, 10)


@pytest.mark.slow
def test_ten_app_sessions_and_ten_cli_runs_against_a_cap_of_one_get_exactly_ten(capsys, pg_url, tmp_path):
    """Ten app sessions, each running the Survival curves page in Streamlit's AppTest through the release and its
    confirming click (the release goes through dpsurv_app.release_panel, as a click in the browser does), and ten command
    lines on `python -m dpsurv_core`'s entry point: all loaded first, then all started at once."""
    assert run(capsys, "budget", "set", "--data", "lung", "--cap", "1", "--ledger", pg_url)["cap"] == 1.0
    go = tmp_path / "go"
    env = {**os.environ, "DPSURV_LEDGER": pg_url, "PYTHONPATH": str(ROOT)}
    km = [*KM, "--epsilon", "0.1", "--ledger", pg_url, "--json"]
    apps = [subprocess.Popen([sys.executable, "-c", APP_SESSION, str(go)], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(10)]
    clis = [subprocess.Popen([sys.executable, "-c", CLI_RUN, str(go), *km], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(10)]
    try:
        for p in apps + clis:  # every session at its confirming click, every command line loaded
            line = p.stdout.readline()
            assert line.strip() == "ready", (line, p.poll(), p.stderr.read()[-3000:] if p.poll() is not None else "")
    except BaseException:
        for p in apps + clis:
            p.kill()
        raise
    go.touch()
    start = time.monotonic()
    app_results, cli_results = _collect(apps), _collect(clis)
    assert time.monotonic() - start < 600
    assert all(code == 0 for code, _, _ in app_results), [e[-500:] for _, _, e in app_results]
    sessions = [json.loads(out.strip().splitlines()[-1]) for _, out, _ in app_results]
    assert all(not s["exceptions"] for s in sessions), sessions
    app_refused = [s for s in sessions if any("exceed the cap" in e for e in s["errors"])]
    cli_ok = [json.loads(out) for code, out, _ in cli_results if code == 0]
    cli_refused = [err for code, _, err in cli_results if code == 2 and "but only 0 of the cap 1 is left" in err]
    assert len(cli_ok) + len(cli_refused) == 10, [(c, e[-300:]) for c, _, e in cli_results]
    app_ok = [s for s in sessions if not s["errors"]]
    assert len(app_ok) + len(app_refused) == 10 and len(app_ok) + len(cli_ok) == 10, (sessions, len(cli_ok))
    with capsys.disabled():
        print(f"\napp sessions: {len(app_ok)} released, {len(app_refused)} refused; command lines: {len(cli_ok)} released, "
              f"{len(cli_refused)} refused")
    records = [r for r in LedgerStore(pg_url).records() if r.kind == RELEASE]
    assert len(records) == 10 and sorted(r.id for r in records) == list(range(2, 12))
    _settled(capsys, pg_url, 10)
