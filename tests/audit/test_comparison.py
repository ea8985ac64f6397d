"""The board's comparison (DP against disclosure control), its report section and the audit page's tab."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from dpsurv_core.audit.comparison import compare, paragraph
from dpsurv_core.audit.figures import comparison_figure, comparison_section
from dpsurv_core.data.cohort import Cohort, load_bundled
from dpsurv_core.data.public import PublicParameters, TimeGrid
from dpsurv_core.privacy.ledger import Ledger
from dpsurv_core.report.html import Report

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(11)
    n = 60
    c = Cohort(rng.integers(1, 100, n).astype(float), (rng.random(n) < 0.7).astype(np.int64),
               rng.choice(["a", "b"], n).astype(object), name="small")
    pub = PublicParameters.derive(c, horizon=100.0, grid=TimeGrid(np.linspace(0, 100, 11), "equal"))
    return c, pub, compare(c, pub, 1.0, trials=40, seed=1)


def test_every_method_has_its_row_and_dp_exposes_nobody(small):
    c, pub, comp = small
    rows = {r.method: r for r in comp.rows}
    assert list(rows) == ["laplace-counts", "adaptive-km", "suppress-small-cells", "round", "random-round",
                          "cell-key", "smooth-steps"]
    for m in ("laplace-counts", "adaptive-km"):
        assert rows[m].exposed_share == 0.0 and rows[m].epsilon == 1.0 and not rows[m].certain
        assert rows[m].empirical_epsilon <= 1.0 and rows[m].kind == "differential privacy"
    for m in ("suppress-small-cells", "round", "random-round", "cell-key", "smooth-steps"):
        assert rows[m].epsilon is None and rows[m].guarantee.startswith("none")
        assert 0.0 <= rows[m].exposed_share <= 1.0 and rows[m].rmse >= 0 and rows[m].max_gap >= rows[m].rmse
    assert rows["random-round"].exposed_share == 0.0
    # certainty is reported as an infinite empirical epsilon (JSON null), never as a number limited by the runs
    for r in comp.rows:
        assert r.certain == math.isinf(r.empirical_epsilon)
        assert (r.to_dict()["empirical_epsilon"] is None) == r.certain
    table = comp.table()
    assert list(table.columns) == ["method", "kind", "RMSE", "largest gap", "exposed share",
                                   "strongest attack advantage", "empirical epsilon (95% lower bound)", "attacked",
                                   "within the charge", "formal guarantee"]


def test_the_board_attacks_each_method_s_whole_record_and_judges_on_both_attacks(small):
    """As the audit does: each row's attack is on the whole record a km release of the method makes (released counts,
    derived fields, warnings), on fewer runs, beside the output's; a DP method is within its charge only if both
    attacks are, and the table says what was attacked."""
    _, _, comp = small
    assert comp.record_trials == 40  # the smaller of the runs and BOARD_RECORD_TRIALS
    for r in comp.rows:
        assert r.attacked == "record" and r.record_trials == 40 and r.attacked_fields > 50
        d = r.to_dict()
        assert d["attacked"] == "record" and d["attacked_fields_count"] == r.attacked_fields
    for r in comp.rows[:2]:  # differential privacy: the verdict reads both bounds
        both = max(r.empirical_epsilon, r.output_empirical_epsilon) <= 1.0
        assert r.within_charge is both is True
    for r in comp.rows[2:]:
        assert r.within_charge is None
    table = comp.table()
    assert table["attacked"].str.startswith("whole record (").all()
    assert table["within the charge"].tolist() == ["yes", "yes"] + ["no charge"] * 5
    rep = Report("t", "small", Ledger(), "review")
    comparison_section(rep, comp)
    assert "40 for the attack on the whole record" in rep.to_html()
    out_only = compare(small[0], small[1], 1.0, dp=("laplace-counts",), sdc=(), trials=20, seed=1, record_trials=0)
    assert out_only.rows[0].attacked == "output" and out_only.table()["attacked"][0].startswith("output only")


def test_the_paragraph_speaks_of_a_patient_and_quotes_the_numbers(small):
    _, _, comp = small
    text = paragraph(comp)
    worst = max((r for r in comp.rows if r.epsilon is None), key=lambda r: r.exposed_share)
    assert "patient" in text and f"{100 * worst.exposed_share:.0f}%" in text and "epsilon 1" in text
    assert "46%" in text  # what epsilon 1 allows at most


def test_report_section_and_figure(small):
    _, _, comp = small
    fig = comparison_figure(comp)
    assert {t.name for t in fig.data} == {"differential privacy", "disclosure control"}
    rep = Report("t", "small", Ledger(), "review")
    comparison_section(rep, comp)
    html = rep.to_html()
    assert "disclosure control" in html and "exposed share" in html and "CONFIDENTIAL" in html


def test_kidney_is_compared_at_the_subject_level():
    c = load_bundled("kidney", group="sex")
    assert c.rows_per_subject == 2 and c.n_subjects == c.n // 2
    pub = PublicParameters.derive(c)
    comp = compare(c, pub, 1.0, dp=("laplace-counts",), sdc=("round",), trials=20)
    assert comp.n_subjects == 38
    assert comp.rows[0].epsilon == 1.0 and comp.rows[1].exposed_share > 0


def test_audit_page_comparison_tab():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "dpsurv_app" / "pages" / "6_Privacy_audit.py"), default_timeout=120)
    at.run()
    assert not at.exception
    at.select_slider(key="bd_runs").set_value(40).run()
    at.button(key="bd_run").click().run()
    assert not at.exception
    assert len(at.dataframe) >= 1
    assert any("patient in this cohort" in m.value for m in at.markdown)
    # kept for the review with the epsilon and mechanisms it ran, to be tied to the releases made at that epsilon
    (board,) = [a for a in at.session_state["stored_audits"] if a.analysis == "board"]
    assert board.title.endswith("epsilon 1") and board.epsilon == 1.0
    assert board.mechanisms == ("laplace-counts", "adaptive-km") and "attacked" in board.tables[0].columns
    at.selectbox(key="au_mechanism_km").set_value("suppress-small-cells").run()
    at.select_slider(key="au_runs_km_suppress-small-cells").set_value(40).run()
    at.button(key="au_run").click().run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Charged epsilon"] == "none: no formal guarantee"
    assert metrics["Empirical epsilon lower bound"] == "infinite" and metrics["Exposed share"].endswith("%")
