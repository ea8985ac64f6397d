"""``figure --record N --out FILE``: bad input exits 2 with one ``error: ...`` line, writes nothing and never reads data.

The figure itself (numbers, p-value, byte-identical neighbours, no data) is tested in
``tests/report/test_publication_figure.py``; here every refusal comes before any browser starts.
"""

from __future__ import annotations

import pytest

from dpsurv_core.cli import COMMANDS
from dpsurv_core.report import publication_figure as pf
from tests.cli_run import fails, run

KM = ["km", "--data", "lung", "--group", "sex", "--grid", "0:1000:10", "--horizon", "1000", "--epsilon", "1"]


def test_the_command_is_registered():
    assert "figure" in COMMANDS


def test_an_unknown_extension_is_refused(capsys, tmp_path):
    msg = fails(capsys, "figure", "--record", "1", "--out", str(tmp_path / "x.jpg"))
    assert "must name an .svg, .png or .pdf file" in msg
    assert list(tmp_path.iterdir()) == []


def test_no_such_record_and_a_record_that_is_not_a_release(capsys, tmp_path):
    assert "has no record 1" in fails(capsys, "figure", "--record", "1", "--out", str(tmp_path / "x.svg"))
    run(capsys, "budget", "set", "--data", "lung", "--cap", "10")
    msg = fails(capsys, "figure", "--record", "1", "--out", str(tmp_path / "x.svg"))
    assert "is a cap-set record, not a release" in msg
    assert "must be at least 1" in fails(capsys, "figure", "--record", "0", "--out", str(tmp_path / "x.svg"))
    assert list(tmp_path.glob("x.*")) == []


def test_a_release_that_is_not_a_curve_release_is_refused(capsys, tmp_path):
    run(capsys, "weibull", "--data", "lung", "--mechanism", "laplace", "--epsilon", "1", "--horizon", "1000",
        "--censoring", "0.3")
    msg = fails(capsys, "figure", "--record", "1", "--out", str(tmp_path / "x.svg"))
    assert "Record 1 is a weibull release, not a survival-curve release" in msg
    assert list(tmp_path.glob("x.*")) == []


def test_without_kaleido_it_says_what_to_install_before_anything_is_read_or_written(capsys, tmp_path, monkeypatch):
    run(capsys, *KM)
    sentence = "A figure file needs the Python package kaleido (`pip install kaleido`); kaleido is not installed."
    monkeypatch.setattr(pf, "export_problem", lambda: sentence)
    assert fails(capsys, "figure", "--record", "1", "--out", str(tmp_path / "x.pdf")) == f"error: {sentence}"
    assert list(tmp_path.glob("x.*")) == []


@pytest.mark.skipif(pf.export_problem() is not None, reason="no static export here")
def test_an_existing_file_is_kept_without_force(capsys, tmp_path):
    run(capsys, *KM)
    out = tmp_path / "x.svg"
    out.write_text("mine")
    assert "exists already" in fails(capsys, "figure", "--record", "1", "--out", str(out))
    assert out.read_text() == "mine"
