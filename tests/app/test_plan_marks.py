"""A plan in the ledger seen from the app: where a data set's cap was set from a plan (``budget set --plan``), the
confirmation box says whether a release is one of the plan's, an app release is marked "as planned" in its record
as a command-line release is, and a deviation is released only once its box is ticked, marked as confirmed in the
app."""

from __future__ import annotations

from dpsurv_core.privacy.ledger import RELEASE, LedgerStore
from tests.app.apptest import ok, releases
from tests.app.test_pages_curves import CURVES, run
from tests.cli_run import run as cli
from tests.planning.test_plan_ledger import plan_file as ledger_plan_file


def plan_file(tmp_path, mechanism: str, epsilon: float) -> str:
    """A plan file with one planned curve release and one Weibull release, made for a cap of 3."""
    return ledger_plan_file(tmp_path, ((mechanism, epsilon), ("lsp-tll", 0.5)), cap=3.0)


def box_text(at) -> str:
    """The page's Markdown as read (Markdown's escapes taken out)."""
    return " ".join(m.value.replace("\\", "") for m in at.markdown)


def test_an_app_release_as_planned_is_marked_so_in_its_record(capsys, tmp_path):
    at = run(CURVES, grid=True)
    mechanism, epsilon = at.selectbox(key="sc_mechanism").value, float(at.select_slider(key="sc_epsilon").value)
    cli(capsys, "budget", "set", "--data", "lung", "--plan", plan_file(tmp_path, mechanism, epsilon))
    ok(at)
    at.button(key="release-curves").click()
    ok(at)
    assert "**Plan**: As planned: release 1 of the plan" in box_text(at)
    assert not at.button(key="confirm-release-curves").disabled
    at.button(key="confirm-release-curves").click()
    ok(at)
    (rec,) = releases()
    assert rec.body["note"].startswith(f"as planned: release 1 of the plan ({mechanism} at epsilon {epsilon:g}")


def test_a_deviation_needs_its_box_and_is_marked_confirmed_in_the_app(capsys, tmp_path):
    at = run(CURVES, grid=True)
    mechanism = at.selectbox(key="sc_mechanism").value
    cli(capsys, "budget", "set", "--data", "lung", "--plan", plan_file(tmp_path, mechanism, 0.3))
    ok(at)  # the page's epsilon (1) is not the planned 0.3
    at.button(key="release-curves").click()
    ok(at)
    assert "this would be a deviation from plan" in box_text(at)
    assert at.button(key="confirm-release-curves").disabled  # nothing can be released before the box is ticked
    assert not [r for r in LedgerStore().records() if r.kind == RELEASE]
    at.checkbox(key="deviate-curves").check()
    ok(at)
    at.button(key="confirm-release-curves").click()
    ok(at)
    (rec,) = releases()
    assert rec.body["note"].startswith(f"deviation from plan: {mechanism} at epsilon 1 is not a planned release")
    assert rec.body["note"].endswith("confirmed in the app's confirmation box")


def test_without_a_plan_the_box_says_nothing_of_one():
    at = run(CURVES, grid=True)
    at.button(key="release-curves").click()
    ok(at)
    assert "**Plan**" not in box_text(at) and "deviation" not in box_text(at)
    assert "deviate-curves" not in [c.key for c in at.checkbox]


def test_the_report_of_a_release_shows_its_plan_mark(capsys, tmp_path):
    """A release report rebuilt from the ledger says whether each release was planned."""
    from dpsurv_core.report.stored import record_report

    cli(capsys, "budget", "set", "--data", "lung", "--plan", plan_file(tmp_path, "laplace-counts", 1.0))
    cli(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--grid", "0:1100:20")
    cli(capsys, "km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "0.5", "--grid", "0:1100:20",
        "--confirm-deviation")
    store = LedgerStore()
    (fp,) = {r.fingerprint for r in store.records() if r.kind == RELEASE}
    html = record_report("r", "lung", store.ledger(fp), store.release_records(fp)).to_html()
    assert "Plan: as planned: release 1 of the plan (laplace-counts at epsilon 1, survival curves)." in html
    assert "Plan: deviation from plan: laplace-counts at epsilon 0.5 is not a planned release" in html
