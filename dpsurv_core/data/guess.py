"""Guess what the columns of an uploaded table mean: time, event, group, subject id, the time unit, column kinds.

A guess is only a proposal: the Data page shows it, with the reason for each role, for the user to confirm or change
before anything runs. Names are compared after lower-casing and splitting on anything that is not a letter or digit
(``OS_Months`` -> ``os``, ``months``); content breaks ties and fills roles no name claims.

The time unit comes from the time column's name (``os_months``, ``survival_days``, ``time_wk``) when it says one, else
from the range of the times (:func:`unit_from_range`), which the page asks the user to confirm.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from dpsurv_core.data.cohort import FALSE_WORDS, TRUE_WORDS, ColumnMap
from dpsurv_core.data.labels import CATEGORICAL, NUMERIC, ValueLabels, code_key, guess_kind
from dpsurv_core.data.summary import DAYS_PER

# names in order of preference (first match wins within a role)
TIME_NAMES = ("time", "futime", "fu_time", "os_time", "survival_time", "surv_time", "survtime", "followup",
              "follow_up", "follow_up_time", "os", "stop", "duration", "t", "tte", "time_to_event")
TIME_TOKENS = {"time", "futime", "survival", "surv", "followup", "follow", "fu", "os", "pfs", "dfs", "efs", "rfs",
               "duration", "tte", "days", "months", "weeks", "years"}
EVENT_NAMES = ("status", "event", "death", "dead", "died", "fustat", "os_status", "os_event", "vital_status",
               "censor", "cens", "delta", "outcome", "d", "fail", "failure", "relapse")
EVENT_TOKENS = {"status", "event", "death", "dead", "died", "fustat", "censor", "cens", "censored", "delta",
                "outcome", "fail", "failure", "relapse", "progression", "recurrence", "vital", "deceased"}
GROUP_NAMES = ("arm", "treatment", "treatment_arm", "study_arm", "trt", "treat", "tx", "rx", "group", "grp",
               "allocation", "randomisation", "randomization", "randomised_arm", "randomized_arm", "cohort", "regimen")
GROUP_TOKENS = {"arm", "treatment", "trt", "treat", "tx", "rx", "group", "grp", "allocation", "randomisation",
                "randomization", "regimen", "cohort"}
ID_NAMES = ("id", "subject", "subject_id", "subjid", "patient", "patient_id", "patid", "pid", "record_id", "study_id",
            "participant", "participant_id", "case", "case_id", "mrn", "usubjid")
ID_TOKENS = {"id", "subject", "subjid", "patient", "patid", "pid", "participant", "usubjid", "mrn"}
UNIT_TOKENS = {
    "days": {"days", "day", "dys", "dy", "d"},
    "weeks": {"weeks", "week", "wks", "wk", "w"},
    "months": {"months", "month", "mos", "mo", "mon", "mths", "mth", "m"},
    "years": {"years", "year", "yrs", "yr", "y"},
}
# columns that name a calendar year or a date part, never a follow-up time
_NOT_TIME = re.compile(r"(^|_)(date|dob|dx|year|sample|age|calendar)(_|$)|dxyr|sample_yr")
TYPICAL_YEARS = 3.0  # the follow-up a range-based unit guess aims at
KNOWN_VALUE_LABELS = {  # text codes whose meaning is unambiguous (numbers never are: 1 = male is only a convention)
    frozenset({"m", "f"}): {"m": "Male", "f": "Female"},
    frozenset({"male", "female"}): {"male": "Male", "female": "Female"},
}


def _tokens(name: object) -> list[str]:
    """``name`` lower-cased and split on anything that is not a letter or digit (``OS.Months`` -> [os, months])."""
    return [t for t in re.split(r"[^0-9a-z]+", str(name).lower()) if t]


def _norm(name: object) -> str:
    return "_".join(_tokens(name))


@dataclass(frozen=True)
class Guess:
    """The guessed role of each column, the time unit and why; ``mapping()`` gives the :class:`ColumnMap`."""

    time: str | None
    event: str | None
    group: str | None = None
    id: str | None = None
    time_unit: str = "days"
    unit_from: str = "default"  # "name", "range" or "default"
    suggested_event_codes: tuple[str, ...] = ()  # R's 1/2 coding: ("2",); proposed to the user, never applied
    reasons: dict[str, str] = field(default_factory=dict)  # role -> one sentence
    kinds: dict[str, str] = field(default_factory=dict)  # column -> categorical/numeric
    labels: ValueLabels = field(default_factory=ValueLabels)  # labels safe to propose (text codes like M/F)

    def mapping(self, covariates: tuple[str, ...] = ()) -> ColumnMap:
        """The guessed column map. Event codes are never guessed into it: a wrong guess would silently swap events
        and censorings, while a missing one stops with a sentence asking for them."""
        if self.time is None or self.event is None:
            raise ValueError("no time or event column was guessed")
        return ColumnMap(time=self.time, event=self.event, group=self.group, id=self.id, covariates=covariates)

    def to_json(self) -> dict:
        return {"time": self.time, "event": self.event, "group": self.group, "id": self.id,
                "time_unit": self.time_unit, "unit_from": self.unit_from,
                "suggested_event_codes": list(self.suggested_event_codes), "reasons": dict(self.reasons), "kinds": dict(self.kinds),
                "labels": self.labels.to_json()}


def _by_name(columns: list[str], names: tuple[str, ...], token_set: set[str]) -> str | None:
    """The first column named exactly as one of ``names`` (in their order), else the first whose name has a token
    of ``token_set``."""
    normed = {c: _norm(c) for c in columns}
    for n in names:
        hit = next((c for c in columns if normed[c] == n), None)
        if hit is not None:
            return hit
    return next((c for c in columns if set(_tokens(c)) & token_set), None)


def _numeric(s: pd.Series) -> pd.Series | None:
    """The column as numbers when (almost) all of it parses as numbers, else None."""
    if pd.api.types.is_bool_dtype(s):
        return None
    if pd.api.types.is_numeric_dtype(s):
        return s.astype(float)
    head = s.dropna().head(200)  # a text column is told apart on a sample before parsing all of it
    if len(head) and pd.to_numeric(head, errors="coerce").notna().mean() < 0.95:
        return None
    parsed = pd.to_numeric(s, errors="coerce")
    return parsed if parsed.notna().sum() >= 0.95 * max(s.notna().sum(), 1) else None


def _two_codes(s: pd.Series) -> list[str] | None:
    """The distinct codes of an event-like column (two values, or 0/1/2 style codes), or None."""
    distinct = s.dropna().unique()
    if len(distinct) > 6:  # ("1", 1.0 and " 1" are one code, so a few more raw values may still be two codes)
        return None
    vals = sorted({code_key(v) for v in distinct} - {""})
    return vals if 1 <= len(vals) <= 2 else None


def _is_event_like(s: pd.Series) -> bool:
    """Two distinct values (0/1, 1/2, true/false, yes/no, dead/alive, ...)."""
    vals = _two_codes(s)
    if vals is None:
        return False
    low = {v.lower() for v in vals}
    return low <= {"0", "1", "2"} or low <= TRUE_WORDS | FALSE_WORDS


def _is_time_like(s: pd.Series) -> bool:
    x = _numeric(s)
    if x is None:
        return False
    x = x.dropna()
    return bool(len(x) and (x >= 0).all() and x.nunique() > 2)


def _is_id_like(s: pd.Series) -> bool:
    v = s.dropna()
    if v.empty or pd.api.types.is_float_dtype(v) and not ((v % 1) == 0).all():
        return False
    return v.nunique() >= 0.5 * len(v) and v.nunique() > 2


def _group_ok(s: pd.Series) -> bool:
    """A plausible group column: 2 to 10 distinct values."""
    k = s.dropna().nunique()
    return 2 <= k <= 10


def unit_from_name(name: object) -> str | None:
    """The time unit a column name states (``os_months`` -> months, ``time_wk`` -> weeks), or None. Single letters
    (``t_m``) count only after another token."""
    toks = _tokens(name)
    for unit, words in UNIT_TOKENS.items():
        for i, t in enumerate(toks):
            if t in words and (len(t) > 1 or i > 0):
                return unit
    # glued forms: survdays, osmonths, futime_in_yrs are caught above; "timemonths", "survmonths" here
    joined = "".join(toks)
    for unit in ("months", "weeks", "years", "days"):
        if joined.endswith(unit) and len(joined) > len(unit):
            return unit
    return None


def unit_from_range(times: pd.Series) -> str:
    """A unit read off the longest follow-up T (a guess to confirm): T > 600 is days (600 months is 50 years);
    times with fractions are years when T <= 25 and months otherwise (day and week counts are whole numbers); whole
    numbers take the unit among days, weeks and months in which T reads closest to :data:`TYPICAL_YEARS` years (log
    scale)."""
    x = pd.to_numeric(times, errors="coerce").dropna()
    x = x[x > 0]
    if x.empty:
        return "days"
    longest = float(x.max())
    if longest > 600:
        return "days"
    if bool(((x % 1) != 0).any()):
        return "years" if longest <= 25 else "months"
    return min(("days", "weeks", "months"),
               key=lambda u: abs(math.log(longest * DAYS_PER[u] / 365.25 / TYPICAL_YEARS)))


def guess_columns(df: pd.DataFrame) -> Guess:
    """Guess the roles of the columns of ``df`` by name, then content; see the module docstring."""
    cols = [str(c) for c in df.columns]
    frame = df.copy()
    frame.columns = cols
    reasons: dict[str, str] = {}

    # time: a known name whose content is non-negative numbers; else the first non-negative numeric column
    candidates = [c for c in cols if _is_time_like(frame[c]) and not _NOT_TIME.search(_norm(c))]
    exact = _by_name(cols, TIME_NAMES, set())  # an exact name wins even when some cells are bad (validation says)
    time = exact if exact is not None else _by_name(candidates, TIME_NAMES, TIME_TOKENS)
    if time is not None and time not in candidates:
        reasons["time"] = f"named {time!r}, but not every value is a non-negative number: see the message below"
    elif time is not None:
        reasons["time"] = f"named like a follow-up time ({time!r}) and holds non-negative numbers"
    elif (plain := [c for c in candidates if not set(_tokens(c)) & (ID_TOKENS | GROUP_TOKENS | EVENT_TOKENS)]):
        time = plain[0]
        reasons["time"] = f"no column is named like a time: {time!r} is the first with non-negative numbers"
    else:
        reasons["time"] = "no column holds non-negative numbers: choose the time column"

    rest = [c for c in cols if c != time]
    ev_candidates = [c for c in rest if _is_event_like(frame[c])]
    event = _by_name(ev_candidates, EVENT_NAMES, EVENT_TOKENS)
    if event is not None:
        reasons["event"] = f"named like an event indicator ({event!r}) with two values"
    else:
        named = _by_name(rest, EVENT_NAMES, EVENT_TOKENS)
        if named is not None:
            event = named
            reasons["event"] = (f"named like an event indicator ({event!r}) but it has more than two values: say "
                                "which values mean the event")
        elif ev_candidates:
            event = ev_candidates[0]
            reasons["event"] = f"no column is named like an event: {event!r} is the first with two values"
        else:
            reasons["event"] = "no column looks like an event indicator: choose it and say which values mean the event"

    suggested: tuple[str, ...] = ()
    if event is not None:
        vals = _two_codes(frame[event])
        if vals is not None and set(vals) == {"1", "2"}:
            suggested = ("2",)
            reasons["event"] += "; coded 1/2: if as in R (1 = censored, 2 = event), choose 2 as the event value"
        elif vals is not None and {v.lower() for v in vals} <= {"0", "1"} and set(_tokens(event)) & {"cens", "censor",
                                                                                                      "censored"}:
            reasons["event"] += "; check: in some files 1 = censored in a column named like this"

    rest = [c for c in cols if c not in (time, event)]
    ids = [c for c in rest if _is_id_like(frame[c])]
    subject = _by_name(ids, ID_NAMES, ID_TOKENS)
    if subject is not None:
        reasons["id"] = f"named like a subject id ({subject!r}) with mostly distinct values"

    rest = [c for c in rest if c != subject]
    groups = [c for c in rest if _group_ok(frame[c])]
    group = _by_name(groups, GROUP_NAMES, GROUP_TOKENS)
    if group is not None:
        k = frame[group].dropna().nunique()
        reasons["group"] = f"named like a treatment arm or group ({group!r}) with {k} values"

    unit_name = unit_from_name(time) if time is not None else None
    if unit_name is not None:
        unit, unit_from = unit_name, "name"
        reasons["time_unit"] = f"the column name {time!r} says {unit}"
    elif time is not None:
        unit, unit_from = unit_from_range(frame[time]), "range"
        longest = pd.to_numeric(frame[time], errors="coerce").max()
        reasons["time_unit"] = (f"the name does not say; the longest follow-up, {longest:g}, reads as about "
                                f"{longest * DAYS_PER[unit] / 365.25:.1f} years in {unit}: confirm")
    else:
        unit, unit_from = "days", "default"

    kinds = {c: guess_kind(frame[c]) for c in cols if c not in (time, subject)}
    if group is not None:
        kinds[group] = CATEGORICAL
    if time is not None:
        kinds[time] = NUMERIC
    labels = ValueLabels(kinds=kinds)
    for c in cols:
        if kinds.get(c) != CATEGORICAL:
            continue
        codes = {code_key(v) for v in frame[c].dropna().unique()} - {""}
        known = KNOWN_VALUE_LABELS.get(frozenset(v.lower() for v in codes))
        if known is not None:
            labels = labels.with_labels(c, {v: known[v.lower()] for v in codes})
    return Guess(time, event, group, subject, unit, unit_from, suggested, reasons, kinds, labels)


def guess_mapping(df: pd.DataFrame) -> ColumnMap:
    """The guessed :class:`ColumnMap` of ``df``; a table with fewer than two columns maps its first column to both
    roles (validation then says what is wrong).

    Parameters
    ----------
    df : pandas.DataFrame
        The table.

    Returns
    -------
    ColumnMap
        The guessed mapping, to be confirmed by the user.
    """
    g = guess_columns(df)
    cols = [str(c) for c in df.columns]
    time = g.time or (cols[0] if cols else "")
    event = g.event or next((c for c in cols if c != time), time)
    return ColumnMap(time=time, event=event, group=g.group, id=g.id)


def numeric_summary(series: pd.Series) -> str:
    """A short description of a column's values for the confirmation table (``12 values: 1, 2`` or ``0.3 to 85``)."""
    s = series.dropna()
    if s.empty:
        return "empty"
    x = _numeric(s)
    if x is not None and x.nunique() > 6:
        return f"{np.nanmin(x):g} to {np.nanmax(x):g}"
    vals = sorted({code_key(v) for v in s.unique()}, key=lambda v: (0, float(v), "") if _isnum(v) else (1, 0.0, v))
    return ", ".join(vals[:6]) + (", ..." if len(vals) > 6 else "")


def _isnum(v: str) -> bool:
    try:
        float(v)
    except ValueError:
        return False
    return True
