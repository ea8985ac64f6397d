"""``mechanisms``: the mechanism catalogue as JSON, one object per mechanism."""

from __future__ import annotations

import argparse

from dpsurv_core.privacy import catalogue

NAME = "mechanisms"
HELP = "the mechanism catalogue"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", choices=catalogue.FAMILIES, help="only one family of mechanisms")


def run(args: argparse.Namespace) -> list[dict]:
    return [e.to_dict() for e in catalogue.entries(args.family)]
