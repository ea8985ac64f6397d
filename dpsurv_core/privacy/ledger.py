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
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dpsurv_core.errors import BudgetExceededError, ParameterError
from dpsurv_core.privacy.chain import (
    _CHAIN_QUERY,
    GENESIS,
    _canonical,
    _json_default,
    dataset_key,
    is_key,
    ledger_secret,
    record_hash,
    walk_chain,
)
from dpsurv_core.privacy.chain import ALLOW_DISCLOSURE_CONTROL as ALLOW_DISCLOSURE_CONTROL
from dpsurv_core.privacy.chain import ALLOW_LABEL_ONLY as ALLOW_LABEL_ONLY
from dpsurv_core.privacy.chain import CAP_LOWER as CAP_LOWER
from dpsurv_core.privacy.chain import CAP_RAISE as CAP_RAISE
from dpsurv_core.privacy.chain import CAP_SET as CAP_SET
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


@dataclass
class LedgerEntry:
    mechanism: str
    analysis: str
    dataset: str
    parameters: dict[str, Any]
    cost: PrivacyCost
    parallel_key: str | None = None
    note: str = ""
    disclosures: list[dict[str, Any]] = field(default_factory=list)  # Disclosure.to_dict() of the release
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    record_id: int | None = None  # the ledger database's record id, once recorded
    command: str = ""  # the command line that runs the same plan again as a new, charged release

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["cost"] = asdict(self.cost)
        return out

    def as_run(self) -> dict[str, Any]:
        """What this release guarantees as it was run, for a listing of records: the guarantee and what it protects
        (:func:`as_run`: none where a disclosure was not DP; "label only" for a label-only release), the sentence
        saying what was charged (:func:`charged_sentence`), whether the subject is still protected and, if not, why
        (:meth:`voids_subject_guarantee`, the reason :meth:`Ledger.subject_guarantee` gives), and the disclosures."""
        run = as_run(self.cost, self.disclosures)
        guarantee = run["guarantee"]
        if guarantee == self.cost.guarantee and self.cost.private and self.cost.protects != SUBJECT:
            guarantee = f"label only ({guarantee}): protects {self.cost.protects}, not the subject"
        void = self.voids_subject_guarantee()
        return {"guarantee": guarantee, "protects": run["protects"],
                "sentence": charged_sentence(self.cost, self.disclosures) if self.cost.formal else self.cost.sentence(),
                "subject_protected": void is None, "subject_unprotected_because": void,
                "disclosures": list(self.disclosures)}

    def voids_subject_guarantee(self) -> str | None:
        """Why this release leaves the subject without a DP guarantee, or None if it does not."""
        if not self.cost.formal:
            return (f"{self.mechanism} ({self.analysis}) is statistical disclosure control with no formal guarantee: "
                    "a subject whose removal changes its table is revealed to anyone who knows the other records")
        not_dp = not_dp_disclosure(self.disclosures)
        if not_dp:
            return f"{self.mechanism} ({self.analysis}) is not differentially private: {not_dp[1]}"
        if self.cost.protects not in (SUBJECT,):
            return (f"{self.mechanism} ({self.analysis}) protects {self.cost.protects}: the subject's times and events "
                    "are published as they are")
        return None


class Ledger:
    """Charges of a session, with an optional cap on the total epsilon per protected unit."""

    def __init__(self, cap: float | None = None) -> None:
        if cap is not None and not cap > 0:
            raise ParameterError(f"The budget cap must be a positive epsilon, got {cap}.")
        self.cap = cap
        self.entries: list[LedgerEntry] = []
        self.label_only_allowed = False  # a recorded act of the data holder (LedgerStore.allow_label_only)
        self.disclosure_control_allowed = False  # likewise (LedgerStore.allow_disclosure_control)

    @staticmethod
    def composed(entries: list[LedgerEntry]) -> PrivacyCost | None:
        """The entries' costs composed: releases sharing a ``parallel_key`` (disjoint parts of the data) in parallel,
        then everything in sequence (:meth:`PrivacyCost.__add__`, :meth:`PrivacyCost.parallel`); None when no entry
        has an epsilon (disclosure control composes with nothing)."""
        blocks: dict[Any, PrivacyCost] = {}
        total: PrivacyCost | None = None
        for e in entries:
            if not e.cost.formal:
                continue
            if e.parallel_key is None:
                total = e.cost if total is None else total + e.cost
            else:
                held = blocks.get(e.parallel_key)
                blocks[e.parallel_key] = e.cost if held is None else held.parallel(e.cost)
        for cost in blocks.values():
            total = cost if total is None else total + cost
        return total

    @staticmethod
    def _compose(entries: list[LedgerEntry], attr: str) -> float:
        total = Ledger.composed(entries)
        return 0.0 if total is None else float(getattr(total, attr))

    def totals(self) -> dict[str, dict[str, float]]:
        """Composed epsilon and delta per protected unit."""
        out: dict[str, dict[str, float]] = {}
        for unit in sorted({e.cost.protects for e in self.entries if e.cost.formal}):
            sub = [e for e in self.entries if e.cost.protects == unit]
            out[unit] = {"epsilon": self._compose(sub, "epsilon"), "delta": self._compose(sub, "delta")}
        return out

    def disclosure_control(self) -> list[LedgerEntry]:
        """Releases with no formal guarantee (statistical disclosure control): they have no epsilon to add up."""
        return [e for e in self.entries if not e.cost.formal]

    def void_reasons(self) -> list[str]:
        """Releases that leave the subject without a DP guarantee (label-only or not-DP releases); empty if none.

        Their epsilons still count against the cap, but no finite epsilon describes the subject's loss once one of
        them has been published (docs/mechanisms.md, honest accounting)."""
        return [f"release {e.record_id or i + 1}: {r}" for i, e in enumerate(self.entries)
                if (r := e.voids_subject_guarantee())]

    def subject_guarantee(self) -> str:
        """One sentence on what protects the subject now."""
        reasons = self.void_reasons()
        if reasons:
            return "none: " + "; ".join(reasons)
        return f"epsilon = {self.spent():.4g} under add/remove-one-subject neighbours"

    def spent(self, protects: str = SUBJECT) -> float:
        return self.totals().get(protects, {"epsilon": 0.0})["epsilon"]

    def remaining(self, protects: str = SUBJECT) -> float:
        return math.inf if self.cap is None else max(self.cap - self.spent(protects), 0.0)

    def would_exceed(self, entry: LedgerEntry) -> bool:
        if self.cap is None:
            return False
        trial = [e for e in self.entries if e.cost.protects == entry.cost.protects] + [entry]
        return self._compose(trial, "epsilon") > self.cap * (1 + 1e-12)

    def excess(self, entry: LedgerEntry) -> float:
        """By how much ``entry`` would take the composed total past the cap (0 when it fits or there is no cap)."""
        if self.cap is None:
            return 0.0
        trial = [e for e in self.entries if e.cost.protects == entry.cost.protects] + [entry]
        over = self._compose(trial, "epsilon") - self.cap
        return over if over > self.cap * 1e-12 else 0.0

    def check(self, entry: LedgerEntry) -> None:
        """Refuse, with a sentence saying by how much, a release that would take the total past the cap; and, under a
        cap, a label-only or disclosure-control release the data holder has not allowed (either leaves the subject with
        no guarantee at all)."""
        if self.cap is not None and not entry.cost.formal:
            if not self.disclosure_control_allowed:
                raise BudgetExceededError(
                    f"{entry.mechanism} is statistical disclosure control with no formal guarantee: it has no epsilon, "
                    f"so no subject-level cap (epsilon {self.cap:.4g}) can account for it. It is refused unless the "
                    "data holder allows disclosure-control releases for this data set, a recorded act with a reason: "
                    "`python -m dpsurv_core budget allow-disclosure-control --data D --reason TEXT`.")
            return
        if self.cap is not None and entry.cost.protects != SUBJECT and not self.label_only_allowed:
            raise BudgetExceededError(
                f"{entry.mechanism} protects {entry.cost.protects}: the subject's times and events would be published "
                f"as they are, which no subject-level cap (epsilon {self.cap:.4g}) can account for. It is refused unless "
                "the data holder allows label-only releases for this data set, a recorded act with a reason: "
                "`python -m dpsurv_core budget allow-label-only --data D --reason TEXT`.")
        over = self.excess(entry)
        if over > 0:
            left = self.cap - self.spent(entry.cost.protects)
            left = left if left > self.cap * 1e-12 else 0.0  # 1e-16 left by rounding is nothing left
            raise BudgetExceededError(
                f"This release costs epsilon {entry.cost.epsilon:.4g} but only {left:.4g} of the "
                f"cap {self.cap:.4g} is left for {entry.cost.protects}: it would exceed the cap by {over:.4g}. Lower "
                "epsilon, or raise the cap as a recorded act with a reason."
            )

    def charge(self, entry: LedgerEntry) -> LedgerEntry:
        """Record a release in this in-memory view, or refuse it if it would take the total past the cap."""
        self.check(entry)
        self.entries.append(entry)
        return entry

    def to_dict(self) -> dict[str, Any]:
        return {"cap": self.cap, "label_only_allowed": self.label_only_allowed,
                "disclosure_control_allowed": self.disclosure_control_allowed,
                "disclosure_control_releases": len(self.disclosure_control()), "totals": self.totals(),
                "subject_guarantee": self.subject_guarantee(),
                "entries": [e.to_dict() for e in self.entries]}

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=_json_default)

    @classmethod
    def from_json(cls, text: str) -> Ledger:
        raw = json.loads(text)
        ledger = cls(raw.get("cap"))
        ledger.label_only_allowed = bool(raw.get("label_only_allowed", False))
        ledger.disclosure_control_allowed = bool(raw.get("disclosure_control_allowed", False))
        for e in raw.get("entries", []):
            cost = PrivacyCost(**e.pop("cost"))
            ledger.entries.append(LedgerEntry(cost=cost, **e))
        return ledger

    @property
    def cap_sentence(self) -> str:
        """The cap, or how to set one when there is none."""
        if self.cap is None:
            return NO_CAP
        return f"cap epsilon {self.cap:.4g}, spent {self.spent():.4g}, left {self.remaining():.4g}"


NO_CAP = ("no cap set: this data set's releases are recorded but not limited; set a cap with "
          "`python -m dpsurv_core budget set --data D --cap C` or on the Ledger and report page.")


# ------------------------------------------------------------------------------------------- the database

_SCHEMA_READY: set[str] = set()

# the act each kind of record is (what a role must allow to append it)
ACT_OF = {CAP_SET: CHANGE_CAP, CAP_RAISE: CHANGE_CAP, CAP_LOWER: CHANGE_CAP, ALLOW_LABEL_ONLY: ALLOW,
          ALLOW_DISCLOSURE_CONTROL: ALLOW, RELEASE: RELEASE_ACT}


class LedgerStore:
    """The persistent, hash-chained ledger shared by every process that opens the same file."""

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
        """The stored values a data set's records carry: its key, and its raw fingerprint on records written before
        ledgers kept keys."""
        key = self.key(fingerprint)
        return (key,) if key == fingerprint else (key, fingerprint)

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
        values = self._lookup(fingerprint)
        rows = con.execute("SELECT id, time, fingerprint, kind, body, hash FROM records WHERE fingerprint IN "
                           f"({','.join('?' * len(values))}) ORDER BY id", values).fetchall()
        return [self._record(r) for r in rows]

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
    records had three parts kept it as ``outputs``."""
    if "released" in body and isinstance(body.get("released"), dict):
        # the released numbers people read as they are (a curve's counts are read through derived, which holds them
        # per group; regression's unit-scale vector w through its coefficients), then everything derived
        shown = {k: v for k, v in body["released"].items() if not isinstance(v, dict) and k not in RAW_RELEASED}
        return {**shown, **(body.get("derived") or {})}
    return body.get("outputs")
