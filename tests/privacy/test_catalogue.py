"""The mechanism catalogue: every entry builds, its mechanism's cost is the entry's cost and agrees with what the
entry says it protects, `mechanisms --json` lists it, and every command offers exactly the catalogue's ids."""

from __future__ import annotations

import json
import math

import pytest

from dpsurv_core import cli
from dpsurv_core.data.cohort import load_bundled
from dpsurv_core.errors import ParameterError
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.catalogue import CURVES, REGRESSION, WEIBULL
from dpsurv_core.privacy.ledger import (
    ADD_REMOVE,
    APPROXIMATE_MCMC,
    CHANGE_LABEL,
    DISCLOSURE_CONTROL,
    EXACT,
    GROUP_LABEL,
    NO_FORMAL,
    SUBJECT,
)
from dpsurv_core.privacy.mechanism import Mechanism
from dpsurv_core.regression.person_period import person_period

IDS = [f"{e.family}/{e.id}" for e in catalogue.ENTRIES]


@pytest.fixture(scope="module")
def pp():
    return person_period(load_bundled("lung", covariates=("age", "sex")), ["age", "sex"], horizon=1100.0, intervals=10,
                         knots=3)


def params(entry: catalogue.Entry, pp) -> dict:
    """Sensible parameters for an entry: the context its command would pass."""
    if entry.family == CURVES:
        return {"rows_per_subject": 1, "n_points": 20, "categories": ("1", "2")}
    if entry.family == WEIBULL:
        return {"horizon": 1100.0}
    return {"pp": pp}


def test_ids_are_unique_within_a_family_and_families_are_known():
    for fam in catalogue.FAMILIES:
        ids = catalogue.ids(fam)
        assert len(ids) == len(set(ids)) and ids
    assert {e.family for e in catalogue.ENTRIES} == set(catalogue.FAMILIES)
    assert len(catalogue.ENTRIES) >= 10
    for fam in catalogue.FAMILIES:
        assert catalogue.default_id(fam) in catalogue.ids(fam, private=True)
        assert catalogue.reference_id(fam) in catalogue.ids(fam, private=False)


@pytest.mark.parametrize("entry", catalogue.ENTRIES, ids=IDS)
def test_every_entry_builds_and_its_cost_is_the_entrys_cost(entry, pp):
    eps = 0.7
    p = params(entry, pp)
    if entry.family == REGRESSION and not entry.private:
        # the non-private fits are functions, not mechanisms: nothing about them can be released
        assert callable(entry.mechanism_class())
        with pytest.raises(ParameterError, match="non-private fit, not a mechanism"):
            entry.build(eps, **p)
        return
    mech = entry.build(eps, **p)
    assert isinstance(mech, Mechanism) and isinstance(mech, entry.mechanism_class())
    assert mech.cost == entry.cost(eps, **p)
    if not entry.formal:  # disclosure control: no epsilon at all (None, never 0 or inf), whatever the caller passed
        assert mech.cost.epsilon is None and not mech.cost.formal and entry.guarantee == "no formal guarantee"
        assert entry.to_dict()["formal_guarantee"] is False and entry.to_dict()["epsilon_applies"] is False
        assert catalogue.find(mech.name) is entry
    elif entry.private:
        assert mech.cost.epsilon == pytest.approx(eps)
        assert (mech.cost.protects, mech.cost.neighbouring, mech.cost.guarantee) == \
            (entry.protects, entry.neighbouring, entry.guarantee)
        assert catalogue.find(mech.name) is not None and catalogue.find(mech.name).private
    else:
        assert math.isinf(mech.cost.epsilon) and entry.guarantee == "none" and entry.neighbouring == "none"


def test_what_each_private_entry_protects():
    by = {(e.family, e.id): e for e in catalogue.ENTRIES}
    assert (by[CURVES, "rrr"].protects, by[CURVES, "rrr"].neighbouring) == (GROUP_LABEL, CHANGE_LABEL)
    assert by[REGRESSION, "psgld"].guarantee == APPROXIMATE_MCMC
    for e in catalogue.entries(private=True):
        if not e.formal:
            assert (e.protects, e.guarantee) == (DISCLOSURE_CONTROL, NO_FORMAL), e.id
            continue
        if (e.family, e.id) != (CURVES, "rrr"):
            assert (e.protects, e.neighbouring) == (SUBJECT, ADD_REMOVE), e.id
        if (e.family, e.id) != (REGRESSION, "psgld"):
            assert e.guarantee == EXACT, e.id


def test_costs_follow_from_the_parameters():
    lc = catalogue.get(CURVES, "laplace-counts")
    three = lc.build(0.5, rows_per_subject=3)
    assert three.cost.epsilon == 0.5 and three.parameters()["scale"] == pytest.approx(2 * 3 / 0.5)
    ti = catalogue.get(CURVES, "time-indexed")
    # as published: base epsilon e per step, total e n (1 + alpha (n + 1) / 2)
    assert ti.cost(None, n_points=20, base_epsilon=0.01, alpha=0.5).epsilon == pytest.approx(0.01 * 20 * 6.25)
    assert ti.cost(1.5, n_points=20).epsilon == pytest.approx(1.5)
    rrr = catalogue.get(CURVES, "rrr").build(2.0, categories=("a", "b", "c"))
    assert rrr.cost.epsilon == 2.0 and rrr.cost.protects == GROUP_LABEL


@pytest.mark.parametrize("family,mechanism,params,words", [
    (CURVES, "rrr", {}, "rrr randomizes the group label: choose a group column with two or more groups."),
    (CURVES, "rrr", {"categories": ("only",)}, "two or more groups"),
    (CURVES, "time-indexed", {}, "number of public grid points"),
    (WEIBULL, "lsp-tll", {}, "public horizon"),
    (REGRESSION, "output", {}, "person-period design"),
])
def test_missing_context_is_one_sentence(family, mechanism, params, words):
    with pytest.raises(ParameterError, match=words.replace(".", r"\.")):
        catalogue.get(family, mechanism).build(1.0, **params)


@pytest.mark.parametrize("family,mechanism", [(CURVES, "laplace-counts"), (WEIBULL, "saa"), (REGRESSION, "objective")])
def test_a_private_entry_needs_a_positive_epsilon(family, mechanism, pp):
    entry = catalogue.get(family, mechanism)
    for bad in (None, 0.0, -1.0):
        with pytest.raises(ParameterError, match="epsilon"):
            entry.build(bad, **params(entry, pp))


def test_unknown_ids_name_the_choices():
    with pytest.raises(ParameterError, match="Unknown curves mechanism 'nosuch': choose one of nonprivate, "
                                             "laplace-counts"):
        catalogue.get(CURVES, "nosuch")
    assert catalogue.get(CURVES, "nonprivate") is not catalogue.get(REGRESSION, "nonprivate")


def test_mechanisms_json_lists_the_catalogue(capsys):
    assert cli.main(["mechanisms", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) >= 10 and len(rows) == len(catalogue.ENTRIES)
    for row, e in zip(rows, catalogue.ENTRIES):
        for key in ("id", "name", "analysis", "paper", "protects", "neighbouring", "noise"):
            assert isinstance(row[key], str) and row[key], (e.id, key)
        assert (row["id"], row["family"], row["protects"], row["neighbouring"], row["private"]) == \
            (e.id, e.family, e.protects, e.neighbouring, e.private)
    assert cli.main(["mechanisms", "--family", "weibull", "--json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == catalogue.ids(WEIBULL)


def _choices() -> dict[str, list[str]]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    out = {}
    for name, p in sub.choices.items():
        for a in p._actions:
            if a.dest == "mechanism":
                out[name] = list(a.choices)
    return out


def test_every_command_offers_exactly_the_catalogue_ids():
    choices = _choices()
    assert choices["km"] == catalogue.ids(CURVES, "km")
    assert choices["logrank"] == catalogue.ids(CURVES, "logrank")
    assert choices["weibull"] == catalogue.ids(WEIBULL, "weibull")
    assert choices["regression"] == catalogue.ids(REGRESSION, "regression")
    assert choices["report"] == catalogue.ids(CURVES, "report", private=True)  # a report releases private curves
    audit = list(dict.fromkeys(i for fam in catalogue.FAMILIES for i in catalogue.ids(fam, "audit")))
    assert choices["audit"] == audit
    assert set(choices) == {"km", "logrank", "weibull", "regression", "report", "audit"}


def test_only_mechanisms_whose_bands_carry_the_noise_say_so():
    """The catalogue's flag drives the sentence printed beside every preview: every DP mechanism, and of the disclosure
    control methods the two random perturbations (random rounding, cell keys), whose bands redraw them."""
    from types import SimpleNamespace

    from dpsurv_core.privacy.release import uncertainty_sentence

    flagged = [e.id for e in catalogue.entries() if e.interval_includes_noise]
    assert set(flagged) == {e.id for e in catalogue.entries(private=True) if e.formal} | {"random-round", "cell-key"}
    for e in catalogue.entries(private=True):
        plan = SimpleNamespace(private=True, entry=e)
        text = uncertainty_sentence(plan)
        if not e.formal:  # the random perturbations' bands carry them; the deterministic rules' bands do not
            assert "no formal guarantee" in text
            assert ("do not account" in text) != e.interval_includes_noise
            assert ("so they carry it" in text) == e.interval_includes_noise
            continue
        assert ("too narrow" in text) != e.interval_includes_noise


def test_one_option_spec_makes_the_flags_and_the_widgets():
    """Every option a curve entry lists has one specification, the entries that share it agree on its default, the
    command line refuses what the widget's bounds refuse, and the widget's bounds hold the default."""
    import argparse

    from dpsurv_core.cli import disclosure_options
    from dpsurv_core.privacy.options import OPTIONS, defaults, takers

    listed = {k for i in catalogue.ids(catalogue.CURVES) for k in catalogue.get(catalogue.CURVES, i).options}
    assert listed - {"base_epsilon", "sample_size", "censoring"} <= set(OPTIONS)
    parser = argparse.ArgumentParser()
    disclosure_options.add_arguments(parser)
    for name, spec in OPTIONS.items():
        if not takers(name, catalogue.CURVES):
            continue
        default = defaults(name, catalogue.CURVES)
        widget = spec.widget(default)  # refuses a default outside the widget's bounds
        assert (widget.label, widget.help, widget.value) == (spec.label, spec.help, default)
        if spec.kind == "choice":
            assert widget.choices == spec.choices
            continue
        low, high = widget.low, widget.high
        assert (low, high) == (spec.low, spec.high if spec.high is not None else spec.widget_high)
        with pytest.raises(SystemExit):
            parser.parse_args([spec.flag, str(low - 1)])
        assert getattr(parser.parse_args([spec.flag, str(default)]), name) == default
