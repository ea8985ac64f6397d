"""``report --out FILE.pdf``: the HTML report printed by chromium; without a browser, exit 2 before any release."""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from dpsurv_core.cli import main
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.report import pdf

needs_chromium = pytest.mark.skipif(pdf.pdf_problem() is not None,
                                    reason=f"no PDF can be printed here: {pdf.pdf_problem()}")
ARGS = ["report", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1", "--horizon", "1100"]


def test_without_a_browser_the_command_exits_2_and_charges_nothing(tmp_path, monkeypatch, capsys, ledger_path):
    monkeypatch.setattr(pdf, "chromium_path", lambda: None)
    out = tmp_path / "lung.pdf"
    assert main([*ARGS, "--out", str(out), "--json"]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: A PDF needs a Chromium browser")
    assert "apt-get install chromium" in lines[0] and "--out FILE.html" in lines[0]
    assert captured.out == "" and not out.exists()
    assert not ledger_path.exists() or LedgerStore(ledger_path).records() == []  # refused before the release


def test_out_names_an_html_or_a_pdf_file(tmp_path, capsys):
    assert main([*ARGS, "--out", str(tmp_path / "lung.docx")]) == 2
    assert "must name an .html or a .pdf file" in capsys.readouterr().err


@needs_chromium
@pytest.mark.slow
def test_report_command_writes_a_pdf(tmp_path):
    pypdf = pytest.importorskip("pypdf", reason="pypdf (requirements-dev.txt) reads the PDF's text")
    out = tmp_path / "lung.pdf"
    r = subprocess.run([sys.executable, "-m", "dpsurv_core", *ARGS, "--out", str(out), "--bundle",
                        str(tmp_path / "lung"), "--json"], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["out"] == res["pdf"] == str(out) and res["format"] == "pdf" and res["kind"] == "release"
    assert res["files"] == [str(out), str(tmp_path / "lung.csv"), str(tmp_path / "lung.json")]
    assert res["record_id"] == 1 and res["epsilon_spent"] == 1.0
    data = out.read_bytes()
    assert data.startswith(b"%PDF-")
    reader = pypdf.PdfReader(io.BytesIO(data))
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert "Survival analysis of lung" in text and "Log-rank tests (Monte Carlo test" in text and "Time (days)" in text
    # the same command with --force replaces it; without, it refuses before releasing again
    again = subprocess.run([sys.executable, "-m", "dpsurv_core", *ARGS, "--out", str(out), "--json"],
                           capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "exists already" in again.stderr
