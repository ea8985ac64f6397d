"""``python -m dpsurv_core plan``: the contract's case, files, and bad input as one sentence with exit 2."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import fails, run

STUDY = ["--n", "400", "--groups", "2", "--horizon", "1825", "--grid", "0:1825:20", "--censoring", "0.2",
         "--median", "730"]


def test_contract_case(capsys):
    out = run(capsys, "plan", "--mechanism", "laplace-counts", *STUDY, "--target", "survival:365:0.05")
    assert isinstance(out["epsilon"], (int, float)) and "achieved" in out
    # 200 per group cannot give +-5 points at one year even without noise: said, with what would
    assert out["reachable"] is False and out["epsilon"] == 10
    assert "per group would be needed" in out["targets"][0]["note"]
    assert out["study"]["sizes"] == [200, 200] and out["reads_data"] is False


def test_plan_file_and_document(capsys, tmp_path):
    plan_file, doc = tmp_path / "plan.json", tmp_path / "plan.md"
    out = run(capsys, "plan", "--mechanism", "laplace-counts", "--n", "1000", "--groups", "2", "--horizon", "1825",
              "--censoring", "0.3", "--median", "730", "--target", "survival:365:0.06", "--cohorts", "6",
              "--cap", "2", "--out", str(plan_file), "--document", str(doc))
    saved = json.loads(plan_file.read_text())
    assert saved["epsilon"] == out["epsilon"] and saved["budget"]["cap"] == 2 and saved["plan_version"] == 1
    text = doc.read_text()
    for part in ("## Study declaration", "## Planned releases", "laplace-counts", "against a cap of 2",
                 "## What each mechanism guarantees", "e^"):
        assert part in text, part
    assert out["files"] == {"plan": str(plan_file), "document": str(doc)}


@pytest.mark.parametrize("target, words", [
    ("survival:365", "survival:T:H"),
    ("power:0.7:0.8", "is not a target"),
    ("logrank-power:1:0.8", "not 1"),
    ("logrank-power:0.7:1.2", "power P"),
    ("survival:365:0.7", "between 0 and 0.5"),
    ("median:-3", "positive"),
    ("rmst:abc:10", "not a number"),
])
def test_bad_targets_are_one_sentence(capsys, target, words):
    line = fails(capsys, "plan", *STUDY, "--target", target)
    assert words in line


@pytest.mark.parametrize("argv, words", [
    (["--mechanism", "time-indexed", "--target", "logrank-power:0.7:0.8"], "no log-rank test"),
    (["--mechanism", "round", "--target", "survival:365:0.05"], "cannot be planned"),
    (["--mechanism", "lsp-tll", "--target", "survival:365:0.05"], "cannot serve"),
    (["--target", "survival:365:0.05", "--document", "x.docx"], ".md, .html or .pdf"),
    (["--target", "survival:365:0.05", "--cohorts", "2"], "at least 5"),
])
def test_bad_plans_are_one_sentence(capsys, argv, words):
    assert words in fails(capsys, "plan", *STUDY, *argv)


def test_bad_declarations_are_one_sentence(capsys):
    assert "--median" in fails(capsys, "plan", "--n", "400", "--horizon", "1825", "--censoring", "0.2",
                               "--target", "median:100")
    assert "event-free at the horizon" in fails(capsys, "plan", *STUDY[:-4], "--censoring", "0.05", "--median", "730",
                                                "--target", "median:100")
    assert "--target" in fails(capsys, "plan", *STUDY)
    assert "not allowed with" in fails(capsys, "plan", *STUDY, "--weibull", "1.2,900", "--target", "median:100")
    assert "SHAPE,SCALE" in fails(capsys, "plan", *STUDY[:-2], "--weibull", "1.2", "--target", "median:100")
