"""``km --from-record N`` and ``logrank --from-record N``: another reading of a stored curve release.

No data is read, nothing is drawn, nothing is charged and no record is written: the stored release's noisy output
and declared values are read again (:func:`dpsurv_core.publication.reading.read_record`), as curves (with other
landmark or RMST times, or another band type) or as log-rank tests. What leaves is post-processing of what was
already published, so it carries the stored release's guarantee.
"""

from __future__ import annotations

import argparse
from typing import Any

from dpsurv_core.cli.common import positive_int, store_from_args
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import RELEASE, entry_from_body

# options that say what is drawn: a reading keeps the stored release's, so giving one with --from-record is refused
RELEASE_OPTIONS = ("data", "grid", "horizon", "group", "seed")


def add_from_record(p: argparse.ArgumentParser) -> None:
    """``--from-record N``, and --data (and --group) no longer required by the parser: :func:`check` asks for them."""
    p.add_argument("--from-record", type=positive_int, metavar="N", default=None,
                   help="read the stored curve release N again (other landmarks, RMST or band type; or its log-rank "
                        "tests): no data read, nothing drawn or charged, no new record")
    for action in p._actions:
        if action.dest in ("data", "group"):
            action.required = False


def check(args: argparse.Namespace, command: str, needs_group: bool = False) -> None:
    """Without --from-record a release needs --data (and --group for tests); with it, none of what defines a
    release may be given."""
    if args.from_record is None:
        if not getattr(args, "data", None):
            raise ParameterError(f"`{command}` needs --data NAME_OR_PATH (or --from-record N to read a stored release "
                                 "again).")
        if needs_group and not getattr(args, "group", None):
            raise ParameterError(f"`{command}` needs --group COLUMN (the groups to compare).")
        return
    given = [f"--{name.replace('_', '-')}" for name in RELEASE_OPTIONS if getattr(args, name, None) is not None]
    argv = getattr(args, "_argv", ())
    given += [flag for flag in ("--mechanism", "--epsilon") if any(a == flag or a.startswith(flag + "=") for a in argv)]
    if given:
        raise ParameterError(f"--from-record reads release {args.from_record} as it was drawn: leave out "
                             f"{', '.join(given)} (they would define a new release).")


def from_record(args: argparse.Namespace, kind: str) -> dict[str, Any]:
    """The reading of record ``--from-record`` as ``kind`` ("curves" or "logrank"), with the stored release's cost,
    guarantee and key, and no charge."""
    from dpsurv_core.publication.reading import read_record

    store = store_from_args(args)
    chain = store.verify()
    record = next((r for r in store.records() if r.id == args.from_record), None)
    if record is None:
        raise ParameterError(f"The ledger {str(store.path)!r} has no record {args.from_record}: `budget show --data D` "
                             "lists the releases.")
    if record.kind != RELEASE:
        raise ParameterError(f"Record {args.from_record} is a {record.kind} record, not a release: there is nothing "
                             "to read.")
    reading = {"conf_type": getattr(args, "conf_type", None), "landmarks": getattr(args, "landmarks", None),
               "rmst": getattr(args, "rmst", None)}
    if not any(a == "--conf-type" or a.startswith("--conf-type=") for a in getattr(args, "_argv", ())):
        reading["conf_type"] = None  # the parser's default: keep the record's band type
    derived = read_record(record.body, kind, reading, {"null_draws": getattr(args, "null_draws", None)})
    entry = entry_from_body(record.body, record.id, record.time)
    run = entry.as_run()
    return {"reading_of": record.id, "new_release": False, "record_id": None, "epsilon_spent": 0.0,
            "charged": f"nothing: a reading of release {record.id} (post-processing of its stored output and declared "
                       "values; no data read, nothing drawn)",
            "mechanism": record.body.get("mechanism"), "dataset": record.body.get("dataset"),
            "fingerprint": record.fingerprint, "release_epsilon": entry.cost.epsilon, "guarantee": run["guarantee"],
            "privacy": run["sentence"], "recorded": record.time, "chain": chain.status, "kind": kind, **derived}
