"""Every page checks the sign-in itself: Streamlit serves a script in ``pages/`` at its own address (``/Data``)
without running ``app.py`` first, so the gate there alone would leave each page reachable signed out."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dpsurv_app import session
from dpsurv_core.privacy.roles import SEE_DATA

LEDGER_PAGE = "8_Ledger_and_report"


def guard(page_file: str) -> None:
    """Stop this page unless the person may see it: on this machine without sign-in, always; in a served app, a
    signed-in user with a role, and for a role without access to the data (a reviewer) only the Ledger page. Every
    page's settings are kept across pages (:func:`dpsurv_app.session.keep_settings`)."""
    session.keep_settings()
    if not session.sign_in_required():
        return
    me = session.actor()
    if not st.user.is_logged_in or me.role == session.NO_ROLE:
        st.error("Sign in first: open the app's address without a page name.")
        st.stop()
    if not me.may(SEE_DATA) and Path(page_file).stem != LEDGER_PAGE:
        st.error(f"This page shows patient data, which your role ({me.role}) does not allow.")
        st.stop()
