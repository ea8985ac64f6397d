"""A server-wide cap on concurrent heavy work, so that one session cannot starve the others.

Every browser session of the app runs its script in a thread of one server process. Reading an upload, a preview, a
release, an audit, a trade-off study or a report each take a slot of one bounded semaphore shared by all sessions
(module-level: Streamlit imports ``dpsurv_app`` modules once per process, only the page scripts run again). There are
``DPSURV_MAX_CONCURRENT`` slots (default 2, the cores of the machine the app is sized for). Work that cannot get a
slot within ``DPSURV_BUSY_WAIT_SECONDS`` (default 5) is refused with :data:`BUSY`, one sentence, before it starts: a
refused release draws nothing and charges nothing.

A session that already holds a slot (a release inside a page's slot, a preview inside a study) takes no second one:
the slot is per thread and re-entrant, so nested heavy work never waits on itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from dpsurv_core.errors import DpsurvError

CONCURRENT_ENV = "DPSURV_MAX_CONCURRENT"
DEFAULT_MAX_CONCURRENT = 2
WAIT_ENV = "DPSURV_BUSY_WAIT_SECONDS"
DEFAULT_WAIT_SECONDS = 5.0
BUSY = "The server is busy with other users' work; try again in a moment."

T = TypeVar("T")


class ServerBusy(DpsurvError):
    """No slot for heavy work came free in time: nothing was started (nor drawn, nor charged)."""

    def __init__(self) -> None:
        super().__init__(BUSY)


def _positive(name: str, default: float, kind: type) -> float:
    text = os.environ.get(name, "").strip()
    try:
        value = kind(text)
    except ValueError:
        return default
    return value if value > 0 else default


def max_concurrent() -> int:
    """The number of slots: ``DPSURV_MAX_CONCURRENT`` (a whole number of at least 1), else 2."""
    return int(_positive(CONCURRENT_ENV, DEFAULT_MAX_CONCURRENT, int))


def wait_seconds() -> float:
    """How long work waits for a slot before it is refused: ``DPSURV_BUSY_WAIT_SECONDS``, else 5."""
    return float(_positive(WAIT_ENV, DEFAULT_WAIT_SECONDS, float))


class _Slots:
    """The process's semaphore, its size and how many slots are held (for tests and the logs)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.semaphore = threading.BoundedSemaphore(size)
        self.held = 0
        self.count_lock = threading.Lock()


_lock = threading.Lock()
_slots: _Slots | None = None
_local = threading.local()


def _get() -> _Slots:
    global _slots
    with _lock:
        if _slots is None:
            _slots = _Slots(max_concurrent())
        return _slots


def reset(size: int | None = None) -> None:
    """Start again with ``size`` slots (default: from the environment). For tests; never while work holds a slot."""
    global _slots
    with _lock:
        _slots = _Slots(size if size is not None else max_concurrent())


def in_use() -> int:
    """How many slots are held now."""
    return _get().held


def holding() -> bool:
    """This thread holds a slot."""
    return getattr(_local, "depth", 0) > 0


@contextmanager
def heavy(wait: float | None = None) -> Iterator[None]:
    """Hold one of the process's slots while the block runs; raise :class:`ServerBusy` (before the block starts) when
    none comes free within ``wait`` seconds (default :func:`wait_seconds`). Re-entrant in a thread."""
    if holding():
        _local.depth += 1
        try:
            yield
        finally:
            _local.depth -= 1
        return
    slots = _get()
    if not slots.semaphore.acquire(timeout=wait_seconds() if wait is None else wait):
        raise ServerBusy()
    with slots.count_lock:
        slots.held += 1
    _local.depth = 1
    try:
        yield
    finally:
        _local.depth = 0
        with slots.count_lock:
            slots.held -= 1
        slots.semaphore.release()


@contextmanager
def heavy_or_stop() -> Iterator[None]:
    """:func:`heavy`, for page code: when the server is busy, show :data:`BUSY` and stop the script there (nothing
    after it runs; the next rerun tries again)."""
    started = False
    try:
        with heavy():
            started = True
            yield
    except ServerBusy:
        if started:  # refused inside the block (cannot happen: a thread's slot is re-entrant), not here
            raise
        import streamlit as st

        st.error(BUSY, icon=":material/hourglass_top:")
        st.stop()
        raise  # st.stop() raises in a script run; outside one the refusal goes on up


def deferred(build: Callable[[], T], busy: Callable[[], T] | None = None) -> Callable[[], T]:
    """``build`` run under a slot when it is called (a download button's callable, run when clicked, outside the
    script). When the server is busy it returns ``busy()`` (say, a document holding :data:`BUSY`), or raises
    :class:`ServerBusy` when there is none."""

    def run() -> T:
        try:
            with heavy():
                return build()
        except ServerBusy:
            if busy is None:
                raise
            return busy()

    return run


def busy_html() -> str:
    """A one-sentence HTML document: what a report download holds when the server was too busy to build it."""
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>dpsurv: server busy</title></head>"
            f"<body><p>{BUSY}</p></body></html>")
