"""Value labels: the bundled data sets' R labels, code matching, relabelling for display, JSON round trips."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.labels import (
    CATEGORICAL,
    NUMERIC,
    ValueLabels,
    bundled,
    bundled_names,
    code_key,
    code_keys,
    group_labels,
    guess_kind,
    indicators,
)
from dpsurv_core.errors import DataError


def test_lung_ships_the_r_documentation_labels():
    lab = datasets.info("lung").labels
    assert lab.label("sex", 1) == "Male" and lab.label("sex", 2.0) == "Female"
    assert lab.label("ph.ecog", 0.0).startswith("ECOG 0: asymptomatic")
    assert lab.label("ph.ecog", 4) == "ECOG 4: bedbound"
    assert lab.label("status", 1) == "Dead"  # the CSV's 0/1 recoding, not R's 1/2
    assert lab.kind("sex") == CATEGORICAL and lab.kind("ph.ecog") == CATEGORICAL and lab.kind("age") == NUMERIC
    assert lab.describe("ph.karno").startswith("Karnofsky")


@pytest.mark.parametrize(("name", "column", "code", "label"), [
    ("veteran", "trt", 1, "Standard"), ("veteran", "trt", 2, "Test"), ("veteran", "celltype", "adeno", "Adenocarcinoma"),
    ("veteran", "prior", 10, "Prior therapy"), ("flchain", "sex", "F", "Female"), ("flchain", "sex", "M", "Male"),
    ("kidney", "sex", 2, "Female"), ("kidney", "disease", "PKD", "Polycystic kidney disease (PKD)"),
    ("pbc", "trt", 1.0, "D-penicillamine"), ("pbc", "edema", 0.5, "Edema, untreated or successfully treated"),
    ("pbc", "status", 1, "Transplant"), ("ovarian", "resid.ds", 2, "Residual disease"),
    ("transplant", "event", "ltx", "Liver transplant"), ("myeloid", "trt", "B", "Arm B"),
])
def test_bundled_labels(name, column, code, label):
    assert bundled(name).label(column, code) == label


@pytest.mark.parametrize("name", datasets.names())
def test_every_code_of_a_labelled_bundled_column_has_a_label(name):
    """Labels name columns that exist, and every value of a labelled column in the CSV has its label."""
    lab, table = bundled(name), datasets.load(name)
    assert name in bundled_names()
    for col in [*lab.values, *lab.kinds, *lab.descriptions]:
        assert col in table.columns, (name, col)
    for col, mapping in lab.values.items():
        codes = {code_key(v) for v in table[col].dropna().unique()}
        assert codes <= set(mapping), (name, col, codes - set(mapping))


def test_group_codes_of_a_cohort_find_their_labels():
    """The cohort's group strings ('1', '2', '0.5') are the keys the labels use."""
    cohort = load_bundled("pbc", group="edema")
    lab = bundled("pbc")
    assert [lab.label("edema", g) for g in cohort.groups] == [
        "No edema", "Edema, untreated or successfully treated", "Edema despite diuretic therapy"]
    assert group_labels(lab, "edema", cohort.groups) == {"0": "No edema", "0.5": "Edema, untreated or successfully "
                                                         "treated", "1": "Edema despite diuretic therapy"}
    assert group_labels(None, "edema", [1.0]) == {"1": "1"}


def test_code_key():
    assert [code_key(v) for v in (2.0, np.float64(0.5), np.int64(3), " F ", "2.0", True, None, np.nan)] == [
        "2", "0.5", "3", "F", "2", "1", "", ""]


def test_relabel_is_a_display_copy():
    frame = pd.DataFrame({"sex": [1.0, 2.0, np.nan, 3.0], "age": [50, 60, 70, 80]})
    lab = ValueLabels({"sex": {1: "Male", "2": "Female"}})
    out = lab.relabel(frame)
    assert out["sex"].tolist()[:2] == ["Male", "Female"] and pd.isna(out["sex"][2]) and out["sex"][3] == 3.0
    assert out["age"].tolist() == [50, 60, 70, 80]
    assert frame["sex"].tolist()[:2] == [1.0, 2.0]  # the input is untouched
    assert lab.display("sex", 1) == "Male (1)" and lab.display("sex", 3) == "3" and lab.display(None, 3) == "3"


def test_edits_return_new_objects_and_merge_over_bundled():
    base = bundled("lung")
    mine = ValueLabels().with_labels("sex", {1: "Men", 2: "Women"}).with_kind("inst", NUMERIC)
    both = base.merged(mine)
    assert both.label("sex", 1) == "Men" and both.kind("inst") == NUMERIC and both.label("ph.ecog", 0).startswith("ECOG")
    assert base.label("sex", 1) == "Male"  # unchanged
    assert mine.with_labels("sex", {}).has_labels("sex") is False
    assert mine.with_kind("inst", None).kind("inst") == NUMERIC  # no mark, no labels: numeric
    assert mine.with_labels("sex", {1: "  ", 2: "Women"}).labels_for("sex") == {"2": "Women"}


def test_reference_level():
    lab = bundled("veteran")
    assert lab.reference("celltype", ["adeno", "large", "smallcell", "squamous"]) == "squamous"  # declared
    assert lab.reference("trt", [2, 1]) == "1"  # first in natural order, as R's first factor level
    assert ValueLabels().reference("x", ["10", "9", "b", "a"]) == "9"
    assert lab.with_reference("trt", 2).reference("trt", [1, 2]) == "2"
    with pytest.raises(DataError):
        lab.reference("trt", [])


def test_kinds_guessed_from_content():
    assert guess_kind(pd.Series([1, 2, 1, 2])) == CATEGORICAL
    assert guess_kind(pd.Series([0.0, 1.0, 2.0, 3.0, np.nan])) == CATEGORICAL
    assert guess_kind(pd.Series(["a", "b"])) == CATEGORICAL
    assert guess_kind(pd.Series([True, False])) == CATEGORICAL
    assert guess_kind(pd.Series(range(40, 80))) == NUMERIC
    assert guess_kind(pd.Series([0.5, 1.5, 2.5])) == NUMERIC
    assert ValueLabels().kind("sex", pd.Series([1, 2])) == CATEGORICAL
    with pytest.raises(DataError, match="mark it"):
        ValueLabels(kinds={"x": "ordinal"})


def test_json_round_trip_and_bad_documents():
    lab = bundled("lung").with_reference("sex", 2)
    again = ValueLabels.from_json(json.loads(json.dumps(lab.to_json())))
    assert again == lab
    assert ValueLabels.from_json(None) == ValueLabels()
    with pytest.raises(DataError):
        ValueLabels.from_json(["sex"])
    with pytest.raises(DataError):
        ValueLabels.from_json({"values": {"sex": "Male"}})


codes = st.one_of(st.integers(-5, 20), st.sampled_from(["a", "B", "ctl", "6-MP"]))


@given(st.dictionaries(codes, st.text(min_size=1, max_size=8).filter(str.strip), max_size=6),
       st.lists(codes, max_size=30))
def test_relabel_maps_exactly_the_labelled_codes(mapping, values):
    lab = ValueLabels({"c": mapping})
    out = lab.relabel(pd.DataFrame({"c": pd.Series(values, dtype=object)}))
    for before, after in zip(values, out["c"], strict=True):
        key = code_key(before)
        assert after == (lab.labels_for("c")[key] if key in lab.labels_for("c") else before)
    assert ValueLabels.from_json(lab.to_json()) == lab


def test_indicators_follow_rs_treatment_contrasts():
    lung = datasets.load("lung")
    ind, ref, names = indicators(lung["sex"], "sex", bundled("lung"))
    assert ref == "1" and list(ind.columns) == ["sex2"] and names == {"sex2": "sex: Female vs Male"}
    assert ind["sex2"].sum() == 90 and len(ind) == 228
    ecog, ref, names = indicators(lung["ph.ecog"], "ph.ecog", bundled("lung"))
    assert ref == "0" and list(ecog.columns) == ["ph.ecog1", "ph.ecog2", "ph.ecog3"]
    assert ecog.isna().all(axis=1).sum() == 1  # the one patient without ECOG stays missing
    vet, ref, _ = indicators(datasets.load("veteran")["celltype"], "celltype", bundled("veteran"))
    assert ref == "squamous" and list(vet.columns) == ["celltypeadeno", "celltypelarge", "celltypesmallcell"]
    _, ref, _ = indicators(lung["sex"], "sex", bundled("lung"), reference=2)
    assert ref == "2"
    with pytest.raises(DataError, match="reference level"):
        indicators(lung["sex"], "sex", reference=3)


@given(st.lists(st.one_of(st.none(), st.integers(-10**6, 10**6), st.floats(-1e6, 1e6), st.just(float("nan")),
                          st.sampled_from([" a ", "2.0", "-3.0", "x.0", "F"])), max_size=40),
       st.sampled_from(["object", "float", "int"]))
def test_code_keys_is_code_key_vectorised(values, kind):
    if kind == "float":
        series = pd.Series([v for v in values if isinstance(v, float | int) and v is not None], dtype=float)
    elif kind == "int":
        series = pd.Series([v for v in values if isinstance(v, int) and not isinstance(v, bool)], dtype="int64")
    else:
        series = pd.Series(values, dtype=object)
    assert code_keys(series).tolist() == [code_key(v) for v in series]
