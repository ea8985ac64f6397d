"""A record is read again by the rules of the reader version that made it: adaptive-km records made before its merged
bins were read by the life table's exact premise (reader version 1, stored in adaptive_km_records_v1.json by that
code) still re-derive to the last bit, and a new release names the version it was read with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dpsurv_core.errors import ParameterError
from dpsurv_core.publication import derive, first_difference, publish, rederive
from dpsurv_core.publication.readers import reader_version
from dpsurv_core.publication.reading import find_release, read_record

V1 = json.loads((Path(__file__).with_name("adaptive_km_records_v1.json")).read_text())
# a log-rank release of adaptive-km at epsilon 0.5 on three groups whose noise merged the grid into two bins, made by
# the code of reader version 2 (before the test's sentences said when its p-value is approximate)
V2 = json.loads((Path(__file__).with_name("logrank_records_v2.json")).read_text())


@pytest.mark.parametrize("kind", ["curves", "logrank"])
def test_a_version_1_record_rederives_and_today_s_rules_would_read_it_otherwise(kind):
    body = V1[kind]
    assert "reader_version" not in body["public_inputs"]
    assert rederive(body) == {"identical": True, "first_difference": None, "kind": kind}
    today = derive(kind, body["released"], {**body["public_inputs"], "reader_version": reader_version(kind)})
    assert today["survival"] != body["derived"]["survival"]  # the premise moves the curve: the version matters


@pytest.mark.parametrize("kind", ["curves", "logrank"])
def test_a_new_release_stores_the_version_it_was_read_with_and_rederives(kind):
    old = V1[kind]
    pub = publish(kind, old["released"], {**old["public_inputs"]})
    assert pub.public_inputs["reader_version"] == reader_version(kind) == 4
    body = pub.to_dict()
    assert rederive(body)["identical"]
    assert pub.derived["survival"] != old["derived"]["survival"]


def test_a_reading_of_an_old_record_keeps_its_rules_and_finds_it_as_the_same_release():
    body = V1["curves"]
    again = read_record(body, "curves", {"landmarks": [365.0]})
    assert first_difference(again["survival"], body["derived"]["survival"]) is None

    class Rec:
        def __init__(self, b):
            self.body = b

    new_plan = {**body["public_inputs"], "reader_version": 2}
    assert find_release([Rec(body)], new_plan) is not None


@pytest.mark.parametrize("version", [0, 5, "2", True, 2.5])
def test_a_version_this_dpsurv_does_not_have_is_refused_in_one_sentence(version):
    body = V1["curves"]
    with pytest.raises(ParameterError, match="reader version"):
        derive("curves", body["released"], {**body["public_inputs"], "reader_version": version})


def test_readers_without_rule_changes_are_version_1():
    assert reader_version("regression") == 1 and reader_version("weibull") == 2


# a sample-and-aggregate release at epsilon 2 on a cohort with 70% censoring, made by the code of Weibull reader
# version 1, whose shape interval stopped at the floor-bound tiny shapes
WEIBULL_V1 = json.loads((Path(__file__).with_name("weibull_records_v1.json")).read_text())["weibull"]


def test_a_version_1_weibull_record_rederives_and_version_2_reads_past_the_floor_bound_shapes():
    body = WEIBULL_V1
    assert body["public_inputs"]["reader_version"] == 1
    assert rederive(body) == {"identical": True, "first_difference": None, "kind": "weibull"}
    old = body["derived"]["intervals"][0]["shape"]
    assert old["lower"] == 0.0 and old["upper"] < 0.2  # the true shape is 1.3
    today = derive("weibull", body["released"], {**body["public_inputs"], "reader_version": 2})["intervals"][0]
    assert today["shape"]["lower"] == 0.0 and today["shape"]["upper"] > 1.3
    pub = publish("weibull", body["released"], {k: v for k, v in body["public_inputs"].items()
                                                if k != "reader_version"})
    assert pub.public_inputs["reader_version"] == 2 and pub.derived["intervals"][0] == today
    with pytest.raises(ParameterError, match="weibull reader version 3"):
        derive("weibull", body["released"], {**body["public_inputs"], "reader_version": 3})


@pytest.mark.parametrize("version", [0, 5, "2", True])
def test_every_reading_of_a_stored_record_refuses_a_version_it_does_not_have(version):
    """Reports, figures and hazard ratios read a stored record through its mechanism, not through ``derive``: they
    refuse the same versions."""
    from dpsurv_core.curves.readout import curve_release

    body = V1["logrank"]
    with pytest.raises(ParameterError, match="reader version"):
        curve_release(body["released"], {**body["public_inputs"], "reader_version": version})


def test_the_audit_of_a_stored_version_1_record_attacks_it_as_it_was_published():
    from dpsurv_core.audit.record import stored_publisher

    body = V1["curves"]
    publisher = stored_publisher(body)
    assert publisher is not None and publisher.public_inputs is not None
    assert publisher.public_inputs["reader_version"] == 1
    assert first_difference(publish("curves", body["released"], publisher.public_inputs).derived,
                            body["derived"]) is None
    assert publish("curves", body["released"], body["public_inputs"]).public_inputs["reader_version"] == 4


def test_a_version_2_log_rank_record_keeps_its_sentences_and_version_3_adds_the_merged_bins_one():
    body = V2["logrank"]
    assert body["public_inputs"]["reader_version"] == 2 and sum(body["released"]["kept"][0]) == 2
    assert rederive(body) == {"identical": True, "first_difference": None, "kind": "logrank"}
    today = derive("logrank", body["released"], {**body["public_inputs"], "reader_version": 3})
    added = [w for w in today["test_warnings"] if w not in body["derived"]["test_warnings"]]
    assert len(added) == 1 and added[0].startswith("The noise merged the grid into 2 bins")
    assert first_difference(today["overall"], body["derived"]["overall"]) is None
    assert first_difference(today["tests"], body["derived"]["tests"]) is None


def test_floats_re_derive_within_another_processor_s_rounding_and_nothing_else_does():
    """A record made on one processor re-derives on another to about 1e-16 relative (the adaptive-km record above
    differs from this machine's reading in the last bit of several numbers); integers, texts and larger float
    differences still count."""
    a = {"s": [0.1 + 0.2, 1.0, 0.0], "n": 10**10, "w": "x"}
    assert first_difference(a, {**a, "s": [(0.1 + 0.2) * (1 + 4e-16), 1.0, 1e-17]}) is None
    assert first_difference(a, {**a, "s": [(0.1 + 0.2) * (1 + 4e-16), 1.0, 0.0]}, exact=True) == "s[0]"
    assert first_difference(a, {**a, "s": [0.3 * (1 + 1e-10), 1.0, 0.0]}) == "s[0]"
    assert first_difference(a, {**a, "s": [0.3, 1.0, 1e-13]}) == "s[2]"  # a tiny p-value moved is a difference
    assert first_difference(a, {**a, "n": 10**10 + 1}) == "n"
    assert first_difference(a, {**a, "n": 10**10 + 0.5}) == "n"  # an integer rewritten as a float near it
    assert first_difference(a, {**a, "n": float(10**10)}) is None
    assert first_difference(a, {**a, "w": "y"}) == "w"
