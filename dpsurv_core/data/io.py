"""Read a cohort table from CSV, TSV, Parquet or Excel, given as bytes (an upload) or a path.

Uploads are read from memory and never written to disk. Every failure is a :class:`DataError`
with one sentence; an Excel workbook with several sheets raises :class:`SheetChoiceNeeded`.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from dpsurv_core import limits
from dpsurv_core.errors import DataError, SheetChoiceNeeded

if TYPE_CHECKING:
    import pandas as pd

FORMATS = {".csv": "csv", ".txt": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet", ".pq": "parquet",
           ".xlsx": "excel", ".xlsm": "excel", ".xls": "excel"}


def detect_format(filename: str) -> str:
    suffix = Path(filename).suffix.lower()
    if suffix not in FORMATS:
        raise DataError(f"{filename!r} is not a file type dpsurv reads: save it as CSV, TSV, Parquet or Excel (.xlsx).")
    return FORMATS[suffix]


def _check_header(names: list[str], filename: str) -> None:
    def numeric(s: str) -> bool:
        try:
            float(s)
            return True
        except ValueError:
            return False

    # a first row of numbers is data, whatever else is wrong with it (e.g. two equal values look like duplicates)
    if names and all(numeric(str(n)) for n in names):
        raise DataError(f"The first row of {filename!r} holds numbers, not column names: add a header row naming "
                        "the columns (for example time,status,group).")
    dup = [n for n, c in Counter(names).items() if c > 1]
    if dup:
        raise DataError(f"Column name {dup[0]!r} appears {Counter(names)[dup[0]]} times in {filename!r}: "
                        "give every column a different name.", column=dup[0])
    blank = [i for i, n in enumerate(names) if not str(n).strip() or str(n).startswith("Unnamed:")]
    if blank and len(blank) < len(names):
        raise DataError(f"Column {blank[0] + 1} of {filename!r} has no name: add a name to its header cell.")


_DECIMAL_COMMA = r"[+-]?\d+(,\d+)?"


def _decimal_commas(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """Text columns of numbers written with a decimal comma (European spreadsheets), as numbers."""
    import pandas as pd

    fixed = []
    for col in df.columns:
        s = df[col]
        if s.dtype != object:
            continue
        text = s.dropna().astype(str).str.strip()
        if len(text) and text.str.fullmatch(_DECIMAL_COMMA).all() and text.str.contains(",").any():
            df[col] = pd.to_numeric(s.astype(str).str.strip().str.replace(",", ".", regex=False).where(s.notna()))
            fixed.append(str(col))
    return df, fixed


def _head_text(raw: bytes, filename: str) -> tuple[str, str]:
    """The first 64 KB decoded (for the header and the delimiter) and the encoding to read the whole file with."""
    if b"\x00" in raw[:4096]:
        raise DataError(f"{filename!r} is not a text file (it holds binary bytes): export the table as CSV and upload that.")
    head = raw[:65536]
    try:
        return head.decode("utf-8-sig"), "utf-8-sig"
    except UnicodeDecodeError as exc:
        if exc.start >= len(head) - 3:  # a character cut at the end of the head
            return head[:exc.start].decode("utf-8-sig"), "utf-8-sig"
    return head.decode("cp1252", errors="replace"), "cp1252"


def _count_lines(raw: bytes) -> int:
    """Rows of a text table (lines after the header) as the parser splits them, at \\n, \\r\\n and a lone \\r (old Mac
    line ends, which may follow a header ended by \\n), counted in the bytes without a decoded copy. Quoted line ends
    and blank lines count too: never fewer rows than the parser reads."""
    lines = raw.count(b"\n") + raw.count(b"\r") - raw.count(b"\r\n")
    if raw and not raw.endswith((b"\n", b"\r")):
        lines += 1
    return max(lines - 1, 0)


def _count_file_lines(path: Path, block: int = 1 << 24) -> int:
    """:func:`_count_lines` of a file read in blocks (a \\r\\n split between two blocks counts once)."""
    lines, last, previous = 0, b"", b""
    with path.open("rb") as fh:
        while chunk := fh.read(block):
            lines += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
            if previous.endswith(b"\r") and chunk.startswith(b"\n"):
                lines -= 1
            previous = last = chunk
    if last and not last.endswith((b"\n", b"\r")):
        lines += 1
    return max(lines - 1, 0)


def check_parquet_schema(schema: Any, filename: str) -> None:
    """Refuse a Parquet file with nested columns (struct, list, map): a cohort table holds one value per cell, and
    nested cells would be read as Python objects, one per cell."""
    import pyarrow as pa

    nested = [f.name for f in schema if pa.types.is_nested(f.type)]
    if nested:
        names = ", ".join(repr(n) for n in nested[:3]) + (" ..." if len(nested) > 3 else "")
        raise DataError(f"{filename!r} has nested columns ({names}: struct, list or map values), which dpsurv does not "
                        "read: export a flat table with one value per cell (for example with those columns flattened "
                        "or left out).")


def _sheet_size(book: pd.ExcelFile, sheet: str) -> tuple[int, int] | None:
    """(rows, columns) of a sheet from its declared dimension (openpyxl: the sheet's <dimension> element; xlrd: the
    sheet's size), read before any cell is parsed; None when the workbook does not say."""
    try:
        ws = book.book[sheet]
        rows, columns = ws.max_row, ws.max_column
    except Exception:
        try:
            ws = book.book.sheet_by_name(sheet)
            rows, columns = ws.nrows, ws.ncols
        except Exception:
            return None
    return (int(rows), int(columns)) if rows and columns else None


def _read_path(path: Path, filename: str) -> bytes:
    """The bytes of a file read whole (formats and files the command line cannot stream column by column), refused
    past the upload cap before anything is read."""
    if not path.is_file():
        raise DataError(f"{str(path)!r} is not a regular file: give the path of a CSV, TSV, Parquet or Excel file.")
    size = path.stat().st_size
    if size > limits.max_upload_bytes():
        raise DataError(f"{filename!r} is {size / 2**20:,.0f} MB and would be read whole (it is Excel, not UTF-8 "
                        f"text, or its columns could not be streamed), more than the {limits.max_upload_mb():,} MB "
                        f"dpsurv reads that way ({limits.UPLOAD_MB_ENV}): save it as UTF-8 CSV or Parquet, which "
                        "dpsurv reads column by column.")
    return path.read_bytes()


def _not_utf8(filename: str) -> str:
    return (f"{filename!r} is not UTF-8; it was read as Windows-1252 (Latin-1): check accented column names "
            "and labels, or save the file as UTF-8.")


def _parse_text(raw: bytes, filename: str, fmt: str, sep: str, encoding: str) -> pd.DataFrame:
    """pandas' C parser straight from the bytes (it handles \\n, \\r\\n and \\r line ends itself)."""
    import pandas as pd

    try:
        return pd.read_csv(io.BytesIO(raw), sep=sep, skipinitialspace=True, encoding=encoding,
                           encoding_errors="replace" if encoding == "cp1252" else "strict")
    except pd.errors.EmptyDataError:
        raise DataError(f"{filename!r} has no columns: upload a file with a header row.") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"{filename!r} could not be read as {fmt.upper()} ({str(exc).splitlines()[0]}): "
                        "check that every row has the same number of fields.") from None


def read_table(source: bytes | str | Path, filename: str | None = None, sheet: str | None = None, *,
               limit_rows: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """Read a table; returns (frame, warnings). ``source`` is the file's bytes or a path.

    Uploads (bytes) past :func:`dpsurv_core.limits.max_upload_mb` and tables past
    :func:`dpsurv_core.limits.max_rows` rows, :func:`~dpsurv_core.limits.max_columns` columns or
    :func:`~dpsurv_core.limits.max_cells` cells are refused before the frame is built, the rows and columns read off
    the line ends and the header, Parquet's metadata or the sheet's dimension (``limit_rows=False``: the command
    line's fallback, bound by :func:`~dpsurv_core.limits.max_cli_cells` over every column). Text is parsed from the
    bytes: no decoded copy is held.

    Parameters
    ----------
    source : bytes, str or pathlib.Path
        The file's bytes (an upload) or its path.
    filename : str, optional
        The upload's name (its extension gives the format).
    sheet : str, optional
        The Excel sheet.
    limit_rows : bool, default True
        Refuse tables past the row, column and cell limits before building them.

    Returns
    -------
    tuple
        ``(frame, warnings)``.

    Raises
    ------
    dpsurv_core.errors.DataError
        For a file that cannot be read or is past a limit, with one sentence.
    """
    import pandas as pd

    if isinstance(source, (str, Path)):
        path = Path(source)
        filename = filename or path.name
        if not path.exists():
            raise DataError(f"There is no file at {str(path)!r}: check the path, or give a bundled data set name.")
        raw = _read_path(path, filename)
    else:
        filename = filename or "upload.csv"
        limits.check_upload(len(source), filename)
        raw = source if isinstance(source, bytes) else bytes(source)
    fmt = detect_format(filename)
    if not raw or raw.isspace():
        raise DataError(f"{filename!r} is empty: upload a file with a header row and one row per subject.")
    warnings: list[str] = []
    if fmt in ("csv", "tsv") and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 text (Excel's 'Unicode Text')
        try:
            raw = raw.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            raise DataError(f"{filename!r} starts as UTF-16 text but could not be read as such: save it as "
                            "'CSV UTF-8' and upload that.") from None
        warnings.append(f"{filename!r} is UTF-16 text (Excel's 'Unicode Text'); it was read as such.")
    if fmt in ("csv", "tsv"):
        head, encoding = _head_text(raw, filename)
        head = head.replace("\r\n", "\n").replace("\r", "\n")  # Windows and old Mac line ends (the head only)
        sep = "\t" if fmt == "tsv" else None
        if sep is None:
            try:
                sep = csv.Sniffer().sniff(head[:20000], delimiters=",;\t|").delimiter
            except csv.Error:
                sep = ","
        try:
            header = next(csv.reader(io.StringIO(head), delimiter=sep), [])
        except csv.Error:
            raise DataError(f"The header row of {filename!r} could not be read: save the table again as CSV "
                            "with one name per column.") from None
        limits.check_table(_count_lines(raw), len(header), filename, whole=limit_rows)  # before the parser runs
        _check_header([h.strip() for h in header], filename)
        df = None
        if encoding != "cp1252":
            try:
                df = _parse_text(raw, filename, fmt, sep, encoding)
            except UnicodeDecodeError:
                encoding = "cp1252"
        if df is None:
            warnings.append(_not_utf8(filename))
            df = _parse_text(raw, filename, fmt, sep, "cp1252")
        if sep != ",":
            df, fixed = _decimal_commas(df)
            if fixed:
                warnings.append(f"Column(s) {', '.join(map(repr, fixed))} of {filename!r} use a decimal comma "
                                "(1,5 for 1.5): they were read as numbers.")
    elif fmt == "parquet":
        try:
            import pyarrow.parquet as pq

            meta = pq.ParquetFile(io.BytesIO(raw))
            rows, schema = meta.metadata.num_rows, meta.schema_arrow
        except Exception:
            raise DataError(f"{filename!r} is not a readable Parquet file: export it again or upload a CSV.") from None
        check_parquet_schema(schema, filename)
        limits.check_table(rows, len(schema.names), filename, whole=limit_rows)  # from the metadata: nothing read
        try:
            df = pd.read_parquet(io.BytesIO(raw))
        except Exception:
            raise DataError(f"{filename!r} is not a readable Parquet file: export it again or upload a CSV.") from None
        _check_header([str(c) for c in df.columns], filename)
    else:
        limits.check_excel(raw, filename)
        try:
            book = pd.ExcelFile(io.BytesIO(raw))
        except Exception:
            raise DataError(f"{filename!r} is not a readable Excel workbook: save it as .xlsx or upload a CSV.") from None
        sheets = [str(s) for s in book.sheet_names]
        if sheet is None:
            if len(sheets) > 1:
                raise SheetChoiceNeeded(sheets)
            sheet = sheets[0]
        if sheet not in sheets:
            raise DataError(f"The workbook has no sheet {sheet!r}: choose one of {', '.join(sheets)}.")
        size = _sheet_size(book, sheet)  # before any read: pandas' reader clears the declared dimension
        header = pd.read_excel(book, sheet_name=sheet, header=None, nrows=1)
        if header.empty:
            raise DataError(f"Sheet {sheet!r} of {filename!r} is empty: choose the sheet that holds the cohort.")
        _check_header([str(v) for v in header.iloc[0].tolist()], filename)
        if size is not None:  # the sheet's declared size, before its cells are parsed
            limits.check_table(max(size[0] - 1, 0), max(size[1], header.shape[1]), filename, whole=limit_rows)
        df = pd.read_excel(book, sheet_name=sheet)
        limits.check_table(len(df), df.shape[1], filename, whole=limit_rows)  # a sheet that did not declare its size
    df.columns = [str(c).strip() for c in df.columns]
    if df.shape[0] == 0:
        raise DataError(f"{filename!r} has a header but no rows: add one row per subject.")
    return df, warnings


def read_columns(path: str | Path, columns: Sequence[str | None], sheet: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Read only ``columns`` of a file, in typed arrays (large CSV/TSV/Parquet files: far less memory and time).

    Falls back to :func:`read_table` for Excel, for text that is not UTF-8, and for files pyarrow cannot parse, so
    every problem still gets its sentence.

    Parameters
    ----------
    path : str or pathlib.Path
        The file.
    columns : sequence of str or None
        The columns wanted (None entries are skipped).
    sheet : str, optional
        The Excel sheet.

    Returns
    -------
    tuple
        ``(frame, warnings)``.
    """
    import pandas as pd

    path = Path(path)
    if not path.exists():
        raise DataError(f"There is no file at {str(path)!r}: check the path, or give a bundled data set name.")
    fmt = detect_format(path.name)
    wanted = list(dict.fromkeys(c for c in columns if c))
    if fmt == "excel" or path.stat().st_size == 0:
        df, warnings = read_table(path, sheet=sheet, limit_rows=False)
        return df, warnings
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.ParquetFile(path).schema_arrow
        except Exception:
            return read_table(path, limit_rows=False)
        check_parquet_schema(schema, path.name)
        names = schema.names
        _check_header([str(n) for n in names], path.name)
        missing = [c for c in wanted if c not in names]
        if missing:
            return pd.DataFrame(columns=names), []
        limits.check_cli_cells(pq.ParquetFile(path).metadata.num_rows, len(wanted), path.name)
        return pq.read_table(path, columns=wanted).to_pandas(), []
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with path.open("rb") as fh:
        head = fh.read(65536)
    if b"\x00" in head[:4096]:  # binary bytes: read_table says so in one sentence
        return read_table(path, limit_rows=False)
    try:
        first = head.decode("utf-8-sig").splitlines()[0] if head.strip() else ""
    except (UnicodeDecodeError, IndexError):
        return read_table(path, limit_rows=False)
    if not first:
        return read_table(path, limit_rows=False)
    sep = "\t" if fmt == "tsv" else ("," if "," in first else (";" if ";" in first else ("\t" if "\t" in first else ",")))
    header = [h.strip() for h in next(csv.reader([first], delimiter=sep))]
    _check_header(header, path.name)
    present = [c for c in wanted if c in header]
    if len(present) < len(wanted):
        # a missing column: let validation name it against the full header
        return pd.DataFrame(columns=header), []
    parse = pacsv.ParseOptions(delimiter=sep)
    convert = pacsv.ConvertOptions(include_columns=present, strings_can_be_null=True)
    try:
        # stream in blocks, keeping only numpy columns: the peak stays near the size of the columns
        reader = pacsv.open_csv(path, read_options=pacsv.ReadOptions(block_size=1 << 24), parse_options=parse,
                                convert_options=convert)
        chunks: dict[str, list[np.ndarray]] = {c: [] for c in present}
        rows = 0
        for batch in reader:
            rows += batch.num_rows
            limits.check_cli_cells(rows, len(present), path.name)  # while streaming: nothing past the bound is held
            for c in present:
                chunks[c].append(batch.column(c).to_numpy(zero_copy_only=False))
        del reader
    except (pa.ArrowInvalid, UnicodeDecodeError):
        limits.check_cli_cells(_count_file_lines(path), len(present), path.name)  # before the whole file is parsed
        try:  # a column's type changed after the first block: parse the whole file at once
            table = pacsv.read_csv(path, parse_options=parse, convert_options=convert)
        except (pa.ArrowInvalid, UnicodeDecodeError):
            return read_table(path, limit_rows=False)
        limits.check_cli_cells(table.num_rows, len(present), path.name)
        return table.to_pandas(split_blocks=True, self_destruct=True), []
    arrays = {c: np.concatenate(v) if v else np.array([]) for c, v in chunks.items()}
    if not arrays or next(iter(arrays.values())).size == 0:
        raise DataError(f"{path.name!r} has a header but no rows: add one row per subject.")
    return pd.DataFrame(arrays, copy=False), []
