"""``plan``: the epsilon each release needs for the precision a study asks, from public knowledge only.

No data set is read and nothing is charged: the study is declared (``--n`` with ``--groups``, or ``--sizes``;
``--horizon``; ``--grid``; ``--censoring``; the expected survival by ``--median``, ``--weibull`` or ``--curve``), and
cohorts simulated from it are released with each mechanism's own code and seeded simulation noise
(:mod:`dpsurv_core.planning`). Targets (``--target``, repeatable): ``survival:T:H``, ``median:H``, ``rmst:T:H``,
``logrank-power:HR:P``, ``weibull-shape:H``, ``coefficient:H``.

JSON: with one mechanism ``{"epsilon": E, "achieved": {...}, "targets": [...], ...}`` (E the smallest epsilon meeting
every target; 10 with ``reachable`` false when some target cannot be met below it); with several, the same keys for
the plan's choice of one release per analysis and ``plans``, each mechanism's own plan keyed by its id.
``--out plan.json`` writes the plan file that ``budget set --plan`` reads; ``--document plan.md`` (or ``.html``,
``.pdf``) writes the document for an ethics application.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from dpsurv_core.errors import ParameterError

NAME = "plan"
HELP = "plan the epsilon each release needs for the precision the study asks (reads no data)"
TARGET_HELP = ("an accuracy target (repeatable): survival:T:H (95%% interval of S(T) within +-H in each group), "
               "median:H, rmst:T:H, logrank-power:HR:P, weibull-shape:H, coefficient:H")


def _positive(kind: type, what: str) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{what} must be positive, got {text!r}")
        return value

    return parse


def _share(text: str) -> float:
    try:
        value = float(text.rstrip("%")) / (100.0 if text.endswith("%") else 1.0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--censoring must be a share such as 0.2 or 20%, got {text!r}") from None
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = p.add_argument_group("study declaration (public knowledge only: no data are read)")
    d.add_argument("--n", type=_positive(int, "--n"), default=None, metavar="N", help="number of subjects in all")
    d.add_argument("--groups", type=_positive(int, "--groups"), default=None, metavar="G",
                   help="number of groups of equal size (default 1)")
    d.add_argument("--sizes", default=None, metavar="A,B", help="group sizes, instead of --n and --groups")
    d.add_argument("--horizon", type=_positive(float, "--horizon"), required=True, metavar="T",
                   help="end of follow-up, in the time unit")
    d.add_argument("--grid", default=None, metavar="START:STOP:BINS",
                   help="public time grid as km takes it (default 20 equal bins from 0 to the horizon)")
    d.add_argument("--censoring", type=_share, required=True, metavar="Q",
                   help="share of subjects censored by the horizon (drop-outs, uniform in time, and everyone still "
                        "event-free at the horizon), for example 0.2")
    law = d.add_mutually_exclusive_group(required=True)
    law.add_argument("--median", type=_positive(float, "--median"), metavar="M",
                     help="expected median survival (exponential survival)")
    law.add_argument("--weibull", metavar="SHAPE,SCALE", help="expected Weibull survival S(t) = exp(-(t/SCALE)^SHAPE)")
    law.add_argument("--curve", metavar="FILE.csv", help="a public curve: CSV rows time,survival")
    d.add_argument("--time-unit", default="days", help="the time unit of every time given (default days)")
    t = p.add_argument_group("targets and mechanisms")
    t.add_argument("--target", action="append", default=[], metavar="SPEC", help=TARGET_HELP)
    t.add_argument("--mechanism", dest="mechanisms", action="append", default=None, metavar="ID",
                   help="a mechanism to plan (repeatable; default every applicable one that protects the subject)")
    t.add_argument("--cap", type=_positive(float, "--cap"), default=None, metavar="E",
                   help="total epsilon the releases must share: the split maximises the worst margin")
    s = p.add_argument_group("simulation")
    s.add_argument("--cohorts", type=_positive(int, "--cohorts"), default=None, metavar="R",
                   help="simulated cohorts per epsilon for half-width targets (default 16; Weibull 8)")
    s.add_argument("--power-cohorts", type=_positive(int, "--power-cohorts"), default=None, metavar="R",
                   help="simulated cohorts per epsilon for power targets (default 240)")
    s.add_argument("--seed", type=int, default=1, help="seed of the simulated cohorts and their noise (default 1)")
    s.add_argument("--jobs", type=_positive(int, "--jobs"), default=2, metavar="J",
                   help="processes searching at once (curves and each log-rank scenario apart; default 2)")
    s.add_argument("--verify", action="store_true",
                   help="also release the simulated cohorts at each planned epsilon itself (no interpolation; slower)")
    o = p.add_argument_group("files")
    o.add_argument("--out", metavar="plan.json", default=None, help="write the plan file (budget set --plan reads it)")
    o.add_argument("--document", metavar="plan.md", default=None,
                   help="write the plan as a document for an ethics application: .md, .html or .pdf")


def _study_from_args(args: argparse.Namespace) -> Any:
    from dpsurv_core.planning.study import Study, Survival, parse_grid, sizes_of

    sizes = sizes_of(args.n, args.groups, args.sizes)
    if args.median is not None:
        law = Survival.exponential(args.median)
    elif args.weibull is not None:
        parts = args.weibull.split(",")
        try:
            shape, scale = (float(x) for x in parts)
        except ValueError:
            raise ParameterError(f"--weibull {args.weibull!r} is not SHAPE,SCALE, for example 1.2,900.") from None
        law = Survival.weibull(shape, scale)
    else:
        law = Survival.read_csv(args.curve)
    grid = parse_grid(args.grid) if args.grid else (0.0, float(args.horizon), 20)
    return Study(sizes, float(args.horizon), grid, float(args.censoring), law, args.time_unit or "days")


def _document_format(path: str) -> str:
    suffix = Path(path).suffix.lower().lstrip(".")
    fmt = {"md": "md", "markdown": "md", "html": "html", "htm": "html", "pdf": "pdf"}.get(suffix)
    if fmt is None:
        raise ParameterError(f"--document {path!r} must end in .md, .html or .pdf.")
    return fmt


def run(args: argparse.Namespace) -> dict[str, Any]:
    from dpsurv_core.planning import make_plan, parse_target
    from dpsurv_core.planning.document import document

    targets = [parse_target(s) for s in args.target]
    study = _study_from_args(args)
    fmt = _document_format(args.document) if args.document else None
    plan = make_plan(study, targets, args.mechanisms, cap=args.cap, cohorts=args.cohorts,
                     power_cohorts=args.power_cohorts, seed=args.seed, verify=args.verify,
                     jobs=args.jobs)
    files: dict[str, str] = {}
    if args.out:
        Path(args.out).write_text(json.dumps(_strict(plan), indent=1, allow_nan=False) + "\n", encoding="utf-8")
        files["plan"] = args.out
    if args.document:
        Path(args.document).write_bytes(document(_strict(plan), fmt or "md"))
        files["document"] = args.document
    if files:
        plan["files"] = files
    return plan


def _strict(obj: Any) -> Any:
    from dpsurv_core.publication.record import jsonable

    return jsonable(obj, strict=False)
