"""Sign-in and roles in a served app: the real OpenID Connect flow (Streamlit's st.login against a local provider,
oidc-provider-mock, started by the test) in Debian chromium.

Nobody sees a page before signing in; a user the roles file does not name sees only a sentence; a reviewer sees the
Ledger and report page and nothing that holds rows or non-private numbers; an analyst releases (the record names
them) but cannot touch the cap, which the ledger itself refuses too."""

from __future__ import annotations

import re
import secrets

import pytest

from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.privacy.roles import ANALYST, NotAllowedError
from tests.conftest import _free_port, launch_app, wait_for_app
from tests.e2e.helpers import MAIN, SIDEBAR

oidc = pytest.importorskip("oidc_provider_mock", reason="oidc-provider-mock is not installed (requirements-dev.txt)")

CUSTODIAN, ANALYST_USER, REVIEWER, STRANGER = ("alice@hospital.example", "bob@hospital.example",
                                                 "carol@ethics.example", "mallory@elsewhere.example")


@pytest.fixture(scope="module")
def provider():
    with oidc.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


@pytest.fixture
def served(provider, tmp_path, ledger_path):
    """The app served with sign-in against ``provider`` and a roles file; yields (url, ledger path)."""
    port = _free_port()
    secrets_file = tmp_path / "secrets.toml"
    secrets_file.write_text(f'''[auth]
redirect_uri = "http://localhost:{port}/oauth2callback"
cookie_secret = "{secrets.token_hex(16)}"
client_id = "dpsurv"
client_secret = "{secrets.token_hex(16)}"
server_metadata_url = "{provider}/.well-known/openid-configuration"
''')
    roles = tmp_path / "roles.toml"
    roles.write_text(f'[users]\n"{CUSTODIAN}" = "custodian"\n"{ANALYST_USER}" = "analyst"\n"{REVIEWER}" = "reviewer"\n')
    with launch_app(ledger_path, ("--secrets.files", str(secrets_file)), {"DPSURV_ROLES": str(roles)},
                    port=port) as url:
        yield url.replace("127.0.0.1", "localhost"), ledger_path


def sign_in(browser, url: str, user: str):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1200})
    pg = ctx.new_page()
    pg.set_default_timeout(60_000)
    pg.goto(url)
    wait_for_app(pg)
    pg.get_by_text("sign in with your organisation's account").wait_for()
    assert pg.locator("[data-testid='stSidebarNav']").count() == 0  # no page before signing in
    pg.get_by_role("button", name="Sign in").click()
    pg.get_by_placeholder("sub").fill(user)  # the provider's own form
    pg.get_by_role("button", name="Authorize").click()
    pg.wait_for_url(re.compile(re.escape(url)))
    wait_for_app(pg)
    return ctx, pg


def test_roles_decide_what_a_signed_in_user_sees_and_may_do(browser, served):
    url, ledger = served
    ctx = browser.new_context()
    pg = ctx.new_page()
    pg.goto(url + "/Data")  # a page's own address, signed out: never the page
    wait_for_app(pg)
    pg.get_by_text("Sign in first").wait_for(timeout=60_000)  # the guard has run (a loaded machine: seconds)
    pg.wait_for_timeout(2000)  # and nothing of the page comes after it
    body = pg.locator("body").inner_text()
    assert "Sign in first" in body and "Number of time bins" not in body and "rows)" not in body
    ctx.close()

    ctx, pg = sign_in(browser, url, STRANGER)
    pg.get_by_text("who has no role in dpsurv").wait_for()
    assert pg.locator("[data-testid='stSidebarNav']").count() == 0
    ctx.close()

    ctx, pg = sign_in(browser, url, REVIEWER)
    pg.get_by_text(f"Signed in as {REVIEWER}").wait_for()
    assert "(reviewer)" in pg.locator(SIDEBAR).inner_text()
    links = pg.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
    assert links == ["Ledger and report"] or links == []  # one page: Streamlit may hide a one-entry menu
    text = pg.locator(MAIN).inner_text()
    assert "The ledger holds no record yet" in text or "Only the data set's custodian" in text
    assert pg.get_by_role("button", name="Set cap").count() == 0
    assert "rows)" not in pg.locator(SIDEBAR).inner_text()  # no data set's size in the sidebar
    pg.goto(url + "/Survival_curves")  # a data page by its own address
    wait_for_app(pg)
    pg.wait_for_timeout(3000)
    body = pg.locator("body").inner_text()  # the guard's sentence, or the reviewer's one page instead
    assert "Number at risk" not in body and "Kaplan-Meier" not in body
    ctx.close()

    ctx, pg = sign_in(browser, url, ANALYST_USER)
    pg.get_by_text(f"Signed in as {ANALYST_USER}").wait_for()
    links = pg.locator("[data-testid='stSidebarNav'] a").all_inner_texts()
    assert "Data" in links and "Survival curves" in links and "Ledger and report" in links
    pg.locator("[data-testid='stSidebarNav']").get_by_role("link", name="Ledger and report", exact=True).click()
    pg.get_by_role("heading", name="Releases", exact=True).wait_for()
    assert "Only the data set's custodian sets, raises or lowers it" in pg.locator(MAIN).inner_text()
    assert pg.get_by_role("button", name="Set cap").count() == 0
    ctx.close()

    # the ledger refuses the act itself, whatever a page shows
    from dpsurv_core.data import datasets
    from dpsurv_core.privacy.fingerprint import fingerprint
    from dpsurv_core.privacy.roles import Actor

    store = LedgerStore(ledger, actor=Actor(ANALYST_USER, ANALYST, True))
    with pytest.raises(NotAllowedError, match="may not change the cap"):
        store.set_cap(fingerprint(datasets.load("lung")), 1.0, "lung")
    assert store.records() == []
