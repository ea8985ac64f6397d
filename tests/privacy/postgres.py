"""A throw-away PostgreSQL server for the ledger tests: Debian's binaries, a temporary cluster on a free loopback
port with its unix socket in the same temporary folder, stopped and removed at the end of the session.

Where no PostgreSQL server binaries are found the tests that need one are skipped with the reason printed
(``make test`` installs Debian's ``postgresql`` package with apt first, where apt is available). The server runs as
an unprivileged user when the tests run as root (initdb refuses root): ``postgres`` when Debian's package made it,
else ``nobody``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import _free_port

APP_ROLE = "dpsurv_app"
APP_PASSWORD = "app-secret"
SKIP = ("no PostgreSQL server binaries (initdb, pg_ctl) were found: install Debian's postgresql package (`make test` "
        "does it with apt where apt is available) to run the PostgreSQL ledger tests")


def bin_dir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on the PATH, else Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(os.path.realpath(found)).parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def _server_user() -> str | None:
    """The user the server runs as: None (this user) unless this is root."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    return None


@dataclass(frozen=True)
class Server:
    """A running throw-away cluster: its port and the superuser's name."""

    port: int
    superuser: str = "postgres"

    def url(self, database: str = "postgres", user: str | None = None, password: str | None = None) -> str:
        who = user or self.superuser
        auth = f"{who}:{password}" if password else who
        return f"postgresql://{auth}@127.0.0.1:{self.port}/{database}"

    def sql(self, *statements: str, database: str = "postgres") -> list:
        """Run ``statements`` as the superuser (autocommit); the last one's rows, if it returns any."""
        import psycopg

        rows: list = []
        with psycopg.connect(self.url(database), autocommit=True) as con:
            for s in statements:
                cur = con.execute(s)
                rows = cur.fetchall() if cur.description else []
        return rows

    def new_database(self) -> str:
        """A fresh, empty database; returns its name."""
        name = "ledger_" + uuid.uuid4().hex[:12]
        self.sql(f"CREATE DATABASE {name}")
        return name


def _as_server_user(argv: list[str], user: str | None) -> list[str]:
    return argv if user is None else ["runuser", "-u", user, "--", *argv]


@contextmanager
def running_server() -> Iterator[Server]:
    """Start a cluster in a temporary folder (trust authentication on loopback only), yield it, stop and remove it."""
    binaries = bin_dir()
    if binaries is None:
        pytest.skip(SKIP)
    try:
        import psycopg  # noqa: F401
    except ImportError:
        pytest.skip("psycopg is not installed: pip install -r requirements-dev.txt to run the PostgreSQL ledger tests")
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="dpsurv-pg-"))
    data, log = root / "data", root / "server.log"
    if user is not None:
        info = pwd.getpwnam(user)
        os.chown(root, info.pw_uid, info.pw_gid)
    root.chmod(0o700)
    port = _free_port()
    try:
        subprocess.run(_as_server_user([str(binaries / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust",
                                        "--no-sync", "-E", "UTF8"], user),
                       check=True, capture_output=True, cwd=root)
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
        started = subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-o",
                                                  options, "-w", "-t", "60", "start"], user),
                                 capture_output=True, text=True, cwd=root)
        if started.returncode != 0:
            text = log.read_text() if log.exists() else started.stderr
            raise RuntimeError(f"the throw-away PostgreSQL server did not start: {text[-2000:]}")
        server = Server(port)
        server.sql(f"CREATE ROLE {APP_ROLE} LOGIN PASSWORD '{APP_PASSWORD}'")
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(_as_server_user([str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                                            "stop"], user), capture_output=True, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Server]:
    """One throw-away PostgreSQL server for the whole test session (skipped with a reason where there is none)."""
    with running_server() as server:
        yield server


@pytest.fixture
def pg_url(pg_server: Server) -> str:
    """A fresh database on the session's server, as the superuser's URL (the ledger's owner makes its schema)."""
    return pg_server.url(pg_server.new_database())


def grant_app_role(server: Server, database: str) -> str:
    """Grant the app's role what docs/deployment.md grants (SELECT and INSERT only); returns its URL."""
    server.sql(f"GRANT CONNECT ON DATABASE {database} TO {APP_ROLE}",
               f"GRANT USAGE ON SCHEMA dpsurv TO {APP_ROLE}",
               f"GRANT SELECT, INSERT ON dpsurv.records, dpsurv.checkpoints, dpsurv.ledger_secret TO {APP_ROLE}",
               database=database)
    return server.url(database, APP_ROLE, APP_PASSWORD)
