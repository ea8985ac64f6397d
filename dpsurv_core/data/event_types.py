"""Competing-event types: declared from the study design, or read off the data (then disclosed, and refused).

A competing-risks release publishes its event types: which codes of the type column are events, how many there are
and their names (the released counts have one cell per type). Read off the data, they depend on the subjects (the
only patient with a rare event type adds a type, and removing them removes it), so they are a public value like the
group categories: declared (``--event-types A=Relapse,B=Death``, the Data page's box, or a bundled data set's
documented codes) or read off the data, disclosed as ``event-types`` and refused before any noise unless the person
accepts it (:mod:`dpsurv_core.publication.declared`).

Declared types are exhaustive: a row of the type column whose code is neither a declared type nor a censoring code is
an error for the data holder (:func:`undeclared_problem`, confidential: it counts rows), never a new type, never
silently censored and never dropped, since either would bias every curve of the cohort. Codes match as the event
column's do (trimmed, case-insensitive, ``2.0`` as ``2``), and by number (``1.0`` declared names the code 1).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from dpsurv_core.data.categories import lookup
from dpsurv_core.errors import ParameterError

# the censoring codes of a type column when none are declared (ColumnMap.type_censor_codes)
DEFAULT_CENSOR_CODES: tuple = (0, "0", "censored")
NAME = "event-types"


def normal(code: object) -> str:
    """A code as the type column's values are compared: text, trimmed, a trailing ``.0`` dropped."""
    text = str(code).strip()
    return text[:-2] if text.endswith(".0") else text


def parse(text: str | None, option: str = "--event-types") -> tuple[tuple[str, str], ...]:
    """``A,B`` or ``A=Relapse,B=Death`` (a name is optional: the code names itself): the declared (code, name) pairs
    in the order given; blank gives (). A code given twice, or an empty code or name, is one sentence."""
    if text is None or not str(text).strip():
        return ()
    out: dict[str, str] = {}
    for part in str(text).split(","):
        if not part.strip():
            continue
        code, sep, name = part.partition("=")
        code, name = normal(code), name.strip()
        if not code or (sep and not name):
            raise ParameterError(f"{option} {text!r} is not CODE[=NAME],CODE[=NAME] (the codes of the study design's "
                                 "event types, each with an optional name, for example 1=Relapse,2=Death).")
        if code.lower() in {c.lower() for c in out}:
            raise ParameterError(f"{option} names the code {code!r} twice: give each event type once.")
        out[code] = name or code
    return tuple(out.items())


def text(pairs: Iterable[tuple[str, str]]) -> str:
    """The declaration ``pairs`` as :func:`parse` reads it (``A=Relapse,B``: a name equal to its code is left out)."""
    return ",".join(code if name == code else f"{code}={name}" for code, name in pairs)


def ordered(pairs: Sequence[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Declared (code, name) pairs in the order the release counts them: the order declared (as R orders a factor's
    levels), codes normalised (:func:`normal`)."""
    return tuple((normal(c), str(n)) for c, n in pairs)


def censor_clash(pairs: Sequence[tuple[str, str]], censor_codes: Iterable[Any]) -> list[str]:
    """The declared event-type codes that are also censoring codes (a declaration that contradicts itself)."""
    censor = {normal(c).lower() for c in censor_codes}
    return [code for code, _ in pairs if normal(code).lower() in censor]


def match(pairs: Sequence[tuple[str, str]], observed: Iterable[str]) -> dict[str, int]:
    """Each observed (normalised) code that names a declared type -> the type's index in ``pairs``: the same text up
    to case, else the same number; codes naming none are left out."""
    observed = list(observed)
    by_lower = lookup([normal(c).lower() for c, _ in pairs], [o.lower() for o in observed])
    return {o: by_lower[o.lower()] for o in observed if o.lower() in by_lower}


def listed(codes: Iterable[Any]) -> str:
    """Codes as a list in a sentence, each once (``0`` and ``0.0`` are one code)."""
    seen: dict[str, None] = {}
    for c in codes:
        seen.setdefault(normal(c), None)
    return ", ".join(seen) or "none"


def unlisted_text(column: str, counts: Sequence[tuple[str, int]], event_codes: Iterable[Any],
                  censor_codes: Iterable[Any], event_option: str = "--event-codes",
                  censor_option: str = "--censor-codes", what: str = "an event code",
                  where: str = "the event codes") -> str:
    """The data holder's sentence (confidential: it counts rows) for values of ``column`` that are in neither the
    declared event codes nor the censoring codes, each with its number of rows: such rows are refused, never
    counted as censored, left out or made a new event type (either would bias every curve)."""
    shown = [f"{str(code)!r} ({n} row{'' if n == 1 else 's'})" for code, n in list(counts)[:5]]
    more = f" and {len(counts) - 5} more value(s)" if len(counts) > 5 else ""
    values = (", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]) + more
    one = len(counts) == 1
    return (f"The column {column!r} holds {values}, which {'is' if one else 'are'} neither {what} "
            f"({listed(event_codes)}) nor a censoring code ({listed(censor_codes)}): add "
            f"{'it' if one else 'them'} to the censoring codes ({censor_option}) or to {where} ({event_option}), "
            "or fix those rows; nothing is analysed until then.")


def undeclared_problem_text(column: str, counts: Sequence[tuple[str, int]], declared: Iterable[Any],
                            censor_codes: Iterable[Any]) -> str:
    """:func:`unlisted_text` for a type column's codes that are neither a declared event type nor a censoring code
    (``--event-types`` and ``--type-censor-codes``)."""
    return unlisted_text(column, counts, declared, censor_codes, "--event-types", "--type-censor-codes",
                         "a declared event type", "the declared event types")


def value_counts(values: Any, mask: Any) -> list[tuple[str, int]]:
    """(value, rows) of the pandas Series ``values`` where ``mask`` holds, in the codes' natural order."""
    from dpsurv_core.data.cohort import _natural_key

    counts = values[mask].value_counts()
    return sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda kv: _natural_key(kv[0]))


def declared(cohort: Any) -> bool:
    """Whether ``cohort``'s event types were declared (its column map names them), not read off the data."""
    mapping = getattr(cohort, "mapping", None)
    return bool(mapping is not None and mapping.event_type and mapping.event_type_names)


def has_types(cohort: Any) -> bool:
    """Whether ``cohort`` has an event-type column (in memory or kept in an engine)."""
    flag = getattr(cohort, "has_event_type", None)
    return bool(flag) if flag is not None else getattr(cohort, "event_type", None) is not None


def _pairs_of(cohort: Any) -> tuple[tuple[str, str], ...]:
    """The (code, name) of each of ``cohort``'s event types in the release's order: the declared ones, else the codes
    read off the data (each its own name)."""
    if declared(cohort):
        return ordered(cohort.mapping.event_type_names)
    return tuple((str(t), str(t)) for t in getattr(cohort, "event_type_labels", ()) or ())


def disclosures(cohort: Any) -> list[Any]:
    """The ``event-types`` disclosure of a competing-risks release of ``cohort`` when its types were read off the
    data (none when declared, or when it has no type column)."""
    from dpsurv_core.data.public import Disclosure

    if not has_types(cohort) or declared(cohort):
        return []
    codes = ", ".join(str(t) for t in getattr(cohort, "event_type_labels", ()) or ())
    return [Disclosure(NAME, f"The competing-event types ({codes or 'none'}) were read off the data: declare them "
                             "from the study design to avoid disclosing which event types occur.")]


def public_inputs(cohort: Any) -> dict[str, Any]:
    """What a competing-risks record keeps of the event types among its public inputs: each type's code and name
    (declared, or accepted as read off the data) and whether they were read off the data."""
    return {"event_types": [{"code": c, "name": n} for c, n in _pairs_of(cohort)],
            "event_types_from_data": not declared(cohort)}
