"""The publication figure of a stored curve release (``figure --record N``) is a function of the ledger record alone.

After a real, charged release: the SVG shows the record's released numbers at risk (as the report's table reads them)
and its calibrated log-rank p-value; a neighbouring data set whose release came out the same gives the same file,
byte for byte; the figure is drawn with the data file gone and every loader of data broken; the release report
shows it in the curve release's section.
"""

from __future__ import annotations

import copy
import html
import re
import struct

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.publication import publish
from dpsurv_core.report import publication_figure as pf
from dpsurv_core.report.stored import number_at_risk, record_report
from tests.cli_run import run

pytestmark = pytest.mark.skipif(pf.export_problem() is not None, reason=str(pf.export_problem()))


@pytest.fixture(scope="module", autouse=True)
def browser():
    """One kaleido browser for the module's exports (each would otherwise start its own, about 3 s)."""
    import kaleido

    kaleido.start_sync_server(silence_warnings=True)
    yield
    kaleido.stop_sync_server(silence_warnings=True)


def trial(path, drop_last: bool = False):
    """A two-arm trial of 300 subjects (``drop_last``: its neighbour without the last subject)."""
    rng = np.random.default_rng(11)
    n = 300
    arm = np.where(np.arange(n) % 2 == 0, "A", "B")
    time = np.round(rng.exponential(np.where(arm == "A", 30.0, 50.0)).clip(0.5, 99), 1)
    frame = pd.DataFrame({"time": time, "status": (rng.random(n) < 0.75).astype(int), "arm": arm})
    if drop_last:
        frame = frame.iloc[:-1]
    frame.to_csv(path, index=False)
    return path


def release(capsys, data, ledger, command: str = "logrank") -> dict:
    return run(capsys, command, "--data", str(data), "--time", "time", "--event", "status", "--group", "arm",
               "--categories", "arm:A,B", "--grid", "0:100:20", "--horizon", "100", "--epsilon", "1",
               "--ledger", str(ledger))


def texts(svg: bytes) -> list[str]:
    """The SVG's text elements, as a reader sees them."""
    return [html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg.decode(), flags=re.S)]


def test_the_svg_shows_the_records_released_numbers_at_risk_and_its_p_value(capsys, tmp_path):
    ledger = tmp_path / "l.sqlite3"
    printed = release(capsys, trial(tmp_path / "t.csv"), ledger)
    out = tmp_path / "x.svg"
    got = run(capsys, "figure", "--record", str(printed["record_id"]), "--out", str(out), "--ledger", str(ledger))
    assert got["out"] == str(out) and got["record_id"] == 1 and got["epsilon_spent"] == 0.0
    (record,) = LedgerStore(ledger).records()
    body = record.body
    shown = got["shows"]
    words = texts(out.read_bytes())
    joined = " ".join(words)
    # the report's number-at-risk table, from the same released counts: the same numbers, in the same columns
    table, _ = number_at_risk(body)
    assert [f"{t:g}" for t in shown["number_at_risk"]["times"]] == [f"{float(c):g}" for c in table.columns[1:]]
    for _, row in table.iterrows():
        shown_row = shown["number_at_risk"]["groups"][row["group"]]["at_risk"]
        assert [f"{v:,.0f}" for v in shown_row] == list(row.iloc[1:])
    # at time 0 the number at risk is the released (noisy) size of each group, and every number is drawn in the SVG
    released_n = body["released"]["counts"]["n"][0]
    assert [shown["number_at_risk"]["groups"][g]["at_risk"][0] for g in ("A", "B")] == [float(round(x))
                                                                                        for x in released_n]
    numbers = [w for w in words if re.fullmatch(r"[\d,]+|–", w)]
    for g in ("A", "B"):
        for what in ("at_risk", "events", "censored"):
            row = [f"{v:,.0f}" for v in shown["number_at_risk"]["groups"][g][what]]
            assert any(numbers[i:i + len(row)] == row for i in range(len(numbers))), (g, what, row)
    p = body["derived"]["overall"]["p_value"]
    assert shown["logrank_p_value"] == p and f"Log-rank {pf.p_text(p)}" in joined
    (hr,) = shown["hazard_ratios"]
    assert f"HR B vs A: {hr['hazard_ratio']:.2f} (95% CI {hr['lower']:.2f} to {hr['upper']:.2f})" in joined
    assert "noise-aware 95% band" in joined and "epsilon 1" in joined and "Time (days)" in joined


def test_neighbouring_data_sets_with_the_same_released_part_give_byte_identical_figures(capsys, tmp_path):
    """Releases of two data sets that differ in one subject, into two ledgers; the neighbour's record is then given
    the first's released output (as if its noise had come out so) and its derived part re-derived from it: all the
    rest of the record (data set, time, command) and the data differ, and the figures are the same bytes."""
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    release(capsys, trial(a / "trial.csv"), a / "l.sqlite3")
    release(capsys, trial(b / "trial.csv", drop_last=True), b / "l.sqlite3")
    (rec_a,) = LedgerStore(a / "l.sqlite3").records()
    (rec_b,) = LedgerStore(b / "l.sqlite3").records()
    assert rec_a.fingerprint != rec_b.fingerprint and rec_a.body["command"] != rec_b.body["command"]
    body_b = copy.deepcopy(rec_b.body)
    made = publish(body_b["kind"], rec_a.body["released"], body_b["public_inputs"])
    body_b["released"], body_b["derived"] = made.released, made.derived
    svg_a = pf.figure_file(pf.publication_figure(rec_a.body, rec_a.id), "svg")
    svg_b = pf.figure_file(pf.publication_figure(body_b, rec_b.id), "svg")
    assert svg_a == svg_b
    # and the figure follows the released part: the neighbour's own release (other noise) draws another figure
    assert pf.figure_file(pf.publication_figure(rec_b.body, rec_b.id), "svg") != svg_a


def test_the_figure_is_drawn_with_the_data_gone_and_every_data_loader_broken(capsys, tmp_path, monkeypatch):
    ledger = tmp_path / "l.sqlite3"
    data = trial(tmp_path / "t.csv")
    release(capsys, data, ledger, command="km")
    data.unlink()

    def no_data(*args, **kwargs):
        raise AssertionError("the figure read data")

    import dpsurv_core.cli.common as common
    import dpsurv_core.data.cohort as cohort
    import dpsurv_core.data.io as io

    for module, name in ((io, "read_columns"), (cohort, "build_cohort"), (cohort, "load_bundled"),
                         (common, "cohort_from_args"), (common, "read_columns"), (common, "build_cohort")):
        monkeypatch.setattr(module, name, no_data)
    out = tmp_path / "x.png"
    got = run(capsys, "figure", "--record", "1", "--out", str(out), "--ledger", str(ledger))
    png = out.read_bytes()
    assert png.startswith(b"\x89PNG") and got["format"] == "png"
    assert got["shows"]["logrank_p_value"] is None  # a km release carries no tests: none is made up
    at = png.index(b"pHYs")
    assert struct.unpack(">IIB", png[at + 4:at + 13]) == (11811, 11811, 1)  # 300 dots per inch
    width = struct.unpack(">I", png[16:20])[0]
    assert width == round(pf.WIDTH * pf.DPI / pf.CSS_DPI)


def test_the_pdf_carries_the_records_time_and_the_release_report_shows_the_figure(capsys, tmp_path):
    ledger = tmp_path / "l.sqlite3"
    release(capsys, trial(tmp_path / "t.csv"), ledger)
    store = LedgerStore(ledger)
    (record,) = store.records()
    pdf = pf.figure_file(pf.publication_figure(record.body, record.id), "pdf", record.body["time"])
    stamp = re.sub(r"\D", "", record.body["time"])[:14]
    assert pdf.startswith(b"%PDF") and f"/CreationDate (D:{stamp}".encode() in pdf
    rep = record_report("r", "trial", store.ledger(record.fingerprint), [record])
    page = " ".join(rep.sections[1].parts)  # the first section is the board's summary
    assert "Number at risk (events and censored: cumulative)" in page and "noise-aware 95% band" in page


def test_a_record_that_is_not_a_curve_release_is_refused_in_one_sentence():
    with pytest.raises(pf.ParameterError, match="weibull release, not a survival-curve release"):
        pf.publication_figure({"kind": "weibull", "released": {}, "public_inputs": {}, "derived": {}}, 3)
    with pytest.raises(pf.ParameterError, match="predates three-part release records"):
        pf.publication_figure({"kind": "curves", "outputs": {}}, 2)
    assert not pf.is_curve_record({"kind": "regression"})


def test_the_figure_modules_import_nothing_that_reads_data():
    """Neither the figure nor the hazard ratio imports the code that reads data (as the readers do not:
    tests/publication/test_layout.py)."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    banned = ("dpsurv_core.data.cohort", "dpsurv_core.data.io", "dpsurv_core.data.datasets", "dpsurv_core.engines",
              "dpsurv_core.cli", "streamlit")
    for module in ("dpsurv_core/report/publication_figure.py", "dpsurv_core/curves/hazard_ratio.py"):
        names = set()
        for node in ast.walk(ast.parse((root / module).read_text())):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module:
                names.add(node.module)
        assert not [m for m in names if m.startswith(banned)], module
