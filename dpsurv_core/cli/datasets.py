"""``datasets``: the bundled data sets with their counts and declared columns."""

from __future__ import annotations

import argparse

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import load_bundled

NAME = "datasets"
HELP = "list the bundled data sets"


def add_arguments(p: argparse.ArgumentParser) -> None:
    pass


def describe(name: str) -> dict:
    d = datasets.info(name)
    c = load_bundled(name)
    raw = datasets.load(name)
    out = {
        "name": d.name, "title": d.title, "n": c.n_subjects, "rows": int(len(raw)), "events": c.n_events,
        "time": d.time, "event": d.event, "time_unit": d.time_unit, "groups": list(d.groups),
        "covariates": list(d.covariates), "id": d.id, "rows_per_subject": d.rows_per_subject,
        "event_codes": list(d.event_codes), "censor_codes": list(d.censor_codes), "source": d.source,
        "notes": d.notes,
    }
    if d.event_type:
        out["competing_events"] = {"column": d.event_type, "types": {str(k): v for k, v in d.event_types.items()},
                                   "counts": {str(k): int((raw[d.event_type].astype(str) == str(k)).sum())
                                              for k in d.event_types}}
    return out


def run(args: argparse.Namespace) -> list[dict]:
    return [describe(n) for n in datasets.names()]
