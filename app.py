"""dpsurv: differentially private survival analysis. Run: streamlit run app.py"""

from pathlib import Path

import streamlit as st

st.set_page_config(page_title="dpsurv", page_icon="📉", layout="wide")

PAGES = sorted(Path(__file__).parent.joinpath("pages").glob("[0-9]*.py"))


def _title(path: Path) -> str:
    return path.stem.split("_", 1)[1].replace("_", " ")


# the navigation goes out before anything heavy is imported, so the menu is right from the first moment
nav = st.navigation([st.Page(str(p), title=_title(p), default=(i == 0)) for i, p in enumerate(PAGES)])

from ui import session  # noqa: E402

with st.sidebar:
    choice = session.data_choice()
    st.markdown(f"**Data:** {choice.name} ({len(choice.frame)} rows)")
    st.number_input("Budget cap (total epsilon)", min_value=0.01, max_value=1000.0, step=0.5,
                    value=float(st.session_state.get("budget_cap", 5.0)), key="budget_cap",
                    help="Releases that would take the session's total epsilon past this cap are refused.")
    spending = st.empty()


def show_spending() -> None:
    """The ledger's totals in the sidebar (drawn before the page, and again after it charged anything)."""
    led = session.ledger()
    spent = led.spent()
    with spending.container():
        st.progress(min(spent / led.cap, 1.0) if led.cap else 0.0,
                    text=f"Spent: epsilon {spent:.3g} of {led.cap:g} (protecting the subject)")
        for unit, tot in led.totals().items():
            if unit != "the subject":
                st.caption(f"Label-only releases: epsilon {tot['epsilon']:.3g} (protects {unit})")
        if led.void_reasons():
            st.warning("Patients have no DP guarantee from these releases (a label-only or not-DP release): see "
                       "Ledger and report.")
        st.caption(f"{len(led.entries)} release(s) in this session's ledger.")


show_spending()
nav.run()
show_spending()
