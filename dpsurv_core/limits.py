"""Resource limits checked before work starts: upload size, rows, columns and cells read into memory, person-period
rows, simulation cells, the memory a release would allocate.

Each limit is a documented default that an environment variable can override (a whole number; an unset, empty or
unreadable value means the default). The checks raise one sentence saying what to change, before anything large is
allocated.

=================================  ====================================  =========  ===========================================
Limit                              Environment variable                  Default    Why
=================================  ====================================  =========  ===========================================
Upload size                        ``DPSURV_MAX_UPLOAD_MB``              200 MB     The app holds an upload in memory and reads
                                                                                    it there; 200 MB of CSV keeps the read path
                                                                                    near 1 GB (``benchmarks/read_memory.py``).
                                                                                    Also ``server.maxUploadSize`` in
                                                                                    ``.streamlit/config.toml`` (first defence).
Rows read into memory              ``DPSURV_MAX_ROWS``                   5,000,000  A pandas frame of 5 million rows and a few
                                                                                    columns, plus the parser's buffers, stays
                                                                                    under 1.5 GB; larger files go through the
                                                                                    command line, which reads only the mapped
                                                                                    columns.
Person-period rows (n x T)         ``DPSURV_MAX_PERSON_PERIOD_ROWS``     10,000,000 The regression design is n x T rows of about
                                                                                    10 float64 features (~0.8 GB) plus labels
                                                                                    and indices; n x T is the bound used, since
                                                                                    every subject may be followed to the horizon.
Simulation cells                   ``DPSURV_MAX_SIMULATION_CELLS``       50,000,000 trials x bins x groups float64 values per
(trials x bins x groups)                                                            release array (~400 MB each); trade-off
                                                                                    cells, audit runs and CLI ``--repeat``.
Cells the command line reads       ``DPSURV_MAX_CLI_CELLS``              40,000,000 Rows x mapped columns streamed by the command
(rows x mapped columns)                                                             line (10^7 rows of time and event peaked at
                                                                                    about 1 GB through ``km``); beyond it the
                                                                                    rows would not fit in 1.5 GB.
Rows an engine source reads for a  ``DPSURV_MAX_CLI_CELLS``              the same   The same bound for DuckDB and Spark sources
mechanism that needs each subject                                                   (``check_engine_rows``); km and logrank with
                                                                                    counting mechanisms read no rows at all.
Excel workbook, unpacked            ``DPSURV_MAX_EXCEL_MB``               500 MB     The Excel reader holds every cell: the peak
                                                                                    is about 125 MB plus 1.75 times the
                                                                                    workbook's unpacked XML (a 22 MB .xlsx of
                                                                                    10^6 rows unpacks to 207 MB and peaked at
                                                                                    483 MB), so 500 MB stays near 1 GB; it also
                                                                                    stops zip bombs. Larger: save as CSV/Parquet.
Intervals T of the regression      (constant ``MAX_INTERVALS``)          200        Finer time steps add rows (and sensitivity:
                                                                                    c1 = m T R) without a better model.
Columns of an upload or a table    ``DPSURV_MAX_COLUMNS``                1,000      Checked from the header (CSV/TSV), the schema
read whole                                                                          (Parquet) or the sheet's dimension (Excel)
                                                                                    before the table is parsed.
Cells of an upload (rows x         ``DPSURV_MAX_CELLS``                  30,000,000 About 20 bytes a numeric cell and 50 a text
columns)                                                                            cell once read (pandas' parser peaks near
                                                                                    twice that): 5 million rows of 6 columns
                                                                                    stay near 1.5 GB. Rows come from the line
                                                                                    ends (\\r, \\r\\n and \\n, as the parser counts
                                                                                    them), Parquet's metadata or the sheet's
                                                                                    dimension, so a column bomb (an 8 MB
                                                                                    Parquet file of 5 million rows x 302
                                                                                    columns) is refused before reading.
Memory one release or preview      ``DPSURV_MAX_MEMORY_MB``              1,500 MB   Estimated before any work from the sizes of
allocates                                                                           its arrays (:mod:`dpsurv_core.curves.memory`:
                                                                                    time-indexed's band, bootstrap draws x
                                                                                    groups x bins, log-rank null draws, every
                                                                                    per-bin array of an event-time grid); 1.5 GB
                                                                                    leaves room for the process itself (about
                                                                                    150 MB, the app's 300 MB) within 2 GB.
=================================  ====================================  =========  ===========================================
"""

from __future__ import annotations

import os

from dpsurv_core.errors import DataError, ParameterError

UPLOAD_MB_ENV = "DPSURV_MAX_UPLOAD_MB"
ROWS_ENV = "DPSURV_MAX_ROWS"
CLI_CELLS_ENV = "DPSURV_MAX_CLI_CELLS"
DEFAULT_MAX_CLI_CELLS = 40_000_000
PERSON_PERIOD_ENV = "DPSURV_MAX_PERSON_PERIOD_ROWS"
SIMULATION_ENV = "DPSURV_MAX_SIMULATION_CELLS"
EXCEL_MB_ENV = "DPSURV_MAX_EXCEL_MB"
DEFAULT_MAX_EXCEL_MB = 500
COLUMNS_ENV = "DPSURV_MAX_COLUMNS"
DEFAULT_MAX_COLUMNS = 1_000
CELLS_ENV = "DPSURV_MAX_CELLS"
DEFAULT_MAX_CELLS = 30_000_000
MEMORY_MB_ENV = "DPSURV_MAX_MEMORY_MB"
DEFAULT_MAX_MEMORY_MB = 1_500

DEFAULT_MAX_UPLOAD_MB = 200
DEFAULT_MAX_ROWS = 5_000_000
DEFAULT_MAX_PERSON_PERIOD_ROWS = 10_000_000
DEFAULT_MAX_SIMULATION_CELLS = 50_000_000
MAX_INTERVALS = 200

LARGER_DATA = "the command line with --data PATH, which reads only the mapped columns"


def _env(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip().replace("_", "").replace(",", "")
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value >= 1 else default


def max_upload_mb() -> int:
    return _env(UPLOAD_MB_ENV, DEFAULT_MAX_UPLOAD_MB)


def max_upload_bytes() -> int:
    return max_upload_mb() * 1024 * 1024


def max_cli_cells() -> int:
    return _env(CLI_CELLS_ENV, DEFAULT_MAX_CLI_CELLS)


def check_cli_cells(rows: int, columns: int, filename: str) -> None:
    """Refuse, while streaming, a file whose mapped columns hold more values than the command line reads into memory."""
    if int(rows) * max(int(columns), 1) > max_cli_cells():
        raise DataError(f"{filename!r} has more than {int(rows):,} rows: its {columns} mapped column(s) are more than "
                        f"the {max_cli_cells():,} values dpsurv reads into memory. Analyse a subset of the rows (for "
                        "example one period of diagnosis) or fewer columns, or let DuckDB count inside the file "
                        "(--engine duckdb: km and logrank with counting mechanisms read no rows into memory).")


def check_engine_rows(rows: int, columns: int, name: str, what: str = "This analysis") -> None:
    """Refuse to read an engine source's rows into memory past the command line's bound (:func:`max_cli_cells`)."""
    limit = max_cli_cells() // max(int(columns), 1)
    if int(rows) > limit:
        raise DataError(f"{what} needs each subject's values in memory, and {name!r} has {int(rows):,} rows, more than "
                        f"the {limit:,} rows of {columns} column(s) dpsurv reads into memory ({CLI_CELLS_ENV}); "
                        "km and logrank with laplace-counts, adaptive-km or a disclosure-control method count inside "
                        "the engine at any size.")


def max_rows() -> int:
    return _env(ROWS_ENV, DEFAULT_MAX_ROWS)


def max_person_period_rows() -> int:
    return _env(PERSON_PERIOD_ENV, DEFAULT_MAX_PERSON_PERIOD_ROWS)


def max_simulation_cells() -> int:
    return _env(SIMULATION_ENV, DEFAULT_MAX_SIMULATION_CELLS)


def check_upload(size: int, filename: str) -> None:
    """Refuse an upload of more than :func:`max_upload_mb` megabytes."""
    if size > max_upload_bytes():
        raise DataError(f"{filename!r} is {size / 2**20:,.0f} MB, more than the {max_upload_mb():,} MB an upload may be: "
                        f"keep only the columns you need, or analyse the file with {LARGER_DATA}.")


def max_excel_mb() -> int:
    return _env(EXCEL_MB_ENV, DEFAULT_MAX_EXCEL_MB)


def check_excel(raw: bytes, filename: str) -> None:
    """Refuse a workbook whose unpacked XML would not fit the Excel reader's memory (read from the zip directory
    only: nothing is unpacked)."""
    import io
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as z:
            unpacked = sum(i.file_size for i in z.infolist())
    except (zipfile.BadZipFile, OSError):
        return  # not a zip (.xls, or not a workbook at all): the reader says what is wrong
    if unpacked > max_excel_mb() * 2**20:
        raise DataError(f"{filename!r} unpacks to {unpacked / 2**20:,.0f} MB, more than the {max_excel_mb():,} MB "
                        f"dpsurv reads from an Excel workbook ({EXCEL_MB_ENV}): save the sheet as CSV or Parquet, "
                        "which dpsurv reads with far less memory.")


def check_rows(rows: int, filename: str) -> None:
    """Refuse a table of more than :func:`max_rows` rows before it is read into memory."""
    if rows > max_rows():
        raise DataError(f"{filename!r} has about {rows:,} rows, more than the {max_rows():,} read into memory: "
                        f"analyse it with {LARGER_DATA}, or with --engine duckdb, which counts inside the file.")


def check_person_period(subjects: int, intervals: int) -> None:
    """Refuse a person-period expansion of ``subjects`` x ``intervals`` rows past the budget, before allocating."""
    rows = int(subjects) * int(intervals)
    if rows > max_person_period_rows():
        raise ParameterError(f"{subjects:,} subjects x {intervals:,} intervals is {rows:,} person-period rows, more than "
                             f"the {max_person_period_rows():,} allowed: use fewer intervals, a shorter horizon or fewer "
                             "subjects.")


def check_simulation(trials: int, bins: int, groups: int = 1, what: str = "trials") -> None:
    """Refuse a simulation of ``trials`` x ``bins`` x ``groups`` values past the budget, before running it."""
    groups = max(int(groups), 1)
    cells = int(trials) * int(bins) * groups
    if cells > max_simulation_cells():
        raise ParameterError(f"{int(trials):,} {what} x {int(bins):,} bins x {groups} group(s) is {cells:,} simulated "
                             f"values, too large for one run (at most {max_simulation_cells():,}): use fewer {what} "
                             "or fewer bins.")


def max_columns() -> int:
    return _env(COLUMNS_ENV, DEFAULT_MAX_COLUMNS)


def max_cells() -> int:
    return _env(CELLS_ENV, DEFAULT_MAX_CELLS)


def check_table(rows: int, columns: int, filename: str, whole: bool = True) -> None:
    """Refuse, before it is parsed, a table read whole into memory (an upload: ``whole``) of more than
    :func:`max_rows` rows, :func:`max_columns` columns or :func:`max_cells` cells; the command line's reading of a
    whole file (``whole`` False: a format it cannot read column by column) is bound by :func:`max_cli_cells`."""
    rows, columns = int(rows), max(int(columns), 1)
    if not whole:
        check_cli_cells(rows, columns, filename)
        return
    check_rows(rows, filename)
    if columns > max_columns():
        raise DataError(f"{filename!r} has {columns:,} columns, more than the {max_columns():,} dpsurv reads "
                        f"({COLUMNS_ENV}): keep only the columns the analysis needs (time, event, group, covariates), "
                        f"or analyse the file with {LARGER_DATA}.")
    if rows * columns > max_cells():
        raise DataError(f"{filename!r} has about {rows:,} rows x {columns:,} columns = {rows * columns:,} values, more "
                        f"than the {max_cells():,} read into memory ({CELLS_ENV}): keep only the columns the analysis "
                        f"needs, or analyse the file with {LARGER_DATA}.")


def max_memory_mb() -> int:
    return _env(MEMORY_MB_ENV, DEFAULT_MAX_MEMORY_MB)


def check_memory(nbytes: float, what: str, fix: str) -> None:
    """Refuse work whose arrays would take more than :func:`max_memory_mb` megabytes (``nbytes``, estimated before
    anything is allocated): ``what`` names the work, ``fix`` says what to change."""
    if nbytes > max_memory_mb() * 2**20:
        raise ParameterError(f"{what} would need about {nbytes / 2**20:,.0f} MB of memory, more than the "
                             f"{max_memory_mb():,} MB one computation may use ({MEMORY_MB_ENV}): {fix}.")
