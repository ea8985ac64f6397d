"""Protocol tests release plain numbers read by a test reader (:mod:`tests.privacy.readers`)."""

import pytest

from dpsurv_core.publication import readers
from tests.privacy.postgres import pg_server, pg_url  # noqa: F401 (fixtures: a throw-away PostgreSQL server)


@pytest.fixture(autouse=True)
def echo_reader(monkeypatch):
    monkeypatch.setitem(readers.READERS, "echo", "tests.privacy.readers:echo")

