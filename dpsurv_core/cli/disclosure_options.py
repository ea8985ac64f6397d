"""Command-line options of the disclosure-control methods (``km``, ``logrank``, ``audit``, ``report``).

Each applies to its own method only (the catalogue passes a method the options it declares); unset, the
method's usual default holds: threshold 5, base 5, k = 5.
"""

from __future__ import annotations

import argparse

OPTIONS = ("threshold", "base", "k")


def _at_least_two(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 2:
        raise argparse.ArgumentTypeError(f"must be at least 2, got {text}")
    return v


def add_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("disclosure control (no formal guarantee)")
    g.add_argument("--threshold", type=_at_least_two, metavar="K",
                   help="suppress-small-cells: counts from 1 to K-1 are withheld and shown as <K (default 5)")
    g.add_argument("--base", type=_at_least_two, metavar="B",
                   help="round, random-round: round every count to a multiple of B (default 5)")
    g.add_argument("--k", type=_at_least_two, metavar="K",
                   help="smooth-steps: merge bins until each step holds at least K events (default 5)")
