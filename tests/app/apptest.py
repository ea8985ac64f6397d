"""What the page tests share: run a page and fail on any exception; the release records of the test's ledger."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore


def ok(at: AppTest) -> AppTest:
    """Run ``at`` and fail on any exception the page raised."""
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def releases() -> list:
    """The release records in this test's ledger (``$DPSURV_LEDGER``), oldest first."""
    return [r for r in LedgerStore().records() if r.kind == RELEASE]


def release(at: AppTest, key: str) -> AppTest:
    """Click the Release button ``key`` and confirm the release in the box it opens (the confirming click runs with
    the caller's next run)."""
    at.button(key=key).click()
    ok(at)
    at.button(key=f"confirm-{key}").click()
    return at
