"""The server-wide cap on concurrent heavy work (dpsurv_app.capacity): its slots, their re-entrancy, and a release refused
for want of a slot, which draws and charges nothing."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from dpsurv_app import capacity
from tests.app.apptest import release
from tests.app.test_pages_curves import CURVES, releases, run


@pytest.fixture(autouse=True)
def fresh_slots(monkeypatch) -> Iterator[None]:
    monkeypatch.setenv(capacity.WAIT_ENV, "0.2")
    capacity.reset(2)
    yield
    capacity.reset()


def _hold(n: int) -> tuple[threading.Event, list[threading.Thread]]:
    """``n`` threads, each holding a slot until the returned event is set."""
    done, ready = threading.Event(), threading.Barrier(n + 1)

    def hold() -> None:
        with capacity.heavy():
            ready.wait()
            done.wait(30)

    threads = [threading.Thread(target=hold, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    ready.wait(10)
    return done, threads


def _free(done: threading.Event, threads: list[threading.Thread]) -> None:
    done.set()
    for t in threads:
        t.join(10)


def test_environment_sets_the_slots_and_the_wait(monkeypatch):
    monkeypatch.setenv(capacity.CONCURRENT_ENV, "3")
    monkeypatch.setenv(capacity.WAIT_ENV, "1.5")
    assert capacity.max_concurrent() == 3 and capacity.wait_seconds() == 1.5
    for bad in ("", "zero", "0", "-2"):
        monkeypatch.setenv(capacity.CONCURRENT_ENV, bad)
        assert capacity.max_concurrent() == capacity.DEFAULT_MAX_CONCURRENT
    monkeypatch.delenv(capacity.WAIT_ENV)
    assert capacity.wait_seconds() == capacity.DEFAULT_WAIT_SECONDS


def test_a_third_piece_of_work_waits_then_is_refused_with_one_sentence():
    done, threads = _hold(2)
    try:
        assert capacity.in_use() == 2
        ran = []
        with pytest.raises(capacity.ServerBusy) as err:
            with capacity.heavy():
                ran.append(1)
        assert ran == [] and str(err.value) == capacity.BUSY  # the block never started
        assert isinstance(err.value, capacity.DpsurvError)  # pages' DpsurvError handlers show it as a sentence
        assert capacity.deferred(lambda: "report", capacity.busy_html)() == capacity.busy_html()
        assert capacity.BUSY in capacity.busy_html()
        with pytest.raises(capacity.ServerBusy):
            capacity.deferred(lambda: b"%PDF")()
    finally:
        _free(done, threads)
    assert capacity.in_use() == 0
    with capacity.heavy():  # free again
        assert capacity.in_use() == 1 and capacity.holding()
    assert capacity.deferred(lambda: "report", capacity.busy_html)() == "report"


def test_a_thread_holding_a_slot_takes_no_second_one():
    capacity.reset(1)
    with capacity.heavy():
        with capacity.heavy(), capacity.heavy():  # a release inside a page's slot: no deadlock, no second slot
            assert capacity.in_use() == 1
        assert capacity.holding()
    assert capacity.in_use() == 0 and not capacity.holding()


def test_the_slot_is_given_back_when_the_work_fails():
    with pytest.raises(ZeroDivisionError), capacity.heavy():
        raise ZeroDivisionError
    assert capacity.in_use() == 0


def test_many_threads_never_hold_more_than_the_cap():
    capacity.reset(2)
    peak, lock = [0], threading.Lock()

    def work() -> None:
        try:
            with capacity.heavy(wait=10):
                with lock:
                    peak[0] = max(peak[0], capacity.in_use())
                threading.Event().wait(0.02)
        except capacity.ServerBusy:
            pass

    threads = [threading.Thread(target=work) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert peak[0] == 2 and capacity.in_use() == 0


def test_a_release_refused_for_want_of_a_slot_is_one_sentence_and_charges_nothing():
    at = run(CURVES, grid=True)  # the preview is computed (a slot free) and kept in the session
    done, threads = _hold(2)
    try:
        release(at, "release-curves").run()
    finally:
        _free(done, threads)
    assert not at.exception, [e.message for e in at.exception]
    assert [e.value for e in at.error] == [capacity.BUSY]
    assert releases() == []
    release(at, "release-curves").run()  # a slot is free again: the release goes through, once
    assert not at.exception and len(releases()) == 1


def test_a_preview_with_no_slot_says_so_and_stops_the_page():
    done, threads = _hold(2)
    try:
        at = run(CURVES, grid=True)
    finally:
        _free(done, threads)
    assert [e.value for e in at.error] == [capacity.BUSY]
    assert releases() == []
