"""A release read again in the app is read by the rules its record was published with: the Group comparison page's
tests and sentences come from the mechanism the record names, not from today's build of the plan's."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from dpsurv_app.curve_plans import reading_mechanism
from dpsurv_core.curves import readout
from dpsurv_core.privacy import catalogue

V2 = json.loads((Path(__file__).parents[1] / "publication" / "logrank_records_v2.json").read_text())["logrank"]


def _plan() -> SimpleNamespace:
    inputs = V2["public_inputs"]
    mechanism = catalogue.get(catalogue.CURVES, inputs["mechanism"]).build(inputs["epsilon"])
    return SimpleNamespace(mechanism=mechanism)


def _released(public_inputs: dict) -> SimpleNamespace:
    return SimpleNamespace(publication=SimpleNamespace(public_inputs=public_inputs))


def test_a_version_2_record_is_read_without_the_version_3_sentences():
    plan = _plan()
    assert getattr(plan.mechanism, "test_level_warnings", True)  # today's build: version 3's sentences
    read = reading_mechanism(plan, _released(V2["public_inputs"]))
    assert read is not plan.mechanism and read.test_level_warnings is False
    assert read.parameters() == readout.mechanism_of(V2["public_inputs"]).parameters()


def test_a_version_3_record_is_read_without_the_version_4_grid_sentence():
    read = reading_mechanism(_plan(), _released({**V2["public_inputs"], "reader_version": 3}))
    assert getattr(read, "test_level_warnings", True) and read.test_grid_warnings is False


def test_a_version_4_record_and_a_preview_keep_today_s_rules():
    plan = _plan()
    read = reading_mechanism(plan, _released({**V2["public_inputs"], "reader_version": 4}))
    assert getattr(read, "test_level_warnings", True) and getattr(read, "test_grid_warnings", True)
    assert reading_mechanism(plan, None) is plan.mechanism
    assert reading_mechanism(plan, SimpleNamespace(publication=None)) is plan.mechanism


def test_the_group_comparison_page_reads_a_version_2_record_by_version_2_s_rules():
    """A release of the page's plan stored by the rules of curve reader version 2 (made before the test's sentences
    said when its p-value is approximate) is read again on the page with the sentences its record holds."""
    import dataclasses

    from streamlit.testing.v1 import AppTest

    from dpsurv_app import session
    from dpsurv_core.privacy.ledger import LedgerStore, entry_from_body
    from dpsurv_core.publication import publish
    from tests.app.apptest import ok, release, releases
    from tests.app.tables import shown_text

    page = str(Path(__file__).resolve().parents[2] / "dpsurv_app" / "pages" / "3_Group_comparison.py")
    choice = dataclasses.replace(session.bundled_choice("lung"), horizon=1100.0)

    def visit() -> AppTest:
        at = AppTest.from_file(page, default_timeout=120)
        at.session_state["data_choice"] = choice
        at.session_state["gc_epsilon"] = 0.1  # the noise outweighs lung's events: the weak-test sentence
        return ok(at)

    first = visit()
    release(first, "release-logrank")
    ok(first)
    (made,) = releases()
    today = made.body["derived"]["test_warnings"]
    assert made.body["public_inputs"]["reader_version"] == 4 and any("borderline" in w for w in today)
    # the same release as a version-2 record holds it: version 2's reading of the same released counts
    old = publish("logrank", made.body["released"], {**made.body["public_inputs"], "reader_version": 2})
    assert not any("borderline" in w for w in old.derived["test_warnings"])
    with LedgerStore().transaction(choice.fingerprint) as tx:
        tx.charge(entry_from_body(made.body, made.id, made.time), publication=old)
    stored = releases()[-1]
    assert stored.body["public_inputs"]["reader_version"] == 2

    again = visit()  # the plan matches both records: the page reads the latest, the version-2 one
    assert len(releases()) == 2
    assert any(f"Reading release #{stored.id}" in i.value for i in again.info)
    shown = " ".join(shown_text(w.value) for w in again.warning)
    for sentence in old.derived["test_warnings"]:
        assert sentence in shown
    assert "borderline" not in shown  # version 3's clause, which this record's reading does not have
