"""A data set's content fingerprint (version 2): the key its privacy budget is kept under.

The budget belongs to the data, not to a file name, a browser tab or a column layout. The fingerprint therefore does
not change when rows are shuffled, columns reordered or renamed, the file is stored as Parquet, CSV or a DuckDB table,
or the same numbers are stored as integers in one file and as floats or decimals in another; a changed value, a pair
of values swapped within a column, a dropped or a duplicated row changes it.

Construction (the same in NumPy here, in DuckDB SQL in :mod:`dpsurv_core.privacy.fingerprint_sql`, and for any other
engine by streaming its rows through this module):

1. **Cells as 64-bit words.** A number (integer, float, decimal, boolean) is read as float64: an integral value below
   2^53 in magnitude is ``value + 2^53``; any other value is its IEEE-754 bit pattern (infinities included); a
   missing value (null, NaN) is one word. A text cell is the MD5 of its UTF-8 text, its two 64-bit halves
   (little-endian) one per lane. A text column whose every present value reads as a number (``pandas.to_numeric``,
   the CSV typing) is a number column. Each word is then mixed, ``c = m(word)``, so each cell has a value per lane:
   ``c1``, ``c2`` (equal for numbers).
2. **Mixing** ``m`` is MurmurHash3's 64-bit finaliser: what DuckDB's ``hash()`` of an unsigned 64-bit integer is,
   and its ``hash()`` of a DOUBLE is ``m`` of the IEEE bits (both checked at run time, else the SQL path is not
   used). Sums are modulo 2^64, so they are order-free and parallel.
3. **Column keys** (pass 1): per column and lane, the sum over rows of ``m(c ^ salt)``: the multiset of the column's
   cells. Columns are put in the order of their keys, so neither their order nor their names count.
4. **Row hashes** (pass 2): per lane, ``acc = start``, then for each column in key order ``acc = m(acc ^ c)``; columns
   with equal keys (the same values in another arrangement) form one group combined by an order-free sum of
   ``m(c ^ salt)``, and each such column gets a second key, the sum of ``m(m(row ^ salt) ^ c)``, which tells tied
   columns apart again. The fingerprint's state is the two lanes' sums of row hashes (128 bits), the row count and the
   column keys: a dropped or duplicated row changes the sums, a value swapped within a column changes two rows.
5. **Digest**: SHA-256 of the version, the shape, the sorted column keys, the row sums and the sorted second keys.

Not cryptographic (an adversary who wants two tables to share a budget merges their budgets, which only spends
faster); invariant by construction, so the same data never gets a fresh budget.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

VERSION = "dpsurv-fingerprint-v2"
U64 = np.uint64
MASK = (1 << 64) - 1
MURMUR = 0xD6E8FEB86659FD93
INT_OFFSET = 1 << 53  # integral values below 2^53: value + 2^53, in [0, 2^54)
MISSING = 0  # no number's word: 0 would be the integral -2^53 (not below 2^53) or +0.0's pattern (0.0 is integral)
SALT_COL = (0x243F6A8885A308D3, 0x13198A2E03707344)  # per lane: column keys
START = (0xA4093822299F31D0, 0x082EFA98EC4E6C89)  # per lane: a row hash's start
SALT_TIE = (0x452821E638D01377, 0xBE5466CF34E90C6C)  # per lane: cells of tied columns
SALT_PAIR = (0xC0AC29B7C97C50DD, 0x3F84D5B5B5470917)  # per lane: second keys of tied columns
# every text pandas.to_numeric reads as a number has this shape (a superset: C's strtod grammar without its hex and
# nan forms, or inf/infinity, between spaces; \s and [0-9] here admit at least the ASCII spaces and digits it reads)
NUMBER_SHAPE = re.compile(r"\s*[+-]?(?:[0-9]*\.?[0-9]*(?:[eE][+-]?[0-9]*)?|inf|infinity|nan)\s*", re.IGNORECASE)
INTEGER_TEXT = re.compile(r"[ \t\n\v\f\r]*[+-]?[0-9]{1,15}[ \t\n\v\f\r]*")  # exact as float64, read alike by int()


def murmur(x: np.ndarray | int) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, elementwise on uint64 (DuckDB's ``hash(UBIGINT)``)."""
    v: np.ndarray = np.array(x, dtype=U64, ndmin=1)
    with np.errstate(over="ignore"):
        v = v ^ (v >> U64(32))
        v = v * U64(MURMUR)
        v = v ^ (v >> U64(32))
        v = v * U64(MURMUR)
        return np.asarray(v ^ (v >> U64(32)), dtype=U64)


MISSING_WORD = int(murmur(np.array([MISSING], dtype=U64))[0])  # a missing cell's mixed word, in every lane


def number_words(values: np.ndarray) -> np.ndarray:
    """The mixed word ``c`` of each float64 value (steps 1 and 2 of the module docstring)."""
    x = np.asarray(values, dtype="float64")
    x = np.where(x == 0, 0.0, x)  # -0.0 is 0.0
    out = x.view(U64).copy()  # IEEE patterns, including the infinities
    with np.errstate(invalid="ignore"):
        integral = (np.abs(x) < INT_OFFSET) & (x == np.trunc(x))
    out[integral] = (x[integral].astype(np.int64) + INT_OFFSET).astype(U64)
    out[np.isnan(x)] = U64(MISSING)
    return murmur(out)


def text_words(texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """The two mixed words of each text: ``m`` of its MD5 halves, little-endian (DuckDB's ``md5_number_upper`` and
    ``md5_number_lower``)."""
    digests = [hashlib.md5(t.encode("utf-8", "surrogatepass")).digest() for t in texts]
    both = np.frombuffer(b"".join(digests), dtype="<u8").reshape(-1, 2) if digests else np.zeros((0, 2), "<u8")
    return murmur(both[:, 0].astype(U64)), murmur(both[:, 1].astype(U64))


def not_a_number(text: str) -> bool:
    """Whether ``pandas.to_numeric`` surely reads ``text`` as no number: it has not even the shape of one
    (:data:`NUMBER_SHAPE`). False for a text it may read otherwise (one with a NUL, where its C parser stops)."""
    return "\x00" not in text and NUMBER_SHAPE.fullmatch(text) is None


def numeric_text(values: pd.Series | np.ndarray) -> np.ndarray | None:
    """The texts as float64 when every present one reads as a number (the CSV typing), else None."""
    import pandas as pd

    conv = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce")
    present = pd.notna(pd.Series(values, dtype=object))
    return conv.to_numpy(dtype="float64") if bool((conv.notna() == present).all()) else None


def dictionary_words(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Words per lane for distinct texts (None or NaN for missing): as numbers when every one reads as a number
    (:func:`pandas_words`).

    Texts (``str`` or None) get the same words without importing pandas when one surely reads as no number
    (:func:`not_a_number`: a text column), when none is present, or when every present one is a plain integer of at
    most 15 digits between ASCII spaces (:data:`INTEGER_TEXT`: the number ``int`` reads, as pandas does), so a release's
    cold fingerprint needs no pandas."""
    if all(v is None or isinstance(v, str) for v in values):
        present = [v for v in values if v is not None]
        if present and all(INTEGER_TEXT.fullmatch(v) for v in present):
            w = number_words(np.array([np.nan if v is None else float(int(v)) for v in values], dtype="float64"))
            return w, w.copy()
        if not present or any(not_a_number(v) for v in present):
            w1 = np.full(len(values), MISSING_WORD, dtype=U64)
            w2 = w1.copy()
            if present:  # a text column: MD5 words (else every cell is missing, the word of a missing number)
                keep = np.array([v is not None for v in values], dtype=bool)
                w1[keep], w2[keep] = text_words(present)
            return w1, w2
    return pandas_words(values)


def pandas_words(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`dictionary_words` by its definition: the texts' numbers (:func:`numeric_text`) or else their MD5 words."""
    import pandas as pd

    texts = pd.Series(values, dtype=object)
    missing = texts.isna().to_numpy()
    numbers = numeric_text(texts)
    if numbers is not None:
        w = number_words(numbers)
        return w, w.copy()
    w1 = np.full(len(texts), MISSING_WORD, dtype=U64)
    w2 = w1.copy()
    if (~missing).any():
        a, b = text_words(str(v) for v in texts[~missing])
        w1[~missing], w2[~missing] = a, b
    return w1, w2


def _is_number(col: pd.Series) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col))


@dataclass
class Accumulator:
    """Order-free sums over row batches (NumPy): pass 1 column keys, pass 2 row hashes."""

    ncols: int
    rows: int = 0
    text: dict[int, dict] = field(default_factory=dict)  # text column -> {value: count}, then {value: (w1, w2)}
    col_sums: list[list[int]] = field(default_factory=list)
    row_sums: list[int] = field(default_factory=lambda: [0, 0])
    tied_sums: dict[int, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.col_sums = [[0, 0] for _ in range(self.ncols)]

    def first(self, batch: pd.DataFrame, weights: np.ndarray | None = None) -> None:
        """Pass 1: number columns' key sums; text columns' distinct values with their counts. ``weights``: each row
        stands for that many rows (a table of distinct rows with their counts)."""
        import pandas as pd

        w = np.ones(len(batch), dtype=U64) if weights is None else np.asarray(weights, dtype=U64)
        self.rows += int(w.sum())
        for j in range(self.ncols):
            col = batch.iloc[:, j]
            if _is_number(col) and j not in self.text:
                words = number_words(pd.to_numeric(col, errors="coerce").astype("float64").to_numpy())
                for k in range(2):
                    with np.errstate(over="ignore"):
                        self.col_sums[j][k] += int(np.sum(murmur(words ^ U64(SALT_COL[k])) * w, dtype=U64))
            else:
                counts = self.text.setdefault(j, {})
                values = col.astype(object).where(col.notna(), None)
                for v, n in pd.Series(w, index=values.to_numpy()).groupby(level=0, dropna=False).sum().items():
                    key = None if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
                    counts[key] = counts.get(key, 0) + int(n)

    def close_first(self) -> None:
        """Text columns' words per distinct value, and their key sums from the counts."""
        for j, counts in self.text.items():
            values = np.array(list(counts), dtype=object)
            n = np.array([counts[v] for v in values], dtype=U64)
            w1, w2 = dictionary_words(values)
            with np.errstate(over="ignore"):
                for k, w in enumerate((w1, w2)):
                    self.col_sums[j][k] += int(np.sum(murmur(w ^ U64(SALT_COL[k])) * n, dtype=U64))
            self.text[j] = {v: (int(a), int(b)) for v, a, b in zip(values, w1, w2, strict=True)}
        self.col_sums = [[s & MASK for s in pair] for pair in self.col_sums]

    def groups(self) -> list[list[int]]:
        """Columns in key order; columns with equal keys form one group."""
        out: list[list[int]] = []
        last = None
        for j in sorted(range(self.ncols), key=lambda j: tuple(self.col_sums[j])):
            key = tuple(self.col_sums[j])
            if key == last:
                out[-1].append(j)
            else:
                out.append([j])
                last = key
        return out

    def _words(self, batch: pd.DataFrame, j: int) -> tuple[np.ndarray, np.ndarray]:
        import pandas as pd

        col = batch.iloc[:, j]
        if j not in self.text:
            w = number_words(pd.to_numeric(col, errors="coerce").astype("float64").to_numpy())
            return w, w
        table = self.text[j]
        codes, uniques = pd.factorize(col.astype(object), use_na_sentinel=True)  # each distinct value looked up once
        missing = table.get(None, (MISSING_WORD, MISSING_WORD))
        pairs = np.array([table[str(u)] for u in uniques] + [missing], dtype=U64).reshape(-1, 2)
        return pairs[codes, 0], pairs[codes, 1]  # code -1 (missing) is the last row

    def second(self, batch: pd.DataFrame, groups: list[list[int]], weights: np.ndarray | None = None) -> None:
        """Pass 2: row hashes (columns in key order, tied columns by a sum) and tied columns' second keys."""
        self.add_rows({j: self._words(batch, j) for g in groups for j in g}, groups, len(batch), weights)

    def add_rows(self, words: dict[int, tuple[np.ndarray, np.ndarray]], groups: list[list[int]], n: int,
                 weights: np.ndarray | None = None) -> None:
        """Pass 2 on ``n`` rows given as each column's words per lane."""
        with np.errstate(over="ignore"):
            for k in range(2):
                acc = np.full(n, START[k], dtype=U64)
                for g in groups:
                    if len(g) == 1:
                        acc = murmur(acc ^ words[g[0]][k])
                    else:
                        tie = sum((murmur(words[j][k] ^ U64(SALT_TIE[k])) for j in g[1:]),
                                  murmur(words[g[0]][k] ^ U64(SALT_TIE[k])))
                        acc = murmur(acc ^ tie)
                w = U64(1) if weights is None else np.asarray(weights, dtype=U64)
                self.row_sums[k] += int(np.sum(acc * w, dtype=U64))
                salted = murmur(acc ^ U64(SALT_PAIR[k]))
                for g in groups:
                    for j in g if len(g) > 1 else ():
                        sums = self.tied_sums.setdefault(j, [0, 0])
                        sums[k] += int(np.sum(murmur(salted ^ words[j][k]) * w, dtype=U64))

    def digest(self) -> str:
        return digest(self.rows, self.col_sums, self.row_sums, self.tied_sums)


def digest(rows: int, col_sums: list[list[int]], row_sums: list[int], tied_sums: dict[int, list[int]]) -> str:
    """Step 5: SHA-256 of the version, the shape, the sorted column keys, the row sums and the sorted second keys."""
    def pack(pair: Iterable[int]) -> bytes:
        return b"".join((int(v) & MASK).to_bytes(8, "little") for v in pair)

    h = hashlib.sha256(f"{VERSION} rows={rows} cols={len(col_sums)}".encode())
    h.update(b"".join(sorted(pack(p) for p in col_sums)))
    h.update(pack(row_sums))
    if tied_sums:
        h.update(b"tied columns" + b"".join(sorted(pack(p) for p in tied_sums.values())))
    return h.hexdigest()


def fingerprint_batches(first_pass: Iterable[pd.DataFrame], second_pass: Iterable[pd.DataFrame]) -> str:
    """Fingerprint of a table given twice as an iterable of row batches (same columns, same order)."""
    acc: Accumulator | None = None
    for batch in first_pass:
        acc = acc or Accumulator(batch.shape[1])
        acc.first(batch)
    if acc is None:
        raise ValueError("a table with no batches has no fingerprint")
    acc.close_first()
    groups = acc.groups()
    for batch in second_pass:
        acc.second(batch, groups)
    return acc.digest()


def fingerprint_counted(frame: pd.DataFrame, counts: np.ndarray) -> str:
    """Fingerprint of the table in which each row of ``frame`` occurs ``counts`` times (its distinct rows)."""
    acc = Accumulator(frame.shape[1])
    acc.first(frame, counts)
    acc.close_first()
    acc.second(frame, acc.groups(), counts)
    return acc.digest()


def column_words(values: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Each cell's words per lane of a column given as float64 (a number column, NaN missing) or as objects (a text
    column, None missing; :func:`dictionary_words` on its distinct values): what :meth:`Accumulator.first` and
    :meth:`Accumulator.second` give it as a frame's column. None for texts with a NUL, which pandas' grouping there
    compares only up to the NUL (its value is the frame path's)."""
    if values.dtype.kind == "f":
        w = number_words(values)
        return w, w
    index: dict = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values), dtype=np.intp, count=len(values))
    if any(isinstance(v, str) and "\x00" in v for v in index):
        return None
    uniques = np.empty(len(index), dtype=object)
    uniques[:] = list(index)
    w1, w2 = dictionary_words(uniques)
    return w1[codes], w2[codes]


def fingerprint_columns(columns: list[np.ndarray], counts: np.ndarray) -> str:
    """:func:`fingerprint_counted` of a table of distinct rows given as columns (:func:`column_words`) instead of a
    frame: the same value, without pandas (but for texts with a NUL, which go through the frame)."""
    acc = Accumulator(len(columns))
    n = np.asarray(counts, dtype=U64)
    acc.rows = int(n.sum())
    words = {}
    for j, c in enumerate(columns):
        pair = column_words(c)
        if pair is None:
            import pandas as pd

            return fingerprint_counted(pd.DataFrame({f"v{i}": col for i, col in enumerate(columns)}), n)
        words[j] = pair
    with np.errstate(over="ignore"):
        for j, pair in words.items():
            acc.col_sums[j] = [int(np.sum(murmur(w ^ U64(SALT_COL[k])) * n, dtype=U64)) for k, w in enumerate(pair)]
    acc.add_rows(words, acc.groups(), len(n), n)
    return acc.digest()


def fingerprint(frame: pd.DataFrame) -> str:
    """Content fingerprint of a whole table in memory (hex SHA-256), vectorised in NumPy."""
    if len(frame) <= 1_000_000:
        return fingerprint_batches([frame], [frame])
    parts = lambda: (frame.iloc[i:i + 1_000_000] for i in range(0, len(frame), 1_000_000))  # noqa: E731
    return fingerprint_batches(parts(), parts())


def fingerprint_file(path: str | Path, sheet: str | None = None, refresh: bool = False, prefetched: bool = True) -> str:
    """Fingerprint of a table file: Parquet and CSV/TSV by DuckDB in two parallel scans, other formats as the data
    layer reads them (so a file and its upload agree). Kept in the per-file cache
    (:mod:`dpsurv_core.privacy.fingerprint_cache`); ``refresh`` forces a full pass. The value the command line started
    computing as it started (:mod:`dpsurv_core.privacy.fingerprint_prefetch`) is used when there is one.

    Parameters
    ----------
    path : str or pathlib.Path
        The table file.
    sheet : str, optional
        The Excel sheet.
    refresh : bool, default False
        Ignore the cache and read the file again.
    prefetched : bool, default True
        Use the value computed at the command line's start, when there is one.

    Returns
    -------
    str
        The content fingerprint (hex): the same rows give the same value in any order or format.
    """
    from dpsurv_core.privacy import fingerprint_cache, fingerprint_prefetch

    p = Path(path)
    if prefetched and not refresh and sheet is None and (value := fingerprint_prefetch.take(p)) is not None:
        return value

    def compute() -> str:
        from dpsurv_core.privacy import fingerprint_sql

        if p.suffix.lower() in (".parquet", ".pq", ".csv", ".tsv", ".txt", ".tab") and fingerprint_sql.available():
            return fingerprint_sql.fingerprint_path(p)
        from dpsurv_core.data.io import read_table

        return fingerprint(read_table(p, sheet=sheet, limit_rows=False)[0])

    return fingerprint_cache.cached(p, compute, refresh=refresh, detail=sheet or "")


def fingerprint_source(source, engine=None, refresh: bool = False) -> str:
    """Fingerprint of an engine source (:class:`dpsurv_core.engines.Source`), never holding its rows: a local file as
    :func:`fingerprint_file`, a DuckDB table in SQL, any other source (a cluster path through Spark) by streaming its
    rows through this module in batches; a frame directly.

    Parameters
    ----------
    source : dpsurv_core.engines.Source
        The data's source.
    engine : dpsurv_core.engines.Engine, optional
        The engine over it (needed for a source that is not a local file or a frame).
    refresh : bool, default False
        Ignore the cache and read the data again.

    Returns
    -------
    str
        The content fingerprint (hex).
    """
    if source.kind == "frame":
        return fingerprint(source.frame)
    if source.kind in ("parquet", "csv") and Path(source.location).is_file():
        return fingerprint_file(source.location, refresh=refresh)
    if source.kind == "duckdb":
        from dpsurv_core.privacy import fingerprint_cache, fingerprint_sql

        def table() -> str:
            con = engine.con if engine is not None and getattr(engine, "name", "") == "duckdb" else None
            return fingerprint_sql.fingerprint_table(source.location, source.table, con)

        return fingerprint_cache.cached(Path(source.location), table, refresh=refresh, detail=f"table:{source.table}")
    if engine is None:
        raise ValueError("an engine is needed to fingerprint a table that is not a local file")
    counted = _distinct_rows(engine)
    if counted is not None:
        return counted
    cols = ", ".join(engine.quote(c) for c in engine.columns())
    sql = f"SELECT {cols} FROM cohort"
    return fingerprint_batches(engine.batches(sql, 500_000), engine.batches(sql, 500_000))


ENGINE_DISTINCT_ROWS = 500_000  # distinct rows an engine (Spark) may send back for the one-scan path


def _distinct_rows(engine) -> str | None:
    """The one-scan path in the engine's own SQL (Spark on a cluster: the scan runs on the executors): every column
    as DOUBLE or text, grouped with its count; :func:`fingerprint_counted` on the result. None when the table has more
    than :data:`ENGINE_DISTINCT_ROWS` distinct rows (its rows are then streamed through :func:`fingerprint_batches`)."""
    import pandas as pd

    kinds = engine.columns()
    if not kinds:
        return None
    text = "STRING" if engine.name == "spark" else "VARCHAR"
    exprs = [f"CAST({engine.quote(c)} AS {'DOUBLE' if k in ('int', 'float', 'bool') else text})" for c, k in kinds.items()]
    limit = ENGINE_DISTINCT_ROWS
    rows = engine.rows(f"SELECT {', '.join(f'{e} AS v{j}' for j, e in enumerate(exprs))}, COUNT(*) AS n FROM cohort "
                       f"GROUP BY {', '.join(exprs)} LIMIT {limit + 1}")
    if len(rows) > limit:
        return None
    frame = pd.DataFrame.from_records(rows, columns=[*(f"v{j}" for j in range(len(exprs))), "n"])
    counts = frame.pop("n").to_numpy(dtype=np.uint64)
    for j, k in enumerate(kinds.values()):
        frame[f"v{j}"] = (pd.to_numeric(frame[f"v{j}"], errors="coerce").astype("float64")
                          if k in ("int", "float", "bool") else frame[f"v{j}"].astype(object))
    return fingerprint_counted(frame, counts)
