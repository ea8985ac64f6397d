"""Value labels: the bundled data sets' R labels, code matching, relabelling for display, JSON round trips."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.labels import (
    CATEGORICAL,
    NUMERIC,
    ValueLabels,
    bundled,
    bundled_names,
    categorical_columns,
    categorical_levels,
    code_key,
    code_keys,
    encode_categories,
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
    ind, cat = indicators(lung["sex"], "sex", bundled("lung"))
    assert (cat.reference, cat.reference_name) == ("1", "Male") and list(ind.columns) == ["sex=Female"]
    assert cat.display == {"sex=Female": "sex: Female vs Male"} and cat.declared
    assert ind["sex=Female"].sum() == 90 and len(ind) == 228
    np.testing.assert_array_equal(ind["sex=Female"].to_numpy(), (lung["sex"] == 2).to_numpy(dtype=float))
    ecog, cat = indicators(lung["ph.ecog"], "ph.ecog", bundled("lung"))
    assert cat.codes == ("0", "1", "2", "3")  # ECOG 4 is labelled but no one has it: no level, no column
    assert list(ecog.columns) == ["ph.ecog=ECOG 1: symptomatic, fully ambulatory", "ph.ecog=ECOG 2: in bed < 50% of "
                                  "the day", "ph.ecog=ECOG 3: in bed > 50% of the day, not bedbound"]
    assert ecog.isna().all(axis=1).sum() == 1 and ecog.isna().any(axis=1).sum() == 1  # the one without ECOG
    vet, cat = indicators(datasets.load("veteran")["celltype"], "celltype", bundled("veteran"))
    assert cat.reference == "squamous"  # the declared reference, not the first code
    assert list(vet.columns) == ["celltype=Adenocarcinoma", "celltype=Large cell", "celltype=Small cell"]
    for ref in (2, "2", 2.0, "Female", " Female "):  # a code or its label
        _, cat = indicators(lung["sex"], "sex", bundled("lung"), reference=ref)
        assert (cat.reference, cat.indicator_names) == ("2", ("sex=Male",))
    with pytest.raises(DataError, match=r"The reference level '3' is not a value of column 'sex': choose one of 1, "
                                        r"2 \(or their labels: Male, Female\)\."):
        indicators(lung["sex"], "sex", bundled("lung"), reference=3)
    with pytest.raises(DataError, match="is not a value of column 'sex': choose one of 1, 2.$"):
        indicators(lung["sex"], "sex", reference="Female")  # no labels: 'Female' means nothing


def test_categories_are_named_by_label_else_column_and_code_never_a_bare_number():
    s = pd.Series([1, 2, 10, 2, None])
    _, cat = indicators(s, "grp")
    assert cat.names == ("grp 1", "grp 2", "grp 10") and not cat.declared  # natural order: 10 after 2
    assert cat.disclosure().message == ("The categories of 'grp' (grp 1, grp 2, grp 10) were read off the data: "
                                        "declare them to avoid this disclosure.")
    _, cat = indicators(s, "grp", ValueLabels({"grp": {"1": "low", "2": "mid"}}))
    assert cat.names == ("low", "mid", "grp 10") and not cat.declared  # one code unlabelled: read off the data
    _, cat = indicators(pd.Series(["b", " a", "c", "10"]), "t", ValueLabels({"t": {"c": "3"}}))
    assert cat.names == ("10", "a", "b", "t 3")  # text codes are their own names; a label that reads as a number
    with pytest.raises(DataError, match="Two values of column 'grp' are both named 'x': give each value its own"):
        indicators(s, "grp", ValueLabels({"grp": {"1": "x", "2": "x"}}))
    with pytest.raises(DataError, match="Covariate 'e' has no values"):
        indicators(pd.Series([None, float("nan")]), "e")


def test_a_level_absent_from_the_data_has_no_column_and_a_code_outside_the_levels_is_all_zero():
    labels = ValueLabels({"arm": {"A": "Control", "B": "Drug", "C": "Drug + radiotherapy"}})
    train = pd.Series(["A", "B", "A", None])  # no one in arm C
    cat = categorical_levels(train, "arm", labels)
    assert cat.codes == ("A", "B") and cat.indicator_names == ("arm=Drug",) and cat.declared
    later = cat.indicators(pd.Series(["C", "B", "A"]))  # a new table holding the absent level
    assert later.to_numpy().tolist() == [[0.0], [1.0], [0.0]]
    with pytest.raises(DataError, match="The reference level 'C' is not a value of column 'arm'"):
        categorical_levels(train, "arm", labels, reference="C")


def test_encode_categories_gives_the_regression_its_levels_names_and_option():
    lung = datasets.load("lung")
    lab = bundled("lung").with_labels("sex", {1: "Men", 2: "Women"}).with_reference("sex", 2)
    cols = categorical_columns(lung, ["age", "sex", "ph.ecog", "wt.loss"], lab)
    assert cols == ["sex", "ph.ecog"]
    cats = encode_categories(lung, {**dict.fromkeys(cols), "ph.ecog": "ECOG 1: symptomatic, fully ambulatory"}, lab)
    assert cats.levels["sex"] == ("Women", "Men") and cats.levels["ph.ecog"][0].startswith("ECOG 1")
    assert cats.references == {"sex": "Women", "ph.ecog": "ECOG 1: symptomatic, fully ambulatory"}
    assert cats.reference_codes == {"sex": "2", "ph.ecog": "1"} and cats.option() == "sex:2,ph.ecog:1"
    assert cats.names["sex=Men"] == "sex: Men vs Women" and cats.disclosures == []
    assert cats.frame["sex"].tolist() == lung["sex"].map({1: "Men", 2: "Women"}).tolist()
    assert cats.frame["ph.ecog"].isna().sum() == 1 and cats.frame["age"].equals(lung["age"])
    assert encode_categories(lung, {}).option() is None
    with pytest.raises(DataError, match="There is no column 'arm'"):
        encode_categories(lung, {"arm": None})


@given(st.lists(st.one_of(st.none(), st.sampled_from([0, 1, 2, 3, 10])), min_size=1, max_size=60),
       st.sampled_from([None, 0, 1, 2, 3, 10]), st.booleans())
def test_each_row_has_at_most_one_indicator_and_the_reference_has_none(values, reference, labelled):
    series = pd.Series(values, dtype=float)
    present = {int(v) for v in values if v is not None}
    assume(present and (reference is None or reference in present))
    labels = ValueLabels({"x": {str(c): f"level {c}" for c in (0, 1, 2, 3, 10)}} if labelled else {})
    ind, cat = indicators(series, "x", labels, reference)
    assert len(cat.codes) == len(present) and ind.shape == (len(values), len(present) - 1)
    rows = ind.to_numpy()
    missing = series.isna().to_numpy()
    assert np.isnan(rows[missing]).all() and not np.isnan(rows[~missing]).any()
    seen = rows[~missing]
    assert set(np.unique(seen)) <= {0.0, 1.0} and (seen.sum(axis=1) <= 1).all()
    at_reference = series[~missing].map(code_key).to_numpy() == cat.reference
    assert (seen[at_reference] == 0).all() and (seen[~at_reference].sum(axis=1) == 1).all()
    assert cat.declared == labelled and (cat.disclosure() is None) == labelled


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
