"""The memory a curve release, preview or log-rank test would allocate, estimated before any work.

Every curve mechanism's arrays are per (trial, group, event type, bin): the released counts, the curves, their bands,
variances and readings. Three computations multiply that: the bootstrap behind a counts release's noise-aware bands
(:mod:`dpsurv_core.curves.bootstrap`: draws x groups x types x bins per trial), time-indexed's band (its pipeline run
on ``band_draws`` x ``family`` candidate curves at every grid point, :mod:`dpsurv_core.curves.time_indexed_bands`) and
the log-rank test's simulated null tables (:mod:`dpsurv_core.curves.logrank_test`, built in blocks of trials). An
event-time grid makes the bins every distinct event time, so on a large cohort the same arrays grow with the rows.

The constants below were measured (peak traced by ``tracemalloc``: 2,000 subjects in two groups on 100 to 10,000 bins
and 1 to 100 trials; kidney's four groups on its 50 event times, 4,000 trials; 200,000 subjects on their 95,199 event
times) and rounded up by about a tenth: a release without a bootstrap (a deterministic rule) peaks near 520 bytes per
(trial, group, bin), the bootstrap adds 134 per redrawn (trial, draw, group, bin) cell (120 for rrr), time-indexed's
band 1.38 float64 arrays of draws x family x points, the log-rank null about 100 bytes per simulated cell. :func:`check_curves` refuses, with one sentence, an estimate past
:func:`dpsurv_core.limits.max_memory_mb`.
"""

from __future__ import annotations

import math
from typing import Any

from dpsurv_core import limits

RELEASE_CELL_BYTES = 576  # per (trial, group, event type, bin): counts, curves, bands, variances, readings
BOOTSTRAP_CELL_BYTES = 148  # per (trial, draw, group, event type, bin): redrawn counts and their curves
NULL_CELL_BYTES = 128  # per (trial, draw, group, bin) of a log-rank null block: simulated tables and statistics
BAND_ARRAYS = 1.5  # time-indexed's band: float64 arrays of draws x family x points alive at its peak


def _private(mechanism: Any) -> bool:
    """Does ``mechanism`` add noise (a finite epsilon, or disclosure control's None)?"""
    eps = mechanism.cost.epsilon
    return eps is None or math.isfinite(eps)


def bootstraps(mechanism: Any) -> bool:
    """Does ``mechanism``'s reader redraw its release for noise-aware bands (:func:`bootstrap_curves`)?"""
    if mechanism.name in ("time-indexed", "nonprivate") or not getattr(mechanism, "noise_in_bands", True):
        return False
    return (mechanism.interval_includes_noise or mechanism.name == "rrr") and _private(mechanism)


def band_bytes(mechanism: Any, points: int) -> float:
    """Bytes of a time-indexed band on ``points`` grid points (0 for any other mechanism or without noise)."""
    if mechanism.name != "time-indexed" or math.isinf(getattr(mechanism, "base_epsilon", math.inf)):
        return 0.0
    from dpsurv_core.curves.time_indexed_bands import BAND_SHAPES, FAMILY_SIZE

    family = len(BAND_SHAPES) * FAMILY_SIZE + 2
    return BAND_ARRAYS * 8.0 * mechanism.band_draws * family * int(points)


def bootstrap_bytes(trials: int, cells: int) -> float:
    """Bytes of the bootstrap of ``trials`` releases of ``cells`` values each (groups x types x bins)."""
    from dpsurv_core.curves.bootstrap import draws_for

    return float(BOOTSTRAP_CELL_BYTES) * int(trials) * draws_for(trials, cells) * int(cells)


def null_bytes(trials: int, draws: int, groups: int, bins: int) -> float:
    """Bytes of one block of a calibrated log-rank test's null tables (blocks of trials, at least one trial)."""
    from dpsurv_core.curves.logrank_test import MAX_CELLS

    per_trial = max(int(draws), 1) * max(int(groups), 1) * int(bins)
    block = min(max(int(trials), 1), max(1, MAX_CELLS // per_trial))
    return float(NULL_CELL_BYTES) * block * per_trial


def curve_bytes(mechanism: Any, bins: int, groups: int, trials: int = 1, event_types: int = 1,
                null_draws: int | None = None) -> float:
    """Estimated peak bytes of ``trials`` releases of ``mechanism`` on ``bins`` bins and ``groups`` groups (with
    ``null_draws``: and its calibrated log-rank tests)."""
    trials = max(int(trials), 1) if _private(mechanism) else 1
    cells = max(int(groups), 1) * max(int(event_types), 1) * int(bins)
    total = float(RELEASE_CELL_BYTES) * trials * cells + band_bytes(mechanism, bins)
    if bootstraps(mechanism):
        total += bootstrap_bytes(trials, cells)
    if null_draws:
        total = max(total, null_bytes(trials, null_draws, groups, bins))  # the tests run after the release is read
    return total


def check_curves(mechanism: Any, bins: int, groups: int, trials: int = 1, event_types: int = 1,
                 null_draws: int | None = None) -> None:
    """Refuse, before any work, a curve computation whose estimate (:func:`curve_bytes`) is past the memory limit."""
    nbytes = curve_bytes(mechanism, bins, groups, trials, event_types, null_draws)
    what = (f"{mechanism.name} on {int(bins):,} bins x {max(int(groups), 1)} group(s)"
            + (f" x {int(trials):,} trials" if trials > 1 and _private(mechanism) else "")
            + (f" with {int(null_draws):,} null draws" if null_draws else ""))
    if band_bytes(mechanism, bins) > 0:
        fix = ("declare a grid of fewer bins (time-indexed's band simulates its pipeline at every grid point), or use "
               "laplace-counts")
    else:
        fix = "declare a grid of fewer bins (an event-time grid has a bin for every distinct event time)" + (
            ", fewer trials" if trials > 1 else "") + (", or fewer null draws" if null_draws else "")
    limits.check_memory(nbytes, what, fix)


def check_release(mechanism: Any, cohort: Any, public: Any, trials: int = 1, competing: bool = False,
                  null_draws: int | None = None) -> None:
    """:func:`check_curves` for ``mechanism.compute(cohort, public, noise, trials, competing)``: the groups are the
    public categories, the event types the cohort's when ``competing``; ``null_draws``: a log-rank release's tests
    (0: their default number of draws)."""
    from dpsurv_core.curves.result import groups_of

    found = groups_of(cohort, public)
    groups = 1 if found is None else len(found)
    types = len(getattr(cohort, "event_type_labels", ()) or ()) if competing else 1
    if null_draws is not None and _private(mechanism):
        from dpsurv_core.curves.logrank_test import default_draws

        null_draws = null_draws or default_draws(trials, groups, public.grid.bins)
    else:
        null_draws = None
    check_curves(mechanism, public.grid.bins, groups, trials, max(types, 1), null_draws)


def check_bootstrap(trials: int, draws: int, cells: int) -> None:
    """Refuse a bootstrap of ``draws`` redrawn releases per trial past the memory limit (a record read again included:
    the check in each mechanism's ``compute`` comes first on a release)."""
    nbytes = float(BOOTSTRAP_CELL_BYTES) * max(int(trials), 1) * int(draws) * int(cells)
    limits.check_memory(nbytes, f"The bootstrap band ({int(draws):,} draws x {int(cells):,} values x {int(trials):,} "
                                "trial(s))", "declare a grid of fewer bins, or run fewer trials")


def check_null(trials: int, draws: int, groups: int, bins: int) -> None:
    """Refuse a calibrated log-rank test whose null tables would be past the memory limit."""
    limits.check_memory(null_bytes(trials, draws, groups, bins),
                        f"The calibrated log-rank test ({int(draws):,} null draws x {int(groups)} groups x "
                        f"{int(bins):,} bins)", "declare a grid of fewer bins, or give fewer null draws")
