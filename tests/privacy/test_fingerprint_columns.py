"""The fingerprint of distinct rows given as NumPy columns (the cold path of a release: no pandas) is the value of the
frame path, and a text column is told from a number column as ``pandas.to_numeric`` tells them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.privacy.fingerprint import (
    dictionary_words,
    fingerprint_columns,
    fingerprint_counted,
    not_a_number,
    number_words,
    pandas_words,
)

SHAPES = st.text(alphabet=st.sampled_from(list(" \t\x0b\x00+-.eEinfatyNI0123456789xAb_,Å\u00a0")), max_size=8)
TEXTS = st.one_of(st.none(), SHAPES, st.text(max_size=4))


@given(text=TEXTS.filter(lambda t: t is not None))
def test_a_text_not_a_number_is_no_number_to_pandas(text):
    if not_a_number(text):
        assert pd.isna(pd.to_numeric(pd.Series([text], dtype=object), errors="coerce").iloc[0])


INTEGERS = st.builds(lambda pre, n, post: f"{pre}{n}{post}", st.sampled_from(["", " ", "\t", "+", " -", "\x0b0"]),
                     st.integers(-10**17, 10**17), st.sampled_from(["", " ", "\r\n", "\x0c"]))
COLUMNS = st.one_of(st.lists(TEXTS, max_size=6), st.lists(st.one_of(st.none(), INTEGERS), max_size=6),
                    st.lists(st.one_of(INTEGERS, SHAPES), max_size=4))


@given(values=COLUMNS)
def test_dictionary_words_are_pandas_typing_words(values):
    uniques = list(dict.fromkeys(values))
    arr = np.empty(len(uniques), dtype=object)
    arr[:] = uniques
    got, want = dictionary_words(arr), pandas_words(arr)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    frame = pd.DataFrame({"v": pd.Series(arr, dtype=object)})
    ones = np.ones(len(arr), dtype=np.uint64)
    if len(arr):
        assert fingerprint_columns([arr], ones) == fingerprint_counted(frame, ones)


def test_integer_texts_are_numbers_without_pandas():
    arr = np.array([" 7", "+3", None, "-0", "123456789012345"], dtype=object)
    got = dictionary_words(arr)
    assert np.array_equal(got[0], pandas_words(arr)[0])
    assert np.array_equal(got[0][[0, 1, 3]], number_words(np.array([7.0, 3.0, 0.0])))


@st.composite
def counted(draw) -> tuple[list[np.ndarray], np.ndarray]:
    n = draw(st.integers(1, 8))
    columns = []
    for kind in draw(st.lists(st.sampled_from(["number", "text", "labels"]), min_size=1, max_size=4)):
        if kind == "number":
            cells = draw(st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6), st.integers(-3, 3)), min_size=n,
                                  max_size=n))
            columns.append(np.array([np.nan if v is None else float(v) for v in cells], dtype="float64"))
        else:
            pool = TEXTS if kind == "text" else st.one_of(st.none(), st.sampled_from(["A", "B", " 2", "3.5"]))
            col = np.empty(n, dtype=object)
            col[:] = draw(st.lists(pool, min_size=n, max_size=n))
            columns.append(col)
    counts = np.array(draw(st.lists(st.integers(1, 5), min_size=n, max_size=n)), dtype=np.uint64)
    return columns, counts


@given(table=counted())
def test_columns_give_the_frame_paths_fingerprint(table):
    columns, counts = table
    frame = pd.DataFrame({f"v{j}": c for j, c in enumerate(columns)})
    assert fingerprint_columns(columns, counts) == fingerprint_counted(frame, counts)
