"""The HTML report and the release bundle: self-contained, private-only releases, confidential reviews."""

from __future__ import annotations

import json
import re
import subprocess

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.result import NonPrivate
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger, LedgerEntry, LedgerStore, PrivacyCost, record_outputs
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.report.figures import curves_figure
from dpsurv_core.report.html import (
    AuditItem,
    Report,
    curve_records,
    export_bundle,
    ledger_report,
    output_records,
    record_item,
    release_bundle,
)
from tests.cli_run import completed


@pytest.fixture(scope="module")
def lung_release():
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    mech = LaplaceCounts(1.0)
    ledger = Ledger(cap=3.0)
    ledger.charge(mech.ledger_entry("lung"))
    return cohort, public, mech, ledger, mech.compute(cohort, public, SimulationNoise(7))


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
    rep.add_figure(curves_figure({"private": release.curves, "non-private": NonPrivate().compute(cohort, public).curves},
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
    assert list(frame.columns) == ["record", "analysis", "mechanism", "trial", "group", "quantity", "time", "value"]
    assert set(frame["quantity"]) == {"survival", "lower", "upper", "at_risk", "events"}
    assert set(frame["group"].astype(str)) == {"1", "2"}
    # 20 grid points per group and quantity
    assert (frame.groupby(["group", "quantity"]).size() <= 20).all()
    payload = json.loads(json_text)
    assert payload["ledger"]["totals"]["the subject"]["epsilon"] == 1.0
    with pytest.raises(ParameterError):
        release_bundle([{**records[0], "mechanism": "nonprivate"}], ledger)


# ------------------------------------------------------------------------------- reports from ledger records

def _record_store(path, lung_release):
    """A ledger database with a cap and three releases of lung: curves by sex, Weibull, regression."""
    from dpsurv_core.cli.km import released_numbers

    *_, release = lung_release
    store = LedgerStore(path)
    fp = "f" * 64
    store.set_cap(fp, 5.0, "lung")
    items = [("laplace-counts", "survival curves", released_numbers(release), 1.0,
              "python -m dpsurv_core km --data lung --group sex --epsilon 1 --json", {}),
             ("lsp-tll", "Weibull parameters", [{"trial": 1, "shape": 1.3, "scale": 420.0, "scale_normalised": 0.38,
                                                 "clamped": False}], 0.5, "",
              {"horizon": 1100.0, "omega": 6.0}),
             ("objective perturbation", "regression", {"coefficients": [{"age": 0.01, "sex": -0.4}]}, 0.25, "", {})]
    for mech, analysis, outputs, eps, command, params in items:
        with store.transaction(fp) as tx:
            tx.charge(LedgerEntry(mech, analysis, "lung", params, PrivacyCost(eps), command=command), outputs)
    return store, fp


def test_output_records_flatten_every_kind_of_release(tmp_path, lung_release):
    store, fp = _record_store(tmp_path / "l.sqlite3", lung_release)
    curves, weibull, regression = store.release_records(fp)
    rows = record_item(curves).records
    assert {r["quantity"] for r in rows} == {"survival", "lower", "upper", "at_risk", "events", "censored"}
    assert {r["group"] for r in rows} == {"1", "2"} and {r["record"] for r in rows} == {curves.id}
    survival = [r for r in rows if r["quantity"] == "survival" and r["group"] == "1"]
    assert [r["time"] for r in survival] == curves.body["outputs"]["time"]
    assert [r["value"] for r in survival] == curves.body["outputs"]["survival"][0]
    # the initial number at risk is one number per group, at time 0, not a time series
    assert [(r["group"], r["time"]) for r in rows if r["quantity"] == "at_risk"] == [("1", 0.0), ("2", 0.0)]
    assert {(r["quantity"], r["value"]) for r in record_item(weibull).records} == {
        ("shape", 1.3), ("scale", 420.0), ("scale_normalised", 0.38), ("clamped", 0.0)}
    assert [(r["quantity"], r["value"]) for r in output_records(regression.body["outputs"])] == [
        ("coefficients.age", 0.01), ("coefficients.sex", -0.4)]
    assert output_records({"x": [float("nan"), 2]}) == [{"record": None, "analysis": "", "mechanism": "", "trial": 0,
                                                        "group": None, "quantity": "x", "time": None, "value": 2.0}]


def test_ledger_report_lists_the_chosen_records_with_the_whole_totals(tmp_path, lung_release):
    store, fp = _record_store(tmp_path / "l.sqlite3", lung_release)
    led = store.ledger(fp)
    curves, weibull, _ = store.release_records(fp)
    html = ledger_report("r", "lung", led, [weibull], [], "release")
    assert "Release 3: Weibull parameters (lsp-tll)" in html and "Release 2:" not in html
    assert "CONFIDENTIAL" not in html
    ledger_table = html[html.index("<h2>Privacy ledger</h2>"):]
    assert "lsp-tll" in ledger_table and "laplace-counts" not in ledger_table.split("<h2>Methods</h2>")[0]
    assert "This report lists 1 of the data set's 3 release(s)" in html
    assert "against a cap of 5: the subject: epsilon 1.75" in html  # 1 + 0.5 + 0.25: every release of the data set
    # the curve's stored outputs are drawn and tabulated, with the command that runs the plan again
    html = ledger_report("r", "lung", led, [curves], [], "release", time_unit="days")
    assert "Released numbers" in html and "Time (days)" in html
    assert "Run again as a new, charged release: python -m dpsurv_core km --data lung --group sex" in html
    with pytest.raises(ParameterError, match="not a release"):
        ledger_report("r", "lung", led, [store.records(fp)[0]], [], "release")


def test_review_of_ledger_records_compares_with_the_non_private_analysis(tmp_path, lung_release):
    cohort, *_ = lung_release
    store, fp = _record_store(tmp_path / "l.sqlite3", lung_release)
    led = store.ledger(fp)
    audit = AuditItem("curves", {"empirical epsilon": 0.4})
    html = ledger_report("r", "lung", led, store.release_records(fp), [audit], "review", cohort)
    assert html.count("CONFIDENTIAL") >= 8
    assert "Release 2: survival curves (laplace-counts): comparison with the non-private analysis" in html
    assert "RMSE" in html and "non-private (clipped MLE)" in html
    assert "compare with the non-private fit on the Regression page" in html
    assert "Privacy audit: curves" in html
    # a release by sex cannot be compared with the data mapped without a group: it says so
    pooled = load_bundled("lung")
    html = ledger_report("r", "lung", led, store.release_records(fp)[:1], [], "review", pooled)
    assert "are not the groups of the data as mapped now" in html


def test_export_bundle_holds_the_chosen_records_only(tmp_path, lung_release):
    store, fp = _record_store(tmp_path / "l.sqlite3", lung_release)
    led = store.ledger(fp)
    curves, weibull, regression = store.release_records(fp)
    csv_text, json_text = export_bundle([weibull, regression], led, "lung", fp, {"ok": True})
    frame = pd.read_csv(pd.io.common.StringIO(csv_text))
    assert list(frame.columns) == ["record", "analysis", "mechanism", "trial", "group", "quantity", "time", "value"]
    assert sorted(set(frame["record"])) == [3, 4]  # record 1 set the cap
    payload = json.loads(json_text)
    assert payload["records"] == [3, 4] and [r["id"] for r in payload["releases"]] == [3, 4]
    assert payload["releases"][0]["hash"] == weibull.hash and payload["releases"][1]["outputs"] == regression.body["outputs"]
    assert payload["data_set_ledger"]["totals"]["the subject"]["epsilon"] == 1.75
    assert payload["data_set_ledger"]["cap"] == 5.0 and payload["chain"] == {"ok": True}
    # strict JSON: the curve's NaNs (if any) become null
    _, text = export_bundle([curves], led, "lung", fp)
    assert "NaN" not in text and json.loads(text)["released"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return completed(*args)


@pytest.mark.slow
def test_report_command_writes_report_and_bundle(tmp_path):
    out = tmp_path / "lung.html"
    r = _cli("report", "--data", "lung", "--horizon", "1100", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
             "--out", str(out), "--bundle", str(tmp_path / "lung"), "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["epsilon_spent"] == 1.0 and res["kind"] == "release"
    html = out.read_text()
    assert "CONFIDENTIAL" not in html and "laplace-counts, ledger record 1: private." in html
    assert "Log-rank tests (Monte Carlo test" in html
    bundle = json.loads((tmp_path / "lung.json").read_text())
    assert bundle["released"] and bundle["records"] == [res["record_id"]]
    assert bundle["chain"]["ok"] is True and bundle["chain"]["records"] >= 1  # as the Ledger page's export says it
    # the bundle holds what the ledger record keeps: every row tied to the record, the noise-aware band of the type
    # asked (R's default log) and how it was made, as the Ledger and report page exports it
    frame = pd.read_csv(tmp_path / "lung.csv")
    assert set(frame["record"]) == {res["record_id"]}
    outputs = bundle["releases"][0]["derived"]
    assert outputs["conf_type"] == "log" and outputs["interval_includes_noise"] is True
    assert "bootstrap" in outputs["interval_method"]
    upper = frame[(frame["quantity"] == "upper") & (frame["group"] == 1)].sort_values("time")["value"].to_numpy()
    assert np.all(np.diff(upper) <= 1e-12)  # the noise-aware band never rises (Greenwood's on a noisy curve may)
    # the JSON also holds the report's private tables, derived from the release (medians, log-rank tests)
    titles = [t["title"] for t in bundle["derived_tables"]]
    assert "Median survival and quartiles (95% intervals carrying the noise)" in titles
    medians = next(t for t in bundle["derived_tables"] if t["title"].startswith("Median survival"))["rows"]
    assert [m["group"] for m in medians] == ["Male", "Female"] and all("95% CI upper" in m for m in medians)
    assert any(t["title"].startswith("Log-rank tests (Monte Carlo test of the noise-adjusted")
               and 0 <= t["rows"][0]["p (calibrated)"] <= 1 and t["rows"][0]["needed at 5%"] > 0
               for t in bundle["derived_tables"])
    assert isinstance(bundle["report_warnings"], list)
    from html import escape

    assert all(escape(w) in html for w in bundle["report_warnings"])  # the HTML's "Read with care" sentences


def test_bundle_tables_leave_out_a_review_s_confidential_sections(tmp_path):
    """A review report's bundle carries the private tables only: none of the non-private comparison's."""
    from dpsurv_core.report.html import Report

    rep = Report("t", "d", Ledger(), "review")
    rep.add_section("Private")
    rep.add_table(pd.DataFrame({"x": [1.0, float("inf")]}), "private table")
    rep.add_section("Comparison", confidential=True)
    rep.add_table(pd.DataFrame({"x": [2.0]}), "non-private table")
    assert rep.private_tables() == [{"section": "Private", "title": "private table", "rows": [{"x": 1.0}, {"x": None}]}]


@pytest.mark.slow
def test_report_command_review_is_confidential(tmp_path):
    out = tmp_path / "review.html"
    r = _cli("report", "--data", "lung", "--horizon", "1100", "--group", "sex", "--epsilon", "2", "--out", str(out), "--review", "--json")
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "CONFIDENTIAL" in html
    # every chart names the groups by their labels, the comparison of private and non-private curves too
    names = set(re.findall(r'"name":"((?:private|non-private): [^"]*)"', html))
    assert {"private: Male", "private: Female", "non-private: Male", "non-private: Female"} <= names
    assert not any(n.endswith((": 1", ": 2")) for n in names)
    # the non-private medians are R's (read at every event time), not read off the public grid (275 and 440 before)
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    section = text[text.index("Median survival (non-private, 95% CI)"):]
    assert "Male 270 212 310" in section[:400] and "Female 426 348 550" in section[:400]


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--out", "/no/such/dir/r.html"], "does not exist"),
    (["--out", "r.txt"], ".html"),
    (["--out", "r.html", "--epsilon", "0"], "positive"),
    (["--out", "r.html", "--mechanism", "nonprivate"], "private"),
])
def test_report_command_bad_input(args, message, tmp_path):
    r = _cli("report", "--data", "lung", "--horizon", "1100", *args, "--json")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0]
    assert "Traceback" not in r.stderr


def test_report_figures_draw_with_the_colour_blind_safe_palette():
    from dpsurv_core.report import figures
    from dpsurv_core.report.palette import COLOURS, OKABE_ITO

    assert figures.PALETTE == list(COLOURS) and set(COLOURS) <= set(OKABE_ITO)
    assert "#d62728" not in figures.PALETTE and "#2ca02c" not in figures.PALETTE  # red next to green: not safe


def test_ledger_report_keeps_the_tests_intervals_and_warnings_each_command_printed(tmp_path, monkeypatch, capsys):
    """A report built on the Ledger page from the records shows what logrank, weibull and regression printed beside
    the released numbers: the calibrated log-rank tests, the noise-aware intervals, and their warnings (all
    post-processing, kept with the record when it was released)."""
    import html

    from dpsurv_core.cli import main

    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("DPSURV_LEDGER", str(path))
    printed = {}
    for name, args in (("logrank", ["--group", "sex", "--mechanism", "laplace-counts", "--horizon", "1100"]),
                       ("weibull", ["--mechanism", "lsp-tll", "--horizon", "1100", "--censoring", "0.3"]),
                       ("regression", ["--covariates", "age,sex", "--mechanism", "output", "--horizon", "1100",
                                       "--n-public", "228", "--range", "age:18:100", "--range", "sex:1:2"])):
        assert main([name, "--data", "lung", "--epsilon", "1", *args, "--json"]) == 0
        printed[name] = json.loads(capsys.readouterr().out)
    store = LedgerStore(path)
    (fp,) = {r.fingerprint for r in store.records()}
    logrank, weibull, regression = store.release_records(fp)
    lr = record_outputs(logrank.body)
    assert lr["group_labels"] == ["Male", "Female"]  # the released numbers' groups named as the warnings name them
    assert {r["group"] for r in record_item(logrank).records} == {"Male", "Female"}
    assert lr["tests"][0]["p_value"] == printed["logrank"]["tests"][0]["p_value"]
    assert lr["test_warnings"] == printed["logrank"]["warnings"]
    wb = record_outputs(weibull.body)
    assert wb["intervals"][0]["shape"] == printed["weibull"]["intervals"][0]["shape"]
    rg = record_outputs(regression.body)
    assert {r["covariate"]: r["p_value"] for r in rg["intervals"]} == printed["regression"]["estimates"][0]["p_value"]
    assert "p_value_nonprivate" not in rg["intervals"][0]  # a release never reads the data beside it
    page = ledger_report("Release report", "lung", store.ledger(fp), [logrank, weibull, regression])
    assert "Log-rank tests (Monte Carlo test" in page and "p (calibrated)" in page
    assert "ignoring the noise" not in page  # the noisy statistic's chi-square tail is no p-value
    assert "Weibull parameters with 95% intervals that carry the noise" in page
    assert "Coefficients with 95% intervals that carry the noise" in page
    for w in printed["logrank"]["warnings"] + printed["regression"]["warnings"]:
        assert html.escape(w) in page
    # the released numbers stay the released numbers (no test or interval among them)
    assert {r["quantity"] for r in record_item(weibull).records} == {"shape", "scale", "scale_normalised", "clamped"}


def test_records_written_before_the_tests_were_kept_apart_still_list_them():
    """A log-rank record of an earlier version kept its tests among its numbers (no test_method): they stay in the
    released numbers (and the CSV); a current record keeps them apart, the de-biased ones too (rrr)."""
    old = {"groups": ["1", "2"], "time": [1.0, 2.0], "survival": [[0.9, 0.8], [0.95, 0.9]],
           "tests": [{"group_a": "1", "group_b": "2", "statistic": 4.2, "p_value": 0.04, "dof": 1}]}
    assert {"tests.p_value", "tests.statistic"} <= {r["quantity"] for r in output_records(old)}
    from dpsurv_core.cli.logrank import released_tests
    from dpsurv_core.curves.rrr import RandomizedResponse

    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100, bins=20)
    mech = RandomizedResponse(1.0, public.group_categories)
    rel = mech.compute(cohort, public, SimulationNoise(3))
    out = released_tests(rel, mech, {"1": "Male", "2": "Female"})
    assert {"tests", "debiased_tests", "test_method", "debiased_test_method"} <= set(out)
    assert out["debiased_tests"][0]["group_a_label"] == "Male"
    new = {**old, **out}
    assert not {r["quantity"] for r in output_records(new)} & {"tests.p_value", "debiased_tests.p_value"}
    from dpsurv_core.report.html import derived_tables

    captions = [c for _, c in derived_tables(new)]
    assert captions[0].startswith("Log-rank tests (") and captions[1].startswith("Log-rank tests on the de-biased")


def test_report_command_records_and_ledger_exports_carry_the_tests_and_labels(tmp_path, monkeypatch):
    """A release made by `report` keeps its calibrated tests like a logrank release; the Ledger page's JSON holds the
    tables and warnings the records keep; figures name the groups by their labels; a review compares rrr's
    de-biased curves (the ones its numbers are read from) with the exact ones."""

    from dpsurv_core.cli import main
    from dpsurv_core.report.figures import outputs_figure
    from dpsurv_core.report.html import curve_comparison

    path = tmp_path / "ledger.sqlite3"
    monkeypatch.setenv("DPSURV_LEDGER", str(path))
    assert main(["report", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "0.5",
                 "--horizon", "1100", "--out", str(tmp_path / "r.html")]) == 0
    assert main(["logrank", "--data", "lung", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--horizon", "1100",
                 "--json"]) == 0
    store = LedgerStore(path)
    (fp,) = {r.fingerprint for r in store.records()}
    from_report, rrr = store.release_records(fp)
    assert record_outputs(from_report.body)["test_method"].startswith("Monte Carlo")
    _, bundle = export_bundle([from_report], store.ledger(fp), "lung", fp)
    payload = json.loads(bundle)
    lr = next(t for t in payload["derived_tables"] if t["title"].startswith("Log-rank tests ("))
    assert "noise-adjusted" in lr["title"] and "chi-square (noise-adjusted)" in lr["rows"][0]
    assert any(w.startswith("Weak test") for w in payload["report_warnings"])
    legend = {t.name for t in outputs_figure(record_outputs(from_report.body)).data}
    assert any("Male" in n for n in legend) and not any(n.endswith(": 1") for n in legend)
    from dataclasses import replace

    cohort = load_bundled("lung", group="sex")
    item = record_item(rrr)
    _, table = curve_comparison(item, cohort)
    assert table["group"].tolist() == ["Male", "Female"]
    raw = replace(item, outputs={k: v for k, v in item.outputs.items() if k != "debiased_survival"})
    _, mixed = curve_comparison(raw, cohort)  # the reported-label curves mix the groups: a different error
    assert not np.allclose(table["RMSE"], mixed["RMSE"])


def test_median_table_gives_the_quartiles_limits():
    from dpsurv_core.report.html import median_table

    entry = {"trial": 0, "group": "1", "median": 270.0, "median_lower": 212.0, "median_upper": 310.0,
             "quantiles": [{"probability": 0.25, "time": 200.0, "lower": 84.5, "upper": 200.0},
                           {"probability": 0.5, "time": 270.0, "lower": 212.0, "upper": 310.0},
                           {"probability": 0.75, "time": 550.0, "lower": 460.0, "upper": None}]}
    row = median_table([entry], {"1": "Male"}, "days").iloc[0].to_dict()
    assert row["first quartile (days) (95% CI)"] == "200 (84.5 to 200)"
    assert row["third quartile (days) (95% CI)"] == "550 (460 to not reached)"
    assert row["median (days)"] == "270" and row["group"] == "Male"
    # a group whose quartile has no limits stays in the same column (no second, limitless column)
    bare = {**entry, "group": "2", "quantiles": [{"probability": 0.25, "time": 7.0, "lower": None, "upper": None}]}
    table = median_table([entry, bare], {"1": "Male", "2": "Female"}, "days")
    assert "first quartile (days)" not in table.columns
    assert table.iloc[1]["first quartile (days) (95% CI)"] == "7 (no interval)"


@pytest.mark.slow
def test_a_disclosure_control_report_does_not_call_its_tables_private(tmp_path):
    out = tmp_path / "round.html"
    r = _cli("report", "--data", "lung", "--horizon", "1100", "--mechanism", "round", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "round, ledger record 1: disclosure control, no formal guarantee." in html
    assert "No epsilon charged: disclosure control has no formal guarantee." in html
    assert "ledger record 1: private." not in html


def test_a_report_of_a_not_dp_release_does_not_say_it_protects_the_subject(tmp_path, capsys):
    from dpsurv_core.cli import main
    from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
    from dpsurv_core.report.html import ledger_report

    path = tmp_path / "ledger.sqlite"
    assert main(["weibull", "--data", "lung", "--mechanism", "saa", "--epsilon", "1", "--horizon", "1100",
                 "--censoring", "0.3", "--accept-disclosure", "blocks", "--ledger", str(path),
                 "--json"]) == 0  # the block count read off the data, accepted: not DP
    capsys.readouterr()
    store = LedgerStore(path)
    (rec,) = [r for r in store.records() if r.kind == RELEASE]
    page = ledger_report("Release report", "lung", store.ledger(rec.fingerprint), [rec])
    assert "epsilon = 1, but not differentially private as run" in page
    assert "epsilon = 1, protecting the subject" not in page


def test_report_says_unknown_where_counts_cannot_give_the_number_at_risk(tmp_path):
    """A grid from 100 days bins everyone earlier into its first bin: the report's number-at-risk table says
    'unknown' there (not 'None'), and whole numbers after."""
    out = tmp_path / "late.html"
    r = _cli("report", "--data", "lung", "--horizon", "1100", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
             "--grid", "100:1000:9", "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    section = html[html.index("Number at risk ("):]
    section = section[:section.index("</table>")]
    cells = re.findall(r"<td>([^<]*)</td>", section)
    assert cells.count("unknown") == 2 and "None" not in cells  # one per group, at 100 days
    assert all(c.replace(",", "").isdigit() for c in cells if c not in ("unknown", "Male", "Female"))


def test_a_record_s_band_stops_where_its_released_counts_leave_nobody_at_risk():
    """As the app draws it: the report's band ends at the last point before the released counts leave nobody at
    risk, and its name says the band type."""
    from dpsurv_core.report.figures import outputs_figure

    outputs = {"groups": ["1"], "time": [10.0, 20.0, 30.0, 40.0], "survival": [[0.8, 0.6, 0.6, 0.6]],
               "lower": [[0.6, 0.4, 0.0, 0.0]], "upper": [[0.9, 0.8, 0.8, 0.8]], "conf_type": "log",
               "at_risk": [5], "events": [[1, 1, 0, 0]], "censored": [[0, 1, 2, 0]]}
    fig = outputs_figure(outputs, "days")
    (band,) = [t for t in fig.data if t.fill == "toself"]
    assert max(band.x) == 30.0 and band.name.endswith("(log) 95% band")  # r = 5, 3.5, 1, 0 (life table)
    outputs["censored"] = [[0, 0, 0, 0]]  # someone stays at risk to the end: the whole band
    (band,) = [t for t in outputs_figure(outputs, "days").data if t.fill == "toself"]
    assert max(band.x) == 40.0


def test_a_review_of_released_tests_shows_the_exact_test_and_the_flip(tmp_path):
    """A log-rank release's review section puts each released (calibrated) test beside R's survdiff on the same
    public grid (lung by sex on 20 bins: 9.94 without noise), with whether the conclusion at 5% flipped."""
    ledger = tmp_path / "l.sqlite3"
    r = _cli("logrank", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
             "--horizon", "1100", "--ledger", str(ledger), "--json")
    assert r.returncode == 0, r.stderr
    store = LedgerStore(ledger)
    (fp,) = store.datasets()
    cohort = load_bundled("lung", group="sex")
    html = ledger_report("r", "lung", store.ledger(fp), store.release_records(fp), [], "review", cohort)
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert "Log-rank tests: the released (calibrated) test beside the exact test on the same public grid" in text
    assert "non-private chi-square (same grid)" in text and "conclusion at 0.05 flipped" in text
    assert "Male vs Female" in text


@pytest.mark.slow
def test_a_label_only_report_names_what_it_protects_and_its_record(tmp_path):
    """rrr protects the group label only: its report does not call its tables 'private', and it names its ledger
    record and what it charged."""
    out = tmp_path / "rrr.html"
    r = _cli("report", "--data", "lung", "--horizon", "1100", "--group", "sex", "--mechanism", "rrr", "--epsilon", "1", "--out", str(out),
             "--ledger", str(tmp_path / "l.sqlite3"), "--json")
    assert r.returncode == 0, r.stderr
    import html as _html

    text = " ".join(_html.unescape(re.sub(r"<[^>]+>", " ", out.read_text())).split())
    assert "rrr, ledger record 1: label-private: the group label is protected, not the subject." in text
    assert "ledger record 1: private." not in text
    assert "Charged epsilon 1 to this data set's total for the group label only, 1 after this release." in text
    assert "published as read, outside this guarantee" not in text  # the horizon declared, sex codes documented
