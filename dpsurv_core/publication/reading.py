"""One release, many readings: what a stored curve release publishes, read again without a new draw or charge.

A curve release is defined by what was drawn: the data set (its key), the mechanism and its parameters, epsilon, the
public grid, the groups and the horizon. How it is read (the band type, landmark and RMST times, group names, the
log-rank tests and their null draws) is post-processing of the stored noisy output and declared values (Dwork and
Roth 2014, Proposition 2.1), so any reading of a stored release is free: it needs neither the data nor budget. Here,
the part of a record's public inputs that defines the release (:func:`release_part`), the search for a stored
release of the same plan (:func:`find_release`), and another reading of a stored record (:func:`read_record`).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.publication.readers import derive

READABLE = ("curves", "logrank")  # record kinds that hold released curve counts
READING_KEYS = ("reading", "tests", "reader_version")  # public inputs that say how a release is read, not what was drawn


def release_part(public_inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The public inputs that define what was drawn (everything but how it is read)."""
    return {k: v for k, v in public_inputs.items() if k not in READING_KEYS}


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=True, default=str)


def _same_release(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """The two public inputs define the same release (mechanism, epsilon, grid, groups, horizon, build options)."""
    return _canonical(release_part(a)) == _canonical(release_part(b))


def find_release(records: Iterable[Any], public_inputs: Mapping[str, Any]) -> Any | None:
    """The latest stored curve release (a ledger ``Record`` of kind release whose body is of a readable kind) whose
    release part equals that of ``public_inputs``, or None. ``records``: one data set's records (its key already
    matched)."""
    found = None
    for r in records:
        body = getattr(r, "body", None) or {}
        if body.get("kind") in READABLE and "public_inputs" in body and "released" in body \
                and _same_release(body["public_inputs"], public_inputs):
            found = r
    return found


def read_record(body: Mapping[str, Any], kind: str, reading: Mapping[str, Any] | None = None,
                tests: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``derived`` of the stored release ``body`` read as ``kind`` ("curves" or "logrank"), with the reading options
    in ``reading`` (conf_type, landmarks, rmst; None values keep the record's) and the tests' options ``tests``
    (null_draws): post-processing of its released part and declared values alone. A record whose kind holds no
    curve counts, or a log-rank reading of a one-group release, is refused in one sentence."""
    if body.get("kind") not in READABLE or "released" not in body or "public_inputs" not in body:
        raise ParameterError(f"This record is a {body.get('kind') or 'non-curve'} release: only curve and log-rank "
                             "releases can be read again as curves or tests.")
    if kind not in READABLE:
        raise ParameterError(f"A curve release can be read as {' or '.join(READABLE)}, not {kind!r}.")
    inputs = copy.deepcopy(dict(body["public_inputs"]))
    if kind == "logrank":
        groups = list(body["released"].get("groups") or inputs.get("categories") or [])
        if len(groups) < 2:
            raise ParameterError("This release has one group's curve: there is no second group to test it against.")
        if "counts" not in body["released"] and "block_events" not in body["released"]:
            raise ParameterError(f"{inputs.get('mechanism', 'This mechanism')} releases no counts (numbers at risk and "
                                 "events), which the log-rank test is built from.")
        inputs["tests"] = {"null_draws": None, **(inputs.get("tests") or {}),
                           **{k: v for k, v in (tests or {}).items() if v is not None}}
    else:
        inputs.pop("tests", None)
    asked = {k: v for k, v in (reading or {}).items() if v is not None}
    inputs["reading"] = {**(inputs.get("reading") or {}), **asked}
    return derive(kind, dict(body["released"]), inputs)
