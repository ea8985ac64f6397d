"""dpsurv_app.warmup imports the pages' heavy libraries only while no script runs, and a run that starts meanwhile waits for
the import under way; it starts no process."""

from __future__ import annotations

import importlib
import threading
import time

import pytest

from dpsurv_app import warmup


@pytest.fixture
def fresh(monkeypatch):
    """dpsurv_app.warmup with its state reset, importing nothing real: each step records itself."""
    done: list[str] = []
    slow = threading.Event()

    def fake_import(name: str) -> None:
        if name == "slow":
            slow.set()
            time.sleep(0.4)
        done.append(name)

    monkeypatch.setattr(warmup, "MODULES", ("first", "slow", "last"))
    monkeypatch.setattr(warmup, "IDLE_S", 0.05)
    monkeypatch.setattr(warmup.importlib, "import_module", fake_import)
    monkeypatch.setattr(warmup, "_runs", {})
    monkeypatch.setattr(warmup, "_importing", False)
    monkeypatch.setattr(warmup, "_thread", None)
    monkeypatch.setattr(warmup, "_session", lambda: threading.current_thread().name)
    yield done, slow
    monkeypatch.setattr(warmup, "_runs", {})  # let the thread run out (it is a daemon)


def wait_until(check, timeout: float = 5.0) -> None:
    end = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.01)


def test_nothing_is_imported_while_a_script_runs_and_a_run_waits_for_an_import_under_way(fresh):
    done, slow = fresh
    warmup.script_started()  # the first run: the thread is started at its end
    warmup.start()
    time.sleep(0.3)
    assert done == []  # a run is under way: nothing imported
    warmup.script_finished()
    slow.wait(5)  # idle: the steps run, up to the slow one
    started = time.monotonic()
    warmup.script_started()  # a run starting during the slow import waits for it to finish ...
    waited = time.monotonic() - started
    assert done == ["first", "slow"] and waited >= 0.2
    time.sleep(0.3)
    assert done == ["first", "slow"]  # ... and holds the next import until it ends
    warmup.script_finished()
    wait_until(warmup.done)
    assert done == ["first", "slow", "last"]


def test_a_run_that_never_said_it_finished_holds_the_imports_back_only_for_a_while(fresh, monkeypatch):
    done, _ = fresh
    monkeypatch.setattr(warmup, "STALE_S", 0.2)
    warmup.script_started()  # stopped before app.py's bracket: script_finished is never called for it
    warmup.start()
    time.sleep(0.1)
    assert done == []
    wait_until(warmup.done)
    assert done == ["first", "slow", "last"]


def test_the_modules_listed_exist():
    """Every module the thread imports is importable here (a renamed module would be skipped silently)."""
    for name in warmup.MODULES:
        importlib.util.find_spec(name)  # raises for a missing parent package
        assert importlib.util.find_spec(name) is not None, name


class _Cyclic:
    """Garbage whose collection runs Python code, so the collector can hand the interpreter to another thread."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        [i for i in range(50)]


def test_two_threads_parsing_at_once_meet_no_ast_depth_error():
    """Streamlit parses a page script in its script thread while this module's thread imports matplotlib, which parses
    too; on Python 3.11 that raised "AST constructor recursion depth mismatch" on a page's first run until ast.parse
    was serialised (without it this loop raised it 9 to 11 times in 600 parses)."""
    import ast
    import gc
    from pathlib import Path

    assert getattr(ast.parse, "_dpsurv_serialised", False) or __import__("sys").version_info >= (3, 13)
    script = (Path(__file__).parents[2] / "dpsurv_app" / "app.py").read_text() * 3
    errors: list[str] = []

    def pages() -> None:
        for _ in range(150):
            try:
                ast.parse(script)
            except SystemError as e:
                errors.append(str(e))

    def styles() -> None:
        for _ in range(150):
            try:
                for _ in range(200):
                    _Cyclic()
                ast.parse("a = [1, 2, (3, 4)]\n" * 200)
            except SystemError as e:
                errors.append(str(e))

    threshold = gc.get_threshold()
    gc.set_threshold(50)
    try:
        threads = [threading.Thread(target=pages), threading.Thread(target=styles)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        gc.set_threshold(*threshold)
    assert errors == []
