"""Exports that cannot run code, and writes that cannot clobber.

CSV cells that a spreadsheet would read as a formula (text beginning with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return: OWASP's CSV-injection list) are prefixed with a single quote;
numbers stay numbers. Files are written through a temporary file in the same folder and renamed
into place (atomic); an existing file is refused unless ``force``, and a symbolic link or a folder is never
followed or replaced. A command that releases reserves its outputs first (:class:`Outputs`): each temporary file is
made before the charge, so an output that cannot be written is refused while nothing is recorded.
"""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from dpsurv_core.errors import ParameterError

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """A text cell that would start a formula gets a leading single quote; anything else is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def _safe_frame(frame: pd.DataFrame) -> pd.DataFrame:
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
    _safe_frame(frame).to_csv(buf, index=False, lineterminator="\r\n")
    return buf.getvalue()


class Reserved:
    """An output path checked and held before anything is released: a temporary file is already made (and kept open)
    in its folder, which proves the folder exists and can be written; :meth:`write` fills it and renames it into
    place, :meth:`discard` removes it. Refused at once: a symbolic link, a directory or other non-file, an existing
    file unless ``force``, a missing folder, a folder that cannot be written."""

    def __init__(self, path: str | Path, force: bool = False):
        self.path = Path(path)
        self.force = force
        self._fd: int | None = None
        self._check()
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if not folder.exists():
            raise ParameterError(f"The folder {str(folder)!r} does not exist: create it or choose another path.")
        if not folder.is_dir():
            raise ParameterError(f"{str(folder)!r} is not a folder: choose a path inside an existing folder.")
        try:
            self._fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=folder)
        except OSError as exc:
            raise ParameterError(f"The folder {str(folder)!r} cannot be written ({exc.strerror or exc}): choose a "
                                 "folder you may write to, or fix its permissions.") from None
        self.tmp = Path(tmp)
        self.written = False

    def _check(self) -> None:
        p = self.path
        if p.is_symlink():
            raise ParameterError(f"{str(p)!r} is a symbolic link: dpsurv does not write through links; choose a plain "
                                 "file path.")
        if p.exists() and not p.is_file():
            raise ParameterError(f"{str(p)!r} is a folder or another non-file, which dpsurv never replaces (not even "
                                 "with --force): choose a file path.")
        if p.exists() and not self.force:
            raise ParameterError(f"{str(p)!r} exists already: choose another name, or add --force to replace it.")

    def write(self, data: str | bytes) -> Path:
        """Fill the temporary file with ``data`` (text as UTF-8) and rename it into place, atomically."""
        if self.written or self._fd is None:
            raise ValueError(f"{str(self.path)!r} was already written or discarded.")
        fd, self._fd = self._fd, None
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data if isinstance(data, bytes) else data.encode("utf-8"))
                fh.flush()
                os.fsync(fh.fileno())
            if self.path.is_symlink():  # appeared since the check: still never replace a link
                raise ParameterError(f"{str(self.path)!r} became a symbolic link while writing: nothing was written.")
            if self.path.exists() and not self.path.is_file():
                raise ParameterError(f"{str(self.path)!r} became a folder while writing: nothing was written.")
            if not self.force and self.path.exists():
                raise ParameterError(f"{str(self.path)!r} appeared while writing: nothing was replaced; add --force to "
                                     "replace it.")
            os.replace(self.tmp, self.path)
        except BaseException:
            self.discard()
            raise
        self.written = True
        return self.path

    def discard(self) -> None:
        """Close and remove the temporary file (nothing to do once written)."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
        if not self.written and os.path.lexists(self.tmp):
            os.unlink(self.tmp)


class Outputs:
    """Several output paths reserved together (a context manager): all are checked and their temporary files made on
    entry, before anything is released or charged; on exit every one not written is discarded.

    >>> with Outputs(["r.html", "b.csv"], force=False) as outputs:  # doctest: +SKIP
    ...     release()  # only now, with every output known to be writable
    ...     outputs.write("r.html", html)
    """

    def __init__(self, paths: Sequence[str | Path], force: bool = False):
        self.paths = [Path(p) for p in paths]
        self.force = force
        self._held: dict[Path, Reserved] = {}

    def __enter__(self) -> Outputs:
        try:
            for p in self.paths:
                if p in self._held:
                    raise ParameterError(f"{str(p)!r} is named twice as an output: choose distinct paths.")
                self._held[p] = Reserved(p, self.force)
        except BaseException:
            self.discard()
            raise
        return self

    def write(self, path: str | Path, data: str | bytes) -> Path:
        """Write one reserved output (it must have been named on entry)."""
        return self._held[Path(path)].write(data)

    def discard(self) -> None:
        for r in self._held.values():
            r.discard()

    def __exit__(self, *exc: object) -> None:
        self.discard()


def write_new(path: str | Path, text: str | bytes, force: bool = False) -> Path:
    """Write ``text`` (UTF-8) or bytes (such as a PDF) to ``path`` atomically (:class:`Reserved`). Refuses a symbolic
    link, a directory, and an existing file unless ``force``."""
    return Reserved(path, force).write(text)
