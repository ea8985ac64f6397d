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
import warnings
from typing import Any

import numpy as np

from dpsurv_core.errors import DpsurvError
from dpsurv_core.extras import missing_sentence
from dpsurv_core.privacy.ledger import (
    NO_FORMAL,
    NO_NOISE,
    SUBJECT,
    PrivacyCost,
    not_dp_disclosure,
    outside_guarantee,
    voided,
)
from dpsurv_core.publication.record import jsonable

__all__ = ["COMMANDS", "UsageError", "build_parser", "main", "run_parsed"]

# name -> one-line help; a command's module is imported only when that command runs (start-up time
# matters: `km` on a large file must beat reading it with pandas and fitting lifelines)
COMMANDS = {
    "datasets": "list the bundled data sets",
    "km": "private survival curves (Kaplan-Meier, Nelson-Aalen, cumulative incidence)",
    "logrank": "private log-rank tests between groups",
    "weibull": "private Weibull shape and scale",
    "regression": "private discrete-time survival regression",
    "audit": "membership-inference audit: empirical epsilon of a mechanism",
    "report": "release and write a self-contained HTML report",
    "figure": "the publication figure of a stored curve release (SVG, PNG or PDF); no data read, nothing charged",
    "mechanisms": "the mechanism catalogue: id, name, analysis, source, what it protects, noise source",
    "budget": "a data set's privacy budget in the ledger database: set, raise, lower, show, verify",
    "plan": "the epsilon each release needs for the precision a study asks, from its declaration alone (reads no data)",
}
"""Each command of ``python -m dpsurv_core`` and its one-line help; its module is ``dpsurv_core.cli.<name>``."""

# a command that draws with an optional package (``pip install dpsurv`` installs the others' needs): checked before its
# module is imported, so that it exits 2 with one sentence naming the extra to install
COMMAND_NEEDS = {"report": "plotly", "figure": "plotly"}


def missing_extra(name: str | None) -> str | None:
    """None when command ``name`` can run here; otherwise the sentence naming the extra it needs."""
    module = COMMAND_NEEDS.get(name or "")
    return missing_sentence(f"The {name} command", module) if module else None


class UsageError(Exception):
    """A command line the parser refuses (an unknown option, a missing value, an extra not installed): :func:`main`
    prints it as one ``error: ...`` line and exits 2."""


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # noqa: D401 - argparse hook
        raise UsageError(message)


def build_parser(selected: str | None = None) -> Parser:
    """The parser of ``python -m dpsurv_core``; only ``selected`` gets its module imported and its options.

    Parameters
    ----------
    selected : str, optional
        The command whose options are wanted; None gives every command's.

    Returns
    -------
    Parser
        An :class:`argparse.ArgumentParser` that raises :class:`UsageError` instead of exiting.
    """
    parser = Parser(prog="python -m dpsurv_core", description="Differentially private survival analysis.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for name in COMMANDS:
        p = sub.add_parser(name, help=COMMANDS[name], description=COMMANDS[name])
        if (selected is None or name == selected) and missing_extra(name) is None:
            mod = importlib.import_module(f".{name}", __name__)
            mod.add_arguments(p)
            p.set_defaults(_run=mod.run)
        p.add_argument("--json", action="store_true", help="print JSON on stdout (the only output format)")
    return parser


def _clean(obj: Any) -> Any:
    """Strict JSON: numpy to Python, NaN and infinities to null (the record's normal form, other objects kept)."""
    return jsonable(obj, strict=False)


def not_dp_labels(result: dict[str, Any]) -> None:
    """A release that read a value off the data in a way epsilon does not cover (a disclosure marked not DP) carries
    no DP guarantee, whatever its mechanism: its labels say so, as the ledger does. Without noise, or for disclosure
    control, the labels already say that nothing is protected formally."""
    no_noise = result.get("noise") == "none" or str(result.get("privacy_note", "")).startswith(NO_NOISE)
    if no_noise and result.get("guarantee") != NO_FORMAL:
        # no noise at all (a non-private estimator, or epsilon = inf): that, not a disclosure, is why nothing is
        # protected, and no interval printed beside it carries noise
        cost = PrivacyCost(math.inf)
        result.update({"guarantee": cost.guarantee, "protects": cost.protects, "neighbouring": cost.neighbouring})
        for key in ("privacy", "cost"):
            if isinstance(result.get(key), str) or key == "privacy":
                result[key] = cost.sentence()
        result["interval_includes_noise"] = False
        return
    guarantee = str(result.get("guarantee", ""))
    if "guarantee" not in result or guarantee.startswith(NO_NOISE) or guarantee == NO_FORMAL:
        return
    not_dp = not_dp_disclosure(result.get("disclosures"), result.get("protects", SUBJECT))
    if not_dp is None:
        if isinstance(result.get("privacy"), str):
            # values read off the data and published as they are (the horizon, the categories) stay outside epsilon
            result["privacy"] += outside_guarantee(result.get("disclosures"))
        return
    labels = voided(not_dp)
    result["guarantee"] = labels["guarantee"]
    if isinstance(result.get("protects"), str):
        result["protects"] = labels["protects"]
    if result.get("private") is True:  # the mechanism is a private one, but this run of it is not
        result["private"] = False
    for key in ("privacy", "cost"):
        if isinstance(result.get(key), str):
            result[key] = labels["sentence"]


# exact values about the data: never part of a release, kept apart in its JSON under ``confidential``
CONFIDENTIAL_KEYS = ("n_subjects", "n", "rows", "rows_per_subject", "dropped_incomplete", "censoring_read",
                     "nonprivate", "p_value_nonprivate", "data_warnings")
CONFIDENTIAL_NOTE = ("exact values about the data, for the data holder's eyes only: not part of the release and not "
                     "covered by its guarantee; publish only the 'publishable' block")


ONE_BLOCK = {"simulation": "simulation: one block, seeded noise, nothing here is a release or publishable",
             "not private": "not private: one block, exact numbers for the data holder's eyes only, nothing here is "
                            "publishable"}


def split_publishable(result: dict[str, Any], data_warnings: list[str]) -> dict[str, Any]:
    """A release's JSON in two named blocks beside the data holder's full view: ``publishable`` (exactly what the
    ledger record holds) and ``confidential`` (exact counts, validation notes, non-private references), so that a
    user copying output knows which is which. The top-level disclosures are the recorded ones (accepted values read
    off the data are named there, never counted)."""
    confidential = dict(result.pop("confidential", None) or {})
    confidential.update({k: result.pop(k) for k in CONFIDENTIAL_KEYS if k in result})
    if data_warnings:
        confidential["data_warnings"] = list(data_warnings)
    result["disclosures"] = result["publishable"]["disclosures"]
    result["confidential"] = {**confidential, "note": CONFIDENTIAL_NOTE}
    return result


def run_parsed(args: argparse.Namespace) -> Any:
    """Run the command of parsed options ``args`` and return its result as ``main`` prints it (the publishable and
    confidential blocks of a release, the not-DP labels); errors are raised, not printed. The Python API
    (:mod:`dpsurv_core.api`) runs its commands through here too, so that both give the same numbers.

    Parameters
    ----------
    args : argparse.Namespace
        The options of one command, as :func:`build_parser` parses them.

    Returns
    -------
    object
        The command's result (a dict for every release), before it is written as JSON.
    """
    if getattr(args, "labels", None):  # a bad --labels file is a sentence before anything is released or charged
        from dpsurv_core.cli.km import value_labels

        args._value_labels = value_labels(args)
    result = args._run(args)
    data_warnings = getattr(args, "_data_warnings", None)
    if isinstance(result, dict) and isinstance(result.get("publishable"), dict):
        result = split_publishable(result, list(data_warnings or []))
    elif isinstance(result, dict) and result.get("release") is False:
        result["block"] = ONE_BLOCK["simulation" if result.get("simulation") else "not private"]
    if isinstance(result, dict) and "publishable" not in result and data_warnings:
        # the data's warnings first, then the analysis's own
        own = [w for w in result.get("warnings") or [] if w not in data_warnings]
        result["warnings"] = list(data_warnings) + own
    if isinstance(result, dict):
        not_dp_labels(result)
    repeat = getattr(args, "repeat", 1) or 1
    if (isinstance(result, dict) and repeat > 1 and result.get("simulation")
            and isinstance(result.get("epsilon_spent"), (int, float))):
        # R seeded simulations are not a release; if all R were published they would compose sequentially
        result["epsilon_per_release"] = result["epsilon_spent"]
        result["epsilon_if_all_published"] = repeat * result["epsilon_spent"]
    return result


def main(argv: list[str] | None = None) -> int:
    """``python -m dpsurv_core`` (the ``dpsurv`` command): run one command and print its result as JSON.

    Parameters
    ----------
    argv : list of str, optional
        The command line's words after the program name; default ``sys.argv[1:]``.

    Returns
    -------
    int
        The exit status: 0, 1 for a broken ledger (``budget verify``) or an internal error, 2 for any bad input
        (one ``error: ...`` line on stderr, never a traceback).
    """
    argv = sys.argv[1:] if argv is None else argv
    # numerical warnings are not messages for the user: every problem they could signal is checked and
    # reported as one sentence (and the JSON says what was clamped)
    warnings.simplefilter("ignore")
    np.seterr(all="ignore")
    try:
        selected = next((a for a in argv if not a.startswith("-")), None)
        if (missing := missing_extra(selected)) is not None:
            raise UsageError(missing)
        parser = build_parser(selected if selected in COMMANDS else None)
        args = parser.parse_args(argv)
        args._argv = list(argv)
        result = run_parsed(args)
        status = int(result.pop("_exit", 0)) if isinstance(result, dict) else 0  # budget verify: 1 when broken
        text = json.dumps(_clean(result), allow_nan=False) + "\n"
        try:
            if sys.stdout is None:
                raise OSError("standard output is closed")
            sys.stdout.write(text)
            sys.stdout.flush()
        except (OSError, ValueError) as exc:  # a full disk, a closed pipe: the result is not where the user looks
            _say(f"error: {not_printed(result, args, exc)}")
            return status or OUTPUT_FAILED
        return status
    except UsageError as exc:
        _say(f"error: {exc}")
        return 2
    except DpsurvError as exc:
        _say(f"error: {exc}")
        return 2
    except OSError as exc:  # a file that cannot be read or written
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        _say(f"error: cannot use{where}: {exc.strerror or exc}; check the path and its permissions.")
        return 2
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except Exception as exc:  # a bug, not bad input: still one line unless debugging
        if os.environ.get("DPSURV_DEBUG"):
            raise
        _say(f"internal error: {type(exc).__name__}: {exc} (set DPSURV_DEBUG=1 for the traceback)")
        return 1


OUTPUT_FAILED = 120  # the exit status of output that could not be written (the interpreter's own at exit)


def _say(line: str) -> None:
    """One line on standard error (nothing when the caller closed it: never on standard output instead)."""
    if sys.stderr is not None:
        print(line, file=sys.stderr)


def not_printed(result: Any, args: argparse.Namespace, exc: BaseException) -> str:
    """The sentence for a result that could not be printed; a release's says that it was recorded and charged and
    how to read it again without a second charge."""
    record_id = result.get("record_id") if isinstance(result, dict) and result.get("release") else None
    if record_id is None:
        reason = " ".join(str(getattr(exc, "strerror", None) or exc or type(exc).__name__).split()).rstrip(".")
        return f"the output could not be written ({reason})."
    from dpsurv_core.cli.delivery import not_delivered_sentence

    return not_delivered_sentence(record_id, getattr(args, "data", None), exc)
