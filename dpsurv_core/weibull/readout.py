"""The Weibull reader: everything people read of a Weibull release, from its record alone.

``read(released, public_inputs)`` receives two JSON dicts and nothing else (no cohort is in its reach):

* ``released``: the mechanism's noisy output, ``{"estimates": [...]}``, one entry per trial as
  :meth:`~dpsurv_core.weibull.mechanisms.WeibullEstimates.records` gives it (trial, shape, scale in the time unit,
  scale_normalised, and for LSP + TLL whether TLL clamped a noisy sum);
* ``public_inputs``: declared values only (:func:`public_inputs`): the mechanism and epsilon, the horizon, omega,
  gamma, the LSP rungs, rows per subject, the sample-and-aggregate blocks and block size, the declared number of
  subjects ``n`` and censoring share, the time unit, and for each of the horizon, n, the censoring share and the
  blocks whether it was read off the data (such a release is recorded only once a person accepted it, and is then
  not DP as run).

It returns ``derived``: the noise-aware 95% intervals of the first :data:`MAX_INTERVAL_TRIALS` trials
(:func:`~dpsurv_core.weibull.inference.release_intervals`: a parametric bootstrap seeded from the released numbers
and public inputs only, so the same record gives the same intervals, to the last bit on one processor), their
method and warnings, and the fitted survival curves on :data:`CURVE_POINTS` times from 0 to the horizon. The number
of subjects the intervals simulate is the declared one: a release's intervals cannot depend on the cohort's exact
size.

This module imports nothing from ``dpsurv_core.data`` or ``dpsurv_core.engines`` (a test checks ``sys.modules``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dpsurv_core.errors import stored_version
from dpsurv_core.weibull.inference import READER_VERSION, check_share, release_intervals
from dpsurv_core.weibull.model import survival_curve

VERSION = READER_VERSION
"""The reading rules a record's ``public_inputs["reader_version"]`` names (a record without one: version 1).

1. the shape interval ends at the first candidate shape, after the first accepted one, whose simulated releases call
   the release too large (:func:`~dpsurv_core.weibull.inversion._invert`);
2. (2026-11-29) for the baselines (Laplace, sample and aggregate) it runs past too-large candidates that accepted
   ones follow, to the first too-large candidate after the last accepted one: with heavy censoring the tiniest
   shapes' cohorts collapse onto the floor and reject releases that every shape from 0.2 to 2.4 accepts, which under
   version 1 cut sample and aggregate's shape interval to [0, 0.17] (70% censoring, epsilon 2: 88-91% coverage;
   Weibull validation in the docs). LSP + TLL reads as in version 1.
"""
CURVE_POINTS = 21
MAX_INTERVAL_TRIALS = 3  # noise-aware intervals are simulated (about a second each): for the first trials only
KIND = "weibull"


def public_inputs(mechanism: Any, n: int, censoring: float, time_unit: str = "", *, blocks: int | None = None,
                  horizon_from_data: bool = False, n_from_data: bool = False, censoring_from_data: bool = False,
                  blocks_from_data: bool = False) -> dict[str, Any]:
    """The record's ``public_inputs`` of a release of the Weibull ``mechanism`` object (its catalogue id, epsilon and
    public settings) with the declared number of subjects ``n`` and censoring share ``censoring``. ``blocks``: the
    number of sample-and-aggregate blocks the mechanism used (declared, or read off the data when
    ``blocks_from_data``); the ``*_from_data`` flags say which values were read off the data (accepted disclosures).
    They name this dpsurv's reading rules (``reader_version``, :data:`VERSION`), so a simulation is read as a
    release is."""
    params = mechanism.parameters()
    return {"reader_version": VERSION, "mechanism": mechanism.name, "epsilon": float(mechanism.epsilon),
            "horizon": float(mechanism.horizon),
            "omega": float(mechanism.omega), "gamma": float(mechanism.gamma),
            "rungs": int(getattr(mechanism, "rungs", params.get("rungs") or 0)) or None,
            "rows_per_subject": int(mechanism.rows_per_subject),
            "blocks": None if blocks is None else int(blocks),
            "block_size": int(getattr(mechanism, "block_size", 0)) or None,
            "n": int(n), "censoring": float(check_share(float(censoring))), "time_unit": str(time_unit or ""),
            "horizon_from_data": bool(horizon_from_data), "n_from_data": bool(n_from_data),
            "censoring_from_data": bool(censoring_from_data), "blocks_from_data": bool(blocks_from_data)}


def released_of(estimates: Any) -> dict[str, Any]:
    """The record's ``released`` part of a :class:`~dpsurv_core.weibull.mechanisms.WeibullEstimates`: its per-trial
    records (the noisy shape and scale, and TLL's clamped flag; LSP's rung is internal and never released)."""
    return {"estimates": estimates.records()}


def _number(value: Any) -> float:
    """A released number as stored (JSON: a non-finite value is stored as null) back to a float."""
    return math.nan if value is None else float(value)


def intervals_of(entry: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """The noise-aware intervals of one released trial ``entry`` from the public inputs alone, by the reading rules
    they name (:func:`reader_version`)."""
    from dpsurv_core.weibull.mechanisms import BLOCK_SIZE
    from dpsurv_core.weibull.model import RUNGS

    iv = release_intervals(str(inputs["mechanism"]), float(inputs["epsilon"]), _number(entry["shape"]),
                           _number(entry["scale_normalised"]), int(inputs["n"]), float(inputs["censoring"]),
                           float(inputs["horizon"]), float(inputs["omega"]), float(inputs["gamma"]),
                           int(inputs.get("rungs") or RUNGS), int(inputs.get("rows_per_subject") or 1),
                           None if inputs.get("blocks") is None else int(inputs["blocks"]),
                           int(inputs.get("block_size") or BLOCK_SIZE), bool(entry.get("clamped", False)),
                           reader_version=reader_version(inputs))
    return {"trial": int(entry.get("trial", 0)), **iv}


def reader_version(inputs: dict[str, Any]) -> int:
    """The reading rules' version a record names (:data:`VERSION`; 1 when it names none), refused in one sentence
    when this dpsurv does not have it."""
    return stored_version(inputs, VERSION, "weibull reader")


def curve(estimates: list[dict[str, Any]], horizon: float, points: int = CURVE_POINTS) -> dict[str, Any]:
    """The fitted survival curves S(t) = exp(-(t / scale)^shape) of every trial on ``points`` times from 0 to the
    horizon (a trial whose shape or scale is not positive has no curve: nulls)."""
    times = np.linspace(0.0, float(horizon), points)
    shape = np.array([_number(e["shape"]) for e in estimates])
    scale = np.array([_number(e["scale"]) for e in estimates])
    surv = survival_curve(times, shape, scale).reshape(len(estimates), -1)
    return {"time": times.tolist(), "survival": [[None if not math.isfinite(v) else float(v) for v in row]
                                                 for row in surv.tolist()]}


def read(released: dict[str, Any], inputs: dict[str, Any]) -> dict[str, Any]:
    """``derived`` of a Weibull release: the noise-aware intervals of its first trials (each says the censoring share
    it simulated), their method, the warnings (each once, in order), the fitted curves and a note when some trials
    have no interval."""
    estimates = list(released.get("estimates") or [])
    infs = [intervals_of(e, inputs) for e in estimates[:MAX_INTERVAL_TRIALS]]
    notes = []
    if len(estimates) > MAX_INTERVAL_TRIALS:
        notes.append(f"Noise-aware intervals are given for the first {MAX_INTERVAL_TRIALS} trials only (each is a "
                     "simulation of its own).")
    return {"interval_includes_noise": True, "interval_method": infs[0]["method"] if infs else None, "intervals": infs,
            "warnings": list(dict.fromkeys(w for iv in infs for w in iv["warnings"])),
            "curve": curve(estimates, float(inputs["horizon"])), "notes": notes}
