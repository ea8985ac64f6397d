"""Options shared by the analysis commands, and turning them into a cohort, grid and noise."""

from __future__ import annotations

import argparse
import math
import re
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from dpsurv_core import limits
from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import Cohort, ColumnMap, build_cohort, default_mapping
from dpsurv_core.data.io import read_columns
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.engines.source import ENGINE_MB_ENV, ENGINES, Source, check_exists, choose_engine, engine_mb
from dpsurv_core.engines.source import parse as parse_source
from dpsurv_core.errors import DataError, ParameterError
from dpsurv_core.privacy.ledger import LEDGER_ENV, LedgerStore, default_path
from dpsurv_core.privacy.noise import NoiseSource, ReleaseNoise, SimulationNoise
from dpsurv_core.privacy.release import Plan, Released, not_private_fields, simulation_fields
from dpsurv_core.privacy.release import release as run_release
from dpsurv_core.publication.declared import parse_accept

_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?inf(inity)?", re.IGNORECASE)
_WHOLE = re.compile(r"[+-]?\d+")


def decimal(text: str) -> float:
    """A number written in plain decimals (1, 0.5, .5, 2e-3; inf): Python's float() also reads ``1_0`` as 10 and
    allows surrounding blanks and "nan", which a typed number never means."""
    if not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    return float(text)


def whole(text: str) -> int:
    """A whole number written in plain digits (int() also reads ``1_0`` as 10)."""
    if not _WHOLE.fullmatch(text):
        raise ValueError(text)
    return int(text)


def number(cast: type, ok: Callable[[Any], bool], rule: str, what: str = "a number") -> Callable[[str], Any]:
    """An argparse type: ``cast`` the text (else "... is not <what>"), then require ``ok`` (else "<rule>, got ...").
    ``float`` and ``int`` read plain decimals and digits only (:func:`decimal`, :func:`whole`)."""
    read = {float: decimal, int: whole}.get(cast, cast)

    def parse(text: str) -> Any:
        try:
            v = read(text)
        except ValueError:
            hint = f" (write {text.replace('_', '')!r}, without the underscores)" if "_" in text else ""
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}{hint}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"{rule}, got {text}")
        return v

    return parse


positive_float = number(float, lambda v: v > 0, "must be a positive number")
positive_int = number(int, lambda v: v >= 1, "must be at least 1", "a whole number")
seed_value = number(int, lambda v: 0 <= v < 2**63, "a seed is a whole number from 0 to 2^63 - 1", "a whole number")
unit_float = number(float, lambda v: 0.0 <= v <= 1.0, "must be between 0 and 1")
non_negative = number(float, lambda v: 0 <= v < math.inf, "must be a finite number >= 0")
row_number = number(int, lambda v: v >= 0, "rows are numbered from 0", "a row number")


MAX_REPEAT = 100_000


def repeat_count(text: str) -> int:
    v = positive_int(text)
    if v > MAX_REPEAT:
        raise argparse.ArgumentTypeError(f"at most {MAX_REPEAT:,} repeats in one run, got {text}")
    return v


def epsilon_value(text: str) -> float:
    """A positive epsilon; ``inf`` switches the noise off (for checking exactness)."""
    if text.strip().lower() in ("inf", "infinity"):
        return math.inf
    return positive_float(text)


def add_data_options(p: argparse.ArgumentParser, group: bool = True, covariates: bool = False) -> None:
    g = p.add_argument_group("data")
    g.add_argument("--data", required=True, metavar="NAME_OR_PATH",
                   help=f"a bundled data set ({', '.join(datasets.names())}), a CSV/TSV/Parquet/Excel file, or a "
                        "table in a DuckDB database as duckdb:PATH.duckdb:TABLE")
    g.add_argument("--engine", choices=ENGINES, default=None,
                   help=f"where the statistics are computed: pandas (rows in memory), duckdb (counts inside the file "
                        f"or table) or spark (a Spark cluster); default duckdb for DuckDB tables and files above "
                        f"{engine_mb()} MB ({ENGINE_MB_ENV}), else pandas")
    g.add_argument("--spark-master", metavar="URL", default=None,
                   help="Spark master for --engine spark (default $SPARK_MASTER or local[*])")
    g.add_argument("--time", metavar="COL", help="time column (bundled data sets have a default)")
    g.add_argument("--event", metavar="COL", help="event column: 1 = event, 0 = censored (or --event-codes)")
    g.add_argument("--event-codes", metavar="A,B",
                   help="values of the event column that mean an event; with several codes and --estimand "
                        "cumulative-incidence each code is its own (declared) event type")
    g.add_argument("--censor-codes", metavar="A,B",
                   help="values of the event column that mean censored (for competing events default 0 and "
                        "'censored'); once declared, a value in neither list is refused, naming it and its rows")
    if group:
        g.add_argument("--group", metavar="COL", help="group column")
    g.add_argument("--id", metavar="COL", help="subject id column (several rows per subject)")
    g.add_argument("--max-rows-per-subject", type=positive_int, metavar="M",
                   help="keep at most M rows per subject; sensitivities are multiplied by M")
    g.add_argument("--sheet", metavar="NAME", help="Excel sheet holding the cohort")
    if covariates:
        g.add_argument("--covariates", metavar="A,B", help="comma-separated covariate columns")
    g.add_argument("--categories", action="append", default=[], metavar="COL:A,B",
                   help="declared categories of a column (the --group column, or a categorical covariate), from the "
                        "study design, matched by text or number (1.0 names the code 1): rows in other categories are "
                        "left out, and a category no row holds is noted in the confidential block only; without it "
                        "the categories are read off the data (a bundled data set's documented codes count as "
                        "declared)")


def add_event_type_options(p: argparse.ArgumentParser) -> None:
    """``--event-type COL``, ``--event-types A=NAME,B`` and ``--type-censor-codes``: a file's competing events, for a
    cumulative incidence (a bundled data set that documents its event types needs none of them)."""
    g = next((a for a in p._action_groups if a.title == "data"), None) or p.add_argument_group("data")
    g.add_argument("--event-type", metavar="COL",
                   help="competing-event type column, for --estimand cumulative-incidence: each row's kind of event "
                        "(pbc and transplant document theirs)")
    g.add_argument("--event-types", metavar="A=NAME,B",
                   help="declared event types of --event-type, from the study design: their codes, each with an "
                        "optional name (1=Relapse,2=Death); a row whose code is neither one of them nor a censoring "
                        "code is refused with one sentence, never made a new type. Without it the types are read off "
                        "the data (event-types: refused unless --accept-disclosure event-types); a bundled data set's "
                        "documented types count as declared")
    g.add_argument("--type-censor-codes", metavar="A,B",
                   help="values of --event-type that mean censored (default 0 and 'censored'), matched as the codes "
                        "are (case and a trailing .0 aside)")


def _event_type_overrides(args: argparse.Namespace, documented: tuple[str | None, dict] = (None, {})
                         ) -> dict[str, Any]:
    """The ColumnMap fields of ``--event-type``, ``--event-types`` and ``--type-censor-codes`` (for a competing-risks
    release): the declared types, else a bundled data set's ``documented`` ones (its type column and codes) when its
    own column is used, else none (read off the data)."""
    from dpsurv_core.data import event_types

    column = getattr(args, "event_type", None) or documented[0]
    if column is None:
        return {}
    out: dict[str, Any] = {"event_type": column}
    declared = event_types.parse(getattr(args, "event_types", None))
    if not declared and column == documented[0]:
        declared = tuple((str(k), str(v)) for k, v in documented[1].items())
    out["event_type_names"] = declared
    censor = split_list(getattr(args, "type_censor_codes", None))
    if censor:
        out["type_censor_codes"] = censor
    return out


def add_timefix_option(p: argparse.ArgumentParser) -> None:
    """``--no-timefix``: keep the exact times where the non-private curves and tests would merge near-tied ones as R
    survival's timefix does (:mod:`dpsurv_core.curves.timefix`)."""
    g = next((a for a in p._action_groups if a.title == "data"), None) or p.add_argument_group("data")
    g.add_argument("--no-timefix", action="store_true",
                   help="keep times that differ by floating-point error (0.1+0.2 and 0.3) apart in the non-private "
                        "curves and tests; by default they are one time, as R survival's timefix makes them")


def _code_types(mapping: ColumnMap, args: argparse.Namespace, competing: bool) -> ColumnMap:
    """``--event-codes A,B`` with several codes for a cumulative incidence (and no ``--event-type``): each code of
    the event column is its own declared event type (named by its code, in the order given), ``--censor-codes`` its
    censoring codes (default 0 and 'censored'), and a value in neither list is refused with its number of rows, as
    ``--event-type COL --event-types A,B --type-censor-codes`` on the same column does (Aalen & Johansen 1978; R
    survival's documented behaviour: ``survfit`` with a factor status, its first level censoring)."""
    from dpsurv_core.data import event_types

    codes = split_list(getattr(args, "event_codes", None))
    if not competing or len(codes) < 2 or getattr(args, "event_type", None):
        return mapping
    pairs = event_types.parse(",".join(codes), "--event-codes")
    if any(code != name for code, name in pairs):
        raise ParameterError("--event-codes takes the codes only (A,B): each code names its event type.")
    censor = split_list(getattr(args, "censor_codes", None)) or tuple(event_types.DEFAULT_CENSOR_CODES)
    clash = event_types.censor_clash(pairs, censor)
    if clash:
        raise ParameterError(f"The code(s) {', '.join(map(repr, clash))} are in both --event-codes and "
                             "--censor-codes: keep each in one list.")
    return ColumnMap(**{**mapping.__dict__, "event_type": mapping.event, "event_type_names": pairs,
                        "type_censor_codes": censor, "event_codes": tuple(c for c, _ in pairs),
                        "censor_codes": censor})


def add_release_options(p: argparse.ArgumentParser, mechanisms: list[str], default: str | None = None,
                        grid: bool = False, horizon: bool = True, simulation: bool = True) -> None:
    """``simulation`` False: a command that only releases (no --repeat, --seed, nor epsilon = inf)."""
    g = p.add_argument_group("release")
    g.add_argument("--mechanism", choices=mechanisms, default=default, required=default is None)
    g.add_argument("--epsilon", type=epsilon_value, default=1.0, metavar="E",
                   help="total privacy budget of the release (default 1" + ("; inf = no noise)" if simulation else
                                                                           "; finite: a release adds noise)"))
    if grid:
        g.add_argument("--grid", default=None, metavar="START:STOP:BINS|event-times",
                       help="public time grid; default 20 bins up to the horizon (nonprivate curves: every event time, as R)")
    if horizon:
        g.add_argument("--horizon", type=positive_float, metavar="T", help="public horizon (default: read off the data, disclosed)")
    if simulation:
        g.add_argument("--repeat", type=repeat_count, default=1, metavar="R",
                       help=f"R simulated releases in one vectorised run (needs --seed; at most {MAX_REPEAT:,})")
        g.add_argument("--seed", type=seed_value, metavar="S",
                       help="seed: a reproducible simulation, never recorded in the ledger and not for publication")
    else:
        p.set_defaults(repeat=1, seed=None)
    g.add_argument("--accept-disclosure", metavar="NAME[,NAME]", default=None,
                   help="publish these values read off the data anyway (horizon, grid, categories, levels:COL, "
                        "range:COL, n, censoring, blocks, cut:COL, event-types): the release is then not DP as run, "
                        "and its record "
                        "and the data set's ledger say so; without it such a release is refused")
    g.add_argument("--confirm-deviation", action="store_true",
                   help="release even though the data set's plan (`budget set --plan`) has no such release still to "
                        "be made: the ledger marks it as a deviation from plan")
    add_ledger_options(p, cap=True)


def add_ledger_options(p: argparse.ArgumentParser, cap: bool = False) -> None:
    g = p.add_argument_group("ledger")
    g.add_argument("--ledger", metavar="PATH", help=f"ledger database (default ${LEDGER_ENV} or {default_path()})")
    if cap:
        g.add_argument("--cap", type=positive_float, metavar="E",
                       help="set the data set's budget cap if it has none; a different existing cap is refused "
                            "(change it with `budget lower` or `budget raise --reason`)")


def split_list(text: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in text.split(",") if s.strip()) if text else ()


# commands whose mechanisms read counts only: they keep the rows in the engine (others read them, bounded)
ENGINE_COMMANDS = ("km", "logrank")


def _stays_in_engine(command: str, mechanism: str | None) -> bool:
    """km and logrank read counts only; weibull keeps its rows in the engine when its mechanism needs only the
    table of distinct times (catalogue column ``engines``)."""
    if command in ENGINE_COMMANDS:
        return True
    if command == "weibull" and mechanism:
        from dpsurv_core.privacy import catalogue

        return "duckdb" in catalogue.get(catalogue.WEIBULL, mechanism).engines
    return False


def cohort_from_args(args: argparse.Namespace, competing: bool = False) -> Cohort:
    """The cohort named by --data with the mapped columns, validated (in the engine --engine chooses)."""
    group = getattr(args, "group", None)
    covs = split_list(getattr(args, "covariates", None))
    frame = getattr(args, "_frame", None)  # a DataFrame from the Python API (dpsurv_core.api), named by --data
    bundled = args.data in datasets.DATASETS and frame is None
    source = None if bundled or frame is not None else parse_source(args.data)
    engine = choose_engine(getattr(args, "engine", None), source)
    if bundled:
        d = datasets.info(args.data)
        over = dict(time=args.time, event=args.event, id=args.id, max_rows_per_subject=args.max_rows_per_subject,
                    group_categories=_declared_categories(args, group))
        if args.event and args.event != d.event:
            over.update(event_codes=(), censor_codes=())
        if args.event_codes:
            over.update(event_codes=split_list(args.event_codes), censor_codes=split_list(args.censor_codes))
        if competing:
            over.update(_event_type_overrides(args, (d.event_type, d.event_types)))
        mapping = default_mapping(args.data, group, covs, **{k: v for k, v in over.items() if v is not None})
        if "event_codes" in over and over["event_codes"] == ():
            mapping = ColumnMap(**{**mapping.__dict__, "event_codes": (), "censor_codes": ()})
        mapping = _code_types(ColumnMap(**{**mapping.__dict__, "timefix": not getattr(args, "no_timefix", False)}),
                             args, competing)
        if engine == "pandas":
            cohort = build_cohort(datasets.load(args.data), mapping, args.data, d.time_unit)
            args._data_warnings = list(cohort.warnings)
            return cohort
        return _engine_cohort(args, Source("frame", frame=datasets.load(args.data), label=args.data), engine, mapping,
                              d.time_unit)
    if source is None and frame is None and not (args.data.endswith(tuple(".xlsx .xlsm .xls".split())) or "/" in args.data):
        raise DataError(f"--data {args.data!r} is neither a bundled data set ({', '.join(datasets.names())}), a "
                        "CSV/TSV/Parquet/Excel file path, nor a DuckDB table (duckdb:PATH.duckdb:TABLE).")
    if not args.time or not args.event:
        raise DataError("A data file needs --time and --event naming its time and event columns.")
    mapping = ColumnMap(time=args.time, event=args.event, group=group, id=args.id, covariates=covs,
                        event_codes=split_list(args.event_codes), censor_codes=split_list(args.censor_codes),
                        max_rows_per_subject=args.max_rows_per_subject or 1,
                        group_categories=_declared_categories(args, group) or (),
                        timefix=not getattr(args, "no_timefix", False),
                        **(_event_type_overrides(args) if competing else {}))
    mapping = _code_types(mapping, args, competing)
    if source is not None:
        check_exists(source)
    if source is not None and (engine != "pandas" or source.kind == "duckdb"):
        return _engine_cohort(args, source, "duckdb" if engine == "pandas" else engine, mapping, "days",
                              in_memory=engine == "pandas")
    read_warnings: list[str] = []
    if frame is not None:
        df = frame
    else:
        df, read_warnings = read_columns(args.data, [args.time, args.event, group, args.id, mapping.event_type, *covs],
                                         sheet=args.sheet)
    cohort = build_cohort(df, mapping, args.data)
    args._data_warnings = [*read_warnings, *cohort.warnings]
    return cohort


def _engine_cohort(args: argparse.Namespace, source: Source, engine: str, mapping: ColumnMap, time_unit: str,
                   in_memory: bool = False) -> Cohort:
    """Validated in the engine; km and logrank keep the rows there, other commands read them in bounded chunks."""
    from dpsurv_core.engines import open_cohort

    command = getattr(args, "command", None) or "this command"
    mechanism = getattr(args, "mechanism", None)
    purpose = f"`{command}{' --mechanism ' + mechanism if mechanism else ''}`"
    cohort = open_cohort(source, engine, mapping, source.name, time_unit, purpose,
                         spark_master=getattr(args, "spark_master", None))
    args._source, args._engine = source, cohort.engine
    out: Cohort = cohort
    if in_memory or not _stays_in_engine(command, mechanism) or mapping.covariates:
        out = cohort.in_memory()
    args._data_warnings = list(out.warnings)
    return out


def public_from_args(args: argparse.Namespace, cohort: Cohort) -> PublicParameters:
    grid_spec = getattr(args, "grid", None)
    horizon = getattr(args, "horizon", None)
    if hasattr(cohort, "binned_counts"):  # kept in an engine: the public parameters come from its summary
        return _engine_public(args, cohort, grid_spec, horizon)
    grid = TimeGrid.parse(grid_spec, cohort) if grid_spec else None
    if grid is not None and horizon is None and grid.kind == "equal":
        horizon = float(grid.edges[-1])
    if horizon is not None and not np.isfinite(horizon):
        raise ParameterError("--horizon must be a finite time.")
    public = PublicParameters.derive(cohort, horizon=horizon, grid=grid,
                                     group_categories=_declared_categories(args, getattr(args, "group", None)))
    limits.check_simulation(getattr(args, "repeat", 1), public.grid.bins, len(cohort.groups), "repeats")
    return public


def parse_categories(specs: list[str] | None) -> dict[str, tuple[str, ...]]:
    """``--categories COL:A,B`` (repeatable): declared categories per column, as the codes are written."""
    out: dict[str, tuple[str, ...]] = {}
    for spec in specs or []:
        column, sep, values = str(spec).partition(":")
        cats = tuple(dict.fromkeys(v.strip() for v in values.split(",") if v.strip()))
        if not sep or not column.strip() or not cats:
            raise ParameterError(f"--categories {spec!r} is not COL:A,B (a column and its categories from the study "
                                 "design, for example sex:1,2).")
        out[column.strip()] = cats
    return out


def _declared_categories(args: argparse.Namespace, column: str | None) -> tuple[str, ...] | None:
    """The declared categories of ``column``: ``--categories COL:...``, else a bundled data set's documented codes
    (its R documentation lists them: public), else None (they would be read off the data)."""
    from dpsurv_core.data import grouping

    if column is None or grouping.parse(column) is not None:
        return None
    declared = parse_categories(getattr(args, "categories", None))
    if column in declared:
        return declared[column]
    data = getattr(args, "data", None)
    if data in datasets.DATASETS:
        documented = datasets.info(data).labels.values.get(column)
        if documented:
            return tuple(documented)
    return None


def _engine_public(args: argparse.Namespace, cohort: Any, grid_spec: str | None, horizon: float | None
                   ) -> PublicParameters:
    """As :meth:`PublicParameters.derive` on the rows, which reads only their maximum time and group labels: here the
    engine's summary provides both, and the event-times grid is a DISTINCT query."""
    grid: TimeGrid | None
    if grid_spec and grid_spec.strip() == "event-times":
        times = cohort.event_times()
        grid = (TimeGrid.without_events(float(cohort.max_time)) if times.size == 0 else
                TimeGrid(np.concatenate([[min(0.0, float(times[0]) - 1.0)], times]), "event-times", True))
    else:
        grid = TimeGrid.parse(grid_spec) if grid_spec else None
    if grid is not None and horizon is None and grid.kind == "equal":
        horizon = float(grid.edges[-1])
    if horizon is not None and not np.isfinite(horizon):
        raise ParameterError("--horizon must be a finite time.")
    labels = np.array(cohort.groups if cohort.has_group else ["all"], dtype=object)
    summary = Cohort(np.full(labels.size, cohort.max_time), np.zeros(labels.size, np.int8),
                     labels.astype(str) if cohort.has_group else None)
    public = PublicParameters.derive(summary, horizon=horizon, grid=grid,
                                     group_categories=_declared_categories(args, getattr(args, "group", None)))
    limits.check_simulation(getattr(args, "repeat", 1), public.grid.bins, len(cohort.groups), "repeats")
    return public


def noise_from_args(args: argparse.Namespace) -> NoiseSource:
    """Seeded simulation noise with --seed; release noise (OpenDP samplers, OS entropy) otherwise."""
    check_repeat(args)
    return ReleaseNoise() if args.seed is None else SimulationNoise(args.seed)


def check_repeat(args: argparse.Namespace) -> None:
    if getattr(args, "repeat", 1) > 1 and getattr(args, "seed", None) is None:
        raise ParameterError(f"--repeat {args.repeat} runs a simulation, which needs --seed S (a release is one fresh "
                             "draw, charged once): add --seed to simulate, or drop --repeat to release.")


def store_from_args(args: argparse.Namespace) -> LedgerStore:
    return LedgerStore(getattr(args, "ledger", None))


def dataset_fingerprint(args: argparse.Namespace) -> str:
    """The content fingerprint of --data (the key of its budget): shuffled rows or renamed columns keep it."""
    from dpsurv_core.privacy.fingerprint import fingerprint, fingerprint_file

    if getattr(args, "_fingerprint", None) is None:
        source = getattr(args, "_source", None)
        if source is None and args.data.startswith("duckdb:"):  # e.g. `budget show`, which reads no cohort
            from dpsurv_core.engines import connect

            source = parse_source(args.data)
            assert source is not None  # a duckdb: name parses to a source (or is refused)
            args._engine = connect("duckdb", source)
        if getattr(args, "_frame", None) is not None:
            args._fingerprint = fingerprint(args._frame)
        elif args.data in datasets.DATASETS:
            args._fingerprint = fingerprint(datasets.load(args.data))
        elif source is not None:
            from dpsurv_core.privacy.fingerprint import fingerprint_source

            args._fingerprint = fingerprint_source(source, getattr(args, "_engine", None))
        else:
            args._fingerprint = fingerprint_file(args.data, sheet=getattr(args, "sheet", None))
    return args._fingerprint


def needs_fingerprint(args: argparse.Namespace, entry: Any) -> bool:
    """Only a release is keyed by the data set's fingerprint (simulations and non-private runs touch no ledger)."""
    return getattr(args, "seed", None) is None and entry.private and math.isfinite(getattr(args, "epsilon", 1.0))


def reproduce_command(args: argparse.Namespace) -> str:
    """This command line without the options that are not part of the plan (--json, --ledger, --cap, --seed)."""
    import shlex

    argv = list(getattr(args, "_argv", []))
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        name = a.split("=", 1)[0]
        if name in ("--ledger", "--cap", "--seed", "--repeat"):
            skip = "=" not in a
            continue
        if name == "--json":
            continue
        out.append(a)
    return "python -m dpsurv_core " + shlex.join(out) + " --json"


def run_plan(args: argparse.Namespace, plan: Plan) -> tuple[Any, dict[str, Any]]:
    """Run a plan as the options say: a seeded simulation (--seed), a non-private computation (no noise), or a
    release through the protocol. Returns the result and the JSON fields that say which it was."""
    check_repeat(args)
    if not plan.private:  # no noise to seed: a seed changes nothing and the numbers are exact
        return plan.compute(SimulationNoise(0), 1), not_private_fields()
    if args.seed is not None:
        return plan.compute(SimulationNoise(args.seed), args.repeat), simulation_fields(args.seed, args.repeat)
    store = store_from_args(args)
    plan = replace(plan, accept=parse_accept(getattr(args, "accept_disclosure", None)))
    if plan.fingerprint:  # a data set whose cap was set from a plan: as planned, or a confirmed deviation
        from dpsurv_core.planning.adherence import checked_note

        note = checked_note(store.records(plan.fingerprint), plan.entry.id, plan.cost.epsilon,
                            bool(getattr(args, "confirm_deviation", False)))
        plan = replace(plan, note=note or plan.note)
    released: Released = run_release(plan, store, cap=getattr(args, "cap", None))  # --cap: set only if none is set
    fields = released.summary()
    if plan.note:
        fields["plan"] = plan.note
    fields["ledger_path"] = str(store.path)
    fields["reproduce"] = plan.command
    fields["ledger_warnings"] = released.warnings
    return released.result, fields


def check(condition: bool, message: str) -> None:
    if not condition:
        raise ParameterError(message)
