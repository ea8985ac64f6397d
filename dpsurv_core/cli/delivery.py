"""Nothing charged that is not delivered: a command that releases and then writes files.

Its outputs are reserved before the release (:class:`~dpsurv_core.report.files.Outputs`: each a temporary file made in
its folder), so an output that cannot be written is refused while nothing is recorded. Should anything still fail
after the charge (rendering, printing the PDF, the disk filling up), :func:`delivering` turns the failure into one
sentence saying that the release was recorded, under which record, and how to get its report without a new charge.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dpsurv_core.errors import DpsurvError, ParameterError


class NotDelivered(ParameterError):
    """A release was recorded (and charged) but its output files were not all written."""

    def __init__(self, message: str, record_id: Any):
        super().__init__(message)
        self.record_id = record_id


def _reason(exc: BaseException) -> str:
    """What went wrong, as a clause on one line."""
    if isinstance(exc, OSError) and not isinstance(exc, DpsurvError):
        where = f" {exc.filename!r}" if getattr(exc, "filename", None) else ""
        text = f"cannot write{where}: {exc.strerror or exc}"
    elif isinstance(exc, DpsurvError):
        text = str(exc)
    else:
        text = f"{type(exc).__name__}: {exc}"
    return " ".join(text.split()).rstrip(".")


def not_delivered_sentence(record_id: Any, data: str | None, exc: BaseException) -> str:
    """One sentence: the release was recorded as ``record_id`` but its output failed; do not rerun, re-render it."""
    lists = f"`python -m dpsurv_core budget show --data {shlex.quote(data)}` lists it" if data else \
        "`python -m dpsurv_core budget show --data D` lists it"
    return (f"The release was recorded and charged as ledger record {record_id}, but its output was not delivered "
            f"({_reason(exc)}); do not run this command again, which would charge a second time: open the Ledger and "
            f"report page on this data set, which rebuilds the report and exports of record {record_id} from the "
            f"ledger without a new charge ({lists}).")


class Charge:
    """Set by the command once its release is recorded: from then on a failure is reported as not delivered."""

    def __init__(self) -> None:
        self.record_id: Any = None

    def recorded(self, fields: dict[str, Any]) -> None:
        """Note the record a release's JSON fields name (a simulation or a non-private run names none)."""
        self.record_id = fields.get("record_id")


@contextmanager
def delivering(data: str | None) -> Iterator[Charge]:
    """Run a release-and-write: any exception after :meth:`Charge.recorded` names a record becomes :class:`NotDelivered`
    (exit 2, one sentence); before that, exceptions pass as they are (nothing was recorded)."""
    charge = Charge()
    try:
        yield charge
    except NotDelivered:
        raise
    except Exception as exc:
        if charge.record_id is None:
            raise
        raise NotDelivered(not_delivered_sentence(charge.record_id, data, exc), charge.record_id) from exc
