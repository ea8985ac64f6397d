"""The first content fingerprint (version 1), kept so that ledgers written before version 2 stay findable.

Version 2 (:mod:`dpsurv_core.privacy.fingerprint`) is computed by the engine; this one streams every cell through
Python and is computed only to link a data set to the records a ledger kept under version 1 (`budget verify
--refingerprint`). Original description:

The budget belongs to the data, not to a file name, a browser tab or a column layout. The
fingerprint therefore does not change when rows are shuffled, columns reordered or renamed, or
the same numbers are stored as integers in one file and as floats in another; any changed value
changes it.

Construction: every cell is hashed (numbers as float64, text as text, missing values as one
token); a column's key is the order-free multiset of its cell hashes; columns are put in the order
of their keys; each row's hash combines its cells in that order; the fingerprint is the multiset of
row hashes (sum of two independent 64-bit hashes, wrapped), together with the table's shape. Sums
are order-free, so both passes stream over row batches.

Columns with the same key (the same values in another arrangement, e.g. two 0/1 flags with as many
ones) have no order of their own: a row combines them by an order-free sum, and each such column
gets a second key, the multiset of (its cell, the row's hash) pairs, which tells them apart again
for the digest. Tables without such ties keep the plain construction.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

_MISSING = "\x00<missing>"
BATCH_CELLS = 4_000_000  # cells of one Parquet batch (rows x columns): the fingerprint's memory whatever the width
_KEYS = ("0123456789123456", "6543210987654321")  # two independent hash_array keys (16 characters each)


def _cell_hashes(col: pd.Series, key: str) -> np.ndarray:
    """uint64 hash per cell; numbers (and booleans) as float64 so 1 and 1.0 agree."""
    if pd.api.types.is_bool_dtype(col) or pd.api.types.is_numeric_dtype(col):
        values = pd.to_numeric(col, errors="coerce").astype("float64").to_numpy()
        values = np.where(values == 0, 0.0, values)  # -0.0 and 0.0 are the same value
        out = pd.util.hash_array(values, hash_key=key, categorize=False)
        return np.where(np.isnan(values), pd.util.hash_array(np.array([_MISSING], dtype=object), hash_key=key)[0], out)
    # hash each distinct value once (as text), then spread: the same per-cell hashes as hashing every cell's text
    codes, uniques = pd.factorize(col.to_numpy(dtype=object), use_na_sentinel=True)
    text = np.array([str(u) for u in uniques] + [_MISSING], dtype=object)
    return pd.util.hash_array(text, hash_key=key, categorize=False)[codes]


def _numeric_like(col: pd.Series) -> pd.Series:
    """Text columns whose every non-missing value is a number are read as numbers (CSV vs Excel typing)."""
    if pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        return col
    n = 1000  # the first 100 present values, without scanning a long column for missing ones
    while True:
        head = col.iloc[:n].dropna().head(100)
        if len(head) >= 100 or n >= len(col):
            break
        n *= 10
    if pd.to_numeric(head, errors="coerce").isna().any():
        return col
    conv = pd.to_numeric(col, errors="coerce")
    return conv if bool((conv.notna() == col.notna()).all()) else col


def _batches(frame: pd.DataFrame, rows: int = 1_000_000) -> Iterator[pd.DataFrame]:
    for start in range(0, max(len(frame), 1), rows):
        yield frame.iloc[start:start + rows]


class _Accumulator:
    """Order-free sums of hashes: pass 1 per column, pass 2 per row."""

    def __init__(self, ncols: int) -> None:
        self.ncols = ncols
        self.col_sums = np.zeros((ncols, 2), dtype=np.uint64)
        self.row_sum = np.zeros(2, dtype=np.uint64)
        self.tied_sums: np.ndarray | None = None  # second keys of columns whose keys are equal
        self.rows = 0

    def columns(self, batch: pd.DataFrame) -> list[list[np.ndarray]]:
        """Add a batch's cell hashes to the column sums; returns them (per column, per key) for reuse."""
        cells = []
        with np.errstate(over="ignore"):
            for j in range(self.ncols):
                col = _numeric_like(batch.iloc[:, j])
                hashes = [_cell_hashes(col, key) for key in _KEYS]
                for k in range(len(_KEYS)):
                    self.col_sums[j, k] += np.sum(hashes[k], dtype=np.uint64)
                cells.append(hashes)
        self.rows += len(batch)
        return cells

    def groups(self) -> list[list[int]]:
        """Columns in the order of their keys; columns with equal keys form one group (their order is arbitrary)."""
        out: list[list[int]] = []
        last = None
        for j in sorted(range(self.ncols), key=lambda j: tuple(int(v) for v in self.col_sums[j])):
            key = tuple(int(v) for v in self.col_sums[j])
            if key == last:
                out[-1].append(j)
            else:
                out.append([j])
                last = key
        return out

    def rows_pass(self, batch: pd.DataFrame | list[list[np.ndarray]], groups: list[list[int]]) -> None:
        """Add the batch's row hashes (groups of cells combined in key order, cells within a group by a sum)."""
        tied = [j for g in groups if len(g) > 1 for j in g]
        if tied and self.tied_sums is None:
            self.tied_sums = np.zeros((self.ncols, 2), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for k, key in enumerate(_KEYS):
                cells = {j: batch[j][k] if isinstance(batch, list) else _cell_hashes(_numeric_like(batch.iloc[:, j]), key)
                         for g in groups for j in g}
                acc = None
                for g in groups:
                    h = cells[g[0]]
                    for j in g[1:]:
                        h = h + cells[j]  # order-free within a group of tied columns
                    if acc is None:
                        acc = np.full(h.shape, np.uint64(0x9E3779B97F4A7C15), dtype=np.uint64)
                    acc = (acc * np.uint64(1099511628211)) ^ h  # order-dependent mix within a row
                    acc = pd.util.hash_array(acc, hash_key=key, categorize=False)
                if acc is None:
                    continue
                self.row_sum[k] += np.sum(acc, dtype=np.uint64)
                for j in tied:  # each tied column's (cell, row) pairs
                    assert self.tied_sums is not None  # made above when a column is tied
                    pair = pd.util.hash_array((acc * np.uint64(0x100000001B3)) ^ cells[j], hash_key=key, categorize=False)
                    self.tied_sums[j, k] += np.sum(pair, dtype=np.uint64)

    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(f"dpsurv-fingerprint-v1 rows={self.rows} cols={self.ncols}".encode())
        h.update(np.sort(self.col_sums.view([("a", np.uint64), ("b", np.uint64)]).ravel()).tobytes())
        h.update(self.row_sum.tobytes())
        if self.tied_sums is not None:
            h.update(b"tied columns")
            h.update(np.sort(self.tied_sums.view([("a", np.uint64), ("b", np.uint64)]).ravel()).tobytes())
        return h.hexdigest()


def fingerprint_batches(first_pass: Iterable[pd.DataFrame], second_pass: Iterable[pd.DataFrame]) -> str:
    """Fingerprint of a table given twice as an iterable of row batches (same columns, same order)."""
    acc: _Accumulator | None = None
    for batch in first_pass:
        acc = acc or _Accumulator(batch.shape[1])
        acc.columns(batch)
    if acc is None:
        raise ValueError("a table with no batches has no fingerprint")
    groups = acc.groups()
    for batch in second_pass:
        acc.rows_pass(batch, groups)
    return acc.digest()


def fingerprint(frame: pd.DataFrame) -> str:
    """Content fingerprint of a whole table (hex SHA-256)."""
    if len(frame) <= 1_000_000:  # one batch: hash every cell once
        acc = _Accumulator(frame.shape[1])
        cells = acc.columns(frame)
        acc.rows_pass(cells, acc.groups())
        return acc.digest()
    return fingerprint_batches(_batches(frame), _batches(frame))


def fingerprint_file(path: str | Path, sheet: str | None = None) -> str:
    """Fingerprint of a table file; Parquet streams in row batches, other formats are read as the data layer reads
    them (so a file and its upload agree)."""
    p = Path(path)
    suffix = p.suffix.lower()
    if suffix in (".parquet", ".pq"):
        import pyarrow.parquet as pq

        from dpsurv_core.data.io import check_parquet_schema

        schema = pq.ParquetFile(p).schema_arrow
        check_parquet_schema(schema, p.name)
        rows = max(1_000, min(500_000, BATCH_CELLS // max(len(schema.names), 1)))  # a wide file: shorter batches

        def parquet_batches() -> Iterator[pd.DataFrame]:
            for b in pq.ParquetFile(p).iter_batches(batch_size=rows):
                yield b.to_pandas()

        return fingerprint_batches(parquet_batches(), parquet_batches())
    from dpsurv_core.data.io import read_table

    if suffix in (".csv", ".tsv", ".txt", ".tab") and p.stat().st_size > 64 * 2**20:
        streamed = _csv_fingerprint(p, "\t" if suffix in (".tsv", ".tab") else None)
        if streamed is not None:
            return streamed
    return fingerprint(read_table(p, sheet=sheet, limit_rows=False)[0])


def _csv_fingerprint(path: Path, sep: str | None) -> str | None:
    """Large CSV/TSV files streamed in pyarrow blocks (all columns, one block in memory at a time); None when pyarrow
    cannot stream the file (then the data layer reads it)."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with path.open("rb") as fh:
        first = fh.readline().decode("utf-8-sig", errors="replace")
    if sep is None:
        sep = "," if "," in first else (";" if ";" in first else ("\t" if "\t" in first else ","))

    def blocks() -> Iterator[pd.DataFrame]:
        reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 24),
                                parse_options=pacsv.ParseOptions(delimiter=sep),
                                convert_options=pacsv.ConvertOptions(strings_can_be_null=True))
        for batch in reader:
            yield batch.to_pandas()

    try:
        return fingerprint_batches(blocks(), blocks())
    except (pa.ArrowInvalid, UnicodeDecodeError):
        return None


def fingerprint_source(source, engine=None) -> str:
    """Fingerprint of an engine source (:class:`dpsurv_core.engines.Source`), never holding its rows: a local file
    as :func:`fingerprint_file` streams it (so the file, its upload and every engine agree), a DuckDB table or a
    cluster path streamed through the engine in row batches, a frame directly."""
    if source.kind == "frame":
        return fingerprint(source.frame)
    if source.kind in ("parquet", "csv") and Path(source.location).is_file():
        return fingerprint_file(source.location)
    if engine is None:
        raise ValueError("an engine is needed to fingerprint a table that is not a local file")
    if source.kind == "duckdb":
        sql = f"SELECT * FROM {engine.quote(source.table)}"
    else:
        cols = ", ".join(engine.quote(c) for c in engine.columns())
        sql = f"SELECT {cols} FROM cohort"
    return fingerprint_batches(engine.batches(sql, 500_000), engine.batches(sql, 500_000))
