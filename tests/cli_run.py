"""Running ``python -m dpsurv_core`` in-process from tests: one JSON result, or one error sentence with exit 2."""

from __future__ import annotations

import io
import json
import os
import subprocess
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from dpsurv_core.cli import main


def run(capsys, *argv: str) -> dict:
    """The command's JSON (it must exit 0)."""
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def fails(capsys, *argv: str) -> str:
    """The one ``error: ...`` line of a command that must exit 2 and print nothing on stdout."""
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "", (code, out)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def completed(*argv: str, cwd: Path | str | None = None) -> subprocess.CompletedProcess:
    """``python -m dpsurv_core *argv`` run in this process, from ``cwd`` if given: its exit status, stdout and
    stderr, as :func:`subprocess.run` would give them (a subprocess per call costs a second of start-up)."""
    out, err = io.StringIO(), io.StringIO()
    here = os.getcwd()
    if cwd is not None:
        os.chdir(cwd)
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(here)
    return subprocess.CompletedProcess(["dpsurv", *argv], code, out.getvalue(), err.getvalue())
