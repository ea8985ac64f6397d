"""Running ``python -m dpsurv_core`` in-process from tests: one JSON result, or one error sentence with exit 2."""

from __future__ import annotations

import json

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
