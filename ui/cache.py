"""Caches for results derived from the analysed data.

``st.cache_data`` / ``st.cache_resource`` are process-wide: every session of the server shares them and they
outlive the session. Anything derived from an upload (or any data that is not a bundled, public data set) is
therefore cached here, in this browser session's ``st.session_state`` only, with a bounded number of entries.
Pages keep a process-wide cache for bundled data only, through :func:`by_data`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from concurrent.futures import Future, ThreadPoolExecutor
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
# One worker thread for the whole server: a page may start a computation it will probably need on its next run (the
# result for a neighbouring slider value) and pick it up then. The worker only computes (no Streamlit call); the
# futures live in this session's state, so nothing derived from one session's data reaches another.
_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="dpsurv-prefetch")
PREFETCH = "_prefetch"


def prefetch(group: str, jobs: dict[Hashable, Callable[[], Any]], *, max_entries: int = 64) -> None:
    """Start each ``compute`` of ``jobs`` (key -> compute) in the background unless this session already has it
    under ``group``; this session's queued jobs of ``group`` that are not wanted any more are cancelled (a running one
    finishes)."""
    store: OrderedDict = st.session_state.setdefault(PREFETCH, OrderedDict())
    wanted = {(group, k) for k in jobs}
    for key in [k for k, f in store.items() if k[0] == group and k not in wanted and not f.done()]:
        if store[key].cancel():
            del store[key]
    for key, compute in jobs.items():
        if (group, key) not in store:
            store[(group, key)] = _POOL.submit(compute)
    while len(store) > max_entries:
        _, old = store.popitem(last=False)
        old.cancel()


def prefetched(group: str, key: Hashable, compute: Callable[[], T]) -> T:
    """The result of this session's background job ``key`` of ``group`` (waiting for it if it is running; computed
    here if it has not started yet), else ``compute()``; the result is kept for the session either way."""
    store: OrderedDict = st.session_state.setdefault(PREFETCH, OrderedDict())
    fut = store.get((group, key))
    if fut is None or fut.cancel() or fut.cancelled():  # not started (still queued behind other work): compute here
        fut = Future()
        fut.set_result(compute())
        store[(group, key)] = fut
    store.move_to_end((group, key))
    return fut.result()
