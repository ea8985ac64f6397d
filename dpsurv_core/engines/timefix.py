"""R survival's ``timefix`` on a table kept in an engine: near-tied times merged by SQL, no row read.

The rule is :mod:`dpsurv_core.curves.timefix`'s (R's ``aeqSurv``): over the sorted distinct times ``y`` of the kept
rows (events and censorings, every group together), a gap ``dy = y_i - y_{i-1}`` is a tie when
``dy <= tol`` or ``dy / mean(|y|) <= tol``, ``tol = sqrt(.Machine$double.eps)``; each run of tied times becomes its
smallest member. In SQL (the same text for DuckDB and Spark):

- ``LAG`` over the distinct times gives ``dy``, ``AVG(ABS(y))`` the mean;
- a time starts a run unless its gap is a tie; ``SUM(start) OVER (ORDER BY y)`` numbers the runs;
- ``MIN(y) OVER (PARTITION BY run)`` is each time's merged value; the (usually few) times that move are kept in a small
  table, and the kept cells get a column ``_tf_time``: the merged time where the table has one, else the time.

The summary returned reads its time from that column; everything else (events, groups, event types) is unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from dpsurv_core.curves.timefix import TOLERANCE
from dpsurv_core.engines.base import Engine, number
from dpsurv_core.engines.statistics import Summary

MERGED = "_tf_time"  # the kept cells' merged time


def is_merged(s: Summary) -> bool:
    """Whether ``s`` already reads merged times."""
    return s.time == MERGED


def moves_sql(s: Summary, tolerance: float = TOLERANCE) -> str:
    """SQL of the times that R's rule moves (``_tf_from`` -> ``_tf_to``, the smallest time of its run)."""
    t, tol = s.time, number(tolerance)
    distinct = f"(SELECT DISTINCT {t} AS y FROM {s.kept} AS k)"
    gaps = f"(SELECT y, y - LAG(y) OVER (ORDER BY y) AS dy FROM {distinct} AS d)"
    mean = f"(SELECT AVG(ABS(y)) AS m FROM {distinct} AS d)"
    starts = (f"(SELECT y, CASE WHEN dy IS NOT NULL AND (dy <= {tol} OR dy / m <= {tol}) THEN 0 ELSE 1 END AS s "
              f"FROM {gaps} AS g CROSS JOIN {mean} AS a)")
    runs = (f"(SELECT y, SUM(s) OVER (ORDER BY y ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS run "
            f"FROM {starts} AS x)")
    return (f"SELECT _tf_from, _tf_to FROM (SELECT y AS _tf_from, MIN(y) OVER (PARTITION BY run) AS _tf_to "
            f"FROM {runs} AS r) AS z WHERE _tf_from <> _tf_to")


def merged(engine: Engine, s: Summary, tolerance: float = TOLERANCE) -> Summary:
    """``s`` reading near-tied times as one (R's aeqSurv, module docstring); ``s`` itself when no two distinct times
    are tied or it reads merged times already."""
    if is_merged(s):
        return s
    moves = engine.cache(moves_sql(s, tolerance))
    if int(engine.scalar(f"SELECT COUNT(*) FROM {moves}")) == 0:
        return s
    kept = engine.cache(f"SELECT k.*, COALESCE(f._tf_to, {s.time}) AS {MERGED} FROM {s.kept} AS k "
                        f"LEFT JOIN {moves} AS f ON {s.time} = f._tf_from")
    return replace(s, kept=kept, time=MERGED)
