"""dpsurv: differentially private survival analysis. Run: dpsurv-app (installed) or make run (a checkout)."""

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="dpsurv", page_icon="📉", layout="wide")

from dpsurv_app import serving  # noqa: E402

_refused = serving.refusal(st.get_option("server.address"), serving.sign_in_configured(st.secrets))
if _refused:  # served beyond this machine without sign-in: the server stops (a launcher refuses earlier still)
    import os
    import sys

    print(f"error: {_refused}", file=sys.stderr, flush=True)
    os._exit(2)

PAGES = sorted(Path(__file__).parent.joinpath("pages").glob("[0-9]*.py"))
LEDGER_PAGE = "8_Ledger_and_report"


def _title(path: Path) -> str:
    return path.stem.split("_", 1)[1].replace("_", " ")


SIGN_IN = serving.sign_in_configured(st.secrets)
from dpsurv_core.privacy.roles import SEE_DATA  # noqa: E402

if SIGN_IN:  # a served app: nobody sees a page before signing in, and each sees only what their role allows
    from dpsurv_app import session as _session
    from dpsurv_core.report.text import markdown_literal as _literal

    def _sign_in() -> None:
        st.title("dpsurv")
        st.markdown("This server holds patient data: sign in with your organisation's account to continue.")
        st.button("Sign in", type="primary", on_click=st.login, args=serving.provider_args(st.secrets))

    def _no_role() -> None:
        st.error(f"You are signed in as {_literal(_me.name)}, who has no role in dpsurv: ask the custodian of the "
                 "data to add you to the roles file.")
        st.button("Sign out", on_click=st.logout)

    # the navigation is always declared, so no page of pages/ can be reached by its address before the gate
    _me = _session.actor()
    if not st.user.is_logged_in or _me.role == _session.NO_ROLE:
        gate = _sign_in if not st.user.is_logged_in else _no_role
        st.navigation([st.Page(gate, title="Sign in", default=True)], position="hidden").run()
        st.stop()
    if not _me.may(SEE_DATA):  # a reviewer reads the ledger and its reports: no rows, no non-private number
        PAGES = [p for p in PAGES if p.stem == LEDGER_PAGE]

# the navigation goes out before anything heavy is imported, so the menu is right from the first moment
nav = st.navigation([st.Page(str(p), title=_title(p), default=(i == 0)) for i, p in enumerate(PAGES)])

from dpsurv_app import downloads, glossary, session, warmup  # noqa: E402
from dpsurv_core.report.text import markdown_code, markdown_literal  # noqa: E402

warmup.script_started()  # dpsurv_app.warmup's idle-time imports wait while this run draws its page

if nav.title != _title(PAGES[0]):  # the Data page draws no figure: its first view does without building the template
    from dpsurv_app import palette

    palette.register_default()  # Okabe-Ito colours for every plotly figure that sets none
glossary.start_run(nav.url_path)  # a change of page starts a new visit (explainers open on the first one only)
downloads.start_run()  # no preview shown yet: the page marks its exports when it shows one

with st.sidebar:
    if SIGN_IN:
        me = session.actor()
        st.markdown(f"Signed in as **{markdown_literal(me.name)}** ({me.role})")
        st.button("Sign out", on_click=st.logout, key="sign_out")
    SEES_DATA = not SIGN_IN or session.actor().may(SEE_DATA)
    if SEES_DATA:
        choice = session.data_choice()
        st.markdown(f"**Data:** {markdown_literal(choice.name)} ({choice.rows:,} rows)")
    spending = st.empty()


def show_spending() -> None:
    """The current data set's budget from the persistent ledger (drawn before the page, and again after it, in case
    the page released something). Reading only: nothing in the sidebar charges or changes the cap. The ledger is read
    before the block is replaced: replacing it empties it until its first element arrives, so a read that waited
    (a busy ledger, a loaded server) would leave the sidebar without its budget meanwhile."""
    from dpsurv_core.errors import DpsurvError
    from dpsurv_core.privacy.ledger import SUBJECT

    try:
        led = session.ledger()
        spent, cap, totals, void, count = led.spent(), led.cap, led.totals(), led.void_reasons(), len(led.entries)
    except DpsurvError as exc:
        spending.error(f"The ledger database cannot be read: {markdown_literal(exc)}")
        return
    with spending.container():
        if cap is None:
            st.markdown(f"**Budget:** no cap set · spent epsilon {spent:.3g} (protecting the subject)")
            st.caption("This data set's releases are recorded but not limited. Set a cap on the Ledger and report "
                       f"page, or run {markdown_code(session.cli_budget_command('set', '--cap C'))}.")
        else:
            st.progress(min(spent / cap, 1.0), text=f"Spent: epsilon {spent:.3g} of {cap:g} (protecting the subject)")
        for unit, tot in totals.items():
            if unit != SUBJECT:
                st.caption(f"Label-only releases: epsilon {tot['epsilon']:.3g} (protects {unit}), counted apart")
        if void:
            st.warning("Patients have no DP guarantee from these releases (a label-only or not-DP release): see "
                       "Ledger and report.")
        st.caption(f"{count} release(s) of this data set in the ledger (shared by every tab and the command line).")


if SEES_DATA:
    show_spending()
try:
    nav.run()
    if SEES_DATA:
        show_spending()
finally:  # also when the page stops or reruns
    warmup.script_finished()
    warmup.start()  # once per server process: the libraries the next pages need, imported while nobody waits
