"""The publication boundary, end to end through the command line: values read off the data are refused or named,
a release's record holds three parts that re-derive without the data, and its JSON keeps exact values apart."""

from __future__ import annotations

import json

import pytest

from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication import first_difference, rederive


def cli(capsys, *argv: str) -> tuple[int, dict | None, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if out.strip() else None), err


@pytest.fixture
def upload(tmp_path):
    """lung as a user's CSV file (not the bundled name, so nothing about it counts as documented)."""
    path = tmp_path / "cohort.csv"
    datasets.load("lung").to_csv(path, index=False)
    return path


def test_a_release_reading_values_off_the_data_is_refused_before_any_noise(capsys, upload, ledger_path):
    code, out, err = cli(capsys, "km", "--data", str(upload), "--time", "time", "--event", "status", "--group", "sex",
                         "--mechanism", "laplace-counts", "--epsilon", "1")
    assert code == 2 and out is None and err.count("\n") == 1 and "Traceback" not in err
    for option in ("--horizon T", "--categories COL:A,B", "--accept-disclosure horizon,categories"):
        assert option in err
    assert LedgerStore(ledger_path).records() == []  # nothing drawn, nothing charged, nothing recorded


def test_an_accepted_value_is_published_and_voids_the_guarantee_everywhere(capsys, upload, ledger_path):
    code, out, err = cli(capsys, "km", "--data", str(upload), "--time", "time", "--event", "status", "--group",
                         "wt.loss:5", "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20",
                         "--accept-disclosure", "categories")
    assert code == 0, err
    assert out["guarantee"].startswith("none: not differentially private (categories read off the data)")
    assert out["publishable"]["subject_protected"] is False
    record = [r for r in LedgerStore(ledger_path).records() if r.kind == RELEASE][-1]
    text = json.dumps(record.body)
    assert "row(s)" not in text and "14" not in json.dumps(record.body["disclosures"])  # no message counts rows
    assert [d["parameter"] for d in record.body["disclosures"]] == ["categories"]
    code, shown, _ = cli(capsys, "budget", "show", "--data", str(upload))
    assert code == 0 and shown["subject_protected"] is False


def test_declared_release_re_derives_after_the_data_is_gone(capsys, upload, ledger_path):
    code, out, err = cli(capsys, "logrank", "--data", str(upload), "--time", "time", "--event", "status", "--group",
                         "sex", "--categories", "sex:1,2", "--mechanism", "laplace-counts", "--epsilon", "1", "--grid",
                         "0:1100:20")
    assert code == 0, err
    pub = out["publishable"]
    assert set(pub) >= {"released", "public_inputs", "derived", "cost", "record_id"}
    assert pub["derived"]["tests"][0]["p_value"] == out["tests"][0]["p_value"]  # what was printed is what is kept
    record = [r for r in LedgerStore(ledger_path).records() if r.kind == RELEASE][-1]
    assert {k: record.body[k] for k in ("released", "public_inputs", "derived")} == {
        k: pub[k] for k in ("released", "public_inputs", "derived")}
    upload.unlink()
    code, again, err = cli(capsys, "budget", "rederive", "--record", str(record.id))
    assert code == 0 and again["identical"] is True and again["first_difference"] is None, err


def test_rederive_names_the_first_field_that_differs(capsys, upload, ledger_path):
    code, out, _ = cli(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon",
                       "1", "--grid", "0:1100:20", "--landmarks", "365")
    assert code == 0
    body = dict([r for r in LedgerStore(ledger_path).records() if r.kind == RELEASE][-1].body)
    assert rederive(body)["identical"] is True
    body["derived"] = json.loads(json.dumps(body["derived"]))
    body["derived"]["landmarks"][1]["lower"] = 0.0
    result = rederive(body)
    assert result == {"identical": False, "first_difference": "derived.landmarks[1].lower", "kind": "curves"}
    assert first_difference({"a": [1, 2.0]}, {"a": [1, 2]}) is None and first_difference(1, True) == "(root)"


def test_a_release_json_keeps_exact_values_apart(capsys, upload, ledger_path):
    code, out, err = cli(capsys, "km", "--data", str(upload), "--time", "time", "--event", "status", "--mechanism",
                         "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20")
    assert code == 0, err
    assert out["confidential"]["n_subjects"] == 228 and "not part of the release" in out["confidential"]["note"]
    assert "n_subjects" not in out and "rows_per_subject" not in out
    assert "228" not in json.dumps(out["publishable"]["public_inputs"])
    simulated = cli(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "1")[1]
    assert "publishable" not in simulated and "confidential" not in simulated and simulated["simulation"] is True
    assert simulated["block"].startswith("simulation: one block")
