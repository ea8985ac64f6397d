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


def test_a_version_3_record_and_a_preview_keep_today_s_rules():
    plan = _plan()
    assert getattr(reading_mechanism(plan, _released({**V2["public_inputs"], "reader_version": 3})),
                   "test_level_warnings", True)
    assert reading_mechanism(plan, None) is plan.mechanism
    assert reading_mechanism(plan, SimpleNamespace(publication=None)) is plan.mechanism
