"""One path for a release report: the command line's ``report`` renders the stored ledger record, as the Ledger and
report page does, so its report is rebuilt from the record alone once the data is gone and holds no exact count; a
review's audit attacks the whole record at the epsilon released, or says plainly that it ran at another."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.audit.figures import report_section
from dpsurv_core.cli import main
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters
from dpsurv_core.privacy.ledger import Ledger, LedgerEntry, LedgerStore, PrivacyCost
from dpsurv_core.report.html import AuditItem, Report, ledger_report

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _same_page(text: str) -> str:
    """A report's HTML without what differs between two renderings of the same records: the time it was generated
    and plotly's random element ids."""
    return UUID.sub("ID", re.sub(r"generated \d{4}-\d\d-\d\d \d\d:\d\d UTC", "generated T", text))


def _words(text: str) -> str:
    """The report's visible text (no script, no tags)."""
    text = re.sub(r"<script.*?</script>", " ", text, flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


@pytest.fixture
def upload(tmp_path):
    """An uploaded trial of 1,237 rows, 3 without an arm (left out, with a validation warning that counts them):
    1,234 subjects analysed, counts no released number or grid time can be."""
    rng = np.random.default_rng(5)
    n = 1237
    frame = pd.DataFrame({"time": np.round(rng.exponential(40, n).clip(0.5, 99), 1),
                          "status": (rng.random(n) < 0.7).astype(int), "arm": rng.choice(["A", "B"], n)})
    frame.loc[[4, 9, 17], "arm"] = None
    path = tmp_path / "trial.csv"
    frame.to_csv(path, index=False)
    return path


def test_the_command_line_report_is_the_report_of_its_stored_record_with_no_data(upload, tmp_path, capsys):
    ledger = tmp_path / "l.sqlite3"
    out = tmp_path / "trial.html"
    assert main(["report", "--data", str(upload), "--time", "time", "--event", "status", "--group", "arm",
                 "--categories", "arm:A,B", "--grid", "0:100:10", "--horizon", "100", "--landmarks", "30,60",
                 "--rmst", "80", "--epsilon", "1", "--ledger", str(ledger), "--out", str(out),
                 "--bundle", str(tmp_path / "bundle"), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    exact = printed["confidential"]
    assert any("3 row(s) have no value in 'arm'" in w for w in exact["data_warnings"])
    written = out.read_text()
    upload.unlink()  # the data is gone: what follows reads the ledger alone

    store = LedgerStore(ledger)
    (record,) = [r for r in store.records() if r.id == printed["record_id"]]
    name = record.body["dataset"]  # as the record names the data set (here the path it was read from)
    page = ledger_report(f"Survival analysis of {name}", name, store.ledger(record.fingerprint), [record])
    # numbers, guarantee and sections: the whole page is the same, bar the time it was generated
    assert _same_page(written) == _same_page(page)
    from dpsurv_core.report.stored import record_report

    rebuilt = record_report(f"Survival analysis of {name}", name, store.ledger(record.fingerprint), [record])
    assert printed["sections"] == [s.title for s in rebuilt.sections] == ["Summary for the board",
                                                                    "Release 1: survival curves (laplace-counts)"]
    text = _words(written)
    assert "Privacy: epsilon = 1, protecting the subject" in text and "ledger record 1: private." in text
    titles = [caption for s in rebuilt.sections for caption, _ in s.tables]
    assert any(t.startswith("Number at risk (") for t in titles) and "Released numbers" in titles
    assert any(t.startswith("Log-rank tests (Monte Carlo") for t in titles)
    assert any(t.startswith("Restricted mean survival time") for t in titles)
    # no exact count of the data: not the subjects, the rows, nor the validation warnings that count them
    for count in ("1234", "1,234", "1237", "1,237"):
        assert not re.search(rf"(?<![\d.,]){re.escape(count)}(?![\d.,])", text), count
    assert not any(w[:40] in text for w in exact["data_warnings"]) and "row(s)" not in text
    bundle = json.loads((tmp_path / "bundle.json").read_text())
    assert bundle["derived_tables"] == rebuilt.private_tables()


def _curve_store(path, epsilons=(0.5,)):
    """A ledger with one laplace-counts curve release of lung by sex per epsilon (its numbers from a simulation)."""
    from dpsurv_core.cli.km import released_numbers
    from dpsurv_core.curves.laplace_counts import LaplaceCounts
    from dpsurv_core.privacy.noise import SimulationNoise

    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    store, fp = LedgerStore(path), "f" * 64
    for eps in epsilons:
        outputs = released_numbers(LaplaceCounts(eps).compute(cohort, public, SimulationNoise(1)))
        with store.transaction(fp) as tx:
            tx.charge(LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(eps)), outputs)
    return store, fp


def _audit(eps: float | None, mechanism: str = "laplace-counts") -> AuditItem:
    return AuditItem(f"Survival curves (Kaplan-Meier), {mechanism}, epsilon {eps:g}", {"empirical epsilon": 0.1},
                     mechanisms=(mechanism,), epsilon=eps, analysis="km")


def test_the_review_shows_the_audit_at_the_released_epsilon_not_the_last_one(tmp_path):
    store, fp = _curve_store(tmp_path / "l.sqlite3")
    (release,) = store.release_records(fp)
    at_release, later = _audit(0.5), _audit(2.0)  # the one at 2 ran last
    page = _words(ledger_report("r", "lung", store.ledger(fp), [release], [at_release, later], "review"))
    assert "Privacy audit: Survival curves (Kaplan-Meier), laplace-counts, epsilon 0.5" in page
    assert "Run at epsilon 0.5, as released in release 1." in page
    assert "laplace-counts, epsilon 2" not in page  # not shown in its place, silently or not
    # only an audit at another epsilon: shown, with a warning that says so plainly
    page = _words(ledger_report("r", "lung", store.ledger(fp), [release], [later], "review"))
    assert ("This audit was run at epsilon 2, not at the epsilon released (release 1 at epsilon 0.5): it does not "
            "measure the release as it was made.") in page
    assert "Privacy audit: Survival curves (Kaplan-Meier), laplace-counts, epsilon 2" in page


def test_each_kind_of_audit_is_tied_to_the_releases_of_the_report(tmp_path):
    from dpsurv_core.report.stored import chosen_audits

    store, fp = _curve_store(tmp_path / "l.sqlite3", (0.5, 1.0))
    entries = [LedgerEntry("laplace-counts", "survival curves", "lung", {}, PrivacyCost(e), record_id=i + 2)
               for i, e in enumerate((0.5, 1.0))]
    board = AuditItem("DP against today's disclosure control, epsilon 1", {}, mechanisms=("laplace-counts", "adaptive-km"),
                      epsilon=1.0, analysis="board")
    other = _audit(1.0, "adaptive-km")
    unknown = AuditItem("an audit of an earlier version", {})
    shown = chosen_audits([_audit(0.5), _audit(1.0), _audit(3.0), board, other, unknown], entries)
    said = {a.title: (sentence, warn) for a, sentence, warn in shown}
    assert said["Survival curves (Kaplan-Meier), laplace-counts, epsilon 0.5"] == (
        "Run at epsilon 0.5, as released in release 2.", False)
    assert said["Survival curves (Kaplan-Meier), laplace-counts, epsilon 1"][1] is False
    assert "Survival curves (Kaplan-Meier), laplace-counts, epsilon 3" not in said  # releases at 0.5 and 1 are audited
    assert said["DP against today's disclosure control, epsilon 1"] == ("Run at epsilon 1, as released in release 3.",
                                                                       False)
    assert said["Survival curves (Kaplan-Meier), adaptive-km, epsilon 1"][0].startswith(
        "No release in this report was made with adaptive-km") and said[other.title][1]
    assert said[unknown.title][1] and "does not say at which epsilon" in said[unknown.title][0]


def test_a_report_audit_section_attacks_the_stored_record_at_its_epsilon(tmp_path, capsys):
    """The review's audit section, on a record the report command stored: the attack on its whole record (its own
    reader and public inputs), which fields, and the verdict on both attacks (small runs)."""
    from dpsurv_core.audit.record import stored_publisher

    ledger = tmp_path / "l.sqlite3"
    assert main(["km", "--data", "lung", "--group", "sex", "--epsilon", "1", "--horizon", "1100", "--ledger",
                 str(ledger), "--json"]) == 0
    capsys.readouterr()
    store = LedgerStore(ledger)
    (record,) = store.release_records(store.records()[0].fingerprint)
    publisher = stored_publisher(record.body)
    assert publisher.kind == "curves" and publisher.public_inputs == record.body["public_inputs"]
    cohort = load_bundled("lung", group="sex")
    public = PublicParameters.derive(cohort, horizon=1100)
    from dpsurv_core.audit.runner import curve_mechanism

    rep = Report("r", "lung", Ledger(), "review")
    result = report_section(rep, cohort, public, curve_mechanism("laplace-counts", 1.0, cohort, public), trials=40,
                            publisher=publisher, record_trials=8, record_id=record.id)
    assert result.record is not None and result.record.trials == 8 and result.record.rederives is True
    assert result.within_charge == (max(result.empirical_epsilon, result.attack.epsilon_lower) <= 1.0)
    text = _words(rep.to_html())
    assert "Audited at epsilon 1, the epsilon released as ledger record 1." in text
    assert "Strongest attack on the whole release record" in text
    assert f"Attacked: the whole release record, {len(result.attacked_fields)} fields" in text
    assert "derived.medians" in text and "within the charge: " in text


@pytest.mark.slow
def test_the_review_report_s_audit_and_board_attack_the_record(tmp_path, capsys):
    out = tmp_path / "review.html"
    assert main(["report", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
                 "--horizon", "1100", "--review", "--ledger", str(tmp_path / "l.sqlite3"), "--out", str(out),
                 "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["sections"][:3] == ["Summary for the board", "Release 1: survival curves (laplace-counts)",
                                   "Release 1: survival curves (laplace-counts): comparison with the non-private "
                                   "analysis"]
    text = _words(out.read_text())
    assert "Audited at epsilon 1, the epsilon released as ledger record 1." in text
    # the board's summary points to the audit and the comparison this review adds, not to "none was run"
    assert "in the section 'Privacy audit' below" in text and "No privacy audit was run" not in text
    assert "Attacked: the whole release record" in text and "derived.tests" in text
    assert "for the attack on the whole record a release of it makes" in text and "whole record (" in text
