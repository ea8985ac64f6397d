"""Declared or refused: a release reads no public value off the data unless a person named it.

Every public value a mechanism uses (the grid and horizon, group categories and covariate levels, covariate ranges,
the number of subjects, the censoring share, the number of sample-and-aggregate blocks, a group cut, the
competing-event types of a cumulative incidence) is either
declared by the data holder or read off the data. A value read off the data depends on the subjects (one late
subject moves the horizon, one more subject moves n), so publishing it, or calibrating noise or intervals with it,
is outside the epsilon charged. By default such a release is refused before any noise is drawn, with one sentence
naming each value and the option that declares it. ``--accept-disclosure NAME`` (or the app's checkbox) publishes
the value anyway: the record then says "not DP as run: NAME read off the data", and the data set's ledger no longer
claims to protect the subject.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from dpsurv_core.errors import ParameterError

# value name -> (what it is, the option that declares it)
DECLARE: dict[str, tuple[str, str]] = {
    "horizon": ("the horizon", "--horizon T"),
    "grid": ("the time grid", "--grid START:STOP:BINS"),
    "categories": ("the group categories", "--categories COL:A,B"),
    "levels": ("the categories of a covariate", "--categories COL:A,B"),
    "range": ("a covariate's range", "--range COL:LO:HI"),
    "n": ("the number of subjects", "--n-public N"),
    "censoring": ("the censoring share", "--censoring SHARE"),
    "blocks": ("the number of blocks", "--blocks M"),
    "cut": ("the group cut", "--group COL:VALUE"),
    "event-types": ("the competing-event types", "--event-types A,B"),
}


class UndeclaredValueError(ParameterError):
    """A release would read public values off the data; nothing was drawn or recorded."""

    def __init__(self, values: Sequence[Undeclared]) -> None:
        self.values = list(values)
        parts = [f"{v.what} ({v.name}: declare it with {v.option})" for v in self.values]
        names = ",".join(dict.fromkeys(v.name for v in self.values))
        super().__init__(f"This release would read {'; '.join(parts)} off the data, which epsilon does not cover, so "
                         f"nothing was drawn or charged: declare {'it' if len(parts) == 1 else 'each'} from the study "
                         f"design, or publish {'it' if len(parts) == 1 else 'them'} anyway with --accept-disclosure "
                         f"{names} (the release is then not DP as run).")


@dataclass(frozen=True)
class Undeclared:
    """One public value read off the data: its ``name`` (``horizon``, ``range:age``), what it is and its option."""

    name: str
    what: str
    option: str


def _as_dict(d: Any) -> dict[str, Any]:
    return d if isinstance(d, dict) else d.to_dict()


def _value_name(disclosure: Any) -> str | None:
    """The name of the public value a disclosure says was read off the data, or None when the disclosure is about
    the mechanism itself (a label-only or not-private release, merged bins chosen with DP)."""
    d = _as_dict(disclosure)
    parameter = str(d.get("parameter", ""))
    head, _, col = parameter.partition(":")
    if head == "groups":
        return "categories"
    if head in ("range", "levels", "cut") and col:
        return f"{head}:{col}"
    if head in DECLARE and head not in ("range", "levels", "cut"):
        return head
    return None


def undeclared(disclosures: Iterable[Any]) -> list[Undeclared]:
    """The public values these disclosures read off the data, once each, in order.

    Parameters
    ----------
    disclosures : iterable
        The release's disclosures.

    Returns
    -------
    list of Undeclared
        The values read off the data.
    """
    out: dict[str, Undeclared] = {}
    for d in disclosures:
        name = _value_name(d)
        if name is None or name in out:
            continue
        head, _, col = name.partition(":")
        what, option = DECLARE[head]
        if col:
            what = f"{what} {col!r}"
            option = option.replace("COL", col)
        out[name] = Undeclared(name, what, option)
    return list(out.values())


def accepted(name: str, accept: Iterable[str]) -> bool:
    """``name`` (``range:age``) is among the accepted names (``range:age``, or ``range`` for every range)."""
    accept = set(accept)
    return name in accept or name.partition(":")[0] in accept


def enforce(disclosures: Sequence[Any], accept: Iterable[str] = ()) -> list[dict[str, Any]]:
    """The disclosures a release may be recorded with: refuse (:class:`UndeclaredValueError`) when a value read off
    the data was not accepted; each accepted one becomes a not-DP disclosure that names the value and no count (the
    message that made it may count rows: it stays outside the record).

    Parameters
    ----------
    disclosures : sequence
        The release's disclosures (:class:`~dpsurv_core.data.public.Disclosure` or their dicts).
    accept : iterable of str, default ()
        The values the person accepted as read off the data (``--accept-disclosure``).

    Returns
    -------
    list of dict
        The disclosures as recorded.

    Raises
    ------
    UndeclaredValueError
        When a value read off the data was not accepted.
    """
    accept = list(accept)
    missing = [u for u in undeclared(disclosures) if not accepted(u.name, accept)]
    if missing:
        raise UndeclaredValueError(missing)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for d in disclosures:
        name = _value_name(d)
        if name is None:
            out.append(dict(_as_dict(d)))
            continue
        if name in seen:
            continue
        seen.add(name)
        out.append({"parameter": name, "dp": False,
                    "message": f"not DP: {name} read off the data, published as read (accepted by the data "
                               f"holder with --accept-disclosure {name})"})
    return out


def parse_accept(text: str | None) -> tuple[str, ...]:
    """``--accept-disclosure NAME[,NAME]``: the names, checked against the values dpsurv knows."""
    if not text:
        return ()
    names = tuple(s.strip() for s in text.split(",") if s.strip())
    for n in names:
        head = n.partition(":")[0]
        if head not in DECLARE:
            raise ParameterError(f"--accept-disclosure {n!r} names no public value: use one or more of "
                                 f"{', '.join(DECLARE)} (range:COL, levels:COL and cut:COL for one column).")
    return names
