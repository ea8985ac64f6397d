"""Column mapping, validation and the :class:`Cohort` every analysis takes.

``validate`` returns every problem as a sentence naming the column and the fix; errors block,
warnings are shown and the data is kept. ``build_cohort`` returns the validated arrays.
Subject ids are bounded as docs/mechanisms.md says: at most ``max_rows_per_subject`` rows per
subject are kept (the rest dropped, with a warning), and every sensitivity is multiplied by it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from dpsurv_core.data import datasets, event_types
from dpsurv_core.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

TRUE_WORDS = {"1", "true", "t", "yes", "y", "event", "dead", "died", "death"}
FALSE_WORDS = {"0", "false", "f", "no", "n", "censored", "alive", "censor"}
MIN_GROUP_SIZE = 5
# all-censored data is analysed as R survival does (survfit: S = 1 at every time, no median; survdiff: chisq 0, no p)
NO_EVENTS = "No events were observed: the curve stays at 1 and no quantile is reached."


@dataclass(frozen=True)
class ColumnMap:
    """Which column of a table plays which role, and how its codes read.

    Parameters
    ----------
    time : str
        The follow-up time column (non-negative numbers).
    event : str
        The event column: 1 (or true, "event", "dead", ...) an event, 0 censored, unless ``event_codes`` says.
    group : str or None, default None
        The column of the groups to compare; None: one group.
    id : str or None, default None
        The subject id column; None: every row is a subject of its own.
    event_type : str or None, default None
        The column of competing event types; None: one kind of event.
    covariates : tuple of str, default ()
        The covariate columns of a regression.
    event_codes : tuple, default ()
        The codes of ``event`` that mean an event (for a coding other than 0/1); () reads 0/1 or yes/no words.
    censor_codes : tuple, default ()
        With ``event_codes``, the codes that mean censored (any other code is then refused); (): all others are.
    type_censor_codes : tuple, default (0, "0", "censored")
        The codes of ``event_type`` that mean censored.
    event_type_names : tuple of (str, str), default ()
        Declared (code, readable name) pairs: exactly these event types; (): the types read off the data.
    max_rows_per_subject : int, default 1
        m, at most this many rows per subject (``id``) are kept, the rest dropped with a warning; at least 1. Every
        sensitivity is multiplied by it.
    group_categories : tuple of str, default ()
        The declared (public) categories of ``group``: the group checks count these, not the labels that occur.
    timefix : bool, default True
        Merge near-tied times in the exact curves and tests as R's timefix does; False keeps the exact times.
    """

    time: str
    event: str
    group: str | None = None
    id: str | None = None
    event_type: str | None = None
    covariates: tuple[str, ...] = ()
    event_codes: tuple = ()
    censor_codes: tuple = ()
    type_censor_codes: tuple = event_types.DEFAULT_CENSOR_CODES
    event_type_names: tuple[tuple[str, str], ...] = ()
    max_rows_per_subject: int = 1
    group_categories: tuple[str, ...] = ()
    timefix: bool = True


@dataclass(frozen=True)
class Problem:
    """One problem :func:`validate` found with a data set and its column mapping, as one sentence.

    Parameters
    ----------
    column : str or None
        The column it concerns (None for the whole table).
    message : str
        The sentence shown to the user.
    severity : {"error", "warning"}, default "error"
        An error blocks the analysis; a warning is shown and the data kept.
    """

    column: str | None
    message: str
    severity: str = "error"  # "error" blocks the analysis, "warning" is shown and the data kept

    def __str__(self) -> str:
        return self.message


class _Covariates:
    """``Cohort.covariates``: a DataFrame, the empty default built on first read (a cohort that never reads it, as a
    DuckDB release's, never imports pandas). The dataclass takes its default from ``__get__(None, Cohort)``: ``None``,
    kept in the instance until read."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = f"_{name}"

    @overload
    def __get__(self, obj: None, owner: type) -> None: ...

    @overload
    def __get__(self, obj: object, owner: type) -> pd.DataFrame: ...

    def __get__(self, obj: object | None, owner: type) -> pd.DataFrame | None:
        if obj is None:
            return None
        value = obj.__dict__.get(self.slot)
        if value is None:
            import pandas as pd

            value = obj.__dict__[self.slot] = pd.DataFrame()
        return value

    def __set__(self, obj: object, value: pd.DataFrame | None) -> None:
        obj.__dict__[self.slot] = value


@dataclass
class Cohort:
    """One row per kept record: float times, 0/1 events, optional labels and covariates.

    Usually built by :func:`validate` (or :func:`build_cohort`) from a table and its :class:`ColumnMap`.

    Parameters
    ----------
    time : numpy.ndarray
        The follow-up time of each record, in ``time_unit``.
    event : numpy.ndarray
        1 for an event, 0 for censored, per record.
    group : numpy.ndarray or None, default None
        Each record's group label (strings); None: one group.
    subject : numpy.ndarray or None, default None
        Each record's subject id; None: every record is a subject of its own.
    event_type : numpy.ndarray or None, default None
        0 censored, 1..K the competing event types of ``event_type_labels``; None: one kind of event.
    event_type_labels : tuple of str, default ()
        The names of event types 1..K.
    covariates : pandas.DataFrame or None, default None
        The covariates, one row per record; None: an empty table (built on first read).
    mapping : ColumnMap or None, default None
        The column mapping the cohort was read with.
    rows_per_subject : int, default 1
        m, the most records one subject may have; every sensitivity is multiplied by it.
    name : str, default "data"
        The data set's name, shown in the outputs.
    time_unit : str, default "days"
        The unit of ``time``, shown in the outputs.
    warnings : tuple of str, default ()
        The validation warnings, one sentence each.
    """

    time: np.ndarray
    event: np.ndarray
    group: np.ndarray | None = None
    subject: np.ndarray | None = None
    event_type: np.ndarray | None = None
    event_type_labels: tuple[str, ...] = ()
    covariates: _Covariates = _Covariates()  # a pandas.DataFrame, empty unless given (read as one)
    mapping: ColumnMap | None = None
    rows_per_subject: int = 1
    name: str = "data"
    time_unit: str = "days"
    warnings: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return int(self.time.size)

    @property
    def n_subjects(self) -> int:
        return int(np.unique(self.subject).size) if self.subject is not None else self.n

    @property
    def n_events(self) -> int:
        return int(self.event.sum())

    def covariate_columns(self) -> list[Any]:
        """The covariates' column names, without building the empty default table (nor importing pandas)."""
        if self.__dict__.get("_covariates", False) is None:
            return []
        return list(self.covariates.columns)

    @property
    def groups(self) -> list[str]:
        return [] if self.group is None else sorted(np.unique(self.group).tolist(), key=_natural_key)

    def subset(self, mask: np.ndarray) -> Cohort:
        """The cohort restricted to rows where ``mask`` is true (e.g. D minus one subject)."""
        pick = lambda a: None if a is None else a[mask]  # noqa: E731
        return Cohort(self.time[mask], self.event[mask], pick(self.group), pick(self.subject), pick(self.event_type),
                      self.event_type_labels, self.covariates.loc[mask].reset_index(drop=True) if len(self.covariates.columns) else self.covariates,
                      self.mapping, self.rows_per_subject, self.name, self.time_unit, self.warnings)


def _natural_key(v):
    try:
        return (0, float(v), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(v))


def _label(values: pd.Series) -> np.ndarray:
    """Group labels as strings; integral floats print without '.0'."""
    import pandas as pd

    v = values.dropna()
    if pd.api.types.is_float_dtype(values) and np.all(np.mod(v, 1) == 0) and np.all(np.abs(v) < 2**53):
        values = values.astype("Int64")
    return values.astype(str).to_numpy()


def _event_from(series: pd.Series, col: str, event_codes: tuple, censor_codes: tuple) -> tuple[np.ndarray | None, list[Problem]]:
    import pandas as pd

    problems: list[Problem] = []
    if series.isna().any():
        rows = np.flatnonzero(series.isna().to_numpy())
        problems.append(Problem(col, f"Column {col!r} has {rows.size} missing event value(s) (first at row {rows[0] + 2} "
                                     "of the file): fill them with 1 (event) or 0 (censored), or drop those rows."))
        return None, problems
    if event_codes:
        ev = {str(c).strip().lower() for c in event_codes}
        ce = {str(c).strip().lower() for c in censor_codes} if censor_codes else None
        shown = series.astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
        s = shown.str.lower()
        is_event = s.isin(ev)
        if ce is not None:
            unknown = ~is_event & ~s.isin(ce)
            if unknown.any():  # refused, never counted as censored nor made an event type
                problems.append(Problem(col, event_types.unlisted_text(
                    col, event_types.value_counts(shown, unknown), event_codes, censor_codes)))
                return None, problems
        return is_event.to_numpy().astype(np.int8), problems
    if pd.api.types.is_bool_dtype(series):
        return series.to_numpy().astype(np.int8), problems
    if pd.api.types.is_numeric_dtype(series):
        arr = series.to_numpy()
        if ((arr == 0) | (arr == 1)).all():
            return arr.astype(np.int8), problems
        vals = set(np.unique(arr).tolist())
        if vals <= {0, 1}:
            return series.to_numpy().astype(np.int8), problems
        bad = sorted(vals - {0, 1})
        hint = " (R's 1 = censored, 2 = event coding: declare event code 2 and censoring code 1)" if vals <= {1, 2} else ""
        problems.append(Problem(col, f"Column {col!r} has event value(s) {', '.join(map(str, bad[:5]))} besides 0 and 1"
                                     f"{hint}: recode it as 1 = event, 0 = censored, or declare which codes mean an event."))
        return None, problems
    s = series.astype(str).str.strip().str.lower()
    vals = set(s.unique())
    if vals <= TRUE_WORDS | FALSE_WORDS:
        return s.isin(TRUE_WORDS).to_numpy().astype(np.int8), problems
    bad = sorted(vals - TRUE_WORDS - FALSE_WORDS)
    problems.append(Problem(col, f"Column {col!r} has event value(s) {', '.join(map(repr, bad[:5]))}: use 1/0, true/false "
                                 "or yes/no, or declare which codes mean an event."))
    return None, problems


def no_events_problem(mapping: ColumnMap) -> Problem:
    """The warning for data without a single event (kept, as R survival's survfit and survdiff keep it: the curve
    is 1 at every time, no quantile is reached, and a log-rank test has chi-square 0 and no p-value), with a check
    of the declared event codes when there are some."""
    if mapping.event_codes:
        codes = ", ".join(map(str, mapping.event_codes))
        return Problem(mapping.event, f"{NO_EVENTS} (No row of {mapping.event!r} has the declared event code(s) "
                                      f"{codes}: check which values mean an event.)", "warning")
    return Problem(mapping.event, f"{NO_EVENTS} (Every subject is censored in {mapping.event!r}: check the event "
                                  "column or its coding if that is not intended.)", "warning")


def mapping_problems(mapping: ColumnMap, cols: list[str]) -> list[Problem]:
    """What is wrong with ``mapping`` for a table with columns ``cols`` (shared by the in-memory and engine paths)."""
    problems: list[Problem] = []
    roles = {"time": mapping.time, "event": mapping.event, "group": mapping.group, "subject id": mapping.id,
             "event type": mapping.event_type}
    for role, col in roles.items():
        if col is not None and col not in cols:
            problems.append(Problem(col, f"There is no column {col!r} for the {role}: choose one of {', '.join(cols[:12])}"
                                         f"{'...' if len(cols) > 12 else ''}."))
    for col in mapping.covariates:
        if col not in cols:
            problems.append(Problem(col, f"There is no covariate column {col!r}: choose among {', '.join(cols[:12])}."))
        same = next((r for r, c in (("time", mapping.time), ("event", mapping.event), ("subject id", mapping.id),
                                    ("event type", mapping.event_type)) if c == col), None)
        if same is not None:
            problems.append(Problem(col, f"The covariate {col!r} is the {same} column: a model cannot explain the "
                                         "outcome by itself; remove it from the covariates."))
    if mapping.time == mapping.event and mapping.time in cols:
        problems.append(Problem(mapping.event, "The time and the event must be different columns: choose the column of "
                                               "0/1 event indicators for the event."))
    if not problems and mapping.max_rows_per_subject < 1:
        problems.append(Problem(mapping.id, "The bound on rows per subject must be at least 1."))
    return problems


MAX_GROUPS = 20


def too_many_groups(mapping: ColumnMap, found: int) -> Problem | None:
    """More groups than :data:`MAX_GROUPS`: the declared categories when there are some (rows in other categories
    are left out, so how many labels occur decides nothing), else the ``found`` distinct labels."""
    declared = len(mapping.group_categories)
    if declared > MAX_GROUPS:
        return Problem(mapping.group, f"{declared} categories of {mapping.group!r} were declared: at most {MAX_GROUPS} "
                                      "groups can be compared; declare fewer or merge categories.", "error")
    if not declared and found > MAX_GROUPS:
        return Problem(mapping.group, f"Column {mapping.group!r} has {found} distinct values: it looks continuous; "
                                      "choose a categorical column for groups.", "error")
    return None


NO_GROUP = ("Column {column!r} is empty in every row, so there is no group to compare: choose the column that holds "
             "the groups, or no group column.")


def validate(df: pd.DataFrame, mapping: ColumnMap) -> tuple[Cohort | None, list[Problem]]:
    """Check ``df`` against ``mapping``; returns the cohort (None if any error) and every problem.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    mapping : ColumnMap
        Its column mapping.

    Returns
    -------
    tuple
        ``(cohort or None, problems)``: the :class:`Cohort` when nothing blocks, and every :class:`Problem`.
    """
    import pandas as pd

    cols = list(df.columns)
    problems = mapping_problems(mapping, cols)
    if problems:
        return None, problems

    keep = np.ones(len(df), dtype=bool)
    if mapping.id is not None:
        ids = df[mapping.id]
        if ids.isna().any():
            problems.append(Problem(mapping.id, f"Column {mapping.id!r} has {int(ids.isna().sum())} missing subject id(s): "
                                                "give every row the id of its subject."))
        else:
            if ids.dtype == object:  # mixed types (e.g. 7 and "A12"): compare ids as text
                df = df.assign(**{mapping.id: ids.astype(str)})
            rank = df.groupby(mapping.id, sort=False).cumcount().to_numpy()
            keep = rank < mapping.max_rows_per_subject
            dropped = int((~keep).sum())
            if dropped:
                problems.append(Problem(mapping.id, f"{dropped} row(s) were dropped because some subjects in {mapping.id!r} "
                                                    f"have more than {mapping.max_rows_per_subject} row(s): raise the bound "
                                                    "to keep them (every sensitivity is multiplied by the bound).", "warning"))
    sub = df.reset_index(drop=True) if keep.all() else df.loc[keep].reset_index(drop=True)
    if mapping.group is not None and len(sub) and sub[mapping.group].isna().all():
        problems.append(Problem(mapping.group, NO_GROUP.format(column=mapping.group)))
        return None, problems
    if mapping.group is not None and sub[mapping.group].isna().any():
        n_missing = int(sub[mapping.group].isna().sum())
        sub = sub[sub[mapping.group].notna()].reset_index(drop=True)
        problems.append(Problem(mapping.group, f"{n_missing} row(s) have no value in {mapping.group!r} and were left out "
                                               "of the analysis (as R does); fill those labels if they belong to a group.",
                                "warning"))

    raw_t = sub[mapping.time]
    t = pd.to_numeric(raw_t, errors="coerce")
    bad_text = t.isna() & raw_t.notna()
    if bad_text.any():
        i = int(np.flatnonzero(bad_text.to_numpy())[0])
        problems.append(Problem(mapping.time, f"Column {mapping.time!r} must hold numbers, but row {i + 2} has "
                                              f"{str(raw_t.iloc[i])!r}: fix or remove the non-numeric times."))
    elif raw_t.isna().any():
        n_miss = int(raw_t.isna().sum())
        problems.append(Problem(mapping.time, f"Column {mapping.time!r} has {n_miss} missing time(s) (first at row "
                                              f"{int(np.flatnonzero(raw_t.isna().to_numpy())[0]) + 2}): fill them or drop those rows."))
    else:
        tv = t.to_numpy(dtype=float)
        if not np.all(np.isfinite(tv)):
            problems.append(Problem(mapping.time, f"Column {mapping.time!r} has infinite times: replace them with the "
                                                  "last follow-up time."))
        elif (tv < 0).any():
            problems.append(Problem(mapping.time, f"Column {mapping.time!r} has {int((tv < 0).sum())} negative time(s) "
                                                  f"(for example {tv[tv < 0][0]:g}): times are durations since the start "
                                                  "of follow-up and must be positive."))
        elif (tv == 0).any():
            problems.append(Problem(mapping.time, f"Column {mapping.time!r} has {int((tv == 0).sum())} time(s) equal to 0: "
                                                  "they are kept (at risk from time 0); add a small offset or drop them "
                                                  "if that is not intended.", "warning"))

    event, ev_problems = _event_from(sub[mapping.event], mapping.event, mapping.event_codes, mapping.censor_codes)
    problems += ev_problems
    if event is not None and event.sum() == 0:
        problems.append(no_events_problem(mapping))

    group = None
    if mapping.group is not None:
        g = sub[mapping.group]
        group = _label(g)
        labels, counts = np.unique(group, return_counts=True)
        if labels.size < 2:
            problems.append(Problem(mapping.group, f"Column {mapping.group!r} has a single group ({labels[0]!r}): "
                                                   "choose a column with two or more groups, or no group.", "warning"))
        small = [(lab, c) for lab, c in zip(labels, counts) if c < MIN_GROUP_SIZE]
        if small:
            desc = ", ".join(f"{lab!r} ({c} subject{'' if c == 1 else 's'})" for lab, c in small[:4])
            problems.append(Problem(mapping.group, f"Group(s) {desc} in {mapping.group!r} have fewer than {MIN_GROUP_SIZE} "
                                                   "subjects: private estimates for them will be mostly noise; merge small "
                                                   "groups or choose another column.", "warning"))
        problem = too_many_groups(mapping, labels.size)
        if problem is not None:
            problems.append(problem)

    event_type: np.ndarray | None = None
    type_labels: tuple[str, ...] = ()
    if mapping.event_type is not None and event is not None:
        et = sub[mapping.event_type].astype(str).str.strip().str.replace(r"\.0$", "", regex=True)
        censor = {str(c).lower() for c in mapping.type_censor_codes}
        is_c = et.str.lower().isin(censor)
        if mapping.event_type_names:  # declared: exactly these types, whatever the rows hold
            event_type, type_labels, problem = _declared_types(et, is_c, mapping)
            if problem is not None:
                problems.append(problem)
        else:  # read off the data: every code that is not a censoring code (disclosed as event-types at release)
            codes = tuple(sorted(set(et[~is_c]), key=_natural_key))
            lookup = {code: i + 1 for i, code in enumerate(codes)}
            type_labels = codes
            event_type = np.where(is_c, 0, et.map(lookup).fillna(0)).astype(np.int16)

    covs = pd.DataFrame(index=sub.index)
    for col in mapping.covariates:
        s = sub[col]
        if s.isna().all():
            problems.append(Problem(col, f"Covariate {col!r} is missing for every subject: remove it from the covariates."))
            continue
        if not pd.api.types.is_numeric_dtype(s):
            num = pd.to_numeric(s, errors="coerce")
            frac = float(num.notna().sum()) / max(int(s.notna().sum()), 1)
            bad = np.flatnonzero((num.isna() & s.notna()).to_numpy())
            if frac >= 0.8 and bad.size:
                i = int(bad[0])
                problems.append(Problem(col, f"Covariate {col!r} is numeric but row {i + 2} holds {str(s.iloc[i])!r}: fix "
                                             "or clear the text entries."))
                continue
            if s.notna().any() and not bad.size:
                s = num  # numbers stored as text (or booleans) are numbers
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) and np.isinf(s.astype(float)).any():
            problems.append(Problem(col, f"Covariate {col!r} has {int(np.isinf(s.astype(float)).sum())} infinite "
                                         "value(s): replace them with real measurements or clear them."))
            continue
        if s.nunique(dropna=True) < 2:
            problems.append(Problem(col, f"Covariate {col!r} is constant ({s.dropna().iloc[0]}): it carries no "
                                         "information; remove it from the covariates.", "warning"))
        covs[col] = s

    if any(p.severity == "error" for p in problems):
        return None, problems
    assert event is not None  # _event_from returns None only with an error
    cohort = Cohort(
        time=t.to_numpy(dtype=float), event=event, group=group,
        subject=None if mapping.id is None else sub[mapping.id].to_numpy(),
        event_type=event_type, event_type_labels=type_labels, covariates=covs.reset_index(drop=True),
        mapping=mapping, rows_per_subject=mapping.max_rows_per_subject if mapping.id else 1,
        warnings=tuple(p.message for p in problems),
    )
    return cohort, problems


def _declared_types(et: pd.Series, is_c: pd.Series, mapping: ColumnMap
                    ) -> tuple[np.ndarray | None, tuple[str, ...], Problem | None]:
    """The event types of the type column's normalised codes ``et`` when they are declared (``event_type_names``):
    (type index per row, 0 censored; the declared names; the blocking problem, if any). A row holding neither a
    declared code nor a censoring code is an error counted for the data holder (:mod:`dpsurv_core.data.event_types`),
    never a new type."""
    assert mapping.event_type is not None  # called for a declared event-type column only
    pairs = event_types.ordered(mapping.event_type_names)
    names = tuple(name for _, name in pairs)
    clash = event_types.censor_clash(pairs, mapping.type_censor_codes)
    if clash:
        return None, names, Problem(mapping.event_type, f"The code(s) {', '.join(map(repr, clash))} of "
                                                        f"{mapping.event_type!r} are declared both as an event type "
                                                        "and as a censoring code: keep each in one list.")
    found = event_types.match(pairs, sorted(set(et[~is_c])))
    index = et.map(found)
    unknown = ~is_c & index.isna()
    if unknown.any():
        return None, names, Problem(mapping.event_type, event_types.undeclared_problem_text(
            mapping.event_type, event_types.value_counts(et, unknown), [c for c, _ in pairs],
            mapping.type_censor_codes))
    return np.where(is_c, 0, index.fillna(-1) + 1).astype(np.int16), names, None


def build_cohort(df: pd.DataFrame, mapping: ColumnMap, name: str = "data", time_unit: str = "days") -> Cohort:
    """Validated cohort, or a :class:`DataError` carrying the first blocking problem.

    Parameters
    ----------
    df : pandas.DataFrame
        The table, one row per subject (or several with an id column).
    mapping : ColumnMap
        Which column is time, event, group, id, covariates.
    name : str, default "data"
        The data set's name.
    time_unit : str, default "days"
        The unit of the time column.

    Returns
    -------
    Cohort
        The validated cohort.

    Raises
    ------
    dpsurv_core.errors.DataError
        The first blocking problem (:func:`validate`).
    """
    cohort, problems = validate(df, mapping)
    if cohort is None:
        first = next(p for p in problems if p.severity == "error")
        raise DataError(first.message, column=first.column)
    cohort.name, cohort.time_unit = name, time_unit
    return cohort


def default_mapping(name: str, group: str | None = None, covariates: tuple[str, ...] = (), **overrides) -> ColumnMap:
    """The column map a bundled data set declares, with optional overrides.

    Parameters
    ----------
    name : str
        A bundled data set's name.
    group : str, optional
        The group column.
    covariates : tuple of str, default ()
        Covariate columns.
    **overrides
        Any other :class:`ColumnMap` field.

    Returns
    -------
    ColumnMap
        The declared mapping.
    """
    d = datasets.info(name)
    kw: dict[str, Any] = dict(time=d.time, event=d.event, group=group, id=d.id, covariates=tuple(covariates),
                              event_codes=tuple(d.event_codes) if d.event_codes != (1,) else (),
                              censor_codes=tuple(d.censor_codes) if d.event_codes != (1,) else (),
                              max_rows_per_subject=d.rows_per_subject)
    kw.update({k: v for k, v in overrides.items() if v is not None})
    return ColumnMap(**kw)


def load_bundled(name: str, group: str | None = None, covariates: tuple[str, ...] = (), competing: bool = False,
                 **overrides) -> Cohort:
    """A bundled data set as a cohort, with its declared coding (and event types if ``competing``).

    Parameters
    ----------
    name : str
        A bundled data set's name (``python -m dpsurv_core datasets`` lists them).
    group : str, optional
        The group column.
    covariates : tuple of str, default ()
        Covariate columns.
    competing : bool, default False
        Keep the declared event types (competing risks).
    **overrides
        Any other :class:`ColumnMap` field.

    Returns
    -------
    Cohort
        The data set's cohort.
    """
    d = datasets.info(name)
    if competing and d.event_type:
        overrides.setdefault("event_type", d.event_type)
        overrides.setdefault("event_type_names", tuple((str(k), v) for k, v in d.event_types.items()))
    return build_cohort(datasets.load(name), default_mapping(name, group, covariates, **overrides), name, d.time_unit)
