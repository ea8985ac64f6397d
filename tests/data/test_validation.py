"""Column mapping and validation: every problem is one sentence naming the column; and public parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpsurv_core.data import datasets
from dpsurv_core.data.cohort import ColumnMap, build_cohort, load_bundled, validate
from dpsurv_core.data.io import read_table
from dpsurv_core.data.public import PublicParameters, TimeGrid, nice_ceiling
from dpsurv_core.errors import DataError, ParameterError


def frame(time, event, **extra) -> pd.DataFrame:
    return pd.DataFrame({"time": time, "status": event, **extra})


def errors(problems):
    return [p for p in problems if p.severity == "error"]


def warnings(problems):
    return [p for p in problems if p.severity == "warning"]


M = ColumnMap(time="time", event="status")


def test_clean_data_gives_a_cohort_and_no_problem():
    cohort, problems = validate(frame([5, 8, 12], [1, 0, 1]), M)
    assert problems == []
    assert cohort.time.tolist() == [5.0, 8.0, 12.0] and cohort.event.tolist() == [1, 0, 1]
    assert cohort.n == 3 and cohort.n_events == 2 and cohort.n_subjects == 3


def test_non_numeric_time_names_the_row():
    cohort, problems = validate(frame(["5", "eight", "12"], [1, 0, 1]), M)
    assert cohort is None
    (p,) = errors(problems)
    assert p.column == "time" and "row 3" in p.message and "'eight'" in p.message


def test_missing_time():
    cohort, problems = validate(frame([5, None, 12], [1, 0, 1]), M)
    assert cohort is None
    (p,) = errors(problems)
    assert p.column == "time" and "1 missing time" in p.message and "row 3" in p.message


def test_zero_time_is_a_warning_and_the_data_is_kept():
    cohort, problems = validate(frame([0, 8, 12], [1, 0, 1]), M)
    assert cohort is not None and cohort.time[0] == 0
    (p,) = problems
    assert p.severity == "warning" and p.column == "time" and "equal to 0" in p.message


def test_negative_time_is_an_error():
    cohort, problems = validate(frame([-3, 8, 12], [1, 0, 1]), M)
    assert cohort is None
    (p,) = errors(problems)
    assert p.column == "time" and "negative" in p.message and "-3" in p.message


def test_infinite_time():
    cohort, problems = validate(frame([np.inf, 8, 12], [1, 0, 1]), M)
    assert cohort is None and "infinite" in errors(problems)[0].message


@pytest.mark.parametrize("values", [
    ["true", "false", "TRUE"], ["yes", "no", "Yes"], ["Y", "n", "y"], [True, False, True], ["dead", "alive", "died"],
])
def test_event_words_are_accepted(values):
    cohort, problems = validate(frame([5, 8, 12], values), M)
    assert errors(problems) == []
    assert cohort.event.tolist() == [1, 0, 1]


def test_event_values_other_than_0_1_are_refused_with_a_hint():
    cohort, problems = validate(frame([5, 8, 12], [1, 2, 2]), M)
    assert cohort is None
    (p,) = errors(problems)
    assert p.column == "status" and "besides 0 and 1" in p.message and "declare event code 2" in p.message


def test_event_text_values_other_than_known_words_are_refused():
    cohort, problems = validate(frame([5, 8, 12], ["relapse", "none", "relapse"]), M)
    assert cohort is None
    assert "'none'" in errors(problems)[0].message and "'relapse'" in errors(problems)[0].message


def test_declared_event_codes():
    m = ColumnMap(time="time", event="status", event_codes=(2,), censor_codes=(1,))
    cohort, problems = validate(frame([5, 8, 12, 3], [1, 2, 2, 1]), m)
    assert problems == [] and cohort.event.tolist() == [0, 1, 1, 0]
    # floats read from a file ("2.0") match the declared code 2
    cohort, _ = validate(frame([5, 8], [2.0, 1.0]), m)
    assert cohort.event.tolist() == [1, 0]
    # text codes
    m2 = ColumnMap(time="time", event="status", event_codes=("relapse",), censor_codes=("none",))
    cohort, _ = validate(frame([5, 8, 12], ["relapse", "none", "Relapse"]), m2)
    assert cohort.event.tolist() == [1, 0, 1]


def test_declared_codes_refuse_undeclared_values():
    m = ColumnMap(time="time", event="status", event_codes=(2,), censor_codes=(1,))
    cohort, problems = validate(frame([5, 8, 12], [1, 2, 9]), m)
    assert cohort is None and "'9'" in errors(problems)[0].message


def test_missing_event_value():
    cohort, problems = validate(frame([5, 8, 12], [1, None, 0]), M)
    assert cohort is None and errors(problems)[0].column == "status" and "missing event" in errors(problems)[0].message


def test_all_censored_is_kept_with_one_warning_as_r_keeps_it():
    cohort, problems = validate(frame([5, 8, 12], [0, 0, 0]), M)
    assert cohort is not None and cohort.n_events == 0 and not errors(problems)
    (p,) = [p for p in problems if p.severity == "warning"]
    assert p.column == "status" and p.message.startswith("No events were observed: the curve stays at 1 and no "
                                                         "quantile is reached.")


def test_a_group_with_too_few_subjects_is_a_warning_naming_the_group():
    arm = ["A"] * 10 + ["B"] * 2
    cohort, problems = validate(frame(list(range(1, 13)), [1, 0] * 6, arm=arm), ColumnMap("time", "status", group="arm"))
    assert cohort is not None and cohort.groups == ["A", "B"]
    (p,) = warnings(problems)
    assert p.column == "arm" and "'B' (2 subjects)" in p.message and "fewer than 5" in p.message


def test_single_group_and_continuous_group():
    _, problems = validate(frame([1, 2, 3, 4, 5], [1] * 5, arm=["A"] * 5), ColumnMap("time", "status", group="arm"))
    assert any("single group" in p.message for p in warnings(problems))
    n = 30
    cohort, problems = validate(frame(list(range(1, n + 1)), [1] * n, x=np.arange(n) * 1.5),
                                ColumnMap("time", "status", group="x"))
    assert cohort is None and "looks continuous" in errors(problems)[0].message


def test_group_labels_print_integral_floats_without_decimals():
    cohort, _ = validate(frame(list(range(1, 11)), [1] * 10, g=[1.0, 2.0] * 5), ColumnMap("time", "status", group="g"))
    assert cohort.groups == ["1", "2"]


def test_missing_columns_and_same_column_twice():
    cohort, problems = validate(frame([1, 2], [1, 0]), ColumnMap("futime", "status", group="arm"))
    assert cohort is None
    assert {p.column for p in problems} == {"futime", "arm"}
    assert all("choose one of time, status" in p.message for p in problems)
    cohort, problems = validate(frame([1, 2], [1, 0]), ColumnMap("time", "time"))
    assert cohort is None and "different columns" in problems[0].message


def test_covariate_problems():
    df = frame([1, 2, 3, 4, 5], [1, 0, 1, 1, 0], age=["50", "61", "x", "70", "55"], site=[1] * 5,
               empty=[None] * 5)
    cohort, problems = validate(df, ColumnMap("time", "status", covariates=("age", "site", "empty")))
    assert cohort is None
    by_col = {p.column: p for p in problems}
    assert by_col["age"].severity == "error" and "row 4" in by_col["age"].message
    assert by_col["site"].severity == "warning" and "constant" in by_col["site"].message
    assert by_col["empty"].severity == "error" and "missing for every subject" in by_col["empty"].message


def test_build_cohort_raises_the_first_error_with_its_column():
    with pytest.raises(DataError) as exc:
        build_cohort(frame([-1, 2], [1, 0]), M)
    assert exc.value.column == "time" and "negative" in str(exc.value)


def test_kidney_subject_bound_one_drops_38_rows_with_a_warning():
    df = datasets.load("kidney")
    assert len(df) == 76 and df["id"].nunique() == 38
    cohort, problems = validate(df, ColumnMap("time", "status", id="id", max_rows_per_subject=1))
    assert cohort is not None
    (p,) = warnings(problems)
    assert p.column == "id" and p.message.startswith("38 row(s) were dropped")
    assert cohort.n == 38 and cohort.n_subjects == 38 and cohort.rows_per_subject == 1
    assert np.unique(cohort.subject).size == 38
    # the kept row is each patient's first
    first = df.groupby("id", sort=False).head(1).reset_index(drop=True)
    assert cohort.time.tolist() == first["time"].astype(float).tolist()


def test_kidney_subject_bound_two_keeps_every_row():
    cohort, problems = validate(datasets.load("kidney"), ColumnMap("time", "status", id="id", max_rows_per_subject=2))
    assert problems == [] and cohort.n == 76 and cohort.n_subjects == 38 and cohort.rows_per_subject == 2
    assert cohort.n_events == 58


def test_missing_subject_id_and_bad_bound():
    cohort, problems = validate(frame([1, 2, 3], [1, 0, 1], id=[1, None, 2]), ColumnMap("time", "status", id="id"))
    assert cohort is None and errors(problems)[0].column == "id"
    cohort, problems = validate(frame([1, 2], [1, 0], id=[1, 2]), ColumnMap("time", "status", id="id",
                                                                             max_rows_per_subject=0))
    assert cohort is None and "at least 1" in problems[0].message


def test_competing_event_types_of_pbc():
    cohort = load_bundled("pbc", competing=True)
    assert cohort.event_type_labels == ("transplant", "death")
    assert int((cohort.event_type == 1).sum()) == 25 and int((cohort.event_type == 2).sum()) == 161
    assert int((cohort.event_type == 0).sum()) == 418 - 25 - 161
    # the survival event is death only: transplant counts as censored
    assert cohort.n_events == 161 and np.all(cohort.event == (cohort.event_type == 2))


def test_latin1_upload_validates_with_accented_labels():
    raw = "time,status,centre\n" + "".join(f"{i},{i % 2},{'Besançon' if i % 2 else 'Québec'}\n" for i in range(1, 13))
    df, warns = read_table(raw.encode("latin-1"), "latin.csv")
    cohort, problems = validate(df, ColumnMap("time", "status", group="centre"))
    assert warns and problems == []
    assert cohort.groups == ["Besançon", "Québec"]


@given(st.lists(st.tuples(st.floats(0.01, 1e4), st.booleans()), min_size=1, max_size=60))
def test_any_valid_table_round_trips(rows):
    times = [t for t, _ in rows]
    events = [int(e) for _, e in rows]
    events[0] = 1  # at least one event
    cohort, problems = validate(frame(times, events), M)
    assert errors(problems) == []
    assert np.allclose(cohort.time, times) and cohort.event.tolist() == events
    assert cohort.n_events == sum(events)


# ------------------------------------------------------------------------- public parameters

@pytest.mark.parametrize(("x", "expected"), [(1022, 1100), (5215, 5300), (1100, 1100), (999, 1000), (0.37, 0.37),
                                             (12.01, 13), (-5, 1.0), (0, 1.0)])
def test_nice_ceiling(x, expected):
    assert nice_ceiling(x) == pytest.approx(expected)


def test_grid_parsing():
    g = TimeGrid.parse("0:1100:20")
    assert g.bins == 20 and g.kind == "equal" and not g.from_data
    assert g.edges[0] == 0 and g.edges[-1] == 1100 and np.allclose(np.diff(g.edges), 55)
    assert g.points.tolist() == pytest.approx(np.arange(55, 1101, 55).tolist())
    assert g.disclosures() == []
    for bad in ("0:1100", "a:b:c", "0:1100:0", "100:50:4", "-1:10:2", "0:10:2.5", ""):
        with pytest.raises(ParameterError):
            TimeGrid.parse(bad)
    with pytest.raises(ParameterError):
        TimeGrid(np.array([0.0, 2.0, 1.0]))


def test_event_times_grid_is_flagged_not_dp():
    cohort = load_bundled("leukemia")
    g = TimeGrid.parse("event-times", cohort)
    assert g.kind == "event-times" and g.from_data
    assert g.points.tolist() == np.unique(cohort.time[cohort.event == 1]).tolist()
    (d,) = g.disclosures()
    assert d.dp is False and d.message.startswith("not DP")
    params = PublicParameters.derive(cohort, grid=g)
    assert any(not d.dp for d in params.disclosures())
    with pytest.raises(ParameterError):
        TimeGrid.parse("event-times")


def test_derived_horizon_and_ranges_are_disclosed_declared_ones_are_not():
    cohort = load_bundled("lung", group="sex", covariates=("age",))
    derived = PublicParameters.derive(cohort)
    assert derived.horizon == 1100 and derived.horizon_from_data
    assert derived.grid.bins == 20 and derived.grid.edges[-1] == 1100
    names = [d.parameter for d in derived.disclosures()]
    assert names == ["horizon", "groups", "range:age"]
    assert "1100" in derived.disclosures()[0].message
    assert derived.covariate_ranges["age"] == (39.0, 82.0)
    declared = PublicParameters.derive(cohort, horizon=1000, bins=10, group_categories=("1", "2"),
                                       covariate_ranges={"age": (18.0, 90.0)})
    assert declared.disclosures() == []
    assert declared.grid.bins == 10 and declared.grid.edges[-1] == 1000
    with pytest.raises(ParameterError):
        PublicParameters.derive(cohort, horizon=-1.0)


# ------------------------------------------------------------------------- odd inputs found by fuzzing

def test_numbers_stored_as_text_or_booleans_are_numeric_covariates():
    df = frame([1, 2, 3, 4], [1, 0, 1, 1], dose=["10", "20", None, "40"], flag=pd.Series([True, None, False, True],
                                                                                         dtype=object))
    cohort, problems = validate(df, ColumnMap("time", "status", covariates=("dose", "flag")))
    assert errors(problems) == []
    assert cohort.covariates["dose"].tolist()[:2] == [10.0, 20.0]
    assert pd.api.types.is_numeric_dtype(cohort.covariates["flag"])


def test_subject_ids_of_mixed_types_are_compared_as_text():
    df = frame([1, 2, 3, 4], [1, 0, 1, 1], id=pd.Series([7, "A12", "7", "A12"], dtype=object))
    cohort, problems = validate(df, ColumnMap("time", "status", id="id", max_rows_per_subject=1))
    assert cohort.n_subjects == 2 and cohort.n == 2
    assert warnings(problems)[0].message.startswith("2 row(s) were dropped")


def test_huge_group_codes_and_huge_times_do_not_crash():
    cohort, _ = validate(frame([1, 2, 3], [1, 0, 1], g=[9.2e18, 1.0, 1.0]), ColumnMap("time", "status", group="g"))
    assert len(cohort.groups) == 2
    assert nice_ceiling(1.234e300) == pytest.approx(1.3e300) and isinstance(nice_ceiling(1e20), float)
    big, _ = validate(frame([1e30, 2e30], [1, 0]), M)
    assert PublicParameters.derive(big).horizon == pytest.approx(2e30)


def test_infinite_covariate_is_an_error_beside_the_covariate():
    cohort, problems = validate(frame([1, 2, 3], [1, 0, 1], x=[np.inf, 3.0, 4.0]), ColumnMap("time", "status",
                                                                                           covariates=("x",)))
    assert cohort is None and errors(problems)[0].column == "x" and "1 infinite value" in errors(problems)[0].message


def test_header_of_numbers_and_absent_event_code_get_their_own_sentences():
    from dpsurv_core.data.cohort import ColumnMap, validate
    from dpsurv_core.data.io import read_table
    from dpsurv_core.errors import DataError

    with pytest.raises(DataError, match="holds numbers, not column names"):
        read_table(b"1,1,5\n2,1,6\n", "noheader.csv")  # two equal values in the first row: still 'no header'
    df = pd.DataFrame({"t": [1.0, 2.0, 3.0], "e": [0, 1, 0]})
    _, problems = validate(df, ColumnMap("t", "e", event_codes=("5",), censor_codes=("0", "1")))
    assert any("declared event code(s) 5" in p.message for p in problems)
