"""Caches for results derived from the analysed data.

``st.cache_data`` / ``st.cache_resource`` are process-wide: every session of the server shares them and they
outlive the session. Anything derived from an upload (or any data that is not a bundled, public data set) is
therefore cached here, in this browser session's ``st.session_state`` only, with a bounded number of entries.
Pages keep a process-wide cache for bundled data only, through :func:`by_data`.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import sys
import threading
import types
from collections import OrderedDict
from collections.abc import Callable, Collection, Hashable
from concurrent.futures import Future, ProcessPoolExecutor
from functools import partial
from typing import Any, TypeVar

import numpy as np
import streamlit as st

T = TypeVar("T")
STORE = "_session_cache"
MAX_ENTRIES = 256


def session_cache(key: Hashable, compute: Callable[[], T], *, max_entries: int = MAX_ENTRIES) -> T:
    """``compute()``, cached under ``key`` in this session only (least recently used entries dropped)."""
    store: OrderedDict = st.session_state.setdefault(STORE, OrderedDict())
    if key in store:
        store.move_to_end(key)
        return store[key]
    value = compute()
    store[key] = value
    while len(store) > max_entries:
        store.popitem(last=False)
    return value


def by_data(bundled: bool, key: Hashable, compute: Callable[[], T], shared: Callable[[], T]) -> T:
    """``shared()`` (a process-wide cache) for a bundled data set; otherwise ``compute()`` cached in this session."""
    if bundled:
        return shared()
    return session_cache(key, compute)


def digest(*parts: Any) -> str:
    """A short content digest of arrays (and reprs of anything else), for session cache keys."""
    h = hashlib.sha1()
    for p in parts:
        h.update(np.ascontiguousarray(p).tobytes() if isinstance(p, np.ndarray) else repr(p).encode())
        h.update(b"|")
    return h.hexdigest()[:20]


# ---------------------------------------------------------------------------------------------- background work
# One worker process for the whole server (a process, so that it runs beside the script on another core instead of
# contending for the interpreter's lock), fed newest job first (:class:`_Background`): a page may start a computation it will probably need on its next run (the
# result for a neighbouring slider value) and pick it up then. A job is a module-level function of dpsurv_core and
# plain arguments (they are pickled); the futures live in this session's state, so nothing derived from one session's
# data reaches another.
PREFETCH = "_prefetch"
MAX_PENDING = 32


class _Background:
    """Jobs for one worker process, newest first: a session's new jobs (the ones its user will want next) run before
    older ones, such as those of a session that has moved on or closed; beyond ``MAX_PENDING`` the oldest waiting job
    is cancelled. The worker process runs one job at a time."""

    def __init__(self) -> None:
        self._lock = threading.RLock()  # a job done at once calls back into _pump with the lock held
        self._pending: list[tuple[Future, Callable[..., Any], tuple]] = []
        self._busy = False
        self._pool: ProcessPoolExecutor | None = None

    def submit(self, jobs: list[tuple[Callable[..., Any], tuple]]) -> list[Future]:
        """Queue ``jobs`` (function, arguments) together: the last of them runs first."""
        futures: list[Future] = [Future() for _ in jobs]
        with self._lock:
            self._pending.extend((fut, fn, args) for fut, (fn, args) in zip(futures, jobs, strict=True))
            while len(self._pending) > MAX_PENDING:
                self._pending.pop(0)[0].cancel()
            self._pump()
        return futures

    def _pump(self) -> None:  # with the lock held
        while not self._busy and self._pending:
            fut, fn, args = self._pending.pop()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                if self._pool is None or getattr(self._pool, "_broken", False):
                    self._pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
                starts_worker = not getattr(self._pool, "_processes", None)  # the first submit spawns the worker
                inner = _without_main(self._pool.submit, fn, *args) if starts_worker else self._pool.submit(fn, *args)
            except Exception as exc:  # noqa: BLE001 - no worker: the page computes it when it needs it
                fut.set_exception(exc)
                continue
            self._busy = True
            inner.add_done_callback(partial(self._finished, fut))

    def _finished(self, fut: Future, done: Future) -> None:
        exc = done.exception()
        if exc is None:
            fut.set_result(done.result())
        else:
            fut.set_exception(exc)
        with self._lock:
            self._busy = False
            self._pump()


def _without_main(call: Callable[..., T], *args: Any) -> T:
    """``call(*args)`` with a blank ``__main__`` module: a spawned worker process imports the parent's ``__main__``
    by its file, and while Streamlit runs a page that module is the page itself (the worker would run the page). The
    worker is started by the first ``submit`` (and again if it died); the page's module is put back at once."""
    main = sys.modules.get("__main__")
    blank = types.ModuleType("__dpsurv_worker_main__")
    sys.modules["__main__"] = blank
    try:
        return call(*args)
    finally:
        if sys.modules.get("__main__") is blank and main is not None:
            sys.modules["__main__"] = main


_BACKGROUND = _Background()


def background_started() -> bool:
    """Whether the worker process runs already (starting it costs about a second of imports on a shared core)."""
    pool = _BACKGROUND._pool
    return pool is not None and not getattr(pool, "_broken", False)


def prefetch(group: str, jobs: dict[Hashable, tuple[Callable[..., Any], tuple]], keep: Collection[Hashable] = (),
             *, max_entries: int = 64) -> None:
    """Start each job of ``jobs`` (key -> (function, arguments)) in the background unless this session already has it
    under ``group`` (the last job of ``jobs`` first); this session's queued jobs of ``group`` neither in ``jobs`` nor
    in ``keep`` are cancelled (a running one finishes)."""
    store: OrderedDict = st.session_state.setdefault(PREFETCH, OrderedDict())
    wanted = {(group, k) for k in (*jobs, *keep)}
    for key in [k for k, f in store.items() if k[0] == group and k not in wanted and not f.done()]:
        if store[key].cancel():
            del store[key]
    new = [key for key in jobs if (group, key) not in store]
    for key, fut in zip(new, _BACKGROUND.submit([jobs[key] for key in new]), strict=True):
        store[(group, key)] = fut
    while len(store) > max_entries:
        _, old = store.popitem(last=False)
        old.cancel()


def prefetched(group: str, key: Hashable, compute: Callable[[], T]) -> T:
    """The result of this session's background job ``key`` of ``group`` (waiting for it if it is running), else
    ``compute()``, also when the job has not started yet or did not finish (the page's own computation then says
    what went wrong); the result is kept for the session either way."""
    store: OrderedDict = st.session_state.setdefault(PREFETCH, OrderedDict())
    fut = store.get((group, key))
    if fut is not None and not fut.cancel() and not fut.cancelled():  # running or done: its result
        try:
            value = fut.result()
        except Exception:  # noqa: BLE001 - a failed or broken job: computed here, where its error is shown
            pass
        else:
            store.move_to_end((group, key))
            return value
    value = compute()
    done: Future = Future()
    done.set_result(value)
    store[(group, key)] = done
    return value
