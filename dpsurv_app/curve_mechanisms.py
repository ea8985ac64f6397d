"""The curve mechanisms the pages offer, read from the catalogue (choices, names, what each releases), and what a
table kept on the server (in an engine) can have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeGuard

from dpsurv_app import session
from dpsurv_core.data.cohort import Cohort
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.catalogue import Entry
from dpsurv_core.privacy.ledger import GROUP_LABEL

if TYPE_CHECKING:  # a value type only: the engines are imported when a server table is opened
    from dpsurv_core.engines.cohort import EngineCohort


# ----------------------------------------------------------------------------------------- mechanisms (catalogue)
def mechanism_choices(command: str = "km", has_group: bool = True) -> list[str]:
    """The catalogue's private curve mechanisms for ``command`` (``km`` or ``logrank``), in its order; a mechanism
    that randomizes the group label only when there are groups."""
    return [e.id for e in catalogue.entries(catalogue.CURVES, command, private=True)
            if has_group or e.protects != GROUP_LABEL]


def mechanism_entry(mechanism_id: str) -> Entry:
    return catalogue.get(catalogue.CURVES, mechanism_id)


def mechanism_name(mechanism_id: str) -> str:
    return mechanism_entry(mechanism_id).name


def releases_counts(entry: Entry) -> bool:
    """Whether the mechanism publishes counts (numbers at risk, events): the log-rank command serves exactly those."""
    return "logrank" in entry.commands


def label_only(entry: Entry) -> bool:
    """Whether the mechanism protects the group label only (it randomizes labels, so it needs groups)."""
    return entry.protects == GROUP_LABEL


def without_counts(command: str = "km") -> list[str]:
    """Names of the mechanisms of ``command`` that publish no counts (so no log-rank test)."""
    return [e.name for e in catalogue.entries(catalogue.CURVES, command, private=True) if not releases_counts(e)]


def in_engine(cohort: Cohort) -> TypeGuard[EngineCohort]:
    """Whether the cohort is a server table kept in an engine (:class:`dpsurv_core.engines.EngineCohort`): its
    statistics are queries, and reading its rows is refused past the app's row limit."""
    return hasattr(cohort, "binned_counts")


def has_groups(cohort: Cohort) -> bool:
    """Whether the cohort has a group column (a cohort kept in an engine says so without reading its rows)."""
    return bool(cohort.has_group) if in_engine(cohort) else cohort.group is not None


ENGINE_BASELINE = ("Non-private curves for a table kept on the server: the exact Kaplan-Meier computed from the "
                   "counts DuckDB returns at every distinct event time (no row is read into the app). It is the same "
                   "estimator, to the same numbers, as lifelines and R survival on the rows: the engines' tests show "
                   "the counts are identical.")


def engine_note(left_out: Sequence[str]) -> str:
    """What a counting page says first about a server table kept in the engine: the mechanisms it leaves out, in the
    row limit's sentence (:func:`dpsurv_app.session.too_large_sentence`), else that the table stays on the server."""
    if not left_out:
        return "This table is kept on the server (DuckDB): every mechanism here runs from its counts."
    names = ", ".join(left_out[:-1]) + (" and " if len(left_out) > 1 else "") + left_out[-1]
    return (session.too_large_sentence(session.data_choice(), names, plural=len(left_out) > 1)
            + " They are not offered here; the others run from the counts DuckDB computes in the file.")


def engine_mechanisms(names: Sequence[str], family: str = catalogue.CURVES) -> tuple[list[str], list[str]]:
    """``names`` split into the mechanisms that run from an engine's counts (catalogue column ``engines``) and the
    names of those that read each subject's values."""
    runs = [n for n in names if "duckdb" in catalogue.get(family, n).engines]
    return runs, [catalogue.get(family, n).name for n in names if n not in runs]
