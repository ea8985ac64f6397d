"""Each statistic written once, as one SQL text that DuckDB and Spark SQL both run.

The texts read the relation ``cohort`` (see :mod:`dpsurv_core.engines.base`); only identifiers and string
literals are spelled by the engine (``quote``/``string``). Numbers are written as exact double literals
(``1.5E0``: a double in both dialects, so comparisons with the public edges are exact).

- ``cells``: one scan collapses the rows to cells of equal (time, event, group, event type) with their count
  ``_c`` (a cached table: small for registry times in whole days); every statistic reads the cells.
- ``kept``: the rows an analysis uses, as today's in-memory validation keeps them (data/cohort.py): at most
  m rows per subject (the first m in file order, ``ROW_NUMBER() OVER (PARTITION BY id ORDER BY _row)``), rows
  without a group label left out.
- validation: counts of missing, non-numeric, infinite, negative and zero times, missing and unknown event
  codes, ids, group sizes: the same sentences as :func:`dpsurv_core.data.cohort.validate`.
- binned counts: one ``GROUP BY`` of (group, event or censoring, event type, bin) with the bin found by a
  binary search over the public edges (:meth:`~dpsurv_core.engines.base.Engine.count_edges`: a balanced ``CASE``,
  or the engine's own spelling of it): events in (b_{j-1}, b_j], censorings in [b_{j-1}, b_j),
  exactly as :func:`dpsurv_core.curves.counts.count`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from dpsurv_core.curves.counts import BinnedCounts
from dpsurv_core.data import event_types
from dpsurv_core.data.categories import lookup
from dpsurv_core.data.cohort import (
    FALSE_WORDS,
    MIN_GROUP_SIZE,
    NO_GROUP,
    TRUE_WORDS,
    ColumnMap,
    Problem,
    _natural_key,
    mapping_problems,
    no_events_problem,
    too_many_groups,
)
from dpsurv_core.data.public import MAX_BINS, TimeGrid
from dpsurv_core.engines.base import RELATION, Engine, number
from dpsurv_core.errors import ParameterError

MAX_DOUBLE = "1.7976931348623157E308"


@dataclass
class Summary:
    """What the engine found: kept rows, subjects, events, group labels and sizes, event types, warnings."""

    mapping: ColumnMap
    kept: str  # SQL relation of the kept cells: equal (time, event, group, event type), their count ``_c``
    time: str  # SQL expressions over ``kept``
    event: str
    group: str | None
    event_type: str | None
    rows: int = 0
    rows_in_source: int = 0
    subjects: int = 0
    events: int = 0
    max_time: float = math.nan
    groups: tuple[str, ...] = ()
    event_type_labels: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)


class Statistics:
    """The SQL texts for one column map on one engine."""

    def __init__(self, engine: Engine, mapping: ColumnMap) -> None:
        self.engine, self.m = engine, mapping
        self.q = engine.quote
        self.kinds = engine.columns()

    # ---- expressions -------------------------------------------------------------------------------
    def _norm(self, col: str, lower: bool = True) -> str:
        """Text of a value as pandas' ``astype(str).str.strip()`` (lowered), with a trailing '.0' removed."""
        s = f"TRIM(CAST({self.q(col)} AS STRING))"
        if lower:
            s = f"LOWER({s})"
        return f"(CASE WHEN {s} LIKE '%.0' THEN SUBSTR({s}, 1, LENGTH({s}) - 2) ELSE {s} END)"

    def _in(self, expr: str, values) -> str:
        vals = sorted({str(v).strip().lower() for v in values})
        return f"{expr} IN ({', '.join(self.engine.string(v) for v in vals)})" if vals else "FALSE"

    def _missing(self, col: str) -> str:
        c = self.q(col)
        return f"({c} IS NULL OR ISNAN({c}))" if self.kinds.get(col) == "float" else f"({c} IS NULL)"

    def time_expr(self) -> str:
        c = self.q(self.m.time)
        return f"TRY_CAST({c} AS DOUBLE)" if self.kinds.get(self.m.time) == "text" else f"CAST({c} AS DOUBLE)"

    def event_expr(self) -> str:
        """1 event, 0 censored, NULL for a value outside the coding."""
        m, c = self.m, self.q(self.m.event)
        kind = self.kinds.get(m.event)
        if m.event_codes:
            s = self._norm(m.event)
            if m.censor_codes:
                return (f"CASE WHEN {self._in(s, m.event_codes)} THEN 1 WHEN {self._in(s, m.censor_codes)} THEN 0 "
                        "END")
            return f"CASE WHEN {self._in(s, m.event_codes)} THEN 1 ELSE 0 END"
        if kind == "bool":
            return f"CASE WHEN {c} THEN 1 ELSE 0 END"
        if kind in ("int", "float"):
            return f"CASE WHEN {c} = 0 THEN 0 WHEN {c} = 1 THEN 1 END"
        s = f"LOWER(TRIM(CAST({c} AS STRING)))"
        return f"CASE WHEN {self._in(s, TRUE_WORDS)} THEN 1 WHEN {self._in(s, FALSE_WORDS)} THEN 0 END"

    def group_expr(self, integral: bool) -> str | None:
        """Group labels as pandas' ``_label``: text, with integral floats printed without '.0'."""
        g = self.m.group
        if g is None:
            return None
        c, kind = self.q(g), self.kinds.get(g)
        if kind == "bool":
            return f"CASE WHEN {c} THEN 'True' ELSE 'False' END"
        if kind == "float" and integral:
            return f"CAST(CAST({c} AS BIGINT) AS STRING)"
        return f"CAST({c} AS STRING)"

    # ---- validation ----------------------------------------------------------------------------------
    def summarise(self) -> tuple[Summary | None, list[Problem]]:
        """Every problem :func:`dpsurv_core.data.cohort.validate` would report, counted by the engine."""
        m, q, e = self.m, self.q, self.engine
        cols = list(self.kinds)
        problems = mapping_problems(m, cols)
        if problems:
            return None, problems
        total = int(e.scalar(f"SELECT COUNT(*) FROM {RELATION}"))
        ranked = RELATION
        if m.id is not None:
            idc = q(m.id)
            n_missing, dropped = e.rows(
                f"SELECT SUM(CASE WHEN {idc} IS NULL THEN c ELSE 0 END), "
                f"SUM(CASE WHEN {idc} IS NULL THEN 0 WHEN c > {m.max_rows_per_subject} THEN c - {m.max_rows_per_subject} "
                f"ELSE 0 END) FROM (SELECT {idc}, COUNT(*) AS c FROM {RELATION} GROUP BY {idc}) AS s")[0]
            if n_missing:
                problems.append(Problem(m.id, f"Column {m.id!r} has {int(n_missing)} missing subject id(s): give every "
                                              "row the id of its subject."))
            elif dropped:
                ranked = (f"(SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY {idc} ORDER BY _row) AS _rank "
                          f"FROM {RELATION}) AS r WHERE _rank <= {m.max_rows_per_subject})")
                problems.append(Problem(m.id, f"{int(dropped)} row(s) were dropped because some subjects in {m.id!r} "
                                              f"have more than {m.max_rows_per_subject} row(s): raise the bound "
                                              "to keep them (every sensitivity is multiplied by the bound).", "warning"))
        # one scan: the rows collapse to cells of equal (time, event, group, event type) with their count ``_c``;
        # every statistic below reads the cells (few for registry data in whole days); only an error's row number
        # and example value go back to the rows
        keys = ", ".join(q(c) for c in dict.fromkeys([m.time, m.event, m.group, m.event_type]) if c)
        distinct = getattr(e, "distinct_rows", None)  # the file's distinct rows with their counts, kept by one scan
        if distinct is not None and ranked == RELATION:
            from dpsurv_core.privacy.fingerprint_scan import COUNT_COLUMN

            cells = e.cache(f"SELECT {keys}, CAST(SUM({COUNT_COLUMN}) AS BIGINT) AS _c FROM {distinct} AS r "
                            f"GROUP BY {keys}")
        else:
            cells = e.cache(f"SELECT {keys}, COUNT(*) AS _c FROM {ranked} AS r GROUP BY {keys}")
        kept, row_kept = cells, ranked
        if m.group is not None:
            n_missing = int(e.scalar(f"SELECT COALESCE(SUM(_c), 0) FROM {cells} AS r WHERE {self._missing(m.group)}"))
            if n_missing and n_missing == int(e.scalar(f"SELECT COALESCE(SUM(_c), 0) FROM {cells} AS r")):
                return None, [*problems, Problem(m.group, NO_GROUP.format(column=m.group))]
            if n_missing:
                kept = f"(SELECT * FROM {cells} AS r WHERE NOT {self._missing(m.group)})"
                row_kept = f"(SELECT * FROM {ranked} AS r WHERE NOT {self._missing(m.group)})"
                problems.append(Problem(m.group, f"{n_missing} row(s) have no value in {m.group!r} and were left out "
                                                 "of the analysis (as R does); fill those labels if they belong to a "
                                                 "group.", "warning"))

        def row_of(condition: str) -> int:
            """1-based row of the first kept row meeting ``condition`` in file order, +1 for the header (as pandas)."""
            first = e.scalar(f"SELECT MIN(_row) FROM {row_kept} AS k WHERE {condition}")
            return int(e.scalar(f"SELECT COUNT(*) FROM {row_kept} AS k WHERE _row < {int(first)}")) + 2

        t, tc = self.time_expr(), q(m.time)
        d = self.event_expr()
        text_time = self.kinds.get(m.time) == "text"
        agg = e.rows(
            f"SELECT SUM(_c), "
            f"SUM(CASE WHEN {tc} IS NOT NULL AND {t} IS NULL THEN _c ELSE 0 END), "
            f"SUM(CASE WHEN {self._missing(m.time)} THEN _c ELSE 0 END), "
            f"SUM(CASE WHEN ABS({t}) > {MAX_DOUBLE} THEN _c ELSE 0 END), "
            f"SUM(CASE WHEN {t} < 0 THEN _c ELSE 0 END), SUM(CASE WHEN {t} = 0 THEN _c ELSE 0 END), "
            f"MAX(CASE WHEN ISNAN({t}) THEN NULL ELSE {t} END), "
            f"SUM(CASE WHEN {self._missing(m.event)} THEN _c ELSE 0 END), "
            f"SUM(CASE WHEN NOT {self._missing(m.event)} AND ({d}) IS NULL THEN _c ELSE 0 END), "
            f"SUM(CASE WHEN ({d}) = 1 THEN _c ELSE 0 END) FROM {kept} AS k")[0]
        subjects = (e.scalar(f"SELECT COUNT(DISTINCT {q(m.id)}) FROM {row_kept} AS k") if m.id else agg[0])
        rows, bad_text, t_missing, t_inf, t_neg, t_zero, t_max, ev_missing, ev_bad, n_events = [
            0 if v is None else v for v in agg]
        subjects = subjects or 0
        if text_time and bad_text:
            first = e.scalar(f"SELECT MIN_BY({tc}, _row) FROM {row_kept} AS k WHERE {tc} IS NOT NULL AND {t} IS NULL")
            problems.append(Problem(m.time, f"Column {m.time!r} must hold numbers, but row "
                                            f"{row_of(f'{tc} IS NOT NULL AND {t} IS NULL')} has {str(first)!r}: fix or "
                                            "remove the non-numeric times."))
        elif t_missing:
            problems.append(Problem(m.time, f"Column {m.time!r} has {int(t_missing)} missing time(s) (first at row "
                                            f"{row_of(self._missing(m.time))}): fill them or drop those rows."))
        elif t_inf:
            problems.append(Problem(m.time, f"Column {m.time!r} has infinite times: replace them with the "
                                            "last follow-up time."))
        elif t_neg:
            example = float(e.scalar(f"SELECT MIN_BY({t}, _row) FROM {row_kept} AS k WHERE {t} < 0"))
            problems.append(Problem(m.time, f"Column {m.time!r} has {int(t_neg)} negative time(s) "
                                            f"(for example {example:g}): times are durations since the start "
                                            "of follow-up and must be positive."))
        elif t_zero:
            problems.append(Problem(m.time, f"Column {m.time!r} has {int(t_zero)} time(s) equal to 0: "
                                            "they are kept (at risk from time 0); add a small offset or drop them "
                                            "if that is not intended.", "warning"))

        event_ok = True
        if ev_missing:
            event_ok = False
            problems.append(Problem(m.event, f"Column {m.event!r} has {int(ev_missing)} missing event value(s) (first at "
                                             f"row {row_of(self._missing(m.event))} of the file): fill them with 1 "
                                             "(event) or 0 (censored), or drop those rows."))
        elif ev_bad:
            event_ok = False
            problems.append(self._event_problem(kept, d))
        if event_ok and n_events == 0:
            problems.append(no_events_problem(m))

        labels: tuple[str, ...] = ()
        g = None
        if m.group is not None:
            integral = True
            if self.kinds.get(m.group) == "float":
                gc = q(m.group)
                integral = not e.scalar(f"SELECT COUNT(*) FROM {kept} AS k WHERE {gc} <> FLOOR({gc}) OR "
                                        f"ABS({gc}) >= 9007199254740992E0")
            g = self.group_expr(integral)
            found = e.rows(f"SELECT g, SUM(_c) FROM (SELECT {g} AS g, _c FROM {kept} AS k) AS x GROUP BY g LIMIT 10001")
            n_labels = len(found) if len(found) <= 10000 else int(
                e.scalar(f"SELECT COUNT(DISTINCT {g}) FROM {kept} AS k"))
            found.sort(key=lambda r: str(r[0]))
            if n_labels < 2 and found:
                problems.append(Problem(m.group, f"Column {m.group!r} has a single group ({found[0][0]!r}): "
                                                 "choose a column with two or more groups, or no group.", "warning"))
            small = [(lab, c) for lab, c in found if c < MIN_GROUP_SIZE]
            if small:
                desc = ", ".join(f"{lab!r} ({c} subject{'' if c == 1 else 's'})" for lab, c in small[:4])
                problems.append(Problem(m.group, f"Group(s) {desc} in {m.group!r} have fewer than {MIN_GROUP_SIZE} "
                                                 "subjects: private estimates for them will be mostly noise; merge small "
                                                 "groups or choose another column.", "warning"))
            problem = too_many_groups(m, n_labels)
            if problem is not None:
                problems.append(problem)
            labels = tuple(sorted((str(r[0]) for r in found), key=_natural_key))

        k_expr: str | None = None
        type_labels: tuple[str, ...] = ()
        if m.event_type is not None and event_ok:
            et = self._norm(m.event_type, lower=False)
            is_c = self._in(f"LOWER({et})", m.type_censor_codes)
            if m.event_type_names:  # declared: exactly these types, whatever the rows hold
                k_expr, type_labels, problem = self._declared_types(kept, et, is_c)
                if problem is not None:
                    problems.append(problem)
            else:  # read off the data (disclosed as event-types at release)
                codes = [str(r[0]) for r in e.rows(f"SELECT DISTINCT {et} FROM {kept} AS k WHERE NOT ({is_c}) "
                                                   "LIMIT 1001")]
                codes = sorted(codes, key=_natural_key)
                type_labels = tuple(codes)
                whens = " ".join(f"WHEN {et} = {e.string(code)} THEN {i + 1}" for i, code in enumerate(codes))
                k_expr = f"CASE WHEN {is_c} THEN 0 {whens} ELSE 0 END" if codes else "0"

        if any(p.severity == "error" for p in problems):
            return None, problems
        summary = Summary(m, kept, t, d, g, k_expr, rows=int(rows), rows_in_source=total, subjects=int(subjects),
                          events=int(n_events), max_time=float(t_max) if t_max is not None else math.nan,
                          groups=labels, event_type_labels=type_labels,
                          warnings=[p.message for p in problems])
        return summary, problems

    def _declared_types(self, kept: str, et: str, is_c: str) -> tuple[str, tuple[str, ...], Problem | None]:
        """The type expression and names of declared event types (``event_type_names``), as
        :func:`dpsurv_core.data.cohort._declared_types` finds them: a row (a missing value too) holding neither a
        declared code nor a censoring code is the same blocking problem, never a new type."""
        m, e = self.m, self.engine
        assert m.event_type is not None  # called for a declared event-type column only
        pairs = event_types.ordered(m.event_type_names)
        names = tuple(name for _, name in pairs)
        clash = event_types.censor_clash(pairs, m.type_censor_codes)
        if clash:
            return "0", names, Problem(m.event_type, f"The code(s) {', '.join(map(repr, clash))} of {m.event_type!r} "
                                                     "are declared both as an event type and as a censoring code: "
                                                     "keep each in one list.")
        observed = [str(r[0]) for r in e.rows(f"SELECT DISTINCT {et} FROM {kept} AS k WHERE NOT ({is_c}) "
                                              f"AND {et} IS NOT NULL LIMIT 1001")]
        alias = {code.lower(): i for i, (code, _) in enumerate(pairs)}
        alias.update({o.lower(): i for o, i in event_types.match(pairs, observed).items()})
        lowered = f"LOWER({et})"
        named = f"COALESCE({lowered} IN ({', '.join(e.string(a) for a in sorted(alias))}), FALSE)"
        unknown = f"NOT COALESCE({is_c}, FALSE) AND NOT {named}"
        rows = int(e.scalar(f"SELECT COALESCE(SUM(_c), 0) FROM {kept} AS k WHERE {unknown}"))
        if rows:
            counts = [(str(r[0]), int(r[1])) for r in e.rows(
                f"SELECT COALESCE({et}, {e.string('nan')}) AS v, SUM(_c) FROM {kept} AS k WHERE {unknown} "
                "GROUP BY v ORDER BY v LIMIT 1001")]
            return "0", names, Problem(m.event_type, event_types.undeclared_problem_text(
                m.event_type, sorted(counts, key=lambda kv: _natural_key(kv[0])), [c for c, _ in pairs],
                m.type_censor_codes))
        whens = " ".join(f"WHEN {lowered} = {e.string(a)} THEN {i + 1}" for a, i in sorted(alias.items()))
        return f"CASE WHEN {is_c} THEN 0 {whens} ELSE 0 END", names, None

    def _event_problem(self, kept: str, d: str) -> Problem:
        """The sentence for event values outside the coding (as data/cohort.py words it)."""
        m, e, c = self.m, self.engine, self.q(self.m.event)
        kind = self.kinds.get(m.event)
        if m.event_codes:
            s = self._norm(m.event, lower=False)
            counts = [(str(r[0]), int(r[1])) for r in e.rows(
                f"SELECT {s} AS v, SUM(_c) FROM {kept} AS k WHERE ({d}) IS NULL GROUP BY v ORDER BY v LIMIT 1001")]
            return Problem(m.event, event_types.unlisted_text(m.event, sorted(counts, key=lambda kv: _natural_key(kv[0])),
                                                              m.event_codes, m.censor_codes))
        if kind in ("int", "float"):
            bad = [r[0] for r in e.rows(f"SELECT DISTINCT {c} AS v FROM {kept} AS k WHERE ({d}) IS NULL AND "
                                        f"NOT {self._missing(m.event)} ORDER BY v LIMIT 6")]
            zeros = int(e.scalar(f"SELECT COUNT(*) FROM {kept} AS k WHERE {c} = 0"))
            hint = (" (R's 1 = censored, 2 = event coding: declare event code 2 and censoring code 1)"
                    if zeros == 0 and bad == [2] else "")
            return Problem(m.event, f"Column {m.event!r} has event value(s) {', '.join(map(str, bad[:5]))} besides 0 "
                                    f"and 1{hint}: recode it as 1 = event, 0 = censored, or declare which codes mean an "
                                    "event.")
        s = f"LOWER(TRIM(CAST({c} AS STRING)))"
        bad = [r[0] for r in e.rows(f"SELECT DISTINCT {s} AS v FROM {kept} AS k WHERE ({d}) IS NULL ORDER BY v LIMIT 5")]
        return Problem(m.event, f"Column {m.event!r} has event value(s) {', '.join(map(repr, bad))}: use 1/0, "
                                "true/false or yes/no, or declare which codes mean an event.")


# ---- statistics on a validated summary ----------------------------------------------------------------
def is_event(s: Summary, competing: bool) -> str:
    return f"(CASE WHEN ({s.event_type}) > 0 THEN 1 ELSE 0 END)" if competing else f"({s.event})"


def binned_counts(engine: Engine, s: Summary, grid: TimeGrid, groups: tuple[str, ...] | None,
                  competing: bool = False) -> BinnedCounts:
    """Exact counts per group, event type and public bin: what :func:`~dpsurv_core.curves.counts.count` returns."""
    if groups is not None and s.group is None:
        raise ParameterError("Group categories were given but the data has no group column: map one on the Data page or "
                             "pass --group.")
    if competing and s.event_type is None:
        raise ParameterError("Cumulative incidence needs an event-type column: map the competing-event type on the "
                             "Data page.")
    edges = grid.edges
    j_count = edges.size - 1
    labels = ("all",) if groups is None or s.group is None else tuple(groups)
    types = s.event_type_labels if competing else ("event",)
    k_count = len(types)
    ev = is_event(s, competing)
    g = "'all'" if labels == ("all",) else s.group
    # each label the data hold -> the declared category it names (the same text, else the same number: 1.0 names 1)
    index = {"all": 0} if labels == ("all",) else lookup(labels, s.groups)
    held = ", ".join(engine.string(x) for x in index)
    where = "" if labels == ("all",) else f" WHERE {g} IN ({held})" if held else " WHERE 1 = 0"
    k = s.event_type if competing else "1"
    below, at_or_below = engine.count_edges(s.time, edges, True), engine.count_edges(s.time, edges, False)
    sql = (f"SELECT g, e, k, b, SUM(_c) AS c FROM (SELECT {g} AS g, {ev} AS e, {k} AS k, _c, CASE WHEN {ev} = 1 THEN "
           f"GREATEST({below}, 1) ELSE GREATEST({at_or_below}, 1) END AS b FROM {s.kept} AS kept{where}) AS x "
           "GROUP BY g, e, k, b")
    n = np.zeros(len(labels), np.int64)
    events = np.zeros((len(labels), k_count, j_count), np.int64)
    censored = np.zeros((len(labels), j_count), np.int64)
    for grp, e, kk, b, c in engine.rows(sql):
        gi = index[str(grp)]
        n[gi] += c
        if b > j_count:
            continue
        if e == 1:
            events[gi, int(kk) - 1, b - 1] += c
        else:
            censored[gi, b - 1] += c
    return BinnedCounts(grid, labels, n, events, censored, tuple(types))


def rows_at_risk(engine: Engine, s: Summary, groups: tuple[str, ...] | None, times: np.ndarray) -> np.ndarray:
    """Kept rows with time >= t per group and time (G, T): R's n.risk at t, as
    :func:`dpsurv_core.curves.summary.at_risk_exact` counts it on rows. One ``GROUP BY`` of the cells by group and
    b = #{t_j <= time} (the engine's binary search over the sorted times); a row is at risk at t_j exactly when
    b > j, so the column j is the sum of the counts with b >= j + 1."""
    times = np.asarray(times, float)
    labels = ("all",) if groups is None or s.group is None or tuple(groups) == ("all",) else tuple(groups)
    out = np.zeros((len(labels), times.size))
    if times.size == 0:
        return out
    order = np.argsort(times, kind="stable")
    g = "'all'" if labels == ("all",) else s.group
    index = {"all": 0} if labels == ("all",) else lookup(labels, s.groups)
    held = ", ".join(engine.string(x) for x in index)
    where = "" if labels == ("all",) else f" WHERE {g} IN ({held})" if held else " WHERE 1 = 0"
    by_b = np.zeros((len(labels), times.size + 1))
    b_expr = engine.count_edges(s.time, times[order], False)
    for grp, b, c in engine.rows(f"SELECT g, b, SUM(_c) FROM (SELECT {g} AS g, {b_expr} AS b, _c FROM {s.kept} AS kept"
                                 f"{where}) AS x GROUP BY g, b"):
        by_b[index[str(grp)], int(b)] += c
    out[:, order] = np.cumsum(by_b[:, ::-1], axis=1)[:, ::-1][:, 1:]
    return out


def event_times(engine: Engine, s: Summary, competing: bool = False) -> np.ndarray:
    """The distinct event times (for the not-DP event-times grid), refused past the grid's bin limit."""
    rows = engine.rows(f"SELECT DISTINCT {s.time} AS t FROM {s.kept} AS kept WHERE {is_event(s, competing)} = 1 "
                       f"ORDER BY t LIMIT {MAX_BINS + 1}")
    if len(rows) > MAX_BINS:
        raise ParameterError(f"The data has more than {MAX_BINS:,} distinct event times, more than a grid may have: "
                             "declare a grid START:STOP:BINS.")
    return np.array([r[0] for r in rows], float)


def weibull_sums(engine: Engine, s: Summary, shape: float, horizon: float, omega: float) -> dict[str, float]:
    """The sums the Weibull likelihood needs at shape p on times normalised as clip(t / T, e^-omega, 1):
    sum d, sum d ln t, sum t^p, sum t^p ln t (paper 000's f(p) and g(p); TLL's delta and tau)."""
    u = f"LEAST(GREATEST({s.time} / {number(horizon)}, {number(math.exp(-omega))}), 1E0)"
    p = number(shape)
    d = f"(CASE WHEN {s.time} <= {number(horizon)} THEN {s.event} ELSE 0 END)"  # follow-up ends at the horizon
    row = engine.rows(f"SELECT SUM(_c * d), SUM(_c * d * LN(u)), SUM(_c * POWER(u, {p})), "
                      f"SUM(_c * POWER(u, {p}) * LN(u)), SUM(_c) FROM (SELECT {u} AS u, {d} AS d, _c "
                      f"FROM {s.kept} AS kept) AS x")[0]
    return {"events": float(row[0] or 0), "sum_d_log_t": float(row[1] or 0), "sum_t_p": float(row[2] or 0),
            "sum_t_p_log_t": float(row[3] or 0), "n": float(row[4] or 0)}


def largest_times(engine: Engine, s: Summary, k: int) -> np.ndarray:
    """The ``k`` largest times in decreasing order (ties repeated): with the sums of :func:`weibull_sums` they give
    LSP's partial sums over the n - k smallest times, sum_{i <= n-k} t*_i^p = sum t^p - sum of the k largest."""
    rows = engine.rows(f"SELECT t, c FROM (SELECT {s.time} AS t, SUM(_c) AS c FROM {s.kept} AS kept GROUP BY {s.time}) "
                       f"AS x ORDER BY t DESC LIMIT {int(k)}")
    out = np.repeat(np.array([r[0] for r in rows], float), np.array([int(r[1]) for r in rows], np.int64))
    return out[:int(k)]


def time_table(engine: Engine, s: Summary, cap: float, limit: int, chunk_rows: int = 1_000_000
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | int:
    """The distinct times capped at ``cap`` (LEAST(t, cap): every time beyond the Weibull horizon normalises to 1
    anyway, and its event is censored there: follow-up ends at the horizon) with their numbers of rows and of events,
    ascending: all that the Weibull MLE, LSP, TLL and the
    Laplace baseline read. Returns the number of distinct values instead when it is above ``limit`` (the caller
    refuses); the table itself is streamed in chunks of ``chunk_rows``."""
    u = f"LEAST({s.time}, {number(cap)})"
    d = f"(CASE WHEN {s.time} <= {number(cap)} THEN {s.event} ELSE 0 END)"  # an event after the horizon: censored there
    table = f"(SELECT {u} AS u, CAST(SUM(_c) AS BIGINT) AS c, CAST(SUM(_c * {d}) AS BIGINT) AS e FROM {s.kept} AS kept GROUP BY {u}) AS x"
    distinct = int(engine.scalar(f"SELECT COUNT(*) FROM {table}"))
    if distinct > limit:
        return distinct
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for b in engine.batches(f"SELECT u, c, e FROM {table} ORDER BY u", chunk_rows):
        parts.append((b["u"].to_numpy(float), b["c"].to_numpy(np.int64), b["e"].to_numpy(np.int64)))
    if not parts:
        return np.array([]), np.array([], np.int64), np.array([], np.int64)
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]
