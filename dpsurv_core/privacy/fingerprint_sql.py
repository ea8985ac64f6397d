"""The content fingerprint (:mod:`dpsurv_core.privacy.fingerprint`, version 2) computed by DuckDB, in parallel.

The same construction as the NumPy reference, as SQL over the file (``read_parquet``; ``read_csv`` with every column
as text, so a number reads as a number whatever the CSV sniffer would type it) or a DuckDB table:

- text columns first: ``SELECT v, count(*) GROUP BY v`` per text column. Up to :data:`DICTIONARY_LIMIT` distinct values
  come to Python, which gives each its words (a number when every value reads as one, else the MD5 halves) and the
  column's key sums from the counts; the words go back as a small table the second pass joins. A column with more
  distinct values (identifiers) is hashed in SQL (``md5_number_upper``/``_lower``, or ``TRY_CAST`` to DOUBLE when every
  value reads as a number), which is slower.
- pass 1, one aggregate query: the number columns' key sums (``sum(hash(xor(word, salt)))``: DuckDB's ``hash`` of an
  unsigned 64-bit integer is MurmurHash3's finaliser, checked by :func:`available`) and the row count;
- pass 2, one aggregate query: the two lanes' sums of row hashes, columns in key order, and tied columns' second keys.

Sums are HUGEINT (no overflow below 2^64 rows) reduced modulo 2^64 in Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.privacy import fingerprint as fp
from dpsurv_core.privacy.fingerprint_scan import (  # noqa: F401 (THREADS_ENV, interrupt_all: re-exported)
    _ACTIVE,
    COUNT_COLUMN,
    DISTINCT_ROW_CELLS,
    FEW_VALUES,
    NUMBER_TYPES,
    PROBE_ROWS,
    QUIET,
    THREADS_ENV,
    distinct_row_limit,
    interrupt_all,
    read_exprs,
)
from dpsurv_core.privacy.fingerprint_scan import connect as _connect

if TYPE_CHECKING:
    import pandas as pd

DICTIONARY_LIMIT = 1_000_000
CASE_LIMIT = 32  # text columns with at most this many labels map them by a CASE, larger ones by a join
SMALL_INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER", "BOOLEAN")
_CHECKED: dict[str, bool] = {}


def available() -> bool:
    """DuckDB is installed and its ``hash()`` of UBIGINT, and of a DOUBLE's bits, is the finaliser the NumPy reference
    uses."""
    if "ok" not in _CHECKED:
        try:
            import duckdb

            probe = [0, 1, 2**53 + 7, 2**64 - 1]
            doubles = [0.1, -2.5e-300, 5e-324, float("inf"), -1e300]
            con = duckdb.connect()
            got = []
            for sql, v in [*((f"SELECT hash({v}::UBIGINT)", None) for v in probe),
                           *(("SELECT hash(?::DOUBLE)", [v]) for v in doubles)]:
                row = con.execute(sql, v).fetchone()
                assert row is not None  # a SELECT of one value returns one row
                got.append(row[0])
            con.close()
            want = [*fp.murmur(np.array(probe, dtype=np.uint64)), *fp.murmur(np.array(doubles).view(np.uint64))]
            _CHECKED["ok"] = got == [int(v) for v in want]
        except Exception:  # noqa: BLE001 - no DuckDB, or another hash: the NumPy path is used
            _CHECKED["ok"] = False
    return _CHECKED["ok"]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _s(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def number_sql(x: str) -> str:
    """SQL for the mixed word of a DOUBLE expression ``x`` (:func:`dpsurv_core.privacy.fingerprint.number_words`):
    DuckDB's ``hash`` of a DOUBLE is the finaliser of its IEEE bits."""
    return (f"(CASE WHEN {x} IS NULL OR isnan({x}) THEN {fp.MISSING_WORD}::UBIGINT"
            f" WHEN abs({x}) < 9007199254740992 AND {x} = trunc({x})"
            f" THEN hash(CAST(CAST({x} AS BIGINT) + 9007199254740992 AS UBIGINT)) ELSE hash({x}) END)")


def _when_present(value: str, sql: str) -> str:
    """``sql`` where ``value`` is present, else a missing cell's word (DuckDB's ``hash(NULL)`` is not NULL)."""
    return f"(CASE WHEN {value} IS NULL THEN {fp.MISSING_WORD}::UBIGINT ELSE {sql} END)"


def _mod(v) -> int:
    return int(v or 0) & fp.MASK


def _unmasked(values) -> np.ndarray:
    """A fetched column with its NULLs (a masked array's masked cells) as NaN (numbers) or None (text)."""
    if not isinstance(values, np.ma.MaskedArray):
        return np.asarray(values)
    if values.dtype.kind == "f":
        return values.filled(np.nan)
    out = np.ma.getdata(values).copy()
    out[np.ma.getmaskarray(values)] = None
    return out


def _key_sums(sums: list[int], words: tuple[np.ndarray, np.ndarray], counts: np.ndarray) -> None:
    """A column's key sums from its distinct values' words and counts (sum of count * m(word ^ salt))."""
    with np.errstate(over="ignore"):
        for k, w in enumerate(words):
            sums[k] = int(np.sum(fp.murmur(w ^ np.uint64(fp.SALT_COL[k])) * counts, dtype=np.uint64))


class _Table:
    """One relation ``rel`` (a FROM clause) on a connection, fingerprinted by the module docstring's passes."""

    def __init__(self, con, rel: str) -> None:
        self.con, self.rel = con, rel
        described = con.execute(f"DESCRIBE SELECT * FROM {rel}").fetchall()
        self.names = [r[0] for r in described]
        self.types = [str(r[1]).upper() for r in described]

    def _is_number(self, j: int) -> bool:
        return self.types[j].startswith(NUMBER_TYPES)

    def run(self) -> str:
        n = len(self.names)
        col_sums = [[0, 0] for _ in range(n)]
        words: dict[int, tuple[str, str]] = {}  # column -> SQL of its two words
        joins: list[str] = []
        number_cols: list[int] = []  # columns whose key sums pass 1 computes
        exprs = [f"CAST({_q(c)} AS {'DOUBLE' if self._is_number(j) else 'VARCHAR'})" for j, c in enumerate(self.names)]
        probe = self.con.execute(f"SELECT approx_count_distinct(hash({', '.join(exprs)})), "
                                 f"{', '.join(f'approx_count_distinct({e})' for e in exprs)} FROM "
                                 f"(SELECT * FROM {self.rel} LIMIT {PROBE_ROWS})").fetchone() if n else (0,)
        if (probe[0] or 0) <= FEW_VALUES:
            done = self._distinct_rows(exprs)
            if done is not None:
                return done
        self.distinct = self._few_values(exprs, probe[1:])
        for j in range(n):
            col = f"src.{_q(self.names[j])}"
            if self._is_number(j):
                if self.types[j].startswith(SMALL_INTEGERS):  # never 2^53 in magnitude: no float path needed
                    w = _when_present(col, f"hash(CAST(CAST({col} AS BIGINT) + {fp.INT_OFFSET} AS UBIGINT))")
                else:
                    w = number_sql(f"CAST({col} AS DOUBLE)")
                words[j] = (w, w)
                if j in self.distinct:
                    values, counts = self.distinct[j]
                    wn = fp.number_words(values)
                    _key_sums(col_sums[j], (wn, wn), counts)
                else:
                    number_cols.append(j)
            else:
                words[j] = self._text(j, col, col_sums, joins, number_cols)
        inner = self._words_relation(words, joins)
        if number_cols:
            self._first(number_cols, inner, col_sums)
        col_sums = [[_mod(s) for s in pair] for pair in col_sums]
        acc = fp.Accumulator(n)
        acc.col_sums = col_sums
        groups = acc.groups()
        rows, row_sums, tied = self._second(groups, inner)
        return fp.digest(rows, col_sums, row_sums, tied)

    def _distinct_rows(self, exprs: list[str]) -> str | None:
        """The whole fingerprint from one scan when the table has few distinct rows: ``GROUP BY`` every column (as
        DOUBLE or text) with the count, then :func:`~dpsurv_core.privacy.fingerprint.fingerprint_counted` on that
        small table (the same sums: each distinct row weighted by its count). None when there are more than
        :func:`distinct_row_limit` distinct rows (the two passes then run)."""
        limit = distinct_row_limit(len(exprs))
        # grouped on the stored values (cheaper to hash than their DOUBLE or text), converted after: values that
        # convert alike stay separate rows, which the weighted sums add up the same
        raw = ", ".join(f"{_q(c)} AS r{j}" for j, c in enumerate(self.names))
        cols = ", ".join(e.replace(_q(c), f"r{j}", 1) + f" AS v{j}" for j, (e, c) in enumerate(zip(exprs, self.names,
                                                                                                  strict=True)))
        return self._counted(f"SELECT {cols}, _n FROM (SELECT {raw}, count(*) AS _n FROM {self.rel} GROUP BY ALL "
                             f"LIMIT {limit + 1})", limit)

    def from_distinct(self, table: str) -> str:
        """The fingerprint from a table of distinct rows with their counts (column ``COUNT_COLUMN``,
        :func:`~dpsurv_core.privacy.fingerprint_scan.materialise`): each distinct row weighted by its count
        (:func:`~dpsurv_core.privacy.fingerprint.fingerprint_counted`), the same sums as :meth:`_distinct_rows`."""
        cols = ", ".join(f"{e} AS v{j}" for j, e in enumerate(read_exprs(self.names, self.types)))
        done = self._counted(f"SELECT {cols}, {COUNT_COLUMN} AS _n FROM {table}")
        assert done is not None  # no limit
        return done

    def _counted(self, sql: str, limit: int | None = None) -> str | None:
        """:func:`~dpsurv_core.privacy.fingerprint.fingerprint_columns` of a query's distinct rows (columns ``v{j}``,
        DOUBLE or text) with their counts (``_n``), fetched as NumPy arrays (no pandas); None past ``limit`` rows."""
        got = self.con.execute(sql).fetchnumpy()
        counts = np.asarray(got.pop("_n"), dtype=np.uint64)
        if limit is not None and len(counts) > limit:
            return None
        return fp.fingerprint_columns([_unmasked(v) for v in got.values()], counts)

    def _few_values(self, exprs: list[str], probe) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Distinct values (float64 or objects, :func:`_unmasked`) with their counts of every column that looks like it
        has few (at most :data:`FEW_VALUES` in its first :data:`PROBE_ROWS` rows), from one scan with grouping sets:
        their key sums then need no hashing per row. Only the speed depends on the guess."""
        few = [j for j, d in enumerate(probe) if (d or 0) <= FEW_VALUES]
        if not few:
            return {}
        cols = ", ".join(f"{exprs[j]} AS v{j}" for j in few)
        sets = ", ".join(f"(v{j})" for j in few)
        grouping = ", ".join(f"v{j}" for j in few)
        got = self.con.execute(f"SELECT {cols}, GROUPING({grouping}) AS g, count(*) AS n FROM {self.rel} "
                               f"GROUP BY GROUPING SETS ({sets})").fetchnumpy()
        g, n = np.asarray(got["g"]), np.asarray(got["n"], dtype=np.uint64)
        full = (1 << len(few)) - 1
        out = {}
        for i, j in enumerate(few):
            part = g == full ^ (1 << (len(few) - 1 - i))
            out[j] = (_unmasked(got[f"v{j}"])[part], n[part])
        return out

    def _words_relation(self, words: dict[int, tuple[str, str]], joins: list[str]) -> str:
        """A subquery with each column's words computed once: ``w{j}_0``, ``w{j}_1`` (one column when equal)."""
        cols = []
        for j, (a, b) in words.items():
            cols.append(f"{a} AS w{j}_0")
            if b != a:
                cols.append(f"{b} AS w{j}_1")
        self.same = {j for j, (a, b) in words.items() if a == b}
        return f"(SELECT {', '.join(cols)} FROM {self.rel} AS src {' '.join(joins)})"

    def _w(self, j: int, k: int) -> str:
        return f"w{j}_0" if j in self.same else f"w{j}_{k}"

    def _text(self, j: int, col: str, col_sums: list[list[int]], joins: list[str], number_cols: list[int]
              ) -> tuple[str, str]:
        text = f"CAST({col} AS VARCHAR)"
        bare = f"CAST({_q(self.names[j])} AS VARCHAR)"
        if j in self.distinct:
            texts, counts = self.distinct[j]
        else:
            got = self.con.execute(f"SELECT {bare} AS v, count(*) AS n FROM {self.rel} GROUP BY ALL "
                                   f"LIMIT {DICTIONARY_LIMIT + 1}").fetchnumpy()
            texts, counts = _unmasked(got["v"]), np.asarray(got["n"], dtype=np.uint64)
        missing = f"{fp.MISSING_WORD}::UBIGINT"
        if len(texts) <= DICTIONARY_LIMIT:
            w1, w2 = fp.dictionary_words(texts)
            _key_sums(col_sums[j], (w1, w2), counts)
            present = np.array([v is not None for v in texts], dtype=bool)
            values = [str(v) for v in texts[present]]
            if not values:  # every value missing
                return missing, missing
            if len(values) <= CASE_LIMIT:  # a few labels: a CASE is cheaper than a join
                def case(w) -> str:
                    arms = " ".join(f"WHEN {_s(v)} THEN {int(x)}::UBIGINT" for v, x in zip(values, w[present], strict=True))
                    return f"(CASE {text} {arms} ELSE {missing} END)"

                return case(w1), case(w2)
            name = f"_fpdict{j}"
            labels = np.empty(len(values), dtype=object)
            labels[:] = values
            self.con.register(name, {"v": labels, "w1": w1[present], "w2": w2[present]})  # NumPy arrays: no pandas
            joins.append(f"LEFT JOIN {name} AS d{j} ON {text} = d{j}.v")
            return f"coalesce(d{j}.w1, {missing})", f"coalesce(d{j}.w2, {missing})"
        numeric = self.con.execute(f"SELECT count({bare}) = count(TRY_CAST({bare} AS DOUBLE)) FROM {self.rel}").fetchone()[0]
        number_cols.append(j)  # its key sums come from pass 1
        if numeric:
            w = number_sql(f"TRY_CAST({text} AS DOUBLE)")
            return w, w
        return (_when_present(text, f"hash(md5_number_upper({text}))"),
                _when_present(text, f"hash(md5_number_lower({text}))"))

    def _first(self, number_cols: list[int], inner: str, col_sums: list[list[int]]) -> None:
        sums = [f"sum(hash(xor({self._w(j, k)}, {fp.SALT_COL[k]}::UBIGINT)))" for j in number_cols for k in range(2)]
        out = self.con.execute(f"SELECT {', '.join(sums)} FROM {inner}").fetchone()
        for i, j in enumerate(number_cols):
            col_sums[j] = [int(out[2 * i] or 0), int(out[2 * i + 1] or 0)]

    def _second(self, groups: list[list[int]], inner: str) -> tuple[int, list[int], dict[int, list[int]]]:
        selects, aggregates = [], []
        tied = [j for g in groups if len(g) > 1 for j in g]
        for k in range(2):
            acc = f"{fp.START[k]}::UBIGINT"
            for g in groups:
                if len(g) == 1:
                    acc = f"hash(xor({acc}, {self._w(g[0], k)}))"
                else:
                    parts = " + ".join(f"hash(xor({self._w(j, k)}, {fp.SALT_TIE[k]}::UBIGINT))::HUGEINT" for j in g)
                    acc = f"hash(xor({acc}, CAST(({parts}) % 18446744073709551616 AS UBIGINT)))"
            selects.append(f"{acc} AS r{k}")
            aggregates.append(f"sum(r{k})")
            for j in tied:
                aggregates.append(f"sum(hash(xor(hash(xor(r{k}, {fp.SALT_PAIR[k]}::UBIGINT)), {self._w(j, k)})))")
        keep = sorted({self._w(j, k) for j in tied for k in range(2)})
        out = self.con.execute(f"SELECT count(*), {', '.join(aggregates)} FROM (SELECT "
                               f"{', '.join([*selects, *keep])} FROM {inner})").fetchone()
        rows, out = int(out[0]), out[1:]
        row_sums = [_mod(out[0]), _mod(out[1 + len(tied)])]
        tied_sums = {j: [_mod(out[1 + i]), _mod(out[2 + len(tied) + i])] for i, j in enumerate(tied)}
        return rows, row_sums, tied_sums


def fingerprint_path(path: str | Path) -> str:
    """Fingerprint of a Parquet or CSV/TSV file, computed by DuckDB on the file."""
    p = Path(path)
    con = _connect()
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            rel = f"read_parquet({_s(str(p))})"
        else:
            delim = ", delim = '\\t'" if p.suffix.lower() in (".tsv", ".tab") else ""
            rel = f"read_csv({_s(str(p))}, header = true, all_varchar = true{delim})"
        return _Table(con, rel).run()
    finally:
        _ACTIVE.discard(con)
        con.close()


def fingerprint_distinct(con, table: str) -> str:
    """The fingerprint of the data whose distinct rows with their counts ``table`` holds
    (:func:`~dpsurv_core.privacy.fingerprint_scan.materialise_path`):
    the same value as :func:`fingerprint_path` on the file."""
    return _Table(con, f"(SELECT * EXCLUDE ({COUNT_COLUMN}) FROM {table})").from_distinct(table)


def fingerprint_table(database: str | Path, table: str, con=None) -> str:
    """Fingerprint of a table in a DuckDB database file (on ``con`` when given, else a read-only connection)."""
    import duckdb

    own = con is None
    if con is None:
        con = duckdb.connect(str(database), read_only=True)
        con.execute(QUIET)
    try:
        return _Table(con, _q(table)).run()
    finally:
        if own:
            con.close()


def fingerprint_frame(frame: pd.DataFrame) -> str:
    """Fingerprint of a frame computed by DuckDB (for tests: it must equal the NumPy reference)."""
    con = _connect()
    try:
        con.register("_fpframe", frame.reset_index(drop=True))
        return _Table(con, "_fpframe").run()
    finally:
        _ACTIVE.discard(con)
        con.close()
