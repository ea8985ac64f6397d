"""``group_label`` beside every group code in the ``km`` and ``logrank`` JSON: from the bundled data
set's R documentation labels, or from ``--labels FILE.json``; existing fields unchanged; a bad file is one sentence."""

from __future__ import annotations

import json

from tests.cli_run import fails, run

LUNG = ["--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "3"]


def test_km_group_label_from_bundled_labels(capsys):
    o = run(capsys, "km", *LUNG, "--group", "sex", "--landmarks", "365", "--rmst", "500")
    assert o["group_labels"] == {"1": "Male", "2": "Female"}
    assert [(c["group"], c["group_label"]) for c in o["curves"]] == [("1", "Male"), ("2", "Female")]
    assert {(e["group"], e["group_label"]) for e in o["landmarks"]} == {("1", "Male"), ("2", "Female")}
    assert {(e["group"], e["group_label"]) for e in o["rmst"]} == {("1", "Male"), ("2", "Female")}
    assert {(r["group"], r["group_label"]) for r in o["number_at_risk"]["rows"]} == {("1", "Male"), ("2", "Female")}
    plain = run(capsys, "km", *LUNG, "--group", "sex", "--landmarks", "365", "--rmst", "500")
    assert plain["curves"][0]["survival"] == o["curves"][0]["survival"]  # labels change no number


def test_labels_file_overrides_and_unlabelled_codes_stay(capsys, tmp_path):
    f = tmp_path / "labels.json"
    f.write_text(json.dumps({"values": {"sex": {"1": "Men"}}}))
    o = run(capsys, "km", *LUNG, "--group", "sex", "--labels", str(f))
    assert o["group_labels"] == {"1": "Men", "2": "2"}  # a column of the file replaces its bundled labels whole
    o = run(capsys, "km", *LUNG, "--group", "inst")
    assert all(c["group_label"] == c["group"] for c in o["curves"])  # no labels: the code itself


def test_logrank_group_labels_beside_each_test(capsys):
    o = run(capsys, "logrank", *LUNG, "--group", "sex")
    assert o["group_labels"] == {"1": "Male", "2": "Female"}
    t = o["tests"][0]
    assert (t["group_a"], t["group_b"], t["group_a_label"], t["group_b_label"]) == ("1", "2", "Male", "Female")
    assert "p_value" in t and "statistic" in t
    assert {r["group_label"] for r in o["number_at_risk"]["rows"]} == {"Male", "Female"}
    o = run(capsys, "logrank", "--data", "lung", "--mechanism", "nonprivate", "--group", "sex")
    assert o["tests"][0]["group_a_label"] == "Male"


def test_numeric_split_keeps_its_group_names(capsys):
    o = run(capsys, "km", *LUNG, "--group", "age:60")
    assert all(c["group_label"] == c["group"] for c in o["curves"])


def test_bad_labels_file_is_one_sentence(capsys, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("not json")
    assert "not JSON text" in fails(capsys, "km", *LUNG, "--group", "sex", "--labels", str(bad))
    assert "is not a file" in fails(capsys, "logrank", *LUNG, "--group", "sex", "--labels", str(tmp_path / "nope.json"))
