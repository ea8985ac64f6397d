"""The audit attacks the whole release record: every numeric field of released and derived, and each warning.

A reader that leaks the exact data (the true n, through a side channel), and a record maker that reads the data set
it ran on (intervals simulated at the exact n), are caught: the empirical epsilon lower bound exceeds the charge.
The real readers stay within it.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from dpsurv_core.audit import record, runner
from dpsurv_core.audit.record import AuditNoise, Publisher, feature_table, features
from dpsurv_core.cli import build_parser, main
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.publication import readers
from tests.audit import leaky

LUNG_ARGS = ["audit", "--data", "lung", "--time", "time", "--event", "status"]


@pytest.fixture(scope="module")
def lung() -> tuple[Cohort, PublicParameters]:
    cohort = load_bundled("lung", group="sex")
    return cohort, PublicParameters.derive(cohort, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))


def run_cli(args: list[str], capsys) -> tuple[int, dict | None]:
    code = main(args + ["--json"])
    out, _ = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else None)


# ----------------------------------------------------------------------------------------- features
def test_a_record_is_flattened_into_named_fields():
    rec = {"released": {"counts": {"n": [[10, 12]]}, "noise": "x"},
           "derived": {"medians": [{"median": 5.0, "median_lower": None, "group": "1"}], "flag": True,
                       "warnings": ["The band of group 1 reaches 0.25 at 30 days.", "No events."]},
           "other": {"ignored": 1}}
    numbers, flags = features(rec)
    assert numbers["released.counts.n[0][1]"] == 12.0 and numbers["derived.flag"] == 1.0
    assert math.isnan(numbers["derived.medians[0].median_lower"]) and numbers["derived.warnings length"] == 2.0
    assert 'derived.warnings has "No events."' in flags and 'derived.medians[0].group = "1"' in flags
    assert 'derived.warnings has a text like "The band of group # reaches # at # days."' in flags
    assert not any(k.startswith("other") for k in [*numbers, *flags])
    # two records: a field absent or null in one is NaN there and has its 0/1 'is null' column
    other = {"released": {"counts": {"n": [[11, 12]]}, "noise": "x"},
             "derived": {"medians": [{"median": None, "median_lower": 3.0, "group": "1"}], "flag": False,
                         "warnings": []}}
    table = feature_table([rec, other])
    col = {n: j for j, n in enumerate(table.names)}
    assert table.matrix[:, col["derived.medians[0].median is null"]].tolist() == [0.0, 1.0]
    assert table.matrix[:, col['derived.warnings has "No events."']].tolist() == [1.0, 0.0]
    assert table.matrix[:, col["derived.warnings length"]].tolist() == [2.0, 0.0]


def test_simulation_noise_describes_itself_alike_on_both_data_sets():
    """The two streams' seeds differ, a release's description does not: the record must not leak the seed."""
    a, b = record.record_noises(3)
    assert a.describe() == b.describe() and isinstance(a, AuditNoise)
    assert a.rng.standard_normal() != b.rng.standard_normal()


# ----------------------------------------------------------------------------------------- the JSON
def test_audit_json_lists_the_released_and_derived_fields_it_attacked(capsys):
    code, out = run_cli(LUNG_ARGS + ["--group", "sex", "--analysis", "km", "--mechanism", "laplace-counts",
                                     "--horizon", "1100", "--trials", "40", "--record-trials", "20"], capsys)
    assert code == 0 and out["attacked"] == "record" and out["record_trials"] == 20 and out["held_out_runs"] == 10
    fields = out["attacked_fields"]
    assert out["attacked_fields_count"] == len(fields) > 300
    for f in ("derived.medians[0].median_lower", "derived.survival[1][5]", "derived.lower[0][3]",
              "released.counts.events[0][0][0][0]", "released.counts.n[0][1]"):
        assert f in fields
    assert any(f.startswith("derived.warnings has") for f in fields)  # each warning's presence
    assert out["record_rederives"] is True and "km command's release plan" in out["record_source"]
    assert out["output_attack"]["trials"] == 40 and out["output_attack"]["held_out_runs"] == 20
    assert "output_attack" in out["record_note"] and out["within_charge"] is True


def test_logrank_audit_attacks_the_calibrated_tests(capsys):
    code, out = run_cli(LUNG_ARGS + ["--group", "sex", "--analysis", "logrank", "--mechanism", "laplace-counts",
                                     "--horizon", "1100", "--trials", "20", "--record-trials", "8"], capsys)
    assert code == 0 and out["record_kind"] == "logrank"
    assert {"derived.overall.p_value", "derived.overall.statistic", "derived.tests[0].critical_value_95"} <= set(
        out["attacked_fields"])


def test_record_trials_zero_or_no_reader_attacks_the_output_only(capsys, lung):
    code, out = run_cli(LUNG_ARGS + ["--analysis", "km", "--mechanism", "laplace-counts", "--trials", "20",
                                     "--record-trials", "0"], capsys)
    assert code == 0 and out["attacked"] == "output" and out["record_trials"] is None
    assert out["attacked_fields"] and all(f.startswith("output.") for f in out["attacked_fields"])
    cohort, public = lung
    # no noise: not a release, so there is no record to attack
    assert runner.make_adapter("km", "nonprivate", 1.0, cohort, public, record=True).publisher is None
    # and a caller that does not ask for the record audits the output only
    assert runner.make_adapter("km", "laplace-counts", 1.0, cohort, public).publisher is None
    assert runner.make_adapter("km", "laplace-counts", math.inf, cohort, public, record=True).publisher is None


def test_the_cli_attacks_the_record_the_km_command_makes(lung):
    """The audit's records come from the km command's own plan: for one draw, the record the audit makes is the
    publication a release of that plan would record."""
    from dpsurv_core.cli import audit as audit_cli
    from dpsurv_core.cli import km

    argv = LUNG_ARGS + ["--group", "sex", "--analysis", "km", "--mechanism", "laplace-counts", "--horizon", "1100"]
    args = build_parser().parse_args(argv)
    cohort, public, _ = km.load(args)
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, cohort, public, record=True)
    pub = audit_cli.plan_publisher(build_parser().parse_args(argv), adapter)
    plan, _, _, _ = km.plan(build_parser().parse_args(argv))
    rel = plan.compute(AuditNoise(7), 1)
    assert pub.publish(rel.released) == plan.publication(rel).to_dict()
    # the page's path (make_adapter) reads the same numbers; only the group names it is given differ
    mine = adapter.publisher.publish(rel.released)
    assert mine["derived"]["survival"] == pub.publish(rel.released)["derived"]["survival"]


# ----------------------------------------------------------------------------------------- leaks are caught
def test_a_leaky_reader_is_caught_and_the_real_one_stays_within_its_charge(lung, monkeypatch):
    """A reader that puts the exact n into derived (and a warning quoting it) is told apart with certainty: the empirical
    epsilon lower bound exceeds the charge of 1, the field is named, and the records do not re-derive. The real curves
    reader on the same draws stays within the charge."""
    cohort, public = lung
    monkeypatch.setitem(readers.READERS, "leaky", "tests.audit.leaky:read")
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, cohort, public, record=True)
    real = runner.audit(adapter, trials=40, seed=1, record_trials=60)
    assert real.record is not None and real.record.rederives is True
    assert real.empirical_epsilon <= 1.0 and real.within_charge is True

    adapter.publisher = leaky.curves_publisher(adapter.publisher)
    res = runner.audit(adapter, trials=40, seed=1, record_trials=60)
    assert res.record.attack.runs == 30 and res.empirical_epsilon > 1.0 and res.within_charge is False
    assert res.headline.tpr == 1.0 and res.headline.fpr == 0.0
    assert "derived.n_subjects" in res.record.separating and "derived.n_subjects" in res.attacked_fields
    assert res.record.rederives is False
    d = res.to_dict()
    assert d["empirical_epsilon_lower"] > d["epsilon_charged"] and "derived.n_subjects" in d["separating_fields"]
    assert d["output_attack"]["empirical_epsilon_lower"] <= 1.0  # the mechanism's output alone shows nothing


def test_a_record_maker_that_reads_the_data_is_caught(lung):
    """A ``publish_on`` record maker (a band widened by a function of the exact data) is caught; the generic
    machinery takes any ``publish(released) -> record`` callable."""
    cohort, public = lung
    adapter = runner.make_adapter("km", "laplace-counts", 1.0, cohort, public, record=True)
    base = adapter.publisher

    def publish_on(c: Cohort):
        share = float(np.mean(c.event))  # read off the data set the release ran on

        def make(released):
            rec = base.publish(released)
            rec["derived"]["event_share"] = round(share, 4)
            return rec

        return make

    adapter.publisher = Publisher(base.draw, base.publish, "curves", source="test", publish_on=publish_on)
    res = runner.audit(adapter, trials=20, seed=2, record_trials=40)
    assert res.empirical_epsilon > 1.0 and res.within_charge is False
    assert "derived.event_share" in res.record.separating and res.record.rederives is False


@pytest.mark.slow
@pytest.mark.parametrize("analysis", ["km", "logrank"])
def test_real_curve_records_stay_within_the_charge_at_the_default_runs(lung, analysis):
    cohort, public = lung
    res = runner.audit(runner.make_adapter(analysis, "laplace-counts", 1.0, cohort, public, record=True), trials=400, seed=3)
    assert res.record.trials == record.RECORD_TRIALS and res.record.attack.runs == 100
    assert res.empirical_epsilon <= 1.0 and res.within_charge is True


@pytest.mark.slow
def test_weibull_intervals_at_the_exact_n_are_caught_and_at_a_declared_n_are_not():
    """lsp-tll at epsilon 1 on lung: the Weibull reader's intervals are attacked. Simulated at the declared n (the
    same on D and D'), they stay within the charge; simulated at the exact n of the data set each release ran on (the
    record weibull made before its reader), an attacker who re-makes the record both ways tells D from D' every
    time: 30 records per data set, 15 held out, empirical epsilon >= 1.28 > 1."""
    pytest.importorskip("dpsurv_core.weibull.readout")
    cohort = load_bundled("lung")
    public = PublicParameters.derive(cohort, horizon=1100.0, grid=TimeGrid.equal(0.0, 1100.0, 20))
    adapter = runner.make_adapter("weibull", "lsp-tll", 1.0, cohort, public, record=True, rungs=100)
    real = adapter.publisher
    assert real.public_inputs["n"] == cohort.n_subjects  # the declared n is D's: on D the exact-n records are these
    seen: dict = {}
    adapter.publisher = leaky.observed(real, seen)  # the real reader on every call; its records noted for reuse
    declared = runner.audit(adapter, trials=40, seed=4, record_trials=30)
    assert any(f.startswith("derived.intervals[0].shape.lower") for f in declared.attacked_fields)
    assert declared.record.rederives is True and declared.empirical_epsilon <= 1.0
    # the same seed draws the same releases: their exact-n records on D are the ones just read (about a third of the
    # readings this audit would make)
    adapter.publisher = leaky.exact_n_weibull(real, seen)
    exact = runner.audit(adapter, trials=40, seed=4, record_trials=30)
    assert exact.empirical_epsilon > 1.0 and exact.record.rederives is False
    assert exact.headline.tpr == 1.0 and exact.headline.fpr == 0.0
