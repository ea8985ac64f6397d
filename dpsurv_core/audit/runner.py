"""Running an audit: R simulated releases on D and R on D', for each analysis, then the attack.

For a target subject s (see :mod:`dpsurv_core.audit.targets`) and the neighbouring pair D (with s)
and D' (without s; for label-only mechanisms, s with another group label), an adapter runs the
analysis's mechanism R times on each with seeded :class:`SimulationNoise` (two independent streams
spawned from one seed, vectorised over the runs) and returns the released quantities as two (R, q)
arrays, with the coordinates nearest the target and, when curves are released, the curves on the
public grid. :func:`audit` then mounts the distinguishing attack of :mod:`dpsurv_core.audit.attack`
(fitted on half the runs, measured on the other half) and counts the influential points.

Adapters: survival curves (released counts, the mechanism's raw histograms and the curves),
log-rank tests (post-processing of released counts), Weibull parameters (shape, normalised scale)
and discrete-time regression (the coefficient vector).

The whole record: an adapter with a :class:`~dpsurv_core.audit.record.Publisher` (the record a release of its
analysis would make: the mechanism's draw, then the registered reader with the release's public inputs) is also
attacked on that record, every numeric field of ``released`` and ``derived`` and each warning
(:mod:`dpsurv_core.audit.record`), on fewer runs by default (a reader per run). That attack is then the headline
(:attr:`AuditResult.headline`); the attack on the mechanism's output alone, on all the runs, stays beside it, and
the release is within its charge only when both are.

An audit is a simulation on the data for the data holder or an ethics board, not a release: it is
never charged to a ledger, and its numbers (which come from the raw data) must not be published.

The result (:class:`~dpsurv_core.audit.result.AuditResult`) lives in :mod:`dpsurv_core.audit.result`, the curve
and log-rank adapters in :mod:`dpsurv_core.audit.adapters`, the Weibull and regression adapters in
:mod:`dpsurv_core.audit.model_adapters`; this module (the driver, the mechanisms and publishers, the adapter
for an analysis) re-exports their names.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dpsurv_core import limits
from dpsurv_core.audit.adapters import (  # noqa: F401 (Released re-exported)
    Adapter,
    CurveAdapter,
    LogrankAdapter,
    Progress,
    Released,
    _tick,
)
from dpsurv_core.audit.attack import distinguish
from dpsurv_core.audit.model_adapters import (  # noqa: F401 (re-exported: the command line and the tests)
    REGRESSION_RECORD_TRIALS,
    NonPrivateRegression,
    RegressionAdapter,
    WeibullAdapter,
)
from dpsurv_core.audit.record import Publisher, reader_publisher, record_audit
from dpsurv_core.audit.result import AuditResult
from dpsurv_core.audit.targets import influential_points
from dpsurv_core.curves.result import context, groups_of
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue

ANALYSES = ("km", "logrank", "weibull", "regression")
DEFAULT_TRIALS = 1000
DEFAULT_LAMBDA = 0.01  # the regression command's default ridge penalty for the private fits
MAX_TRIALS = 200_000


# ------------------------------------------------------------------------------------------- driver
def _record_runs(adapter: Adapter, trials: int, record_trials: int | None = None) -> int:
    """Runs per data set of the record attack: ``record_trials`` when given (0: no record attack), else the
    publisher's default (:data:`~dpsurv_core.audit.record.RECORD_TRIALS`) or ``trials`` when fewer; 0 without a
    publisher."""
    if adapter.publisher is None:
        return 0
    if record_trials is None:
        return min(int(trials), int(adapter.publisher.trials))
    record_trials = int(record_trials)
    if record_trials and not 4 <= record_trials <= MAX_TRIALS:
        raise ParameterError(f"--record-trials must be 0 (no record attack) or between 4 and {MAX_TRIALS}, got "
                             f"{record_trials}.")
    return record_trials


def audit(adapter: Adapter, trials: int = DEFAULT_TRIALS, seed: int = 0, target_row: int | None = None,
          progress: Progress | None = None, disclosures: Sequence[Any] = (), record_trials: int | None = None
          ) -> AuditResult:
    """Run the audit: target, R releases on D and D', influential points and the distinguishing attack.
    ``disclosures``: what loading the data disclosed (groups cut at a value read off the data, ...), before the
    analysis's own (:meth:`Adapter.disclosures`); the guarantee as run reads them all. With a publisher on the
    adapter, the whole record a release would make is attacked too, on ``record_trials`` runs per data set
    (:func:`_record_runs`: by default the publisher's, at most ``trials``; 0 leaves the record out).

    Parameters
    ----------
    adapter : Adapter
        The analysis and mechanism to audit (:func:`make_adapter`).
    trials : int, default 1000
        Simulated releases on each of D and D'.
    seed : int, default 0
        Seed of the simulation noise (an audit is a simulation: nothing is charged or recorded).
    target_row : int, optional
        The target subject's row; default the most influential subject (:mod:`~dpsurv_core.audit.targets`).
    progress : callable, optional
        Called with ``(share done, sentence)`` as the runs go.
    disclosures : sequence, default ()
        What loading the data disclosed, before the analysis's own.
    record_trials : int, optional
        Runs per data set of the attack on the whole record (default the publisher's, at most ``trials``; 0: none).

    Returns
    -------
    AuditResult
        The target, the attack's TPR/FPR with Clopper-Pearson bounds, the empirical epsilon beside the charged one,
        the influential points and the guarantee as run.

    References
    ----------
    .. [1] Jagielski M., Ullman J. & Oprea A. (2020), Auditing differentially private machine learning: how private
       is private SGD?, NeurIPS.
    """
    trials = int(trials)
    if not 4 <= trials <= MAX_TRIALS:
        raise ParameterError(f"--trials must be between 4 and {MAX_TRIALS}, got {trials}.")
    n_records = _record_runs(adapter, trials, record_trials)
    public = getattr(adapter, "public", None)
    if public is not None:  # trials x bins x groups on D and on D': within the simulation budget before running
        limits.check_simulation(trials, public.grid.bins, len(adapter.cohort.groups), "runs")
    _tick(progress, 0.0, "choosing the target")
    target = adapter.target(target_row)
    rel = adapter.releases(target, trials, int(seed), progress)
    _tick(progress, 0.8, "distinguishing attack on the mechanism's output")
    attack = distinguish(rel.released_in, rel.released_out, rel.focus)
    record = None
    if n_records and adapter.publisher is not None:
        _tick(progress, 0.8, f"{n_records} release records on D and on D'")
        record = record_audit(adapter.publisher, adapter.cohort, adapter.neighbour(target), n_records, int(seed),
                              None if progress is None else
                              lambda f: _tick(progress, 0.8 + 0.1 * f, f"release records: {f:.0%}"))
    infl = per = None
    alone = None
    if rel.curves_in is not None and rel.curves_out is not None:
        infl, per = influential_points(rel.curves_in, rel.curves_out)
        if len(rel.curves_in) > 1:
            alone = influential_points(rel.curves_in, np.roll(rel.curves_in, 1, axis=0))[1]
    notes = list(rel.notes)
    certain = _never_overlap(rel.released_in, rel.released_out)
    expo = diff = None
    if isinstance(adapter, CurveAdapter):
        from dpsurv_core.audit.exposure import differencing

        _tick(progress, 0.92, "exposure over every subject and a differencing pair")
        expo = adapter.exposure()
        diff = differencing(adapter.mechanism, adapter.cohort, adapter.public, target.row, int(seed))
    if adapter.label_only:
        notes.append("This mechanism protects the group label only: D' gives the target another group label; times "
                     "and events are published as they are.")
    _tick(progress, 1.0, "done")
    c = adapter.cohort
    fields = rel.fields or [f"output[{j}]" for j in range(np.asarray(rel.released_in).shape[1])]
    return AuditResult(adapter.analysis, adapter.mechanism_name, adapter.cost, target, trials, int(seed), attack,
                       infl, per, rel.grid_points, c.name, c.n_subjects, notes, certain, expo, diff,
                       _unique([*disclosures, *adapter.disclosures()]), alone, record, fields)


def _unique(disclosures: list[Any]) -> list[Any]:
    """Each disclosure once (the data's and the analysis's lists can both name a covariate range)."""
    seen: dict[str, Any] = {}
    for d in disclosures:
        key = repr(sorted((d if isinstance(d, dict) else d.to_dict()).items()))
        seen.setdefault(key, d)
    return list(seen.values())


def _never_overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """True when the releases on D are all one value, those on D' all another: a deterministic release that the
    target changes, so the neighbouring outputs never overlap (empirical epsilon infinite, reported as null)."""
    if a.size == 0 or b.size == 0:
        return False
    same_a = bool(np.all(a == a[:1]))
    same_b = bool(np.all(b == b[:1]))
    return same_a and same_b and not np.array_equal(a[:1], b[:1])


def curve_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A curve mechanism by name from the mechanism catalogue, as the ``km`` command builds it (time-indexed
    options: alpha, tau_start, tau_end, window, edge_mode, base_epsilon; other keywords are ignored), without
    noise-aware bands: the audit reads the curves and counts only (the bands are post-processing, never attacked)."""
    mech: Any = catalogue.get(catalogue.CURVES, name).build(epsilon, **context(cohort, public), **options)
    if getattr(mech, "noise_in_bands", False):
        mech.noise_in_bands = False
    return mech


def curve_publisher(name: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                    tests: dict[str, Any] | None = None, reading: dict[str, Any] | None = None,
                    **options: Any) -> Publisher | None:
    """The record a ``km`` release of curve mechanism ``name`` (a ``logrank`` release with ``tests``, e.g.
    ``{"null_draws": None}``) would make, as :func:`dpsurv_core.cli.km.plan` builds it: the mechanism built from the
    catalogue with the release's context and options, one run drawn by its ``draw``, and the curves (log-rank)
    reader on it with :func:`dpsurv_core.curves.readout.public_inputs`, declared from ``public`` and ``reading``
    (conf_type, group names, time unit, landmarks, RMST time; default R's log band and the group codes). None when
    the mechanism draws nothing to read (nonprivate)."""
    from dpsurv_core.curves import readout

    entry = catalogue.get(catalogue.CURVES, name)
    if not entry.private or (entry.formal and (epsilon is None or not math.isfinite(epsilon))):
        return None  # no noise: not a release, so no record (the numbers are for the data holder's eyes only)
    build = {**context(cohort, public), **{k: v for k, v in options.items() if k in entry.options and v is not None}}
    mech: Any = entry.build(epsilon, **build)  # a curve mechanism with draw and read (the base type has neither)
    if not hasattr(mech, "draw") or not hasattr(mech, "read"):
        return None
    groups = groups_of(cohort, public) or ("all",)
    reading = {"conf_type": "log", "names": {str(g): str(g) for g in groups}, "time_unit": cohort.time_unit,
               "landmarks": None, "rmst": None, **(reading or {})}
    inputs = readout.public_inputs(name, epsilon, build, public, False, reading)
    if tests is not None:
        inputs["tests"] = dict(tests)
    noiseless: Any = entry.build(math.inf, **build) if entry.formal else mech  # to find where the target shows
    return reader_publisher("curves" if tests is None else "logrank",
                            lambda c, noise: mech.draw(c, public, noise, 1, False), inputs,
                            source=f"the {'km' if tests is None else 'logrank'} release's public inputs "
                                   "(curves.readout.public_inputs) and the catalogue's mechanism",
                            exact=lambda c, noise: noiseless.draw(c, public, noise, 1, False))


def _weibull_mechanism(name: str, epsilon: float, cohort: Cohort, public: PublicParameters, **options: Any) -> Any:
    """A Weibull mechanism by name from the mechanism catalogue, with the public horizon of ``public``."""
    keep = {k: v for k, v in options.items() if k in ("omega", "gamma", "rungs", "blocks", "block_size") and v is not None}
    entry = catalogue.get(catalogue.WEIBULL, name)
    return entry.build(epsilon if entry.private else None, horizon=public.horizon,
                       rows_per_subject=cohort.rows_per_subject, **keep)


WEIBULL_RECORD_TRIALS = 60  # the Weibull reader simulates its intervals (about 0.3 s a record for lsp-tll on lung)


def _prepared(mech: Any) -> Callable[[Cohort], Any]:
    """``mech.prepare`` of a cohort, once per cohort (the record runs draw one release at a time)."""
    memo: dict[int, tuple[Cohort, Any]] = {}

    def prepare(cohort: Cohort) -> Any:
        if id(cohort) not in memo:
            memo[id(cohort)] = (cohort, mech.prepare(cohort))
        return memo[id(cohort)][1]

    return prepare


def _weibull_publisher(mech: Any, cohort: Cohort, public: PublicParameters, n_public: int | None = None,
                      censoring: float | None = None) -> Publisher | None:
    """The record a ``weibull`` release of ``mech`` would make (:mod:`dpsurv_core.weibull.readout`): one run of
    ``release_many``, its estimates as released, and the Weibull reader's intervals, warnings and curves from the
    public inputs. The intervals simulate cohorts of the declared ``n_public`` subjects (default: D's count, which a
    release must declare or accept as a disclosure) with the declared ``censoring`` share (default: read off D, rounded
    to 5%): the same on D and on D', as public inputs are. None for a mechanism without noise (mle) or when this
    version has no Weibull reader."""
    try:
        from dpsurv_core.weibull import readout
    except ImportError:
        return None
    from dpsurv_core.weibull.inference import censoring_share, check_share

    if not getattr(mech, "private", True) or not mech.cost.private:
        return None
    sample = mech.prepare(cohort)
    blocks_from_data = hasattr(mech, "n_blocks") and getattr(mech, "blocks", None) is None
    blocks = mech.n_blocks(sample) if blocks_from_data else getattr(mech, "blocks", None)
    n = cohort.n_subjects if n_public is None else int(n_public)
    share = censoring_share(sample) if censoring is None else check_share(float(censoring))
    inputs = readout.public_inputs(mech, n, share, cohort.time_unit, blocks=blocks,
                                   horizon_from_data=public.horizon_from_data, n_from_data=n_public is None,
                                   censoring_from_data=censoring is None, blocks_from_data=blocks_from_data)
    prepare = _prepared(mech)
    return reader_publisher(readout.KIND, lambda c, noise: readout.released_of(mech.compute_many(prepare(c), noise, 1)),
                            inputs, WEIBULL_RECORD_TRIALS,
                            source="the weibull release's public inputs (weibull.readout.public_inputs: declared n "
                                   "and censoring share, the same on D and D') and its reader")


FAMILIES = {"km": catalogue.CURVES, "logrank": catalogue.CURVES, "weibull": catalogue.WEIBULL,
            "regression": catalogue.REGRESSION}
_COMMANDS = {"km": (catalogue.CURVES, "km"), "logrank": (catalogue.CURVES, "logrank"),
             "weibull": (catalogue.WEIBULL, "weibull"), "regression": (catalogue.REGRESSION, "audit")}


def mechanisms_for(analysis: str) -> list[str]:
    """Mechanism ids the audit accepts for an analysis (the catalogue's)."""
    if analysis not in _COMMANDS:
        raise ParameterError(f"Unknown analysis {analysis!r}: choose one of {', '.join(ANALYSES)}.")
    return catalogue.ids(*_COMMANDS[analysis])


def make_adapter(analysis: str, mechanism: str, epsilon: float, cohort: Cohort, public: PublicParameters,
                 record: bool = False, **options: Any) -> Adapter:
    """The adapter for an analysis and a mechanism name (options as in the CLI, by keyword). ``record``: give it the
    :class:`~dpsurv_core.audit.record.Publisher` of the record a release would make, so that :func:`audit` attacks the
    whole record too (the ``audit`` command and the Privacy audit page do; a reader runs once per record, so it is
    left to the caller: the DP test suite's thousand-run audits of the mechanisms' outputs stay fast without it)."""
    names = mechanisms_for(analysis)
    if mechanism not in names:
        raise ParameterError(f"The {analysis} audit has no mechanism {mechanism!r}: choose one of {', '.join(names)}.")
    reading = options.pop("reading", None)  # how the release would be read (curves: conf_type, group names, ...)
    if analysis in ("km", "logrank"):
        mech = curve_mechanism(mechanism, epsilon, cohort, public, **options)
        adapter = CurveAdapter(mech, cohort, public) if analysis == "km" else LogrankAdapter(mech, cohort, public)
        if record:
            adapter.publisher = curve_publisher(mechanism, epsilon, cohort, public,
                                                None if analysis == "km" else {"null_draws": None}, reading, **options)
        return adapter
    if analysis == "weibull":
        wb = WeibullAdapter(_weibull_mechanism(mechanism, epsilon, cohort, public, **options), cohort, public)
        share = options.get("censoring")
        if isinstance(share, (list, tuple)):  # --censoring as the curve commands parse it: one share for all
            share = share[0] if len(share) == 1 else None
        if record:
            wb.publisher = _weibull_publisher(wb.mechanism, cohort, public, options.get("n_public"), share)
        return wb
    own = set(catalogue.get(catalogue.REGRESSION, mechanism).options) - {"lam"}
    psgld = {k: v for k, v in options.items() if k in own and v is not None}
    lam = options.get("lam")
    rg = RegressionAdapter(mechanism, epsilon, cohort, public, tuple(options.get("covariates") or ()),
                           lam=DEFAULT_LAMBDA if lam is None else float(lam),
                           intervals=options.get("intervals"), knots=options.get("knots"),
                           ranges=options.get("ranges"), n_public=options.get("n_public"), **psgld)
    if record:
        rg.publisher = rg.record_publisher()
    return rg
