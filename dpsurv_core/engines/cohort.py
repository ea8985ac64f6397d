"""A cohort whose rows stay in the engine: :class:`EngineCohort`.

It answers what the counting mechanisms need (sizes, group labels, binned counts) and what the Weibull MLE,
LSP + TLL and Laplace baseline need (the table of distinct times with their counts and events) with queries. Anything
that needs each subject's values (``time``, ``event``, ``group``, ``subject``, ``event_type``,
``covariates``) streams the mapped columns through the engine in chunks of ``chunk_rows`` and validates them
as the in-memory path does, but only below the row limit of :func:`dpsurv_core.limits.check_engine_rows`;
past it the access is refused with one sentence naming that limit. Never a silent full load: each such
read is added to the cohort's warnings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

import numpy as np

from dpsurv_core import limits
from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.data.categories import lookup
from dpsurv_core.data.cohort import Cohort, ColumnMap, build_cohort
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.engines import statistics
from dpsurv_core.engines.base import RELATION, Engine
from dpsurv_core.engines.timefix import merged
from dpsurv_core.errors import DataError, ParameterError

DEFAULT_CHUNK_ROWS = 1_000_000
_ROW_FIELDS = ("time", "event", "group", "subject", "event_type", "covariates")


class EngineCohort(Cohort):
    """A validated cohort kept in an engine (see the module docstring)."""

    # set by :meth:`open` (declarations only: no dataclass fields, no class attributes)
    engine: Engine
    summary: statistics.Summary
    purpose: str
    chunk_rows: int
    mapping: ColumnMap
    counts_computed: int
    _rows: Cohort | None
    _unmerged: EngineCohort | None  # a view with near-tied times merged (:meth:`timefixed`): the table it reads

    def __new__(cls, *args, **kwargs):
        # dataclasses.replace(engine_cohort, ...) builds a copy from every field, i.e. from the rows read through
        # the bounded path: that copy is an ordinary in-memory Cohort
        if args or kwargs:
            return Cohort(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args, **kwargs) -> None:  # filled by :meth:`open`
        pass

    @classmethod
    def open(cls, engine: Engine, summary: statistics.Summary, name: str, time_unit: str = "days",
             purpose: str = "This analysis", chunk_rows: int = DEFAULT_CHUNK_ROWS) -> EngineCohort:
        self = cls()
        self.engine, self.summary, self.purpose, self.chunk_rows = engine, summary, purpose, int(chunk_rows)
        self.mapping = summary.mapping
        self.rows_per_subject = summary.mapping.max_rows_per_subject if summary.mapping.id else 1
        self.name, self.time_unit = name, time_unit
        self.warnings = tuple(summary.warnings)
        self.event_type_labels = summary.event_type_labels
        self._rows = None
        self._unmerged = None
        self.counts_computed = 0
        return self

    def __repr__(self) -> str:
        return (f"EngineCohort({self.name!r}, engine={self.engine.name}, rows={self.summary.rows}, "
                f"groups={self.summary.groups})")

    # ---- answered by queries ---------------------------------------------------------------------------
    @property
    def n(self) -> int:
        return self.summary.rows

    @property
    def n_subjects(self) -> int:
        return self.summary.subjects

    @property
    def n_events(self) -> int:
        return self.summary.events

    @property
    def groups(self) -> list[str]:
        return list(self.summary.groups)

    @property
    def has_group(self) -> bool:
        return self.summary.group is not None

    @property
    def has_event_type(self) -> bool:
        return self.summary.event_type is not None

    @property
    def max_time(self) -> float:
        return self.summary.max_time

    @property
    def loaded(self) -> bool:
        """True once the rows were read into memory (the bounded chunked path)."""
        return self._rows is not None

    def binned_counts(self, grid: TimeGrid, groups: tuple[str, ...] | None = None, competing: bool = False) -> BinnedCounts:
        """Exact counts on ``grid`` (one query, :func:`statistics.binned_counts`); the last few are kept, as a
        non-private run counts on the event-time grid twice (its exact curves and its public grid), and each query
        on thousands of edges takes seconds. A copy is returned, so a caller may change it."""
        key = (grid.edges.tobytes(), grid.kind, None if groups is None else tuple(groups), bool(competing))
        kept = self.__dict__.setdefault("_counts", {})
        if key not in kept:
            self.counts_computed += 1
            if len(kept) >= 4:
                kept.clear()
            kept[key] = statistics.binned_counts(self.engine, self.summary, grid, groups, competing)
        c = kept[key]
        return BinnedCounts(c.grid, c.groups, c.n.copy(), c.events.copy(), c.censored.copy(), c.event_types)

    def event_times(self, competing: bool = False) -> np.ndarray:
        """The distinct event times, near-tied ones merged as R's timefix merges them unless the column map says
        ``timefix`` False (:meth:`timefixed`): the event-time grid's edges, as :meth:`TimeGrid.event_times` reads
        them off rows in memory."""
        return statistics.event_times(self.engine, self.timefixed().summary, competing)

    def timefixed(self) -> EngineCohort:
        """This table with near-tied times merged as R's timefix (aeqSurv) merges them, counted in the engine
        (:mod:`dpsurv_core.engines.timefix`): a view over the same engine whose counts read the merged times, and
        whose rows, if read, are merged as :func:`dpsurv_core.curves.timefix.timefixed` merges rows in memory; this
        table itself when the column map says ``timefix`` False, no two times are tied, or it is such a view."""
        if self._unmerged is not None or not self.mapping.timefix:
            return self
        cache = self.__dict__
        if "_timefixed" not in cache:
            summary = merged(self.engine, self.summary)
            view = self
            if summary is not self.summary:
                view = EngineCohort.open(self.engine, summary, self.name, self.time_unit, self.purpose,
                                         self.chunk_rows)
                view._unmerged = self
            cache["_timefixed"] = view
        return cache["_timefixed"]

    def rows_at_risk(self, groups: Sequence[str] | None, times: np.ndarray) -> np.ndarray:
        """Rows with time >= t per group (G, T), R's n.risk at t: one query on the cells
        (:func:`statistics.rows_at_risk`), what :func:`dpsurv_core.curves.summary.at_risk_exact` counts on rows."""
        return statistics.rows_at_risk(self.engine, self.summary, None if groups is None else tuple(groups), times)

    def exact_grid(self, competing: bool = False) -> TimeGrid | None:
        """The event-time grid the exact (non-private) estimators count on (:meth:`event_time_grid`, near-tied times
        merged unless ``timefix`` is off; with ``competing``, every event type's times), or None when the data have
        more distinct event times than a grid counted in the engine may have (the caller reads the rows then)."""
        try:
            return self.event_time_grid(competing and self.has_event_type)
        except ParameterError:
            return None

    def follow_up(self, groups: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Each of ``groups``' first and last time under observation (events and censorings; "all": the whole
        table), NaN for a group no row is in: one ``GROUP BY`` (what :func:`dpsurv_core.curves.result.with_follow_up_end`
        reads off rows in memory)."""
        s = self.summary
        first, last = np.full(len(groups), np.nan), np.full(len(groups), np.nan)
        g = s.group if s.group is not None and tuple(groups) != ("all",) else "'all'"
        rows = self.engine.rows(f"SELECT {g} AS g, MIN({s.time}), MAX({s.time}) FROM {s.kept} AS k GROUP BY {g}")
        index = {"all": 0} if g == "'all'" else lookup(tuple(groups), [str(r[0]) for r in rows])
        for label, lo, hi in rows:
            i = index.get(str(label))
            if i is not None and lo is not None:
                first[i] = np.fmin(first[i], float(lo))
                last[i] = np.fmax(last[i], float(hi))
        return first, last

    def time_table(self, cap: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Distinct times capped at ``cap`` with their numbers of rows and events (the Weibull statistics), held in
        memory only up to the limit of :func:`dpsurv_core.limits.max_cli_cells` / 3 values (else refused)."""
        limit = max(limits.max_cli_cells() // 3, 1)
        out = statistics.time_table(self.engine, self.summary, cap, limit, self.chunk_rows)
        if isinstance(out, int):
            raise DataError(f"{self.purpose} needs the table of distinct times, and {self.name!r} has {out:,} distinct "
                            f"times up to the horizon, more than the {limit:,} dpsurv holds in memory "
                            f"({limits.CLI_CELLS_ENV} / 3): round the times in the source (to whole days, for example).")
        return out

    def event_time_grid(self, competing: bool = False) -> TimeGrid:
        """The data's distinct event times as grid edges (not DP), read by one ``DISTINCT`` query: what
        :meth:`TimeGrid.event_times` reads off the rows, to the same edges."""
        times = self.event_times(competing)
        if times.size == 0:
            return TimeGrid.without_events(float(self.max_time))
        return TimeGrid(np.concatenate([[min(0.0, float(times[0]) - 1.0)], times]), "event-times", True)

    def public_parameters(self, horizon: float | None = None, bins: int = 20, grid: TimeGrid | None = None,
                          group_categories: tuple[str, ...] | None = None) -> PublicParameters:
        """:meth:`PublicParameters.derive` without the rows: it reads only their maximum time and group labels, which
        the engine's summary holds (same values, same disclosures)."""
        labels = np.array(self.groups if self.has_group else ["all"], dtype=object)
        stand_in = Cohort(np.full(labels.size, self.max_time), np.zeros(labels.size, np.int8),
                          labels.astype(str) if self.has_group else None)
        return PublicParameters.derive(stand_in, horizon=horizon, bins=bins, grid=grid,
                                       group_categories=group_categories)

    def exact_release(self, public: PublicParameters):
        """The non-private mechanism's release (:class:`dpsurv_core.curves.result.NonPrivate`) from the engine's
        counts: the exact Kaplan-Meier on the event times of :meth:`event_time_grid` (equal to lifelines and R
        survival), read at the public grid's points, with the public grid's counts. The event-time counts are
        queried once per group set and kept. When the data have more distinct event times than a grid may have
        (the engine refuses that grid), the estimate is the exact one on the public grid's counts, and a note in the
        release says so."""
        from dpsurv_core.curves.kaplan_meier import estimate
        from dpsurv_core.curves.result import (
            CurveResult,
            NonPrivate,
            at_grid,
            exact_counts,
            groups_of,
            tile_trials,
            until,
            with_follow_up_end,
        )
        from dpsurv_core.data.public import Disclosure

        grid = public.grid
        src = self.timefixed()  # near-tied times are one time, as R's survfit counts them (unless --no-timefix)
        on_grid = tile_trials(exact_counts(src, grid, public), 1)
        cache = self.__dict__.setdefault("_exact_fine", {})
        key = groups_of(self, public)
        notes: list[str] = []
        if key not in cache:
            cache.clear()
            try:
                cache[key] = estimate(tile_trials(exact_counts(src, self.event_time_grid(), public), 1))
            except ParameterError as exc:  # more distinct event times than a grid may have
                cache[key] = exc
        if isinstance(cache[key], ParameterError):
            curves = estimate(on_grid)
            notes.append(f"{cache[key].args[0].split(':')[0]}, so the exact Kaplan-Meier at every event time cannot "
                         "be counted in the engine: these non-private numbers are the exact ones on the public grid's "
                         "counts. Round the times in the source (to whole days, for example) to get every event time.")
        else:
            curves = at_grid(cache[key], grid.points)
        mech = NonPrivate()
        # for an RMST, the medians and landmarks; a declared horizon ends follow-up, as for rows in memory
        extra = {} if isinstance(cache[key], ParameterError) else {
            "event_time_curves": until(cache[key], float(public.horizon))}
        rel = CurveResult(mech.name, mech.cost, {}, [Disclosure("release", "not DP: exact, non-private estimates.",
                                                                 dp=False)], curves, on_grid, "none", notes, extra)
        return with_follow_up_end(rel, src, public)  # limits [1, 1] before a group's first time, as R's summary

    # ---- per-subject values: the bounded chunked path ----------------------------------------------------
    def in_memory(self) -> Cohort:
        """The rows as an ordinary :class:`Cohort`, streamed in chunks below the row limit (else refused)."""
        if self._rows is None and self._unmerged is not None:  # a merged view: the table's rows, merged
            from dpsurv_core.curves.timefix import timefixed

            self._rows = timefixed(self._unmerged.in_memory())
            self.warnings = self._unmerged.warnings
        if self._rows is None:
            m = self.mapping
            cols = [c for c in dict.fromkeys([m.time, m.event, m.group, m.id, m.event_type, *m.covariates]) if c]
            rows = self.summary.rows_in_source
            limits.check_engine_rows(rows, len(cols), self.name, self.purpose)
            q = self.engine.quote
            sql = f"SELECT {', '.join(q(c) for c in cols)} FROM {RELATION} ORDER BY _row"
            parts: dict[str, list[np.ndarray]] = {c: [] for c in cols}
            for batch in self.engine.batches(sql, self.chunk_rows):
                for c in cols:
                    parts[c].append(batch[c].to_numpy())
            import pandas as pd

            frame = pd.DataFrame({c: (np.concatenate(v) if v else np.array([])) for c, v in parts.items()}, copy=False)
            if frame.empty:
                raise DataError(f"{self.name!r} has a header but no rows: add one row per subject.")
            cohort = build_cohort(frame, m, self.name, self.time_unit)
            note = (f"{self.purpose} needs each subject's values: {rows:,} rows were read from the {self.engine.name} "
                    f"engine into memory in chunks of {self.chunk_rows:,}.")
            cohort.warnings = (*cohort.warnings, note)
            self.warnings = cohort.warnings
            self._rows = cohort
        return self._rows


def _row_property(name: str) -> property:
    return property(lambda self: getattr(self.in_memory(), name), doc=f"``{name}`` read through the bounded path.")


for _f in _ROW_FIELDS:
    setattr(EngineCohort, _f, _row_property(_f))
assert {f.name for f in fields(Cohort)} >= set(_ROW_FIELDS)
