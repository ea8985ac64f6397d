"""A release record's three parts as one value, and the JSON normal form they are stored and compared in."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import numpy as np


def jsonable(obj: Any, strict: bool = True) -> Any:
    """``obj`` in strict JSON's normal form: numpy to Python, tuples to lists, keys to strings, NaN and infinities to
    None. A reader receives its inputs in this form (as they come back from the ledger), so what it computes at the
    release and what it computes from the stored record are the same function of the same values. ``strict`` False
    passes any other object through unchanged (for printing), instead of refusing it.

    Parameters
    ----------
    obj : object
        A value.
    strict : bool, default True
        Refuse an object JSON cannot hold (``TypeError``); False passes it through.

    Returns
    -------
    object
        The value in JSON normal form.
    """
    if isinstance(obj, dict):
        return {str(k): jsonable(v, strict) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v, strict) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist(), strict)
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if not strict or obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    raise TypeError(f"{type(obj).__name__} is not part of a release record (JSON values only)")


def canonical(obj: Any) -> str:
    """The canonical JSON text of ``obj`` (sorted keys, no spaces): equal text means equal records."""
    return json.dumps(jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True)
class Publication:
    """What one release publishes: ``kind`` names the reader that computed ``derived`` from ``released`` and
    ``public_inputs`` (all three JSON in normal form)."""

    kind: str
    released: dict[str, Any]
    public_inputs: dict[str, Any]
    derived: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "released": self.released, "public_inputs": self.public_inputs,
                "derived": self.derived}

    def view(self) -> dict[str, Any]:
        """One flat dict for the readers of older records (reports, figures): the released fields, then the derived
        ones (a derived field of the same name wins: it is what people were shown)."""
        return {**self.released, **self.derived}


REL_TOL, ABS_TOL = 1e-12, 1e-15
"""How far two floats of a re-derived record may differ (:func:`math.isclose`). A reader is deterministic, and on one
processor it gives the same bits again; on another, numpy's vectorised maths (chosen for the processor's instruction
set) may round the last bit of an exp, log or power differently, and a record made on one machine re-derives on
another to about 1e-16 relative (a few units in the last place after a chain of such steps). Only two floats are
compared so: an integer must stay an integer of the same value."""


def first_difference(a: Any, b: Any, path: str = "", *, exact: bool = False) -> str | None:
    """The first path (``derived.medians[0].median_lower``) at which ``a`` and ``b`` differ, or None when equal.
    Floats are equal when they agree within :data:`REL_TOL` relative (or :data:`ABS_TOL` absolute, near 0), or to
    the last bit with ``exact``.

    Parameters
    ----------
    a, b : object
        Two JSON values.
    path : str, default ""
        The path of ``a`` and ``b`` themselves.
    exact : bool, default False
        Floats must be equal to the last bit.

    Returns
    -------
    str or None
        The first differing path, or None.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a or key not in b:
                return sub
            found = first_difference(a[key], b[key], sub, exact=exact)
            if found is not None:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} against {len(b)})"
        for i, (x, y) in enumerate(zip(a, b)):
            found = first_difference(x, y, f"{path}[{i}]", exact=exact)
            if found is not None:
                return found
        return None
    if type(a) is not type(b) and not (isinstance(a, (int, float)) and isinstance(b, (int, float))
                                       and not isinstance(a, bool) and not isinstance(b, bool)):
        return path or "(root)"
    if a == b:
        return None
    if not exact and type(a) is float and type(b) is float and math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL):
        return None
    return path or "(root)"
