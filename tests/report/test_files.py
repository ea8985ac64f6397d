"""Exports that cannot run code, and careful file writes."""

from __future__ import annotations

import csv
import io
import json

import pandas as pd
import pytest

from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.files import safe_csv, write_new
from dpsurv_core.report.html import release_bundle
from tests.cli_run import completed

INJECTIONS = ['=HYPERLINK("https://example.org/x","click")', "=cmd|' /C calc'!A0", "+SUM(A1)", "-2+3", "@x",
              "\tTAB", "\rCR"]


@pytest.mark.parametrize("label", INJECTIONS)
def test_csv_cells_that_would_start_a_formula_are_neutralised(label):
    text = safe_csv(pd.DataFrame({"group": [label, "plain"], "value": [-0.5, 1.25]}))
    rows = list(csv.reader(io.StringIO(text, newline="")))
    assert rows[1][0] == "'" + label  # a spreadsheet shows the text, evaluates nothing
    assert rows[2][0] == "plain"
    assert rows[1][1] == "-0.5" and rows[2][1] == "1.25"  # numbers stay numbers, even negative ones


def test_column_names_are_neutralised_too():
    text = safe_csv(pd.DataFrame({"=evil()": [1]}))
    assert text.splitlines()[0] == "'=evil()"


def test_release_bundle_csv_neutralises_injected_group_labels():
    records = [{"record": 1, "analysis": "survival curves", "mechanism": "laplace-counts", "trial": 0,
                "group": "=cmd|' /C calc'!A0", "quantity": "survival", "time": 10.0, "value": 0.9}]
    csv_text, json_text = release_bundle(records, Ledger())
    assert "'=cmd" in csv_text and ",=cmd" not in csv_text
    assert json.loads(json_text)["released"][0]["group"] == "=cmd|' /C calc'!A0"  # JSON is data, not a formula


def test_write_new_refuses_existing_file_unless_forced(tmp_path):
    p = tmp_path / "r.html"
    write_new(p, "one")
    with pytest.raises(ParameterError, match="exists already"):
        write_new(p, "two")
    assert p.read_text() == "one"
    write_new(p, "three", force=True)
    assert p.read_text() == "three"
    assert [f.name for f in tmp_path.iterdir()] == ["r.html"]  # no temporary file left behind


def test_write_new_never_follows_a_symbolic_link(tmp_path):
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "out.html"
    link.symlink_to(target)
    for force in (False, True):
        with pytest.raises(ParameterError, match="symbolic link"):
            write_new(link, "overwritten?", force=force)
    assert target.read_text() == "keep me" and link.is_symlink()


def _report(tmp_path, *extra):
    return completed("report", "--data", "lung", "--epsilon", "1", "--horizon", "1100", "--ledger", str(tmp_path / "l.db"),
                     *extra, "--json")


def test_report_refuses_an_existing_file_and_a_link_before_charging(tmp_path):
    out = tmp_path / "r.html"
    out.write_text("earlier report")
    r = _report(tmp_path, "--out", str(out))
    assert r.returncode == 2 and "exists already" in r.stderr and r.stdout == ""
    link = tmp_path / "l.html"
    link.symlink_to(out)
    r = _report(tmp_path, "--out", str(link), "--force")
    assert r.returncode == 2 and "symbolic link" in r.stderr
    assert out.read_text() == "earlier report"
    show = completed("budget", "show", "--data", "lung", "--ledger", str(tmp_path / "l.db"), "--json")
    assert json.loads(show.stdout)["releases"] == []  # refused before anything was released or charged
    r = _report(tmp_path, "--out", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert "<html" in out.read_text().lower()
