"""Exports that cannot run code, and writes that cannot clobber.

CSV cells that a spreadsheet would read as a formula (text beginning with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return: OWASP's CSV-injection list) are prefixed with a single quote;
numbers stay numbers. Files are written through a temporary file in the same folder and renamed
into place (atomic); an existing file is refused unless ``force``, and a symbolic link is never
followed or replaced.
"""

from __future__ import annotations

import io
import os
import tempfile
from pathlib import Path

import pandas as pd

from dpsurv_core.errors import ParameterError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """A text cell that would start a formula gets a leading single quote; anything else is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell (and column name) neutralised; numeric columns untouched."""
    out = frame.copy()
    for col in out.columns:
        if not (pd.api.types.is_numeric_dtype(out[col]) or pd.api.types.is_bool_dtype(out[col])):
            out[col] = out[col].map(neutralise)
    out.columns = [neutralise(str(c)) for c in out.columns]
    return out


def safe_csv(frame: pd.DataFrame) -> str:
    """CSV text of ``frame`` that a spreadsheet opens without evaluating any cell."""
    buf = io.StringIO()
    # RFC 4180 line ends: a cell holding a carriage return is then quoted instead of splitting the row
    safe_frame(frame).to_csv(buf, index=False, lineterminator="\r\n")
    return buf.getvalue()


def write_new(path: str | Path, text: str | bytes, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) or bytes (such as a PDF) to ``path`` atomically. Refuses a symbolic link, and an
    existing file unless ``force``."""
    p = Path(path)
    if p.is_symlink():
        raise ParameterError(f"{str(p)!r} is a symbolic link: dpsurv does not write through links; choose a plain "
                             "file path.")
    if p.exists() and not force:
        raise ParameterError(f"{str(p)!r} exists already: choose another name, or add --force to replace it.")
    if p.exists() and not p.is_file():
        raise ParameterError(f"{str(p)!r} is not a regular file: choose a file path.")
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ParameterError(f"The folder {str(folder)!r} does not exist: create it or choose another path.")
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text if isinstance(text, bytes) else text.encode("utf-8"))
            fh.flush()
            os.fsync(fh.fileno())
        if p.is_symlink():  # appeared since the check: still never replace a link
            raise ParameterError(f"{str(p)!r} became a symbolic link while writing: nothing was written.")
        if not force and p.exists():
            raise ParameterError(f"{str(p)!r} appeared while writing: nothing was replaced; add --force to replace it.")
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p
