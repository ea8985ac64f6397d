"""Shared fixtures. Browser tests use Debian's chromium through Playwright (executable_path)."""

from __future__ import annotations

import functools
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "tests" / "artifacts"

# derandomize: every run tries the same examples, so a green CI stays green on a clean clone; a rare counterexample
# is found by running with another profile or seed, then kept as a fixed case
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")

SLOW_TESTS = ROOT / "tests" / "slow_tests.txt"
STALE_SLOW = pytest.StashKey[list]()  # the ids of slow_tests.txt that name no test, when the whole suite is collected


def _scan_components_once() -> None:
    """Each new AppTest scans every installed package's metadata for Streamlit components (0.3-0.6 s here, hundreds of
    times a run); the installed packages do not change during a run, so each test process scans once."""
    try:
        from streamlit.components.v2 import manifest_scanner
    except ImportError:  # a Streamlit without v2 components scans nothing
        return
    scan = manifest_scanner.scan_component_manifests
    once = functools.cache(scan)
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(once(max_workers))  # type: ignore[assignment]


_scan_components_once()


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(config, items) -> None:
    """The tests listed in tests/slow_tests.txt (0.2 s or more on the 2-core machine; tests/slow_list.py
    writes the list) are marked slow, and so is every test that starts Spark or PostgreSQL: make test-fast leaves them
    out; make test runs them all."""
    listed = {line.strip() for line in SLOW_TESTS.read_text().splitlines() if line.strip() and not line.startswith("#")}
    for item in items:
        if item.nodeid in listed or _starts_a_server(item):
            item.add_marker(pytest.mark.slow)
    if config.args and all(Path(a).resolve() == ROOT / "tests" for a in config.args):  # the whole suite collected
        collected = {item.nodeid for item in items}
        files = {nodeid.split("::")[0] for nodeid in collected}
        # a listed test whose file exists but collected nothing (a module skipped where a tool is missing) is not stale
        config.stash[STALE_SLOW] = sorted(i for i in listed - collected
                                          if i.split("::")[0] in files or not (ROOT / i.split("::")[0]).exists())


def _starts_a_server(item) -> bool:
    """A test that needs a JVM (Spark) or a PostgreSQL server, directly or through a backend parameter."""
    if {"spark_session", "pg_server", "pg_url"} & set(getattr(item, "fixturenames", ())):
        return True
    spec = getattr(item, "callspec", None)
    return spec is not None and any(isinstance(v, str) and v == "postgresql" for v in spec.params.values())


CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage"]


def chromium_path() -> str | None:
    for cand in (os.environ.get("DPSURV_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium")):
        if cand and Path(cand).exists():
            return cand
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def ledger_path(tmp_path, monkeypatch) -> Path:
    """Every test (and every process it starts) writes to its own ledger database, never the user's."""
    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("DPSURV_LEDGER", str(path))
    monkeypatch.setenv("DPSURV_FINGERPRINT_CACHE", str(tmp_path / "fingerprints.json"))  # nor the user's cache
    return path


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@contextmanager
def launch_app(ledger: Path, extra_args: tuple[str, ...] = (), env: dict[str, str] | None = None,
               port: int | None = None, preexec_fn: Callable[[], object] | None = None) -> Iterator[str]:
    """Start the real app headless on a free localhost port with ``DPSURV_LEDGER=ledger`` (``extra_args`` to
    ``streamlit run``, ``env`` added to the environment, ``preexec_fn`` run in the server's process before it starts,
    e.g. to set an address-space limit); yields its URL."""
    port = port or _free_port()
    log = ledger.parent / f"app-{port}.log"  # a file, not a pipe: a long run's log never fills a buffer and blocks
    err = log.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(ROOT / "dpsurv_app" / "app.py"), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none", *extra_args],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err, env={**os.environ, "DPSURV_LEDGER": str(ledger), **(env or {})},
        preexec_fn=preexec_fn,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            time.sleep(0.3)
    else:
        proc.kill()
        err.close()
        pytest.fail("the app did not answer its health check within 60 s: " + log.read_text(errors="replace")[-2000:])
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        err.close()


@pytest.fixture(scope="session")
def app_ledger_path(tmp_path_factory) -> Path:
    """The ledger database of the app that ``app_url`` starts (read it with ``LedgerStore(path)``)."""
    return tmp_path_factory.mktemp("app-ledger") / "ledger.sqlite3"


@pytest.fixture(scope="session")
def app_url(app_ledger_path):
    """Start the real app headless on a free localhost port, its ledger at ``app_ledger_path``; yields its URL."""
    with launch_app(app_ledger_path) as url:
        yield url


@pytest.fixture(scope="session")
def browser():
    path = chromium_path()
    if path is None:
        pytest.skip("Debian chromium is not installed (apt was unavailable): browser tests skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=path, args=CHROMIUM_FLAGS)
        yield b
        b.close()


@pytest.fixture
def page(browser, app_url):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    ctx.close()


def wait_for_app(pg) -> None:
    """Wait until Streamlit has finished running the script."""
    pg.wait_for_selector("[data-testid='stApp']")
    pg.wait_for_function(
        "() => !document.querySelector('[data-testid=\"stStatusWidget\"]')"
        " || !document.querySelector('[data-testid=\"stStatusWidget\"]').innerText.includes('Running')",
        timeout=60_000,
    )
    pg.wait_for_timeout(300)
    # elements of the run before that the new run has not redrawn yet are marked stale until it ends
    pg.wait_for_function("() => !document.querySelector('[data-stale=\"true\"]')", timeout=60_000)


@pytest.fixture(scope="session")
def spark_session():
    """One local Spark session for the whole run (skipped without PySpark or Java: `make test` installs both)."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java: `make test` installs Debian's headless JRE")
    from dpsurv_core.engines import spark

    yield spark.session("local[2]")
