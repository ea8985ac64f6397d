"""What the Ledger and report page files beside the ledger: audits of this session, and each release's reproduce
scripts.

Releases themselves live in the persistent ledger (``session.store()``), with the numbers they published; audits are
simulations, never releases, so they are kept in this session's memory only (``st.session_state``) for the review
report. Nothing here is written to disk.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import streamlit as st

from dpsurv_core.privacy.ledger import LedgerEntry, Record, charged_sentence, entry_from_body
from dpsurv_core.report.html import AuditItem

NO_COMMAND = ("This release recorded no command line (it was made before releases kept one), so it cannot be run "
              "again from here; its published numbers are in the ledger record.")


MAX_AUDITS = 12  # audits kept for the review (the oldest dropped): a session's few epsilons and mechanisms


def store_audit(title: str, summary: dict[str, Any], figures: list[Any] | None = None, *,
                tables: Sequence[Any] = (), texts: Sequence[str] = (), mechanisms: Sequence[str] = (),
                epsilon: float | None = None, analysis: str = "") -> None:
    """Keep the latest audit of a given title for the review report (audits are simulations, never releases). The
    ``mechanisms`` audited at ``epsilon`` tie it to the releases: a title that names its epsilon keeps an audit at
    the released epsilon beside a later one at another, and the review shows the one at the epsilon released, or says
    plainly that the audit shown ran at another (:func:`dpsurv_core.report.stored.chosen_audits`)."""
    kept = [a for a in st.session_state.get("stored_audits", []) if a.title != title]
    item = AuditItem(title, summary, list(figures or []), list(tables), list(texts), tuple(mechanisms), epsilon,
                     analysis)
    st.session_state["stored_audits"] = (kept + [item])[-MAX_AUDITS:]


def audits() -> list[AuditItem]:
    return list(st.session_state.get("stored_audits", []))


# ------------------------------------------------------------------------------------------- reproduce scripts

def _about(record: Record) -> tuple[LedgerEntry, str]:
    e = entry_from_body(record.body, record.id, record.time)
    return e, (f"dpsurv release {record.id}: {e.analysis} with {e.mechanism} on {e.dataset}, recorded "
               f"{record.time.replace('T', ' ')[:19]} UTC; {charged_sentence(e.cost, e.disclosures)}")


def reproduce_shell(record: Record) -> str:
    """A shell script that runs the record's command line again: a new release with fresh noise, charged again."""
    e, about = _about(record)
    lines = ["#!/bin/sh", f"# {about}",
             "# Running this makes a NEW release: fresh noise, charged again to the data set's budget, with a new",
             "# record id. Its numbers will differ from the recorded ones, which stay in the ledger record.",
             f"# Check the budget first: python -m dpsurv_core budget show --data {shlex.quote(e.dataset)} --json"]
    if e.command:
        lines += ["set -e", e.command]
    else:
        lines += [f"# {NO_COMMAND}", "exit 1"]
    return "\n".join(lines) + "\n"


def reproduce_python(record: Record, ledger_path: str | Path | None = None) -> str:
    """A short Python script: read the record's published numbers from the ledger, and (commented out) run its
    command line again as a new, charged release."""
    e, about = _about(record)
    path = repr(str(ledger_path)) if ledger_path else ""
    lines = [f'"""{about}."""', "", "import json", "import shlex", "import subprocess", "import sys", "",
             "from dpsurv_core.privacy.ledger import LedgerStore", "",
             f"store = LedgerStore({path})  # the ledger database (default: $DPSURV_LEDGER or the user's ledger)",
             f"record = next(r for r in store.records({record.fingerprint!r}) if r.id == {record.id})",
             "print(store.verify().message)",
             "published = {k: record.body.get(k) for k in ('released', 'public_inputs', 'derived')}",
             "print(json.dumps(published, indent=2))  # what this release published, in its three parts", ""]
    if e.command:
        lines += ["# Run the same plan again: a NEW release (fresh noise, charged again, new record id).",
                  f"COMMAND = {e.command!r}",
                  "RUN_AGAIN = False  # set to True to spend the budget again",
                  "if RUN_AGAIN:",
                  "    argv = [sys.executable, *shlex.split(COMMAND)[1:]]",
                  "    done = subprocess.run(argv, capture_output=True, text=True, check=True)",
                  "    print(json.dumps(json.loads(done.stdout), indent=2))"]
    else:
        lines += [f"# {NO_COMMAND}"]
    return "\n".join(lines) + "\n"
