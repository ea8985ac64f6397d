"""Command-line flags of the curve mechanisms' options, made from their one specification
(:data:`dpsurv_core.privacy.options.OPTIONS`), as the pages make their widgets from it.

Each option applies to the mechanisms whose catalogue entry lists it (the catalogue passes a mechanism the options it
declares); unset, the entry's default holds.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.options import OPTIONS as SPECS
from dpsurv_core.privacy.options import Option, defaults, takers

OPTIONS = tuple(SPECS)  # every option name a curve command takes from the specification


def _argparse_type(spec: Option) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            return spec.parse(text)
        except ParameterError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """One flag per specified option, in a group per family of mechanisms, its help naming who takes it and the
    catalogue's default."""
    groups: dict[str, Any] = {}
    for spec in SPECS.values():
        who = takers(spec.name, catalogue.CURVES)
        if not who:
            continue
        group = groups.get(spec.group) or groups.setdefault(spec.group, p.add_argument_group(spec.group))
        default = defaults(spec.name, catalogue.CURVES)
        extra = {"choices": spec.choices} if spec.kind == "choice" else {"type": _argparse_type(spec)}
        group.add_argument(spec.flag, metavar=spec.metavar, default=None, **extra,
                           help=(f"{', '.join(who)}: {spec.help} ({spec.bounds_words() + '; ' if spec.kind != 'choice' else ''}"
                                 f"default {default})").replace("%", "%%"))
