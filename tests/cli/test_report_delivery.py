"""Nothing charged that is not delivered: ``report`` checks every output before the release, and a failure after the
charge says the release was recorded, under which record, and how to rebuild its report without a new charge."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

import pytest

from dpsurv_core.cli import report as report_cli
from dpsurv_core.privacy.ledger import LedgerStore
from dpsurv_core.report import files
from dpsurv_core.report.files import Outputs
from tests.cli_run import fails, run

ARGS = ["report", "--data", "lung", "--epsilon", "1", "--horizon", "1100"]


def _records(ledger: Path) -> list:
    return LedgerStore(ledger).records() if ledger.exists() else []


def _report_fails(capsys, ledger: Path, *extra: str) -> str:
    """The one error line of a report that must be refused; the ledger must hold no record afterwards."""
    line = fails(capsys, *ARGS, "--ledger", str(ledger), *extra)
    assert _records(ledger) == [], line  # refused before anything was released or charged
    return line


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_read_only_folder_is_refused_before_the_charge(tmp_path, capsys, monkeypatch):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    if os.geteuid() == 0:  # root writes through permission bits: fail as the OS fails a normal user
        real = tempfile.mkstemp

        def mkstemp(*a, dir=None, **kw):
            if dir is not None and Path(dir) == ro:
                raise PermissionError(errno.EACCES, "Permission denied", str(dir))
            return real(*a, dir=dir, **kw)

        monkeypatch.setattr(files.tempfile, "mkstemp", mkstemp)
    try:
        line = _report_fails(capsys, tmp_path / "l.db", "--out", str(ro / "r.html"))
        assert f"The folder {str(ro)!r} cannot be written (Permission denied)" in line
        line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "r.html"), "--bundle", str(ro / "b"))
        assert "cannot be written" in line and not (tmp_path / "r.html").exists()
        assert _leftovers(tmp_path) == []  # the report's reserved temporary file went with the refusal
    finally:
        ro.chmod(0o755)
    assert list(ro.iterdir()) == []


def test_a_directory_target_is_refused_even_with_force(tmp_path, capsys):
    (tmp_path / "r.html").mkdir()
    for extra in ([], ["--force"]):
        line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "r.html"), *extra)
        assert "is a folder or another non-file, which dpsurv never replaces (not even with --force)" in line
    (tmp_path / "b.json").mkdir()
    line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "ok.html"), "--bundle",
                         str(tmp_path / "b"), "--force")
    assert repr(str(tmp_path / "b.json")) in line and "is a folder" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.json", "r.html"]  # no report, no temporary file


def test_a_missing_parent_folder_is_refused_before_the_charge(tmp_path, capsys):
    line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "nope" / "r.html"))
    assert f"The folder {str(tmp_path / 'nope')!r} does not exist" in line
    (tmp_path / "plain").write_text("a file, not a folder")
    line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "plain" / "r.html"))
    assert f"{str(tmp_path / 'plain')!r} is not a folder" in line
    line = _report_fails(capsys, tmp_path / "l.db", "--out", str(tmp_path / "r.html"), "--bundle",
                         str(tmp_path / "plain" / "b"))
    assert "is not a folder" in line and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("where", ["render", "disk"])
def test_a_failure_after_the_charge_names_the_record(tmp_path, capsys, monkeypatch, where):
    ledger = tmp_path / "l.db"
    first = run(capsys, *ARGS, "--ledger", str(ledger), "--out", str(tmp_path / "first.html"))
    assert first["record_id"] == 1
    if where == "render":
        def broken(*a, **kw):
            raise RuntimeError("the figure could not be drawn")

        monkeypatch.setattr(report_cli, "record_report", broken)
    else:
        def full(src, dst):
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))

        monkeypatch.setattr(files.os, "replace", full)
    out = tmp_path / "second.html"
    line = fails(capsys, *ARGS, "--ledger", str(ledger), "--out", str(out), "--bundle", str(tmp_path / "b"))
    records = _records(ledger)
    assert [r.id for r in records] == [1, 2]  # the release was charged once, and said so
    assert line.startswith("error: The release was recorded and charged as ledger record 2, but its output was not "
                           "delivered (")
    assert "do not run this command again, which would charge a second time" in line
    assert "rebuilds the report and exports of record 2 from the ledger without a new charge" in line
    assert "`python -m dpsurv_core budget show --data lung` lists it" in line
    cause = "RuntimeError: the figure could not be drawn" if where == "render" else \
        f"cannot write {str(out)!r}: No space left on device"
    assert f"({cause});" in line
    assert not out.exists() and _leftovers(tmp_path) == []  # nothing half-written, no temporary file left


def test_outputs_hold_a_temporary_file_each_until_written(tmp_path):
    with Outputs([tmp_path / "a.html", tmp_path / "b.csv"]) as outputs:
        assert len(_leftovers(tmp_path)) == 2  # made on entry: the folder is known to be writable
        outputs.write(tmp_path / "a.html", "<html>")
        assert _leftovers(tmp_path) == [n for n in _leftovers(tmp_path) if n.startswith(".b.csv.")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html"]
    assert (tmp_path / "a.html").read_text() == "<html>"
