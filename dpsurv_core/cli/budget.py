"""``budget``: a data set's privacy budget in the ledger database.

``set`` gives a data set with no cap its cap; ``raise`` is a separate recorded act with a reason;
``lower`` is always allowed; ``show`` prints the chain's status (with a warning when it is broken), the cap, the
composed spend and every release as run (its guarantee given its disclosures, which are listed);
``verify`` runs SQLite's integrity check and walks the hash chain (exit 0 intact, 1 naming the first bad record or
the file's damage; ``--head HASH``: also 1 unless the chain's head is the hash noted down elsewhere, which shows a
ledger rewritten consistently or truncated since; ``--data D --refingerprint``: also recompute D's content fingerprint
in a full pass, ignoring the per-file cache, and link D to the records a ledger kept under the version-1
fingerprint by a hash-chained link record in the ledger, so every machine reading the ledger counts them); ``allow-label-only``
records, with a reason, that label-only releases (which leave the subject unprotected) may be made
under the cap; ``allow-disclosure-control`` does the same for statistical disclosure control (suppression, rounding,
cell keys, step smoothing), which has no epsilon and no formal guarantee.
"""

from __future__ import annotations

import argparse
import re
from typing import Any

from dpsurv_core.cli.common import (
    add_ledger_options,
    dataset_fingerprint,
    positive_float,
    positive_int,
    store_from_args,
)
from dpsurv_core.data import datasets
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import NO_CAP, RELEASE, SUBJECT, ChainBrokenError

NAME = "budget"
HELP = "a data set's privacy budget: set, raise, lower, show, verify"
ACTIONS = ("set", "raise", "lower", "show", "verify", "rederive", "allow-label-only", "allow-disclosure-control")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=ACTIONS, help="set | raise | lower | show | verify | rederive | "
                                                   "allow-label-only | allow-disclosure-control")
    p.add_argument("--record", type=positive_int, metavar="N",
                   help="rederive: the release record whose derived part is recomputed from its stored released "
                        "output and public inputs alone (no data is read)")
    p.add_argument("--data", metavar="NAME_OR_PATH",
                   help=f"a bundled data set ({', '.join(datasets.names())}) or a data file (not needed for verify)")
    p.add_argument("--sheet", metavar="NAME", help="Excel sheet holding the cohort")
    p.add_argument("--cap", type=positive_float, metavar="E", help="the cap (set, raise, lower)")
    p.add_argument("--plan", metavar="plan.json",
                   help="set: the cap from a plan file (`plan --out`), whose releases later releases are marked "
                        "against (as planned, or a deviation that needs --confirm-deviation)")
    p.add_argument("--reason", metavar="TEXT", help="why (required by raise, allow-label-only and allow-disclosure-control)")
    p.add_argument("--head", metavar="HASH", type=noted_head,
                   help="verify: the head hash noted down elsewhere (at least its first 16 hex digits); a ledger whose "
                        "head differs was rewritten or truncated since, even with its hash chain intact")
    p.add_argument("--refingerprint", action="store_true",
                   help="recompute --data's content fingerprint in a full pass instead of reading the per-file cache "
                        "(with verify: also compare it with the cached one and link the version-1 fingerprint)")
    add_ledger_options(p)


def _show(store, fp: str, name: str) -> dict[str, Any]:
    from dpsurv_core.planning.adherence import active_plan

    chain = store.verify()
    try:
        ledger = store.ledger(fp)
    except (ValueError, TypeError, KeyError):  # a record edited into something that no longer reads
        if chain.ok:
            raise
        raise ChainBrokenError(chain) from None
    records = store.records(fp)
    releases = []
    for e in ledger.entries:  # each as run: the guarantee its disclosures leave (the reasons subject_guarantee gives)
        run = e.as_run()
        releases.append({"id": e.record_id, "mechanism": e.mechanism, "analysis": e.analysis, "epsilon": e.cost.epsilon,
                         "delta": e.cost.delta, "charged_to": e.cost.protects if e.cost.formal else None,
                         "protects": run["protects"], "neighbouring": e.cost.neighbouring,
                         "guarantee": run["guarantee"], "privacy": run["sentence"],
                         "subject_protected": run["subject_protected"],
                         "subject_unprotected_because": run["subject_unprotected_because"],
                         "disclosures": run["disclosures"], "time": e.time, "dataset": e.dataset,
                         "reproduce": e.command, "note": e.note})
    acts = [{"id": r.id, "kind": r.kind, "time": r.time, **{k: r.body.get(k) for k in ("cap", "previous", "reason")}}
            for r in records if r.kind != RELEASE]
    warning = chain.warning()
    return {"dataset": name, "fingerprint": store.key(fp), "ledger_path": str(store.path),
            "chain": chain.status, "chain_message": chain.message, "cap": ledger.cap,
            "spent": ledger.spent(SUBJECT), "remaining": None if ledger.cap is None else ledger.remaining(SUBJECT),
            "totals": ledger.totals(), "subject_guarantee": ledger.subject_guarantee(),
            "budget": ledger.cap_sentence if ledger.cap is not None else NO_CAP,
            "label_only_allowed": ledger.label_only_allowed,
            "disclosure_control_allowed": ledger.disclosure_control_allowed,
            "disclosure_control_releases": len(ledger.disclosure_control()),
            "subject_protected": all(r["subject_protected"] for r in releases),
            "releases": releases, "cap_history": acts, "head": store.head(), "plan": active_plan(records),
            "warnings": [warning] if warning else []}


def noted_head(text: str) -> str:
    """An argparse type: a head hash noted down, 16 to 64 hexadecimal digits."""
    value = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{16,64}", value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a head hash: give the hash `budget verify` printed as head "
                                         "(at least its first 16 hexadecimal digits)")
    return value


def _verify(store, noted: str | None) -> dict[str, Any]:
    """SQLite's integrity check and the chain's walk, then (``noted``) the head against the hash noted down: exit 1
    on any failure, with one sentence in ``message``."""
    v = store.verify()
    head = None if v.status == "damaged" else store.head()  # a damaged file's head is not read
    out = {"ok": v.ok, "records": v.records, "first_bad_record": v.first_bad, "message": v.message,
           "ledger_path": str(store.path), "head": head}
    if noted is not None:
        out["head_noted"] = noted
        out["head_matches"] = bool(head and head.startswith(noted))
        if v.ok and out["head_matches"]:
            out["message"] += "; the head is the one noted down"
        elif v.ok:
            out["ok"] = False
            out["message"] = _head_differs(store, noted, head or "", v.records)
    out["_exit"] = 0 if out["ok"] else 1
    return out


def _head_differs(store, noted: str, head: str, count: int) -> str:
    """The sentence for a head that is not the one noted down: records added since, or a rewrite or truncation."""
    earlier = next((r.id for r in store.records() if r.hash.startswith(noted)), None)
    if earlier is not None:
        return (f"The ledger's head is record {count}'s hash {head[:16]}, not the {noted[:16]} noted down, which is "
                f"record {earlier}'s: {count - earlier} record(s) were added after it; if you made them, note the new "
                "head.")
    return (f"The ledger's head {head[:16]} is not the {noted[:16]} noted down, and no record of the ledger has that "
            "hash: the ledger was rewritten or truncated since it was noted (a consistent rewrite keeps the hash chain "
            "intact, so only the noted head shows it); restore the ledger from a copy you trust.")


def _refingerprint(store, args: argparse.Namespace) -> dict[str, Any]:
    """A full pass over --data (the cache ignored and rewritten), compared with the cached fingerprint, and the
    version-1 fingerprint linked so a ledger's records from before version 2 stay with the data set."""
    from pathlib import Path

    from dpsurv_core.privacy import fingerprint_cache, fingerprint_v1
    from dpsurv_core.privacy.fingerprint import fingerprint_file

    if args.data in datasets.DATASETS:
        return {"cache_agreed": True, "message": "a bundled data set is fingerprinted in full every time"}
    if args.data.startswith("duckdb:"):  # a table in a DuckDB database: its cache entry is under the table
        from dpsurv_core.engines import connect, parse
        from dpsurv_core.privacy.fingerprint import fingerprint_source

        source = parse(args.data)
        assert source is not None  # a duckdb: name parses to a source (or is refused)
        path, detail = Path(source.location), f"table:{source.table}"
        entry = fingerprint_cache.lookup(path, detail)
        engine = connect("duckdb", source)
        fresh = fingerprint_source(source, engine, refresh=True)
        old = fingerprint_v1.fingerprint_source(source, engine)
    else:
        path, detail = Path(args.data), getattr(args, "sheet", None) or ""
        if not path.is_file():
            raise ParameterError("--refingerprint reads a data file or a DuckDB table: give its path in --data.")
        entry = fingerprint_cache.lookup(path, detail)
        fresh = fingerprint_file(path, sheet=getattr(args, "sheet", None), refresh=True)
        old = fingerprint_v1.fingerprint_file(path, sheet=getattr(args, "sheet", None))
    fingerprint_cache.link_legacy(path, fresh, old, detail)
    link = _link(store, fresh, old, args.data)
    agreed = entry is None or entry.get("fingerprint") == fresh
    return {"fingerprint": store.key(fresh), "cache_agreed": agreed, "cached": entry is not None,
            "version_1_records": len(store.records(old)), **link,
            "message": ("the cached fingerprint was stale (the file changed keeping its size, time and sampled "
                        "blocks): the cache now holds the full pass's" if not agreed else
                        "the full pass agrees with the cache" if entry is not None else "the file was not cached")}


def _link(store, fresh: str, old: str, name: str) -> dict[str, Any]:
    """The version-1 fingerprint's records linked to the version-2 one by a record in the ledger itself
    (:meth:`~dpsurv_core.privacy.ledger.LedgerStore.link_fingerprint`), so every machine reading the ledger counts
    them; ``link_error`` says why it could not be appended (a broken chain, a role that may not append)."""
    from dpsurv_core.errors import DpsurvError

    try:
        rid = store.link_fingerprint(fresh, old, name)
    except DpsurvError as exc:
        return {"link_record": None, "link_error": str(exc)}
    return {"link_record": rid}


def _rederive(store, record_id: int | None) -> dict[str, Any]:
    """Recompute a release record's derived part from its stored released output and public inputs, with no access
    to the data, and compare it field by field (exit 0 identical, 1 naming the first field that differs)."""
    from dpsurv_core.publication import rederive

    if record_id is None:
        raise ParameterError("`budget rederive` needs --record N (a release record's id, from `budget show`).")
    chain = store.verify()
    record = next((r for r in store.records() if r.id == record_id), None)
    if record is None:
        raise ParameterError(f"The ledger {str(store.path)!r} has no record {record_id}: `budget show --data D` lists "
                             "the releases.")
    if record.kind != RELEASE:
        raise ParameterError(f"Record {record_id} is a {record.kind} record, not a release: it has nothing to re-derive.")
    result = rederive(record.body)
    return {"record_id": record_id, **result, "chain": chain.status, "ledger_path": str(store.path),
            "_exit": 0 if result["identical"] else 1}


def run(args: argparse.Namespace) -> dict[str, Any]:
    store = store_from_args(args)
    if args.action == "verify":
        out = _verify(store, args.head)
        if args.data and args.refingerprint:
            out["refingerprint"] = _refingerprint(store, args)
            if not out["refingerprint"]["cache_agreed"] or out["refingerprint"].get("link_error"):
                out["_exit"] = 1
        return out
    if args.refingerprint and args.data and args.data not in datasets.DATASETS:  # a full pass, the cache rewritten
        from dpsurv_core.engines import parse
        from dpsurv_core.privacy.fingerprint import fingerprint_file, fingerprint_source

        source = parse(args.data)
        args._fingerprint = (fingerprint_source(source, refresh=True) if source is not None and source.kind == "duckdb"
                             else fingerprint_file(args.data, sheet=getattr(args, "sheet", None), refresh=True))
    if args.head is not None:
        raise ParameterError("--head is checked by `budget verify` only: run `budget verify --head HASH`.")
    if args.action == "rederive":
        return _rederive(store, args.record)
    if not args.data:
        raise ParameterError(f"`budget {args.action}` needs --data naming the data set (bundled name or file).")
    fp = dataset_fingerprint(args)
    name = args.data
    if args.plan is not None and args.action != "set":
        raise ParameterError("--plan sets a cap: use `budget set --plan plan.json`.")
    if args.action in ("set", "raise", "lower") and args.cap is None and args.plan is None:
        raise ParameterError(f"`budget {args.action}` needs --cap E (a positive epsilon).")
    if args.action == "set" and args.plan is not None:
        from dpsurv_core.planning.adherence import cap_of, read_plan

        plan = read_plan(args.plan)
        store.set_cap(fp, cap_of(plan, args.cap), name, reason=f"from the plan {plan['source']}", plan=plan)
    elif args.action == "set":
        store.set_cap(fp, args.cap, name)
    elif args.action == "raise":
        store.raise_cap(fp, args.cap, args.reason or "", name)
    elif args.action == "lower":
        store.lower_cap(fp, args.cap, args.reason or "", name)
    elif args.action == "allow-label-only":
        store.allow_label_only(fp, args.reason or "", name)
    elif args.action == "allow-disclosure-control":
        store.allow_disclosure_control(fp, args.reason or "", name)
    return _show(store, fp, name)
