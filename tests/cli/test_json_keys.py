"""Every analysis command prints the same honesty keys, private or not: how its intervals were made, whether they
carry noise, the plain-sentence warnings (an empty list when there are none) and the privacy sentence."""

from __future__ import annotations

import json

import pytest

from dpsurv_core.cli import main

RUNS = [
    ("km", "--data", "lung", "--mechanism", "nonprivate"),
    ("km", "--data", "lung", "--mechanism", "laplace-counts", "--epsilon", "1", "--seed", "1"),
    ("weibull", "--data", "lung", "--mechanism", "mle"),
    ("weibull", "--data", "lung", "--mechanism", "lsp-tll", "--epsilon", "inf"),
    ("regression", "--data", "lung", "--covariates", "age", "--mechanism", "nonprivate"),
    ("regression", "--data", "lung", "--covariates", "age", "--mechanism", "output", "--epsilon", "inf"),
]


@pytest.mark.parametrize("argv", RUNS, ids=[" ".join(r[:1] + r[4:]) for r in RUNS])
def test_honesty_keys_are_printed_by_every_command(capsys, argv):
    assert main([*argv, "--json"]) == 0
    o = json.loads(capsys.readouterr().out)
    assert {"interval_includes_noise", "interval_method", "warnings", "privacy"} <= set(o)
    assert isinstance(o["warnings"], list) and isinstance(o["interval_method"], str) and o["interval_method"]
