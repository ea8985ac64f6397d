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
