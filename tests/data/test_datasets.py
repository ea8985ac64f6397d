"""The twelve bundled data sets: counts of the R originals, declared columns and codes, provenance."""

from __future__ import annotations

import numpy as np
import pytest

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.summary import TIME_UNITS
from dpsurv_core.errors import DataError

# name: (subjects, rows, events) as R's survival / MASS packages count them
R_COUNTS = {
    "lung": (228, 228, 165), "kidney": (38, 76, 58), "leukemia": (23, 23, 18), "gehan": (42, 42, 30),
    "mgus2": (1384, 1384, 963), "myeloid": (646, 646, 320), "ovarian": (26, 26, 12), "stanford2": (184, 184, 113),
    "veteran": (137, 137, 128), "pbc": (418, 418, 161), "transplant": (815, 815, 66), "flchain": (7874, 7874, 2169),
}


def test_all_twelve_are_registered_in_order():
    assert datasets.names() == list(R_COUNTS)


@pytest.mark.parametrize("name", list(R_COUNTS))
def test_counts_match_r(name):
    subjects, rows, events = R_COUNTS[name]
    raw = datasets.load(name)
    assert len(raw) == rows
    cohort = load_bundled(name)
    assert (cohort.n_subjects, cohort.n, cohort.n_events) == (subjects, rows, events)
    assert np.all(cohort.time >= 0)


@pytest.mark.parametrize("name", list(R_COUNTS))
def test_metadata_is_complete_and_names_real_columns(name):
    d = datasets.info(name)
    cols = set(datasets.load(name).columns)
    assert d.title and "licence" in d.source and ("survival" in d.source or "MASS" in d.source)
    assert d.time_unit in TIME_UNITS
    assert {d.time, d.event} <= cols
    assert set(d.groups) <= cols and set(d.covariates) <= cols
    if d.id:
        assert d.id in cols
    if d.event_type:
        assert d.event_type in cols and d.event_types
    assert d.path.is_file() and d.path.stat().st_size < 2_000_000


def test_codes_kept_as_in_r():
    lung = datasets.load("lung")
    assert set(lung["status"]) == {0, 1}  # the one recoding: R's 1/2
    pbc = datasets.load("pbc")
    assert set(pbc["status"]) == {0, 1, 2}
    assert (pbc["status"] == 1).sum() == 25 and (pbc["status"] == 2).sum() == 161
    tr = datasets.load("transplant")
    assert set(tr["event"]) == {"censored", "death", "ltx", "withdraw"}
    assert (tr["event"] == "ltx").sum() == 636 and (tr["event"] == "withdraw").sum() == 37


def test_kidney_has_two_rows_per_patient():
    k = datasets.load("kidney")
    assert k.groupby("id").size().eq(2).all()
    info = datasets.info("kidney")
    assert info.id == "id" and info.rows_per_subject == 2


def test_competing_events_of_transplant():
    cohort = load_bundled("transplant", competing=True)
    counts = {lab: int((cohort.event_type == k).sum()) for k, lab in enumerate(cohort.event_type_labels, start=1)}
    assert counts == {"death": 66, "ltx": 636, "withdraw": 37}


def test_load_returns_a_fresh_copy():
    a = datasets.load("lung")
    a.loc[0, "time"] = -1
    assert datasets.load("lung").loc[0, "time"] != -1


def test_unknown_name_is_a_sentence():
    with pytest.raises(DataError) as exc:
        datasets.info("lungs")
    assert "no bundled data set called 'lungs'" in str(exc.value) and "lung, kidney" in str(exc.value)
