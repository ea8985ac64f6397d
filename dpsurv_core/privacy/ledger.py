"""The privacy ledger: one entry per release, composed; and the database that keeps it.

Sequential composition adds epsilons (and deltas). Entries that share a ``parallel_key`` were
released by one mechanism on disjoint groups of subjects; they compose in parallel (the max).
Totals are kept per protected unit: a label-only epsilon (randomized response) says nothing
about the subject, so it is never added to the subject-level total.

:class:`Ledger` is the composed view of one data set's releases with its cap. :class:`LedgerStore`
is the persistent ledger: an SQLite database (default path :func:`default_path`, replaced by the
environment variable ``DPSURV_LEDGER``) shared by the app and the command line. Its records are
append-only and hash-chained: each holds the SHA-256 of its own content and of the record before,
so an edited or deleted record breaks the chain (:meth:`LedgerStore.verify`), and a release walks the chain (from its
newest checkpoint, :mod:`dpsurv_core.privacy.checkpoint`) inside its check-and-charge transaction and is refused
(:class:`ChainBrokenError`) when it is broken.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.accounting import NO_CAP as NO_CAP
from dpsurv_core.privacy.accounting import Ledger as Ledger
from dpsurv_core.privacy.accounting import LedgerEntry as LedgerEntry
from dpsurv_core.privacy.chain import (
    _CHAIN_QUERY,
    GENESIS,
    _canonical,
    dataset_key,
    is_key,
    is_ledger_url,
    ledger_secret,
    record_hash,
    walk_chain,
)
from dpsurv_core.privacy.chain import ALLOW_DISCLOSURE_CONTROL as ALLOW_DISCLOSURE_CONTROL
from dpsurv_core.privacy.chain import ALLOW_LABEL_ONLY as ALLOW_LABEL_ONLY
from dpsurv_core.privacy.chain import CAP_LOWER as CAP_LOWER
from dpsurv_core.privacy.chain import CAP_RAISE as CAP_RAISE
from dpsurv_core.privacy.chain import CAP_SET as CAP_SET
from dpsurv_core.privacy.chain import FINGERPRINT_LINK as FINGERPRINT_LINK
from dpsurv_core.privacy.chain import LEDGER_ENV as LEDGER_ENV
from dpsurv_core.privacy.chain import RELEASE as RELEASE
from dpsurv_core.privacy.chain import ChainBrokenError as ChainBrokenError
from dpsurv_core.privacy.chain import Record as Record
from dpsurv_core.privacy.chain import Verification as Verification
from dpsurv_core.privacy.chain import default_path as default_path
from dpsurv_core.privacy.checkpoint import after_append, verify_all, verify_tail
from dpsurv_core.privacy.cost import (
    ADD_REMOVE as ADD_REMOVE,
)
from dpsurv_core.privacy.cost import (
    APPROXIMATE_MCMC as APPROXIMATE_MCMC,
)
from dpsurv_core.privacy.cost import (
    CHANGE_LABEL as CHANGE_LABEL,
)
from dpsurv_core.privacy.cost import (
    DISCLOSURE_CONTROL as DISCLOSURE_CONTROL,
)
from dpsurv_core.privacy.cost import (
    EXACT as EXACT,
)
from dpsurv_core.privacy.cost import (
    GROUP_LABEL as GROUP_LABEL,
)
from dpsurv_core.privacy.cost import (
    NO_FORMAL as NO_FORMAL,
)
from dpsurv_core.privacy.cost import (
    NO_NEIGHBOURS as NO_NEIGHBOURS,
)
from dpsurv_core.privacy.cost import (
    NO_NOISE as NO_NOISE,
)
from dpsurv_core.privacy.cost import (
    READ_OFF as READ_OFF,
)
from dpsurv_core.privacy.cost import (
    SUBJECT as SUBJECT,
)
from dpsurv_core.privacy.cost import (
    PrivacyCost as PrivacyCost,
)
from dpsurv_core.privacy.cost import (
    as_run as as_run,
)
from dpsurv_core.privacy.cost import (
    charged_sentence as charged_sentence,
)
from dpsurv_core.privacy.cost import (
    not_dp_disclosure as not_dp_disclosure,
)
from dpsurv_core.privacy.cost import (
    outside_guarantee as outside_guarantee,
)
from dpsurv_core.privacy.cost import (
    read_off_the_data as read_off_the_data,
)
from dpsurv_core.privacy.cost import (
    voided as voided,
)
from dpsurv_core.privacy.ledger_file import connect, guarded, prepare, unreadable
from dpsurv_core.privacy.roles import ALLOW, CHANGE_CAP, Actor, local_actor
from dpsurv_core.privacy.roles import RELEASE as RELEASE_ACT

# ------------------------------------------------------------------------------------------- the database

_SCHEMA_READY: set[str] = set()

# the act each kind of record is (what a role must allow to append it)
ACT_OF = {CAP_SET: CHANGE_CAP, CAP_RAISE: CHANGE_CAP, CAP_LOWER: CHANGE_CAP, ALLOW_LABEL_ONLY: ALLOW,
          ALLOW_DISCLOSURE_CONTROL: ALLOW, RELEASE: RELEASE_ACT, FINGERPRINT_LINK: RELEASE_ACT}


class LedgerStore:
    """The persistent, hash-chained ledger shared by every process that opens the same file; a ``postgresql://``
    URL (as ``path`` or in ``$DPSURV_LEDGER``) opens the same ledger in PostgreSQL
    (:class:`~dpsurv_core.privacy.ledger_pg.PgLedgerStore`)."""

    def __new__(cls, path: str | Path | None = None, *args: Any, **kwargs: Any) -> LedgerStore:
        if cls is LedgerStore and is_ledger_url(str(path) if path else os.environ.get(LEDGER_ENV, "")):
            from dpsurv_core.privacy.ledger_pg import PgLedgerStore

            return super().__new__(PgLedgerStore)
        return super().__new__(cls)

    def __init__(self, path: str | Path | None = None, timeout: float = 600.0, actor: Actor | None = None) -> None:
        self.path = Path(path).expanduser() if path else default_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ParameterError(f"The ledger folder {str(self.path.parent)!r} cannot be created ({exc.strerror}): "
                                 f"choose another path with --ledger or {LEDGER_ENV}.") from None
        self.timeout = timeout
        self.actor = actor or local_actor()  # who acts: every record names them, and their role allows the act
        key = str(self.path.resolve())
        if key not in _SCHEMA_READY or not self.path.exists():  # once per file and process: the app opens it each rerun
            prepare(self.path, self.timeout)  # a new ledger made whole; an existing file must be a ledger
            _SCHEMA_READY.add(key)
        self._secret: bytes | None = None

    @guarded
    def key(self, fingerprint: str) -> str:
        """The key this ledger keeps ``fingerprint``'s budget under (:func:`~dpsurv_core.privacy.chain.dataset_key`):
        what records, exports and screens show instead of the content fingerprint. A key is returned as it is."""
        if not fingerprint or is_key(fingerprint):
            return fingerprint
        if self._secret is None:
            with closing(self._connect()) as con:
                self._secret = ledger_secret(con)
        return dataset_key(self._secret, fingerprint)

    def _lookup(self, fingerprint: str) -> tuple[str, ...]:
        """The stored values a data set's records carry: its key, its raw fingerprint on records written before
        ledgers kept keys, and the same two for each version-1 content fingerprint this machine's cache links to this
        one. :meth:`_rows` adds the values the ledger's own link records name (``budget verify --refingerprint``,
        :meth:`link_fingerprint`), so that records made before fingerprints were computed in the engine stay with
        their data set and its budget on every machine."""
        from dpsurv_core.privacy.fingerprint_cache import legacy_lookup

        key = self.key(fingerprint)
        return ((key,) if key == fingerprint else (key, fingerprint)) + legacy_lookup(self, fingerprint)

    def _record(self, row: tuple) -> Record:
        fp = row[2] if is_key(row[2]) else self.key(row[2])
        return Record(row[0], row[1], fp, row[3], json.loads(row[4]), row[5])

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, self.timeout)  # an existing ledger file only (ledger_file.check_file)

    # ----------------------------------------------------------------------------------------- reading
    @guarded
    def records(self, fingerprint: str | None = None) -> list[Record]:
        """Every record, or one data set's (``fingerprint``: its content fingerprint or its key), each showing the
        data set's key."""
        if not fingerprint:
            with closing(self._connect()) as con:
                rows = con.execute("SELECT id, time, fingerprint, kind, body, hash FROM records ORDER BY id").fetchall()
            return [self._record(r) for r in rows]
        with closing(self._connect()) as con:
            return self._rows(con, fingerprint)

    @staticmethod
    def _view(records: list[Record]) -> Ledger:
        cap: float | None = None
        ledger = Ledger()
        for r in records:
            if r.kind in (CAP_SET, CAP_RAISE, CAP_LOWER):
                cap = float(r.body["cap"])
            elif r.kind == RELEASE:
                ledger.entries.append(entry_from_body(r.body, r.id, r.time))
            elif r.kind == ALLOW_LABEL_ONLY:
                ledger.label_only_allowed = True
            elif r.kind == ALLOW_DISCLOSURE_CONTROL:
                ledger.disclosure_control_allowed = True
        ledger.cap = cap
        return ledger

    def ledger(self, fingerprint: str) -> Ledger:
        """The composed view of one data set: its cap and every release recorded for it."""
        return self._view(self.records(fingerprint))

    def release_records(self, fingerprint: str) -> list[Record]:
        return [r for r in self.records(fingerprint) if r.kind == RELEASE]

    def datasets(self) -> dict[str, list[str]]:
        """Every data set's key with the names its records were made under."""
        out: dict[str, list[str]] = {}
        for r in self.records():
            names = out.setdefault(r.fingerprint, [])
            name = r.body.get("dataset")
            if name and name not in names:
                names.append(name)
        return out

    @guarded
    def head(self) -> str:
        """The hash of the newest record (note it down: it also shows a truncated ledger)."""
        with closing(self._connect()) as con:
            row = con.execute("SELECT hash FROM records ORDER BY id DESC LIMIT 1").fetchone()
        return row[0] if row else GENESIS

    @guarded
    def verify(self) -> Verification:
        """SQLite's integrity check, then the chain's walk (:func:`walk_chain`) from the first record: ids contiguous
        from 1, each ``prev_hash`` the hash before, each ``hash`` recomputed; then every checkpoint (:func:`verify_all`)."""
        with closing(self._connect()) as con:
            return verify_all(con)

    # ----------------------------------------------------------------------------------------- writing
    @contextmanager
    def transaction(self, fingerprint: str) -> Iterator[Transaction]:
        """BEGIN IMMEDIATE: one writer at a time across processes; the view is read inside the lock, so a check and
        the charge that follows it are atomic. Commits on success, rolls back on any exception."""
        key = self.key(fingerprint)  # before the write lock: the first key of a ledger writes its secret
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                view = self._view(self._rows(con, fingerprint))
            except (ValueError, TypeError, KeyError):  # a record that no longer reads: say where the chain breaks
                chain = walk_chain(con.execute(_CHAIN_QUERY))
                if not chain.ok:
                    raise ChainBrokenError(chain) from None
                raise
            tx = Transaction(con, key, view, self.actor)
            yield tx
            con.execute("COMMIT")
        except BaseException as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):  # a damaged or locked file: one sentence
                raise unreadable(self.path, exc) from None
            raise
        finally:
            con.close()

    def _rows(self, con: sqlite3.Connection, fingerprint: str) -> list[Record]:
        """A data set's records in id order: those under :meth:`_lookup`'s values, then those under the values each
        :data:`FINGERPRINT_LINK` record among them names (followed until no new value appears), so a data set's
        version-1 records count wherever the ledger is read."""
        values = list(dict.fromkeys(self._lookup(fingerprint)))
        seen = set(values)
        rows: list[tuple] = []
        while values:
            rows += con.execute("SELECT id, time, fingerprint, kind, body, hash FROM records WHERE fingerprint IN "
                                f"({','.join('?' * len(values))}) ORDER BY id", tuple(values)).fetchall()
            values = [v for v in _linked_values(rows) if v not in seen]
            seen.update(values)
        return [self._record(r) for r in sorted(rows, key=lambda r: r[0])]

    def link_fingerprint(self, fingerprint: str, old: str, dataset: str = "", reason: str = "") -> int | None:
        """Append a :data:`FINGERPRINT_LINK` record under ``fingerprint``'s key naming the stored values of the
        records kept under ``old`` (its key; its raw value too where records from before keys carry it, so nothing
        new about the data is written), in the hash chain like any record. Returns its id; None (nothing appended)
        when ``old`` has no records, is the same data set, or is already linked."""
        with self.transaction(fingerprint) as tx:
            old_key = self.key(old)
            if old_key == tx.fingerprint:
                return None
            candidates = tuple(dict.fromkeys((old_key, old)))
            present = {r[0] for r in tx.con.execute("SELECT DISTINCT fingerprint FROM records WHERE fingerprint IN "
                                                    f"({','.join('?' * len(candidates))})", candidates).fetchall()}
            stored = [v for v in candidates if v in present]
            known = {v for v in _linked_values(tx.con.execute(
                "SELECT id, time, fingerprint, kind, body FROM records WHERE fingerprint = ? AND kind = ?",
                (tx.fingerprint, FINGERPRINT_LINK)).fetchall())}
            if not stored or set(stored) <= known:
                return None
            return tx.append(FINGERPRINT_LINK, {
                "linked": stored, "from_version": 1, "dataset": dataset,
                "reason": reason or "the data set's records kept under its version-1 content fingerprint"})

    def set_cap(self, fingerprint: str, cap: float, dataset: str = "", reason: str = "",
                plan: dict[str, Any] | None = None) -> int:
        """Set the cap of a data set that has none. A data set with a cap must use :meth:`raise_cap` or
        :meth:`lower_cap`. ``plan``: the planned releases the cap was set from (kept in the record, hash-chained;
        :mod:`dpsurv_core.planning.adherence`)."""
        _check_cap(cap)
        with self.transaction(fingerprint) as tx:
            if tx.ledger.cap is not None:
                raise BudgetExceededError(
                    f"This data set already has a cap (epsilon {tx.ledger.cap:.4g}); raising it is a separate recorded "
                    "act: use `budget raise --cap C --reason TEXT` (lowering: `budget lower --cap C`).")
            body: dict[str, Any] = {"cap": cap, "dataset": dataset, "reason": reason}
            if plan is not None:
                body["plan"] = plan
            return tx.append(CAP_SET, body)

    def raise_cap(self, fingerprint: str, cap: float, reason: str, dataset: str = "") -> int:
        _check_cap(cap)
        if not reason or not reason.strip():
            raise ParameterError("Raising a cap needs a reason (--reason TEXT): the ledger records who spends more and why.")
        with self.transaction(fingerprint) as tx:
            old = tx.ledger.cap
            if old is None:
                raise ParameterError("This data set has no cap yet: set one with `budget set --cap C`.")
            if not cap > old:
                raise ParameterError(f"The new cap {cap:.4g} is not above the current cap {old:.4g}: use `budget lower` "
                                     "to lower it.")
            return tx.append(CAP_RAISE, {"cap": cap, "previous": old, "reason": reason.strip(), "dataset": dataset})

    def lower_cap(self, fingerprint: str, cap: float, reason: str = "", dataset: str = "") -> int:
        _check_cap(cap)
        with self.transaction(fingerprint) as tx:
            old = tx.ledger.cap
            if old is not None and cap > old:
                raise ParameterError(f"The new cap {cap:.4g} is above the current cap {old:.4g}: raising is "
                                     "`budget raise --cap C --reason TEXT`.")
            kind = CAP_SET if old is None else CAP_LOWER
            return tx.append(kind, {"cap": cap, "previous": old, "reason": reason, "dataset": dataset})


    def allow_label_only(self, fingerprint: str, reason: str, dataset: str = "") -> int:
        """Record that the data holder allows label-only releases (randomized response) under this data set's cap."""
        if not reason or not reason.strip():
            raise ParameterError("Allowing label-only releases needs a reason (--reason TEXT): such releases publish "
                                 "every subject's times and events as they are.")
        with self.transaction(fingerprint) as tx:
            return tx.append(ALLOW_LABEL_ONLY, {"reason": reason.strip(), "dataset": dataset,
                                                "consequence": "label-only releases leave the subject unprotected"})

    def allow_disclosure_control(self, fingerprint: str, reason: str, dataset: str = "") -> int:
        """Record that the data holder allows releases with no formal guarantee (small-cell suppression, rounding,
        cell keys, step smoothing) under this data set's cap."""
        if not reason or not reason.strip():
            raise ParameterError("Allowing disclosure-control releases needs a reason (--reason TEXT): they have no "
                                 "formal guarantee, and a subject whose removal changes the table is revealed.")
        with self.transaction(fingerprint) as tx:
            return tx.append(ALLOW_DISCLOSURE_CONTROL, {
                "reason": reason.strip(), "dataset": dataset,
                "consequence": "disclosure-control releases have no epsilon and leave the subject without a formal "
                               "guarantee"})


def _check_cap(cap: float) -> None:
    if not (isinstance(cap, (int, float)) and math.isfinite(cap) and cap > 0):
        raise ParameterError(f"A budget cap is a positive, finite epsilon (for example 2), got {cap}.")


class Transaction:
    """Inside :meth:`LedgerStore.transaction`: the data set's view and an append that extends the hash chain."""

    def __init__(self, con: sqlite3.Connection, fingerprint: str, ledger: Ledger, actor: Actor | None = None) -> None:
        self.con, self.fingerprint, self.ledger = con, fingerprint, ledger
        self.actor = actor or local_actor()
        self._chain: Verification | None = None
        self._mark = 0  # the newest checkpoint's record id (0: none)

    def verify(self) -> Verification:
        """The chain walked inside this transaction's write lock (once per transaction), from its newest checkpoint
        when it has one, else from the start after SQLite's quick check of the file (:func:`verify_tail`)."""
        if self._chain is None:
            self._chain, self._mark = verify_tail(self.con)
        return self._chain

    def check_chain(self) -> None:
        """Refuse (:class:`ChainBrokenError`) to build on a broken chain: its totals cannot be trusted."""
        chain = self.verify()
        if not chain.ok:
            raise ChainBrokenError(chain)

    def check(self, entry: LedgerEntry) -> None:
        """The chain first (:meth:`check_chain`), then the cap (:meth:`Ledger.check`)."""
        self.check_chain()
        self.ledger.check(entry)

    def use_cap(self, cap: float | None, dataset: str = "") -> bool:
        """``--cap`` on a release: set the cap of a data set that has none (returns True: recorded in this
        transaction, so a refused release undoes it); the same cap again is no act; any other cap is refused before
        anything is recorded (changing a cap is `budget lower` or `budget raise --reason`)."""
        if cap is None:
            return False
        _check_cap(cap)
        current = self.ledger.cap
        if current is None:
            self.append(CAP_SET, {"cap": cap, "dataset": dataset, "reason": "set with the first release"})
            self.ledger.cap = cap
            return True
        if not math.isclose(cap, current, rel_tol=1e-12, abs_tol=0.0):
            act = (f"lowering the cap is its own recorded act (`python -m dpsurv_core budget lower --data D --cap "
                   f"{cap:g}`)" if cap < current else "raising the cap is its own recorded act with a reason (`python "
                   f"-m dpsurv_core budget raise --data D --cap {cap:g} --reason TEXT`)")
            raise ParameterError(f"This data set's cap is already epsilon {current:.10g}, so this release refuses --cap "
                                 f"{cap:.10g} and records nothing: {act}, or drop --cap to release under the cap "
                                 f"{current:.10g}.")
        return False

    def append(self, kind: str, body: dict[str, Any]) -> int:
        """Append a record extending the hash chain; nothing is built on a broken chain (a cap change or an allowance
        neither: :meth:`check_chain`, walked once per transaction). The actor's role must allow the act
        (:data:`ACT_OF`), and the record names the actor."""
        self.actor.require(ACT_OF[kind])
        self.check_chain()
        body = {**body, "by": self.actor.name}
        last = self.con.execute("SELECT id, hash FROM records ORDER BY id DESC LIMIT 1").fetchone()
        rid, prev = (last[0] + 1, last[1]) if last else (1, GENESIS)
        time = datetime.now(UTC).isoformat(timespec="microseconds")
        text = _canonical(body)
        h = record_hash(prev, rid, time, self.fingerprint, kind, text)
        self.con.execute("INSERT INTO records (id, time, fingerprint, kind, body, prev_hash, hash) VALUES (?,?,?,?,?,?,?)",
                         (rid, time, self.fingerprint, kind, text, prev, h))
        self._mark = after_append(self.con, rid, h, time, self._mark)  # in this transaction, on the verified chain
        return rid

    def charge(self, entry: LedgerEntry, publication: Any = None) -> int:
        """Check ``entry`` against the chain and the cap and append it with the release's three parts (a
        :class:`~dpsurv_core.publication.Publication`: released, public inputs, derived); returns its record id.
        Anything else is kept as ``outputs``, the one flat part of records made before records had three parts
        (such a record reads, but cannot be re-derived)."""
        self.check(entry)
        body = entry.to_dict()
        body.pop("record_id", None)
        if hasattr(publication, "to_dict"):
            body.update(publication.to_dict())
        else:
            body["outputs"] = publication
        rid = self.append(RELEASE, body)
        entry.record_id = rid
        self.ledger.entries.append(entry)
        return rid


def _linked_values(rows: list[tuple]) -> list[str]:
    """The stored values the :data:`FINGERPRINT_LINK` records among ``rows`` (``id, time, fingerprint, kind, body,
    ...``) name, in order."""
    out: list[str] = []
    for r in rows:
        if r[3] == FINGERPRINT_LINK:
            try:
                linked = json.loads(r[4]).get("linked", [])
            except (ValueError, AttributeError):  # an edited record: the chain's walk names it
                continue
            out += [v for v in linked if isinstance(v, str) and v and v not in out]
    return out


def entry_from_body(body: dict[str, Any], rid: int, time: str) -> LedgerEntry:
    b = dict(body)
    cost = PrivacyCost(**b.pop("cost"))
    for key in ("outputs", "kind", "released", "public_inputs", "derived"):
        b.pop(key, None)
    b.pop("time", None)
    b.pop("record_id", None)
    known = {f for f in LedgerEntry.__dataclass_fields__}
    return LedgerEntry(cost=cost, time=time, record_id=rid, **{k: v for k, v in b.items() if k in known})


RAW_RELEASED = ("noise", "w")  # released fields that are read only through what is derived from them


def record_outputs(body: dict[str, Any]) -> Any:
    """What a release record published, as one flat dict (released fields, then derived ones); a record made before
    records had three parts kept it as ``outputs``.

    Parameters
    ----------
    body : dict
        A release record's stored body.

    Returns
    -------
    dict or None
        The published numbers, by name.
    """
    if "released" in body and isinstance(body.get("released"), dict):
        # the released numbers people read as they are (a curve's counts are read through derived, which holds them
        # per group; regression's unit-scale vector w through its coefficients), then everything derived
        shown = {k: v for k, v in body["released"].items() if not isinstance(v, dict) and k not in RAW_RELEASED}
        return {**shown, **(body.get("derived") or {})}
    return body.get("outputs")
