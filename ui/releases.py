"""What this session has released, kept beside the ledger for the Ledger and report page.

Session memory only (``st.session_state``): nothing here is written to disk.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from dpsurv_core.privacy.ledger import LedgerEntry
from dpsurv_core.report.html import AuditItem, ReleaseItem


def store(title: str, entry: LedgerEntry, records: list[dict[str, Any]] | None = None, figure: Any = None,
          result: Any = None) -> None:
    """Keep a charged release (call after the ledger accepted it); its disclosures travel with its ledger entry."""
    st.session_state.setdefault("stored_releases", []).append(
        ReleaseItem(title, entry, records or [], figure, result, list(entry.disclosures)))


def store_audit(title: str, summary: dict[str, Any], figures: list[Any] | None = None) -> None:
    """Keep the latest audit of a given title for the report."""
    kept = [a for a in st.session_state.get("stored_audits", []) if a.title != title]
    st.session_state["stored_audits"] = kept + [AuditItem(title, summary, figures or [])]


def stored() -> list[ReleaseItem]:
    return list(st.session_state.get("stored_releases", []))


def audits() -> list[AuditItem]:
    return list(st.session_state.get("stored_audits", []))
