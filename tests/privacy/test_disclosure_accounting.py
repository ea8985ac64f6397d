"""Disclosures travel with each release into the ledger, the reports and the bundle; a release that is not DP
(or protects only a label) leaves the subject without a guarantee, and the ledger says so."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from dpsurv_core.curves.laplace_counts import LaplaceCounts
from dpsurv_core.curves.rrr import RandomizedResponse
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.privacy.noise import SimulationNoise
from dpsurv_core.regression.person_period import person_period
from dpsurv_core.report.html import ReleaseItem, curve_records, release_bundle, session_report
from dpsurv_core.weibull.mechanisms import SampleAggregateWeibull


@pytest.fixture(scope="module")
def lung():
    return load_bundled("lung", group="sex")


def _charge(ledger, mech, release):
    return ledger.charge(mech.ledger_entry("lung", disclosures=release.disclosures))


def test_dp_releases_keep_a_finite_subject_guarantee(lung):
    public = PublicParameters.derive(lung, horizon=1100)
    mech = LaplaceCounts(1.0)
    ledger = Ledger(5)
    _charge(ledger, mech, mech.compute(lung, public, SimulationNoise(1)))
    assert ledger.void_reasons() == []
    assert ledger.subject_guarantee().startswith("epsilon = 1 ")


def test_event_time_grid_release_voids_the_subject_guarantee(lung):
    public = PublicParameters.derive(lung, grid=TimeGrid.event_times(lung))
    mech = LaplaceCounts(1.0)
    ledger = Ledger(5)
    rel = mech.compute(lung, public, SimulationNoise(1))
    entry = _charge(ledger, mech, rel)
    assert any(not d["dp"] for d in entry.disclosures)
    reasons = ledger.void_reasons()
    assert len(reasons) == 1 and "time axis taken from the data" in reasons[0]
    assert ledger.subject_guarantee().startswith("none:")
    # the round trip keeps the disclosures, hence the verdict
    assert Ledger.from_json(ledger.to_json()).void_reasons() == reasons


def test_label_only_release_voids_the_subject_guarantee(lung):
    public = PublicParameters.derive(lung, horizon=1100)
    mech = RandomizedResponse(1.0, ("1", "2"))
    ledger = Ledger(5)
    ledger.label_only_allowed = True  # under a cap a label-only release needs the data holder's recorded allowance
    _charge(ledger, mech, mech.compute(lung, public, SimulationNoise(1)))
    assert ledger.spent() == 0.0  # nothing is charged to the subject ...
    assert "published as they are" in " ".join(ledger.void_reasons())  # ... because nothing protects it


def test_randomized_response_refuses_undeclared_labels():
    vet = load_bundled("veteran", group="celltype")
    public = PublicParameters.derive(vet, horizon=1000, group_categories=("adeno", "smallcell", "squamous"))
    with pytest.raises(ParameterError, match="outside the declared categories"):
        RandomizedResponse(1.0, ("adeno", "smallcell", "squamous")).compute(vet, public, SimulationNoise(1))


def test_reports_and_bundle_carry_the_disclosures(lung):
    public = PublicParameters.derive(lung, grid=TimeGrid.event_times(lung))
    mech = LaplaceCounts(1.0)
    ledger = Ledger(5)
    rel = mech.compute(lung, public, SimulationNoise(1))
    entry = _charge(ledger, mech, rel)
    item = ReleaseItem("curves", entry, curve_records(rel), None, rel, list(entry.disclosures))
    html = session_report("r", "lung", ledger, [item], [], "release")
    assert "Not differentially private</b> (grid)" in html
    assert "no differential-privacy guarantee" in html
    assert "horizon" in html  # the data-derived horizon is listed too
    _, payload = release_bundle(item.records, ledger, item.disclosures)
    data = json.loads(payload)
    assert any(not d["dp"] for d in data["disclosures"])
    assert data["ledger"]["subject_guarantee"].startswith("none:")


def test_noise_scales_read_off_the_data_are_flagged_not_dp(lung):
    # SAA: the number of blocks sets the noise scale
    saa = SampleAggregateWeibull(1.0, 1100.0)
    sample = saa.prepare(lung)
    assert [d.dp for d in saa.disclosures(sample)] == [False]
    assert SampleAggregateWeibull(1.0, 1100.0, blocks=1).disclosures(sample) == []
    # regression: the objective's normaliser n scales the noise
    cohort = load_bundled("lung", covariates=("age", "sex"))
    derived = person_period(cohort, ("age", "sex"), horizon=1100.0, ranges={"age": (18.0, 100.0), "sex": (1.0, 2.0)})
    assert [d.dp for d in derived.disclosures if d.parameter == "n"] == [False]
    declared = person_period(cohort, ("age", "sex"), horizon=1100.0, n_public=228,
                             ranges={"age": (18.0, 100.0), "sex": (1.0, 2.0)})
    assert not [d for d in declared.disclosures if d.parameter == "n"]


@pytest.mark.slow
@pytest.mark.parametrize("mechanism, extra", [
    ("time-indexed", ["--epsilon", "2"]),
    ("rrr", ["--group", "sex", "--epsilon", "1"]),
    ("adaptive-km", ["--epsilon", "1"]),
])
def test_report_command_builds_every_curve_mechanism(mechanism, extra, tmp_path):
    out = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "dpsurv_core", "report", "--data", "lung", "--mechanism", mechanism,
                        "--grid", "0:1100:20", *extra, "--out", str(out), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["mechanism"] == mechanism and out.exists()
    if mechanism == "time-indexed":
        assert res["ledger"]["entries"][0]["cost"]["epsilon"] == pytest.approx(2.0)
    if mechanism == "rrr":
        assert res["ledger"]["subject_guarantee"].startswith("none:")
        assert res["epsilon_spent"] == 1.0 and res["protects"] == "the group label only"
