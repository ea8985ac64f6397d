"""A small per-file cache of content fingerprints, so a second release on an unchanged file does not read it again.

An entry is keyed by the file's resolved path (and, for a DuckDB database, the table; for Excel, the sheet) and holds
the file's size, its modification time (nanoseconds), a sampled checksum (SHA-256 of eight 64 KiB blocks spread evenly
through the file, its first and last included) and the fingerprint with its version. It is used only when size,
time and checksum all match; anything else recomputes it. The checksum catches a rewrite that kept size and time
(``touch -r``, a copy with preserved times) wherever it changed one of the sampled blocks; a change elsewhere that
also keeps size and time is not seen, which is why ``budget verify --refingerprint`` forces a full pass.

The cache is one JSON file, :func:`cache_path`: ``$DPSURV_FINGERPRINT_CACHE`` when set (``off`` disables the cache),
else ``~/.cache/dpsurv/fingerprints.json``. Writes go through a temporary file and a rename, so concurrent processes
never read half a file (the last writer wins; a lost entry is only recomputed). Entries also keep the version-1
fingerprint once it was computed (:func:`link_legacy`), which links a file to a ledger's records made before
version 2.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from dpsurv_core.privacy.fingerprint import VERSION

CACHE_ENV = "DPSURV_FINGERPRINT_CACHE"
BLOCK = 64 * 1024
SAMPLES = 8
MAX_ENTRIES = 2_000


def cache_path() -> Path | None:
    """Where the cache is kept, or None when ``$DPSURV_FINGERPRINT_CACHE`` is ``off``."""
    text = os.environ.get(CACHE_ENV, "").strip()
    if text.lower() in ("off", "0", "no", "false"):
        return None
    if text:
        return Path(text).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(base) / "dpsurv" / "fingerprints.json"


def sampled_checksum(path: Path, size: int) -> str:
    """SHA-256 of :data:`SAMPLES` blocks of :data:`BLOCK` bytes spread evenly through the file (its ends included)."""
    h = hashlib.sha256(str(size).encode())
    with path.open("rb") as fh:
        if size <= SAMPLES * BLOCK:
            h.update(fh.read())
        else:
            for i in range(SAMPLES):
                fh.seek((size - BLOCK) * i // (SAMPLES - 1))
                h.update(fh.read(BLOCK))
    return h.hexdigest()


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sample": sampled_checksum(path, st.st_size)}


def _load(where: Path) -> dict:
    try:
        data = json.loads(where.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _save(where: Path, data: dict) -> None:
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        if len(data) > MAX_ENTRIES:  # keep the newest entries
            data = dict(list(data.items())[-MAX_ENTRIES:])
        fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=".fingerprints.")
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, where)
    except OSError:  # a read-only home: the cache is only an optimisation
        pass


def _key(path: Path, detail: str) -> str:
    return f"{path.resolve()}::{detail}"


def lookup(path: Path, detail: str = "") -> dict | None:
    """The cache entry of an unchanged file (size, time and sampled checksum equal), else None."""
    where = cache_path()
    if where is None or not path.is_file():
        return None
    entry = _load(where).get(_key(path, detail))
    if not isinstance(entry, dict) or entry.get("version") != VERSION:
        return None
    st = path.stat()
    if entry.get("size") != st.st_size or entry.get("mtime_ns") != st.st_mtime_ns:
        return None
    return entry if entry.get("sample") == sampled_checksum(path, st.st_size) else None


def store(path: Path, fingerprint: str, detail: str = "", stamp: dict | None = None, **extra: str) -> None:
    """Keep ``fingerprint`` for the file as it is now (``stamp``: as it was before the fingerprint was computed)."""
    where = cache_path()
    if where is None or not path.is_file():
        return
    now = _stamp(path)
    if stamp is not None and stamp != now:  # changed while it was read: the fingerprint may be of neither version
        return
    data = _load(where)
    key = _key(path, detail)
    old = data.pop(key, None)
    keep = {k: v for k, v in (old or {}).items() if k == "legacy" and old.get("fingerprint") == fingerprint}
    data[key] = {**now, "version": VERSION, "fingerprint": fingerprint, **keep, **extra}
    _save(where, data)


def cached(path: Path, compute: Callable[[], str], refresh: bool = False, detail: str = "") -> str:
    """The file's fingerprint from the cache when it is unchanged (unless ``refresh``), else computed and kept."""
    if not path.is_file():
        return compute()
    if not refresh:
        entry = lookup(path, detail)
        if entry is not None:
            return str(entry["fingerprint"])
    before = _stamp(path) if cache_path() is not None else None
    value = compute()
    store(path, value, detail, before)
    return value


def legacy(fingerprint: str) -> list[str]:
    """The version-1 fingerprints linked to a version-2 ``fingerprint`` by :func:`link_legacy` (usually none)."""
    where = cache_path()
    if where is None:
        return []
    found: set[str] = {e["legacy"] for e in _load(where).values()
                       if isinstance(e, dict) and e.get("fingerprint") == fingerprint and e.get("legacy")}
    return sorted(found)


def link_legacy(path: Path, fingerprint: str, old: str, detail: str = "") -> None:
    """Record that the file whose version-2 fingerprint is ``fingerprint`` had version-1 fingerprint ``old``."""
    store(path, fingerprint, detail, legacy=old)


def legacy_lookup(store, fingerprint: str) -> tuple[str, ...]:
    """The stored values a ledger's version-1 records of this data set carry (each linked version-1 fingerprint's key,
    and the raw fingerprint of records written before ledgers kept keys): what ``LedgerStore._lookup`` adds to its
    own so that records from before version 2 stay with the data set."""
    out: list[str] = []
    for old in legacy(fingerprint) if fingerprint and len(fingerprint) == 64 else ():
        out += [store.key(old), old]
    return tuple(out)
