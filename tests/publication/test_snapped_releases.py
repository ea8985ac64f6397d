"""What the catalogue says is snapped is snapped: every real in a release record's ``released`` part lies on the 2^-20
grid (Mironov 2012's snapping) whenever the mechanism's catalogue entry claims it, and a mechanism that claims nothing
releases whole numbers only. One real release (OpenDP's samplers, the ledger) of every catalogue mechanism with a
formal guarantee, plus the variants whose arithmetic leaves the grid: competing events scaled down to the number at
risk, the mean of several pSGLD draws, objective perturbation's noisy information matrix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from dpsurv_core.cli import main
from dpsurv_core.privacy import catalogue
from dpsurv_core.privacy.ledger import RELEASE, LedgerStore

GRID = 2.0**20
LUNG = ("--data", "lung", "--horizon", "1100")


def _argv(family: str, mechanism: str) -> list[str]:
    if family == catalogue.CURVES:
        return ["km", *LUNG, "--group", "sex", "--grid", "0:1100:20", "--mechanism", mechanism, "--epsilon", "1"]
    if family == catalogue.WEIBULL:
        return ["weibull", *LUNG, "--censoring", "0.28", "--n-public", "228", "--mechanism", mechanism,
                "--epsilon", "1", "--rungs", "50", *(["--blocks", "2"] if mechanism == "saa" else [])]
    return ["regression", *LUNG, "--covariates", "age,sex", "--range", "age:39:82", "--range", "sex:1:2",
            "--n-public", "228", "--intervals", "10", "--mechanism", mechanism, "--epsilon", "1",
            *(["--epochs", "4", "--burn-in", "2"] if mechanism == "psgld" else [])]


FORMAL = [(e.family, e.id) for e in catalogue.ENTRIES if e.private and e.formal]
VARIANTS = {
    "laplace-counts competing": (catalogue.CURVES, "laplace-counts",
                                 ["km", "--data", "pbc", "--estimand", "cumulative-incidence", "--horizon", "4800",
                                  "--grid", "0:4800:40", "--mechanism", "laplace-counts", "--epsilon", "0.3"]),
    "objective information": (catalogue.REGRESSION, "objective",
                              [*_argv(catalogue.REGRESSION, "objective"), "--information-share", "0.2"]),
    "psgld draws": (catalogue.REGRESSION, "psgld", [*_argv(catalogue.REGRESSION, "psgld"), "--draws", "3"]),
}
CASES = ([pytest.param(f, m, _argv(f, m), id=f"{f}-{m}") for f, m in FORMAL]
         + [pytest.param(*v, id=k) for k, v in VARIANTS.items()])


def _reals(value: Any, path: str = "released") -> Iterator[tuple[str, float]]:
    """Every float of a JSON value with its path."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _reals(v, f"{path}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _reals(v, f"{path}[{i}]")
    elif isinstance(value, float):
        yield path, value


def _release(capsys, argv: list[str]) -> dict[str, Any]:
    """The stored record of one real release (label-only releases allowed first)."""
    data = argv[argv.index("--data") + 1]
    assert main(["budget", "allow-label-only", "--data", data, "--reason", "snapping test", "--json"]) == 0
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    shown = json.loads(out.splitlines()[-1])["publishable"]["released"]
    stored = [r.body for r in LedgerStore().records() if r.kind == RELEASE]
    assert len(stored) == 1 and stored[0]["released"] == shown
    return shown


def test_every_mechanism_with_a_formal_guarantee_is_checked():
    assert {(f, m) for f, m in FORMAL} == {(e.family, e.id) for e in catalogue.ENTRIES if e.private and e.formal}
    assert len(FORMAL) >= 10


@pytest.mark.parametrize("family, mechanism, argv", CASES)
def test_released_reals_lie_on_the_grid_the_catalogue_claims(capsys, family, mechanism, argv):
    entry = catalogue.get(family, mechanism)
    reals = list(_reals(_release(capsys, argv)))
    if "2^-20" in entry.noise:
        off = [(p, v) for p, v in reals if not float(v * GRID).is_integer()]
        assert off == [], f"{entry.id} claims snapping but releases {len(off)} real(s) off the 2^-20 grid: {off[:3]}"
    else:
        assert all(float(v).is_integer() for _, v in reals), f"{entry.id} claims no snapping but releases fractions"
