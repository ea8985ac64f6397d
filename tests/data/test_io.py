"""Reading uploads: every file format, and every way a file can be unreadable (one sentence each)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from dpsurv_core.data.io import detect_format, read_table
from dpsurv_core.errors import DataError, SheetChoiceNeeded

FRAME = pd.DataFrame({"time": [5.0, 8.0, 12.5, 20.0], "status": [1, 0, 1, 1], "arm": ["A", "B", "A", "B"]})


def _one_sentence(msg: str) -> None:
    assert msg and "\n" not in msg and "Traceback" not in msg
    assert msg.rstrip().endswith(".")


def _excel(sheets: dict[str, pd.DataFrame]) -> bytes:
    buf = io.BytesIO()
    with pd.ExcelWriter(buf, engine="openpyxl") as w:
        for name, df in sheets.items():
            df.to_excel(w, sheet_name=name, index=False)
    return buf.getvalue()


def test_csv_from_bytes_round_trip():
    df, warnings = read_table(FRAME.to_csv(index=False).encode(), "cohort.csv")
    pd.testing.assert_frame_equal(df, FRAME)
    assert warnings == []


def test_csv_from_path_and_semicolon_delimiter(tmp_path):
    path = tmp_path / "cohort.csv"
    path.write_text(FRAME.to_csv(index=False, sep=";"))
    df, _ = read_table(path)
    pd.testing.assert_frame_equal(df, FRAME)


def test_tsv_round_trip():
    df, _ = read_table(FRAME.to_csv(index=False, sep="\t").encode(), "cohort.tsv")
    pd.testing.assert_frame_equal(df, FRAME)


def test_utf8_bom_is_not_part_of_the_first_column_name():
    df, warnings = read_table(b"\xef\xbb\xbf" + FRAME.to_csv(index=False).encode(), "bom.csv")
    assert list(df.columns) == ["time", "status", "arm"] and warnings == []


def test_parquet_round_trip():
    buf = io.BytesIO()
    FRAME.to_parquet(buf, index=False)
    df, warnings = read_table(buf.getvalue(), "cohort.parquet")
    pd.testing.assert_frame_equal(df, FRAME)
    assert warnings == []


def test_excel_single_sheet_round_trip():
    df, _ = read_table(_excel({"data": FRAME}), "cohort.xlsx")
    pd.testing.assert_frame_equal(df, FRAME, check_dtype=False)
    assert df["time"].tolist() == [5.0, 8.0, 12.5, 20.0]


def test_excel_with_several_sheets_asks_which_then_reads_the_chosen_one():
    other = pd.DataFrame({"note": ["codebook"]})
    raw = _excel({"readme": other, "cohort": FRAME})
    with pytest.raises(SheetChoiceNeeded) as exc:
        read_table(raw, "book.xlsx")
    assert exc.value.sheets == ["readme", "cohort"]
    assert "2 sheets" in str(exc.value) and "'cohort'" in str(exc.value)
    _one_sentence(str(exc.value))
    df, _ = read_table(raw, "book.xlsx", sheet="cohort")
    pd.testing.assert_frame_equal(df, FRAME, check_dtype=False)
    df2, _ = read_table(raw, "book.xlsx", sheet="readme")
    assert list(df2.columns) == ["note"]


def test_excel_unknown_sheet_is_a_sentence():
    with pytest.raises(DataError, match="no sheet 'nope'"):
        read_table(_excel({"a": FRAME, "b": FRAME}), "book.xlsx", sheet="nope")


def test_excel_duplicate_header():
    bad = pd.DataFrame([[1, 2, 3]], columns=["time", "x", "y"])
    raw = _excel({"s": bad})
    # rewrite the header with a duplicate through openpyxl
    import openpyxl

    wb = openpyxl.load_workbook(io.BytesIO(raw))
    wb["s"]["C1"] = "time"
    out = io.BytesIO()
    wb.save(out)
    with pytest.raises(DataError) as exc:
        read_table(out.getvalue(), "dup.xlsx")
    assert exc.value.column == "time" and "appears 2 times" in str(exc.value)


@pytest.mark.parametrize("raw", [b"", b"   \n\n  ", b"\n"])
def test_empty_file(raw):
    with pytest.raises(DataError) as exc:
        read_table(raw, "empty.csv")
    assert "is empty" in str(exc.value)
    _one_sentence(str(exc.value))


def test_header_but_no_rows():
    with pytest.raises(DataError, match="header but no rows"):
        read_table(b"time,status\n", "header_only.csv")


def test_no_header_row():
    with pytest.raises(DataError) as exc:
        read_table(b"5,1,0\n8,0,1\n12,1,1\n", "noheader.csv")
    assert "holds numbers, not column names" in str(exc.value)
    _one_sentence(str(exc.value))


def test_duplicate_column_names():
    with pytest.raises(DataError) as exc:
        read_table(b"time,status,time\n1,1,2\n", "dup.csv")
    assert exc.value.column == "time"
    assert "'time' appears 2 times" in str(exc.value)
    _one_sentence(str(exc.value))


def test_blank_column_name():
    with pytest.raises(DataError, match="Column 2 .* has no name"):
        read_table(b"time,,status\n1,2,1\n", "blank.csv")


def test_ragged_rows():
    with pytest.raises(DataError, match="same number of fields"):
        read_table(b"time,status\n1,1\n2,0,7,9\n", "ragged.csv")


def test_latin1_bytes_are_read_with_a_warning():
    raw = "time,status,centre\n5,1,Besançon\n8,0,Québec\n".encode("latin-1")
    with pytest.raises(UnicodeDecodeError):
        raw.decode("utf-8")
    df, warnings = read_table(raw, "latin.csv")
    assert df["centre"].tolist() == ["Besançon", "Québec"]
    assert len(warnings) == 1 and "not UTF-8" in warnings[0]


def test_binary_bytes_named_csv():
    with pytest.raises(DataError, match="not a text file"):
        read_table(b"PK\x03\x04\x00\x00garbage", "actually_zip.csv")


def test_utf16_text_is_read_not_called_binary():
    """Excel's 'Unicode Text' is UTF-16 (zero bytes between the letters): read, with a note, not refused as binary."""
    for text in ("time,status\n5,1\n7,0\n", "time\tstatus\n5\t1\n7\t0\n"):
        df, warnings = read_table(text.encode("utf-16"), "x.csv")
        assert df.columns.tolist() == ["time", "status"] and df["status"].tolist() == [1, 0]
        assert any("UTF-16" in w for w in warnings)


def test_binary_bytes_named_csv_read_by_column(tmp_path):
    """The command line reads only the columns it needs; binary bytes still get their sentence, not a missing column."""
    from dpsurv_core.data.io import read_columns

    path = tmp_path / "bad.csv"
    path.write_bytes(b"\x00\x01\x02garbage")
    with pytest.raises(DataError, match="not a text file"):
        read_columns(path, ["time", "status"])


def test_corrupt_parquet_and_excel():
    with pytest.raises(DataError, match="not a readable Parquet"):
        read_table(b"time,status\n1,1\n", "fake.parquet")
    with pytest.raises(DataError, match="not a readable Excel"):
        read_table(b"time,status\n1,1\n", "fake.xlsx")


def test_unknown_extension_and_missing_path(tmp_path):
    with pytest.raises(DataError, match="not a file type"):
        detect_format("cohort.sav")
    with pytest.raises(DataError, match="There is no file"):
        read_table(tmp_path / "missing.csv")


def test_upload_is_not_written_to_disk(tmp_path, monkeypatch):
    """Reading bytes never touches the file system (uploads stay in memory)."""
    monkeypatch.chdir(tmp_path)
    opened: list = []
    import builtins

    real_open = builtins.open

    def spy(file, mode="r", *a, **k):
        if any(c in mode for c in "wax+"):
            opened.append(file)
        return real_open(file, mode, *a, **k)

    monkeypatch.setattr(builtins, "open", spy)
    df, _ = read_table(FRAME.to_csv(index=False).encode(), "secret.csv")
    assert len(df) == 4
    assert opened == [] and list(tmp_path.iterdir()) == []
    assert np.isclose(df["time"].sum(), 45.5)


def test_old_mac_and_windows_line_ends():
    for sep in ("\r", "\r\n"):
        df, _ = read_table(sep.join(["time,status", "5,1", "8,0"]).encode() + sep.encode(), "mac.csv")
        assert df["time"].tolist() == [5, 8] and df["status"].tolist() == [1, 0]


def test_decimal_comma_in_semicolon_files_is_read_as_numbers():
    raw = "time;status;centre\n1,5;1;Lyon\n2;0;Gent\n;1;Köln\n".encode()
    df, warnings = read_table(raw, "eu.csv")
    assert df["time"].tolist()[:2] == [1.5, 2.0] and np.isnan(df["time"].iloc[2])
    assert df["centre"].tolist() == ["Lyon", "Gent", "Köln"]
    assert len(warnings) == 1 and "'time'" in warnings[0] and "decimal comma" in warnings[0]
    # a comma-separated file is never reinterpreted
    df, warnings = read_table(b"time,label\n1,\"2,5\"\n", "us.csv")
    assert df["label"].tolist() == ["2,5"] and warnings == []
