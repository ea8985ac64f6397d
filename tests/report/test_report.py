"""The HTML report and the release bundle: self-contained, private-only releases, confidential reviews."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.release import NonPrivate
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.html import Report, curve_records, release_bundle


@pytest.fixture(scope="module")
def lung_release():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    mech = LaplaceCounts(1.0)
    ledger = Ledger(cap=3.0)
    ledger.charge(mech.ledger_entry("lung"))
    return cohort, public, mech, ledger, mech.release(cohort, public, SimulationNoise(7))


def test_release_report_refuses_non_private_sections(lung_release):
    *_, ledger, _ = lung_release
    rep = Report("t", "lung", ledger, "release")
    with pytest.raises(ParameterError, match="private outputs only"):
        rep.add_section("comparison", confidential=True)


def test_review_report_is_confidential_everywhere_and_self_contained(lung_release):
    cohort, public, _, ledger, release = lung_release
    rep = Report("Lung review", "lung", ledger, "review")
    rep.add_section("Private curves")
    rep.add_figure(curves_figure({"private": release.curves}, "days"))
    rep.add_section("Comparison", confidential=True)
    rep.add_figure(curves_figure({"private": release.curves, "non-private": NonPrivate().release(cohort, public).curves},
                                 "days"))
    html = rep.to_html()
    # banner, both section headings, and the closing mark
    assert html.count("CONFIDENTIAL") >= 4
    assert "position:fixed" in html.replace(" ", "")  # repeated on every printed page
    # plotly's JavaScript is inline: no script is fetched from the network
    assert not re.search(r"<script[^>]+src=", html)
    assert len(html) > 3_000_000  # the bundled plotly.js
    # ledger and method notes with the paper cited
    assert "Privacy ledger" in html and "laplace-counts" in html
    assert "Gondara" in html


def test_release_report_has_no_confidential_mark(lung_release):
    *_, ledger, release = lung_release
    rep = Report("Lung", "lung", ledger, "release")
    rep.add_section("Private curves")
    rep.add_table(pd.DataFrame({"group": ["1"], "median": [300.0]}), "Median")
    html = rep.to_html()
    assert "CONFIDENTIAL" not in html
    assert "<caption>Median</caption>" in html


def test_bundle_holds_private_outputs_only(lung_release):
    *_, ledger, release = lung_release
    records = curve_records(release)
    csv_text, json_text = release_bundle(records, ledger)
    frame = pd.read_csv(pd.io.common.StringIO(csv_text))
    assert list(frame.columns) == ["analysis", "mechanism", "trial", "group", "quantity", "time", "value"]
    assert set(frame["quantity"]) == {"survival", "lower", "upper", "at_risk", "events"}
    assert set(frame["group"].astype(str)) == {"1", "2"}
    # 20 grid points per group and quantity
    assert (frame.groupby(["group", "quantity"]).size() <= 20).all()
    payload = json.loads(json_text)
    assert payload["ledger"]["totals"]["the subject"]["epsilon"] == 1.0
    with pytest.raises(ParameterError):
        release_bundle([{**records[0], "mechanism": "nonprivate"}], ledger)


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "dpsurv_core", *args], capture_output=True, text=True, timeout=120)


def test_report_command_writes_report_and_bundle(tmp_path):
    out = tmp_path / "lung.html"
    r = _cli("report", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
             "--out", str(out), "--bundle", str(tmp_path / "lung"), "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["epsilon_spent"] == 1.0 and res["kind"] == "release"
    html = out.read_text()
    assert "CONFIDENTIAL" not in html and "Private log-rank tests" in html
    assert (tmp_path / "lung.csv").exists() and json.loads((tmp_path / "lung.json").read_text())["released"]


def test_report_command_review_is_confidential(tmp_path):
    out = tmp_path / "review.html"
    r = _cli("report", "--data", "lung", "--epsilon", "2", "--out", str(out), "--review", "--json")
    assert r.returncode == 0, r.stderr
    assert "CONFIDENTIAL" in out.read_text()


@pytest.mark.parametrize("args, message", [
    (["--out", "/no/such/dir/r.html"], "does not exist"),
    (["--out", "r.txt"], ".html"),
    (["--out", "r.html", "--epsilon", "0"], "positive"),
    (["--out", "r.html", "--mechanism", "nonprivate"], "private"),
])
def test_report_command_bad_input(args, message, tmp_path):
    r = _cli("report", "--data", "lung", *args, "--json")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert "Traceback" not in r.stderr
