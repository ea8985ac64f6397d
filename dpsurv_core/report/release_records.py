"""Released numbers as rows: a release's outputs (curves, parameters, tests) as one row per released number, with
the record, analysis, mechanism, group, quantity and time, and the command line's release bundle of them (CSV and
JSON, private outputs only).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.comparisons import curve_comparison, parameter_comparison, test_comparison  # noqa: F401 (re-exported: the review's comparisons were defined here)
from dpsurv_core.report.files import safe_csv

COLUMNS = ["record", "analysis", "mechanism", "trial", "group", "quantity", "time", "value"]


def _check_private(records: list[dict[str, Any]]) -> None:
    for r in records:
        if r.get("mechanism") == "nonprivate":
            raise ParameterError("The release bundle holds private outputs only: leave non-private results out.")


def _csv(records: list[dict[str, Any]]) -> str:
    frame = pd.DataFrame(records, columns=COLUMNS)
    frame["record"] = frame["record"].astype("Int64")
    return safe_csv(frame)


def release_bundle(records: list[dict[str, Any]], ledger: Ledger, disclosures: Sequence[Any] = ()) -> tuple[str, str]:
    """CSV and JSON of released numbers. Each record: (record,) analysis, mechanism, trial, group, quantity, time,
    value. The JSON also holds the ledger (each entry with its disclosures) and the given disclosures."""
    _check_private(records)
    payload = {"ledger": json.loads(ledger.to_json()), "released": records,
               "disclosures": [d if isinstance(d, dict) else d.to_dict() for d in disclosures]}
    return _csv(records), json.dumps(payload, indent=2, default=_default)


def curve_records(release: Any, analysis: str = "survival curves") -> list[dict[str, Any]]:
    """Long-format records of a :class:`~dpsurv_core.curves.result.CurveResult` (first trial)."""
    cur = release.curves
    out = []
    fields = [("survival", cur.survival), ("lower", cur.lower), ("upper", cur.upper)]
    if release.counts is not None:
        fields += [("at_risk", cur.at_risk), ("events", cur.events)]
    for quantity, arr in fields:
        a = arr[0]
        for gi, g in enumerate(cur.groups):
            for t, v in zip(cur.time, a[gi]):
                if np.isfinite(v):
                    out.append({"analysis": analysis, "mechanism": release.mechanism, "trial": 0, "group": g,
                                "quantity": quantity, "time": float(t), "value": float(v)})
    return out


def _parameter_records(analysis: str, mechanism: str, values: dict[str, float]) -> list[dict[str, Any]]:
    """Long-format records of released parameters (Weibull shape and scale, regression coefficients)."""
    return [{"analysis": analysis, "mechanism": mechanism, "trial": 0, "group": None, "quantity": name, "time": None,
             "value": float(v)} for name, v in values.items()]


# ------------------------------------------------------------------------------- released numbers of a record

_CURVE_KEYS = ("groups", "time")
_PUBLIC_KEYS = ("edges", "group_labels")  # the public grid: a parameter of the release, not a released number
# how the bands were made and the warnings: shown beside the numbers, not numbers themselves
_NOTE_KEYS = ("conf_type", "interval_includes_noise", "interval_method", "warnings", "event_free")
# computed from the released numbers and kept beside them (tests, noise-aware intervals): shown as their own tables
_DERIVED_KEYS = ("tests", "overall", "test_method", "debiased_tests", "debiased_overall", "debiased_test_method",
                 "test_warnings", "intervals", "medians", "landmarks", "rmst", "curve")
# kept as tables in every record that has them (a record before tests were kept listed its tests among its numbers)
_ALWAYS_DERIVED = {"intervals", "medians", "landmarks", "rmst", "curve"}


def _number(v: Any) -> float | None:
    if isinstance(v, (bool, np.bool_)):
        return float(v)
    if isinstance(v, (int, float, np.integer, np.floating)) and math.isfinite(float(v)):
        return float(v)
    return None


def output_records(outputs: Any, analysis: str = "", mechanism: str = "", record: int | None = None
                   ) -> list[dict[str, Any]]:
    """The numbers a ledger record's ``outputs`` hold, one long-format row per number (the CSV's rows).

    Curves (``{"groups", "time", "survival", "at_risk", ...}``, arrays of groups x time points) give one row per
    group, quantity and time; a list of per-trial dicts (Weibull: shape, scale) one row per key; anything else one
    row per number, named by its path (``coefficients.age``). Missing (NaN) values are left out."""
    rows: list[dict[str, Any]] = []
    # derived tables kept beside the numbers; a record written before they were kept (no test_method) listed its
    # tests among its numbers, and still does
    derived = set(_DERIVED_KEYS) if isinstance(outputs, dict) and "test_method" in outputs else _ALWAYS_DERIVED

    def add(quantity: str, value: Any, group: Any = None, time: Any = None, trial: int = 0) -> None:
        v = _number(value)
        if v is not None:
            rows.append({"record": record, "analysis": analysis, "mechanism": mechanism, "trial": trial,
                         "group": None if group is None else str(group), "quantity": quantity,
                         "time": None if time is None else float(time), "value": v})

    def curves(obj: dict[str, Any], trial: int) -> None:
        # groups by their value labels where the record keeps them (the names the warnings beside them use)
        groups, time = list(obj.get("group_labels") or obj["groups"]), list(obj["time"])
        for key, value in obj.items():
            if key in _CURVE_KEYS or key in _PUBLIC_KEYS or key in _NOTE_KEYS or key in derived:
                continue
            if isinstance(value, list) and len(value) == len(groups) and all(isinstance(r, list) for r in value):
                for g, row in zip(groups, value):
                    # a row per group: numbers on the time points, or (events by type) one such list per type
                    series = [(key, row)] if not any(isinstance(v, list) for v in row) else \
                        [(key if len(row) == 1 else f"{key}[{k}]", sub) for k, sub in enumerate(row)]
                    for quantity, values in series:
                        points = time if len(values) == len(time) else [None] * len(values)
                        for t, v in zip(points, values):
                            add(quantity, v, g, t, trial)
            elif isinstance(value, list) and len(value) == len(groups) and all(_number(v) is not None or v is None
                                                                                  for v in value):
                for g, v in zip(groups, value):  # one number per group (a median, a count; at risk: at time 0)
                    add(key, v, g, 0.0 if key == "at_risk" else None, trial)
            else:
                walk(value, key, trial)

    def walk(obj: Any, path: str, trial: int) -> None:
        if isinstance(obj, dict):
            if all(k in obj for k in (*_CURVE_KEYS, "survival")):
                curves(obj, trial)
                return
            for k, v in obj.items():
                if k == "trial" or (not path and (k in derived or k in _NOTE_KEYS)):
                    continue
                # a Weibull record's per-trial estimates keep their plain names (shape, scale)
                walk(v, "" if (not path and k == "estimates") else f"{path}.{k}" if path else str(k), trial)
        elif isinstance(obj, (list, tuple)):
            several = len(obj) > 1 and all(isinstance(o, dict) for o in obj)
            for i, o in enumerate(obj):
                walk(o, path, i if several else trial)
        else:
            add(path or "value", obj, trial=trial)

    walk(outputs, "", 0)
    return rows


def _default(obj: Any) -> Any:
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return str(obj)
