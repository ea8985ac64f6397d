"""One path for a release report: the command line's ``report`` renders the stored ledger record, as the Ledger and
report page does, so its report is rebuilt from the record alone once the data is gone and holds no exact count."""

from __future__ import annotations

import html
import json
import re

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.cli import main
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.report.html import ledger_report

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
    assert printed["sections"] == [s.title for s in rebuilt.sections] == ["Release 1: survival curves (laplace-counts)"]
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
