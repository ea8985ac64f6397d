"""``python -m dpsurv_core <command> [options] --json``.

Each command lives in its own module in this package with ``NAME``, ``HELP``,
``add_arguments(parser)`` and ``run(args) -> object`` (printed as JSON). Any bad input exits
with status 2 and one line ``error: ...`` on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import sys
from typing import Any

import numpy as np

from ..errors import DpsurvError

COMMANDS = ["datasets", "km", "logrank", "weibull", "regression", "audit", "report"]


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: D401 - argparse hook
        raise UsageError(message)


def _load_commands() -> list:
    mods = []
    for name in COMMANDS:
        try:
            mods.append(importlib.import_module(f".{name}", __name__))
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return mods


def build_parser() -> Parser:
    parser = Parser(prog="python -m dpsurv_core", description="Differentially private survival analysis.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for mod in _load_commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.add_argument("--json", action="store_true", help="print JSON on stdout (the only output format)")
        p.set_defaults(_run=mod.run)
    return parser


def _clean(obj: Any) -> Any:
    """Strict JSON: numpy to Python, NaN and infinities to null."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _clean(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        result = args._run(args)
        sys.stdout.write(json.dumps(_clean(result), allow_nan=False) + "\n")
        return 0
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DpsurvError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("DPSURV_DEBUG"):
            raise
        print(f"internal error: {type(exc).__name__}: {exc} (set DPSURV_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1
