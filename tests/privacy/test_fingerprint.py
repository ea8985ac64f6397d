"""The content fingerprint a data set's budget is kept under: invariant to row order, column order, column names
and file format; any changed value changes it. Re-uploading the data under another name does not reset its budget."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dpsurv_core.cli import main
from dpsurv_core.data import datasets
from dpsurv_core.data.io import read_table
from dpsurv_core.privacy.fingerprint import fingerprint, fingerprint_batches, fingerprint_file
from dpsurv_core.privacy.ledger import LedgerStore


@pytest.fixture(scope="module")
def lung() -> pd.DataFrame:
    return datasets.load("lung")


@pytest.fixture(scope="module")
def lung_fp(lung) -> str:
    return fingerprint(lung)


def shuffled_renamed(frame: pd.DataFrame, seed: int = 3) -> pd.DataFrame:
    out = frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    out = out[list(out.columns[::-1])]
    out.columns = [f"column {i}" for i in range(out.shape[1])]
    return out


def test_lung_fingerprint_is_a_sha256(lung_fp):
    assert len(lung_fp) == 64 and int(lung_fp, 16) >= 0


def test_shuffled_rows_reversed_and_renamed_columns_keep_the_fingerprint(lung, lung_fp):
    assert fingerprint(lung.sample(frac=1.0, random_state=1)) == lung_fp
    assert fingerprint(lung[list(lung.columns[::-1])]) == lung_fp
    assert fingerprint(lung.rename(columns=lambda c: c.upper() + "_x")) == lung_fp
    assert fingerprint(shuffled_renamed(lung)) == lung_fp
    assert fingerprint(lung.set_index("time")) != lung_fp  # the index is not data: a dropped column is a change


def test_integers_stored_as_floats_keep_the_fingerprint(lung, lung_fp):
    assert fingerprint(lung.astype("float64")) == lung_fp
    assert fingerprint(lung.astype(str).replace("nan", np.nan)) == lung_fp  # numbers read as text (a CSV typing)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_the_bundled_data_written_and_read_back_keeps_the_fingerprint(tmp_path, lung, lung_fp, suffix):
    path = tmp_path / f"lung copy.{suffix}"
    if suffix == "csv":
        lung.to_csv(path, index=False)
    else:
        lung.to_parquet(path, index=False)
    frame, warnings = read_table(path)
    assert frame.shape == lung.shape
    assert fingerprint(frame) == lung_fp
    assert fingerprint_file(path) == lung_fp  # the streaming path (Parquet batches) agrees


def test_a_shuffled_renamed_copy_on_disk_keeps_the_fingerprint(tmp_path, lung, lung_fp):
    path = tmp_path / "upload.csv"
    shuffled_renamed(lung, 9).to_csv(path, index=False)
    assert fingerprint_file(path) == lung_fp


def test_streaming_in_batches_gives_the_same_fingerprint(lung, lung_fp):
    batches = lambda: (lung.iloc[i:i + 50] for i in range(0, len(lung), 50))  # noqa: E731
    assert fingerprint_batches(batches(), batches()) == lung_fp


def _changed(lung: pd.DataFrame) -> dict[str, pd.DataFrame]:
    one = lung.copy()
    one.loc[17, "age"] = one.loc[17, "age"] + 1
    swapped = lung.copy()
    i, j = 0, 1  # two subjects with different ages (74, 68) and different other values
    assert swapped.loc[i, "age"] != swapped.loc[j, "age"] and swapped.loc[i, "time"] != swapped.loc[j, "time"]
    swapped.loc[[i, j], "age"] = swapped.loc[[j, i], "age"].to_numpy()
    missing = lung.copy()
    missing.loc[3, "wt.loss"] = np.nan
    return {"one changed value": one, "a swapped pair within one column": swapped,
            "a dropped row": lung.drop(index=100), "a duplicated row": pd.concat([lung, lung.iloc[[100]]]),
            "a value made missing": missing, "a dropped column": lung.drop(columns=["meal.cal"]),
            "a duplicated column": lung.assign(extra=lung["age"])}


@pytest.mark.parametrize("change", ["one changed value", "a swapped pair within one column", "a dropped row",
                                    "a duplicated row", "a value made missing", "a dropped column",
                                    "a duplicated column"])
def test_any_changed_value_changes_the_fingerprint(lung, lung_fp, change):
    changed = _changed(lung)[change]
    assert fingerprint(changed) != lung_fp
    assert fingerprint(shuffled_renamed(changed)) == fingerprint(changed)  # and the changed data is itself stable


def test_a_swap_that_only_exchanges_two_whole_rows_is_no_change():
    frame = pd.DataFrame({"t": [1.0, 2.0, 3.0], "e": [1, 0, 1], "g": ["a", "b", "a"]})
    swapped = frame.copy()
    swapped.loc[[0, 2], "t"] = [3.0, 1.0]  # rows 0 and 2 differ only in t: the same rows, in another order
    assert fingerprint(swapped) == fingerprint(frame)


def test_text_and_missing_values():
    a = pd.DataFrame({"g": ["x", "y", None], "t": [1.0, np.nan, 3.0]})
    assert fingerprint(a) == fingerprint(a.iloc[::-1])
    assert fingerprint(a) != fingerprint(a.fillna({"g": "None"}))
    assert fingerprint(a) != fingerprint(a.fillna({"t": 0.0}))
    assert fingerprint(pd.DataFrame({"t": [0.0, 1.0]})) == fingerprint(pd.DataFrame({"t": [-0.0, 1.0]}))


def test_columns_with_the_same_values_in_another_arrangement_keep_the_fingerprint_when_reordered():
    # two flags with as many ones have equal column keys: their order must still not matter
    frame = pd.DataFrame({"t": [5.0, 8.0, 2.0, 9.0], "flag_a": [1, 0, 1, 0], "flag_b": [0, 0, 1, 1]})
    fp = fingerprint(frame)
    assert fingerprint(frame[["flag_b", "t", "flag_a"]]) == fp
    assert fingerprint(frame[["t", "flag_b", "flag_a"]].iloc[[3, 1, 0, 2]]) == fp
    hypothesis_case = pd.DataFrame({"c0": [0, 0, 1], "c1": [None, None, "a"], "c2": [None, "a", None]})
    assert fingerprint(hypothesis_case[["c0", "c2", "c1"]]) == fingerprint(hypothesis_case)
    batches = lambda f: (f.iloc[i:i + 2] for i in range(0, len(f), 2))  # noqa: E731
    moved = frame[["flag_b", "flag_a", "t"]]
    assert fingerprint_batches(batches(moved), batches(moved)) == fp


def test_tied_columns_still_tell_different_tables_apart():
    # swapping the tied columns' values in rows 0 and 1 keeps every column's values and every row's values as a
    # set, but the table is not the same up to row and column order
    a = pd.DataFrame({"x": [1, 2, 1, 2], "y": [2, 1, 2, 1], "z": ["p", "q", "r", "s"]})
    b = pd.DataFrame({"x": [2, 1, 1, 2], "y": [1, 2, 2, 1], "z": ["p", "q", "r", "s"]})
    assert fingerprint(a) != fingerprint(b)
    assert fingerprint(a.rename(columns={"x": "y", "y": "x"})) == fingerprint(a)
    assert fingerprint(pd.DataFrame({"x": [2, 1], "y": [1, 2]})) == fingerprint(pd.DataFrame({"x": [1, 2], "y": [2, 1]}))


# ------------------------------------------------------------------------------------------ property
CELL = {
    "int": st.integers(-5, 5),
    "float": st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)),
    "text": st.one_of(st.none(), st.sampled_from(["a", "b", "c", "dd", "e f"])),
}


@st.composite
def frames(draw) -> pd.DataFrame:
    kinds = draw(st.lists(st.sampled_from(sorted(CELL)), min_size=1, max_size=4))
    n = draw(st.integers(1, 8))
    data = {f"c{j}": draw(st.lists(CELL[k], min_size=n, max_size=n)) for j, k in enumerate(kinds)}
    return pd.DataFrame(data)


@given(frame=frames(), data=st.data())
def test_property_permutations_keep_and_one_cell_changes_alter_the_fingerprint(frame, data):
    fp = fingerprint(frame)
    rows = data.draw(st.permutations(range(len(frame))), label="rows")
    cols = data.draw(st.permutations(range(frame.shape[1])), label="columns")
    moved = frame.iloc[list(rows), list(cols)].reset_index(drop=True)
    moved.columns = [f"renamed {k}" for k in range(moved.shape[1])]
    assert fingerprint(moved) == fp

    i = data.draw(st.integers(0, len(frame) - 1), label="row")
    j = data.draw(st.integers(0, frame.shape[1] - 1), label="column")
    col = frame.iloc[:, j]
    old = col.iloc[i]
    if pd.api.types.is_integer_dtype(col):
        new = data.draw(st.integers(-5, 5).filter(lambda v: v != old), label="new")
    elif pd.api.types.is_float_dtype(col):
        new = data.draw(st.one_of(st.none(), st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)), label="new")
        assume(not (pd.isna(old) and new is None) and not (new is not None and not pd.isna(old) and new == old))
        new = np.nan if new is None else new
    else:
        new = data.draw(st.one_of(st.none(), st.sampled_from(["a", "b", "c", "dd", "e f", "g"])), label="new")
        assume(not (pd.isna(old) and new is None) and new != old)
    changed = frame.copy()
    changed.iloc[i, j] = new
    assert fingerprint(changed) != fp


# ------------------------------------------------------------------------------------------ through the CLI
def test_reuploading_under_another_name_does_not_reset_the_budget(capsys, tmp_path, lung):
    assert main(["km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.375", "--grid", "0:1100:20",
                 "--json"]) == 0
    capsys.readouterr()
    copy = tmp_path / "renamed_lung_copy.csv"
    shuffled_renamed(lung, 11).to_csv(copy, index=False)
    assert main(["budget", "show", "--data", str(copy), "--json"]) == 0
    o = json.loads(capsys.readouterr().out)
    assert o["spent"] == pytest.approx(0.375) and len(o["releases"]) == 1
    assert o["releases"][0]["dataset"] == "lung" and o["releases"][0]["epsilon"] == pytest.approx(0.375)
    assert o["fingerprint"] == LedgerStore().key(fingerprint(lung)) != fingerprint(lung)  # shown by its key only
    # a cap set through the copy governs releases on the bundled name
    assert main(["budget", "set", "--data", str(copy), "--cap", "0.5", "--json"]) == 0
    capsys.readouterr()
    assert main(["km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.25", "--grid",
                 "0:1100:20", "--json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "exceed the cap by 0.125" in err


def test_a_changed_copy_has_its_own_budget(capsys, tmp_path, lung):
    assert main(["km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.5", "--horizon", "1100",
                 "--json"]) == 0
    capsys.readouterr()
    changed = lung.drop(index=0)
    path = tmp_path / "lung_minus_one.csv"
    changed.to_csv(path, index=False)
    assert main(["budget", "show", "--data", str(path), "--json"]) == 0
    o = json.loads(capsys.readouterr().out)
    assert o["spent"] == 0.0 and o["releases"] == [] and o["fingerprint"] != fingerprint(lung)


def test_csv_and_tsv_files_fingerprinted_by_duckdb_agree_with_the_data_layer(tmp_path):
    """CSV files are fingerprinted by DuckDB on the file (every column read as text, numbers as numbers); the result
    must equal the in-memory one."""
    from dpsurv_core.privacy.fingerprint_sql import fingerprint_path

    frame = datasets.load("lung")
    path = tmp_path / "lung_copy.csv"
    frame.sample(frac=1, random_state=3).to_csv(path, index=False)
    assert fingerprint_path(path) == fingerprint(frame)
    tsv = tmp_path / "lung.tsv"
    frame.to_csv(tsv, index=False, sep="\t")
    assert fingerprint_path(tsv) == fingerprint(frame)
