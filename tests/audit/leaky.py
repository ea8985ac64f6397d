"""Deliberately leaky release records, for the audit's tests: each record depends on the exact data.

* :func:`read` is a reader (registered with ``monkeypatch.setitem(readers.READERS, "leaky", "tests.audit.leaky:read")``)
  that gives the curves reader's ``derived`` plus the exact number of subjects of the data set the run was drawn
  from, taken through a module-level side channel that :func:`curves_publisher`'s draw fills: the kind of shortcut
  to the data a reader must never take.
* :func:`exact_n_weibull` makes a Weibull record as ``weibull`` made it before its reader took a declared n: the
  intervals simulate cohorts of the exact number of subjects of the data set the release ran on.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from dpsurv_core.audit.record import Publisher, reader_publisher
from dpsurv_core.curves import readout
from dpsurv_core.publication import publish
from dpsurv_core.publication.record import canonical

_LAST: dict[str, Any] = {}


def read(released: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """The curves reader's ``derived`` and, leaked, the exact number of subjects and a warning quoting it."""
    out = readout.read(released, inputs)
    n = int(_LAST["cohort"].n_subjects)
    out["n_subjects"] = n
    out["warnings"] = [*out.get("warnings", []), f"Read from {n} subjects."]
    return out


def curves_publisher(publisher: Publisher) -> Publisher:
    """A curves ``publisher`` whose records the registered ``leaky`` reader makes: each draw tells the side channel
    which data set it came from."""

    def draw(cohort: Any, noise: Any) -> dict[str, Any]:
        _LAST["cohort"] = cohort
        return publisher.draw(cohort, noise)

    assert publisher.public_inputs is not None
    return reader_publisher("leaky", draw, publisher.public_inputs, publisher.trials, "tests.audit.leaky:read")


def observed(publisher: Publisher, seen: dict[tuple[str, str], dict[str, Any]]) -> Publisher:
    """``publisher`` as it is (its ``publish`` runs on every call), each record's ``derived`` noted in ``seen`` under
    (its public inputs, its released part) in JSON normal form, for :func:`exact_n_weibull` to reuse."""
    assert publisher.public_inputs is not None
    inputs = canonical(publisher.public_inputs)

    def publish(released: dict[str, Any]) -> dict[str, Any]:
        rec = publisher.publish(released)
        seen[(inputs, canonical(released))] = copy.deepcopy(rec["derived"])
        return rec

    return dataclasses.replace(publisher, publish=publish)


def exact_n_weibull(publisher: Publisher, seen: dict[tuple[str, str], dict[str, Any]] | None = None) -> Publisher:
    """A Weibull ``publisher`` whose records' intervals simulate the exact n of the data set each run was drawn from
    (``publish_on``), while the record's public inputs still show the declared n: the leak is in ``derived`` only.
    ``seen``: derived parts already read (:func:`observed`), reused where the exact n is the declared one."""
    assert publisher.public_inputs is not None
    base = dict(publisher.public_inputs)
    # The Weibull reader is a deterministic function of (released, public inputs) in JSON normal form (what lets a
    # stored record re-derive), so each (inputs, released) is read once: the audit re-makes every record on D and on
    # D', and half of those re-makes are the records it made (about 0.3 s of simulated intervals each); on D, whose
    # exact n is the declared one, they are the records an audit of ``publisher`` itself made (``seen``).
    made = {} if seen is None else seen

    def publish_on(cohort: Any):
        exact = {**base, "n": int(cohort.n_subjects)}
        inputs = canonical(exact)

        def record(released: dict[str, Any]) -> dict[str, Any]:
            key = (inputs, canonical(released))
            if key not in made:
                made[key] = publish("weibull", released, exact).derived
            return {"released": copy.deepcopy(released), "public_inputs": copy.deepcopy(base),
                    "derived": copy.deepcopy(made[key])}

        return record

    return Publisher(publisher.draw, publisher.publish, "weibull", publisher.trials,
                     "intervals from the exact n (tests.audit.leaky)", publish_on=publish_on)
