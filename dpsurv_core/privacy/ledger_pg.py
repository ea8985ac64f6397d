"""The ledger in PostgreSQL, for several app servers (and command lines) sharing one budget.

``DPSURV_LEDGER=postgresql://user@host/db`` (or ``--ledger postgresql://...``) keeps the same records as the SQLite
ledger, with the same protocol: the hash chain (:mod:`dpsurv_core.privacy.chain`), its checkpoints
(:mod:`dpsurv_core.privacy.checkpoint`), the data set keys and ``budget verify``. The tables live in the schema
:data:`SCHEMA` of the database the URL names.

Check and charge are atomic across servers. A transaction first takes a transaction-scoped advisory lock on its data
set's key (``pg_advisory_xact_lock``), then reads that data set's records: two releases of one data set run one after
the other, and the second sees the first's charge (PostgreSQL's default READ COMMITTED isolation shows each statement
everything committed before it). Appending takes a second, ledger-wide advisory lock before it reads the chain's head,
since record ids and the hash chain run across every data set; the locks are always taken in that order, so two
transactions never wait for each other in a circle. Both are released at COMMIT or ROLLBACK. Releases of different
data sets compute in parallel and only their appends queue.

Append-only is enforced twice: triggers refuse UPDATE, DELETE and TRUNCATE of the records, checkpoints and the
ledger's secret (and an INSERT that is not past the newest id), and the app's role is granted only SELECT and INSERT
(:data:`ROLE_SQL`; docs/deployment.md). Someone who can drop the triggers (the schema's owner, a superuser) can still
edit records; ``budget verify`` finds it, as with the SQLite file.

psycopg 3 is imported only when a ``postgresql://`` ledger is opened: the extra ``postgres``,
``pip install 'dpsurv[postgres]'``.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import secrets
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from typing import Any

from dpsurv_core.privacy.chain import (
    _CHAIN_QUERY,
    LEDGER_ENV,
    ChainBrokenError,
    dataset_key,
    is_key,
    is_ledger_url,
    walk_chain,
)
from dpsurv_core.privacy.ledger import LedgerStore, Transaction
from dpsurv_core.privacy.ledger_file import LedgerFileError
from dpsurv_core.privacy.roles import Actor, local_actor

SCHEMA = "dpsurv"
LOCK_CLASS_DATASET = 0x64707376  # "dpsv": the first key of a data set's advisory lock
LOCK_CLASS_CHAIN = 0x64707363  # "dpsc": the ledger-wide lock taken to append
LOCK_CLASS_SCHEMA = 0x64707373  # "dpss": the lock taken while the schema is made
DRIVER = "pip install 'dpsurv[postgres]'"  # the extra that installs psycopg[binary] (dpsurv_core.extras)
_PREPARED: set[str] = set()  # the URLs whose schema this process has found or made

_APPEND_ONLY = """
CREATE OR REPLACE FUNCTION {s}.append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    RAISE EXCEPTION 'the ledger is append-only' USING ERRCODE = 'insufficient_privilege';
END
$fn$;
CREATE OR REPLACE FUNCTION {s}.past_newest_record() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NEW.id <= (SELECT COALESCE(MAX(id), 0) FROM {s}.records) THEN
        RAISE EXCEPTION 'the ledger is append-only' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
CREATE OR REPLACE FUNCTION {s}.past_newest_checkpoint() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF NEW.record_id <= (SELECT COALESCE(MAX(record_id), 0) FROM {s}.checkpoints) THEN
        RAISE EXCEPTION 'the ledger is append-only' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$fn$;
"""

SCHEMA_SQL = f"""
CREATE SCHEMA IF NOT EXISTS {SCHEMA};
CREATE TABLE IF NOT EXISTS {SCHEMA}.records (
    id BIGINT PRIMARY KEY,
    time TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    body TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_fingerprint ON {SCHEMA}.records (fingerprint);
CREATE TABLE IF NOT EXISTS {SCHEMA}.ledger_secret (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS {SCHEMA}.checkpoints (record_id BIGINT PRIMARY KEY, hash TEXT NOT NULL, time TEXT NOT NULL);
{_APPEND_ONLY.format(s=SCHEMA)}
""" + "".join(
    f"CREATE OR REPLACE TRIGGER {table}_no_change BEFORE UPDATE OR DELETE ON {SCHEMA}.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.append_only();\n"
    f"CREATE OR REPLACE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {SCHEMA}.{table} "
    f"FOR EACH STATEMENT EXECUTE FUNCTION {SCHEMA}.append_only();\n"
    for table in ("records", "checkpoints", "ledger_secret")
) + "".join(
    f"CREATE OR REPLACE TRIGGER {table}_no_replace BEFORE INSERT ON {SCHEMA}.{table} "
    f"FOR EACH ROW EXECUTE FUNCTION {SCHEMA}.past_newest_{row}();\n"
    for table, row in (("records", "record"), ("checkpoints", "checkpoint"))
)

ROLE_SQL = f"""
-- run as the schema's owner once the ledger has been opened by that owner (which makes the schema)
CREATE ROLE dpsurv_app LOGIN PASSWORD 'change-me';
GRANT CONNECT ON DATABASE dpsurv TO dpsurv_app;
GRANT USAGE ON SCHEMA {SCHEMA} TO dpsurv_app;
GRANT SELECT, INSERT ON {SCHEMA}.records, {SCHEMA}.checkpoints, {SCHEMA}.ledger_secret TO dpsurv_app;
"""
"""The app's role: it may read and append, never UPDATE, DELETE or TRUNCATE (docs/deployment.md)."""


def _shown_url(url: str) -> str:
    """The URL with any password replaced by ``***``: what sentences, exports and screens show."""
    url = re.sub(r"^(postgres(?:ql)?://[^:/@]*):[^@/]*@", r"\1:***@", url)
    return re.sub(r"([?&]password=)[^&]*", r"\1***", url)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise LedgerFileError(f"A postgresql:// ledger needs the psycopg driver, which is not installed: run `{DRIVER}` "
                              "or choose an SQLite ledger path with --ledger or DPSURV_LEDGER.") from None
    return psycopg


def _lock_key(key: str) -> int:
    """A data set key as the signed 32-bit second key of its advisory lock (two keys sharing one only wait for
    each other)."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:4], "big", signed=True)


class PgConnection:
    """A psycopg connection that speaks like the ``sqlite3`` one the shared ledger code uses: ``execute`` with ``?``
    placeholders returning a cursor, ``close``; and no file to check (:meth:`integrity_check`)."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: tuple | list = ()) -> Any:
        return self.raw.execute(sql.replace("?", "%s"), tuple(params) if params else None)

    def integrity_check(self, quick: bool = False) -> str | None:
        """PostgreSQL keeps its own pages (write-ahead log, optional checksums): there is no file-level check to run
        here, so the chain's walk is the whole verification."""
        return None

    def close(self) -> None:
        self.raw.close()


def pg_guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A :class:`PgLedgerStore` method whose psycopg failures are one sentence (:meth:`PgLedgerStore.failure`)."""
    @functools.wraps(method)
    def wrapper(self: PgLedgerStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _driver().Error as exc:
            raise self.failure(exc) from None

    return wrapper


class PgLedgerStore(LedgerStore):
    """The ledger in a PostgreSQL database (:class:`LedgerStore` opened with a ``postgresql://`` URL)."""

    def __init__(self, path: str | None = None, timeout: float = 600.0, actor: Actor | None = None) -> None:
        url = str(path) if path else os.environ.get(LEDGER_ENV, "")
        if not is_ledger_url(url):
            raise LedgerFileError(f"{_shown_url(url)!r} is not a postgresql:// URL.")
        self.url = url
        # what sentences show (never the password); a URL, not a file, so never read as a Path
        self.path = _shown_url(url)  # type: ignore[assignment]
        self.timeout = timeout
        self.actor = actor or local_actor()
        self._secret: bytes | None = None
        if url not in _PREPARED:  # once per ledger and process: the app opens it on every rerun
            self._prepare()
            _PREPARED.add(url)

    # ----------------------------------------------------------------------------------------- connections
    def failure(self, exc: Exception) -> LedgerFileError:
        """One sentence for a psycopg failure on this ledger."""
        psycopg = _driver()
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if isinstance(exc, psycopg.errors.InsufficientPrivilege):
            return LedgerFileError(f"The PostgreSQL ledger {self.path!r} refused this ({text}): its records are "
                                   "append-only, and the app's role may only read and append them.")
        if isinstance(exc, psycopg.OperationalError):
            return LedgerFileError(f"The PostgreSQL ledger {self.path!r} could not be reached or stayed locked ({text}): "
                                   "check the server and the URL in --ledger or DPSURV_LEDGER, and try again.")
        return LedgerFileError(f"The PostgreSQL ledger {self.path!r} could not be read or written ({text}): run "
                               "`python -m dpsurv_core budget verify` and check the database.")

    def _raw(self) -> Any:
        psycopg = _driver()
        try:
            raw = psycopg.connect(self.url, autocommit=True, connect_timeout=30)
        except psycopg.Error as exc:
            raise self.failure(exc) from None
        raw.execute(f"SET search_path TO {SCHEMA}")
        raw.execute(f"SET lock_timeout = {int(self.timeout * 1000)}")
        return raw

    def _connect(self) -> PgConnection:  # type: ignore[override]
        return PgConnection(self._raw())

    def _prepare(self) -> None:
        """Make the schema where it is missing (the owner's first open); an existing schema is only checked, so that
        the app's role, which may not create anything, opens it."""
        psycopg = _driver()
        with closing(self._raw()) as raw:
            try:
                if raw.execute(f"SELECT to_regclass('{SCHEMA}.records')").fetchone()[0] is not None:
                    return
                with raw.transaction():
                    raw.execute("SELECT pg_advisory_xact_lock(%s, 0)", (LOCK_CLASS_SCHEMA,))
                    raw.execute(SCHEMA_SQL)
            except psycopg.errors.InsufficientPrivilege as exc:
                raise LedgerFileError(
                    f"The PostgreSQL ledger {self.path!r} has no {SCHEMA} schema yet and this role may not make it "
                    f"({str(exc).strip()}): open the ledger once as the database's owner (for example `python -m "
                    "dpsurv_core budget verify --ledger postgresql://OWNER@HOST/DB`), then grant the app's role "
                    "SELECT and INSERT (docs/deployment.md).") from None
            except psycopg.Error as exc:
                raise self.failure(exc) from None

    # ----------------------------------------------------------------------------------------- reading
    @pg_guarded
    def key(self, fingerprint: str) -> str:
        """The key this ledger keeps ``fingerprint``'s budget under (:func:`dataset_key`), its secret made once per
        ledger and kept in the ``ledger_secret`` table."""
        if not fingerprint or is_key(fingerprint):
            return fingerprint
        if self._secret is None:
            with closing(self._connect()) as con:
                query = "SELECT value FROM ledger_secret WHERE name = 'dataset-key'"
                row = con.execute(query).fetchone()
                if row is None:
                    con.execute("INSERT INTO ledger_secret (name, value) VALUES ('dataset-key', ?) "
                                "ON CONFLICT (name) DO NOTHING", (secrets.token_hex(32),))
                    row = con.execute(query).fetchone()
                self._secret = bytes.fromhex(row[0])
        return dataset_key(self._secret, fingerprint)

    @pg_guarded
    def records(self, fingerprint: str | None = None) -> list:
        return LedgerStore.records.__wrapped__(self, fingerprint)  # type: ignore[attr-defined]  # set by functools.wraps

    @pg_guarded
    def head(self) -> str:
        return LedgerStore.head.__wrapped__(self)  # type: ignore[attr-defined]

    @pg_guarded
    def verify(self) -> Any:
        """The walk of every record from the first (:func:`walk_chain`), then every checkpoint against it."""
        return LedgerStore.verify.__wrapped__(self)  # type: ignore[attr-defined]

    # ----------------------------------------------------------------------------------------- writing
    @contextmanager
    def transaction(self, fingerprint: str) -> Iterator[Transaction]:
        """The data set's advisory lock, then its view read under it; commits on success, rolls back on any
        exception (the locks go with the transaction)."""
        psycopg = _driver()
        key = self.key(fingerprint)
        con = self._connect()
        try:
            with con.raw.transaction():
                con.execute("SELECT pg_advisory_xact_lock(?, ?)", (LOCK_CLASS_DATASET, _lock_key(key)))
                try:
                    view = self._view(self._rows(con, fingerprint))  # type: ignore[arg-type]
                except (ValueError, TypeError, KeyError):  # a record that no longer reads: where the chain breaks
                    chain = walk_chain(con.execute(_CHAIN_QUERY))
                    if not chain.ok:
                        raise ChainBrokenError(chain) from None
                    raise
                yield PgTransaction(con, key, view, self.actor)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise self.failure(exc) from None
        finally:
            con.close()


class PgTransaction(Transaction):
    """A :class:`Transaction` whose appends first take the ledger-wide lock, so that the chain's head it reads is the
    newest committed one and no other server appends until this transaction ends."""

    def append(self, kind: str, body: dict[str, Any]) -> int:
        self.con.execute("SELECT pg_advisory_xact_lock(?, 0)", (LOCK_CLASS_CHAIN,))
        return super().append(kind, body)

