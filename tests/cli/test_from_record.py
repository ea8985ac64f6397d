"""``km --from-record N`` and ``logrank --from-record N``: a stored curve release read again, with no data read,
nothing drawn, nothing charged and no new record."""

from __future__ import annotations

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from dpsurv_core.publication.reading import find_release, read_record, release_part
from tests.cli_run import fails, run

KM = ("km", "--data", "lung", "--group", "sex", "--mechanism", "laplace-counts", "--epsilon", "1",
      "--grid", "0:1100:20")


def _releases(path) -> list:
    return [r for r in LedgerStore(path).records() if r.kind == RELEASE]


def test_the_tests_of_a_stored_curve_release_charge_nothing(capsys, ledger_path):
    made = run(capsys, *KM)
    (record,) = _releases(ledger_path)
    got = run(capsys, "logrank", "--from-record", str(made["record_id"]))
    assert got["reading_of"] == record.id and got["epsilon_spent"] == 0.0 and got["record_id"] is None
    assert got["release_epsilon"] == 1.0 and got["guarantee"] == made["guarantee"]
    assert got["fingerprint"] == record.fingerprint and got["fingerprint"].startswith("k")
    # exactly the reader's log-rank reading of the stored record, the same the next time
    assert got["overall"] == read_record(record.body, "logrank")["overall"]
    assert run(capsys, "logrank", "--from-record", "1")["overall"] == got["overall"]
    assert 0.0 < got["overall"]["p_value"] <= 1.0 and got["tests"][0]["group_a_label"] == "Male"
    shown = run(capsys, "budget", "show", "--data", "lung")
    assert len(_releases(ledger_path)) == 1 and shown["spent"] == 1.0


def test_other_landmarks_and_rmst_from_a_stored_release(capsys, ledger_path):
    made = run(capsys, *KM, "--landmarks", "365")
    again = run(capsys, "km", "--from-record", "1", "--landmarks", "365,730", "--rmst", "700")
    assert [m["time_requested"] for m in again["landmarks"] if m["group"] == "1"] == [365.0, 730.0]
    first = next(m for m in made["landmarks"] if m["group"] == "1")
    assert next(m for m in again["landmarks"] if m["group"] == "1")["survival"] == first["survival"]
    assert {r["group"] for r in again["rmst"]} == {"1", "2"}
    assert len(_releases(ledger_path)) == 1


def test_a_reading_never_redefines_the_release(capsys, ledger_path):
    run(capsys, *KM)
    for extra in (("--epsilon", "2"), ("--data", "lung"), ("--grid", "0:900:10"), ("--mechanism", "rrr")):
        line = fails(capsys, "logrank", "--from-record", "1", *extra)
        assert extra[0] in line and "new release" in line
    assert "no record 9" in fails(capsys, "km", "--from-record", "9")
    assert "--data" in fails(capsys, "km")
    assert len(_releases(ledger_path)) == 1


def test_one_group_and_no_counts_are_refused_in_one_sentence(capsys, ledger_path):
    run(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20")
    assert "one group" in fails(capsys, "logrank", "--from-record", "1")
    run(capsys, "km", "--data", "lung", "--group", "sex", "--mechanism", "time-indexed", "--epsilon", "1",
        "--grid", "0:1100:20")
    assert "no counts" in fails(capsys, "logrank", "--from-record", "2")


def test_find_release_matches_the_plan_not_its_reading(capsys, ledger_path):
    run(capsys, *KM, "--landmarks", "365")
    run(capsys, *KM[:-2], "--grid", "0:1100:10")
    first, second = _releases(ledger_path)
    records = LedgerStore(ledger_path).records()
    inputs = dict(first.body["public_inputs"], reading={"conf_type": "plain"}, tests={"null_draws": 99})
    assert find_release(records, inputs).id == first.id
    assert find_release(records, second.body["public_inputs"]).id == second.id
    assert find_release(records, dict(release_part(first.body["public_inputs"]), epsilon=2.0)) is None
