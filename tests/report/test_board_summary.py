"""The board's summary heads every report: what is published, what epsilon means for one patient, the audit at the
released epsilon (a review only), the cap with every change and its reason; and no table runs off the page."""

from __future__ import annotations

import math

from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.report.board import TITLE, risk_sentence
from dpsurv_core.report.html import AuditItem
from dpsurv_core.report.stored import record_report
from tests.report.test_stored_report import _audit, _curve_store, _words


def _report(tmp_path, kind="release", audits=(), reason="ethics approval 2026-11"):
    store, fp = _curve_store(tmp_path / "l.sqlite3")
    store.set_cap(fp, 3.0, "lung", reason=reason)
    caps = [r for r in LedgerStore(tmp_path / "l.sqlite3").records(fp) if r.kind.startswith("cap")]
    rep = record_report("r", "lung", store.ledger(fp), store.release_records(fp), list(audits), kind, cap_history=caps)
    return rep, _words(rep.to_html())


def test_the_summary_comes_first_and_says_what_epsilon_means(tmp_path):
    rep, text = _report(tmp_path)
    assert rep.sections[0].title == TITLE
    assert "What is published: release 1: survival curves by laplace-counts" in text
    assert f"a 50% guess becomes at most {100 * math.exp(0.5) / (1 + math.exp(0.5)):.0f}%" in text  # epsilon 0.5
    assert "Budget: cap epsilon 3, spent 0.5, left 2.5." in text and "cap set" in text
    assert "ethics approval 2026-11" in text  # the cap's recorded reason
    # a release report publishes no audit number: the audit attacks the real data
    assert "confidential review report" in text and "empirical epsilon at least" not in text


def test_a_review_names_the_audit_at_the_released_epsilon_or_says_there_is_none(tmp_path):
    at_release = AuditItem("Survival curves (Kaplan-Meier), laplace-counts, epsilon 0.5",
                           {"empirical_epsilon_lower": 0.21, "sentence": "The attack stayed within the charge."},
                           mechanisms=("laplace-counts",), epsilon=0.5, analysis="km")
    _, text = _report(tmp_path, "review", [at_release, _audit(2.0)])
    assert "empirical epsilon at least 0.21 against 0.5 charged" in text
    assert "The attack stayed within the charge." in text
    _, other = _report(tmp_path / "b", "review", [_audit(2.0)])
    assert "No audit ran at the released epsilon" in other


def test_audit_tables_are_one_measure_per_row(tmp_path):
    wide = AuditItem("Survival curves (Kaplan-Meier), laplace-counts, epsilon 0.5",
                     {f"measure_{i}": i for i in range(19)}, mechanisms=("laplace-counts",), epsilon=0.5, analysis="km")
    rep, _ = _report(tmp_path, "review", [wide])
    tables = [t for s in rep.sections if s.title.startswith("Privacy audit") for _, t in s.tables]
    assert tables and all(len(t.columns) <= 2 for t in tables[:1]) and len(tables[0]) == 19


def test_risk_sentence_without_a_guarantee():
    assert "No formal guarantee" in risk_sentence(None)
    assert "e^1 = 2.72" in risk_sentence(1.0)
