"""Value labels: what the codes of a column mean, and whether a column is categorical or numeric.

A :class:`ValueLabels` holds, per column, a mapping from code to label (lung's ``sex``: ``"1" -> "Male"``,
``"2" -> "Female"``), an optional one-line description of the column, and a kind: ``"categorical"`` (the values are
names of groups: sex, ECOG status, treatment arm; a regression enters them as indicators against a reference level)
or ``"numeric"`` (age, a lab value). Codes are compared as the strings the cohort uses for group labels
(:func:`code_key`: ``2.0`` and ``"2"`` are the same code), so a label found for a group code of a cohort is found
for the same code in the raw table.

The bundled data sets ship the labels of the R documentation of the packages survival and MASS (:func:`bundled`);
for an upload the user writes them on the Data page. Labels are for display only: no computation reads them, and
they never change the data or its fingerprint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from dpsurv_core.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

CATEGORICAL, NUMERIC = "categorical", "numeric"
KINDS = (CATEGORICAL, NUMERIC)
# a numeric column with at most this many distinct whole-number values is taken as categorical unless declared
MAX_CODES = 5


def code_key(value: object) -> str:
    """A code as the string the cohort compares and shows: stripped, integral floats without ``.0`` (``2.0`` ->
    ``"2"``, ``0.5`` -> ``"0.5"``, ``" F "`` -> ``"F"``); missing values as ``""``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        if value.is_integer() and abs(value) < 2**53:
            return str(int(value))
        return str(float(value))
    if not isinstance(value, (str, int)):  # pandas reads neither as missing: no import for them
        import pandas as pd

        try:
            if pd.isna(value):
                return ""
        except (TypeError, ValueError):
            pass
    text = str(value).strip()
    if text.endswith(".0") and text[:-2].lstrip("-").isdigit():
        text = text[:-2]
    return text


def code_keys(series: pd.Series) -> pd.Series:
    """:func:`code_key` of every value of ``series`` (missing values as ``""``), computed once per distinct value
    (``pd.factorize``) and spread back with an array take."""
    import pandas as pd

    codes, uniques = pd.factorize(series, use_na_sentinel=True)
    keys = np.array([code_key(u) for u in uniques] + [""], dtype=object)  # index -1 (missing) reads the last
    return pd.Series(keys[codes], index=series.index, dtype=object)


@dataclass(frozen=True)
class ValueLabels:
    """Per column: code -> label, a description and a kind (categorical/numeric). Immutable: the ``with_*`` methods
    return a new object. ``to_json``/``from_json`` give and take plain dicts (for the CLI and the session).

    Parameters
    ----------
    values : mapping of str to mapping of str to str, default {}
        Per column, code -> label (``{"sex": {"1": "Male", "2": "Female"}}``); codes are compared as text (``2.0`` is
        ``"2"``), blank labels are dropped.
    kinds : mapping of str to str, default {}
        Per column, "categorical" or "numeric" as declared; an undeclared column's kind is guessed.
    descriptions : mapping of str to str, default {}
        Per column, a one-line description.
    references : mapping of str to str, default {}
        Per categorical column, the code of its reference level.
    """

    values: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    kinds: Mapping[str, str] = field(default_factory=dict)
    descriptions: Mapping[str, str] = field(default_factory=dict)
    references: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for col, kind in self.kinds.items():
            if kind not in KINDS:
                raise DataError(f"Column {col!r} is marked {kind!r}: mark it {CATEGORICAL!r} or {NUMERIC!r}.")
        clean = {str(col): {code_key(k): str(v) for k, v in m.items() if str(v).strip()} for col, m in self.values.items()}
        object.__setattr__(self, "values", {c: m for c, m in clean.items() if m})
        object.__setattr__(self, "references", {str(c): code_key(r) for c, r in self.references.items()})

    # ------------------------------------------------------------------ reading
    def label(self, column: str | None, code: object) -> str:
        """The label of ``code`` in ``column``, or the code itself (as text) when it has none."""
        key = code_key(code)
        if column is None:
            return key
        return self.values.get(column, {}).get(key, key)

    def display(self, column: str | None, code: object) -> str:
        """``label (code)`` when the label differs from the code (``Male (1)``), else the code: for tables where the
        code must stay visible."""
        key, text = code_key(code), self.label(column, code)
        return key if text == key else f"{text} ({key})"

    def labels_for(self, column: str) -> dict[str, str]:
        """The code -> label mapping of ``column`` (empty when it has none)."""
        return dict(self.values.get(column, {}))

    def has_labels(self, column: str) -> bool:
        return bool(self.values.get(column))

    def describe(self, column: str) -> str:
        """The column's one-line description, or ''."""
        return self.descriptions.get(column, "")

    def kind(self, column: str, series: pd.Series | None = None) -> str:
        """``categorical`` or ``numeric``: as declared, else guessed from ``series`` (:func:`guess_kind`), else
        categorical when the column has labels and numeric otherwise."""
        if column in self.kinds:
            return self.kinds[column]
        if series is not None:
            return guess_kind(series)
        return CATEGORICAL if self.has_labels(column) else NUMERIC

    def is_categorical(self, column: str, series: pd.Series | None = None) -> bool:
        return self.kind(column, series) == CATEGORICAL

    def reference(self, column: str, codes: Iterable[object]) -> str:
        """The reference level of a categorical column among ``codes``: the declared one when present, else the
        first in natural order (numbers by value, then text), as R takes the first factor level."""
        keys = sorted({code_key(c) for c in codes} - {""}, key=_natural_key)
        if not keys:
            raise DataError(f"Column {column!r} has no values to choose a reference level from.")
        declared = self.references.get(column)
        return declared if declared in keys else keys[0]

    # ------------------------------------------------------------------ changing
    def with_labels(self, column: str, labels: Mapping[object, str]) -> ValueLabels:
        """A copy where ``column``'s codes are labelled by ``labels`` (empty labels are dropped; an empty mapping
        removes the column's labels)."""
        values = {c: dict(m) for c, m in self.values.items() if c != column}
        values[column] = {code_key(k): str(v).strip() for k, v in labels.items() if str(v).strip()}
        return replace(self, values=values)

    def with_kind(self, column: str, kind: str | None) -> ValueLabels:
        """A copy with ``column`` marked ``kind`` (None forgets the mark: guessed from the data again)."""
        kinds = {c: k for c, k in self.kinds.items() if c != column}
        if kind is not None:
            kinds[column] = kind
        return replace(self, kinds=kinds)

    def with_reference(self, column: str, code: object | None) -> ValueLabels:
        refs = {c: r for c, r in self.references.items() if c != column}
        if code is not None:
            refs[column] = code_key(code)
        return replace(self, references=refs)

    def merged(self, other: ValueLabels) -> ValueLabels:
        """``self`` overridden column by column by ``other`` (the user's labels over the bundled ones)."""
        values = {c: dict(m) for c, m in self.values.items()}
        values.update({c: dict(m) for c, m in other.values.items()})
        return ValueLabels(values, {**self.kinds, **other.kinds}, {**self.descriptions, **other.descriptions},
                           {**self.references, **other.references})

    # ------------------------------------------------------------------ display
    def relabel(self, frame: pd.DataFrame, columns: Iterable[str] | None = None) -> pd.DataFrame:
        """A display copy of ``frame`` where each labelled column (of ``columns``, default all) shows labels in place
        of codes; unlabelled codes and missing values are kept as they are. The input is not changed."""
        out = frame.copy()
        for col in (columns if columns is not None else list(frame.columns)):
            mapping = self.values.get(str(col))
            if col not in out.columns or not mapping:
                continue
            s = out[col]
            keys = code_keys(s)
            out[col] = keys.map(mapping).where(keys.isin(list(mapping)), s)
        return out

    # ------------------------------------------------------------------ JSON
    def to_json(self) -> dict:
        """A plain dict of strings (``json.dumps`` ready)."""
        return {"values": {c: dict(m) for c, m in self.values.items()}, "kinds": dict(self.kinds),
                "descriptions": dict(self.descriptions), "references": dict(self.references)}

    @classmethod
    def from_json(cls, data: Mapping | None) -> ValueLabels:
        """The inverse of :meth:`to_json`; a bad document raises :class:`DataError` with one sentence."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise DataError("Value labels must be a JSON object with 'values', 'kinds', 'descriptions' and 'references'.")
        try:
            return cls({str(c): dict(m) for c, m in dict(data.get("values") or {}).items()},
                       {str(c): str(k) for c, k in dict(data.get("kinds") or {}).items()},
                       {str(c): str(d) for c, d in dict(data.get("descriptions") or {}).items()},
                       {str(c): r for c, r in dict(data.get("references") or {}).items()})
        except (TypeError, ValueError, AttributeError):
            raise DataError("Value labels must map each column to an object of code: label pairs.") from None


def _natural_key(v: str):
    try:
        return (0, float(v), "")
    except ValueError:
        return (1, 0.0, v)


def guess_kind(series: pd.Series) -> str:
    """Categorical for text, true/false and numbers with at most :data:`MAX_CODES` distinct whole values (sex 1/2,
    ECOG 0-4, a 0/1 flag); numeric otherwise (age, a lab value, a score with many levels)."""
    import pandas as pd

    s = series.dropna()
    if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s):
        return CATEGORICAL
    if s.empty:
        return NUMERIC
    whole = bool(((s % 1) == 0).all())
    return CATEGORICAL if whole and s.nunique() <= MAX_CODES else NUMERIC


def _label_group(labels: ValueLabels | None, column: str | None, code: object) -> str:
    """The label of a group code (``labels`` may be None: the code itself)."""
    return code_key(code) if labels is None else labels.label(column, code)


def group_labels(labels: ValueLabels | None, column: str | None, codes: Iterable[object]) -> dict[str, str]:
    """``{code: label}`` for every code of ``codes``: the ``group_label`` the CLI JSON puts beside each code."""
    return {code_key(c): _label_group(labels, column, c) for c in codes}


# ---------------------------------------------------------------------- categorical covariates
def _is_number_text(text: str) -> bool:
    return _natural_key(text)[0] == 0  # it parses as a number


def category_name(labels: ValueLabels, column: str, code: str, text_column: bool) -> str:
    """The name a category of ``column`` goes by in a regression: its label (with the column in front when the label
    reads as a number: ``grade 3``); else, in a text column, the code itself; else the column and the code (``sex 2``).
    A numeric column's category is never a bare number, which the regression would read as a numeric value; a text
    column's unlabelled codes stay as they are, so a number column holding a stray word is still caught."""
    labelled = labels.labels_for(column)
    if code in labelled:
        return f"{column} {labelled[code]}" if _is_number_text(labelled[code]) else labelled[code]
    return code if text_column else f"{column} {code}"


@dataclass(frozen=True)
class Category:
    """The levels of one categorical covariate, the reference level first: ``codes`` as :func:`code_key` gives them,
    ``names`` the category name of each (:func:`category_name`). ``declared``: the labels name every code that
    occurs, so the levels are public; otherwise they were read off the data (a disclosure)."""

    column: str
    codes: tuple[str, ...]
    names: tuple[str, ...]
    declared: bool

    @property
    def reference(self) -> str:
        """The reference level's code."""
        return self.codes[0]

    @property
    def reference_name(self) -> str:
        """The reference level's name (its label, else ``column code``)."""
        return self.names[0]

    @property
    def indicator_names(self) -> tuple[str, ...]:
        """One name per non-reference level, as the regression names its coefficients: ``sex=Female``."""
        return tuple(f"{self.column}={n}" for n in self.names[1:])

    @property
    def display(self) -> dict[str, str]:
        """Indicator name -> the name a reader says: ``sex=Female`` -> ``sex: Female vs Male``."""
        return {i: f"{self.column}: {n} vs {self.reference_name}" for i, n in zip(self.indicator_names, self.names[1:],
                                                                                  strict=True)}

    def named(self, series: pd.Series) -> pd.Series:
        """``series`` with each code replaced by its category name (missing values stay missing)."""
        mapping = dict(zip(self.codes, self.names, strict=True))
        return code_keys(series).map(mapping).astype(object)

    def indicators(self, series: pd.Series) -> pd.DataFrame:
        """One 0/1 column per non-reference level (named :attr:`indicator_names`): 1 where the value is that level.
        A row at the reference level is all 0; a missing value is missing (NaN) in every column; a code not among the
        levels is all 0."""
        import pandas as pd

        keys = code_keys(series).to_numpy()
        out = (keys[:, None] == np.array(self.codes[1:], dtype=object)[None, :]).astype(float)
        out[keys == ""] = np.nan
        return pd.DataFrame(out, index=series.index, columns=list(self.indicator_names))

    def disclosure(self):
        """The disclosure of levels read off the data (None when the labels declare them); the sentence is the one
        :func:`dpsurv_core.regression.person_period.build_encoding` gives for text categories it reads itself."""
        from dpsurv_core.data.public import Disclosure

        if self.declared:
            return None
        return Disclosure(f"levels:{self.column}", f"The categories of {self.column!r} ({', '.join(self.names[:8])}) "
                                                   "were read off the data: declare them to avoid this disclosure.")


def categorical_levels(series: pd.Series, column: str, labels: ValueLabels | None = None,
                       reference: object | None = None) -> Category:
    """The levels of a categorical covariate (R's treatment contrasts): the codes that occur (missing values left out),
    in natural order (numbers by value, then text), the reference level first. The reference is ``reference`` (a code
    or its label), else the labels' declared one (:meth:`ValueLabels.reference`: declared on the Data page or shipped
    with a bundled data set), else the first code. Each level is named by :func:`category_name`. A labelled code
    that does not occur in the data has no level."""
    import pandas as pd

    labels = labels or ValueLabels()
    keys = code_keys(series)
    codes = sorted(set(keys) - {""}, key=_natural_key)
    if not codes:
        raise DataError(f"Covariate {column!r} has no values: remove it from the categorical covariates.")
    text_column = not (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series))
    names = {c: category_name(labels, column, c, text_column) for c in codes}
    if len(set(names.values())) < len(names):
        twice = next(n for n in names.values() if list(names.values()).count(n) > 1)
        raise DataError(f"Two values of column {column!r} are both named {twice!r}: give each value its own label.")
    if reference is None:
        ref = labels.reference(column, codes)
    else:
        wanted = str(reference).strip()
        by_name = {n: c for c, n in names.items()}
        ref = code_key(reference) if code_key(reference) in names else by_name.get(wanted, "")
        if not ref:
            shown = ", ".join(codes[:10])
            labelled = [names[c] for c in codes[:10] if c in labels.labels_for(column)]
            raise DataError(f"The reference level {wanted!r} is not a value of column {column!r}: choose one of "
                            f"{shown}" + (f" (or their labels: {', '.join(labelled)})." if labelled else "."))
    order = (ref, *[c for c in codes if c != ref])
    declared = set(codes) <= set(labels.labels_for(column))
    return Category(column, order, tuple(names[c] for c in order), declared)


def indicators(series: pd.Series, column: str, labels: ValueLabels | None = None,
               reference: object | None = None) -> tuple[pd.DataFrame, Category]:
    """A categorical covariate as 0/1 indicator columns against a reference level (:func:`categorical_levels`,
    :meth:`Category.indicators`): ``sex`` of lung gives one column ``sex=Female``, 1 for women and 0 for men."""
    category = categorical_levels(series, column, labels, reference)
    return category.indicators(series), category


@dataclass(frozen=True)
class Categories:
    """Categorical covariates as the regression takes them (:func:`encode_categories`)."""

    frame: pd.DataFrame  # the table with each categorical covariate as its category names (missing stays missing)
    columns: Mapping[str, Category] = field(default_factory=dict)

    @property
    def levels(self) -> dict[str, tuple[str, ...]]:
        """Column -> its category names, reference first: the ``levels`` the person-period encoding takes."""
        return {c: cat.names for c, cat in self.columns.items()}

    @property
    def references(self) -> dict[str, str]:
        """Column -> the reference level's name (``sex: Male``)."""
        return {c: cat.reference_name for c, cat in self.columns.items()}

    @property
    def reference_codes(self) -> dict[str, str]:
        """Column -> the reference level's code (``sex: 1``)."""
        return {c: cat.reference for c, cat in self.columns.items()}

    @property
    def names(self) -> dict[str, str]:
        """Indicator name -> the name a reader says (``sex=Female`` -> ``sex: Female vs Male``), every column."""
        return {k: v for cat in self.columns.values() for k, v in cat.display.items()}

    @property
    def disclosures(self) -> list:
        """One disclosure per column whose levels were read off the data (not every code labelled)."""
        return [d for d in (cat.disclosure() for cat in self.columns.values()) if d is not None]

    def option(self) -> str | None:
        """The CLI's ``--categorical`` value for these columns with their reference codes (``sex:1,ph.ecog:0``)."""
        return ",".join(f"{c}:{cat.reference}" for c, cat in self.columns.items()) or None


def categorical_columns(frame: pd.DataFrame, columns: Iterable[str], labels: ValueLabels) -> list[str]:
    """The columns of ``columns`` that ``labels`` call categorical (declared, else guessed from the values)."""
    return [c for c in columns if labels.is_categorical(c, frame[c])]


def encode_categories(frame: pd.DataFrame, references: Mapping[str, object | None], labels: ValueLabels | None = None
                      ) -> Categories:
    """Each column of ``references`` as its category names (:func:`categorical_levels`, its value the reference level:
    a code, a label or None for the default), ready for the person-period encoding, which makes one 0/1 indicator per
    non-reference level (``sex=Female``). The input is not changed. The levels always go to the encoding, reference
    first; where the labels do not name every code, they were read off the data and :attr:`Categories.disclosures`
    says so."""
    out = frame.copy()
    cols: dict[str, Category] = {}
    for col, ref in references.items():
        if col not in frame.columns:
            raise DataError(f"There is no column {col!r} to treat as categorical: choose among "
                            f"{', '.join(map(str, frame.columns[:12]))}.")
        cols[col] = categorical_levels(frame[col], col, labels, ref)
        out[col] = cols[col].named(frame[col])
    return Categories(out, cols)


# ---------------------------------------------------------------------- the bundled data sets
# From the R documentation (help pages) of the packages survival (Therneau) and MASS (Venables and Ripley); codes as
# in dpsurv's CSVs (lung's status is recoded 0/1 in the CSV, so its labels follow the CSV, not R's 1/2).
_STATUS = {"0": "Censored", "1": "Dead"}
_SEX_12 = {"1": "Male", "2": "Female"}
_SEX_FM = {"F": "Female", "M": "Male"}
_SEX_fm = {"f": "Female", "m": "Male"}

_BUNDLED: dict[str, dict] = {
    "lung": {
        "values": {
            "status": _STATUS, "sex": _SEX_12,
            "ph.ecog": {"0": "ECOG 0: asymptomatic", "1": "ECOG 1: symptomatic, fully ambulatory",
                        "2": "ECOG 2: in bed < 50% of the day", "3": "ECOG 3: in bed > 50% of the day, not bedbound",
                        "4": "ECOG 4: bedbound"},
        },
        "kinds": {"inst": CATEGORICAL, "sex": CATEGORICAL, "ph.ecog": CATEGORICAL, "age": NUMERIC,
                  "ph.karno": NUMERIC, "pat.karno": NUMERIC, "meal.cal": NUMERIC, "wt.loss": NUMERIC},
        "descriptions": {"inst": "Institution code", "time": "Survival time in days", "status": "Censoring status",
                         "age": "Age in years", "sex": "Sex",
                         "ph.ecog": "ECOG performance score as rated by the physician",
                         "ph.karno": "Karnofsky performance score (bad = 0, good = 100) rated by the physician",
                         "pat.karno": "Karnofsky performance score as rated by the patient",
                         "meal.cal": "Calories consumed at meals", "wt.loss": "Weight loss in the last six months (pounds)"},
    },
    "kidney": {
        "values": {"status": {"0": "Censored", "1": "Infection"}, "sex": _SEX_12,
                   "disease": {"GN": "Glomerulonephritis (GN)", "AN": "Acute nephritis (AN)",
                               "PKD": "Polycystic kidney disease (PKD)", "Other": "Other"}},
        "kinds": {"sex": CATEGORICAL, "disease": CATEGORICAL, "age": NUMERIC, "frail": NUMERIC},
        "references": {"disease": "GN"},
        "descriptions": {"id": "Patient", "time": "Time to infection at the catheter insertion point (days)",
                         "status": "Event status", "age": "Age in years", "sex": "Sex", "disease": "Disease type",
                         "frail": "Frailty estimate from the original paper"},
    },
    "leukemia": {
        "values": {"status": {"0": "Censored", "1": "Relapse"},
                   "x": {"Maintained": "Maintained", "Nonmaintained": "Not maintained"}},
        "kinds": {"x": CATEGORICAL},
        "descriptions": {"time": "Survival or censoring time (weeks)", "status": "Censoring status",
                         "x": "Maintenance chemotherapy given?"},
    },
    "gehan": {
        "values": {"cens": {"0": "Censored", "1": "Relapse"}, "treat": {"6-MP": "6-MP", "control": "Control"}},
        "kinds": {"treat": CATEGORICAL, "pair": CATEGORICAL},
        "references": {"treat": "control"},
        "descriptions": {"pair": "Label for the matched pair", "time": "Remission time in weeks",
                         "cens": "Censoring, 0/1", "treat": "Treatment: control or 6-MP (6-mercaptopurine)"},
    },
    "mgus2": {
        "values": {"sex": _SEX_FM, "pstat": {"0": "No progression", "1": "Progression"},
                   "death": {"0": "Alive", "1": "Dead"}},
        "kinds": {"sex": CATEGORICAL, "age": NUMERIC, "hgb": NUMERIC, "creat": NUMERIC, "mspike": NUMERIC},
        "descriptions": {"id": "Subject identifier", "age": "Age at diagnosis, in years", "sex": "Sex",
                         "dxyr": "Year of diagnosis", "hgb": "Haemoglobin", "creat": "Creatinine",
                         "mspike": "Size of the monoclonal serum spike", "ptime": "Time until progression to a plasma "
                         "cell malignancy or last contact, in months", "pstat": "Occurrence of progression",
                         "futime": "Time until death or last contact, in months", "death": "Occurrence of death"},
    },
    "myeloid": {
        "values": {"trt": {"A": "Arm A", "B": "Arm B"}, "sex": _SEX_fm,
                   "flt3": {"A": "FLT3 level A (least severe)", "B": "FLT3 level B", "C": "FLT3 level C (most severe)"},
                   "death": {"0": "Censored", "1": "Dead"}},
        "kinds": {"trt": CATEGORICAL, "sex": CATEGORICAL, "flt3": CATEGORICAL},
        "descriptions": {"id": "Subject identifier", "trt": "Treatment arm A or B", "sex": "Sex",
                         "flt3": "Mutations of the FLT3 gene (levels A, B, C of increasing mutation burden)",
                         "futime": "Time to death or last follow-up", "death": "1 if futime is a death, 0 for censoring",
                         "txtime": "Time to haematopoietic stem cell transplant", "crtime": "Time to complete response",
                         "rltime": "Time to relapse of disease"},
    },
    "ovarian": {
        "values": {"fustat": {"0": "Censored", "1": "Dead"},
                   "resid.ds": {"1": "No residual disease", "2": "Residual disease"},
                   "rx": {"1": "Treatment group 1", "2": "Treatment group 2"},
                   "ecog.ps": {"1": "ECOG 1 (better)", "2": "ECOG 2"}},
        "kinds": {"resid.ds": CATEGORICAL, "rx": CATEGORICAL, "ecog.ps": CATEGORICAL, "age": NUMERIC},
        "descriptions": {"futime": "Survival or censoring time", "fustat": "Censoring status", "age": "In years",
                         "resid.ds": "Residual disease present", "rx": "Treatment group",
                         "ecog.ps": "ECOG performance status (1 is better)"},
    },
    "stanford2": {
        "values": {"status": {"0": "Alive", "1": "Dead"}},
        "kinds": {"age": NUMERIC, "t5": NUMERIC},
        "descriptions": {"id": "Patient id", "time": "Survival or censoring time", "status": "Censoring status",
                         "age": "In years", "t5": "T5 mismatch score"},
    },
    "veteran": {
        "values": {"trt": {"1": "Standard", "2": "Test"},
                   "celltype": {"squamous": "Squamous", "smallcell": "Small cell", "adeno": "Adenocarcinoma",
                                "large": "Large cell"},
                   "status": {"0": "Censored", "1": "Dead"}, "prior": {"0": "No prior therapy", "10": "Prior therapy"}},
        "kinds": {"trt": CATEGORICAL, "celltype": CATEGORICAL, "prior": CATEGORICAL, "karno": NUMERIC,
                  "diagtime": NUMERIC, "age": NUMERIC},
        "references": {"celltype": "squamous"},
        "descriptions": {"trt": "1 = standard, 2 = test", "celltype": "Cell type", "time": "Survival time",
                         "status": "Censoring status", "karno": "Karnofsky performance score (100 = good)",
                         "diagtime": "Months from diagnosis to randomisation", "age": "In years",
                         "prior": "Prior therapy (0 = no, 10 = yes)"},
    },
    "pbc": {
        "values": {"status": {"0": "Censored", "1": "Transplant", "2": "Dead"},
                   "trt": {"1": "D-penicillamine", "2": "Placebo"}, "sex": _SEX_fm,
                   "ascites": {"0": "No ascites", "1": "Ascites"}, "hepato": {"0": "No hepatomegaly", "1": "Hepatomegaly"},
                   "spiders": {"0": "No spiders", "1": "Spiders"},
                   "edema": {"0": "No edema", "0.5": "Edema, untreated or successfully treated",
                             "1": "Edema despite diuretic therapy"},
                   "stage": {"1": "Stage 1", "2": "Stage 2", "3": "Stage 3", "4": "Stage 4"}},
        "kinds": {"trt": CATEGORICAL, "sex": CATEGORICAL, "ascites": CATEGORICAL, "hepato": CATEGORICAL,
                  "spiders": CATEGORICAL, "edema": CATEGORICAL, "stage": CATEGORICAL, "age": NUMERIC, "bili": NUMERIC,
                  "albumin": NUMERIC, "protime": NUMERIC},
        "descriptions": {"id": "Case number", "time": "Days between registration and the earlier of death, "
                         "transplantation, or study analysis in July 1986",
                         "status": "Status at endpoint: censored, transplant, dead",
                         "trt": "D-penicillamine, placebo, or missing when not randomised", "age": "In years",
                         "sex": "Sex", "ascites": "Presence of ascites", "hepato": "Presence of hepatomegaly (enlarged liver)",
                         "spiders": "Blood vessel malformations in the skin", "edema": "Edema",
                         "bili": "Serum bilirubin (mg/dl)", "chol": "Serum cholesterol (mg/dl)",
                         "albumin": "Serum albumin (g/dl)", "copper": "Urine copper (ug/day)",
                         "alk.phos": "Alkaline phosphatase (U/liter)", "ast": "Aspartate aminotransferase (U/ml)",
                         "trig": "Triglycerides (mg/dl)", "platelet": "Platelet count",
                         "protime": "Standardised blood clotting time", "stage": "Histologic stage of disease"},
    },
    "transplant": {
        "values": {"sex": _SEX_fm, "abo": {"A": "Blood type A", "B": "Blood type B", "AB": "Blood type AB",
                                           "O": "Blood type O"},
                   "event": {"censored": "Censored", "death": "Death", "ltx": "Liver transplant",
                             "withdraw": "Withdrew from the list"}},
        "kinds": {"sex": CATEGORICAL, "abo": CATEGORICAL, "age": NUMERIC, "year": NUMERIC},
        "references": {"abo": "O"},
        "descriptions": {"age": "Age at addition to the waiting list", "sex": "Sex", "abo": "Blood type",
                         "year": "Year that the subject was added to the waiting list",
                         "futime": "Time from entry to final disposition", "event": "Final disposition"},
    },
    "flchain": {
        "values": {"sex": _SEX_FM, "mgus": {"0": "No MGUS", "1": "MGUS"}, "death": {"0": "Alive", "1": "Dead"},
                   "flc.grp": {str(k): f"FLC group {k}" for k in range(1, 11)}},
        "kinds": {"sex": CATEGORICAL, "mgus": CATEGORICAL, "flc.grp": CATEGORICAL, "age": NUMERIC, "kappa": NUMERIC,
                  "lambda": NUMERIC, "creatinine": NUMERIC},
        "descriptions": {"age": "Age in years", "sex": "Sex", "sample.yr": "The calendar year in which a blood sample "
                         "was obtained", "kappa": "Serum free light chain, kappa portion",
                         "lambda": "Serum free light chain, lambda portion",
                         "flc.grp": "The FLC group of the subject, as used in the original analysis",
                         "creatinine": "Serum creatinine", "mgus": "1 if the subject had been diagnosed with "
                         "monoclonal gammopathy (MGUS)", "futime": "Days from enrolment until death",
                         "death": "0 = alive at last contact, 1 = dead",
                         "chapter": "For those who died, the chapter heading of the ICD-9 code of the primary cause"},
    },
}


def bundled(name: str) -> ValueLabels:
    """The R documentation's labels of a bundled data set (an empty :class:`ValueLabels` for an unknown name)."""
    return ValueLabels.from_json(_BUNDLED.get(name))


def bundled_names() -> list[str]:
    """The bundled data sets that ship labels."""
    return list(_BUNDLED)
